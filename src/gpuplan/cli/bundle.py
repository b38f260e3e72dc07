"""`gpuplan plan`: write the launch, infrastructure and monitoring files of one plan."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from gpuplan.cli.common import JsonOpt, LangOpt, _console, _emit_json, _Exit, app, run_guarded
from gpuplan.cli.options import _F, _I, _M, _P, _Q, _R, _S, _T, _load, workload_flags
from gpuplan.i18n import N_, _


@app.command(help=N_("Write launch, infrastructure and monitoring files for the chosen plan (a ranked pick, or your "
                     "pins), then check them as the cloud and the node would: exit 1 when a check fails (the files "
                     "stay for you to read)."))
def plan(
    workload: Annotated[Path, typer.Argument(help=N_("Workload YAML/JSON file."))],
    out: Annotated[Path, typer.Option("--out", help=N_("New folder for the bundle."))],
    pick: Annotated[int, typer.Option("--pick", "--rank", help=N_("Which ranked plan to write (1 = best)."))] = 1,
    force: Annotated[bool, typer.Option("--force", help=N_("Replace an existing folder."))] = False,
    instance_type: Annotated[Optional[str], typer.Option(help=N_("Pin the instance type (e.g. ecs.gn7i-c8g1.2xlarge)."))] = None,
    gpus: Annotated[Optional[int], typer.Option(help=N_("Pin the number of GPUs in total."))] = None,
    tp: Annotated[Optional[int], typer.Option(help=N_("Pin the tensor-parallel size."))] = None,
    pp: Annotated[Optional[int], typer.Option(help=N_("Pin the pipeline-parallel size."))] = None,
    micro_batch: Annotated[Optional[int], typer.Option(help=N_("Pin the micro-batch per GPU (training) or the "
                                                             "concurrent sequences (serving)."))] = None,
    model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None, seq_len: _I = None,
    prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None, budget: _F = None,
    deadline_hours: _F = None, region: _R = None, objective: _S = None,
    lang: LangOpt = None, as_json: JsonOpt = False,
) -> None:
    pins = {"instance_type": instance_type, "gpus": gpus, "tp": tp, "pp": pp, "micro_batch": micro_batch}

    def body(lg: str) -> int:
        from gpuplan.plan.bundle import pin_batch_size
        from gpuplan.write_bundle import write_plan_bundle

        flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens,
                               pin_batch_size(batch_size, micro_batch), None, None, None, None, None, budget,
                               deadline_hours, region, objective, None, None, None)
        path, summary = write_plan_bundle(_load(workload, flags), out, pick=pick, force=force, lang=lg,
                                          pins={k: v for k, v in pins.items() if v is not None})
        report = summary["check"]
        if as_json:
            _emit_json({"schema_version": 1, "out": str(path), **summary})
        else:
            import sys

            from gpuplan.check import Report
            from gpuplan.check.bundle import Finding
            from gpuplan.check.render import report_text

            _console().print(_("Wrote {n} files to [bold]{path}[/bold] ({instance_type} x {count}).").format(
                n=summary.get("files_count", ""), path=path, instance_type=summary.get("instance_type"),
                count=summary.get("instance_count")))
            text = report_text(Report(str(path), tuple(Finding(**f) for f in report["findings"]),
                                      tuple(report["notes"]), report["checked_files"]))
            (sys.stdout if report["ok"] else sys.stderr).write(text + "\n")
        return 0 if report["ok"] else 1   # written, but not proven: like recommend finding no plan (2 = bad input)

    raise _Exit(run_guarded(body, as_json, lang) or 0)
