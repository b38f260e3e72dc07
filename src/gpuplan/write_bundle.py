"""`gpuplan plan`: recommend, pick one plan (or the user's pinned choice) and write its bundle. The one place
that joins the planner and the bundle renderer (``gpuplan.plan`` never imports ``gpuplan.render``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _, localize, use_lang
from gpuplan.plan import recommend
from gpuplan.plan.bundle import short_type, apply_pins, bundle_inputs, pinned_misfit
from gpuplan.render.bundle import build_bundle
from gpuplan.workload import Workload

__all__ = ["write_plan_bundle"]


def write_plan_bundle(w: Workload, out: Path, *, pick: int = 1, force: bool = False, lang: str = "en",
                      top: int = 5, pins: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Recommend, pick a plan and write its bundle. The plan is computed in English whatever ``lang`` is:
    plan.json is the JSON contract (its values never change with the language); PLAN.md and the scripts'
    messages show that English text translated (:func:`gpuplan.i18n.localize`).

    ``pins`` names the fields the user fixed (already set in ``w``: hardware.instance_type, hardware.count,
    parallel.tp/pp, batch_size): the recommender searched only plans with them, re-estimated on the exact
    hardware; when none fits, one error says why.

    The written bundle is then checked (:func:`gpuplan.check.check_bundle`); the summary's ``check`` holds the
    report (``ok``, ``findings`` with file and line, ``notes``). The bundle stays on disk either way."""
    pins = {k: v for k, v in (pins or {}).items() if v is not None}
    w = apply_pins(w, pins)
    if pick < 1 or pick > 20:
        raise GpuplanError(_("--pick {pick} is out of range.").format(pick=pick), hint=_("Pick 1 (the best plan) to 20."))
    try:
        with use_lang("en"):
            rec = recommend(w, top=max(top, pick))
            data = rec.to_dict()
            plans = data["plans"]
            if plans and pick <= len(plans):
                # PLAN.md states the ranking basis once (a field beside the plan's contract keys)
                plans[pick - 1]["ranking_basis"] = data.get("ranking_basis")
                resolved, est = bundle_inputs(rec.plans[pick - 1], w)
    except GpuplanError as err:    # the user's error in the user's language
        raise GpuplanError(localize(err.message, lang), localize(err.hint, lang), field=err.field,
                           web_hint=localize(err.web_hint, lang) if err.web_hint else None, kind=err.kind) from None
    if not plans and pins:
        with use_lang(lang):
            raise pinned_misfit(data, pins)
    if not plans:
        binding = _("; ").join(localize(str(b.get("text", b)) if isinstance(b, dict) else str(b), lang)
                               for b in data.get("binding_constraints", [])) or _("no feasible plan")
        raise GpuplanError(_("No plan satisfies the workload: {binding}.").format(binding=binding),
                           hint=_("Relax the budget, deadline, families or platforms; `gpuplan recommend` shows why."))
    if pick > len(plans):
        raise GpuplanError(_("Only {n} plan(s) were found; --pick {pick} does not exist.").format(n=len(plans), pick=pick),
                           hint=_("Use --pick 1 to {n}.").format(n=len(plans)))
    plan = plans[pick - 1]
    if pins.get("instance_type") and short_type(plan.get("instance_type")) != short_type(pins["instance_type"]):
        raise GpuplanError(_("The pinned instance type {want} has no plan; the recommender returned {got}.").format(
                               want=pins["instance_type"], got=plan.get("instance_type")),
                           hint=_("Check the instance type with `gpuplan instances`."))
    path = build_bundle(plan, resolved, est, Path(out), lang=lang, force=force, rejected=data.get("rejected"),
                        pareto=data.get("pareto"))
    files = [p for p in Path(path).rglob("*") if p.is_file()]
    # The preflight reads the written bundle as the cloud and the node would (`gpuplan check`); its messages in the
    # caller's current language (the CLI: English under --json, whose values never change with --lang).
    from gpuplan.check import check_bundle

    report = check_bundle(path)
    return Path(path), {"instance_type": plan["instance_type"], "instance_count": plan["instance_count"],
                        "pins": pins, "files_count": len(files),
                        "files": sorted(str(p.relative_to(path)) for p in files),
                        "check": {k: v for k, v in report.to_dict().items() if k != "path"}}   # the folder is `out`
