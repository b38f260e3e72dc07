"""Reading the bundled data files (``gpuplan/data/``) in their fastest form, once.

Every loader of a shipped YAML or JSON file goes through :func:`load_data`. YAML is parsed with
libyaml's C loader (``yaml.CSafeLoader``, the same safe constructors as ``yaml.safe_load``) where
PyYAML was built with it, else the pure-Python ``SafeLoader``. The parsed value is then kept in a
compiled copy under the cache folder (``<cache>/compiled/<name>-<hash>.pickle``), keyed by the
SHA-256 of the file's bytes, so the next process reads a pickle instead of parsing YAML: a changed
file has another hash, so a stale copy is never used. The copy is read with an unpickler that
resolves no global except ``datetime`` values (what YAML dates become), so a planted file cannot run
code; a damaged or unreadable copy is ignored and rewritten. ``GPUPLAN_NO_DATA_CACHE=1`` turns the
compiled copies off (the files are then parsed every time).

The loaders above this keep their own ``functools.cache``: each file is read at most once per
process, and only by the commands that need it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import pickle
from pathlib import Path
from typing import Any, Protocol

CACHE_ENV_OFF = "GPUPLAN_NO_DATA_CACHE"
_FORMAT = 1   # bump when the compiled form changes
_ALLOWED_GLOBALS = {("datetime", "date"), ("datetime", "datetime"), ("datetime", "timedelta"),
                    ("datetime", "timezone")}


class _Readable(Protocol):
    """A data file: a path or an importlib.resources Traversable."""

    @property
    def name(self) -> str: ...

    def read_bytes(self) -> bytes: ...


def yaml_loader() -> Any:
    """libyaml's safe loader when PyYAML has it, else the pure-Python one (same results)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DataFormatError(ValueError):
    """A bundled data file that does not parse (a ValueError, so callers need not import yaml)."""


def parse_yaml(text: str | bytes) -> Any:
    """YAML text -> Python values, with the fastest safe loader; a syntax error is a DataFormatError."""
    import yaml

    try:
        return yaml.load(text, Loader=yaml_loader())  # noqa: S506 - a SafeLoader (C or Python)
    except yaml.YAMLError as exc:
        raise DataFormatError(str(exc)) from exc


class _DataUnpickler(pickle.Unpickler):
    """Plain values and datetime values only: no other global can be named by a compiled copy."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return getattr(_dt, name)
        raise pickle.UnpicklingError(f"global {module}.{name} not allowed in a compiled data file")


def _compiled_dir() -> Path | None:
    if os.environ.get(CACHE_ENV_OFF, "").strip() not in ("", "0"):
        return None
    from gpuplan.files.cachedir import default_cache_dir

    try:
        return default_cache_dir() / "compiled"
    except (RuntimeError, KeyError, OSError):   # no home folder to put a cache in: parse every time
        return None


def _compiled_path(folder: Path, name: str, raw: bytes) -> Path:
    digest = hashlib.sha256(raw).hexdigest()[:24]
    return folder / f"{Path(name).stem}-{digest}-v{_FORMAT}.pickle"


def _read_compiled(path: Path) -> tuple[bool, Any]:
    try:
        with open(path, "rb") as fh:
            return True, _DataUnpickler(fh).load()
    except FileNotFoundError:
        return False, None
    except Exception:  # noqa: BLE001 - a damaged copy is rebuilt from the source file
        return False, None


def _write_compiled(path: Path, value: Any) -> None:
    """Write the compiled copy atomically (a temporary file renamed over it: readers see all or nothing)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        pickle.dump(value, buf, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, path)
    except OSError:   # a read-only or full cache folder: parse again next time
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def load_data(path: _Readable | Path) -> Any:
    """A bundled YAML or JSON data file, parsed (a compiled copy when one matches the file's bytes).

    Raises OSError when the file cannot be read and ValueError (DataFormatError, json.JSONDecodeError)
    when it does not parse."""
    raw = path.read_bytes()
    name = str(getattr(path, "name", "data"))
    if name.endswith(".json"):
        return json.loads(raw.decode("utf-8"))
    folder = _compiled_dir()
    compiled = _compiled_path(folder, name, raw) if folder is not None else None
    if compiled is not None:
        hit, value = _read_compiled(compiled)
        if hit:
            return value
    value = parse_yaml(raw.decode("utf-8"))
    if compiled is not None:
        _write_compiled(compiled, value)
    return value
