"""Small pure pieces of the recommender: ESSD formulas, spot model, lattice walk, Pareto front."""

import math

import pytest

from gpuplan.plan.money import cost as costm
from gpuplan.plan.search.candidates import Fixed, Knobs, lattice, walk_lattice
from gpuplan.plan.rank import pareto_front, rank
from gpuplan.plan.advice.storage import choose_essd, essd_levels


def test_essd_pl1_formula_matches_alibaba_doc():
    # AlibabaCloudDocs ESSDs.md: PL1 IOPS min{1800 + 50 x GiB, 50000}, MB/s min{120 + 0.5 x GiB, 350}
    pl1 = {lv.level: lv for lv in essd_levels()}["PL1"]
    assert pl1.iops(100) == 6800
    assert pl1.throughput_mb_s(100) == 170
    assert pl1.iops(2000) == 50000 and pl1.throughput_mb_s(2000) == 350


def test_essd_pl3_caps_at_4000_mb_s_not_32_gb_s():
    # Guide A claims "PL3 ... 32GB/s"; the per-disk cap is 4,000 MB/s from 1,261 GiB up.
    pl3 = {lv.level: lv for lv in essd_levels()}["PL3"]
    assert pl3.min_gib == 1261
    assert pl3.throughput_mb_s(32768) == 4000 and pl3.iops(32768) == 1_000_000


def test_choose_essd_picks_lowest_level_that_reaches_the_rate():
    assert choose_essd(100, 150)["level"] == "PL0"        # PL0: 100 + 0.25 x 200 GiB = 150 MB/s
    assert choose_essd(100, 300)["level"] == "PL1"
    assert choose_essd(100, 600)["level"] == "PL2"
    assert choose_essd(100, 2000)["level"] == "PL3"
    assert choose_essd(100, 5000) is None                  # beyond one disk: shared file system


def test_spot_overhead_follows_youngs_interval():
    m = costm.SpotModel(interruptions_per_hour=0.1, restart_s=600)
    run = costm.spot_run(10 * 3600, checkpoint_write_s=120, model=m)
    mtbi = 36000.0
    assert run.checkpoint_interval_s == pytest.approx(math.sqrt(2 * 120 * mtbi))
    assert run.overhead_fraction == pytest.approx(120 / run.checkpoint_interval_s
                                                  + (run.checkpoint_interval_s / 2 + 600) / mtbi)
    assert run.time_s > 10 * 3600


def test_subscription_charges_whole_months():
    p = costm.Price("subscription", 10.0, 7300.0, "CNY", "cn-shanghai", "2023-06-01", "x")
    assert costm.training_cost(p, 2, 3600) == 2 * 7300.0
    assert costm.training_cost(p, 1, 731 * 3600) == 2 * 7300.0


def test_walk_lattice_returns_minimal_feasible_configs():
    configs = list(lattice("full", 8, Fixed(), 0))
    # feasible iff ZeRO >= 2 or full checkpointing
    fits = lambda k: k.zero >= 2 or k.ckpt == 2  # noqa: E731
    got = set(walk_lattice(configs, fits))
    brute = {k for k in configs if fits(k) and not any(k != j and k.dominates(j) and fits(j) for j in configs)}
    assert got == brute
    assert Knobs(zero=2) in got and Knobs(ckpt=2) in got


def test_walk_lattice_nothing_fits():
    configs = list(lattice("full", 8, Fixed(), 0))
    assert walk_lattice(configs, lambda k: False) == []


class _P:
    def __init__(self, c, t):
        self.cost_key, self.time_key = c, t


def test_pareto_and_unpriced_last():
    a, b, c, d, u = _P(10, 100), _P(20, 50), _P(30, 60), _P(40, 10), _P(None, 1)
    assert pareto_front([a, b, c, d, u]) == [a, b, d]
    assert rank([u, c, a], "cost")[0] is a and rank([u, c, a], "cost")[-1] is u
    assert rank([a, b, d], "time")[0] is d
