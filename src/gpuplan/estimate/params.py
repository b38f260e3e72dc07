"""Assumption tables (data/efficiency.yaml), loaded lazily and once."""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.resources
from collections.abc import Iterator, Mapping
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

# Replacement tables installed by `overrides` (None: the shipped efficiency.yaml).
_ACTIVE: dict[str, Any] | None = None


def efficiency() -> dict[str, Any]:
    """The efficiency table in force: the shipped efficiency.yaml, or the one `overrides` installed."""
    return _ACTIVE if _ACTIVE is not None else _shipped()


@functools.cache
def _shipped() -> dict[str, Any]:
    """The parsed efficiency.yaml (read on first use, never at import)."""
    path = importlib.resources.files("gpuplan") / "data" / "efficiency.yaml"
    try:
        data = load_data(path)
    except (OSError, ValueError) as exc:  # pragma: no cover - shipped file
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


@contextlib.contextmanager
def overrides(values: Mapping[str, float]) -> Iterator[None]:
    """Evaluate estimates with some efficiency.yaml values replaced (the seam bench/accuracy.py fits through).

    `values` maps dotted key paths to numbers, e.g. {'training.hfu_by_arch.Ampere': 0.6}. Every path
    must already exist in efficiency.yaml and hold a number: a renamed constant is an error, not a
    silent no-op. Not thread-safe: for benchmarks and tests, never for serving requests."""
    global _ACTIVE
    new = copy.deepcopy(efficiency())
    for dotted, value in values.items():
        keys = dotted.split(".")
        cur: Any = new
        for key in keys[:-1]:
            if not isinstance(cur, dict) or key not in cur:
                raise KeyError(f"efficiency.yaml has no {dotted!r}")
            cur = cur[key]
        if not isinstance(cur, dict) or not isinstance(cur.get(keys[-1]), (int, float)) or isinstance(cur.get(keys[-1]), bool):
            raise KeyError(f"efficiency.yaml has no number at {dotted!r}")
        cur[keys[-1]] = float(value)
    saved = _ACTIVE
    _ACTIVE = new
    table.cache_clear()
    try:
        yield
    finally:
        _ACTIVE = saved
        table.cache_clear()


def calibration(gpu: str, framework: str, workload_class: str) -> Any:
    """The user's calibration for this GPU, framework and workload class (``gpuplan calibrate``), or None.

    The efficiency tables in force are efficiency.yaml plus this local overlay of measured / estimated
    throughput (gpuplan.estimate.calibration); estimate_resolved applies it. While ``overrides`` are
    installed (bench/accuracy.py fitting its constants) the overlay is ignored."""
    if _ACTIVE is not None:
        return None
    from gpuplan.estimate.calibration import lookup

    return lookup(gpu, framework, workload_class)


def has_key(dotted: str) -> bool:
    """Whether efficiency.yaml holds a number at this dotted key path."""
    cur: Any = efficiency()
    for key in dotted.split("."):
        if not isinstance(cur, dict) or key not in cur:
            return False
        cur = cur[key]
    return isinstance(cur, (int, float)) and not isinstance(cur, bool)


def value_at(dotted: str) -> float:
    """The number at a dotted key path of the efficiency table in force."""
    cur: Any = efficiency()
    for key in dotted.split("."):
        cur = cur[key]
    return float(cur)


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
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x0 <= x <= x1:
            t = (lx - math.log2(x0)) / (math.log2(x1) - math.log2(x0))
            return float(y0 + t * (y1 - y0))
    return float(points[-1][1])  # pragma: no cover
