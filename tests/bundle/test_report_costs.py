"""PLAN.md's whole-cost rows (render.bundle.planmd.report_rows.cost_rows) with amounts that are not numbers."""

from types import SimpleNamespace

from gpuplan.render.bundle.planmd.report_rows import cost_rows


def test_unknown_or_non_finite_amounts_read_unknown():
    # mypy found `None + " (estimated)"`: a NaN amount on an estimated line was a TypeError.
    c = SimpleNamespace(currency="CNY", lang="en")
    lines = [{"item": "GPU", "amount": 1234.5, "estimated": True, "quantity": "2 x 1 h"},
             {"item": "Disk", "amount": float("nan"), "estimated": True},
             {"item": "NAS", "amount": None, "estimated": False}]
    rows, total = cost_rows(c, {"lines": lines, "basis": "job", "total": 1234.5})
    assert [r["amount"] for r in rows] == ["1,234.50 CNY (estimated)", "unknown", "unknown"]
    assert total == "1,234.50 CNY per job"


def test_a_stale_price_says_so_in_plan_md():
    """A price older than the catalog's staleness limit (plan.price_stale, price_age_days from billing.annotate) is
    flagged where PLAN.md states its date, with the two ways to refresh it, in both languages."""
    from gpuplan.render.bundle import render_bundle

    from .scenarios import inputs

    plan, workload, est = inputs("two_node")
    stale = {**plan, "price_stale": True, "price_age_days": 1283}
    md = render_bundle(stale, workload, est)["PLAN.md"]
    assert "| Price as of | 2023-10-20 (1,283 days old: check the current price before you buy" in md
    assert "gpuplan catalog refresh" in md
    zh = render_bundle(stale, workload, est, lang="zh")["PLAN.md"]
    assert "已有 1,283 天" in zh
    fresh = render_bundle({**plan, "price_stale": False, "price_age_days": 20}, workload, est)["PLAN.md"]
    assert "| Price as of | 2023-10-20 |" in fresh
