"""Reading user files without trusting them: bounded reads and YAML/JSON loaders with limits.

Everything a user can point gpuplan at (a workload file, a model's config.json, a price file) is
read through :func:`read_text_bounded` and parsed with :func:`load_yaml` or :func:`load_json`.
The limits turn every hostile or odd input into one :class:`~gpuplan.errors.GpuplanError`,
quickly and in little memory:

* size: checked with ``stat`` before reading and again while reading (a file that grows, or a
  device such as ``/dev/zero``, cannot exhaust memory); only regular files are read, and a FIFO
  is opened without blocking;
* nesting depth (:data:`MAX_DEPTH`): Python's recursion limit is never reached, whatever parser
  or validator walks the result afterwards;
* YAML aliases (:data:`MAX_NODES`): the *expanded* size of the document is counted, so a
  "billion laughs" alias bomb of a few hundred bytes is refused before anything walks it;
* integers: at most :data:`MAX_INT_DIGITS` digits (a 5,000-digit number is not a model size);
* YAML tags: only the safe scalar/collection tags of PyYAML's SafeLoader, and their errors
  (``!!int ''``, ``!!float x``, a bad timestamp) are parse errors, not crashes.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.files.input_limits import (  # noqa: F401 - re-exported: the limits live in one module
    MAX_BATCH_FILE_BYTES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    MAX_WORKLOAD_FILE_BYTES,
    size_text,
)

# The `what` labels callers pass (translated when the message is made).
_LABELS = (N_("file"), N_("JSON file"), N_("workload file"), N_("price file"), N_("cached price file"),
           N_("model config"), N_("input"))

_CHUNK = 1 << 16


def _display(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    return text if len(text) <= 200 else text[:197] + "..."


def read_bytes_bounded(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, or GpuplanError (never reads more)."""
    shown = _display(path)
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise GpuplanError(_("Cannot read the {what} {shown!r}: no such file.").format(what=_(what), shown=shown), hint=_("Check the path.")) from None
    except IsADirectoryError:
        raise GpuplanError(_("The {what} {shown!r} is a folder, not a file.").format(what=_(what), shown=shown), hint=_("Give the path of a file.")) from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise GpuplanError(_("Cannot open the {what} {shown!r}: {reason}.").format(what=_(what), shown=shown, reason=reason),
                           hint=_("Check the path and its permissions.")) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise GpuplanError(_("The {what} {shown!r} is a folder, not a file.").format(what=_(what), shown=shown), hint=_("Give the path of a file."))
        if not stat.S_ISREG(st.st_mode):
            raise GpuplanError(_("The {what} {shown!r} is not a regular file (a device, pipe or socket).").format(what=_(what), shown=shown),
                               hint=_("Give the path of an ordinary file."))
        if st.st_size > max_bytes:
            raise GpuplanError(_("The {what} {shown!r} is larger than {limit}.").format(what=_(what), shown=shown, limit=size_text(max_bytes)),
                               hint=_("Split it into several files."))
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:  # pragma: no cover - regular files never block
                continue
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:  # it grew while we read it
                raise GpuplanError(_("The {what} {shown!r} is larger than {limit}.").format(what=_(what), shown=shown, limit=size_text(max_bytes)),
                                   hint=_("Split it into several files."))
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise GpuplanError(_("The {what} {shown!r} is a folder, not a file.").format(what=_(what), shown=shown), hint=_("Give the path of a file.")) \
                from None
        raise GpuplanError(_("Cannot read the {what} {shown!r}: {strerror}.").format(what=_(what), shown=shown, strerror=exc.strerror or type(exc).__name__),
                           hint=_("Check the path and its permissions.")) from None
    finally:
        os.close(fd)


def read_text_bounded(path: str | os.PathLike[str], what: str = "file", max_bytes: int = MAX_BYTES,
                      encoding: str = "utf-8") -> str:
    """:func:`read_bytes_bounded`, decoded (``utf-8-sig`` drops a BOM); bad bytes are a GpuplanError."""
    data = read_bytes_bounded(path, what, max_bytes)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise GpuplanError(_("The {what} {path!r} is not UTF-8 text (byte {start}).").format(what=_(what), path=_display(path), start=exc.start),
                           hint=_("Save it as UTF-8.")) from None


_STDIN: list[tuple[object, str]] = []  # (the stdin stream, its text): each stream is read once


def read_stdin_bounded(what: str = "input", max_bytes: int = MAX_BYTES) -> str:
    """Standard input (``-`` as a file name) as UTF-8 text, at most ``max_bytes``; read once, then
    the same text again."""
    import sys

    if not _STDIN or _STDIN[0][0] is not sys.stdin:
        _STDIN.clear()
        try:
            if sys.stdin is None or sys.stdin.isatty():
                raise GpuplanError(_("'-' reads the {what} from standard input, and nothing is piped in.").format(
                    what=_(what)), hint=_("Pipe it in (`cat workload.yaml | gpuplan recommend -`) or give a file path."))
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read(max_bytes + 1) if stream is not None else sys.stdin.read(max_bytes + 1).encode("utf-8")
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise GpuplanError(_("Cannot read the {what} {shown!r}: {strerror}.").format(
                what=_(what), shown="-", strerror=reason), hint=_("Check the path and its permissions.")) from None
        if len(data) > max_bytes:
            raise GpuplanError(_("The {what} {shown!r} is larger than {limit}.").format(
                what=_(what), shown="-", limit=size_text(max_bytes)), hint=_("Split it into several files."))
        try:
            _STDIN.append((sys.stdin, data.decode("utf-8-sig")))
        except UnicodeDecodeError as exc:
            raise GpuplanError(_("The {what} {path!r} is not UTF-8 text (byte {start}).").format(
                what=_(what), path="-", start=exc.start), hint=_("Save it as UTF-8.")) from None
    return _STDIN[0][1]


# --------------------------------------------------------------------------------------------- YAML

_OWN_PROBLEMS = ("nested more than", "expands to more than", "invalid recursive alias", "an integer with",
                 "a number longer", "invalid ")
# The parser's details above, read back into catalog templates (the loader makes them in English).
_DETAILS = (
    (re.compile(r"nested more than (?P<n>\d+) levels deep"), N_("nested more than {n} levels deep")),
    (re.compile(r"expands to more than (?P<n>[\d,]+) values \(too many aliases\)"),
     N_("expands to more than {n} values (too many aliases)")),
    (re.compile(r"invalid recursive alias \(a value that contains itself\)"),
     N_("invalid recursive alias (a value that contains itself)")),
    (re.compile(r"an integer with more than (?P<n>\d+) digits"), N_("an integer with more than {n} digits")),
    (re.compile(r"a number longer than (?P<n>\d+) characters"), N_("a number longer than {n} characters")),
    (re.compile(r"invalid integer (?P<text>.*)"), N_("invalid integer {text}")),
    (re.compile(r"invalid number (?P<text>.*)"), N_("invalid number {text}")),
    (re.compile(r"invalid (?P<tag>\w+) value \((?P<error>\w+)\)"), N_("invalid {tag} value ({error})")),
)


def _detail_text(problem: str) -> str:
    """One of the loader's own problems in the current language."""
    for pattern, msgid in _DETAILS:
        m = pattern.fullmatch(problem)
        if m:
            return _(msgid).format(**m.groupdict())
    return problem


def load_yaml(text: str, origin: str = "input", hint: str | None = None) -> Any:
    """Parse YAML (or JSON, which is YAML) with the limits above; any failure is one GpuplanError. A plain
    workload file is read without PyYAML (gpuplan.files.simpleyaml: the same values, or not read there at all)."""
    from gpuplan.files.simpleyaml import read_simple

    simple = read_simple(text)
    if simple is not None:
        return simple
    import yaml   # here, not at import: a command that reads no YAML never pays for it

    from gpuplan.files.safeyaml import LimitedYamlLoader

    try:
        return yaml.load(text, Loader=LimitedYamlLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None)
        detail = _detail_text(problem) if problem and problem.startswith(_OWN_PROBLEMS) else ""
        if mark and detail:
            message = _("{origin} is not valid YAML/JSON at line {line}, column {column}: {detail}.")
        elif mark:
            message = _("{origin} is not valid YAML/JSON at line {line}, column {column}.")
        else:
            message = _("{origin} is not valid YAML/JSON.")
        raise GpuplanError(message.format(origin=origin, line=mark.line + 1 if mark else 0,
                                          column=mark.column + 1 if mark else 0, detail=detail),
                           hint=hint or _("Check indentation and quoting; `gpuplan schema` shows the workload format."),
                           web_hint=hint or _("Check indentation and quoting.")) from None
    except (RecursionError, MemoryError, ValueError, TypeError, IndexError, OverflowError) as exc:
        raise GpuplanError(_("{origin} cannot be read as YAML/JSON ({name}).").format(origin=origin, name=type(exc).__name__),
                           hint=hint or _("Simplify the file; `gpuplan schema` shows the workload format.")) from None


# --------------------------------------------------------------------------------------------- JSON


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer with more than {MAX_INT_DIGITS} digits")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > 400:
        raise ValueError("a number longer than 400 characters")
    return float(text)


def json_depth(value: Any) -> int:
    """Nesting depth of parsed JSON (a scalar is 0), computed without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            depth += 1
            stack.extend((v, depth) for v in item.values())
        elif isinstance(item, list):
            depth += 1
            stack.extend((v, depth) for v in item)
        deepest = max(deepest, depth)
    return deepest


def check_nesting(value: Any, origin: str = "input") -> None:
    """Refuse Python data (from the API or a parser) nested deeper than MAX_DEPTH or larger than
    MAX_NODES values; stops early, so a structure that contains itself is refused, not walked forever."""
    seen = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise GpuplanError(_("{origin} holds more than {MAX_NODES:,} values.").format(origin=origin, MAX_NODES=MAX_NODES), hint=_("Simplify it."))
        if isinstance(item, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise GpuplanError(_("{origin} is nested more than {MAX_DEPTH} levels deep.").format(origin=origin, MAX_DEPTH=MAX_DEPTH),
                                   hint=_("A workload is a few levels deep; see `gpuplan schema`."))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in children)


def _bracket_depth(text: str) -> int:
    """Deepest [ / { nesting of JSON text, ignoring strings (cheap pre-check before the recursive parser)."""
    depth = deepest = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        tok = m.group(0)
        if tok in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif tok in "]}":
            depth -= 1
    return deepest


def load_json(text: str, origin: str = "input", hint: str | None = None) -> Any:
    """``json.loads`` with the depth and number limits above; any failure is one GpuplanError."""
    hint = hint or "Check the JSON syntax."
    if _bracket_depth(text) > MAX_DEPTH:
        raise GpuplanError(_("{origin} is nested more than {MAX_DEPTH} levels deep.").format(origin=origin, MAX_DEPTH=MAX_DEPTH), hint=hint)
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float)
    except json.JSONDecodeError as exc:
        raise GpuplanError(_("{origin} is not valid JSON (line {lineno}, column {colno}: {msg}).").format(origin=origin, lineno=exc.lineno, colno=exc.colno, msg=exc.msg),
                           hint=hint) from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise GpuplanError(_("{origin} cannot be read as JSON ({exc}).").format(origin=origin, exc=exc if isinstance(exc, ValueError) else type(exc).__name__),
                           hint=hint) from None
    if json_depth(value) > MAX_DEPTH:  # pragma: no cover - the bracket pre-check catches it first
        raise GpuplanError(_("{origin} is nested more than {MAX_DEPTH} levels deep.").format(origin=origin, MAX_DEPTH=MAX_DEPTH), hint=hint)
    return value


def load_json_file(path: str | os.PathLike[str], what: str = "JSON file", hint: str | None = None) -> Any:
    return load_json(read_text_bounded(path, what), origin=f"{_display(Path(path))}", hint=hint)
