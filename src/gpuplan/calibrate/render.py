"""Terminal output of `gpuplan calibrate`: the overlay's entries as a table, then notes and skipped rows."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuplan.estimate.calibration import Calibration, fmt_value
from gpuplan.i18n import _


def entries_table(entries: list[Calibration], title: str) -> Table:
    t = Table(title=title)
    for col, right in ((_("GPU"), False), (_("Framework"), False), (_("Workload"), False), (_("Factor"), True),
                       (_("Measured"), True), (_("Default"), True), (_("Runs"), True), (_("Date"), False),
                       (_("Source"), False)):
        t.add_column(col, justify="right" if right else "left")
    for e in entries:
        t.add_row(e.gpu, e.framework, e.workload_class, f"x{e.factor:.2f}", f"{fmt_value(e.measured)} {e.metric}",
                  fmt_value(e.default), str(e.runs), e.date, _("this machine") if e.source == "this machine" else e.source)
    return t


def memory_lines(entries: list[Calibration]) -> list[str]:
    out = []
    for e in entries:
        m = e.memory
        if "measured_allocated_gib" in m:
            out.append(_("{gpu} / {framework} / {workload}: peak allocated {measured:.2f} GiB measured vs {estimated:.2f} "
                         "GiB estimated").format(gpu=e.gpu, framework=e.framework, workload=e.workload_class,
                                                 measured=m["measured_allocated_gib"], estimated=m["estimated_allocated_gib"]))
        if "measured_reserved_gib" in m:
            out.append(_("{gpu} / {framework} / {workload}: peak reserved {measured:.2f} GiB measured vs {estimated:.2f} "
                         "GiB estimated").format(gpu=e.gpu, framework=e.framework, workload=e.workload_class,
                                                 measured=m["measured_reserved_gib"], estimated=m["estimated_reserved_gib"]))
        if "measured_gib" in m:
            out.append(_("{gpu} / {framework} / {workload}: peak memory {measured:.2f} GiB measured vs {estimated:.2f} "
                         "GiB estimated").format(gpu=e.gpu, framework=e.framework, workload=e.workload_class,
                                                 measured=m["measured_gib"], estimated=m["estimated_gib"]))
    return out


def print_result(console: Console, entries: list[Calibration], path: str, notes: list[str], skipped: list[str],
                 title: str) -> None:
    if entries:
        console.print(entries_table(entries, title))
    for line in memory_lines(entries):
        console.print("  " + line, markup=False, highlight=False)
    for line in notes:
        console.print("  " + line, markup=False, highlight=False)
    if skipped:
        console.print(_("Skipped {n} row(s):").format(n=len(skipped)))
        for line in skipped:
            console.print("  - " + line, markup=False, highlight=False)
    console.print(_("Overlay: {path}").format(path=path), markup=False, highlight=False)
