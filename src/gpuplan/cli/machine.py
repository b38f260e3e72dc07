"""Commands for the GPU machine itself: doctor (checks against a plan) and calibrate (measure, correct)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gpuplan.cli.common import JsonOpt, LangOpt, _console, _emit_json, _Exit, app, run_guarded
from gpuplan.cli.options import _I, _M, _P, _T, WorkloadArg, _load, workload_flags
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _


@app.command(help=N_("Check this GPU machine (driver, CUDA, NCCL, topology, bandwidth, TFLOPS) against its plan."
         "\n\nExit codes: 0 all checks pass, 1 warnings, 2 failures or no GPU."))
def doctor(
    plan: Annotated[Optional[Path], typer.Option("--plan", help=N_("A plan folder written by `gpuplan plan`."))] = None,
    bench: Annotated[bool, typer.Option("--bench", help=N_("Run the ~1 minute GPU micro-benchmarks."))] = False,
    instance_metadata: Annotated[bool, typer.Option("--instance-metadata",
                                                    help=N_("Read the ECS instance type from the metadata service."))] = False,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    def body(lg: str) -> int:
        from gpuplan.doctor import run_doctor

        return run_doctor(plan_dir=plan, bench=bench, as_json=as_json, lang=lg, instance_metadata=instance_metadata)

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command(help=N_("Measure a workload on this GPU (or read measurements) and correct later estimates for it."))
def calibrate(
    workload: WorkloadArg = None,
    from_file: Annotated[Optional[Path], typer.Option("--from", help=N_("Measurements CSV (the columns of "
                                                      "bench/data/measurements.csv)."))] = None,
    show: Annotated[bool, typer.Option("--show", help=N_("List the stored calibrations."))] = False,
    reset: Annotated[bool, typer.Option("--reset", help=N_("Remove every stored calibration."))] = False,
    steps: Annotated[int, typer.Option("--steps", help=N_("Timed training steps or generate calls."))] = 5,
    model: _M = None, task: _T = None, precision: _P = None, seq_len: _I = None, prompt_tokens: _I = None,
    output_tokens: _I = None, batch_size: _I = None,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    flags = workload_flags(model, task, precision, None, seq_len, prompt_tokens, output_tokens, batch_size,
                           None, None, None, None, None, None, None, None, None, None, None, None)

    def body(lg: str) -> int:
        from gpuplan import calibrate as cal
        from gpuplan.calibrate.render import print_result
        from gpuplan.estimate.calibration import overlay_path

        chosen = [bool(from_file), show, reset, workload is not None or bool(model)]
        if sum(chosen) != 1:
            raise GpuplanError(_("Give one of: a workload to profile, --from FILE.csv, --show or --reset."),
                               hint=_("E.g. `gpuplan calibrate --from measurements.csv` or `gpuplan calibrate --show`."))
        if reset:
            removed = cal.reset()
            if as_json:
                _emit_json({"schema_version": 1, "path": str(overlay_path()), "removed": removed})
            else:
                _console().print((_("Removed {path}.") if removed else _("No calibration stored ({path}).")).format(
                    path=overlay_path()), markup=False, highlight=False)
            return 0
        if show:
            entries = cal.show()
            if as_json:
                _emit_json({"schema_version": 1, "path": str(overlay_path()), "entries": [e.to_dict() for e in entries]})
            else:
                print_result(_console(), entries, str(overlay_path()), [], [], _("Stored calibrations"))
            return 0
        result = cal.calibrate_from_file(from_file) if from_file else cal.calibrate_here(_load(workload, flags), steps=steps)
        if as_json:
            _emit_json(result.to_dict())
        else:
            print_result(_console(), result.entries, str(result.path), result.notes, result.skipped,
                         _("New calibrations"))
        return 0

    raise _Exit(run_guarded(body, as_json, lang) or 0)
