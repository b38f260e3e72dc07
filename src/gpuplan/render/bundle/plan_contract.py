"""plan.json: the bundle's JSON contract (the plan, resolved workload, estimate, rejected, pareto, bundle files)."""

from __future__ import annotations

import json
from typing import Any

from gpuplan.render.bundle.context import Ctx

SCHEMA_VERSION = 1


def plan_json(c: Ctx, plan: dict, workload: Any, estimate: dict, rejected: list[dict] | None,
              pareto: list[dict] | None, paths: list[str], breakdown: dict | None = None) -> str:
    """The JSON contract: schema_version, plan, workload (resolved), estimate, rejected, pareto, bundle."""
    from gpuplan.render.bundle.infra import min_driver_major

    plan_out = dict(plan)
    plan_out.setdefault("ops", {"min_driver_version": str(min_driver_major(c.gpu)), "cuda_version": None})
    if breakdown:
        from gpuplan.plan.cost_breakdown import public

        plan_out["cost_breakdown"] = [public(ln) for ln in breakdown["lines"]]
        plan_out["cost_breakdown_total"] = {k: breakdown[k] for k in ("total", "basis", "hours", "currency", "unknown")}
    est = {k: v for k, v in estimate.items() if k != "workload"}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "gpuplan-plan-bundle",
        "plan": plan_out,
        "workload": workload.model_dump(mode="json"),
        "estimate": est,
        "rejected": list(rejected or []),
        "pareto": list(pareto or []),
        "bundle": {"slug": c.slug, "lang": c.lang, "files": sorted(paths + ["plan.json"])},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False, default=str) + "\n"
