"""Exact mode (`gpuplan estimate --trace`, extra ``gpuplan[trace]``).

Builds the model from its config on torch's fake tensors (no weights are allocated, no GPU is
needed), then

* counts the parameters exactly (``sum(p.numel())``; tied weights once);
* counts the FLOPs of one micro-batch with ``torch.utils.flop_counter.FlopCounterMode``;
* measures the peak allocated memory of two training steps (step 2 = steady state, Adam states
  exist) with ``torch.distributed._tools.mem_tracker.MemTracker`` under ``FakeTensorMode``;
  for inference, of one prefill forward without autograd.

The config mapping is trace_config.py, the plan (what to trace, the size guard) trace_plan.py, the torch
side (fake tensors, FLOP counter, memory tracker and its traps) trace_torch.py; this module compares the
trace with the analytic estimate and writes the JSON.

Nothing here imports torch at module level: ``gpuplan.estimate.core`` (the analytic path) never
imports this module, and this module imports torch/transformers only inside functions.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.tracing.trace_config import hf_config_from_spec
from gpuplan.estimate.tracing.trace_plan import size_guard, trace_plan
from gpuplan.estimate.tracing.trace_torch import import_torch, quiet, trace_inference, trace_training
from gpuplan.i18n import _
from gpuplan.workload import Workload
from gpuplan.workload_defaults import resolve_defaults

SCHEMA_VERSION = 1


def _analytic(resolved: Workload, spec: Any, plan: dict) -> tuple[dict, list[str]]:
    """The analytic estimate of the same single-device workload, for comparison."""
    from gpuplan.estimate.core import estimate_resolved
    from gpuplan.estimate.shapes import shape_of
    from gpuplan.estimate.system import layout_from_workload, system_from_workload
    from gpuplan.estimate.training.costs import attention_flops_fwd_per_token, flops_per_token

    notes: list[str] = []
    system, _layout = system_from_workload(resolved)
    changes: dict[str, Any] = {"parallel": {}, "hardware": {"gpu": system.gpu.id, "count": 1}}
    if plan["task"] == "inference":
        changes.update(framework="transformers", output_tokens=1)
        notes.append(_("analytic comparison for inference: framework transformers (eager generate), output_tokens 1, so its peak is weights + prompt KV cache + prefill transient, like the trace"))
    w2 = resolved.with_updates(**changes)
    system2, _layout2 = system_from_workload(w2)
    layout = layout_from_workload(w2, system2.total_gpus, system2.gpus_per_node)
    est = estimate_resolved(w2, spec, system2, layout, with_suggestions=False)
    s = shape_of(spec)
    from gpuplan.estimate.params import table

    out: dict[str, Any] = {
        "params_total": float(spec.params_total),
        "peak_allocated_bytes": int(est.memory.peak_allocated_bytes),
        "workspace_bytes": int(table("memory", "workspace_bytes")),
        "peak_phase": est.memory.peak_phase,
        "components": {k: int(round(v)) for k, v in est.memory.components.items() if k != "overhead"},
        "layout": layout.describe(),
    }
    if plan["task"] == "inference":
        p = plan["tokens"]
        # inference.py prefill convention: 2·N·P + 2·L·a·d_h·P² (causal) per sequence
        out["hardware_flops_per_token"] = 2.0 * s.matmul_params_active + 2.0 * s.context_layers * s.heads * s.head_dim * p
        out["model_flops_per_token"] = out["hardware_flops_per_token"]
        out["attention_flops_fwd_per_token_noncausal"] = attention_flops_fwd_per_token(s, p)
    else:
        model_fpt, hw_fpt = flops_per_token(s, plan["tokens"], plan["task"], layout.checkpointing)
        out["hardware_flops_per_token"] = hw_fpt
        out["model_flops_per_token"] = model_fpt
    return out, notes


def trace_estimate(workload: Workload) -> dict:
    """Exact parameters, FLOPs and peak memory of a workload, traced on fake tensors (JSON-ready)."""
    from gpuplan.catalog.models import resolve_model

    started = time.perf_counter()
    resolved, assumptions = resolve_defaults(workload)
    spec = resolve_model(resolved.model)
    assumptions = list(assumptions) + list(getattr(spec, "assumptions", ()) or ())
    plan = trace_plan(resolved, spec)
    tokens = plan["tokens"]
    hf_cfg, cfg_notes = hf_config_from_spec(spec, min_positions=tokens)
    est_s = size_guard(spec, plan["task"])
    torch, transformers = import_torch()
    if est_s > 20:
        sys.stderr.write(_("Tracing {model} on fake tensors (about {seconds:.0f} s)...").format(model=spec.id,
                                                                                                 seconds=est_s) + "\n")
    try:
        with quiet(), contextlib.redirect_stdout(io.StringIO()):
            if plan["task"] == "inference":
                res = trace_inference(torch, transformers, hf_cfg, plan)
            else:
                res = trace_training(torch, transformers, hf_cfg, plan, resolved)
    except GpuplanError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed trace is reported as one line, not a traceback
        if os.environ.get("GPUPLAN_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise GpuplanError(_("Tracing {model} failed: {name}: {first}").format(model=spec.id, name=exc.__class__.__name__, first=first),
                           hint=_("Drop --trace for the analytic estimate; GPUPLAN_DEBUG=1 shows the traceback.")) from None
    warns = list(plan["warnings"])
    analytic, cmp_notes = _analytic(resolved, spec, plan)
    ga = plan.get("grad_accum", 1)
    flops_per_step = res["flops_per_micro_batch"] * ga
    flops_per_token = res["flops_per_micro_batch"] / res["tokens_per_micro_batch"]
    if int(round(spec.params_total)) != res["params_exact"]:
        warns.append(_("traced parameters {res:,} differ from gpuplan's shape count {params_total:,} ({params_total2:+.3%})").format(res=res['params_exact'], params_total=int(round(spec.params_total)), params_total2=res['params_exact'] / spec.params_total - 1))
    analytic_tensors = analytic["peak_allocated_bytes"] - analytic["workspace_bytes"]
    comparison = {
        "params_ratio": res["params_exact"] / spec.params_total if spec.params_total else None,
        "flops_per_token_ratio": flops_per_token / analytic["hardware_flops_per_token"]
        if analytic["hardware_flops_per_token"] else None,
        # the trace sees tensors only: compare with the analytic peak less its cuBLAS/flash workspace term
        "peak_ratio": res["peak"] / analytic_tensors if analytic_tensors > 0 else None,
        "note": "trace / analytic; peak_ratio compares with analytic peak_allocated_bytes - workspace_bytes",
    }
    memory: dict[str, Any] = {"peak_allocated_bytes": int(res["peak"]), "breakdown": res["breakdown"]}
    if "end_of_forward" in res:
        memory["end_of_forward"] = res["end_of_forward"]
    conventions = [
        "FLOPs: torch FlopCounterMode, 2 per multiply-add, matrix products only (norms, activations, softmax "
        "and the optimizer step not counted); attention counted non-causal, SDPA backward 2.5x its forward",
        "memory: MemTracker under FakeTensorMode on CPU: tensors the model, autograd and optimizer allocate; "
        "not the CUDA context, cuBLAS/flash workspaces or caching-allocator fragmentation",
    ]
    if plan["task"] != "inference":
        conventions.append(_("peak over two optimizer steps (step 2 = steady state with optimizer states)"))
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "trace",
        "workload": resolved.model_dump(mode="json"),
        "model": {"id": spec.id, "kind": spec.kind, "arch": spec.arch, "hf_model_type": hf_cfg["model_type"],
                  "params_total": float(spec.params_total), "params_active": float(spec.params_active),
                  "hf_config": hf_cfg},
        "params_exact": res["params_exact"],
        "params_trainable": res["params_trainable"],
        "flops_per_step": float(flops_per_step),
        "flops_per_token": float(flops_per_token),
        "tokens_per_step": res["tokens_per_micro_batch"] * ga,
        "memory": memory,
        "analytic": analytic,
        "comparison": comparison,
        "trace": {"torch": torch.__version__, "transformers": transformers.__version__,
                  "wall_s": round(time.perf_counter() - started, 2)},
        "assumptions": assumptions + cfg_notes + plan["notes"] + cmp_notes + conventions,
        "warnings": warns,
    }


__all__ = ["trace_estimate"]
