"""A figure with its 80 % range, as text: "25.8 h (21.4-31.2)", "CNY 1,234 (1,050-1,480)", "34.1 GiB (29.0-41.2)".

The range is written in the point's unit so it reads at a glance; the ranges themselves come from the
estimate's and the plans' ``intervals`` (gpuplan.estimate.intervals, gpuplan.plan.money.ranges).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpuplan.units import GIB, fmt_duration

# (seconds per unit, the unit's fmt_duration boundary): the same unit choice as units.fmt_duration
_DURATION_UNITS = ((1e-3, 1.0), (1.0, 120.0), (60.0, 7200.0), (3600.0, 3 * 86400.0), (86400.0, float("inf")))


def _pair(ranges: Mapping[str, Any] | None, key: str) -> Sequence[float] | None:
    pair = (ranges or {}).get(key)
    return pair if pair and len(pair) == 2 and pair[0] is not None and pair[1] is not None else None


def _num(x: float) -> str:
    """Three significant figures, thousands separated: 0.412, 21.4, 1,050."""
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def with_range(text: str, lo: float, hi: float, fmt: Callable[[float], str] = _num) -> str:
    return f"{text} ({fmt(lo)}-{fmt(hi)})"


def duration(seconds: float | None, ranges: Mapping[str, Any] | None, key: str) -> str:
    """fmt_duration(seconds) and its range in the same unit: '25.8 h (21.4-31.2)'."""
    if seconds is None:
        return "-"
    pair = _pair(ranges, key)
    if pair is None:
        return fmt_duration(seconds)
    unit = next(u for u, bound in _DURATION_UNITS if seconds < bound)
    return with_range(fmt_duration(seconds), pair[0] / unit, pair[1] / unit, lambda x: f"{x:.1f}")


def money(text: str, ranges: Mapping[str, Any] | None, key: str) -> str:
    pair = _pair(ranges, key)
    return text if pair is None or text == "-" else with_range(text, pair[0], pair[1], lambda x: f"{x:,.0f}"
                                                                if abs(x) >= 100 else f"{x:,.2f}")


def gib(value: float | None, ranges: Mapping[str, Any] | None, key: str) -> str:
    """'34.1 GiB (29.0-41.2)'."""
    if value is None:
        return "-"
    pair = _pair(ranges, key)
    text = f"{value / GIB:.1f} GiB"
    return text if pair is None else with_range(text, pair[0] / GIB, pair[1] / GIB, lambda x: f"{x:.1f}")


def number(text: str | None, ranges: Mapping[str, Any] | None, key: str, scale: float = 1.0) -> str | None:
    """A formatted figure with its range in the same scale (``scale`` divides: 100 for a share shown in %)."""
    if text is None:
        return None
    pair = _pair(ranges, key)
    return text if pair is None else with_range(text, pair[0] * scale, pair[1] * scale)
