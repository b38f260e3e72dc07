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

from gpuplan.i18n import N_, tr
from gpuplan.plan.rank import pessimistic_cost
from gpuplan.units import HOUR_S, HOURS_PER_MONTH, fmt_duration
from gpuplan.workload import Workload

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
    from gpuplan.catalog.hardware.instances import load_instances

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
    from gpuplan.catalog.hardware.regions import load_regions

    cons = w.constraints.model_dump(exclude_none=True) if w.constraints else {}
    regions = [r for r in (cons.get("regions") or []) if r.lower() in load_regions(cloud)]
    cons.update(currency=currency, clouds=[cloud], regions=regions or None)
    return w.with_updates(constraints=cons)


def compare_clouds(w: Workload, *, currency: str = "CNY", today: dt.date | None = None) -> dict[str, Any]:
    """Per cloud and billing mode: the cheapest plan of `recommend` over that cloud's catalog, in
    ``currency`` (the dated rate of data/fx.yaml), as rows that can be read side by side."""
    from gpuplan.catalog.hardware.instances import available_clouds, load_instances
    from gpuplan.plan import recommend
    from gpuplan.plan.money.cost import load_fx

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
