"""The serving and infrastructure facts of a bundle's context (render/bundle/context.py): platform, the deployed
engine and its parallel flags (plan.parallel / plan.serving when the plan carries them, today's behaviour
otherwise), the GPU's dtype support (data/gpus.yaml), the download hub by region and the bytes the job moves."""

from __future__ import annotations

import math
from typing import Any

from gpuplan.plan.advice.node_env import scope
from gpuplan.plan.advice.ops import job_data_bytes
from gpuplan.plan.money.transfer import download_bytes, fixed_parts_s, plan_staged
from gpuplan.render.bundle.context_model import catalog_spec


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
        from gpuplan.catalog.hardware.gpus import resolve_gpu

        spec, _unused = resolve_gpu(gpu)
    except Exception:  # noqa: BLE001 - an unknown GPU id: no catalog facts
        return True, None
    cc = finite_number(spec.compute_capability)
    return spec.bf16_dense_tflops is not None and (cc is None or cc >= 8.0), cc


def first_boot(plan: dict, region: str, training: bool) -> dict[str, float]:
    """The start-up, driver install and image pull seconds of the plan's first boot: its fixed costs', or, for a plan
    that carries none (a service), the figures its costs would count (plan/money/fixed_costs.py FixedCosts, image_pull and
    node_start)."""
    parts = fixed_parts_s(plan.get("fixed_costs"))
    if "boot_s" in parts and "image_pull_s" in parts:
        return {k: v for k, v in parts.items() if k in ("boot_s", "driver_install_s", "image_pull_s")}
    from gpuplan.plan.money import fixed_costs as fixedm

    platform = str(plan.get("platform") or "ecs")
    fx = fixedm.load_fixed_costs()
    pull = fixedm.image_pull(fx, region, training=training, platform=platform)
    return {"boot_s": fx.boot_s, "driver_install_s": fixedm.node_start(platform).driver_install_s,
            "image_pull_s": pull.seconds}


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
    batch = not training and bool(plan.get("job"))   # a batch job: released like training, its data on the disk
    job_in, job_out = job_data_bytes(plan) if batch else (None, None)
    return {
        "platform": str(plan.get("platform") or "ecs"), "engine": engine, "engine_planned": planned,
        "ep": _int(par.get("ep") or srv.get("ep"), 1), "dp_attention": bool(par.get("dp_attention") or srv.get("dp_attention")),
        "bf16": bf16, "gpu_cc": cc, "hub": str(scope(region)["weights_source"]),
        "model_bytes": download_bytes(params, getattr(workload, "quantization", None), training,
                                      catalog_spec(getattr(workload, "model", None))),
        "checkpoint_bytes": finite_number((plan.get("storage") or {}).get("checkpoint_bytes")),
        "plan_fixed": fixed_parts_s(plan.get("fixed_costs")), "first_boot": first_boot(plan, region, training),
        # a service when the workload states serving and the plan is not a batch job (a dataset with serving.max_num_seqs
        # only is a job: the plan's costing and the bundle follow one rule)
        "online": getattr(workload, "serving", None) is not None and not batch, "batch_job": batch,
        "job_input_bytes": job_in, "job_output_bytes": job_out,
        # the plan counted its weights staged once in OSS (plan.weights_staging): stage-weights.sh, MODEL_OSS required
        "weights_staged": plan_staged(plan),
        # prefill/decode disaggregation the plan chose (plan.serving.disaggregation): serve-sglang.sh PD_ROLE, router-pd.sh
        "pd": dict(srv["disaggregation"]) if engine == "sglang" and srv.get("disaggregation") else None,
    }
