"""`gpuplan check DIR`: the preflight of a plan bundle (exit 0: passes; exit 2: the findings name file and line)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gpuplan.cli.common import JsonOpt, LangOpt, _emit_json, _Exit, app, run_guarded
from gpuplan.i18n import N_


@app.command(help=N_("Read a plan bundle as the cloud and the node would: schemas, limits, provider arguments, "
                     "shell, registries, pins, storage and weights. Exit 0 when it passes, 2 with each "
                     "problem's file and line."))
def check(
    folder: Annotated[Path, typer.Argument(help=N_("The bundle folder `gpuplan plan --out` wrote."))],
    only: Annotated[Optional[str], typer.Option(
        "--only", help=N_("Run only these checks, comma-separated: scripts, schemas, kube, fc, terraform, mainland, pins, "
                       "storage, weights."))] = None,
    lang: LangOpt = None, as_json: JsonOpt = False,
) -> None:
    """Read a plan bundle as the cloud and the node would: schemas, limits, provider arguments, shell, registries,
    pins, storage and weights. Exit 0 when it passes, 2 with each problem's file and line."""

    def body(lg: str) -> int:
        import sys

        from gpuplan.check import CHECKS, check_bundle
        from gpuplan.check.render import report_text
        from gpuplan.errors import GpuplanError
        from gpuplan.i18n import _

        names = tuple(n.strip() for n in (only or "").split(",") if n.strip()) or None
        known = [n for n, _run in CHECKS]
        unknown = [n for n in names or () if n not in known]
        if unknown:
            raise GpuplanError(_("Unknown check {name}.").format(name=unknown[0]),
                               hint=_("Use one of: {names}.").format(names=", ".join(known)))
        report = check_bundle(folder, only=names)
        if as_json:
            _emit_json(report.to_dict())
        else:
            (sys.stdout if report.ok else sys.stderr).write(report_text(report) + "\n")
        return 0 if report.ok else 2

    raise _Exit(run_guarded(body, as_json, lang) or 0)
