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
