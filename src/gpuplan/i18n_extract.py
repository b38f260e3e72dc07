"""Babel extractor for the bundled data's human text (named in babel.cfg; scripts/i18n.sh puts src/ on the path).

Data files stay English and keep their sources; the few of their values that gpuplan shows as sentences
(price-source labels, spot rules, cost sources, compliance titles) become msgids of the catalog, so
``--lang zh`` shows them translated (``gpuplan.i18n.localize``). babel.cfg names the YAML keys
(``keys = a b``) or CSV columns (``columns = a b``) of each file; URLs and one-word values are skipped.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import yaml


def _worth(value: Any) -> bool:
    return isinstance(value, str) and " " in value.strip() and not value.startswith(("http://", "https://"))


def _walk(node: Any, keys: set[str]) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in keys and _worth(v):
                yield v.strip()
            else:
                yield from _walk(v, keys)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, keys)


def extract(fileobj, keywords, comment_tags, options) -> Iterator[tuple[int, str | None, str, list[str]]]:
    text = fileobj.read().decode("utf-8")
    if options.get("columns"):
        cols = options["columns"].split()
        for lineno, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            for col in cols:
                if _worth(row.get(col)):
                    yield lineno, None, row[col].strip(), []
        return
    for value in _walk(yaml.safe_load(text), set(options.get("keys", "").split())):
        yield 0, None, value, []
