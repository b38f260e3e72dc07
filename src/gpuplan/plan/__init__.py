"""Recommender: candidate search, feasibility, cost, ranking, storage/network/host advice, quick mode."""

from __future__ import annotations

from gpuplan.plan.record import Plan
from gpuplan.plan.recommend import Recommendation, recommend


def quick(params_b: float, task: str, **kw):
    """Quick mode: the guides' decision tree by parameter count, answered by the estimators."""
    from gpuplan.plan.quick import quick as _quick

    return _quick(params_b, task, **kw)


__all__ = ["recommend", "quick", "Recommendation", "Plan"]
