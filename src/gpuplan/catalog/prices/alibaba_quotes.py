"""The buyer's Alibaba Cloud price documents read as price rows: a DescribePrice answer saved from the API
explorer (here), and a bill export (the console's 费用明细 / "Billing Details" CSV; alibaba_bills.py).

Both give raw rows in the user price-file schema; checking them against the catalog (instance types and
regions with did-you-mean, prices > 0, dates, currencies) is the one validator's job
(:func:`gpuplan.catalog.prices.price_files.check_rows`), so every format is held to the same rules.

DescribePrice (ECS API 2014-05-26, https://help.aliyun.com/document_detail/107829.html; the answer's
shape as in the SDK's ``DescribePriceResponse``: ``PriceInfo.Price`` with ``OriginalPrice``,
``DiscountPrice``, ``TradePrice``, ``Currency`` and ``DetailInfos.DetailInfo[]`` per resource, and
``PriceInfo.Rules``). The answer does not repeat what it was asked: the instance type, the region and
the billing mode come from flags (``--instance-type --region --billing``) or from fields saved next
to it (``InstanceType``, ``RegionId``, ``PriceUnit``, ``Period``, ``SpotStrategy``, at the top level or
under ``request``), and the result says which. The price is the ``instanceType`` line's ``TradePrice``
(what the account pays, the system disk left out), else the whole order's.
Bill exports are read by :mod:`gpuplan.catalog.prices.alibaba_bills`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.units import HOURS_PER_MONTH


@dataclass(frozen=True)
class RawRow:
    """One price row read from a user's file, before the catalog checks: where it came from (file and
    line, for messages) and its values in the user price-file schema."""

    where: str
    row: dict[str, str]


@dataclass(frozen=True)
class QuoteContext:
    """What a DescribePrice answer or a bill does not say, from the command line (None: not given)."""

    instance_type: str | None = None
    region: str | None = None
    billing: str | None = None
    date: str | None = None
    currency: str | None = None


@dataclass
class Parsed:
    rows: list[RawRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ DescribePrice

_REQUEST_KEYS = ("request", "Request", "params", "parameters", "Parameters", "query")
# PriceUnit -> hours of one unit (a subscription price is kept per month)
_PRICE_UNITS = {"hour": 1.0, "week": 168.0, "month": HOURS_PER_MONTH, "year": 12 * HOURS_PER_MONTH}
_SPOT_STRATEGIES = ("spotaspricego", "spotwithpricelimit")


def _line_of(text: str, pattern: str) -> int | None:
    """The line of the first match of ``pattern`` in a JSON text (for messages), or None."""
    m = re.search(pattern, text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _request(item: dict) -> dict:
    req: dict = next((item[k] for k in _REQUEST_KEYS if isinstance(item.get(k), dict)), {})
    return {**{k: v for k, v in item.items() if not isinstance(v, (dict, list))}, **req}


def _answer(item: dict) -> dict | None:
    for key in ("response", "Response", "body", "Body"):
        inner = item.get(key)
        if isinstance(inner, dict):
            return _answer(inner) or inner
    return item if "PriceInfo" in item else None


def _pick(name: str, flag: str | None, saved: object, where_saved: str) -> tuple[str | None, str]:
    """The value of one thing the answer does not say: the flag, else the saved field; both and different -> error."""
    saved_text = str(saved).strip() if saved not in (None, "") else None
    if flag and saved_text and flag.strip().lower().removeprefix("ecs.") != saved_text.lower().removeprefix("ecs."):
        raise GpuplanError(_("{what} is {flag!r} on the command line but {saved!r} in the file ({field}).").format(
            what=name, flag=flag, saved=saved_text, field=where_saved),
            hint=_("Leave the flag out, or import the answer that was asked for that value."))
    if flag:
        return flag.strip(), "flag"
    return saved_text, "file"


def describe_price_rows(doc: object, text: str, name: str, ctx: QuoteContext, today: dt.date) -> Parsed:
    """Rows of a DescribePrice answer (one object, or a list of them); see the module doc."""
    items = doc if isinstance(doc, list) else [doc]
    out = Parsed()
    for i, item in enumerate(items):
        where = name if len(items) == 1 else _("{file}, answer {n}").format(file=name, n=i + 1)
        answer = (_answer(item) if isinstance(item, dict) else None) or {}
        info = answer.get("PriceInfo")
        price = info.get("Price") if isinstance(info, dict) else None
        if not isinstance(price, dict):
            raise GpuplanError(_("{where}: no PriceInfo.Price object: this is not a DescribePrice answer.").format(
                where=where), hint=_("Save the whole answer of ECS DescribePrice from the API explorer (it starts with "
                                     "\"PriceInfo\" or \"RequestId\"), or use the CSV format (docs/catalog-schema.md)."))
        req = _request(item) if isinstance(item, dict) else {}
        itype, itype_from = _pick(_("the instance type"), ctx.instance_type, req.get("InstanceType"), "InstanceType")
        region, region_from = _pick(_("the region"), ctx.region, req.get("RegionId"), "RegionId")
        unit_name = str(req.get("PriceUnit") or "").strip().lower()
        spot = str(req.get("SpotStrategy") or "").strip().lower() in _SPOT_STRATEGIES
        saved_billing = ("spot" if spot else "subscription" if unit_name in ("week", "month", "year")
                         else "payg" if unit_name == "hour" else None)
        billing, billing_from = _pick(_("the billing mode"), ctx.billing, saved_billing, "PriceUnit/SpotStrategy")
        missing = [w for w, v in ((_("the instance type (--instance-type)"), itype), (_("the region (--region)"), region),
                                  (_("the billing mode (--billing)"), billing)) if not v]
        if missing:
            raise GpuplanError(_("{where}: a DescribePrice answer does not say what was asked; give {missing}.").format(
                where=where, missing=", ".join(missing)),
                hint=_("Pass the flags, or save the request's InstanceType, RegionId and PriceUnit next to \"PriceInfo\" "
                       "in the file (see docs/catalog-refresh.md)."))
        assert itype and region and billing
        if not unit_name:
            unit_name = "hour" if billing in ("payg", "spot") else "month"
        if unit_name not in _PRICE_UNITS:
            raise GpuplanError(_("{where}: PriceUnit {unit!r} is not one of Hour, Week, Month, Year.").format(
                where=where, unit=req.get("PriceUnit")), hint="")
        period = req.get("Period") or 1
        try:
            period_n = float(period)
        except (TypeError, ValueError):
            period_n = 0.0
        if period_n <= 0:
            raise GpuplanError(_("{where}: Period {period!r} is not a positive number.").format(where=where, period=period),
                               hint="")
        details = (price.get("DetailInfos") or {}).get("DetailInfo") or []
        line = next((d for d in details if isinstance(d, dict) and d.get("Resource") == "instanceType"), None)
        trade = (line or price).get("TradePrice")
        original = (line or price).get("OriginalPrice")
        at = _line_of(text, r'"Resource"\s*:\s*"instanceType"' if line is not None else r'"TradePrice"')
        try:
            amount = float(trade)  # type: ignore[arg-type]  # None or text: refused below as not > 0
        except (TypeError, ValueError):
            amount = float("nan")
        hours = _PRICE_UNITS[unit_name] * period_n
        per_hour = unit_name == "hour"
        value = amount / period_n if per_hour else amount / hours * HOURS_PER_MONTH
        saved_date = str(req.get("date") or req.get("as_of") or req.get("Date") or "")
        date = ctx.date or saved_date or today.isoformat()
        date_from = (_("--date") if ctx.date else _("the file") if saved_date
                     else _("the import date: the answer carries none"))
        notes = [_("DescribePrice TradePrice of the {what}").format(
            what=_("instanceType line (system disk not counted)") if line is not None
            else _("whole order (no instanceType line: the system disk is included)"))]
        if original not in (None, "") and original != trade:
            notes.append(_("list price {price}").format(price=original))
        if not per_hour:
            notes.append(_("{amount} for {period} {unit}(s), per month").format(amount=trade, period=f"{period_n:g}",
                                                                               unit=unit_name))
        where_line = _("{where}, line {line}").format(where=where, line=at) if at else where
        out.rows.append(RawRow(where_line, {
            "cloud": "alibaba", "instance_type": itype, "region": region, "billing": billing,
            "price": "" if value != value else f"{value:.6g}", "unit": "hour" if per_hour else "month",
            "currency": str(price.get("Currency") or ctx.currency or ""), "as_of": date, "notes": "; ".join(notes)}))
        out.notes.append(_("{where}: instance type {itype} ({itype_from}), region {region} ({region_from}), billing "
                           "{billing} ({billing_from}), dated {date} ({date_from})").format(
            where=where, itype=itype, itype_from=_(_FROM[itype_from]), region=region,
            region_from=_(_FROM[region_from]), billing=billing, billing_from=_(_FROM[billing_from]), date=date,
            date_from=date_from))
    return out


_FROM = {"flag": N_("command line"), "file": N_("the file")}
