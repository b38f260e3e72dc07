"""Assumption tables (data/efficiency.yaml), loaded lazily and once."""

from __future__ import annotations

import functools
import importlib.resources
from typing import Any

import yaml

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


@functools.cache
def efficiency() -> dict[str, Any]:
    """The parsed efficiency.yaml (read on first use, never at import)."""
    path = importlib.resources.files("gpuplan") / "data" / "efficiency.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:  # pragma: no cover - shipped file
        raise GpuplanError(_("Cannot read the bundled efficiency table: {exc}.").format(exc=exc), hint=_("Reinstall gpuplan.")) from None
    return data


@functools.cache
def table(*path: str) -> Any:
    """A value from efficiency.yaml by its key path, e.g. table('inference', 'prefill_efficiency').

    Cached: the estimators call this in their inner loop. Callers must not mutate what it returns."""
    cur: Any = efficiency()
    for key in path:
        cur = cur[key]
    return cur


def by_key(block: dict[str, Any], key: str | None, default_key: str = "default") -> float:
    """Look a key up in a {name: value} block, falling back to its default entry."""
    if key is not None and key in block:
        return float(block[key])
    return float(block[default_key])


def interpolate_log2(points: list[list[float]], x: float) -> float:
    """Piecewise-linear interpolation in log2(x) over sorted [x, y] points, clamped at the ends."""
    import math

    if x <= points[0][0]:
        return float(points[0][1])
    if x >= points[-1][0]:
        return float(points[-1][1])
    lx = math.log2(x)
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            t = (lx - math.log2(x0)) / (math.log2(x1) - math.log2(x0))
            return float(y0 + t * (y1 - y0))
    return float(points[-1][1])  # pragma: no cover
