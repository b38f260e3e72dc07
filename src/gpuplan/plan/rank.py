"""Ranking by objective (cost | time | balanced) and the Pareto front of cost versus time.

Each plan exposes ``cost_key`` (total cost, cost per 1B tokens, or monthly cost; None = no price)
and ``time_key`` (job time, time per 1B tokens, or request latency). Plans without a price rank
after every priced plan.

Uncertainty: a plan may also expose ``cost_margin``, how far its price may lie above the figure
used (0 for an official or user price, more for third-party, rule-based and spot estimates; see
data/plan_costs.yaml). The ranking compares *pessimistic* costs, ``cost_key x (1 + cost_margin)``:
a guessed price only beats a sourced one when it is cheaper even at the top of its margin. The
plan's own figures (and the table) keep the point estimate, marked as a guess.

Ties: costs within ``TIE_TOLERANCE`` (0.5 %) of each other count as equal, and the plan with fewer
instances, then fewer GPUs, ranks first.

Deadline margin: a spot plan whose expected finish (interruptions included) leaves less than
``SLACK_MIN`` (10 %) of the deadline to spare ranks after every plan that keeps the margin: its finish
time is an expectation over random interruptions, and the estimator's own time error is of that size.

``ranking_basis`` states all of this in one sentence; every output shows it once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, TypeVar

from gpuplan.i18n import _


class Rankable(Protocol):
    @property
    def cost_key(self) -> float | None: ...

    @property
    def time_key(self) -> float | None: ...


R = TypeVar("R", bound=Rankable)


OBJECTIVES = ("cost", "time", "balanced")
TIE_TOLERANCE = 0.005
SLACK_MIN = 0.10        # a spot plan must finish with at least 10 % of the deadline to spare


def thin_margin(p) -> bool:
    """A spot plan whose expected finish leaves less than SLACK_MIN of the deadline (ranks last)."""
    slack = getattr(p, "deadline_slack", None)
    billing = getattr(getattr(p, "cost", None), "billing", None)
    return slack is not None and slack < SLACK_MIN and billing == "spot"


def ranking_basis(objective: str, *, spot: bool = False, deadline: bool = False) -> str:
    """What "best" means for this ranking, in one sentence (the ``ranking_basis`` of the recommendation)."""
    from gpuplan.plan.money.cost import margin_words

    risk = _(", spot interruptions included") if spot else ""
    margin = (_("; spot plans that would finish with less than {share} of the deadline to spare rank after the "
                "others").format(share=f"{SLACK_MIN:.0%}") if spot and deadline else "")
    text = {
        "cost": _("lowest expected cost: estimated prices counted at their upper bound (third-party copies "
                  "+{third}, {rule}, spot prices up to pay-as-you-go){risk}; costs within 0.5 % tie "
                  "and go to fewer instances{margin}"),
        "time": _("shortest time (within 0.5 %), then lowest expected cost with estimated prices counted at their "
                  "upper bound{risk}{margin}"),
        "balanced": _("best balance of time and expected cost (geometric mean of each over its best value), "
                      "estimated prices counted at their upper bound{risk}{margin}"),
    }[objective]
    return text.format(risk=risk, margin=margin, **margin_words())


def _inf(x: float | None) -> float:
    return math.inf if x is None else x


def pessimistic_cost(p) -> float | None:
    """``cost_key x (1 + cost_margin)`` (None without a price)."""
    if p.cost_key is None:
        return None
    return p.cost_key * (1.0 + float(getattr(p, "cost_margin", 0.0) or 0.0))


def _bucket(x: float) -> float:
    """Values within TIE_TOLERANCE of each other share a bucket (log scale), so ties go to smaller plans."""
    if not math.isfinite(x) or x <= 0:
        return x
    return math.floor(math.log(x) / math.log1p(TIE_TOLERANCE))


def _size(p) -> tuple[int, int]:
    return int(getattr(p, "instance_count", 1) or 1), int(getattr(p, "gpus_total", 1) or 1)


def sort_key(objective: str, cmin: float, tmin: float):
    """Key function for ``sorted``: pessimistic cost, then fewer instances and GPUs, then time (or time
    first), or the geometric mean of the two ratios to the best value (balanced)."""
    def key(p: Rankable):
        unpriced = p.cost_key is None
        thin = thin_margin(p)
        c, t = _inf(pessimistic_cost(p)), _inf(p.time_key)
        size = _size(p)
        if objective == "time":
            return (thin, _bucket(t), unpriced, c, size, t)
        if objective == "balanced":
            score = math.sqrt((c / cmin if cmin > 0 else c) * (t / tmin if tmin > 0 else t)) if not unpriced else math.inf
            return (thin, unpriced, _bucket(score), size, score, c, t)
        return (thin, unpriced, _bucket(c), size, c, t)
    return key


def rank(plans: Sequence[R], objective: str) -> list[R]:
    costs = [c for c in (pessimistic_cost(p) for p in plans) if c is not None and c > 0]
    times = [p.time_key for p in plans if p.time_key is not None and p.time_key > 0]
    cmin = min(costs) if costs else 1.0
    tmin = min(times) if times else 1.0
    return sorted(plans, key=sort_key(objective, cmin, tmin))


def pareto_front(plans: Sequence[R]) -> list[R]:
    """Priced plans that no other plan beats on both cost and time (ties kept once)."""
    pts = [p for p in plans if p.cost_key is not None and p.time_key is not None]
    pts.sort(key=lambda p: (p.cost_key, p.time_key))
    front = []
    best_t = math.inf
    for p in pts:
        t = p.time_key
        if t is not None and t < best_t - 1e-12:
            front.append(p)
            best_t = t
    return front
