"""`gpuplan compare`: the best plan on each cloud's bundled catalog, in one currency."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rich.console import Console

from gpuplan.i18n import N_, tr
from gpuplan.units import fmt_duration
from gpuplan.workload import Workload

# Labels chosen at run time (t(col)): msgids for the message catalog.
_LABELS = (
    N_("Cloud"), N_("Best plan"), N_("Time"), N_("Cost"), N_("Cost per 1M training tokens"),
    N_("Cost per 1M output tokens"), N_("Price date"), N_("Cross-cloud comparison"), N_("no feasible priced plan"),
)


# Plans whose cost is within this fraction of the cheapest count as tied: one of them is picked by
# fewest GPUs, then fewest instances (a cost that scales linearly with GPUs otherwise lets 64 GPUs
# tie with 1 and win by sort order).
COST_TIE = 0.02


def pick_plan(ranked: list) -> Any | None:
    """The plan shown for a cloud: among priced plans (ECS instances, not managed platforms) whose
    cost is within COST_TIE of the cheapest, the one with the fewest GPUs, then instances, then cost."""
    priced = [p for p in ranked if p.is_ecs and p.cost_key is not None and p.cost.price_per_hour is not None]
    if not priced:
        return None
    cheapest = min(p.cost_key for p in priced)
    tied = [p for p in priced if p.cost_key <= cheapest * (1.0 + COST_TIE) + 1e-9]
    return min(tied, key=lambda p: (p.gpus_total, p.instance_count, p.cost_key, p.rank))


def compare_clouds(w: Workload, *, currency: str = "CNY", today: dt.date | None = None) -> dict[str, Any]:
    """Per cloud: the cheapest plan of `recommend` over that cloud's catalog (ties: fewest GPUs, see
    :func:`pick_plan`), converted to ``currency`` with the dated rate of data/fx.yaml."""
    from gpuplan.plan.cost import load_fx

    from gpuplan.catalog.instances import available_clouds, load_instances
    from gpuplan.plan import recommend

    w2 = w.with_updates(constraints={**(w.constraints.model_dump(exclude_none=True) if w.constraints else {}),
                                     "currency": currency})
    clouds = []
    workload_dump = None
    for cloud in available_clouds():
        rec = recommend(w2, instances=list(load_instances(cloud).values()), top=3, today=today)
        d = rec.to_dict()
        workload_dump = workload_dump or d["workload"]
        chosen = pick_plan(rec.all_plans)
        best = chosen.to_dict() if chosen is not None else (d["plans"][0] if d["plans"] else None)
        priced = [best] if chosen is not None else []
        entry: dict[str, Any] = {"cloud": cloud, "plan": best, "plans_found": len(d["plans"]),
                                 "priced": bool(priced), "warnings": d.get("warnings", [])}
        if best:
            tokens_s = (best.get("performance") or {}).get("tokens_per_s")
            if best.get("price_per_hour") and tokens_s:
                entry["cost_per_million_training_tokens"] = best["price_per_hour"] / 3600 / tokens_s * 1e6
            else:
                entry["cost_per_million_training_tokens"] = None
            entry["cost_per_million_output_tokens"] = best.get("cost_per_million_output_tokens")
        clouds.append(entry)
    fx = load_fx()
    fx_warning = fx.staleness_warning(today)
    return {"schema_version": 1, "workload": workload_dump, "currency": currency, "clouds": clouds,
            "fx": {"usd_cny": fx.usd_cny, "as_of": fx.as_of, "source": fx.source, "kind": fx.kind,
                   "stale_after_days": fx.stale_after_days, "age_days": fx.age_days(today)},
            "warnings": [fx_warning] if fx_warning else [],
            "assumptions": [tr("each cloud's bundled catalog and price snapshot (dates per plan); currency "
                               "converted with the dated rate in data/fx.yaml"),
                            tr("per cloud: the cheapest priced plan; plans within {tie} of it count as tied and the "
                               "one with the fewest GPUs, then instances, is shown").format(tie=f"{COST_TIE:.0%}"),
                            tr("clouds without prices for a feasible type show the plan with null costs")]}


def render_comparison(result: dict[str, Any], console: Console, lang: str, wide: bool = False) -> None:
    from gpuplan.render.fit import Column, fitted_table, print_fitted

    spec = [("Cloud", 0, "left"), ("Best plan", 0, "left"), ("GPUs", 2, "left"), ("Time", 1, "right"),
            ("Cost", 0, "right"), ("Cost per 1M training tokens", 3, "right"), ("Cost per 1M output tokens", 3, "right"),
            ("Price date", 2, "left")]
    cols = [Column(tr(name, lang), prio, just) for name, prio, just in spec]
    cur = result["currency"]
    rows = []
    for c in result["clouds"]:
        p = c.get("plan")
        if not p:
            rows.append([c["cloud"], tr("no feasible priced plan", lang), "-", "-", "-", "-", "-", "-"])
            continue
        cost = p.get("total_cost") if p.get("total_cost") is not None else p.get("monthly_cost")
        if cost is not None:
            cost_s = f"{cur} {cost:,.0f}" + (" /month" if p.get("total_cost") is None else "")
        elif p.get("price_per_hour") is not None:
            cost_s = f"{cur} {p['price_per_hour']:,.2f}/h ({p.get('billing')})"
        else:
            cost_s = tr("no price known", lang)
        rows.append([
            c["cloud"], f"{p['instance_count']} x {p['instance_type']}", f"{p['gpus_total']} x {p['gpu']}",
            fmt_duration(p.get("time_s")) if p.get("time_s") else "-",
            cost_s,
            f"{cur} {c['cost_per_million_training_tokens']:,.2f}" if c.get("cost_per_million_training_tokens") else "-",
            f"{cur} {c['cost_per_million_output_tokens']:,.2f}" if c.get("cost_per_million_output_tokens") else "-",
            str(p.get("price_as_of") or "-")])
    print_fitted(console, fitted_table(tr("Cross-cloud comparison", lang), cols, rows, width=console.width, wide=wide),
                 wide)
    for wmsg in result.get("warnings", []):
        console.print(f"[yellow]! {wmsg}[/yellow]")
    fx = result.get("fx")
    if fx:
        line = tr("exchange rate {rate} CNY/USD as of {date} ({source})", lang).format(
            rate=fx["usd_cny"], date=fx["as_of"], source=fx["source"])
        console.print(f"[dim]- {line}[/dim]")
    for a in result.get("assumptions", []):
        console.print(f"[dim]- {a}[/dim]")
