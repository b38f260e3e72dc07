"""Prices and costs: offers by (instance type, region, billing), currency conversion, the spot
interruption model, training job cost and serving cost.

Billing modes:

- ``payg`` (pay-as-you-go): hourly offer x hours.
- ``spot`` (preemptible): a spot offer when the catalog has one, else the pay-as-you-go price x a
  default fraction. Alibaba: spot prices "can go as low as 10% of the prices of pay-as-you-go
  instances" and an instance is released 5 minutes after the interruption notice, after an optional
  1-hour protection period (https://www.alibabacloud.com/help/en/ecs/user-guide/what-is-a-spot-instance,
  https://alibabacloud.com/help/doc-detail/52088.htm). The typical fraction (0.3) is an assumption.
- ``subscription``: the monthly offer x whole months (training) or per month (serving). Longer
  terms (1 or 3 years) need their discount: none is bundled (no official figure was found), pass
  ``term_discounts`` to apply yours.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import yaml

from gpuplan.catalog.prices import Offer, source_label
from gpuplan.units import HOUR_S, HOURS_PER_MONTH

SPOT_SOURCE = "https://www.alibabacloud.com/help/en/ecs/user-guide/what-is-a-spot-instance"


@dataclass(frozen=True)
class SpotModel:
    """Spot assumptions. ``fraction_of_payg`` and the interruption rate are not official figures."""

    fraction_of_payg: float = 0.3        # unconfirmed: docs say "as low as 10%"; third-party reports ~10-30 %
    fraction_range: tuple[float, float] = (0.1, 0.5)
    interruptions_per_hour: float = 0.05  # unconfirmed assumption: one reclaim per ~20 h of GPU capacity
    restart_s: float = 600.0             # re-create the instance, pull the image, load the model (assumption)
    notice_s: float = 300.0              # released 5 minutes after the interruption notice (Alibaba docs)
    long_job_warning_h: float = 24.0


DEFAULT_SPOT = SpotModel()


@dataclass(frozen=True)
class Fx:
    """A dated exchange rate (CNY per USD), overridable."""

    usd_cny: float
    as_of: str
    source: str

    def convert(self, amount: float, src: str, dst: str) -> float:
        if src == dst:
            return amount
        if src == "USD" and dst == "CNY":
            return amount * self.usd_cny
        if src == "CNY" and dst == "USD":
            return amount / self.usd_cny
        raise ValueError(f"no rate for {src}->{dst}")


# Used only when data/fx.yaml is missing: CFETS central parity reported for 2026-01-08.
FX_FALLBACK = Fx(7.0197, "2026-01-08", "https://menafn.com/1110571586/Chinese-Yuan-Edges-Down-Against-US-Dollar")


@functools.cache
def load_fx() -> Fx:
    """The USD/CNY rate of data/fx.yaml (either ``rates: [{base, quote, rate, as_of, source}]`` or
    ``usd_cny: {rate, as_of, source}``), else :data:`FX_FALLBACK`."""
    path = files("gpuplan") / "data" / "fx.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, FileNotFoundError, yaml.YAMLError):
        return FX_FALLBACK
    if isinstance(doc.get("usd_cny"), dict):
        e = doc["usd_cny"]
        return Fx(float(e["rate"]), str(e.get("as_of")), str(e.get("source", "")))
    for e in doc.get("rates") or ():
        if e.get("base") == "USD" and e.get("quote") == "CNY":
            return Fx(float(e["rate"]), str(e.get("as_of")), str(e.get("source", "")))
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
    estimated: bool = False      # spot derived from pay-as-you-go
    note: str = ""


class PriceBook:
    """Newest offer per (instance type, region, billing); conversions to one currency."""

    def __init__(self, offers: list[Offer], currency: str = "CNY", fx: Fx | None = None,
                 spot: SpotModel = DEFAULT_SPOT):
        self.currency = currency
        self.fx = fx or load_fx()
        self.spot = spot
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
            return Price(billing, self._conv(o.price_per_hour, o.currency), per_month, self.currency, o.region,
                         o.as_of.isoformat(), o.source, note=source_label(o))
        if billing == "spot":
            base = self.offer(inst, region, "payg")
            if base is None:
                return None
            f = self.spot.fraction_of_payg
            return Price("spot", self._conv(base.price_per_hour, base.currency) * f, None, self.currency, base.region,
                         base.as_of.isoformat(), SPOT_SOURCE, estimated=True,
                         note=f"spot estimated at {f:.0%} of pay-as-you-go (range {self.spot.fraction_range[0]:.0%}-"
                              f"{self.spot.fraction_range[1]:.0%}; check the console)")
        return None

    def price_with_proxy(self, inst: str, region: str, billing: str) -> Price | None:
        """The price in ``region``, else another region's price as a labelled proxy."""
        p = self.price(inst, region, billing)
        if p is not None:
            return p
        for r in self.regions:
            if r != region:
                p = self.price(inst, r, billing)
                if p is not None:
                    return p
        return None


# ------------------------------------------------------------------------------------- spot model

@dataclass(frozen=True)
class SpotRun:
    """Expected wall time of a job on spot capacity (Young 1974 / Daly 2006 checkpoint model)."""

    time_s: float
    overhead_fraction: float
    checkpoint_interval_s: float
    checkpoint_write_s: float
    expected_interruptions: float


def spot_run(time_s: float, checkpoint_write_s: float, model: SpotModel = DEFAULT_SPOT) -> SpotRun:
    """Checkpoint every tau = sqrt(2 C M) (Young 1974, "A first order approximation to the optimum
    checkpoint interval", CACM 17(9)); each interruption loses tau/2 of work plus the restart.
    Overhead fraction = C/tau + (tau/2 + R)/M with C the checkpoint write time and M the mean time
    between interruptions."""
    lam = model.interruptions_per_hour / HOUR_S
    if lam <= 0:
        return SpotRun(time_s, 0.0, math.inf, checkpoint_write_s, 0.0)
    mtbi = 1.0 / lam
    c = max(checkpoint_write_s, 1.0)
    tau = math.sqrt(2.0 * c * mtbi)
    frac = c / tau + (tau / 2.0 + model.restart_s) / mtbi
    total = time_s * (1.0 + frac)
    return SpotRun(total, frac, tau, c, total * lam)


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


def describe_spot(model: SpotModel) -> dict[str, Any]:
    return {"fraction_of_payg": model.fraction_of_payg, "fraction_range": list(model.fraction_range),
            "interruptions_per_hour": model.interruptions_per_hour, "restart_s": model.restart_s,
            "notice_s": model.notice_s, "source": SPOT_SOURCE,
            "unconfirmed": ["fraction_of_payg", "fraction_range", "interruptions_per_hour", "restart_s"]}
