"""One plan bundle as the checks read it: its files (text, lines, parsed JSON/YAML), plan.json read defensively,
and the finding record every check returns.

A missing plan.json field is not a crash: :meth:`Bundle.field` raises :class:`MissingField`, which the runner turns
into one finding that names the field (docs/plan-bundle.md lists the fields the checks read).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpuplan.i18n import _

MAX_FILE_BYTES = 4 * 1024 * 1024   # a bundle file larger than this is not read (bundles write kilobytes)
_MISSING = object()


@dataclass(frozen=True)
class Finding:
    """One broken thing: the file (relative to the bundle), the 1-based line when known, a stable code and the
    sentence that says what is wrong and, where it helps, what to do."""

    path: str
    line: int | None
    code: str
    message: str

    def render(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "code": self.code, "message": self.message}


class MissingField(Exception):
    """plan.json lacks a field a check needs."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


@dataclass
class Bundle:
    """The files of one bundle folder, read lazily and once."""

    root: Path
    notes: list[str] = field(default_factory=list)
    _text: dict[str, str | None] = field(default_factory=dict)
    _plan: dict | None = None

    @property
    def files(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*")
                      if p.is_file() and not any(part.startswith(".") for part in p.relative_to(self.root).parts))

    def has(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def glob(self, pattern: str) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.glob(pattern) if p.is_file())

    def text(self, rel: str) -> str | None:
        """The file's text (None when absent, too large or not UTF-8)."""
        if rel not in self._text:
            path = self.root / rel
            try:
                self._text[rel] = (path.read_text(encoding="utf-8")
                                   if path.is_file() and path.stat().st_size <= MAX_FILE_BYTES else None)
            except (OSError, UnicodeDecodeError):
                self._text[rel] = None
        return self._text[rel]

    def lines(self, rel: str) -> list[str]:
        return (self.text(rel) or "").splitlines()

    def line_of(self, rel: str, pattern: str | re.Pattern, start: int = 1) -> int | None:
        """1-based line of the first match of ``pattern`` (a regex or a plain substring) at or after ``start``."""
        rx = pattern if isinstance(pattern, re.Pattern) else re.compile(re.escape(pattern))
        for i, line in enumerate(self.lines(rel), 1):
            if i >= start and rx.search(line):
                return i
        return None

    def json(self, rel: str) -> tuple[Any, Finding | None]:
        text = self.text(rel)
        try:
            return json.loads(text or ""), None
        except ValueError as exc:
            line = getattr(exc, "lineno", None)
            return None, Finding(rel, line, "parse", _("{path} is not valid JSON: {reason}.").format(
                path=rel, reason=getattr(exc, "msg", str(exc))))

    def yaml_docs(self, rel: str) -> tuple[list[Any], Finding | None]:
        text = self.text(rel)
        try:
            return [d for d in yaml.safe_load_all(text or "") if d is not None], None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            return [], Finding(rel, mark.line + 1 if mark else None, "parse", _("{path} is not valid YAML: {reason}.").format(
                path=rel, reason=getattr(exc, "problem", None) or str(exc)))

    # --- plan.json ------------------------------------------------------------------------------------------

    @property
    def plan_json(self) -> dict:
        if self._plan is None:
            doc, _err = self.json("plan.json") if self.has("plan.json") else (None, None)
            self._plan = doc if isinstance(doc, dict) else {}
        return self._plan

    def field(self, dotted: str, default: Any = _MISSING) -> Any:
        """A plan.json value by its dotted path (``plan.region``, ``environment.python``); raises MissingField when
        absent and no default is given. ``environment`` is read at the top level, else under ``plan``."""
        roots = [self.plan_json]
        if dotted.startswith("environment"):
            roots.append(self.plan_json.get("plan") or {})
        for node in roots:
            cur: Any = node
            for part in dotted.split("."):
                if not isinstance(cur, dict) or part not in cur:
                    cur = _MISSING
                    break
                cur = cur[part]
            if cur is not _MISSING and cur is not None:
                return cur
        if default is _MISSING:
            raise MissingField(dotted)
        return default

    @property
    def region(self) -> str:
        return str(self.field("plan.region"))

    @property
    def platform(self) -> str:
        return str(self.field("plan.platform", "ecs"))

    @property
    def training(self) -> bool:
        return str(self.field("workload.task", "inference")) != "inference"

    @property
    def mainland(self) -> bool:
        from gpuplan.plan.advice.ops import is_mainland

        return is_mainland(self.region)
