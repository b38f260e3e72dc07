"""The local catalog cache: where it lives, how it is written (atomically) and read back.

Layout (same file schema as the bundled snapshot, so the catalog loaders overlay it unchanged)::

    <cache_dir>/clouds/<cloud>/instances.csv
    <cache_dir>/clouds/<cloud>/prices.csv
    <cache_dir>/clouds/<cloud>/stock.csv        (refresh only: stock per zone and billing mode)
    <cache_dir>/clouds/<cloud>/manifest.json    (fetched_at, regions, counts, source, file hashes)

Every file is written to a temporary file in the same folder, flushed and fsync'ed, then moved over
the old one with ``os.replace`` (atomic on POSIX and Windows). All new files are fully written before
the first rename, and the manifest is renamed last, so a failed refresh never touches the old cache
and ``status`` can tell (by the hashes in the manifest) if a crash ever left files from two refreshes.
No credential ever reaches these files: rows carry only catalog values and API endpoint names.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpuplan.providers.base import (
    INSTANCE_COLUMNS,
    PRICE_COLUMNS,
    STOCK_COLUMNS,
    CatalogSnapshot,
    Row,
)

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1


def default_cache_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """``$GPUPLAN_CACHE_DIR``, else the platform's cache folder + ``gpuplan``.

    Linux/BSD: ``$XDG_CACHE_HOME/gpuplan`` or ``~/.cache/gpuplan`` (XDG Base Directory spec);
    macOS: ``~/Library/Caches/gpuplan``; Windows: ``%LOCALAPPDATA%\\gpuplan\\Cache``.
    """
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if env.get("GPUPLAN_CACHE_DIR"):
        return Path(env["GPUPLAN_CACHE_DIR"]).expanduser()
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    if platform == "darwin":
        return home / "Library" / "Caches" / "gpuplan"
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "gpuplan" / "Cache"
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else home / ".cache") / "gpuplan"


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()


def cloud_dir(cache_dir: str | os.PathLike[str] | None, cloud: str) -> Path:
    return resolve_cache_dir(cache_dir) / "clouds" / cloud


def csv_text(rows: Iterable[Row], columns: tuple[str, ...]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: row.get(c, "") for c in columns})
    return buf.getvalue()


def read_csv(path: Path) -> list[Row]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return [dict(r) for r in csv.DictReader(fh)]


def read_manifest(cache_dir: str | os.PathLike[str] | None, cloud: str) -> dict[str, Any] | None:
    """The cloud's manifest, or None when there is no cache (or it is unreadable)."""
    path = cloud_dir(cache_dir, cloud) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_temp(folder: Path, name: str, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_files_atomically(folder: Path, files: Mapping[str, str]) -> None:
    """Write every file to a temp file first, then rename each over its target (last one last).

    If writing any temp file fails, nothing is renamed and the temp files are removed.
    """
    folder.mkdir(parents=True, exist_ok=True)
    temps: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            temps.append((_write_temp(folder, name, text), folder / name))
    except BaseException:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, target in temps:
        os.replace(tmp, target)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def merge_snapshot(snapshot: CatalogSnapshot, previous_dir: Path) -> tuple[list[Row], list[Row], list[Row],
                                                                             dict[str, Any]]:
    """Combine a fresh snapshot with the cached one: refreshed regions replace, others are kept.

    Instance rows are keyed by instance type (fresh rows win); price and stock rows of regions this
    snapshot did not cover stay, with their own ``as_of``.
    """
    fresh_regions = set(snapshot.regions)
    old_instances = read_csv(previous_dir / "instances.csv")
    old_prices = read_csv(previous_dir / "prices.csv")
    old_stock = read_csv(previous_dir / "stock.csv")
    old_manifest = read_manifest(previous_dir.parent.parent, previous_dir.name) or {}

    instances = {r["instance_type"]: r for r in old_instances if r.get("instance_type")}
    instances.update({r["instance_type"]: r for r in snapshot.instances})
    prices = [r for r in old_prices if r.get("region") not in fresh_regions] + list(snapshot.prices)
    stock = [r for r in old_stock if r.get("region") not in fresh_regions] + list(snapshot.stock)

    regions: dict[str, Any] = {
        k: v for k, v in (old_manifest.get("regions") or {}).items() if k not in fresh_regions
    }
    for region in snapshot.regions:
        regions[region] = {
            "fetched_at": snapshot.fetched_at,
            "prices": sum(1 for r in snapshot.prices if r["region"] == region),
            "instance_types_in_stock": len({r["instance_type"] for r in snapshot.stock
                                            if r["region"] == region
                                            and r["status_category"] in ("WithStock", "ClosedWithStock")}),
        }
    return (sorted(instances.values(), key=lambda r: r["instance_type"]),
            sorted(prices, key=lambda r: (r["region"], r["instance_type"], r["billing"])),
            sorted(stock, key=lambda r: (r["region"], r["instance_type"], r["billing"], r["zone"])),
            regions)


def write_snapshot(snapshot: CatalogSnapshot, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Merge ``snapshot`` into the cache of its cloud and write it atomically; returns the folder."""
    folder = cloud_dir(cache_dir, snapshot.cloud)
    instances, prices, stock, regions = merge_snapshot(snapshot, folder)
    texts = {
        "instances.csv": csv_text(instances, INSTANCE_COLUMNS),
        "prices.csv": csv_text(prices, PRICE_COLUMNS),
        "stock.csv": csv_text(stock, STOCK_COLUMNS),
    }
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "cloud": snapshot.cloud,
        "source": snapshot.source,
        "fetched_at": snapshot.fetched_at,
        "regions": regions,
        "counts": {"instance_types": len(instances), "prices": len(prices), "stock_rows": len(stock)},
        "unmapped": [
            {"instance_type": u.instance_type, "gpu_spec": u.gpu_spec, "gpu_count": u.gpu_count,
             "gpu_memory_gib": u.gpu_memory_gib}
            for u in snapshot.unmapped
        ],
        "warnings": list(snapshot.warnings)[:200],
        "files": {name: _sha256(text) for name, text in texts.items()},
    }
    manifest.update({k: v for k, v in snapshot.extra.items() if k not in manifest})
    texts[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_files_atomically(folder, texts)
    return folder


def verify_files(cache_dir: str | os.PathLike[str] | None, cloud: str) -> list[str]:
    """Names of cache files whose content no longer matches the manifest's hash (empty = consistent)."""
    manifest = read_manifest(cache_dir, cloud) or {}
    folder = cloud_dir(cache_dir, cloud)
    bad = []
    for name, digest in (manifest.get("files") or {}).items():
        path = folder / name
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            bad.append(name)
            continue
        if _sha256(text) != digest:
            bad.append(name)
    return bad
