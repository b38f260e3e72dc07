"""The queueing arithmetic does bounded work whatever the request rate (issue 24), and stays exact where
it can: Erlang B/C against the textbook recursion, the closed form beyond it, monotone across the
switch; replicas are sized in constant work from the capacity at the SLA (issue 29), and the M/G/1
prefill-queue quantiles behave as the textbook says."""

from __future__ import annotations

import math

import pytest

from gpuplan.estimate.serving import queue_math as qm
from gpuplan.plan.serving import queueing as q


def reference_erlang_c(c: int, a: float) -> float:
    """The textbook recursion over every server (the slow reference)."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1 - rho * (1 - b))


LOADS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.995)


@pytest.mark.parametrize("c", [1, 2, 5, 16, 64, 200, 256])
def test_small_pools_are_the_exact_recursion(c):
    for rho in LOADS:
        assert q.erlang_c(c, rho * c) == pytest.approx(reference_erlang_c(c, rho * c), rel=1e-12)


@pytest.mark.parametrize("c", [2, 10, 30, 100, 256])
def test_closed_form_agrees_with_the_recursion_where_both_run(c):
    for rho in LOADS:
        a = rho * c
        exact = q._erlang_b_exact(c, a)
        if exact > 1e-12:
            tol = 4e-3 if c < 100 else 1e-4     # the Wilson-Hilferty error falls with c
            assert q._erlang_b_closed(c, a) == pytest.approx(exact, rel=tol)


@pytest.mark.parametrize("c", [300, 1000, 5000])
def test_large_pools_match_the_reference(c):
    for rho in LOADS:
        ref = reference_erlang_c(c, rho * c)
        if ref > 1e-12:
            assert q.erlang_c(c, rho * c) == pytest.approx(ref, rel=1e-4)


def test_textbook_values_and_limits():
    assert q.erlang_c(1, 0.7) == pytest.approx(0.7)                 # M/M/1: P(wait) = rho
    assert q.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert q.erlang_c(3, 3.0) == 1.0                                # unstable
    assert q.erlang_c(10**12, 0.5e12) == 0.0                        # light load on a huge pool: nobody waits
    huge = q.erlang_c(10**12, 10**12 - 10**6)                       # beta = 1 (Halfin-Whitt regime)
    assert 0.1 < huge < 0.3


def test_constant_work_for_any_pool(monkeypatch):
    """Structural: beyond EXACT_MAX_SERVERS the per-server recursion is never run."""
    calls = []
    real = qm._erlang_b_exact

    def counted(c, a):
        calls.append(c)
        return real(c, a)

    monkeypatch.setattr(qm, "_erlang_b_exact", counted)
    qm.erlang_c.cache_clear()
    for c in (257, 10**4, 10**7, 10**12):
        q.erlang_c(c, 0.9 * c)
    assert calls == []
    q.erlang_c(100, 90.0)
    assert calls == [100]
    with pytest.raises(ValueError):
        real(q.EXACT_MAX_SERVERS + 1, 1.0)


def test_monotone_in_servers_across_the_switch_and_in_load():
    for a in (150.0, 240.0, 250.0, 255.0):
        cs = [q.erlang_c(c, a) for c in range(int(a) + 1, 400)]
        assert all(x >= y for x, y in zip(cs[:-1], cs[1:], strict=True)), a
    for c in (50, 256, 257, 1000, 10**6):
        vals = [q.erlang_c(c, rho * c) for rho in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)]
        assert vals == sorted(vals), c


def test_replicas_are_the_capacity_at_the_sla_with_headroom():
    """Constant work: ceil(peak / (capacity x target utilisation)), whatever the rate."""
    s = q.size_replicas(1e7, 2.0)
    assert s.replicas == min(q.MAX_REPLICAS, math.ceil(1e7 / (2.0 * q.DEFAULT_TARGET_UTILIZATION)))
    s = q.size_replicas(20.0, 2.427)
    assert s.replicas == 10 and s.utilization == pytest.approx(20 / (10 * 2.427)) and s.binding == "utilization"
    assert s.utilization <= q.DEFAULT_TARGET_UTILIZATION
    assert q.size_replicas(0.1, 2.0).binding == "minimum" and q.size_replicas(0.1, 2.0).replicas == 1
    assert q.size_replicas(5.0, 0.0).replicas == 1 and math.isinf(q.size_replicas(5.0, 0.0).utilization)


def test_copies_for_a_stated_concurrency():
    assert q.copies_for_concurrency(8, 5) == 2
    assert q.copies_for_concurrency(8, 8) == 1
    assert q.copies_for_concurrency(1, 0) == 1


def test_mg1_wait_matches_pollaczek_khinchine_and_mm1():
    # M/M/1 (scv 1): mean wait rho S / (1 - rho); P(W > t) = rho exp(-(1 - rho) t / S)
    rho, s = 0.8, 2.0
    assert qm.mg1_wait_mean_s(rho, s, scv=1.0) == pytest.approx(rho * s / (1 - rho))
    t90 = qm.mg1_wait_quantile_s(rho, s, 0.9, scv=1.0)
    assert rho * math.exp(-(1 - rho) * t90 / s) == pytest.approx(0.1)
    # deterministic service (M/D/1): half the M/M/1 mean
    assert qm.mg1_wait_mean_s(rho, s) == pytest.approx(0.5 * rho * s / (1 - rho))
    # nobody waits in the quantile while fewer than 1 - q of the arrivals wait at all
    assert qm.mg1_wait_quantile_s(0.4, s, 0.5) == 0.0 < qm.mg1_wait_quantile_s(0.4, s, 0.9)
    assert math.isinf(qm.mg1_wait_mean_s(1.0, s))
