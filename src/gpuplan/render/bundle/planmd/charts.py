"""The bundle's two SVG charts: memory.svg (memory per GPU by component) and cost-time.svg (the Pareto front)."""

from __future__ import annotations

from gpuplan import i18n
from gpuplan.render import svg
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.planmd.report_text import COMPONENTS, tr


def memory_svg(c: Ctx, estimate: dict) -> str:
    mem = estimate.get("memory") or {}
    raw = mem.get("components") or {}
    order = list(svg.COMPONENT_COLOURS)
    comps = {k: float(raw[k]) for k in sorted(raw, key=lambda k: (order.index(k) if k in order else len(order), k))
             if isinstance(raw[k], (int, float))}
    labels = {k: str(i18n.tr(COMPONENTS.get(k, k), c.lang)) for k in comps}
    return svg.memory_bar(comps, mem.get("capacity_bytes"), title=str(tr("Memory per GPU", c.lang)), labels=labels)


def _point(p: dict, chosen: bool) -> svg.Point | None:
    t, cost = p.get("time_s"), p.get("total_cost")
    if not isinstance(t, (int, float)) or not isinstance(cost, (int, float)):
        return None
    label = f"{p.get('instance_count', 1)} x {p.get('instance_type', '?')} {p.get('billing', '')}".strip()
    return svg.Point(x=t / 3600, y=float(cost), label=label, pareto=bool(p.get("pareto")), chosen=chosen)


def cost_time_svg(c: Ctx, plan: dict, pareto: list[dict] | None) -> str | None:
    points = [pt for pt in (_point(p, False) for p in (pareto or []) if p is not plan) if pt]
    mine = _point(plan, True)
    if mine is None:
        return None
    points = [p for p in points if not (p.x == mine.x and p.y == mine.y and p.label == mine.label)] + [mine]
    y_label = tr("Total cost ({currency})", c.lang).format(currency=c.currency)
    return svg.cost_time_scatter(points, title=str(tr("Cost versus time", c.lang)), x_label="h", y_label=y_label,
                                 empty=str(tr("no priced candidates", c.lang)))

