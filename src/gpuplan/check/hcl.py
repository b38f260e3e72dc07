"""A small reader for the Terraform the bundles write: blocks with their line numbers, top-level and nested
attributes as text. It does not evaluate expressions; literal values (numbers, strings, booleans) are decoded.
python-hcl2 is used for the full parse when it is installed (terraform.py); this reader needs nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

BLOCK = re.compile(r'^(?P<indent>\s*)(?P<kind>[a-z_][a-z0-9_]*)(?P<labels>(?:\s+"[^"]*")*)\s*\{\s*$')
ATTR = re.compile(r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?P<value>.*)$")


@dataclass
class Block:
    kind: str                      # resource | data | variable | locals | output | gpu_config | ...
    labels: tuple[str, ...]
    line: int                      # 1-based line of the block header
    attrs: dict[str, tuple[str, int]] = field(default_factory=dict)   # name -> (expression text, line)
    blocks: list[Block] = field(default_factory=list)

    def child(self, kind: str) -> Block | None:
        return next((c for c in self.blocks if c.kind == kind), None)


def literal(expr: str):
    """The value of a literal expression (int, float, quoted string, true/false), else None."""
    e = expr.strip()
    if re.fullmatch(r"-?\d+", e):
        return int(e)
    if re.fullmatch(r"-?\d+\.\d*", e):
        return float(e)
    if e in ("true", "false"):
        return e == "true"
    if re.fullmatch(r'"(?:[^"\\$%]|\\.)*"', e):
        try:
            return json.loads(e)
        except ValueError:
            return None
    return None


def _value_end(lines: list[str], i: int, value: str) -> int:
    """Index of the last line of an attribute value that opens brackets or a heredoc on line ``i``."""
    if value.startswith("<<"):
        marker = value.lstrip("<-").strip()
        j = i + 1
        while j < len(lines) and lines[j].strip() != marker:
            j += 1
        return j
    depth = sum(value.count(c) for c in "([{") - sum(value.count(c) for c in ")]}")
    j = i
    while depth > 0 and j + 1 < len(lines):
        j += 1
        depth += sum(lines[j].count(c) for c in "([{") - sum(lines[j].count(c) for c in ")]}")
    return j


def parse(text: str) -> list[Block]:
    """Top-level blocks of one .tf file (terraform fmt layout: one attribute or block header per line)."""
    lines = text.splitlines()
    top: list[Block] = []
    stack: list[Block] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith(("#", "//")):
            i += 1
            continue
        m = BLOCK.match(raw)
        if m and not ATTR.match(raw):
            blk = Block(m.group("kind"), tuple(re.findall(r'"([^"]*)"', m.group("labels"))), i + 1)
            (stack[-1].blocks if stack else top).append(blk)
            stack.append(blk)
            i += 1
            continue
        if stripped == "}" and stack:
            stack.pop()
            i += 1
            continue
        a = ATTR.match(raw)
        if a and stack:
            value = a.group("value")
            end = _value_end(lines, i, value.strip())
            full = "\n".join([value, *lines[i + 1:end + 1]]) if end > i else value
            stack[-1].attrs[a.group("name")] = (full.strip(), i + 1)
            i = end + 1
            continue
        i += 1
    return top


def resources(blocks: list[Block], kind: str = "resource") -> dict[str, Block]:
    """{"type.name": block} of the resource (or data) blocks."""
    return {".".join(b.labels[:2]): b for b in blocks if b.kind == kind and len(b.labels) >= 2}
