"""Queueing arithmetic the serving model uses: Erlang B/C for the M/M/c admission of requests to a replica's
batch slots, and the waiting-time quantiles of M/M/c and of an M/G/1 prefill queue.

**Bounded work, by design.** The work per call does not grow with the number of servers:

- Erlang B is the exact, numerically stable recursion B(k) = a B(k-1) / (k + a B(k-1)) up to
  ``EXACT_MAX_SERVERS`` servers (at most that many steps), and beyond it the closed form
  B(c, a) = P(N = c) / P(N <= c) for N ~ Poisson(a): the numerator in log space (``lgamma``), the
  denominator P(Gamma(c + 1) > a) by the Wilson-Hilferty cube-root normal approximation
  ((G/k)^(1/3) ~ N(1 - 1/(9k), 1/(9k)) for G ~ Gamma(k): Wilson and Hilferty, "The distribution of
  chi-square", PNAS 17, 1931, 684-688, with chi-square(2k) = 2 Gamma(k)). Against the recursion
  its relative error in B is 3e-3 at c = 2, 7e-5 at c = 100 and 2.5e-5 at c = 256 for loads
  0.1-0.995 (tests/plan/test_queueing.py), so the switch at 256 servers keeps C monotone.
- Erlang C from B: C = B / (1 - rho (1 - B)); P(W > t) = C exp(-(c mu - lambda) t) (Kleinrock, Queueing
  Systems vol. 1, 1975, section 3.5; Harchol-Balter, Performance Modeling and Design of Computer Systems,
  2013, ch. 14).
- M/G/1 (the prefill queue of one replica): mean wait by Pollaczek-Khinchine, W = rho E[S^2] / (2 (1 - rho) E[S]);
  P(W > 0) = rho, and the wait of those who wait taken as exponential with mean W / rho (exact for M/M/1; the
  usual two-moment approximation otherwise).
"""

from __future__ import annotations

import functools
import math

WAIT_PERCENTILE = 0.95
EXACT_MAX_SERVERS = 256   # the exact recursion up to here (bounded steps), the closed form beyond

def _erlang_b_exact(servers: int, offered: float) -> float:
    """Erlang B by the stable recursion (at most EXACT_MAX_SERVERS steps)."""
    if servers > EXACT_MAX_SERVERS:
        raise ValueError("the exact recursion is for at most EXACT_MAX_SERVERS servers")
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b


def _erlang_b_closed(servers: int, offered: float) -> float:
    """Erlang B = Poisson pmf(c) / Poisson cdf(c) at mean ``offered``: the pmf in log space, the cdf
    P(Gamma(c+1) > a) by Wilson-Hilferty (constant work for any c)."""
    k = servers + 1.0
    log_pmf = servers * math.log(offered) - offered - math.lgamma(servers + 1.0)
    z = ((offered / k) ** (1.0 / 3.0) - (1.0 - 1.0 / (9.0 * k))) * 3.0 * math.sqrt(k)
    cdf = 0.5 * math.erfc(z / math.sqrt(2.0))
    if cdf <= 0.0:
        return 1.0
    return min(1.0, math.exp(log_pmf) / cdf) if log_pmf > -745.0 else 0.0


def erlang_b(servers: int, offered: float) -> float:
    """Blocking probability of M/M/c/c with ``servers`` and offered load ``offered`` = lambda / mu."""
    if servers <= 0:
        return 1.0
    if offered <= 0:
        return 0.0
    if servers <= EXACT_MAX_SERVERS:
        return _erlang_b_exact(servers, offered)
    return _erlang_b_closed(servers, offered)


@functools.lru_cache(maxsize=8192)
def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with ``servers`` and offered load
    ``offered`` = lambda / mu (1.0 when the queue is unstable). Constant work for any ``servers``."""
    if servers <= 0 or offered >= servers:
        return 1.0
    if offered <= 0:
        return 0.0
    b = erlang_b(servers, offered)
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


def mg1_wait_mean_s(rho: float, service_s: float, scv: float = 0.0) -> float:
    """Mean wait in M/G/1 with utilisation ``rho``, mean service ``service_s`` and squared coefficient of
    variation ``scv`` of the service time (0: deterministic, 1: exponential); inf when unstable."""
    if rho <= 0.0:
        return 0.0
    if rho >= 1.0:
        return math.inf
    return rho * service_s * (1.0 + scv) / (2.0 * (1.0 - rho))


def mg1_wait_quantile_s(rho: float, service_s: float, q: float, scv: float = 0.0) -> float:
    """The ``q`` quantile of the M/G/1 wait: P(W > 0) = rho, exponential beyond with mean W / rho."""
    if rho <= 0.0 or rho <= 1.0 - q:
        return 0.0
    mean = mg1_wait_mean_s(rho, service_s, scv)
    if math.isinf(mean):
        return math.inf
    return mean / rho * math.log(rho / (1.0 - q))


def mmc_wait_mean_s(servers: int, rate: float, mu: float) -> float:
    """Mean wait in M/M/c: C(c, a) / (c mu - lambda); inf when unstable."""
    if rate <= 0:
        return 0.0
    slack = servers * mu - rate
    if slack <= 0:
        return math.inf
    return erlang_c(servers, rate / mu) / slack
