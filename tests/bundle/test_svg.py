"""The dependency-free SVG charts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpuplan.render.svg import GIB, Point, cost_time_scatter, memory_bar, pareto_front


def test_pareto_front_keeps_only_undominated_points():
    pts = [Point(10, 100, "a"), Point(5, 200, "b"), Point(12, 150, "dominated by a"), Point(20, 50, "c"),
           Point(5, 250, "dominated by b")]
    assert [p.label for p in pareto_front(pts)] == ["b", "a", "c"]


def test_memory_bar_is_valid_svg_with_totals_and_escaped_labels():
    text = memory_bar({"weights": 14 * GIB, "kv_cache": 6 * GIB, "gradients": 0}, 24 * GIB,
                      labels={"weights": "<weights & co>"})
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}rect")) == 4  # two bars + two legend swatches (zero components skipped)
    assert "20.00 GiB / 24.00 GiB" in text and "&lt;weights &amp; co&gt;" in text
    assert memory_bar({"weights": GIB}, None) == memory_bar({"weights": GIB}, None)  # deterministic


def test_scatter_marks_the_chosen_plan_and_draws_the_front():
    text = cost_time_scatter([Point(10, 100, "x"), Point(5, 200, "y"), Point(8, 300, "z", chosen=False),
                              Point(6, 120, "chosen <1>", chosen=True)], y_label="CNY")
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}circle")) == 4
    assert len(root.findall(f"{ns}polyline")) == 1
    assert "chosen &lt;1&gt;" in text


def test_scatter_without_points_says_so():
    assert "no priced candidates" in cost_time_scatter([])
