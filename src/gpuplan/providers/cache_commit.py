"""Committing a refresh to the local catalog cache (the layout and the readers: providers/cache.py).

A commit (:func:`write_snapshot`) holds the lock (``filelock``) while it reads the snapshot in use,
merges the fresh regions into it, writes every file of the new snapshot into a temporary folder
(fsync'ed), renames that folder to its final name, and then switches ``CURRENT`` with one
``os.replace`` of a temporary pointer file: the only step readers can see, and an atomic one on
POSIX and Windows. A failure or a kill before the switch leaves the old snapshot in use; after it,
the new one. Leftovers of an interrupted commit (``.tmp`` folders and files) and snapshots older
than the previous one are removed by the next commit. Two refreshes at once queue on the lock, so
each merges into the other's result and no region is lost. A damaged snapshot in use is set aside
(``snapshots/damaged-<id>``) and a clean one written.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpuplan.providers.base import INSTANCE_COLUMNS, PRICE_COLUMNS, STOCK_COLUMNS, CatalogSnapshot, Row
from gpuplan.providers.cache import (
    DATA_FILES,
    LOCK,
    LOCK_TIMEOUT_S,
    MANIFEST,
    MANIFEST_VERSION,
    POINTER,
    SNAPSHOTS,
    CacheBusy,
    _check_folder,
    _manifest_at,
    cloud_dir,
    csv_text,
    current_dir,
    current_id,
    read_csv,
    snapshots_dir,
)


@contextmanager
def refresh_lock(cache_dir: str | os.PathLike[str] | None, cloud: str,
                 timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the cloud's cache lock (a ``filelock`` lock file next to ``CURRENT``)."""
    from filelock import FileLock, Timeout

    folder = cloud_dir(cache_dir, cloud)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / LOCK), timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout:
        raise CacheBusy(f"another refresh has held {folder / LOCK} for more than {timeout_s:g} s") from None
    try:
        yield
    finally:
        lock.release()


# Test seam: called with the name of each commit step just before it runs (tests inject failures).
def _no_hook(step: str) -> None:
    return None


commit_hook: Callable[[str], None] = _no_hook


def _fsync_dir(folder: Path) -> None:
    if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _write_temp(folder: Path, name: str, text: str) -> Path:
    """Write one file of a snapshot being built (``folder`` is the temporary snapshot folder)."""
    commit_hook(f"write {name}")
    path = folder / name
    _write_file(path, text.encode("utf-8"))
    return path


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def clean_leftovers(cache_dir: str | os.PathLike[str] | None, cloud: str, keep: Iterable[str] = ()) -> list[str]:
    """Remove temporary folders/files of interrupted commits and snapshots other than ``keep`` and the
    one in use (call with the lock held). Damaged snapshots set aside are kept. Returns what was removed."""
    folder = cloud_dir(cache_dir, cloud)
    snaps = folder / SNAPSHOTS
    keep_set = set(keep) | {current_id(cache_dir, cloud) or ""}
    removed = []
    for p in list(folder.glob(f".{POINTER}.*.tmp")) + (list(snaps.iterdir()) if snaps.is_dir() else []):
        if p.parent == snaps and (p.name in keep_set or p.name.startswith("damaged-")):
            continue
        _remove(p)
        removed.append(p.name)
    return removed


def _set_aside(cache_dir: str | os.PathLike[str] | None, cloud: str, sid: str) -> str:
    snaps = snapshots_dir(cache_dir, cloud)
    target = f"damaged-{sid}"
    os.replace(snaps / sid, snaps / target)
    return target


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
    old_manifest = _manifest_at(previous_dir) or {}

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
            sorted(prices, key=lambda r: (r.get("region", ""), r.get("instance_type", ""), r.get("billing", ""))),
            sorted(stock, key=lambda r: (r.get("region", ""), r.get("instance_type", ""), r.get("billing", ""),
                                         r.get("zone", ""))),
            regions)


def _snapshot_texts(snapshot: CatalogSnapshot, previous_dir: Path) -> dict[str, str]:
    instances, prices, stock, regions = merge_snapshot(snapshot, previous_dir)
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
    return texts


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_snapshot(snapshot: CatalogSnapshot, cache_dir: str | os.PathLike[str] | None = None,
                   notes: list[str] | None = None, lock_timeout_s: float = LOCK_TIMEOUT_S) -> Path:
    """Merge ``snapshot`` into the cloud's cache and commit it all or nothing; returns the new folder.

    ``notes`` collects what the user should know (a damaged snapshot set aside). Raises OSError when
    the disk fails (nothing visible changed) and CacheBusy when the lock cannot be had."""
    cloud = snapshot.cloud
    with refresh_lock(cache_dir, cloud, lock_timeout_s):
        base = cloud_dir(cache_dir, cloud)
        snaps = base / SNAPSHOTS
        sid = current_id(cache_dir, cloud)
        previous = current_dir(cache_dir, cloud)
        if sid is not None:
            problems = _check_folder(previous)
            if problems:
                if (snaps / sid).is_dir():
                    aside = _set_aside(cache_dir, cloud, sid)
                    if notes is not None:
                        notes.append(f"the cached snapshot was damaged ({'; '.join(problems)}); "
                                     f"set aside as {snaps / aside}, regions not refreshed now are gone")
                previous = snaps / ".none"  # start from the fresh regions only
        clean_leftovers(cache_dir, cloud, keep=[sid or ""])
        try:
            texts = _snapshot_texts(snapshot, previous)
        except (OSError, UnicodeDecodeError, csv.Error, KeyError) as exc:
            if sid is None:  # an unreadable legacy overlay: start afresh (it stays shadowed by CURRENT)
                if notes is not None:
                    notes.append(f"the old cache files in {base} could not be read ({type(exc).__name__}); "
                                 "starting a new snapshot")
                texts = _snapshot_texts(snapshot, snaps / ".none")
            else:  # pragma: no cover - _check_folder passed, so the files are ours
                raise
        new_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{secrets.token_hex(3)}"
        tmp_dir = snaps / f".{new_id}.tmp"
        pointer_tmp = base / f".{POINTER}.{new_id}.tmp"
        try:
            commit_hook("make folder")
            snaps.mkdir(parents=True, exist_ok=True)
            tmp_dir.mkdir()
            for name in (*DATA_FILES, MANIFEST):
                _write_temp(tmp_dir, name, texts[name])
            commit_hook("sync folder")
            _fsync_dir(tmp_dir)
            commit_hook("publish folder")
            os.replace(tmp_dir, snaps / new_id)
            _fsync_dir(snaps)
            commit_hook("write pointer")
            _write_file(pointer_tmp, (new_id + "\n").encode("utf-8"))
            commit_hook("switch pointer")
            os.replace(pointer_tmp, base / POINTER)
            _fsync_dir(base)
        except BaseException:
            _remove(tmp_dir)
            _remove(pointer_tmp)
            if current_id(cache_dir, cloud) != new_id:
                _remove(snaps / new_id)
            raise
        commit_hook("clean up")
        clean_leftovers(cache_dir, cloud, keep=[new_id, sid or ""])  # the previous one stays for readers
        for name in (*DATA_FILES, MANIFEST):  # files of the layout before snapshots, now shadowed
            _remove(base / name)
        return snaps / new_id
