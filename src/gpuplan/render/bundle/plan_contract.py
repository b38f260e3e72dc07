"""plan.json: the bundle's JSON contract (the plan, resolved workload, estimate, rejected, pareto, bundle files)."""

from __future__ import annotations

import json
from typing import Any

from gpuplan.render.bundle.context import Ctx

SCHEMA_VERSION = 1


def plan_json(c: Ctx, plan: dict, workload: Any, estimate: dict, rejected: list[dict] | None,
              pareto: list[dict] | None, paths: list[str], breakdown: dict | None = None) -> str:
    """The JSON contract: schema_version, plan, workload (resolved), estimate, rejected, pareto, environment (the node
    image, Python, CUDA, torch, registry, pip index, weights source, pinned requirements), weights (repo, ModelScope
    id, local folder, bytes), bundle (files, checkpoint rotation, planned steps)."""
    from gpuplan.render.bundle.cloud.infra import required_driver_major
    from gpuplan.render.bundle.training_layout import train_iters

    plan_out = dict(plan)
    plan_out.setdefault("ops", {"min_driver_version": str(required_driver_major(c)), "cuda_version": None})
    if breakdown:
        from gpuplan.plan.money.cost_breakdown import public

        plan_out["cost_breakdown"] = [public(ln) for ln in breakdown["lines"]]
        plan_out["cost_breakdown_total"] = {k: breakdown[k] for k in ("total", "basis", "hours", "currency", "unknown")}
    est = {k: v for k, v in estimate.items() if k != "workload"}
    from gpuplan.render.bundle.node.weights import download_repo, model_dir, weights_source

    ms = weights_source(c)
    weights = {"repo": download_repo(c), "modelscope_id": ms.id, "modelscope_rule": ms.rule,
               "source": c.env.weights_source if c.env else c.hub, "local_dir": model_dir(c),
               "bytes": int(c.model_bytes) if c.model_bytes else None, "trust_remote_code": c.trust_remote_code,
               "overrides": ["MODEL_OSS", "MODEL_MIRROR", "MODELSCOPE_ID"]}
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "gpuplan-plan-bundle",
        "plan": plan_out,
        "workload": workload.model_dump(mode="json"),
        "estimate": est,
        "rejected": list(rejected or []),
        "pareto": list(pareto or []),
        "environment": c.env.to_json() if c.env else None,
        "weights": weights,
        "bundle": {"slug": c.slug, "lang": c.lang, "files": sorted(paths + ["plan.json"]),
                   "checkpoint_rotation": c.checkpoints_kept if c.training else None,
                   "train_steps": train_iters(c) if c.training else None},
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False, default=str) + "\n"
