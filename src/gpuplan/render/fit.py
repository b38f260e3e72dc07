"""Tables that fit the terminal: columns chosen by priority, the rest folded into a detail line.

A :class:`Column` has a priority (0 = always shown, higher = dropped sooner). :func:`fitted_table`
keeps the most important columns whose natural widths (measured in terminal cells, so Chinese
characters count double) fit the console width, and prints every dropped column as ``header value``
pairs on an indented detail line under its row. Cells are never cut: an instance type is shown whole
or the column is dropped (priority-0 columns are never dropped). ``wide=True`` shows every column
and lets lines be as long as they need.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, Group
from rich.text import Text

from gpuplan.i18n import N_, tr

PRICE_LEGEND = {
    "~": N_("~ estimated price (spot at a fraction of pay-as-you-go, or a list price converted or not yet "
            "published): check a quote"),
}

GAP = 2            # cells between columns
INDENT = 1         # cells before the first column
DETAIL_INDENT = 4  # cells before a detail line
DETAIL_SEP = " · "


@dataclass(frozen=True)
class Column:
    """One column of a fitted table."""

    header: str
    priority: int = 0
    justify: str = "left"           # left | right


def _width(col: Column, cells: Iterable[str]) -> int:
    return max([cell_len(col.header), *(cell_len(c) for c in cells)])


def choose(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, wide: bool = False) -> list[int]:
    """Indexes of the columns to show: all when ``wide``, else drop the lowest priority (rightmost
    first among equals) until the table fits ``width`` or only priority-0 columns are left."""
    keep = list(range(len(columns)))
    if wide:
        return keep
    widths = [_width(c, (r[i] for r in rows)) for i, c in enumerate(columns)]

    def total(ix: list[int]) -> int:
        return INDENT + sum(widths[i] for i in ix) + GAP * (len(ix) - 1)

    while total(keep) > width:
        droppable = [i for i in keep if columns[i].priority > 0]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (columns[i].priority, i)))
    # a narrow column of lower priority may still fit where a wide one did not
    for i in sorted(set(range(len(columns))) - set(keep), key=lambda i: (columns[i].priority, i)):
        if total(sorted(keep + [i])) <= width:
            keep = sorted(keep + [i])
    return keep


def _detail_lines(pairs: Sequence[str], width: int) -> list[str]:
    """``header value`` pairs joined by DETAIL_SEP, wrapped between pairs to ``width`` cells."""
    lines: list[str] = []
    cur = ""
    for pair in pairs:
        cand = pair if not cur else cur + DETAIL_SEP + pair
        if cur and cell_len(cand) > width:
            lines.append(cur)
            cur = pair
        else:
            cur = cand
    if cur:
        lines.append(cur)
    return lines


def _pad(text: str, width: int, justify: str) -> str:
    gap = " " * max(0, width - cell_len(text))
    return gap + text if justify == "right" else text + gap


def fitted_table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]], *, width: int,
                 wide: bool = False, styles: Sequence[str | None] | None = None,
                 legend: Sequence[str] = ()) -> Group:
    """The table as a rich renderable: title, header, one line per row (+ a detail line when columns
    were folded), and legend lines."""
    keep = choose(columns, rows, width, wide)
    folded = [i for i in range(len(columns)) if i not in keep]
    widths = {i: _width(columns[i], (r[i] for r in rows)) for i in keep}
    line_w = INDENT + sum(widths.values()) + GAP * (len(keep) - 1)
    out: list = [Text(title, style="bold")]
    head = " " * INDENT + (" " * GAP).join(_pad(columns[i].header, widths[i], columns[i].justify) for i in keep)
    out.append(Text(head.rstrip(), style="bold", overflow=None if wide else "fold"))
    out.append(Text("─" * (min(line_w, width) if not wide else line_w), style="dim"))
    for n, r in enumerate(rows):
        line = " " * INDENT + (" " * GAP).join(_pad(r[i], widths[i], columns[i].justify) for i in keep)
        style = styles[n] if styles else None
        out.append(Text(line.rstrip(), style=style or "", overflow=None if wide else "fold"))
        pairs = [f"{columns[i].header} {r[i]}" for i in folded if r[i] not in ("", "-")]
        for d in (_detail_lines(pairs, width - DETAIL_INDENT) if not wide else [DETAIL_SEP.join(pairs)] * bool(pairs)):
            out.append(Text(" " * DETAIL_INDENT + d, style="dim", overflow=None if wide else "fold"))
    for line in legend:
        out.append(Text(line, style="dim", overflow=None if wide else "fold"))
    return Group(*out)


def print_fitted(console: Console, table: Group, wide: bool = False) -> None:
    """Print a fitted table; with ``wide`` nothing is wrapped or cropped."""
    if wide:
        console.print(table, soft_wrap=True, crop=False)
    else:
        console.print(table)


def price_legend(marks: Iterable[str], lang: str) -> list[str]:
    """Legend lines for the price marks (``gpuplan.plan.record.price_mark``) a table used."""
    used = set(marks)
    return [tr(text, lang) for mark, text in PRICE_LEGEND.items() if mark in used]


# ------------------------------------------------------------------------------------------------ warnings

def said_once(lines: Sequence[str], names: Iterable[str], more: Callable[[int], str]) -> list[str]:
    """Warnings that repeat per plan, said once.

    Lines that are the same sentence up to the instance names in ``names`` and the numbers in them
    are merged: when only the names differ, one sentence lists every name; otherwise the first
    sentence is kept and ``more(n)`` (e.g. "(and 2 more like it)") is appended.
    """
    ordered = sorted({n for n in names if n}, key=len, reverse=True)
    groups: dict[str, list[tuple[str, list[str], str]]] = {}
    for line in lines:
        found, key = [], line
        for name in ordered:
            if name in key:
                found.append(name)
                key = key.replace(name, "\0")
        bare = key
        key = re.sub(r"\d[\d,.]*", "#", key)
        groups.setdefault(key, []).append((line, found, bare))
    out = []
    for items in groups.values():
        first, names0, bare0 = items[0]
        if len(items) == 1:
            out.append(first)
            continue
        all_names = list(dict.fromkeys(n for _, f, _ in items for n in f))
        if len(names0) == 1 and all(len(f) == 1 and b == bare0 for _, f, b in items):
            out.append(first.replace(names0[0], ", ".join(all_names)))
        else:
            out.append(first + " " + more(len(items) - 1))
    return out
