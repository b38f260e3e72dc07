"""Recommender: candidate search, feasibility, cost, ranking, storage/network/host advice, quick mode."""

from __future__ import annotations

from gpuplan.plan.record import Plan
from gpuplan.plan.recommend import Recommendation, recommend

# Imported (not wrapped) on purpose: importing the module gpuplan.plan.quick binds it as the attribute
# `quick` of this package the first time, so a wrapper function of the same name would be replaced by
# the module after its first call. Importing it here binds the module first and the function last.
from gpuplan.plan.quick import quick  # noqa: E402

__all__ = ["recommend", "quick", "Recommendation", "Plan"]
