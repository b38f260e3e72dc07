"""Tiny dependency-free SVG charts: the per-GPU memory breakdown bar and the cost-versus-time
scatter with its Pareto front. Used by the plan bundle (PLAN.md) and the web page.

Output is deterministic (fixed number formatting, no timestamps or random ids) so golden files
stay stable, and every text node is XML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

GIB = 1024**3

# Colour per memory component (colour-blind-safe Okabe-Ito palette, https://jfly.uni-koeln.de/color/).
COMPONENT_COLOURS: dict[str, str] = {
    "weights": "#0072B2", "gradients": "#E69F00", "optimizer": "#009E73", "activations": "#CC79A7",
    "kv_cache": "#56B4E9", "adapters": "#F0E442", "logits": "#D55E00", "overhead": "#999999",
}
FONT = "font-family=\"sans-serif\" font-size=\"12\""


def _f(x: float) -> str:
    """Compact, stable number formatting for coordinates."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if not float(x).is_integer() else str(int(x))


def _text(x: float, y: float, s: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}" {FONT}{extra}>{escape(str(s))}</text>'


def memory_bar(components: dict[str, float], capacity_bytes: float | None, *, title: str = "Memory per GPU",
               labels: dict[str, str] | None = None, width: int = 640) -> str:
    """A horizontal stacked bar of the memory components (bytes) with the GPU capacity marked.

    ``labels`` translates component names for the legend (missing keys keep the English name).
    """
    labels = labels or {}
    parts = [(k, float(v)) for k, v in components.items() if v and float(v) > 0]
    total = sum(v for _, v in parts)
    scale_max = max(total, float(capacity_bytes or 0), 1.0)
    left, bar_w, bar_y, bar_h = 10, width - 20, 34, 28
    legend_rows = math.ceil(len(parts) / 3) if parts else 1
    height = bar_y + bar_h + 30 + 18 * legend_rows + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img">',
           f"<title>{escape(title)}</title>",
           _text(left, 20, f"{title}: {total / GIB:.2f} GiB" +
                 (f" / {float(capacity_bytes) / GIB:.2f} GiB" if capacity_bytes else ""), extra=' font-weight="bold"')]
    x = float(left)
    for key, value in parts:
        w = bar_w * value / scale_max
        colour = COMPONENT_COLOURS.get(key, "#666666")
        out.append(f'<rect x="{_f(x)}" y="{bar_y}" width="{_f(w)}" height="{bar_h}" fill="{colour}">'
                   f"<title>{escape(labels.get(key, key))}: {value / GIB:.2f} GiB</title></rect>")
        x += w
    if capacity_bytes:
        cx = left + bar_w * float(capacity_bytes) / scale_max
        out.append(f'<line x1="{_f(cx)}" y1="{bar_y - 6}" x2="{_f(cx)}" y2="{bar_y + bar_h + 6}" '
                   'stroke="#000000" stroke-width="2" stroke-dasharray="4 2"/>')
    for i, (key, value) in enumerate(parts):
        col, row = i % 3, i // 3
        lx, ly = left + col * (bar_w / 3), bar_y + bar_h + 24 + row * 18
        out.append(f'<rect x="{_f(lx)}" y="{_f(ly - 10)}" width="10" height="10" '
                   f'fill="{COMPONENT_COLOURS.get(key, "#666666")}"/>')
        out.append(_text(lx + 14, ly, f"{labels.get(key, key)} {value / GIB:.2f} GiB"))
    out.append("</svg>")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Point:
    """One candidate on the cost-versus-time chart."""

    x: float  # time (hours)
    y: float  # cost
    label: str
    pareto: bool = False
    chosen: bool = False


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """Points no other point beats on both time and cost (lower is better), sorted by time."""
    front = [p for p in points
             if not any((q.x <= p.x and q.y <= p.y) and (q.x < p.x or q.y < p.y) for q in points)]
    return sorted(front, key=lambda p: (p.x, p.y))


def cost_time_scatter(points: Sequence[Point], *, title: str = "Cost versus time", x_label: str = "hours",
                      y_label: str = "cost", width: int = 640, height: int = 400,
                      empty: str = "no priced candidates") -> str:
    """Scatter of candidates (x = time, y = cost); the Pareto front is joined by a line, the chosen
    plan drawn larger. Points flagged ``pareto`` are drawn filled; the front line is recomputed."""
    pts = [p for p in points if math.isfinite(p.x) and math.isfinite(p.y)]
    ml, mr, mt, mb = 70, 20, 30, 50
    pw, ph = width - ml - mr, height - mt - mb
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img">', f"<title>{escape(title)}</title>",
           _text(ml, 18, title, extra=' font-weight="bold"')]
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#000000"/>')
    if not pts:
        out.append(_text(ml + pw / 2, mt + ph / 2, empty, anchor="middle"))
        out.append("</svg>")
        return "\n".join(out) + "\n"
    x0, x1 = 0.0, max(p.x for p in pts) * 1.1 or 1.0
    y0, y1 = 0.0, max(p.y for p in pts) * 1.1 or 1.0

    def sx(v: float) -> float:
        return ml + pw * (v - x0) / (x1 - x0)

    def sy(v: float) -> float:
        return mt + ph - ph * (v - y0) / (y1 - y0)

    for i in range(5):
        xv, yv = x0 + (x1 - x0) * i / 4, y0 + (y1 - y0) * i / 4
        out.append(_text(sx(xv), mt + ph + 16, f"{xv:.3g}", anchor="middle"))
        out.append(_text(ml - 6, sy(yv) + 4, f"{yv:.4g}", anchor="end"))
    out.append(_text(ml + pw / 2, height - 10, x_label, anchor="middle"))
    out.append(f'<text x="16" y="{_f(mt + ph / 2)}" text-anchor="middle" {FONT} '
               f'transform="rotate(-90 16 {_f(mt + ph / 2)})">{escape(y_label)}</text>')
    front = pareto_front(pts)
    if len(front) > 1:
        path = " ".join(f"{_f(sx(p.x))},{_f(sy(p.y))}" for p in front)
        out.append(f'<polyline points="{path}" fill="none" stroke="#D55E00" stroke-width="1.5"/>')
    front_ids = {id(p) for p in front}
    for p in pts:
        on_front = p.pareto or id(p) in front_ids
        r = 7 if p.chosen else 4
        fill = "#D55E00" if on_front else "#FFFFFF"
        stroke = "#000000" if p.chosen else "#0072B2"
        out.append(f'<circle cx="{_f(sx(p.x))}" cy="{_f(sy(p.y))}" r="{r}" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="1.5"><title>{escape(p.label)}: {p.x:.3g} h, {p.y:.4g}</title></circle>')
        if p.chosen:
            out.append(_text(sx(p.x) + 9, sy(p.y) - 9, p.label))
    out.append("</svg>")
    return "\n".join(out) + "\n"
