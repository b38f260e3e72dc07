"""What catalog data gpuplan has, per cloud and source: the bundled snapshot and the live-refresh cache.

``collect`` gathers the facts (dates, regions, counts, unmapped GPU names, cache consistency);
``render_text`` prints them; :func:`freshness` is the one-line answer the recommender shows next to a
price ("prices: live refresh 2026-11-30 (cn-shanghai) over bundled snapshot 2023-06-01").
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
from importlib.resources import files
from typing import Any

from pathlib import Path

from gpuplan.catalog.prices.prices import RULE_UNITS, STALE_AFTER_DAYS
from gpuplan.i18n import N_, _, localize
from gpuplan.providers import cache
from gpuplan.providers.base import BUNDLED_CLOUDS, REFRESHABLE_CLOUDS


def _bundled(cloud: str) -> dict[str, Any]:
    folder = files("gpuplan") / "data" / "clouds" / cloud
    out: dict[str, Any] = {"source": "bundled", "instance_types": 0, "prices": 0, "regions": [],
                           "as_of_min": None, "as_of_max": None, "currencies": [], "by_basis": {}, "dates": []}
    inst = folder / "instances.csv"
    if inst.is_file():
        out["instance_types"] = sum(1 for _row in csv.DictReader(io.StringIO(inst.read_text(encoding="utf-8"))))
    prices = folder / "prices.csv"
    if prices.is_file():
        rows = list(csv.DictReader(io.StringIO(prices.read_text(encoding="utf-8"))))
        dates = sorted(r["as_of"] for r in rows if r.get("as_of"))
        basis: dict[str, int] = {}
        for r in rows:
            basis[r.get("basis") or "quoted"] = basis.get(r.get("basis") or "quoted", 0) + 1
        out.update(prices=len(rows), regions=sorted({r["region"] for r in rows if r.get("region")}),
                   as_of_min=dates[0] if dates else None, as_of_max=dates[-1] if dates else None,
                   currencies=sorted({r["currency"] for r in rows if r.get("currency")}), by_basis=basis,
                   dates=dates)
    return out


def _cached(cloud: str, cache_dir: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    manifest = cache.read_manifest(cache_dir, cloud)
    if manifest is None:
        return None
    fetched = str(manifest.get("fetched_at") or "")
    regions = manifest.get("regions") or {}
    return {
        "source": "cache",
        "api": manifest.get("source"),
        "path": str(cache.current_dir(cache_dir, cloud)),
        "fetched_at": fetched,
        "regions": {r: (v or {}).get("fetched_at") for r, v in sorted(regions.items())},
        "counts": manifest.get("counts") or {},
        "unmapped": manifest.get("unmapped") or [],
        "warnings": len(manifest.get("warnings") or []),
        "inconsistent_files": cache.verify_files(cache_dir, cloud),
    }


def _usable(cached: dict[str, Any] | None) -> bool:
    """A cache with prices whose files match their manifest (a damaged one is not read)."""
    return bool(cached and (cached["counts"].get("prices") or 0) and not cached["inconsistent_files"])


def _imports(cache_dir: str | os.PathLike[str] | None) -> list[dict[str, Any]]:
    """The buyer's imported prices (``gpuplan catalog import``), per imported file, each checked again:
    ``problem`` says why a file is not used (then its rows are left out of every answer)."""
    from gpuplan.catalog.prices.price_files import read_stored_import
    from gpuplan.errors import GpuplanError
    from gpuplan.providers.imported import listing

    out = []
    for entry in listing(cache_dir):
        problem = None
        try:
            read_stored_import(Path(str(entry["path"])), cache_dir)
        except GpuplanError as exc:
            problem = exc.message
        rows = list(entry["rows"])
        out.append({**entry, "rows": rows, "problem": problem,
                    "source": rows[0].get("source", "") if rows else ""})
    return out


def collect(cache_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Per cloud: the bundled snapshot and (if any) the cache, plus which one prices come from; and the
    buyer's imported prices, which win over both."""
    clouds = {}
    imports = _imports(cache_dir)
    for cloud in BUNDLED_CLOUDS:
        bundled = _bundled(cloud)
        cached = _cached(cloud, cache_dir)
        clouds[cloud] = {"bundled": bundled, "cache": cached, "refreshable": cloud in REFRESHABLE_CLOUDS,
                         "prices_from": "cache" if _usable(cached) else "bundled",
                         "imported": sum(1 for i in imports if not i["problem"]
                                         for r in i["rows"] if (r.get("cloud") or "alibaba") == cloud)}
    return {"schema_version": 1, "cache_dir": str(cache.resolve_cache_dir(cache_dir)), "clouds": clouds,
            "imports": imports}


def freshness(cloud: str, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """One line for a recommendation: which price data it uses, and how old it is."""
    bundled = _bundled(cloud)
    cached = _cached(cloud, cache_dir)
    if not bundled["as_of_max"]:
        base = _("bundled snapshot (no prices)")
    elif bundled["as_of_min"] == bundled["as_of_max"]:
        base = _("bundled snapshot as of {date}").format(date=bundled["as_of_max"])
    else:
        base = _("bundled snapshot as of {first}..{last}").format(first=bundled["as_of_min"], last=bundled["as_of_max"])
    if _usable(cached):
        assert cached is not None
        regions = ", ".join(f"{r} {str(d or '')[:10]}" for r, d in cached["regions"].items())
        text = _("{cloud} prices: live refresh ({regions}) over the {base}").format(cloud=cloud, regions=regions,
                                                                                    base=base)
    else:
        text = _("{cloud} prices: {base} (run `gpuplan catalog refresh` for current prices)").format(cloud=cloud,
                                                                                                   base=base)
    mine = _imported_here(cloud, cache_dir)
    if not mine:
        return text
    return _("{text}; your imported prices win over them: {n} from {files}").format(
        text=text, n=sum(mine.values()), files=", ".join(mine))


def _imported_here(cloud: str, cache_dir: str | os.PathLike[str] | None) -> dict[str, int]:
    """The buyer's imported files with rows for ``cloud`` -> how many (as stored; see catalog status)."""
    from gpuplan.providers.imported import listing

    out: dict[str, int] = {}
    for entry in listing(cache_dir):
        rows = [r for r in entry["rows"] if (r.get("cloud") or "alibaba") == cloud]
        if rows:
            out[str(entry["import"])] = len(rows)
    return out


def _age(date_text: str | None, today: dt.date) -> str:
    if not date_text:
        return ""
    try:
        days = (today - dt.date.fromisoformat(date_text[:10])).days
    except ValueError:
        return ""
    return _(" ({days} days old)").format(days=days)


_SOURCES = (N_("cache"), N_("bundled"))


def render_text(report: dict[str, Any], today: dt.date | None = None) -> str:
    today = today or dt.date.today()
    lines = [_("Catalog data (cache folder: {path})").format(path=report["cache_dir"])]
    for cloud, info in report["clouds"].items():
        b = info["bundled"]
        if b["as_of_max"]:
            dates = b["as_of_min"] if b["as_of_min"] == b["as_of_max"] else f"{b['as_of_min']}..{b['as_of_max']}"
            # staleness per row (each price's own date), never the newest row's age for all of them
            stale = sum(1 for d in b["dates"] if (today - dt.date.fromisoformat(d[:10])).days > STALE_AFTER_DAYS)
            basis = ", ".join(f"{_(k)} {v}" for k, v in sorted(b["by_basis"].items()))
            bundled = _("{types} instance types, {prices} prices ({basis}) as of {dates}, {stale} of them older than "
                        "{limit} days, regions {regions}").format(
                types=b["instance_types"], prices=b["prices"], basis=basis, dates=dates, stale=stale,
                limit=STALE_AFTER_DAYS, regions=", ".join(b["regions"]) or "-")
        else:
            bundled = _("{types} instance types, no prices").format(types=b["instance_types"])
        lines.append(f"{cloud}:")
        lines.append(_("  bundled: {bundled}").format(bundled=bundled))
        c = info["cache"]
        if c is None:
            lines.append(_("  cache:   none  (run `gpuplan catalog refresh`)") if info["refreshable"]
                         else _("  cache:   none"))
        else:
            counts = c["counts"]
            lines.append(_("  cache:   fetched {fetched}{age} from {api}; {types} instance types, {prices} prices").format(
                fetched=c["fetched_at"], age=_age(c["fetched_at"], today), api=c["api"],
                types=counts.get("instance_types", 0), prices=counts.get("prices", 0)))
            for region, when in c["regions"].items():
                lines.append(f"           {region}: {when}")
            for u in c["unmapped"]:
                lines.append(_("  unmapped GPU: {instance_type} reports GPUSpec {gpu_spec!r} (not in the catalog; left "
                               "out)").format(instance_type=u["instance_type"], gpu_spec=u["gpu_spec"]))
            if c["inconsistent_files"]:
                lines.append(_("  warning: {files} changed since the refresh, so the cache is not used; "
                               "`gpuplan catalog refresh` replaces it").format(files=", ".join(c["inconsistent_files"])))
        lines.append(_("  prices used: {source}").format(source=_(info["prices_from"])))
        if info.get("imported"):
            lines.append(_("  your imported prices: {n} (they win over the prices above)").format(n=info["imported"]))
    lines.extend(_imports_text(report.get("imports") or [], today))
    return "\n".join(lines)


def _imports_text(imports: list[dict[str, Any]], today: dt.date) -> list[str]:
    if not imports:
        return [_("Your imported prices: none (`gpuplan catalog import FILE` keeps a console quote, a DescribePrice "
                  "answer or a bill)")]
    lines = [_("Your imported prices (they win over bundled and refreshed prices in every answer; "
               "`gpuplan catalog forget NAME` removes them):")]
    for entry in imports:
        lines.append(f"  {entry['import']}: {localize(str(entry['source']))}")
        if entry["problem"]:
            lines.append(_("    not used: {problem}").format(problem=entry["problem"]))
        for r in entry["rows"]:
            lines.append(_("    {type} {region} {billing}: {currency} {price}/{unit}, as of {date}{age}").format(
                type=r.get("instance_type"), region=r.get("region"), billing=r.get("billing"),
                currency=r.get("currency"), price=r.get("price"), unit=_(RULE_UNITS.get(str(r.get("unit")), "h")),
                date=r.get("as_of"), age=_age(r.get("as_of"), today)))
    return lines
