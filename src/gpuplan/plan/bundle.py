"""`gpuplan plan`: recommend, pick one plan, re-estimate it on its exact hardware, write the bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.workload import Workload, resolve_defaults


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
    if (par.get("vp") or 1) > 1:    # the interleaved pipeline the recipe search chose
        changes["parallel"].update(vp=par["vp"], schedule="interleaved")
    if ckpt is not None:
        changes["grad_checkpointing"] = {"full": True, "none": False, "selective": "selective"}.get(ckpt, True)
    for key in ("precision", "quantization", "optimizer"):
        if par.get(key):
            changes[key] = par[key]
    if par.get("micro_batch"):
        changes["batch_size"] = par["micro_batch"]
    if par.get("gradient_accumulation"):
        changes["gradient_accumulation"] = par["gradient_accumulation"]
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


def write_plan_bundle(w: Workload, out: Path, *, pick: int = 1, force: bool = False, lang: str = "en",
                      top: int = 5) -> tuple[Path, dict[str, Any]]:
    """Recommend, pick a plan and write its bundle. The plan is computed in English whatever ``lang`` is:
    plan.json is the JSON contract (its values never change with the language); PLAN.md and the scripts'
    messages show that English text translated (:func:`gpuplan.i18n.localize`)."""
    from gpuplan.i18n import localize, use_lang
    from gpuplan.plan import recommend
    from gpuplan.render.bundle import build_bundle

    if pick < 1 or pick > 20:
        raise GpuplanError(_("--pick {pick} is out of range.").format(pick=pick), hint=_("Pick 1 (the best plan) to 20."))
    try:
        with use_lang("en"):
            rec = recommend(w, top=max(top, pick))
            data = rec.to_dict()
            plans = data["plans"]
            if plans and pick <= len(plans):
                resolved, est = bundle_inputs(rec.plans[pick - 1], w)
    except GpuplanError as err:    # the user's error in the user's language
        raise GpuplanError(localize(err.message, lang), localize(err.hint, lang), field=err.field,
                           web_hint=localize(err.web_hint, lang) if err.web_hint else None, kind=err.kind) from None
    if not plans:
        binding = _("; ").join(localize(str(b.get("text", b)) if isinstance(b, dict) else str(b), lang)
                               for b in data.get("binding_constraints", [])) or _("no feasible plan")
        raise GpuplanError(_("No plan satisfies the workload: {binding}.").format(binding=binding),
                           hint=_("Relax the budget, deadline, families or platforms; `gpuplan recommend` shows why."))
    if pick > len(plans):
        raise GpuplanError(_("Only {n} plan(s) were found; --pick {pick} does not exist.").format(n=len(plans), pick=pick),
                           hint=_("Use --pick 1 to {n}.").format(n=len(plans)))
    plan = plans[pick - 1]
    path = build_bundle(plan, resolved, est, Path(out), lang=lang, force=force, rejected=data.get("rejected"),
                        pareto=data.get("pareto"))
    files = [p for p in Path(path).rglob("*") if p.is_file()]
    return Path(path), {"instance_type": plan["instance_type"], "instance_count": plan["instance_count"],
                        "files_count": len(files), "files": sorted(str(p.relative_to(path)) for p in files)}
