"""Line numbers for a path inside a YAML or JSON file (the line a schema error points at)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import yaml

from gpuplan.check.bundle import Bundle


def yaml_line(text: str, path: Sequence[str | int], doc_index: int = 0) -> int | None:
    """1-based line of the node at ``path`` (mapping keys and list indexes) in the ``doc_index``-th YAML document;
    the deepest node found when the path does not exist all the way."""
    try:
        docs = list(yaml.compose_all(text))
    except yaml.YAMLError:
        return None
    docs = [d for d in docs if d is not None]
    if doc_index >= len(docs):
        return None
    node = docs[doc_index]
    line = node.start_mark.line + 1
    for part in path:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == part:
                    line, nxt = k.start_mark.line + 1, v
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def json_line(text: str, path: Sequence[str | int]) -> int | None:
    """1-based line of the last object key of ``path`` (the nearest named key) in a JSON file."""
    keys = [p for p in path if isinstance(p, str)]
    lines = text.splitlines()
    start = 0
    for key in keys:
        rx = re.compile(r'^\s*' + re.escape(json.dumps(key)) + r'\s*:')
        for i in range(start, len(lines)):
            if rx.search(lines[i]):
                start = i
                break
    return start + 1 if keys and lines else (1 if lines else None)


def line_for(b: Bundle, rel: str, path: Sequence[str | int], doc_index: int = 0) -> int | None:
    text = b.text(rel) or ""
    return json_line(text, path) if rel.endswith(".json") else yaml_line(text, path, doc_index)
