"""Serving capacity with headroom: how many replicas serve a request rate within the TTFT target.

A replica with continuous batching is modelled as ``k`` parallel servers (its serving batch, or its
concurrency), each finishing one request every ``k / capacity`` seconds, so that ``k`` servers
sustain exactly the replica's measured capacity (Little's law). ``r`` replicas are then an M/M/c
queue with c = r x k servers (Erlang C; the M/G/c waiting time of decode-dominated LLM requests,
whose service times vary little, is at most this by the Allen-Cunneen factor (1 + Cs^2) / 2 <= 1).

Replicas are the smallest r such that

1. utilisation = demand / (r x capacity) <= the target (``serving.target_utilization``, default
   1 / 1.15: capacity at least 15 % above the peak demand), and
2. with a TTFT target, the 95th percentile of the queueing wait fits in what the target leaves after
   the model's own TTFT: P(W > t) = C(c, a) exp(-(c mu - lambda) t) (Erlang C, e.g. Kleinrock,
   Queueing Systems vol. 1, 1975, section 3.5; Harchol-Balter, Performance Modeling and Design of
   Computer Systems, 2013, ch. 14).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

DEFAULT_TARGET_UTILIZATION = 1.0 / 1.15   # capacity >= 15 % above demand (issue 14)
WAIT_PERCENTILE = 0.95
MAX_REPLICAS = 100_000


def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with ``servers`` and offered load
    ``offered`` = lambda / mu (1.0 when the queue is unstable). Stable recursion via Erlang B."""
    if servers <= 0 or offered >= servers:
        return 1.0
    if offered <= 0:
        return 0.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1.0 - rho * (1.0 - b))


def wait_quantile_s(servers: int, rate: float, mu: float, q: float = WAIT_PERCENTILE) -> float:
    """The ``q`` quantile of the waiting time in M/M/c (inf when unstable, 0 when few arrivals wait)."""
    if rate <= 0:
        return 0.0
    slack = servers * mu - rate
    if slack <= 0:
        return math.inf
    c = erlang_c(servers, rate / mu)
    if c <= 1.0 - q:
        return 0.0
    return math.log(c / (1.0 - q)) / slack


@dataclass(frozen=True)
class Sizing:
    replicas: int
    utilization: float
    wait_p95_s: float
    binding: str          # "utilization" | "ttft" | "minimum"


@functools.lru_cache(maxsize=4096)
def size_replicas(rate: float, capacity: float, slots: int, target_utilization: float = DEFAULT_TARGET_UTILIZATION,
                  ttft_slack_s: float | None = None, minimum: int = 1) -> Sizing:
    """Replicas for ``rate`` requests/s when one replica serves ``capacity`` requests/s with ``slots``
    requests in flight (see the module docstring)."""
    if capacity <= 0:
        return Sizing(minimum, math.inf, math.inf, "minimum")
    if rate <= 0:
        return Sizing(minimum, 0.0, 0.0, "minimum")
    slots = max(1, int(slots))
    mu = capacity / slots
    r = max(minimum, math.ceil(rate / (capacity * target_utilization) - 1e-9))
    binding = "utilization" if r > minimum or rate / (minimum * capacity) > target_utilization else "minimum"
    wait = wait_quantile_s(r * slots, rate, mu)
    if ttft_slack_s is not None:
        while wait > max(0.0, ttft_slack_s) and r < MAX_REPLICAS:
            r += 1
            binding = "ttft"
            wait = wait_quantile_s(r * slots, rate, mu)
    return Sizing(r, rate / (r * capacity), wait, binding)
