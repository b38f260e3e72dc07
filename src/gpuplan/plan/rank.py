"""Ranking by objective (cost | time | balanced) and the Pareto front of cost versus time.

Each plan exposes ``cost_key`` (total cost, cost per 1B tokens, or monthly cost; None = no price)
and ``time_key`` (job time, time per 1B tokens, or request latency). Plans without a price rank
after every priced plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, TypeVar


class Rankable(Protocol):
    @property
    def cost_key(self) -> float | None: ...

    @property
    def time_key(self) -> float | None: ...


R = TypeVar("R", bound=Rankable)


OBJECTIVES = ("cost", "time", "balanced")


def _inf(x: float | None) -> float:
    return math.inf if x is None else x


def sort_key(objective: str, cmin: float, tmin: float):
    """Key function for ``sorted``: cost, then time (or the reverse), or the geometric mean of the
    two ratios to the best value (balanced)."""
    def key(p: Rankable):
        unpriced = p.cost_key is None
        c, t = _inf(p.cost_key), _inf(p.time_key)
        if objective == "time":
            return (t, unpriced, c)
        if objective == "balanced":
            score = math.sqrt((c / cmin if cmin > 0 else c) * (t / tmin if tmin > 0 else t)) if not unpriced else math.inf
            return (unpriced, score, c, t)
        return (unpriced, c, t)
    return key


def rank(plans: Sequence[R], objective: str) -> list[R]:
    costs = [p.cost_key for p in plans if p.cost_key is not None and p.cost_key > 0]
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
