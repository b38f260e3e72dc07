"""Building the 80 % bands of data/intervals.json from measured error (``bench/accuracy.py --write-intervals``).

Input: one :class:`Residual` per scored measurement, ln(measured / estimated) in the time orientation for
time figures, taken from leave-one-source-group-out predictions (the constants that can be fitted are
refitted without the row's own source group), with the row's workload class and source group.

1. **Group-weighted quantiles.** Rows of one source group share its conditions and its bias, so a group of n
   rows weighs sqrt(n) (its rows 1/sqrt(n) each): one large table does not make a class's band, and one
   single-row group (often a condition the estimator does not model) does not make its tails either. Residuals
   are capped at a factor of 3 (|r| <= ln 3, as the bench's fitting loss caps them) before the quantiles.
2. **Few measurements.** A class with fewer than ``MIN_GROUPS`` groups or ``MIN_ROWS`` rows borrows the
   residuals of its nearest ancestor that has them (``intervals.CLASS_PARENT``) and is widened by
   ``POOLED_WIDEN``; every band is also widened by the small-sample factor t(0.9, G-1) / z(0.9) of the G
   groups it was read from (a quantile of 5 groups is a weak guess of the next group's).
3. **Calibrated on groups held out.** LOGO residuals still flatter the estimator: its mechanisms were shaped
   with these groups in view. So the half-widths are scaled by one factor per kind, ``k``, chosen so that
   bands built *without* a group cover 80 % of that group's rows (nested leave-one-group-out) — over all
   groups, over the groups no constant was fitted to, and over the groups nobody designed a mechanism on;
   the largest k of the sets with at least MIN_GROUPS groups is kept (never below K_MIN).

Pure functions over plain records: no I/O, no estimator calls (the bench does those).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuplan.estimate.intervals import CLASS_PARENT, COVERAGE, KINDS, WEIGHTS_EXACT_CLASSES, parent

MIN_GROUPS = 4
MIN_ROWS = 8
CAP = math.log(3.0)     # a residual beyond a factor of 3 counts as a factor of 3 (bench/accuracy.py's loss cap)
K_MIN = 0.7             # the calibration may narrow the bands, not below 70 % of the quantiles
POOLED_WIDEN = 1.25     # a class of its own sits somewhere in its parent's spread, not at its centre (assumed)
Z90 = 1.2815515655446004
# Student t, 0.9 quantile, by degrees of freedom (any statistics table); beyond 30: the normal's.
T90 = {1: 3.078, 2: 1.886, 3: 1.638, 4: 1.533, 5: 1.476, 6: 1.440, 7: 1.415, 8: 1.397, 9: 1.383, 10: 1.372,
       12: 1.356, 15: 1.341, 20: 1.325, 30: 1.310}


@dataclass(frozen=True)
class Residual:
    group: str
    cls: str        # intervals.interval_class of the row's workload
    kind: str       # memory | time
    value: float    # ln(measured / estimated), time orientation for time figures (memory: beside the weights)
    share: float = 1.0   # the part of the estimate the band spreads (memory: all but the exact weights)


@dataclass(frozen=True)
class Spread:
    """Group-weighted quantiles of a set of residuals."""

    centre: float
    low: float
    high: float
    rows: int
    groups: int


def small_sample_factor(groups: int) -> float:
    """t(0.9, G - 1) / z(0.9): how much wider a quantile read from G groups must be for the next group."""
    df = max(1, groups - 1)
    if df > 30:
        return 1.0
    key = max(k for k in T90 if k <= df)
    return T90[key] / Z90


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The q-quantile of weighted values (linear between the midpoints of the cumulative weights)."""
    pairs = sorted(zip(values, weights, strict=True))
    total = sum(w for _v, w in pairs)
    if not pairs or total <= 0:
        return float("nan")
    cum, points = 0.0, []
    for v, w in pairs:
        points.append(((cum + w / 2.0) / total, v))
        cum += w
    if q <= points[0][0]:
        return points[0][1]
    if q >= points[-1][0]:
        return points[-1][1]
    for (p0, v0), (p1, v1) in zip(points, points[1:], strict=False):
        if p0 <= q <= p1:
            return v0 if p1 == p0 else v0 + (v1 - v0) * (q - p0) / (p1 - p0)
    return points[-1][1]  # pragma: no cover - q inside the range always finds a segment


def group_weights(rows: Sequence[Residual]) -> list[float]:
    """A group of n rows weighs sqrt(n): each of its rows 1/sqrt(n)."""
    count: dict[str, int] = {}
    for r in rows:
        count[r.group] = count.get(r.group, 0) + 1
    return [1.0 / math.sqrt(count[r.group]) for r in rows]


def spread(rows: Sequence[Residual]) -> Spread:
    vals, wts = [max(-CAP, min(CAP, r.value)) for r in rows], group_weights(rows)
    tail = (1.0 - COVERAGE) / 2.0
    return Spread(centre=weighted_quantile(vals, wts, 0.5), low=weighted_quantile(vals, wts, tail),
                  high=weighted_quantile(vals, wts, 1.0 - tail), rows=len(rows), groups=len({r.group for r in rows}))


def descends(cls: str, ancestor: str) -> bool:
    cur: str | None = cls
    while cur is not None:
        if cur == ancestor:
            return True
        cur = parent(cur)
    return False


def classes_of(residuals: Iterable[Residual]) -> list[str]:
    """Every class a band is written for: the declared ones, the serving engines seen, and their parents."""
    out = set(CLASS_PARENT) | {"all", "serve"}
    out |= {r.cls for r in residuals}
    return sorted(out)


def band_entry(residuals: Sequence[Residual], cls: str, kind: str, k: float = 1.0) -> dict | None:
    """One class's band (a dict for intervals.json), or None when not even 'all' has the measurements."""
    src: str | None = cls
    pooled = False
    # a class whose memory band spreads the whole figure does not borrow the residuals of classes read beside their
    # exact weights (intervals.WEIGHTS_EXACT_CLASSES: a diffusion pipeline's small activations beside 31 GiB of FLUX
    # weights move by factors; a ResNet's whole figure does not)
    other = kind == "memory" and cls not in WEIGHTS_EXACT_CLASSES
    while src is not None:
        rows = [r for r in residuals if r.kind == kind and descends(r.cls, src)
                and not (other and r.cls in WEIGHTS_EXACT_CLASSES)]
        groups = len({r.group for r in rows})
        if groups >= MIN_GROUPS and len(rows) >= MIN_ROWS:
            break
        src, pooled = parent(src), True
    if src is None:
        return None
    sp = spread(rows)
    widen = small_sample_factor(sp.groups) * (POOLED_WIDEN if pooled else 1.0)
    own = [r for r in residuals if r.kind == kind and descends(r.cls, cls)]
    return {"low": round(sp.centre - (sp.centre - sp.low) * widen * k, 4),
            "high": round(sp.centre + (sp.high - sp.centre) * widen * k, 4),
            "centre": round(sp.centre, 4), "rows": sp.rows, "groups": sp.groups, "source": src,
            "widen": round(widen, 3), "own_rows": len(own), "own_groups": len({r.group for r in own})}


def build_bands(residuals: Sequence[Residual], k: dict[str, float] | None = None) -> dict[str, dict[str, dict]]:
    """{class: {kind: entry}} for every class (intervals.json's ``classes``)."""
    k = k or {}
    out: dict[str, dict[str, dict]] = {}
    for cls in classes_of(residuals):
        for kind in KINDS:
            entry = band_entry(residuals, cls, kind, k.get(kind, 1.0))
            if entry is not None:
                out.setdefault(cls, {})[kind] = entry
    return out


def lookup(bands: dict[str, dict[str, dict]], cls: str, kind: str) -> dict | None:
    """The entry a class reads (its own, else its nearest ancestor's), as intervals.band does."""
    cur: str | None = cls
    while cur is not None:
        entry = bands.get(cur, {}).get(kind)
        if entry:
            return entry
        cur = parent(cur)
    return None


def excess(entry: dict, value: float) -> float:
    """How many half-widths (k = 1) from the band's centre a residual lies, on its own side."""
    c = entry["centre"]
    half = (entry["high"] - c) if value >= c else (c - entry["low"])
    return abs(value - c) / half if half > 0 else math.inf


def nested_excess(residuals: Sequence[Residual]) -> list[tuple[Residual, float]]:
    """For every row: its excess over the band built from every other source group (k = 1)."""
    out: list[tuple[Residual, float]] = []
    for g in sorted({r.group for r in residuals}):
        held = [r for r in residuals if r.group == g]
        rest = [r for r in residuals if r.group != g]
        cache: dict[tuple[str, str], dict | None] = {}
        for r in held:
            key = (r.cls, r.kind)
            if key not in cache:
                cache[key] = band_entry(rest, r.cls, r.kind)
            entry = cache[key]
            if entry is not None:
                out.append((r, excess(entry, r.value)))
    return out


def calibration_factor(scored: Sequence[tuple[Residual, float]]) -> float:
    """The k at which the bands cover COVERAGE of held-out rows (groups weighted as in the quantiles)."""
    if not scored:
        return 1.0
    vals = [s for _r, s in scored]
    wts = group_weights([r for r, _s in scored])
    return max(K_MIN, weighted_quantile(vals, wts, COVERAGE))


def calibrate(residuals: Sequence[Residual], clean_groups: set[str],
              unfitted_groups: set[str] | None = None) -> dict[str, dict]:
    """Per kind: k over all groups, over the groups no constant was fitted to (``unfitted_groups``) and over
    the clean groups (no constant fitted, no mechanism designed on them), the k kept (the largest of the sets
    with >= MIN_GROUPS groups) and the nested coverage before and after."""
    scored = nested_excess(residuals)
    out: dict[str, dict] = {}
    for kind in KINDS:
        mine = [(r, s) for r, s in scored if r.kind == kind]
        entry: dict = {}
        ks = []
        for label, sel in (("all", None), ("unfitted", unfitted_groups), ("clean", clean_groups)):
            sub = mine if sel is None else [(r, s) for r, s in mine if r.group in sel]
            n = len({r.group for r, _s in sub})
            k_sub = calibration_factor(sub) if n >= MIN_GROUPS else None
            entry[f"k_{label}"] = None if k_sub is None else round(k_sub, 3)
            entry[f"groups_{label}"] = n
            if k_sub is not None:
                ks.append(k_sub)
        k = max(ks) if ks else 1.0
        clean = [(r, s) for r, s in mine if r.group in clean_groups]
        unfitted = [(r, s) for r, s in mine if unfitted_groups and r.group in unfitted_groups]
        out[kind] = {"k": round(k, 3), **entry,
                     "nested_coverage_k1": round(weighted_cover(mine, 1.0), 3),
                     "nested_coverage": round(weighted_cover(mine, k), 3),
                     "nested_coverage_unfitted": round(weighted_cover(unfitted, k), 3) if unfitted else None,
                     "nested_coverage_clean": round(weighted_cover(clean, k), 3) if clean else None}
    return out


def weighted_cover(scored: Sequence[tuple[Residual, float]], k: float) -> float:
    """Share of rows (groups weighted as in the quantiles) within k half-widths."""
    if not scored:
        return float("nan")
    wts = group_weights([r for r, _s in scored])
    return sum(w for (_r, s), w in zip(scored, wts, strict=True) if s <= k) / sum(wts)
