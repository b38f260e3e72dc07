"""Building the 80 % bands from residuals (gpuplan.estimate.interval_fit): group weighting, pooling with the
parent class, the small-sample factor and the calibration on held-out groups."""

from __future__ import annotations

import math
import random

import pytest

from gpuplan.estimate import interval_fit as fit
from gpuplan.estimate.interval_fit import Residual


def _rows(group: str, cls: str, values, kind: str = "memory") -> list[Residual]:
    return [Residual(group=group, cls=cls, kind=kind, value=v) for v in values]


def test_weighted_quantile_matches_the_plain_quantile_for_equal_weights():
    vals = [float(i) for i in range(101)]
    assert fit.weighted_quantile(vals, [1.0] * 101, 0.5) == pytest.approx(50.0)
    assert fit.weighted_quantile(vals, [1.0] * 101, 0.1) == pytest.approx(10.0, abs=0.6)
    assert fit.weighted_quantile(vals, [1.0] * 101, 0.9) == pytest.approx(90.0, abs=0.6)


def test_a_group_weighs_the_square_root_of_its_rows():
    # one large table biased +0.5 and twenty single-row groups near 0: the table counts as 10 rows, not 100
    rows = _rows("big", "train/lora", [0.5] * 100)
    for g in range(20):
        rows += _rows(f"s{g}", "train/lora", [0.01 * g])
    sp = fit.spread(rows)
    assert sp.groups == 21 and sp.rows == 120
    assert sum(fit.group_weights(rows)[:100]) == pytest.approx(10.0)
    assert sp.centre < 0.25                              # row-weighted, the median would be the table's 0.5
    assert sp.high == pytest.approx(0.5, abs=1e-9)       # a third of the weight: it makes the top decile


def test_residuals_beyond_a_factor_of_three_count_as_three():
    rows = []
    for g in "abcdefgh":
        rows += _rows(g, "serve/vllm", [-6.9 if g == "a" else 0.0, 0.0])
    assert fit.spread(rows).low >= -fit.CAP - 1e-12


def test_small_sample_factor_is_students_t_over_the_normal():
    assert fit.small_sample_factor(2) == pytest.approx(3.078 / 1.2816, rel=1e-3)
    assert fit.small_sample_factor(5) == pytest.approx(1.533 / 1.2816, rel=1e-3)
    factors = [fit.small_sample_factor(g) for g in (2, 3, 5, 10, 20, 40)]
    assert factors == sorted(factors, reverse=True)
    assert factors[-1] == 1.0


def test_a_class_with_few_groups_borrows_its_parents_errors_and_is_widened():
    rows = []
    for i, g in enumerate("abcdef"):
        rows += _rows(g, "train/full", [0.1 * (i - 3), 0.1 * (i - 3) + 0.02])
    rows += _rows("q", "train/qlora", [0.4, 0.42])                   # one group of its own
    entry = fit.band_entry(rows, "train/qlora", "memory")
    assert entry is not None
    assert entry["source"] == "train" and entry["own_groups"] == 1
    own = fit.band_entry(rows, "train/full", "memory")
    assert own["source"] == "train/full"
    assert entry["widen"] == pytest.approx(fit.small_sample_factor(7) * fit.POOLED_WIDEN, rel=1e-3)
    # the borrowed band is wider than the parent's own (same residuals, x POOLED_WIDEN)
    parent = fit.band_entry(rows, "train", "memory")
    assert entry["high"] - entry["low"] > parent["high"] - parent["low"]


def test_an_unknown_serving_engine_reads_the_serving_band():
    rows = []
    for g in "abcde":
        rows += _rows(g, "serve/vllm", [0.0, 0.1, -0.1], kind="time")
    bands = fit.build_bands(rows)
    assert "serve/new-engine" not in bands
    assert fit.lookup(bands, "serve/new-engine", "time") == bands["serve"]["time"]
    assert "memory" not in bands.get("serve", {})    # no memory rows anywhere: no band invented


def test_calibration_reaches_the_target_coverage_on_held_out_groups():
    """Groups whose rows share a bias (as published tables do): LOGO quantiles over rows are too narrow for a
    new group; the calibrated k brings the held-out coverage to 80 %."""
    rng = random.Random(7)
    rows = []
    for g in range(30):
        bias = rng.gauss(0.0, 0.25)
        rows += _rows(f"g{g}", "train/lora", [bias + rng.gauss(0.0, 0.05) for _ in range(rng.randint(2, 12))])
    cal = fit.calibrate(rows, clean_groups=set())["memory"]
    assert cal["nested_coverage"] == pytest.approx(0.8, abs=0.03)
    assert cal["k"] >= fit.K_MIN
    # the calibrated band holds about 80 % of a fresh group's rows drawn the same way
    band = fit.build_bands(rows, {"memory": cal["k"]})["train/lora"]["memory"]
    fresh = [rng.gauss(0.0, 0.25) + rng.gauss(0.0, 0.05) for _ in range(4000)]
    inside = sum(band["low"] <= v <= band["high"] for v in fresh) / len(fresh)
    assert 0.7 <= inside <= 0.92


def test_groups_nobody_designed_on_can_only_widen_the_bands():
    rng = random.Random(3)
    rows = []
    for g in range(12):
        rows += _rows(f"seen{g}", "train/full", [rng.gauss(0.0, 0.05) for _ in range(4)])
    for g in range(6):   # groups no constant was fitted to: their errors are larger
        rows += _rows(f"new{g}", "train/full", [rng.gauss(0.0, 0.4) for _ in range(4)])
    new = {f"new{g}" for g in range(6)}
    cal = fit.calibrate(rows, clean_groups=set(), unfitted_groups=new)["memory"]
    assert cal["k_unfitted"] is not None and cal["k_unfitted"] > cal["k_all"]
    assert cal["k"] == cal["k_unfitted"]
    assert cal["k_clean"] is None and cal["groups_clean"] == 0     # fewer than MIN_GROUPS: not used
    plain = fit.calibrate(rows, clean_groups=set())["memory"]
    assert plain["k"] == plain["k_all"] < cal["k"]


def test_excess_counts_half_widths_on_each_side():
    entry = {"centre": 0.0, "low": -0.2, "high": 0.4}
    assert fit.excess(entry, 0.4) == pytest.approx(1.0)
    assert fit.excess(entry, -0.1) == pytest.approx(0.5)
    assert math.isinf(fit.excess({"centre": 0.0, "low": 0.0, "high": 0.0}, 0.1))
