"""An Alibaba bill export read as price rows (see :mod:`gpuplan.catalog.prices.alibaba_quotes` for the rows' shape).

Bill export: the console's detail bill exported as CSV (Expenses and Costs > Bill Details > export).
Column names (Chinese site, as in Alibaba's own log-service example of a bill file,
https://github.com/aliyun/aliyun-log-java-sdk, IngestionFunctionTest: 账期, 消费类型, 账单开始时间,
账单结束时间, 服务时长, 实例ID, 实例配置, 实例规格, 地域, 可用区, 计费项, 用量, 用量单位, 原价, 优惠金额,
优惠券抵扣, 应付金额, ...) and their English names on the international site (BillingCycle,
SubscriptionType, UsageStartTime, UsageEndTime, InstanceSpec, Region, Zone, PretaxAmount, Currency:
https://www.alibabacloud.com/help/en/boa/latest/detailed-file-format; "Service Duration", "Duration
Unit", "Billable Item", "Usage", "Usage Unit": https://www.alibabacloud.com/help/en/user-center/user-guide/bill-details-2).
The hourly price is *derived from the bill*: the instance lines of one type, region and billing mode,
amount (应付金额 plus coupons, which pay for the line and are not a price) over the hours billed; a
subscription's over its months. Lines of other products, disks and bandwidth are left out and counted.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from gpuplan.catalog.prices.alibaba_quotes import Parsed, QuoteContext, RawRow
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.units import HOURS_PER_MONTH


# Column names of the bill export (lower case, spaces removed) -> what they hold.
BILL_COLUMNS: dict[str, tuple[str, ...]] = {
    "instance_type": ("实例规格", "instancespec"),
    "region": ("地域", "region"),
    "zone": ("可用区", "zone", "availabilityzone"),
    "billing": ("消费类型", "subscriptiontype", "consumptiontype"),
    "billing_method": ("计费方式", "billingmethod"),
    "item": ("计费项", "billableitem", "billingitem"),
    "product": ("产品", "productname", "product"),
    "product_detail": ("产品明细", "productdetail", "commodityname"),
    "config": ("实例配置", "instanceconfig", "instanceconfiguration"),
    "amount": ("应付金额", "pretaxamount", "amountpayable"),
    "coupons": ("优惠券抵扣", "deductedbycoupons"),
    "usage": ("用量", "usage"),
    "usage_unit": ("用量单位", "usageunit"),
    "duration": ("服务时长", "serviceduration", "serviceperiod", "duration"),
    "duration_unit": ("时长单位", "durationunit", "serviceperiodunit"),
    "start": ("账单开始时间", "usagestarttime", "billingstarttime"),
    "end": ("账单结束时间", "usageendtime", "billingendtime"),
    "day": ("消费时间", "billingdate", "consumptiontime"),
    "period": ("账期", "billingcycle"),
    "currency": ("币种", "currency"),
}
BILL_MARKERS = ("实例规格", "instancespec")          # a CSV with one of these columns is a bill export
_HOURS = {"秒": 1 / 3600, "second": 1 / 3600, "seconds": 1 / 3600, "s": 1 / 3600, "分钟": 1 / 60, "minute": 1 / 60,
          "minutes": 1 / 60, "小时": 1.0, "时": 1.0, "hour": 1.0, "hours": 1.0, "h": 1.0, "天": 24.0, "日": 24.0,
          "day": 24.0, "days": 24.0, "月": HOURS_PER_MONTH, "month": HOURS_PER_MONTH, "months": HOURS_PER_MONTH,
          "年": 12 * HOURS_PER_MONTH, "year": 12 * HOURS_PER_MONTH, "years": 12 * HOURS_PER_MONTH}
_PAYG = ("后付费", "按量付费", "按量", "payasyougo", "pay-as-you-go", "postpaid")
_SUBSCRIPTION = ("预付费", "包年包月", "subscription", "prepaid")
_SPOT = ("抢占式", "spot", "preemptible")
_NOT_INSTANCE = ("盘", "disk", "带宽", "bandwidth", "流量", "traffic", "快照", "snapshot", "镜像", "image", "ip")
# Alibaba's Chinese region names (the console and the Chinese bill use them;
# https://help.aliyun.com/zh/ecs/user-guide/regions-and-zones) -> region ids.
REGION_NAMES_ZH = {
    "华北1（青岛）": "cn-qingdao", "华北2（北京）": "cn-beijing", "华北3（张家口）": "cn-zhangjiakou",
    "华北5（呼和浩特）": "cn-huhehaote", "华北6（乌兰察布）": "cn-wulanchabu", "华东1（杭州）": "cn-hangzhou",
    "华东2（上海）": "cn-shanghai", "华东5（南京-本地地域）": "cn-nanjing", "华东6（福州-本地地域）": "cn-fuzhou",
    "华中1（武汉-本地地域）": "cn-wuhan-lr", "华南1（深圳）": "cn-shenzhen", "华南2（河源）": "cn-heyuan",
    "华南3（广州）": "cn-guangzhou", "西南1（成都）": "cn-chengdu", "中国香港": "cn-hongkong",
    "日本（东京）": "ap-northeast-1", "韩国（首尔）": "ap-northeast-2", "新加坡": "ap-southeast-1",
    "马来西亚（吉隆坡）": "ap-southeast-3", "印度尼西亚（雅加达）": "ap-southeast-5", "菲律宾（马尼拉）": "ap-southeast-6",
    "泰国（曼谷）": "ap-southeast-7", "美国（弗吉尼亚）": "us-east-1", "美国（硅谷）": "us-west-1", "墨西哥": "na-south-1",
    "英国（伦敦）": "eu-west-1", "德国（法兰克福）": "eu-central-1", "阿联酋（迪拜）": "me-east-1",
    "沙特（利雅得）": "me-central-1",
}


def _key(name: str) -> str:
    return re.sub(r"[\s_]+", "", name.strip().lower())


def bill_header_map(header: list[str]) -> dict[str, str]:
    """What each bill column holds: {role: the column's name in this file}."""
    keys = {_key(h): h for h in header}
    out: dict[str, str] = {}
    for role, names in BILL_COLUMNS.items():
        found = next((keys[k] for k in map(_key, names) if k in keys), None)
        if found is not None:
            out[role] = found
    return out


def is_bill(header: list[str]) -> bool:
    return any(_key(h) in {_key(m) for m in BILL_MARKERS} for h in header)


def _number(raw: str | None) -> float | None:
    text = (raw or "").strip().replace(",", "").replace("¥", "").replace("$", "")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _date(raw: str | None) -> dt.date | None:
    text = (raw or "").strip().replace("/", "-")
    m = re.match(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2}))?", text)
    if not m:
        return None
    y, mo, d = int(m[1]), int(m[2]), m[3]
    try:
        if d is None:   # a billing period (2026-11): its last day
            nxt = dt.date(y + (mo == 12), mo % 12 + 1, 1)
            return nxt - dt.timedelta(days=1)
        return dt.date(y, mo, int(d))
    except ValueError:
        return None


def _hours(value: float | None, unit: str | None) -> float | None:
    if value is None or not unit:
        return None
    per = _HOURS.get(unit.strip().lower())
    return value * per if per is not None else None


def _region(raw: str, known: dict[str, str]) -> str:
    """A bill's region cell as a region id: the id, a Chinese or English region name, or a zone id."""
    text = raw.strip()
    norm = text.replace("(", "（").replace(")", "）").replace(" ", "")
    if text.lower() in known:
        return text.lower()
    if norm in REGION_NAMES_ZH:
        return REGION_NAMES_ZH[norm]
    by_name = {v.lower(): k for k, v in known.items()}
    if text.lower() in by_name:
        return by_name[text.lower()]
    zone = re.sub(r"-[a-z]$", "", text.lower())
    return zone if zone in known else text


def _billing(cells: dict[str, str]) -> str | None:
    text = " ".join(cells.get(k, "") for k in ("billing", "billing_method", "product_detail", "config")).lower()
    if any(w in text for w in _SPOT):
        return "spot"
    mode = " ".join(cells.get(k, "") for k in ("billing", "billing_method", "product_detail")).strip().lower()
    if any(w in mode for w in _SUBSCRIPTION):
        return "subscription"
    if any(w in mode for w in _PAYG):
        return "payg"
    return None


@dataclass
class _Group:
    amount: float = 0.0
    hours: float = 0.0
    lines: list[int] = field(default_factory=list)
    last: dt.date | None = None
    currency: str = ""


def bill_rows(rows: list[tuple[int, dict[str, str]]], header: list[str], name: str, ctx: QuoteContext,
              known_regions: dict[str, str], known_types: set[str]) -> Parsed:
    """Rows derived from a bill export (see the module doc): one per instance type, region and billing mode."""
    cols = bill_header_map(header)
    chinese = any(re.search(r"[\u4e00-\u9fff]", h) for h in header)
    groups: dict[tuple[str, str, str], _Group] = {}
    skipped: dict[str, list[int]] = {}
    out = Parsed()
    for line, raw in rows:
        cells = {role: (raw.get(col) or "").strip() for role, col in cols.items()}
        itype = cells.get("instance_type", "")
        item = cells.get("item", "").lower()
        product = (cells.get("product", "") + " " + cells.get("product_detail", "")).lower()
        if not itype or (item and any(w in item for w in _NOT_INSTANCE)):
            skipped.setdefault(_("not an instance line (disk, bandwidth, another product)"), []).append(line)
            continue
        if product.strip() and not any(w in product for w in ("ecs", "云服务器", "elastic compute")):
            skipped.setdefault(_("not an ECS line"), []).append(line)
            continue
        if itype.lower().removeprefix("ecs.") not in known_types:
            skipped.setdefault(_("an instance type not in gpuplan's GPU catalog ({type})").format(type=itype),
                               []).append(line)
            continue
        where = _("{file}, line {line}").format(file=name, line=line)
        amount = _number(cells.get("amount"))
        if amount is None:
            raise GpuplanError(_("{where}: the amount ({column}) is empty or not a number.").format(
                where=where, column=cols.get("amount", "应付金额 / PretaxAmount")), hint="")
        amount += _number(cells.get("coupons")) or 0.0
        if amount <= 0:
            raise GpuplanError(_("{where}: the amount of this instance line is {amount}: a refund or a line paid by a "
                                 "resource plan is not a price.").format(where=where, amount=f"{amount:g}"),
                               hint=_("Delete the line (or export without zero amounts) and import again; nothing was "
                                      "imported."))
        billing = ctx.billing or _billing(cells)
        if billing is None:
            raise GpuplanError(_("{where}: the billing mode ({column}) {value!r} is neither pay-as-you-go nor "
                                 "subscription.").format(where=where, column=cols.get("billing", "消费类型"),
                                                         value=cells.get("billing", "")),
                               hint=_("Pass --billing payg|subscription|spot."))
        hours = (_hours(_number(cells.get("duration")), cells.get("duration_unit"))
                 or _hours(_number(cells.get("usage")), cells.get("usage_unit")))
        start, end = _date(cells.get("start")), _date(cells.get("end"))
        if hours is None and cells.get("start") and cells.get("end"):
            hours = _span_hours(cells["start"], cells["end"])
        if not hours or hours <= 0:
            raise GpuplanError(_("{where}: no usage duration (服务时长/时长单位, 用量/用量单位 in time units, or the "
                                 "start and end times).").format(where=where),
                               hint=_("Export the bill with the service duration or usage columns."))
        region = _region(cells.get("region") or cells.get("zone") or ctx.region or "", known_regions)
        key = (itype, region, billing)
        g = groups.setdefault(key, _Group())
        g.amount += amount
        g.hours += hours
        g.lines.append(line)
        day = end or _date(cells.get("day")) or start or _date(cells.get("period"))
        g.last = max(filter(None, (g.last, day)), default=None)
        g.currency = cells.get("currency") or g.currency
    currency_note = None
    for (itype, region, billing), g in sorted(groups.items()):
        lines = _("line {line}").format(line=g.lines[0]) if len(g.lines) == 1 else \
            _("lines {lines}").format(lines=", ".join(map(str, g.lines[:8])) + ("..." if len(g.lines) > 8 else ""))
        where = f"{name}, {lines}"
        currency = ctx.currency or g.currency
        if not currency:
            currency = "CNY" if chinese else "USD"
            currency_note = _("the bill has no currency column: {currency} assumed ({why}); pass --currency to "
                              "say otherwise").format(currency=currency, why=_("Chinese column names: the China site "
                                                                               "bills in CNY") if chinese
                                                      else _("English column names: the international site bills in USD"))
        monthly = billing == "subscription"
        value = g.amount / g.hours * (HOURS_PER_MONTH if monthly else 1.0)
        date = ctx.date or (g.last.isoformat() if g.last else "")
        note = (_("derived from your bill: {cur} {amount} over {months} month(s), {lines}") if monthly
                else _("derived from your bill: {cur} {amount} over {hours} h, {lines}")).format(
            cur=currency, amount=f"{g.amount:,.2f}", months=f"{g.hours / HOURS_PER_MONTH:.3g}",
            hours=f"{g.hours:,.2f}", lines=lines)
        out.rows.append(RawRow(where, {"cloud": "alibaba", "instance_type": itype, "region": region, "billing": billing,
                                       "price": f"{value:.6g}", "unit": "month" if monthly else "hour",
                                       "currency": currency, "as_of": date, "notes": note}))
    if currency_note:
        out.notes.append(currency_note)
    for why, numbers in skipped.items():
        out.notes.append(_("{n} line(s) left out, {why}: {lines}").format(
            n=len(numbers), why=why, lines=", ".join(map(str, numbers[:10])) + ("..." if len(numbers) > 10 else "")))
    if not out.rows:
        raise GpuplanError(_("{file}: no GPU instance line found in the bill ({n} line(s) read).").format(
            file=name, n=len(rows)), hint=_("Export the bill's detail lines by billable item (计费项) with the instance "
                                            "type (实例规格) column; nothing was imported."))
    return out


def _span_hours(start: str, end: str) -> float | None:
    fmt = "%Y-%m-%d %H:%M:%S"
    try:
        a = dt.datetime.strptime(start.strip().replace("/", "-")[:19], fmt)
        b = dt.datetime.strptime(end.strip().replace("/", "-")[:19], fmt)
    except ValueError:
        return None
    return (b - a).total_seconds() / 3600.0
