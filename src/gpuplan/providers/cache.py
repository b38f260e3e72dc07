"""The local catalog cache: where it lives, how a refresh commits it (all or nothing) and how it is read.

Layout per cloud (the CSV files have the bundled snapshot's schema, so the catalog loaders overlay
them unchanged)::

    <cache_dir>/clouds/<cloud>/CURRENT                  name of the snapshot in use (one line)
    <cache_dir>/clouds/<cloud>/snapshots/<id>/instances.csv
    <cache_dir>/clouds/<cloud>/snapshots/<id>/prices.csv
    <cache_dir>/clouds/<cloud>/snapshots/<id>/stock.csv  (refresh only: stock per zone and billing mode)
    <cache_dir>/clouds/<cloud>/snapshots/<id>/manifest.json  (fetched_at, regions, counts, SHA-256 per file)
    <cache_dir>/clouds/<cloud>/.lock                    held while a refresh merges and commits

A commit (:func:`write_snapshot`) holds the lock (``filelock``) while it reads the snapshot in use,
merges the fresh regions into it, writes every file of the new snapshot into a temporary folder
(fsync'ed), renames that folder to its final name, and then switches ``CURRENT`` with one
``os.replace`` of a temporary pointer file: the only step readers can see, and an atomic one on
POSIX and Windows. A failure or a kill before the switch leaves the old snapshot in use; after it,
the new one. Leftovers of an interrupted commit (``.tmp`` folders and files) and snapshots older
than the previous one are removed by the next commit. Two refreshes at once queue on the lock, so
each merges into the other's result and no region is lost.

Readers (:func:`overlay_file`) check each file against the SHA-256 in the manifest before using it.
A damaged snapshot (a truncated or non-UTF-8 file, a missing file, an unreadable manifest) is not
used: a one-line warning goes to the ``gpuplan`` logger and the bundled catalog is used instead; the
next refresh sets the damaged snapshot aside (``snapshots/damaged-<id>``) and writes a clean one.
Files placed directly in ``clouds/<cloud>/`` (no ``CURRENT``; the layout before snapshots, or a
hand-made overlay) are still read as they are.
No credential ever reaches these files: rows carry only catalog values and API endpoint names.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpuplan.providers.base import (
    INSTANCE_COLUMNS,
    PRICE_COLUMNS,
    STOCK_COLUMNS,
    CatalogSnapshot,
    Row,
)
from gpuplan.files.cachedir import default_cache_dir  # noqa: F401 - one definition, re-exported here

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1


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


POINTER = "CURRENT"
SNAPSHOTS = "snapshots"
LOCK = ".lock"
DATA_FILES = ("instances.csv", "prices.csv", "stock.csv")
LOCK_TIMEOUT_S = 120.0  # a commit takes well under a second; this only guards against a stuck process
_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,120}$")
log = logging.getLogger("gpuplan")


class CacheBusy(Exception):
    """Another refresh held the cache lock for longer than the timeout."""


class CacheDamaged(Exception):
    """The snapshot in use does not match its manifest (the reason is the message)."""


# ----------------------------------------------------------------------------------------- reading


def snapshots_dir(cache_dir: str | os.PathLike[str] | None, cloud: str) -> Path:
    return cloud_dir(cache_dir, cloud) / SNAPSHOTS


def current_id(cache_dir: str | os.PathLike[str] | None, cloud: str) -> str | None:
    """The name of the snapshot in use (from ``CURRENT``), or None without one."""
    try:
        text = (cloud_dir(cache_dir, cloud) / POINTER).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if _ID.match(text) else None


def current_dir(cache_dir: str | os.PathLike[str] | None, cloud: str) -> Path:
    """The folder whose files are in use: the current snapshot, else ``clouds/<cloud>/`` itself."""
    sid = current_id(cache_dir, cloud)
    return snapshots_dir(cache_dir, cloud) / sid if sid else cloud_dir(cache_dir, cloud)


def read_csv(path: Path) -> list[Row]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return [dict(r) for r in csv.DictReader(fh)]


def _manifest_at(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_manifest(cache_dir: str | os.PathLike[str] | None, cloud: str) -> dict[str, Any] | None:
    """The manifest of the snapshot in use, or None when there is no cache (or it is unreadable)."""
    return _manifest_at(current_dir(cache_dir, cloud))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_folder(folder: Path) -> list[str]:
    """Problems of a snapshot folder against its manifest ([] = consistent)."""
    manifest = _manifest_at(folder)
    if manifest is None:
        return [f"{MANIFEST} is missing or unreadable"]
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return [f"{MANIFEST} lists no file hashes"]
    bad = []
    for name, digest in files.items():
        if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith("."):
            bad.append(f"{name!r} is not a cache file name")
            continue
        try:
            if _sha256_file(folder / name) != digest:
                bad.append(f"{name} does not match its hash")
        except OSError:
            bad.append(f"{name} is missing")
    return bad


def verify_files(cache_dir: str | os.PathLike[str] | None, cloud: str) -> list[str]:
    """Names of the current snapshot's files that no longer match the manifest (empty = consistent)."""
    folder = current_dir(cache_dir, cloud)
    manifest = _manifest_at(folder)
    if manifest is None:
        return [MANIFEST] if current_id(cache_dir, cloud) else []
    bad = []
    for name, digest in (manifest.get("files") or {}).items():
        try:
            if _sha256_file(folder / str(name)) != digest:
                bad.append(str(name))
        except OSError:
            bad.append(str(name))
    return bad


_verified: dict[tuple[str, tuple[tuple[str, int, int], ...]], tuple[str, ...]] = {}
_warned: set[str] = set()


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    out = []
    for name in (MANIFEST, *DATA_FILES):
        try:
            st = (folder / name).stat()
            out.append((name, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((name, -1, -1))
    return tuple(out)


def snapshot_problems(folder: Path) -> tuple[str, ...]:
    """:func:`_check_folder`, memoized on the files' size and mtime (a reader checks once per change)."""
    key = (str(folder), _stamp(folder))
    if key not in _verified:
        _verified[key] = tuple(_check_folder(folder))
    return _verified[key]


def overlay_file(cache_dir: str | os.PathLike[str] | None, cloud: str, name: str) -> Path | None:
    """The cached ``name`` (instances.csv, prices.csv) to overlay on the bundled one, or None.

    None when there is no cache, or when the snapshot in use is damaged (then a one-line warning is
    logged once per process and the bundled catalog is used)."""
    sid = current_id(cache_dir, cloud)
    if sid is None:
        legacy = cloud_dir(cache_dir, cloud) / name
        return legacy if legacy.is_file() else None
    folder = snapshots_dir(cache_dir, cloud) / sid
    problems = snapshot_problems(folder)
    if problems:
        if str(folder) not in _warned:
            _warned.add(str(folder))
            log.warning("warning: the %s price/instance cache %s is damaged (%s); using the bundled catalog. "
                        "Run `gpuplan catalog refresh` to replace it.", cloud, folder, "; ".join(problems))
        return None
    path = folder / name
    return path if path.is_file() else None


# ----------------------------------------------------------------------------------------- writing


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
