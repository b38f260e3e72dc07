"""Serving replicas for a request rate, from the one latency model that reports the figures.

One engine copy's capacity at the SLA (``max_requests_per_s`` of its estimate) is the largest rate at which
its TPOT under load and its p90 TTFT, queueing included, still meet the targets (estimate/serving/replica.py:
continuous batching with prefill interference, the prefill queue and the batch-slot queue). Replicas are
then the smallest count r with

    utilisation = peak demand / (r x capacity) <= the target (``serving.target_utilization``, default
    1 / 1.15: capacity at least 15 % above the peak demand, issue 14),

which also keeps every replica's load below its SLA capacity, so the p50 / p90 TTFT the plan reports at the
planned load (plan/serving/serving_report.py, the same model read at rate / r) meet the targets. A stated
concurrency without a rate (``batch_size`` users always waiting for their answer) needs r copies holding
batch_size / r sequences each within the batch limit.

The Erlang arithmetic lives in estimate/serving/queue_math.py (re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.estimate.serving.queue_math import (EXACT_MAX_SERVERS, WAIT_PERCENTILE, _erlang_b_closed, _erlang_b_exact,
                                         erlang_b, erlang_c, wait_quantile_s)

__all__ = ["DEFAULT_TARGET_UTILIZATION", "EXACT_MAX_SERVERS", "MAX_REPLICAS", "WAIT_PERCENTILE", "Sizing",
           "_erlang_b_closed", "_erlang_b_exact", "copies_for_concurrency", "erlang_b", "erlang_c", "size_replicas",
           "wait_quantile_s"]

DEFAULT_TARGET_UTILIZATION = 1.0 / 1.15   # capacity >= 15 % above demand (issue 14)
MAX_REPLICAS = 100_000


@dataclass(frozen=True)
class Sizing:
    replicas: int
    utilization: float
    binding: str          # "utilization" | "concurrency" | "minimum"


def size_replicas(rate: float, capacity: float, *, target_utilization: float = DEFAULT_TARGET_UTILIZATION,
                  minimum: int = 1) -> Sizing:
    """Replicas for ``rate`` requests/s when one replica serves ``capacity`` requests/s at the SLA: the
    smallest count whose utilisation stays within the target (constant work)."""
    if capacity <= 0:
        return Sizing(minimum, math.inf, "minimum")
    if rate <= 0:
        return Sizing(minimum, 0.0, "minimum")
    u = target_utilization or DEFAULT_TARGET_UTILIZATION
    r = min(MAX_REPLICAS, max(minimum, math.ceil(rate / (capacity * u) - 1e-9)))
    binding = "utilization" if r > minimum or rate / (minimum * capacity) > u else "minimum"
    return Sizing(r, rate / (r * capacity), binding)


def copies_for_concurrency(users: int, per_copy_limit: int) -> int:
    """Engine copies that hold ``users`` sequences at once when one copy runs at most ``per_copy_limit``."""
    if users <= 1:
        return 1
    return max(1, math.ceil(users / max(1, per_copy_limit)))
