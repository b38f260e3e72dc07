"""`gpuplan plan` helpers: the user's pins applied to a workload, and the (workload, estimate) pair a plan's bundle is
rendered from (the bundle itself is written by :mod:`gpuplan.write_bundle`)."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.workload import Workload
from gpuplan.workload_defaults import resolve_defaults

# `gpuplan plan` pins: the workload fields they fix (hardware.instance_type, hardware.count, parallel.tp/pp,
# batch_size), as PLAN.md and the error name them.
PIN_NAMES = {"instance_type": N_("instance type {value}"), "gpus": N_("{value} GPU(s)"), "tp": N_("TP {value}"),
             "pp": N_("PP {value}"), "micro_batch": N_("micro-batch {value}")}


def pin_batch_size(batch_size: int | None, micro_batch: int | None) -> int | None:
    """--micro-batch pins the workload's batch_size; both given and different is an error."""
    if batch_size is not None and micro_batch is not None and batch_size != micro_batch:
        raise GpuplanError(_("--batch-size {batch} and --micro-batch {micro} disagree.").format(
                               batch=batch_size, micro=micro_batch),
                           hint=_("Give one of them: both set the micro-batch per GPU (concurrent sequences when "
                                  "serving)."))
    return micro_batch if micro_batch is not None else batch_size


def apply_pins(w: Workload, pins: dict[str, Any]) -> Workload:
    """The workload with the pinned fields fixed: hardware.instance_type, hardware.count, parallel.tp/pp,
    batch_size (the micro-batch per GPU; concurrent sequences when serving)."""
    if not pins:
        return w
    hardware = w.hardware.model_dump(exclude_none=True) if w.hardware else {}
    parallel = w.parallel.model_dump(exclude_unset=True) if w.parallel else {}
    changes: dict[str, Any] = {}
    if pins.get("instance_type"):
        changes["hardware"] = {**hardware, "instance_type": pins["instance_type"]}
    if pins.get("gpus"):
        changes["hardware"] = {**changes.get("hardware", hardware), "count": pins["gpus"]}
    if pins.get("tp") or pins.get("pp"):
        changes["parallel"] = {**parallel, **{k: pins[k] for k in ("tp", "pp") if pins.get(k)}}
    if pins.get("micro_batch"):
        changes["batch_size"] = pins["micro_batch"]   # a pin overrides the workload file
    return w.with_updates(**changes)


def pins_text(pins: dict[str, Any]) -> str:
    return _(", ").join(_(PIN_NAMES[k]).format(value=v) for k, v in pins.items() if k in PIN_NAMES)


def short_type(instance_type: str | None) -> str:
    return (instance_type or "").lower().removeprefix("ecs.")


def pinned_misfit(data: dict[str, Any], pins: dict[str, Any]) -> GpuplanError:
    """One clear error for pins no plan satisfies: the recommender's own reasons for the pinned candidates."""
    from gpuplan.i18n import localize

    want = short_type(pins.get("instance_type"))
    reasons = [str(r.get("reason")) for r in data.get("rejected") or []
               if isinstance(r, dict) and r.get("reason") and (not want or short_type(r.get("instance_type")) == want)]
    if not reasons:
        reasons = [str(b.get("text", b)) if isinstance(b, dict) else str(b) for b in data.get("binding_constraints") or []]
    reason = _("; ").join(localize(r) for r in dict.fromkeys(reasons[:2])) or _("no candidate satisfies them")
    return GpuplanError(_("The pinned plan ({pins}) does not fit: {reason}.").format(pins=pins_text(pins), reason=reason),
                        hint=_("Change or drop a pin (--instance-type, --gpus, --tp, --pp, --micro-batch); `gpuplan "
                               "recommend` with the same workload shows every candidate and why it was rejected."))


def workload_for_plan(w: Workload, plan: dict[str, Any]) -> Workload:
    """The workload with every searched field fixed to the plan's choice (hardware, layout, precision)."""
    par = dict(plan.get("parallel") or {})
    ckpt = par.get("checkpointing")
    nodes = int(plan.get("instance_count") or 1)
    per_replica_nodes = int(par.get("nodes_per_replica") or nodes)
    changes: dict[str, Any] = {
        "hardware": {"instance_type": plan["instance_type"], "nodes": per_replica_nodes},
        "parallel": {k: par[k] for k in ("tp", "pp", "dp", "zero", "fsdp", "offload", "cp") if par.get(k) is not None},
    }
    if par.get("sp") is not None:   # the sequence parallelism the search counted (Megatron launches: on)
        changes["parallel"]["sp"] = bool(par["sp"])
    if (par.get("vp") or 1) > 1:    # the interleaved pipeline the recipe search chose
        changes["parallel"].update(vp=par["vp"], schedule="interleaved")
    if ckpt is not None:
        changes["grad_checkpointing"] = {"full": True, "none": False, "selective": "selective"}.get(ckpt, True)
    if par.get("framework"):    # training: the framework whose rules sized the plan (its launcher's)
        changes["framework"] = par["framework"]
    for key in ("precision", "quantization", "optimizer"):
        if par.get(key):
            changes[key] = par[key]
    if par.get("loss"):     # training: the loss that sized the plan, which train.py runs (--loss)
        changes["fused_loss"] = par["loss"] == "chunked"
    if par.get("packed") is not None:     # training: the rows that sized the plan, which the launch trains
        changes["packed"] = bool(par["packed"])
    if par.get("micro_batch"):
        changes["batch_size"] = par["micro_batch"]
    if par.get("gradient_accumulation"):
        changes["gradient_accumulation"] = par["gradient_accumulation"]
    if par.get("engine"):    # serving: the configuration the search chose (plan/serving/serving_config.py)
        changes["framework"] = par["engine"]
        changes["kv_cache_dtype"] = par.get("kv_cache_dtype") or "auto"
        changes["parallel"].update(dp_attention=bool(par.get("dp_attention")), ep=int(par.get("ep") or 1))
    fixed = w.with_updates(**changes)
    resolved, _notes = resolve_defaults(fixed)
    return resolved


def bundle_inputs(plan, w: Workload) -> tuple[Workload, dict[str, Any]]:
    """What the bundle renderer needs from one plan record (``gpuplan.plan.record.Plan``) besides its
    contract dict: the resolved workload with the plan's choices fixed, and the estimate of its hardware
    and layout as a dict. Plans on ECS instance types (ECS, ACK node pools, PAI-EAS on the same specs)
    are re-estimated on their exact instance type and layout; a Function Compute plan keeps the
    estimate of its GPU slice.
    """
    from gpuplan.estimate.core import estimate

    if plan.platform == "function-compute":
        resolved, _notes = resolve_defaults(plan.estimate.workload)
        return resolved, plan.estimate.to_dict()
    resolved = workload_for_plan(w, plan.to_dict())
    return resolved, estimate(resolved).to_dict()
