"""Prices and costs: offers by (instance type, region, billing), currency conversion, the spot
interruption model, training job cost and serving cost.

Billing modes:

- ``payg`` (pay-as-you-go): hourly offer x hours.
- ``spot`` (preemptible): a spot offer when the catalog has one, else the pay-as-you-go price x the
  cloud's default fraction from ``data/clouds/<cloud>/spot.yaml``, always marked guessed with its
  rule (Alibaba: 0.2, the one observed GPU spot level; AWS: 0.43, the observed p5en level; Tencent:
  none found, so no spot estimate). Alibaba: spot prices "can go as low as 10% of the prices of
  pay-as-you-go instances", the market price "can be up to the pay-as-you-go price" (the cap: the
  RunInstances / DescribePrice reference, SpotStrategy=SpotAsPriceGo), and an instance is released
  5 minutes after the interruption notice, after an optional 1-hour protection period
  (https://www.alibabacloud.com/help/en/ecs/user-guide/what-is-a-spot-instance,
  https://alibabacloud.com/help/doc-detail/52088.htm). The upper bound of every spot price is
  therefore the pay-as-you-go price (with that price's own margin).
- ``subscription``: the monthly offer x whole months (training) or per month (serving). Longer
  terms (1 or 3 years) need their discount: none is bundled (no official figure was found), pass
  ``term_discounts`` to apply yours.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass, replace
from importlib.resources import files
from typing import Any

from gpuplan.catalog.prices.prices import BASIS_WORDS, RULE_REGION_PROXY, Offer, offer_note
from gpuplan.files.datafiles import load_data
from gpuplan.i18n import _, localize
from gpuplan.plan.money.spot import (DEFAULT_SPOT, SPOT_CAP_SOURCE, SPOT_SOURCE, SpotDefault, SpotModel,  # noqa: F401
                               SpotRun, describe_spot, job_interruption_rate, spot_default, spot_run, spot_summary,
                               spot_why)
from gpuplan.units import HOUR_S, HOURS_PER_MONTH


FX_STALE_AFTER_DAYS = 90


@dataclass(frozen=True)
class Fx:
    """A dated exchange rate (CNY per USD), overridable."""

    usd_cny: float
    as_of: str
    source: str
    stale_after_days: int = FX_STALE_AFTER_DAYS
    kind: str = ""

    def age_days(self, today: dt.date | None = None) -> int | None:
        try:
            return ((today or dt.date.today()) - dt.date.fromisoformat(self.as_of)).days
        except ValueError:
            return None

    def staleness_warning(self, today: dt.date | None = None) -> str | None:
        """A warning when the rate is older than ``stale_after_days`` (None while it is fresh)."""
        age = self.age_days(today)
        if age is None or age <= self.stale_after_days:
            return None
        return _("exchange rate {rate} CNY/USD dates from {date} ({age} days old, over {limit}): converted prices "
                 "may be off; pass your own rate").format(rate=self.usd_cny, date=self.as_of, age=age,
                                                          limit=self.stale_after_days)

    def convert(self, amount: float, src: str, dst: str) -> float:
        if src == dst:
            return amount
        if src == "USD" and dst == "CNY":
            return amount * self.usd_cny
        if src == "CNY" and dst == "USD":
            return amount / self.usd_cny
        raise ValueError(f"no rate for {src}->{dst}")


# Used only when data/fx.yaml is missing: the ECB USD/CNY cross of 2026-10-30 (7.4326 / 1.1172).
FX_FALLBACK = Fx(6.6529, "2026-10-30", "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip",
                 kind="inferred")


@functools.cache
def load_fx() -> Fx:
    """The USD/CNY rate of data/fx.yaml (either ``rates: [{base, quote, rate, as_of, source}]`` or
    ``usd_cny: {rate, as_of, source}``), else :data:`FX_FALLBACK`."""
    path = files("gpuplan") / "data" / "fx.yaml"
    try:
        doc = load_data(path) or {}
    except (OSError, FileNotFoundError, ValueError):
        return FX_FALLBACK
    stale = int(doc.get("stale_after_days") or FX_STALE_AFTER_DAYS)
    if isinstance(doc.get("usd_cny"), dict):
        e = doc["usd_cny"]
        return Fx(float(e["rate"]), str(e.get("as_of")), str(e.get("source", "")), stale, str(e.get("kind", "")))
    for e in doc.get("rates") or ():
        if e.get("base") == "USD" and e.get("quote") == "CNY":
            return Fx(float(e["rate"]), str(e.get("as_of")), str(e.get("source", "")), stale, str(e.get("kind", "")))
    return FX_FALLBACK


@dataclass(frozen=True)
class Price:
    """The hourly price of one instance for one billing mode, with where it came from."""

    billing: str
    per_hour: float              # one instance, in the target currency
    per_month: float | None      # one instance, subscription only
    currency: str
    region: str                  # the region priced
    as_of: str
    source: str
    estimated: bool = False      # not a quote: a derived or guessed row, or spot guessed from pay-as-you-go
    note: str = ""
    kind: str = ""               # official | third-party | inferred | estimated | user (catalog.prices.prices.PRICE_KINDS)
    rule: str = ""               # how a derived or guessed price was computed
    margin: float = 0.0          # how far the charged price may be above this one (fraction; plan_costs.yaml)
    basis: str = "quoted"        # quoted | derived | guessed (catalog.prices.prices.PRICE_BASES)


class PriceBook:
    """Newest offer per (instance type, region, billing); conversions to one currency."""

    def __init__(self, offers: list[Offer], currency: str = "CNY", fx: Fx | None = None,
                 spot: SpotModel = DEFAULT_SPOT, today: dt.date | None = None):
        self.currency = currency
        self.fx = fx or load_fx()
        self.spot = spot
        self.today = today   # the date each price's age is counted to (None: today)
        self._best: dict[tuple[str, str, str], Offer] = {}
        for o in offers:
            key = (o.instance_type.lower(), o.region, o.billing)
            cur = self._best.get(key)
            if cur is None or o.as_of > cur.as_of:
                self._best[key] = o
        self.regions = tuple(sorted({o.region for o in offers}))
        self.converted = False

    def _conv(self, amount: float, cur: str) -> float:
        if cur != self.currency:
            self.converted = True
        return self.fx.convert(amount, cur, self.currency)

    def offer(self, inst: str, region: str, billing: str) -> Offer | None:
        return self._best.get((inst.lower(), region, billing))

    def price(self, inst: str, region: str, billing: str) -> Price | None:
        """The price in ``region``, or None. Spot falls back to payg x fraction (estimated)."""
        o = self.offer(inst, region, billing)
        if o is not None:
            per_month = self._conv(o.price_per_month, o.currency) if billing == "subscription" else None
            margin = offer_margin(o.kind, o.basis)
            if billing == "spot":   # a spot price can rise to the pay-as-you-go price (the cap)
                margin = max(margin, self._spot_cap_margin(inst, region, o.price_per_hour, o.currency))
            return Price(billing, self._conv(o.price_per_hour, o.currency), per_month, self.currency, o.region,
                         o.as_of.isoformat(), o.source, estimated=o.estimated, note=offer_note(o, self.today),
                         kind=o.kind, rule=o.rule, margin=margin, basis=o.basis)
        if billing == "spot":
            base = self.offer(inst, region, "payg")
            if base is None:
                return None
            f, rule, source = self.spot_fraction(base.cloud)
            if f is None:
                return None
            rule = _("spot = {fraction} of the pay-as-you-go price ({rule})").format(fraction=f"{f:.0%}",
                                                                                    rule=localize(rule))
            if base.estimated:
                rule = _("{rule}; the pay-as-you-go price is itself estimated: {base_rule}").format(
                    rule=rule, base_rule=localize(base.rule))
            # pessimistic: the top of the spot range (the cap: the pay-as-you-go price), on top of the
            # pay-as-you-go price's own margin
            top = max(self.spot.fraction_range[1], f)
            margin = (1.0 + offer_margin(base.kind, base.basis)) * top / f - 1.0
            return Price("spot", self._conv(base.price_per_hour, base.currency) * f, None, self.currency, base.region,
                         base.as_of.isoformat(), source, estimated=True,
                         note=_("guessed: {rule}; check the console").format(rule=rule), kind="estimated", rule=rule,
                         margin=margin, basis="guessed")
        return None

    def _spot_cap_margin(self, inst: str, region: str, spot_per_hour: float, currency: str) -> float:
        """How far a spot price may rise: to the pay-as-you-go price of the same type and region (the cap),
        with that price's own margin; 0 when no pay-as-you-go price is known."""
        payg = self.offer(inst, region, "payg")
        if payg is None or spot_per_hour <= 0:
            return 0.0
        cap = self.fx.convert(payg.price_per_hour, payg.currency, currency) * self.spot.fraction_range[1]
        return max(0.0, cap * (1.0 + offer_margin(payg.kind, payg.basis)) / spot_per_hour - 1.0)

    def spot_fraction(self, cloud: str) -> tuple[float | None, str, str]:
        """(fraction of pay-as-you-go, rule, source) for a spot estimate on ``cloud``; (None, ...) when
        there is no basis for one (no override and no bundled default)."""
        if self.spot.fraction_of_payg is not None:
            return self.spot.fraction_of_payg, "your spot fraction", "user setting"
        d = spot_default(cloud)
        if d is None:
            return None, f"no spot level known for {cloud}", ""
        return d.fraction_of_payg, d.rule, d.source

    def price_with_proxy(self, inst: str, region: str, billing: str) -> Price | None:
        """The price in ``region``, else another region's price as a labelled proxy (``Price.region``
        says which): a sourced price before an estimate, then a region of the same area (``cn-`` for
        ``cn-wulanchabu``), then by name. A borrowed price is never a quote for ``region``: it is derived
        (guessed when the borrowed row is a guess), with the region rule in ``rule`` and the margin of its
        basis, so it ranks and shows as the estimate it is."""
        p = self.price(inst, region, billing)
        if p is not None:
            return p
        area = region.split("-")[0]
        others = [q for q in (self.price(inst, r, billing) for r in self.regions if r != region) if q is not None]
        if not others:
            return None
        return self._borrowed(min(others, key=lambda q: (q.estimated, q.region.split("-")[0] != area, q.region)),
                              region)

    def _borrowed(self, p: Price, region: str) -> Price:
        """Another region's price standing in for ``region``, labelled as derived (see price_with_proxy)."""
        basis = "guessed" if p.basis == "guessed" else "derived"
        rule = _(RULE_REGION_PROXY).format(source=p.region, billing=_(p.billing), region=region,
                                           how=_(BASIS_WORDS.get(p.basis, p.basis)), as_of=p.as_of)
        if p.rule:
            rule = _("{rule}; {base_rule}").format(rule=rule, base_rule=localize(p.rule))
        margin = max(p.margin, offer_margin(None if p.kind == "estimated" else p.kind, basis))
        note = _("{basis}: {rule}; {note}").format(basis=_(BASIS_WORDS[basis]), rule=rule, note=p.note)
        return replace(p, estimated=True, basis=basis, rule=rule, margin=margin, note=note)


def checkpoint_write_s(checkpoint_bytes: float, disk_bytes_s: float, nodes: int, layout: Any) -> float:
    """Seconds to write one checkpoint (Young's C). A sharded job (ZeRO >= 1, FSDP, TP or PP > 1) writes
    each node's shard to that node's own disk at once (DeepSpeed / FSDP sharded state dicts, Megatron
    distributed checkpoints), so C shrinks with the nodes; plain data parallelism writes one full copy."""
    sharded = (getattr(layout, "zero", 0) or 0) >= 1 or (getattr(layout, "fsdp", "none") or "none") != "none" \
        or (getattr(layout, "tp", 1) or 1) * (getattr(layout, "pp", 1) or 1) > 1
    return checkpoint_bytes / (disk_bytes_s * (max(1, nodes) if sharded else 1))


# ------------------------------------------------------------------------------------- budget

def upper_bound(amount: float, margin: float | None) -> float:
    """The pessimistic figure the ranking compares and the budget is checked against: amount x (1 + margin)."""
    return amount * (1.0 + float(margin or 0.0))


def budget_reason(label: str, n: int, billing: str, currency: str, spend: float, margin: float | None,
                  budget: float, monthly: bool, spend_high: float | None = None) -> tuple[str, float] | None:
    """(why a plan is over the budget, by how much) or None when even its upper bound fits. A plan whose
    point cost fits but whose upper bound (an estimated price at the top of its margin, and the high end of the
    cost's 80 % range, ``spend_high``: plan/money/ranges.py) does not is within budget only at the point estimate,
    and is not called within budget."""
    high = upper_bound(max(spend, spend_high or spend), margin)
    if high <= budget:
        return None
    args = {"label": label, "n": n, "billing": _(billing), "cur": currency, "spend": f"{spend:,.0f}",
            "high": f"{high:,.0f}", "budget": f"{budget:,.0f}"}
    if spend > budget:
        text = (_("{label} x {n} ({billing}): costs {cur} {spend}/month > budget {budget}") if monthly
                else _("{label} x {n} ({billing}): costs {cur} {spend} > budget {budget}"))
        return text.format(**args), spend - budget
    if spend_high and spend_high > spend:
        text = (_("{label} x {n} ({billing}): within budget {budget} only at the point estimate ({cur} {spend}/month); "
                  "up to {cur} {high}/month at the high end of its cost range and price margin") if monthly
                else _("{label} x {n} ({billing}): within budget {budget} only at the point estimate ({cur} {spend}); up "
                       "to {cur} {high} at the high end of its cost range and price margin"))
        return text.format(**args), high - budget
    text = (_("{label} x {n} ({billing}): within budget {budget} only at the point estimate ({cur} {spend}/month); up "
              "to {cur} {high}/month at the top of its price margin") if monthly
            else _("{label} x {n} ({billing}): within budget {budget} only at the point estimate ({cur} {spend}); up to "
                   "{cur} {high} at the top of its price margin"))
    return text.format(**args), high - budget


# ------------------------------------------------------------------------------------- job costs

def months_needed(time_s: float) -> int:
    """Whole subscription months for a job of ``time_s`` (at least one)."""
    return max(1, math.ceil(time_s / (HOURS_PER_MONTH * HOUR_S) - 1e-9))


def training_cost(price: Price, instances: int, time_s: float) -> float:
    """Cost of a job: hours x hourly price (payg/spot) or whole months x monthly price (subscription)."""
    if price.billing == "subscription" and price.per_month is not None:
        return months_needed(time_s) * price.per_month * instances
    return time_s / HOUR_S * price.per_hour * instances


def serving_monthly_cost(price: Price, instances: int) -> float:
    """One month of the whole plan (all replicas): 730 h x hourly, or the monthly subscription."""
    if price.billing == "subscription" and price.per_month is not None:
        return price.per_month * instances
    return price.per_hour * HOURS_PER_MONTH * instances


def cost_per_million_tokens(hourly_cost: float, tokens_per_s: float) -> float | None:
    if tokens_per_s <= 0:
        return None
    return hourly_cost / (tokens_per_s * HOUR_S) * 1e6


def price_age_days(price: Price, today: dt.date | None = None) -> int:
    return ((today or dt.date.today()) - dt.date.fromisoformat(price.as_of)).days


@functools.cache
def plan_costs_doc() -> dict:
    """data/plan_costs.yaml (fixed costs, price margins, savings plans), read once; {} if it cannot be read."""
    path = files("gpuplan") / "data" / "plan_costs.yaml"
    try:
        return load_data(path) or {}
    except (OSError, FileNotFoundError, ValueError):
        return {}



DEFAULT_MARGINS = {"official": 0.0, "user": 0.0, "live": 0.0, "third-party": 0.10, "inferred": 0.10,
                   "estimated": 0.50, "derived": 0.50, "guessed": 1.00}


@functools.cache
def price_margins() -> dict[str, float]:
    """Relative uncertainty of a price by its kind (data/plan_costs.yaml ``price_margins``)."""
    d = plan_costs_doc().get("price_margins") or {}
    out = dict(DEFAULT_MARGINS)
    for k, v in d.items():
        if isinstance(v, (int, float)):
            out[k] = float(v)
    return out


def kind_margin(kind: str | None, estimated: bool = False) -> float:
    """The margin of one price kind; an unknown kind counts as estimated when the price is marked so."""
    m = price_margins()
    if kind in m:
        return m[kind]
    return m["estimated"] if estimated else 0.0


def offer_margin(kind: str | None, basis: str | None) -> float:
    """The margin of a price by how it was obtained: a quote by whose copy it is (0 official, live or
    yours; 10 % a third party's copy), a derived price 50 %, a guess 100 % (data/plan_costs.yaml)."""
    m = price_margins()
    if basis in ("derived", "guessed"):
        return max(m[basis], kind_margin(kind) if kind != "estimated" else 0.0)
    return kind_margin(kind)


def margin_words() -> dict[str, str]:
    """The margins as the ranking sentence names them: {third} (a third party's copy) and {rule}
    (derived and guessed prices), from data/plan_costs.yaml."""
    m = price_margins()
    return {"third": f"{m['third-party']:.0%}",
            "rule": _("derived +{derived}, guessed +{guessed}").format(derived=f"{m['derived']:.0%}",
                                                                      guessed=f"{m['guessed']:.0%}")}
