"""Units and dtype sizes. Base units inside (bytes, FLOPs, seconds); convert only when rendering."""

from __future__ import annotations

import re

from gpuplan.i18n import N_

KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4
GB = 1e9
TERA = 1e12
HOUR_S = 3600.0
DAY_S = 86400.0
HOURS_PER_MONTH = 730.0  # 365 * 24 / 12, the convention cloud price calculators use

# Bytes per element for each storage / compute dtype (floats: 4-bit is 0.5).
BYTES_PER_DTYPE: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
}


def gib(n_bytes: float) -> float:
    return n_bytes / GIB


def fmt_bytes(n_bytes: float | None) -> str:
    if n_bytes is None:
        return "-"
    if abs(n_bytes) >= GIB:
        return f"{n_bytes / GIB:.2f} GiB"
    if abs(n_bytes) >= MIB:
        return f"{n_bytes / MIB:.0f} MiB"
    return f"{n_bytes:.0f} B"


def fmt_duration(seconds: float | None) -> str:
    """A duration with its unit, in the current language (``--lang zh``: 毫秒, 秒, 分钟, 小时, 天)."""
    from gpuplan.i18n import _

    if seconds is None:
        return "-"
    if seconds < 1:
        return _("{n} ms").format(n=f"{seconds * 1000:.1f}")
    if seconds < 120:
        return _("{n} s").format(n=f"{seconds:.1f}")
    if seconds < 2 * 3600:
        return _("{n} min").format(n=f"{seconds / 60:.1f}")
    if seconds < 3 * 86400:
        return _("{n} h").format(n=f"{seconds / 3600:.1f}")
    return _("{n} days").format(n=f"{seconds / 86400:.1f}")


def fmt_rate(per_s: float | None) -> str:
    """A rate per second, readable at any size: thousands separated at 100 and above, two decimals from 1, three
    significant figures below 1 (a video job's 0.0109/s is not "0.01")."""
    if per_s is None:
        return "-"
    if per_s >= 100:
        return f"{per_s:,.0f}"
    return f"{per_s:,.2f}" if per_s >= 1 else f"{per_s:.3g}"


# ------------------------------------------------------------------------------------ amounts people type
# What the wizard reads (`gpuplan ask`): "5万", "1.5e9", "1k", "3天", "48小时", "2000元", "¥2000", "2k", "1.5M",
# "10亿". One parser, a table per kind of answer; k / M / B are SI (1k = 1,000).
_MULTIPLIERS: dict[str, float] = {
    "": 1.0, "k": 1e3, "K": 1e3, "千": 1e3, "m": 1e6, "M": 1e6, "mm": 1e6, "百万": 1e6, "千万": 1e7,
    "b": 1e9, "B": 1e9, "bn": 1e9, "g": 1e9, "G": 1e9, "w": 1e4, "W": 1e4, "万": 1e4, "亿": 1e8,
    "t": 1e12, "T": 1e12, "万亿": 1e12,
}
_HOUR_UNITS: dict[str, float] = {   # unit -> hours
    "": 1.0, "h": 1.0, "hr": 1.0, "hrs": 1.0, "hour": 1.0, "hours": 1.0, "小时": 1.0, "个小时": 1.0, "时": 1.0,
    "min": 1 / 60, "mins": 1 / 60, "minute": 1 / 60, "minutes": 1 / 60, "分钟": 1 / 60,
    "d": 24.0, "day": 24.0, "days": 24.0, "天": 24.0, "日": 24.0,
    "w": 168.0, "wk": 168.0, "week": 168.0, "weeks": 168.0, "周": 168.0, "星期": 168.0, "个星期": 168.0,
    "个月": 730.0, "month": 730.0, "months": 730.0,
}
_MS_UNITS: dict[str, float] = {"": 1.0, "ms": 1.0, "毫秒": 1.0, "s": 1000.0, "sec": 1000.0, "secs": 1000.0,
                               "second": 1000.0, "seconds": 1000.0, "秒": 1000.0}
_CURRENCY_MARKS = ("¥", "￥", "元", "块", "cny", "rmb", "人民币", "yuan")
_OTHER_CURRENCY = ("$", "usd", "美元", "€", "eur")
# What each kind of answer looks like (a msgid: the wizard says it when it cannot read an answer).
AMOUNT_FORMS = {
    "count": N_("a positive number such as 50000, 5万, 50k, 1.5M, 1.5e9 or 10亿"),
    "number": N_("a positive number such as 2, 0.5 or 1.5e3"),
    "hours": N_("a duration such as 48 (hours), 48h, 48小时, 3天, 3 days or 2 weeks"),
    "ms": N_("a time in milliseconds such as 1500, or with a unit: 1.5s, 1.5秒, 800ms"),
    "money": N_("an amount in CNY such as 2000, 2000元, ¥2000, 2k or 5万"),
}
_AMOUNT = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*)$")


def parse_amount(text: str, kind: str = "count") -> float:
    """A positive amount as people type it, in the base unit of ``kind``: ``count`` and ``number`` (plain
    values; ``count`` takes 万 / 亿 / k / M / B multipliers), ``hours`` (3天 -> 72), ``ms`` (1.5s -> 1500) or
    ``money`` (CNY: ¥2000, 2000元, 5万). Raises ValueError whose message is the msgid of the expected form
    (``AMOUNT_FORMS[kind]``) when the text is not such an amount."""
    import unicodedata

    form = AMOUNT_FORMS[kind]
    s = unicodedata.normalize("NFKC", str(text)).strip().replace(",", "").replace("_", "").replace("，", "")
    low = s.lower()
    if kind == "money":
        if any(mark in low for mark in _OTHER_CURRENCY):
            raise ValueError(form)
        for mark in _CURRENCY_MARKS:
            low = low.replace(mark, "")
        s = low.strip()
    m = _AMOUNT.match(s.replace(" ", "") if kind in ("count", "money", "number") else s)
    if not m:
        raise ValueError(form)
    number, rest = float(m.group(1)), m.group(2).strip()
    if kind == "hours":
        factor = _HOUR_UNITS.get(rest.lower())
    elif kind == "ms":
        factor = _MS_UNITS.get(rest.lower())
    elif kind == "number":
        factor = 1.0 if rest == "" else None
    else:
        factor = _MULTIPLIERS.get(rest, _MULTIPLIERS.get(rest.lower()))
    if factor is None:
        raise ValueError(form)
    value = number * factor
    if not (value > 0 and value < float("inf")):
        raise ValueError(form)
    return value
