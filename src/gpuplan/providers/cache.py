"""The local catalog cache: where it lives and how it is read (a refresh commits it: providers/cache_commit.py).

Layout per cloud (the CSV files have the bundled snapshot's schema, so the catalog loaders overlay
them unchanged)::

    <cache_dir>/clouds/<cloud>/CURRENT                  name of the snapshot in use (one line)
    <cache_dir>/clouds/<cloud>/snapshots/<id>/instances.csv
    <cache_dir>/clouds/<cloud>/snapshots/<id>/prices.csv
    <cache_dir>/clouds/<cloud>/snapshots/<id>/stock.csv  (refresh only: stock per zone and billing mode)
    <cache_dir>/clouds/<cloud>/snapshots/<id>/manifest.json  (fetched_at, regions, counts, SHA-256 per file)
    <cache_dir>/clouds/<cloud>/.lock                    held while a refresh merges and commits

A refresh commits a new snapshot all or nothing under the lock (providers/cache_commit.py,
:func:`~gpuplan.providers.cache_commit.write_snapshot`): ``CURRENT`` switches with one atomic ``os.replace``.

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpuplan.providers.base import Row
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
