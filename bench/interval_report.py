"""The prediction intervals of bench/accuracy.py: residuals of the scored rows, the bands written to
src/gpuplan/data/intervals.json (``--write-intervals``), and their coverage and width per class, in-sample,
nested leave-one-group-out and on the held-out set (``--holdout``, bench/data/holdout/).

The arithmetic of the bands lives in gpuplan.estimate.interval_fit (building) and gpuplan.estimate.intervals
(applying); this module only gathers rows and writes files and tables.
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gpuplan.estimate import interval_fit as fit
from gpuplan.estimate import intervals

HERE = Path(__file__).resolve().parent
DATA_FILE = HERE.parent / "src" / "gpuplan" / "data" / intervals.DATA_FILE
HOLDOUT_CSV = HERE / "data" / "holdout" / "holdout.csv"
# The held-out sets, each gathered from new source groups before it was first scored (bench/data/holdout/README.md):
# each has since led mechanisms or data fixes after its first scoring (the README lists the exposure).
HOLDOUT_SETS = {"held-out 1": HOLDOUT_CSV, "held-out 2": HERE / "data" / "holdout" / "holdout2.csv",
                "held-out 3": HERE / "data" / "holdout" / "holdout3.csv",
                "held-out 4": HERE / "data" / "holdout" / "holdout4.csv",
                "held-out 5": HERE / "data" / "holdout" / "holdout5.csv",
                "held-out 6": HERE / "data" / "holdout" / "holdout6.csv",
                "held-out 7": HERE / "data" / "holdout" / "holdout7.csv",
                "held-out 8": HERE / "data" / "holdout" / "holdout8.csv",
                "held-out 9": HERE / "data" / "holdout" / "holdout9.csv",
                "held-out 10": HERE / "data" / "holdout" / "holdout10.csv",
                "held-out 11": HERE / "data" / "holdout" / "holdout11.csv",
                "held-out 12": HERE / "data" / "holdout" / "holdout12.csv",
                "held-out 13": HERE / "data" / "holdout" / "holdout13.csv",
                "held-out 14": HERE / "data" / "holdout" / "holdout14.csv",
                "held-out 15": HERE / "data" / "holdout" / "holdout15.csv",
                "held-out 16": HERE / "data" / "holdout" / "holdout16.csv",
                "held-out 17": HERE / "data" / "holdout" / "holdout17.csv"}
# The held-out sets whose rows also make the bands (with the project table's LOGO rows): every set already scored
# and read. Their first scorings showed that bands read from the project table alone cover unseen sources less than
# they cover its own groups (set 5: 46 % / 53 % against 87 % / 85 % nested LOGO), so the bands take every source
# group the project has measured; a set gathered later stays out of them until it has been scored once unseen.
BAND_SETS = ("held-out 1", "held-out 2", "held-out 3", "held-out 4", "held-out 5", "held-out 6", "held-out 7",
             "held-out 8", "held-out 9", "held-out 10", "held-out 11", "held-out 12", "held-out 13",
             "held-out 14", "held-out 15", "held-out 16", "held-out 17")
KIND_OF = {"memory": "memory", "speed": "time"}


def residuals(rows: Iterable[Any]) -> list[fit.Residual]:
    """One Residual per scored row (bench Row: group, icls, kind, residual)."""
    out = []
    for r in rows:
        value = r.residual
        if value is None or not r.icls:
            continue
        share = 1.0
        if r.kind == "memory" and r.exact and r.predicted:
            share = 1.0 - min(r.exact, 0.95 * r.predicted) / r.predicted
        out.append(fit.Residual(group=r.group, cls=r.icls, kind=KIND_OF[r.kind], value=value, share=share))
    return out


def write_intervals(rows: Sequence[Any], csv_names: list[str], clean_groups: set[str], excluded: dict[str, str],
                    unfitted_groups: set[str] | None = None, path: Path = DATA_FILE) -> dict:
    """Build the bands from the rows' out-of-sample residuals (the project table's LOGO rows and the BAND_SETS
    held-out rows, as shipped: no constant is fitted on them), calibrate them on groups held out, write
    intervals.json."""
    res = residuals(rows)
    cal = fit.calibrate(res, clean_groups, unfitted_groups)
    k = {kind: entry["k"] for kind, entry in cal.items()}
    bands = fit.build_bands(res, k)
    doc = {
        "schema_version": 1,
        "generated_by": "python bench/accuracy.py --write-intervals",
        "date": datetime.date.today().isoformat(),
        "coverage": intervals.COVERAGE,
        "method": ("80 % bands of ln(measured / estimated) (time orientation for time figures) per workload class and "
                   "kind, from leave-one-source-group-out predictions of the project table and the as-shipped "
                   f"predictions of {', '.join(BAND_SETS)} (no constant fitted on them); a source group of n rows "
                   "weighs sqrt(n); "
                   "residuals capped at a factor of 3; a class with "
                   f"fewer than {fit.MIN_GROUPS} groups or {fit.MIN_ROWS} rows borrows its parent's residuals, widened "
                   f"x{fit.POOLED_WIDEN}; half-widths x t(0.9, groups - 1) / z(0.9), then x k per kind, k chosen so that "
                   "bands built without a group cover 80 % of its rows (nested LOGO; the largest k of all groups, the "
                   "groups no constant was fitted to, and the groups no constant or mechanism was designed on)"),
        "sources": csv_names,
        "excluded_groups": sorted(excluded),
        "rows": {kind: sum(1 for r in res if r.kind == kind) for kind in intervals.KINDS},
        "groups": {kind: len({r.group for r in res if r.kind == kind}) for kind in intervals.KINDS},
        "calibration": cal,
        "classes": bands,
    }
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    intervals.table.cache_clear()
    intervals.band.cache_clear()
    return doc


def _ratio(entry: dict | None, share: float = 1.0) -> float | None:
    """high / low of a figure's range: the band spreads `share` of the estimate (memory: what sits beside the
    exact weights), so the figure's own range is narrower than the band's when weights are part of it."""
    if entry is None:
        return None
    return (1.0 - share + share * math.exp(entry["high"])) / (1.0 - share + share * math.exp(entry["low"]))


def _cover_stats(pairs: Sequence[tuple[fit.Residual, dict | None]]) -> tuple[int, str, str]:
    """(rows, coverage of rows / with each group weighing the same, median high/low ratio) of (residual, band)
    pairs."""
    pairs = [(r, e) for r, e in pairs if e is not None]
    if not pairs:
        return 0, "-", "-"
    wts = fit.group_weights([r for r, _e in pairs])
    hit = [e["low"] <= r.value <= e["high"] for r, e in pairs]
    by_group = sum(w for h, w in zip(hit, wts, strict=True) if h) / sum(wts)
    ratios = [_ratio(e, r.share) or 0.0 for r, e in pairs]
    return len(pairs), f"{sum(hit) / len(hit):.0%} / {by_group:.0%}", f"{statistics.median(ratios):.2f}"


def nested_pairs(res: Sequence[fit.Residual], k: dict[str, float]) -> list[tuple[fit.Residual, dict | None]]:
    """Each row with the band built without its source group (calibrated k): the out-of-group coverage."""
    out: list[tuple[fit.Residual, dict | None]] = []
    for g in sorted({r.group for r in res}):
        rest = [r for r in res if r.group != g]
        cache: dict[tuple[str, str], dict | None] = {}
        for r in (x for x in res if x.group == g):
            key = (r.cls, r.kind)
            if key not in cache:
                cache[key] = fit.band_entry(rest, r.cls, r.kind, k.get(r.kind, 1.0))
            out.append((r, cache[key]))
    return out


def shipped_pairs(res: Sequence[fit.Residual]) -> list[tuple[fit.Residual, dict | None]]:
    """Each row with the band data/intervals.json gives its class (what users get)."""
    out = []
    for r in res:
        b = intervals.band(r.cls, r.kind)
        out.append((r, {"low": b.low, "high": b.high}))
    return out


def coverage_table(title: str, pairs_by_label: dict[str, list[tuple[fit.Residual, dict | None]]]) -> list[str]:
    """Rows per class and kind: coverage and median width for each labelled set of pairs."""
    labels = list(pairs_by_label)
    lines = [f"### {title}", "",
             "| class | kind | " + " | ".join(f"{lb}: rows / coverage (rows / groups) / median high÷low" for lb in labels)
             + " |",
             "|---|---|" + "---|" * len(labels)]
    keys = sorted({(r.cls, r.kind) for pairs in pairs_by_label.values() for r, _e in pairs})
    for cls, kind in keys + [("all", "memory"), ("all", "time")]:
        cells = []
        for lb in labels:
            sel = [(r, e) for r, e in pairs_by_label[lb] if r.kind == kind and (cls == "all" or r.cls == cls)]
            n, cov, ratio = _cover_stats(sel)
            cells.append(f"{n} / {cov} / {ratio}" if n else "-")
        label = f"**{cls}**" if cls == "all" else cls
        lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    return lines


def bands_table(doc: dict) -> list[str]:
    lines = ["| class | kind | range (of the estimate) | high÷low | from | rows / groups (own) | widened |",
             "|---|---|---|---|---|---|---|"]
    for cls, kinds in sorted(doc["classes"].items()):
        for kind, e in kinds.items():
            lo, hi = math.exp(e["low"]) - 1, math.exp(e["high"]) - 1
            src = e["source"] if e["source"] != cls else "own"
            lines.append(f"| {cls} | {kind} | {lo:+.0%} .. {hi:+.0%} | {math.exp(e['high'] - e['low']):.2f} | {src} | "
                         f"{e['rows']} / {e['groups']} ({e.get('own_rows', 0)} / {e.get('own_groups', 0)}) | "
                         f"x{e['widen']:g} |")
    return lines


def report(doc: dict, logo_rows: Sequence[Any], holdout_sets: dict[str, Sequence[Any]] | None) -> str:
    """The 'Prediction intervals' section of accuracy.md. ``logo_rows``: the rows the bands were built from (the
    project table's LOGO rows and the BAND_SETS held-out rows)."""
    res = residuals(logo_rows)
    k = {kind: e["k"] for kind, e in doc["calibration"].items()}
    lines = ["## Prediction intervals (80 %)", "",
             f"Written to `src/gpuplan/data/intervals.json` by `python bench/accuracy.py --write-intervals` ({doc['date']}; "
             f"{doc['rows']['memory']} memory and {doc['rows']['time']} time residuals from {doc['groups']['memory']} / "
             f"{doc['groups']['time']} source groups). Method: {doc['method']}.", ""]
    lines += ["Calibration (nested leave-one-group-out; a group of n rows weighs sqrt(n)):", "",
              "| kind | k all groups (n) | k groups no constant was fitted to (n) | k clean groups (n) | k kept | "
              "coverage at k = 1 | coverage at k: all / unfitted / clean |", "|---|---|---|---|---|---|---|"]

    def kcell(c: dict, label: str) -> str:
        k = c.get(f"k_{label}")
        return "-" if k is None else f"{k:g} ({c.get(f'groups_{label}')})"

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.0%}"
    for kind, c in doc["calibration"].items():
        lines.append(f"| {kind} | {kcell(c, 'all')} | {kcell(c, 'unfitted')} | {kcell(c, 'clean')} | {c['k']:g} | "
                     f"{pct(c['nested_coverage_k1'])} | {pct(c['nested_coverage'])} / "
                     f"{pct(c.get('nested_coverage_unfitted'))} / {pct(c.get('nested_coverage_clean'))} |")
    lines += ["", "### Bands", ""] + bands_table(doc) + [""]
    nested = nested_pairs(res, k)
    sets = {"in-sample": shipped_pairs(res), "nested LOGO": nested}
    for label, rows in (holdout_sets or {}).items():
        held = residuals(rows)
        if label in BAND_SETS:   # in the bands: each of its groups against the bands built without it
            groups = {r.group for r in held}
            sets[f"{label} (nested)"] = [(r, e) for r, e in nested if r.group in groups]
        else:
            sets[label] = shipped_pairs(held)
    lines += coverage_table("Coverage and width per class (target on unseen data: 70-90 % coverage, median "
                            "high÷low <= 2.2)", sets)
    return "\n".join(lines) + "\n"


def holdout_summary(label: str, path: Path, rows: Sequence[Any], stats, fit_share) -> list[str]:
    """Point error of one held-out set (as shipped: no constant was ever fitted to it)."""
    lines = [f"## {label[0].upper() + label[1:]} (bench/data/holdout/{path.name}: no constant fitted on it; "
             "the README says which rows led a mechanism)", "",
             "| kind | rows | median abs error | p90 abs error | signed bias |", "|---|---|---|---|---|"]
    for kind in ("memory", "speed"):
        n, med, p90, bias = stats([r for r in rows if r.kind == kind])
        lines.append(f"| {kind} | {n} | {med} | {p90} | {bias} |")
    lines.append("")
    lines.append(f"Completed runs predicted to fit: {fit_share(rows)} at the estimate; "
                 f"{fit_share(rows, 'fits_high')} at the high end of the memory interval.")
    lines += ["", "| group | class | metric | rows | median abs error | p90 | bias |", "|---|---|---|---|---|---|---|"]
    for g, cls, m in sorted({(r.group, r.icls or "", r.metric) for r in rows}):
        sel = [r for r in rows if r.group == g and (r.icls or "") == cls and r.metric == m]
        n, med, p90, bias = stats(sel)
        lines.append(f"| {g} | {cls} | {m} | {n} | {med} | {p90} | {bias} |")
    failed = [r for r in rows if r.predicted is None]
    if failed:
        lines += ["", "Held-out rows not estimated:"] + [f"- {r.id}: {r.note}" for r in failed]
    return lines + [""]
