"""The 80 % ranges of a plan's figures (``intervals`` of each plan in the recommend contract) and the ends the
recommender checks them at.

The bands come from :mod:`gpuplan.estimate.intervals` (the one place that turns an estimate into a range);
this module only carries them through the plan's own arithmetic: a job's time is its compute time's range plus
the fixed costs, its cost is the price applied to each end of the time (the billing rules of plan/money/cost.py), a
service's monthly cost is the replicas it needs at each end of its speed. Plans are checked at the high ends:
GPU memory (:func:`memory_need`: the fit decision and the micro-batch), time against the deadline
(:func:`time_high`) and cost against the budget (:func:`cost_high`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuplan.estimate import intervals
from gpuplan.i18n import _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.record import high

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.context import PlanContext
    from gpuplan.plan.drafts import Draft
    from gpuplan.plan.search.search_point import Candidate

Ranges = dict[str, list[float]]


def memory_need(est: Any) -> float:
    """GPU memory a plan is sized at: the high end of the estimate's 80 % memory interval."""
    return intervals.memory_high_bytes(est)


def _pair(lo: float | None, hi: float | None, nd: int = 6) -> list[float] | None:
    if lo is None or hi is None:
        return None
    return [round(float(lo), nd), round(float(hi), nd)]


def draft_ranges(ctx: PlanContext, c: Candidate, p: Draft, price: costm.Price | None) -> Ranges:
    """The ranges of a costed ECS draft: memory, time and total cost (jobs), monthly cost and cost per million
    output tokens (services)."""
    cls = intervals.class_of(c.est)
    out: Ranges = {}
    lo, hi = intervals.memory_bounds(c.est, c.est.memory.per_gpu_bytes)
    out["memory_per_gpu_bytes"] = [int(lo), int(hi)]
    if p.time_s is not None:
        fixed_s = sum((p.fixed or {}).values())
        t_lo, t_hi = intervals.time_bounds(max(0.0, p.time_s - fixed_s), cls)
        out["time_s"] = _pair(t_lo + fixed_s, t_hi + fixed_s, 1) or []
        if price is not None and p.total_cost is not None:
            instances = p.instance_count
            lo_cost, hi_cost = (costm.training_cost(price, instances, ctx.fixed.billed_s(price.billing, t))
                                for t in (t_lo + fixed_s, t_hi + fixed_s))
            out["total_cost"] = _pair(lo_cost, hi_cost, 2) or []
    elif p.monthly_cost is not None and not ctx.training:
        _serving_ranges(ctx, c, p, cls, out)
    return {k: v for k, v in out.items() if v}


def _serving_ranges(ctx: PlanContext, c: Candidate, p: Draft, cls: str, out: Ranges) -> None:
    """A service: the replicas its request rate needs when a replica serves the fast or the slow end of its
    speed (the monthly cost scales with them); without a rate the fleet is fixed and the cost per token moves."""
    from gpuplan.plan.context import target_util
    from gpuplan.plan.serving.queueing import size_replicas

    rate = ctx.request_rate()
    group_rate = c.speed(False)
    slow, fast = intervals.band(cls, "time").bounds(1.0, rate=True)   # a replica's speed at the two ends
    monthly = p.monthly_cost or 0.0
    replicas = max(1, p.replicas or 1)
    if rate and group_rate > 0:
        def at(f: float) -> float:   # the same sizing as serving_costs.serving_costs, at a capacity x f
            sizing = size_replicas(rate, group_rate * f, target_utilization=target_util(ctx))
            return monthly * sizing.replicas / replicas
        lo, hi = min(monthly, at(fast)), max(monthly, at(slow))
    else:
        lo = hi = monthly
    out["monthly_cost"] = _pair(lo, hi, 2) or []
    cpm = p.cost_per_million_output_tokens
    if cpm is not None:
        # at the request rate the tokens bought are fixed and the cost moves with the fleet; at full capacity
        # the fleet is fixed and the tokens it serves move with its speed
        pair = (cpm * lo / monthly, cpm * hi / monthly) if rate and monthly > 0 else (cpm / fast, cpm / slow)
        out["cost_per_million_output_tokens"] = _pair(*pair, 4) or []


def time_high(p: Any) -> float | None:
    """A job's time at the high end of its 80 % interval: what the deadline is checked against."""
    return high(getattr(p, "intervals", None), "time_s", p.time_s)


def cost_high(p: Any, training: bool) -> float | None:
    """A plan's spend at the high end of its 80 % interval: what the budget is checked against."""
    if training:
        return high(getattr(p, "intervals", None), "total_cost", p.total_cost)
    return high(getattr(p, "intervals", None), "monthly_cost", p.monthly_cost)


def notes(w: Any, training: bool, job: bool) -> list[str]:
    """The recommendation's assumptions: which end of each range the plans were checked at."""
    cov = intervals.COVERAGE_TEXT
    out = [_("plans are sized at the high end of the {coverage} GPU-memory interval (the memory that fits 9 jobs in 10 "
             "like this one; data/intervals.json, bench/accuracy.py)").format(coverage=cov)]
    cons = getattr(w, "constraints", None)
    if cons and cons.deadline_hours and (training or job):
        out.append(_("the deadline is checked at the high end of each plan's {coverage} time interval").format(
            coverage=cov))
    if cons and cons.budget:
        out.append(_("the budget is checked at the high end of each plan's {coverage} cost interval").format(
            coverage=cov))
    return out
