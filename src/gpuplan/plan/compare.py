"""`gpuplan compare`: the clouds side by side, like for like.

Every row is one (cloud, billing mode): the cheapest plan of that billing mode on that cloud's bundled
catalog, in one currency, with the hardware (GPUs, GPU memory), the time, the cost of the whole job at
the workload's duration (a service: per month, pay-as-you-go counted as 730 h) and the basis of the
price (quoted / derived / guessed, its date, the region it comes from). Rows are grouped by billing
mode, so a spot price is never read against a pay-as-you-go one, and the cheapest cloud of each mode is
named. A subscription (whole months) is not put beside hourly billing for a job shorter than a month:
that row is left out and a note says what the month would cost.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from rich.console import Console

from gpuplan.catalog.prices import STALE_AFTER_DAYS
from gpuplan.i18n import N_, tr
from gpuplan.plan.rank import pessimistic_cost
from gpuplan.units import HOUR_S, HOURS_PER_MONTH, fmt_duration
from gpuplan.workload import Workload

# Labels chosen at run time (t(col)): msgids for the message catalog.
_LABELS = (
    N_("Cloud"), N_("Best plan"), N_("Time"), N_("Cost"), N_("Cost per 1M training tokens"),
    N_("Cost per 1M output tokens"), N_("Price date"), N_("Cross-cloud comparison"), N_("no feasible priced plan"),
    N_("Billing"), N_("Hardware"), N_("Job cost"), N_("Monthly cost"), N_("Cost per 1B tokens"), N_("Price basis"),
)
BILLING_ORDER = ("payg", "spot", "subscription")
BILLING_WORDS = {"payg": N_("pay-as-you-go"), "spot": N_("spot"), "subscription": N_("subscription")}

# Plans whose cost is within this fraction of the cheapest count as tied: one of them is picked by
# fewest GPUs, then fewest instances (a cost that scales linearly with GPUs otherwise lets 64 GPUs
# tie with 1 and win by sort order).
COST_TIE = 0.02


def pick_plan(ranked: list) -> Any | None:
    """The plan shown: among priced ECS plans whose pessimistic cost (the ranking's upper bound) is within
    COST_TIE of the cheapest, the one with the fewest GPUs, then instances, then cost."""
    priced = [p for p in ranked if p.is_ecs and p.cost_key is not None and p.cost.price_per_hour is not None]
    if not priced:
        return None
    key = {id(p): pessimistic_cost(p) or 0.0 for p in priced}
    cheapest = min(key.values())
    tied = [p for p in priced if key[id(p)] <= cheapest * (1.0 + COST_TIE) + 1e-9]
    return min(tied, key=lambda p: (p.gpus_total, p.instance_count, key[id(p)], p.rank))


def _gpu_memory_gib(plan_dict: dict[str, Any], cloud: str) -> float | None:
    from gpuplan.catalog.instances import load_instances

    inst = load_instances(cloud).get(plan_dict["instance_type"])
    if inst is None or not inst.gpu_memory_gib:
        return None
    return float(inst.gpu_memory_gib) * float(inst.gpu_count) * int(plan_dict["instance_count"])


def _row(cloud: str, plan: Any) -> dict[str, Any]:
    """One comparison row (JSON) from a ranked plan."""
    d = plan.to_dict()
    c = plan.cost
    if c.total_cost is not None:
        cost, unit = c.total_cost, "job"
    elif c.monthly_cost is not None:
        cost, unit = c.monthly_cost, "month"
    else:
        cost, unit = c.cost_per_billion_tokens, "1B tokens"
    return {"cloud": cloud, "billing": c.billing, "instance_type": plan.instance_type,
            "instance_count": plan.instance_count, "gpu": plan.gpu, "gpus_total": plan.gpus_total,
            "gpu_memory_gib": _gpu_memory_gib(d, cloud), "time_s": c.time_s, "cost": cost, "cost_unit": unit,
            "upper_bound": pessimistic_cost(plan), "currency": c.currency,
            "price_per_hour": c.price_per_hour, "price_basis": c.price_basis, "price_kind": c.price_kind,
            "price_as_of": c.price_as_of, "price_age_days": c.price_age_days, "region": c.region,
            "price_region": c.price_region, "proxy": bool(c.price_region and c.price_region != c.region),
            "plan": d}


def _short_job(w: Workload, plans: list) -> float | None:
    """The job's run time when it is a job shorter than a month (None for a service or a longer job)."""
    times = [p.cost.time_s for p in plans if p.cost.time_s is not None]
    if not times:
        training = (w.task or "inference") != "inference"
        return 0.0 if training and not w.dataset else None   # per-token figures: no duration at all
    t = min(times)
    return t if t < HOURS_PER_MONTH * HOUR_S else None


def _cloud_workload(w: Workload, cloud: str, currency: str) -> Workload:
    """The workload restricted to one cloud, its regions (the given ones that belong to it, else its
    default) and one currency."""
    from gpuplan.catalog.instances import load_regions

    cons = w.constraints.model_dump(exclude_none=True) if w.constraints else {}
    regions = [r for r in (cons.get("regions") or []) if r.lower() in load_regions(cloud)]
    cons.update(currency=currency, clouds=[cloud], regions=regions or None)
    return w.with_updates(constraints=cons)


def compare_clouds(w: Workload, *, currency: str = "CNY", today: dt.date | None = None) -> dict[str, Any]:
    """Per cloud and billing mode: the cheapest plan of `recommend` over that cloud's catalog, in
    ``currency`` (the dated rate of data/fx.yaml), as rows that can be read side by side."""
    from gpuplan.catalog.instances import available_clouds, load_instances
    from gpuplan.plan import recommend
    from gpuplan.plan.cost import load_fx

    clouds, rows, notes = [], [], []
    workload_dump = None
    for cloud in available_clouds():
        rec = recommend(_cloud_workload(w, cloud, currency), instances=list(load_instances(cloud).values()), top=3,
                        today=today)
        d = rec.to_dict()
        workload_dump = workload_dump or d["workload"]
        best = pick_plan(rec.all_plans)
        short = _short_job(rec.workload, rec.all_plans)
        by_billing: dict[str, Any] = {}
        for billing in BILLING_ORDER:
            chosen = pick_plan([p for p in rec.all_plans if p.cost.billing == billing])
            if chosen is None:
                continue
            if billing == "subscription" and short is not None:
                month = chosen.cost.total_cost
                notes.append(tr("{cloud}: subscription left out: the job ({time}) is shorter than the one-month "
                                "minimum term ({cur} {cost} for the month)").format(
                    cloud=cloud, time=fmt_duration(short) if short else tr("per-token figures"), cur=currency,
                    cost=f"{month:,.0f}" if month is not None else "-"))
                continue
            by_billing[billing] = _row(cloud, chosen)
            rows.append(by_billing[billing])
        entry: dict[str, Any] = {"cloud": cloud, "plan": best.to_dict() if best is not None else
                                 (d["plans"][0] if d["plans"] else None),
                                 "plans_found": len(d["plans"]), "priced": best is not None,
                                 "by_billing": by_billing, "warnings": d.get("warnings", [])}
        p = entry["plan"]
        if p:
            tokens_s = (p.get("performance") or {}).get("tokens_per_s")
            entry["cost_per_million_training_tokens"] = (p["price_per_hour"] / 3600 / tokens_s * 1e6
                                                         if p.get("price_per_hour") and tokens_s else None)
            entry["cost_per_million_output_tokens"] = p.get("cost_per_million_output_tokens")
        clouds.append(entry)
    rows.sort(key=lambda r: (BILLING_ORDER.index(r["billing"]), r["upper_bound"] or float("inf")))
    cheapest: dict[str, dict[str, Any]] = {}
    for r in rows:
        cheapest.setdefault(r["billing"], {"cloud": r["cloud"], "instance_type": r["instance_type"],
                                           "cost": r["cost"], "cost_unit": r["cost_unit"]})
    fx = load_fx()
    fx_warning = fx.staleness_warning(today)
    return {"schema_version": 1, "workload": workload_dump, "currency": currency, "clouds": clouds,
            "rows": rows, "cheapest_by_billing": cheapest, "notes": notes,
            "fx": {"usd_cny": fx.usd_cny, "as_of": fx.as_of, "source": fx.source, "kind": fx.kind,
                   "stale_after_days": fx.stale_after_days, "age_days": fx.age_days(today)},
            "warnings": [fx_warning] if fx_warning else [],
            "assumptions": [tr("each cloud's bundled catalog and price snapshot (dates per row); currency "
                               "converted with the dated rate in data/fx.yaml"),
                            tr("one row per cloud and billing mode: its cheapest plan by the upper bound of its "
                               "price (the ranking's pessimistic cost); plans within {tie} of it count as tied and "
                               "the one with the fewest GPUs, then instances, is shown").format(tie=f"{COST_TIE:.0%}"),
                            tr("costs are for the whole job at its estimated run time (services: per month, "
                               "pay-as-you-go counted as 730 h); spot includes the interruption overhead"),
                            tr("clouds without prices for a feasible type show the plan with null costs")]}


def _basis_text(r: dict[str, Any], lang: str) -> str:
    basis = tr(r["price_basis"], lang) if r.get("price_basis") else "-"
    if r.get("price_basis") == "quoted" and r.get("price_kind") == "third-party":
        basis = tr("quoted, third-party copy", lang)
    region = r.get("price_region") or r.get("region") or "-"
    if r.get("proxy"):
        region = tr("{region} (proxy for {wanted})", lang).format(region=region, wanted=r.get("region"))
    date = r.get("price_as_of") or "-"
    if (r.get("price_age_days") or 0) > STALE_AFTER_DAYS:
        date = tr("{date} ({days} days old)", lang).format(date=date, days=r["price_age_days"])
    return f"{basis}, {date}, {region}"


def _cost_text(r: dict[str, Any], cur: str, lang: str) -> str:
    if r.get("cost") is None:
        return tr("no price known", lang)
    suffix = {"job": "", "month": tr("/month", lang), "1B tokens": tr(" per 1B tokens", lang)}[r["cost_unit"]]
    mark = "~" if r.get("price_basis") in ("derived", "guessed") else ""
    return f"{cur} {r['cost']:,.0f}{mark}{suffix}"


def render_comparison(result: dict[str, Any], console: Console, lang: str, wide: bool = False) -> None:
    from gpuplan.render.fit import Column, fitted_table, print_fitted

    spec = [("Billing", 0, "left"), ("Cloud", 0, "left"), ("Best plan", 0, "left"), ("Hardware", 1, "left"),
            ("Time", 1, "right"), ("Cost", 0, "right"), ("Price basis", 2, "left")]
    cols = [Column(tr(name, lang), prio, just) for name, prio, just in spec]
    cur = result["currency"]
    rows = []
    for r in result.get("rows", []):
        mem = f" ({r['gpu_memory_gib']:,.0f} GiB)" if r.get("gpu_memory_gib") else ""
        rows.append([tr(BILLING_WORDS.get(r["billing"], r["billing"]), lang), r["cloud"],
                     f"{r['instance_count']} x {r['instance_type']}", f"{r['gpus_total']} x {r['gpu']}{mem}",
                     fmt_duration(r["time_s"]) if r.get("time_s") else "-", _cost_text(r, cur, lang),
                     _basis_text(r, lang)])
    for c in result["clouds"]:
        if not c.get("by_billing"):
            rows.append(["-", c["cloud"], tr("no feasible priced plan", lang), "-", "-", "-", "-"])
    print_fitted(console, fitted_table(tr("Cross-cloud comparison", lang), cols, rows, width=console.width, wide=wide),
                 wide)
    if any(r.get("price_basis") in ("derived", "guessed") for r in result.get("rows", [])):
        legend = tr("derived or guessed price: check a quote", lang)
        console.print(f"[dim]~ {legend}[/dim]")
    for billing, best in result.get("cheapest_by_billing", {}).items():
        console.print(tr("cheapest {billing}: {cloud} ({instance})", lang).format(
            billing=tr(BILLING_WORDS.get(billing, billing), lang), cloud=best["cloud"], instance=best["instance_type"]))
    for note in result.get("notes", []):
        console.print(f"[dim]- {note}[/dim]")
    for wmsg in result.get("warnings", []):
        console.print(f"[yellow]! {wmsg}[/yellow]")
    fx = result.get("fx")
    if fx:
        line = tr("exchange rate {rate} CNY/USD as of {date} ({source})", lang).format(
            rate=fx["usd_cny"], date=fx["as_of"], source=fx["source"])
        console.print(f"[dim]- {line}[/dim]")
    for a in result.get("assumptions", []):
        console.print(f"[dim]- {a}[/dim]")
