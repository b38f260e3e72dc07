"""Every ranked plan's price, told as a buyer needs it: how the price was obtained (quoted, derived,
guessed) and how old it is, what the other billing modes would cost at the workload's real duration
(pay-as-you-go, a monthly subscription, a savings plan) with the break-even in words, and whether the
plan's family is sold in its region.

- Pay-as-you-go: hours x hourly price x instances (per second billing).
- Subscription: whole months (at least one) x monthly price x instances; it pays off once a month's
  use exceeds monthly / hourly hours ("subscription pays off after 20 days of use").
- Savings plan (Alibaba): a 1-year hourly commitment at a discount on pay-as-you-go. The commitment is
  paid for the whole term whether used or not, so for one job it pays off only when the job (or other
  work) uses it for more than (1 - discount) of the year. The discount is data/plan_costs.yaml
  ``savings_plan`` (one third-party console check: Alibaba publishes no fixed figure).

``annotate(plans, book)`` returns the plans with ``cost.price_basis``, ``price_age_days``,
``price_stale``, ``billing_options`` and (Alibaba) ``details["availability"]`` filled in.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.catalog.hardware.availability import availability
from gpuplan.catalog.prices.prices import STALE_AFTER_DAYS
from gpuplan.i18n import N_, _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.record import Plan, rnd
from gpuplan.units import HOUR_S, HOURS_PER_MONTH

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class SavingsPlan:
    """A savings plan's discount on pay-as-you-go and its term (data/plan_costs.yaml ``savings_plan``)."""

    discount: float
    term_h: float
    kind: str
    as_of: str
    source: str

    @property
    def break_even_days(self) -> float:
        """Days of use in the term after which the commitment costs less than pay-as-you-go."""
        return (1.0 - self.discount) * self.term_h / 24.0


@functools.cache
def savings_plan() -> SavingsPlan | None:
    d = costm.plan_costs_doc().get("savings_plan") or {}
    if d.get("discount") is None:
        return None
    return SavingsPlan(float(d["discount"]), float(d.get("term_h") or HOURS_PER_YEAR), str(d.get("kind", "")),
                       str(d.get("as_of", "")), str(d.get("source", "")))


# Who a figure comes from (data/plan_costs.yaml `kind`), as the sentences above say it.
KIND_WORDS = {"official": N_("official"), "third-party": N_("third-party"), "inferred": N_("inferred"),
              "estimated": N_("estimated"), "user": N_("your own")}


def _money(cur: str, x: float) -> str:
    return f"{cur} {x:,.2f}" if x < 1000 else f"{cur} {x:,.0f}"


def _run_s(plan: Plan) -> float | None:
    """The job's run time without spot interruptions (what pay-as-you-go and a subscription would take)."""
    c = plan.cost
    if c.time_s is None:
        return None
    spot = c.spot or {}
    overhead = float(spot.get("overhead_fraction") or 0.0)
    fixed = sum((c.fixed or {}).values())
    return fixed + (c.time_s - fixed) / (1.0 + overhead)


def break_even_sentences(payg: costm.Price | None, sub: costm.Price | None, sp: SavingsPlan | None,
                         run_s: float | None, cur: str) -> list[str]:
    """The break-even of a subscription and of a savings plan against pay-as-you-go, in words."""
    out = []
    if payg is not None and sub is not None and sub.per_month and payg.per_hour > 0:
        days = sub.per_month / payg.per_hour / 24.0
        text = _("subscription pays off after {days} days of use in a month ({monthly}/month vs {hourly}/h "
                 "pay-as-you-go)").format(days=f"{days:.0f}", monthly=_money(cur, sub.per_month),
                                          hourly=_money(cur, payg.per_hour))
        if run_s is not None:
            run_days = run_s / HOUR_S / 24.0
            text = (_("{text}; this job runs {days} days, so subscription is cheaper") if run_days > days
                    else _("{text}; this job runs {days} days, so pay-as-you-go is cheaper")).format(
                text=text, days=f"{run_days:.1f}")
        out.append(text)
    if payg is not None and sp is not None:
        out.append(_("a 1-year savings plan ({discount} off pay-as-you-go, {kind} figure of {date}) pays off after "
                     "{days} days of use in its year").format(discount=f"{sp.discount:.1%}", kind=_(KIND_WORDS.get(sp.kind, sp.kind)),
                                                              date=sp.as_of, days=f"{sp.break_even_days:.0f}"))
    return out


def billing_options(book: costm.PriceBook, plan: Plan, cloud: str) -> dict[str, Any] | None:
    """What the plan's hardware costs under each billing mode at the workload's duration (a job: its run
    time; a service: one month), each with its price basis and date, the cheapest, and the break-even."""
    c = plan.cost
    region = c.region
    if not plan.is_ecs or region is None or c.billing is None:
        return None
    n = plan.instance_count
    run_s = _run_s(plan)
    if run_s is None and c.monthly_cost is None:
        return None   # per-1B-token training figures: no duration to compare at
    hours = run_s / HOUR_S if run_s is not None else HOURS_PER_MONTH
    payg = book.price_with_proxy(plan.instance_type, region, "payg")
    sub = book.price_with_proxy(plan.instance_type, region, "subscription")
    sp = savings_plan() if cloud == "alibaba" else None
    options: list[dict[str, Any]] = []

    def add(billing: str, cost: float, price: costm.Price, how: str, **extra: Any) -> None:
        options.append({"billing": billing, "cost": rnd(cost, 2), "how": how, "price_basis": price.basis,
                        "price_as_of": price.as_of, "price_region": price.region,
                        "upper_bound": rnd(costm.upper_bound(cost, price.margin), 2), **extra})

    if payg is not None:
        add("payg", payg.per_hour * n * hours, payg,
            _("{hours} h x hourly price x {n} instance(s)").format(hours=f"{hours:,.1f}", n=n))
    if sub is not None and sub.per_month:
        months = costm.months_needed(run_s) if run_s is not None else 1
        add("subscription", sub.per_month * n * months, sub,
            _("{months} whole month(s) x monthly price x {n} instance(s)").format(months=months, n=n), months=months)
    if payg is not None and sp is not None:
        committed_h = max(hours, sp.term_h) if run_s is not None else hours
        add("savings-plan", payg.per_hour * (1.0 - sp.discount) * n * committed_h, payg,
            _("{hours} h committed at {discount} off pay-as-you-go x {n} instance(s)").format(
                hours=f"{committed_h:,.0f}", discount=f"{sp.discount:.1%}", n=n),
            discount=sp.discount, discount_kind=sp.kind, discount_source=sp.source)
    if not options:
        return None
    cheapest = min(options, key=lambda o: o["upper_bound"])
    return {"unit": "job" if run_s is not None else "month", "hours": rnd(hours, 2), "currency": book.currency,
            "options": options, "cheapest": cheapest["billing"],
            "break_even": break_even_sentences(payg, sub, sp, run_s, book.currency)}


def _basis(book: costm.PriceBook, plan: Plan) -> str | None:
    """How the plan's price was obtained: its catalog row's basis (ECS instances and the ECS nodes of an
    ACK pool; a spot price with no row is guessed from pay-as-you-go); a managed platform's own price list
    is quoted, derived when converted to another currency."""
    c = plan.cost
    if c.price_per_hour is None and c.monthly_cost is None:
        return None
    if plan.platform in ("ecs", "ack") and c.billing:
        o = book.offer(plan.instance_type, c.price_region or c.region or "", c.billing)
        if o is not None:
            if c.price_region and c.region and c.price_region != c.region:   # borrowed from another region
                return "guessed" if o.basis == "guessed" else "derived"
            return o.basis
        if c.billing == "spot":
            return "guessed"
    return "derived" if c.price_estimated else "quoted"


def annotate(plans: Sequence[Plan], book: costm.PriceBook, today: dt.date | None = None,
             alibaba_types: frozenset[str] = frozenset(), options_top: int | None = None) -> list[Plan]:
    """The plans with their price basis and age and availability, and (the first ``options_top`` plans,
    all when None) the billing options at the workload's duration (see the module doc)."""
    from gpuplan.catalog.hardware.instances import load_instances

    today = today or book.today or dt.date.today()
    families = {t: i.family for t, i in load_instances("alibaba").items()} if alibaba_types else {}
    out = []
    for n, p in enumerate(plans):
        c = p.cost
        age = (today - dt.date.fromisoformat(c.price_as_of)).days if c.price_as_of else None
        cloud = "alibaba" if p.instance_type in alibaba_types else ""
        want_options = p.is_ecs and (options_top is None or n < options_top)
        options = billing_options(book, p, cloud) if want_options else None
        cost = replace(c, price_basis=_basis(book, p), price_age_days=age,
                       price_stale=None if age is None else age > STALE_AFTER_DAYS, billing_options=options)
        details = dict(p.details)
        warnings = list(p.advice.warnings)
        why = list(p.advice.why)
        if options and len(options["options"]) > 1:
            why.extend(options["break_even"][:1])
        if cloud and c.region and p.instance_type in families:
            a = availability(families[p.instance_type], c.region)
            details["availability"] = a.to_dict()
            text = a.warning(c.price_region)
            if text:
                warnings.append(text)
        out.append(replace(p, cost=cost, details=details,
                           advice=replace(p.advice, why=tuple(why), warnings=tuple(warnings))))
    return out
