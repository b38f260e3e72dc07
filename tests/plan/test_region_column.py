"""Plans that differ only by region do not look identical (plan review of examples/guide-needs/n6-pretrain-7b-
multinode.yaml: plans 2 and 3 were the same machine, one in cn-wulanchabu priced from cn-beijing, one in
cn-beijing, and the table showed two identical rows): the table shows the region, in English and Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import run_cli

N6 = str(Path(__file__).resolve().parents[2] / "examples/guide-needs/n6-pretrain-7b-multinode.yaml")


def _plan_rows(out: str) -> list[str]:
    """Each plan's lines (its row and detail lines), keyed by the rank that starts the row."""
    rows: list[str] = []
    for line in out.splitlines():
        head = line.strip().split(" ", 1)[0]
        if head.isdigit() and len(line) - len(line.lstrip()) <= 3:
            rows.append(line)
        elif rows and line.startswith("    ") and not line.strip().startswith(("~", "Ranked", "排序")):
            rows[-1] += "\n" + line
    return rows


@pytest.mark.parametrize("lang,priced_from", [("en", "price of cn-beijing"), ("zh", "cn-beijing 的价格")])
def test_plans_in_two_regions_show_their_region(monkeypatch, lang, priced_from):
    monkeypatch.setenv("COLUMNS", "250")
    code, out, _err = run_cli("--lang", lang, "recommend", N6)
    assert code == 0
    rows = _plan_rows(out.split("\n\n")[0] if "\n\n" in out else out)
    assert len(rows) >= 3
    strip = [r.split(" ", 2)[-1].strip() for r in rows]     # everything but the rank
    assert len(set(strip)) == len(strip), strip             # no two plans read the same
    assert any("cn-wulanchabu" in r and priced_from in r for r in rows)
    assert any("cn-beijing" in r and "cn-wulanchabu" not in r for r in rows)
