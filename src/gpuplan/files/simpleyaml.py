"""The plain workload file without PyYAML: a cold `gpuplan recommend FILE` spent 4 % of its run importing PyYAML
(its reader compiles a large regular expression) to read a dozen ``key: value`` lines.

:func:`read_simple` reads one narrow, common form of YAML — block mappings of ``key: value`` lines, one-line flow
lists and mappings (``[payg, spot]``, ``{rank: 8, alpha: 16}``), comments, and plain values that are names,
decimal integers, decimal floats, booleans or null — into the values PyYAML's loader
(:class:`gpuplan.files.safeyaml.LimitedYamlLoader`, YAML 1.1 with 1.2 floats) gives for it. Anything else (quotes,
block lists, anchors, tags, documents, tabs, non-ASCII text, a repeated key, a value PyYAML would read as a date,
an octal or a sexagesimal number...) is not read here: it returns ``None`` and the caller parses the text with
PyYAML, errors and limits included. tests/test_simpleyaml.py checks both readers give equal values.
"""

from __future__ import annotations

import re
from typing import Any

_LINE = re.compile(r"( *)([A-Za-z_][A-Za-z0-9_]*):(?: +([^ #][^#]*?))? *(?: #.*)?")
_TOKEN = re.compile(r"[A-Za-z0-9_./+-]+")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})")
_FLOAT = re.compile(r"[-+]?[0-9]{1,30}(?:\.[0-9]{1,30}(?:[eE][-+]?[0-9]{1,3})?|[eE][-+]?[0-9]{1,3})")
_WORDS: dict[str, Any] = {**{w: True for w in ("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
                          **{w: False for w in ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
                          **{w: None for w in ("null", "Null", "NULL")}}
_MAX_CHARS = 64 * 1024   # far below PyYAML's node limit (gpuplan.files.input_limits.MAX_NODES) however it is written
_MAX_LINES = 2000
_MAX_DEPTH = 8


class _NotSimple(Exception):
    """The text is outside the form read here."""


def _scalar(text: str) -> Any:
    if not _TOKEN.fullmatch(text):
        raise _NotSimple
    if text in _WORDS:
        return _WORDS[text]
    if text[0].isalpha():
        return text          # no YAML 1.1 resolver takes a name that starts with a letter, other than the words
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    raise _NotSimple         # a date, an octal, 1_000, .5, a sexagesimal... PyYAML decides


def _flow(text: str, i: int, depth: int) -> tuple[Any, int]:
    """A one-line flow list, flow mapping or plain value starting at text[i]: (value, index after it)."""
    if depth > 4:
        raise _NotSimple
    if text[i] not in "[{":
        m = _TOKEN.match(text, i)
        if m is None:
            raise _NotSimple
        return _scalar(m.group()), m.end()
    close = "]" if text[i] == "[" else "}"
    items: list[Any] = []
    out: dict[Any, Any] = {}
    i = _skip(text, i + 1)
    if text[i] == close:
        return (items if close == "]" else out), i + 1
    while True:
        if close == "]":
            item, i = _flow(text, i, depth + 1)
            items.append(item)
        else:
            m = _TOKEN.match(text, i)
            key = _scalar(m.group()) if m else None
            if m is None or not isinstance(key, str) or key in out or not text.startswith(": ", m.end()):
                raise _NotSimple
            out[key], i = _flow(text, _skip(text, m.end() + 1), depth + 1)
        i = _skip(text, i)
        if text[i] == close:
            return (items if close == "]" else out), i + 1
        if text[i] != ",":
            raise _NotSimple
        i = _skip(text, i + 1)


def _skip(text: str, i: int) -> int:
    while text[i] == " ":
        i += 1
    return i


def _value(text: str | None) -> Any:
    if text is None:
        return None
    value, end = _flow(text + "\n", 0, 0)    # the newline stops every loop at the end
    if end != len(text):
        raise _NotSimple
    return value


def read_simple(text: str) -> dict[str, Any] | None:
    """The mapping a simple YAML text holds, as PyYAML reads it; None when the text is not of that simple form."""
    if len(text) > _MAX_CHARS or not text.isascii() or "\t" in text or "\r" in text or text.count("\n") > _MAX_LINES:
        return None
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]   # (indent of the mapping's keys, mapping)
    pending: tuple[int, dict[str, Any], str] | None = None     # a `key:` with no value: a mapping or null follows
    try:
        for line in text.split("\n"):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            m = _LINE.fullmatch(line.rstrip(" "))
            if m is None or not line.isprintable():
                return None
            indent, key, raw = len(m.group(1)), m.group(2), m.group(3)
            if key in _WORDS:
                return None      # a key PyYAML reads as a boolean or null
            if pending is not None:
                p_indent, p_map, p_key = pending
                if indent > p_indent:
                    child: dict[str, Any] = {}
                    p_map[p_key] = child
                    stack.append((indent, child))
                    if len(stack) > _MAX_DEPTH:
                        return None
                pending = None
            while indent < stack[-1][0]:
                stack.pop()
            if stack[-1][0] == -1:
                if indent != 0:
                    return None
                stack[-1] = (0, root)
            if indent != stack[-1][0]:
                return None      # an indentation PyYAML would refuse or read another way
            mapping = stack[-1][1]
            if key in mapping:
                return None
            mapping[key] = _value(raw.rstrip() if raw is not None else None)
            if raw is None:
                pending = (indent, mapping, key)
    except (_NotSimple, IndexError):
        return None
    return root or None
