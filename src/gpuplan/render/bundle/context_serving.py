"""The serving and infrastructure facts of a bundle's context (render/bundle/context.py): platform, the deployed
engine and its parallel flags (plan.parallel / plan.serving when the plan carries them, today's behaviour
otherwise), the GPU's dtype support (data/gpus.yaml), the download hub by region and the bytes the job moves."""

from __future__ import annotations

import math
from typing import Any

from gpuplan.plan.advice.node_env import scope
from gpuplan.plan.money.transfer import download_bytes, plan_fixed_s


def finite_number(value: Any) -> float | None:
    """A finite float from a plan or estimate field, None for missing, boolean or non-numeric values."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _int(value: Any, default: int) -> int:
    number = finite_number(value)
    return int(number) if number and number > 0 else default


# Engines the bundle renders; a plan naming another (trtllm, lmdeploy) is served with vLLM and PLAN.md says so.
RENDERED_ENGINES = ("vllm", "sglang")


def runs_embed_script(model_kind: str, training: bool, framework: str, online: bool) -> bool:
    """True when an encoder-only model's plan was timed as embed.py (sentence-transformers, a batch of texts per
    forward: estimate/engine_defaults.py) rather than a vLLM pooling server: a framework outside the rendered engines,
    or, for a workload that names none, no serving traffic (a batch job)."""
    if model_kind != "encoder" or training:
        return False
    if framework in ("", "auto"):
        return not online
    return framework not in RENDERED_ENGINES

def _gpu_dtype_support(gpu: str) -> tuple[bool, float | None]:
    """(has BF16, compute capability) from data/gpus.yaml; unknown GPUs are assumed BF16-capable."""
    try:
        from gpuplan.catalog.gpus import resolve_gpu

        spec, _unused = resolve_gpu(gpu)
    except Exception:  # noqa: BLE001 - an unknown GPU id: no catalog facts
        return True, None
    cc = finite_number(spec.compute_capability)
    return spec.bf16_dense_tflops is not None and (cc is None or cc >= 8.0), cc


def serving_fields(plan: dict, workload: Any, estimate: dict, gpu: str, region: str, training: bool) -> dict:
    """Platform, engine and its parallel flags (plan.parallel / plan.serving when the plan carries them), the
    GPU's dtype support, the download hub and the bytes the job moves."""
    par = plan.get("parallel") or {}
    srv = plan.get("serving") or {}
    framework = str(getattr(workload, "framework", None) or "auto")
    planned = str(par.get("engine") or srv.get("engine") or (framework if framework in RENDERED_ENGINES else "vllm"))
    engine = planned if planned in RENDERED_ENGINES else "vllm"
    bf16, cc = _gpu_dtype_support(gpu)
    params = finite_number((estimate.get("model") or {}).get("params_total"))
    return {
        "platform": str(plan.get("platform") or "ecs"), "engine": engine, "engine_planned": planned,
        "ep": _int(par.get("ep") or srv.get("ep"), 1), "dp_attention": bool(par.get("dp_attention") or srv.get("dp_attention")),
        "bf16": bf16, "gpu_cc": cc, "hub": str(scope(region)["weights_source"]),
        "model_bytes": download_bytes(params, getattr(workload, "quantization", None), training),
        "checkpoint_bytes": finite_number((plan.get("storage") or {}).get("checkpoint_bytes")),
        "plan_fixed_s": plan_fixed_s(plan), "online": getattr(workload, "serving", None) is not None,
        # prefill/decode disaggregation the plan chose (plan.serving.disaggregation): serve-sglang.sh PD_ROLE, router-pd.sh
        "pd": dict(srv["disaggregation"]) if engine == "sglang" and srv.get("disaggregation") else None,
    }
