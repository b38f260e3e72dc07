"""The buyer's own prices, kept in the user's cache (``gpuplan catalog import``).

Layout (next to the live refresh's ``clouds/`` folder, same cache root: ``GPUPLAN_CACHE_DIR`` or the
platform's cache folder, see :mod:`gpuplan.providers.cache`)::

    <cache_dir>/imports/<name>.csv     one file per imported file, in the user price-file schema
                                       (docs/catalog-schema.md: the prices.csv columns plus ``cloud``)
    <cache_dir>/imports/.lock          held while an import or a removal writes

One import is one file, written all or nothing: the rows go to a temporary file in the same folder
(fsync'ed), which one ``os.replace`` puts in place, so a reader sees the old file or the new one,
never half of one. Importing a file of the same name again replaces its rows (a newer quote of the
same file). A removal rewrites (or deletes) each file it touches the same way.

This module only stores and lists rows; checking them is the catalog's job
(:mod:`gpuplan.catalog.price_import`), and reading them into offers is
:func:`gpuplan.catalog.prices.prices.load_offers`, the one overlay every answer goes through.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpuplan.providers.cache import LOCK_TIMEOUT_S, CacheBusy, csv_text, read_csv, resolve_cache_dir
from gpuplan.providers.cache_commit import _fsync_dir

IMPORTS = "imports"
SUFFIX = ".csv"
# The columns of a stored import: the user price-file schema (catalog.prices.prices._USER_COLUMNS), cloud first.
COLUMNS: tuple[str, ...] = ("cloud", "instance_type", "region", "billing", "price", "unit", "currency", "as_of",
                            "source", "confidence", "notes", "kind", "rule", "basis")
_SAFE = re.compile(r"[^0-9A-Za-z._-]+")


def imports_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    return resolve_cache_dir(cache_dir) / IMPORTS


def stored_name(file_name: str) -> str:
    """The file an import of ``file_name`` is kept in: its base name, made safe (``quote 11.json`` ->
    ``quote_11.json.csv``)."""
    base = _SAFE.sub("_", Path(file_name).name).strip("._") or "prices"
    return base[:120] + SUFFIX


def import_name(path: Path) -> str:
    """The imported file's name as the rows' origin shows it (the stored file's name less ``.csv``)."""
    return path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name


def import_files(cache_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """The stored imports, by name (none when the folder does not exist)."""
    folder = imports_dir(cache_dir)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIX)
                  and not p.name.startswith("."))


@contextmanager
def imports_lock(cache_dir: str | os.PathLike[str] | None = None,
                 timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[Path]:
    """Hold the imports folder's lock (``filelock``); yields the folder."""
    from filelock import FileLock, Timeout

    folder = imports_dir(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / ".lock"), timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout:
        raise CacheBusy(f"another import has held {folder / '.lock'} for more than {timeout_s:g} s") from None
    try:
        yield folder
    finally:
        lock.release()


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` all or nothing (temporary file in the same folder, fsync, os.replace)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise


def store(file_name: str, rows: Iterable[dict[str, str]],
          cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Keep the (already checked) rows of one imported file; returns the stored file."""
    text = csv_text(list(rows), COLUMNS)
    with imports_lock(cache_dir) as folder:
        path = folder / stored_name(file_name)
        _replace(path, text)
        return path


def remove(cache_dir: str | os.PathLike[str] | None = None, *, file_name: str | None = None,
           instance_type: str | None = None) -> list[dict[str, str]]:
    """Forget imported rows: all of them, those of one imported file (``file_name``, as given to the
    import or as ``catalog status`` lists it), and/or those of one instance type. Returns the rows
    removed (each with ``import`` = the imported file's name)."""
    wanted_file = stored_name(file_name) if file_name else None
    wanted_type = _type_key(instance_type) if instance_type else None
    removed: list[dict[str, str]] = []
    with imports_lock(cache_dir):
        for path in import_files(cache_dir):
            if wanted_file and path.name != wanted_file:
                continue
            rows = read_csv(path)
            keep = [r for r in rows if wanted_type and _type_key(r.get("instance_type", "")) != wanted_type]
            removed.extend({**r, "import": import_name(path)} for r in rows if r not in keep)
            if len(keep) == len(rows):
                continue
            if keep:
                _replace(path, csv_text(keep, COLUMNS))
            else:
                path.unlink()
                _fsync_dir(path.parent)
    return removed


def _type_key(name: str) -> str:
    name = name.strip().lower()
    return name[4:] if name.startswith("ecs.") else name


def listing(cache_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """What is kept, per imported file: its name, stored path and rows (for ``catalog status``)."""
    return [{"import": import_name(p), "path": str(p), "rows": read_csv(p)} for p in import_files(cache_dir)]
