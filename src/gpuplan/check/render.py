"""The preflight's report as text: one ``file:line: message`` per finding, then the notes."""

from __future__ import annotations

from gpuplan.check import Report
from gpuplan.i18n import _


def report_text(report: Report) -> str:
    lines = []
    if report.ok:
        lines.append(_("Preflight passed: {path} ({n} files read as the cloud and the node would).").format(
            path=report.path, n=report.checked_files))
    else:
        lines.append(_("Preflight failed: {path} has {n} problem(s):").format(path=report.path, n=len(report.findings)))
        lines += [f"  {f.render()}" for f in report.findings]
    if report.notes:
        lines.append(_("Not checked:"))
        lines += [f"  {n}" for n in report.notes]
    return "\n".join(lines)
