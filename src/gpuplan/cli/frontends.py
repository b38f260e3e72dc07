"""The other ways in: `ask` (the question wizard, writes a workload file) and `serve` (web page and REST API)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from gpuplan.cli.common import JsonOpt, LangOpt, _console, _emit_json, _Exit, app, run_guarded
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _


@app.command(help=N_("Answer the guides' questions (task, model, data or traffic, deadline or SLA, budget) and get a "
         "plan."
         "\n\nOn a terminal it asks one question at a time and asks again after a bad answer. Otherwise it "
         "reads one answer per line: task, model, then for training: dataset samples, tokens per sample, "
         "epochs, deadline hours, budget; for inference: quantization, online or batch, then (online) "
         "requests/s, concurrent requests, prompt tokens, output tokens, TTFT target in ms, budget, or "
         "(batch) requests to process, prompt tokens, output tokens, deadline hours, budget. An empty line"
         " takes the default. Every answer is checked as it is given (the model must exist); the workload "
         "file is written only at the end, once the whole workload has been checked and planned."))
def ask(
    out: Annotated[Optional[Path], typer.Option("--out", help=N_("Where to write the workload YAML (default: workload.yaml, "
                                                "or workload-N.yaml when that exists)."))] = None,
    top: Annotated[int, typer.Option(help=N_("How many plans to show."))] = 5,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:

    def body(lg: str) -> int:
        from gpuplan.ask import ask_lines, ask_terminal, build_workload
        from gpuplan.i18n import tr
        from gpuplan.plan import recommend as run_recommend
        from gpuplan.files.workload_files import dump_workload_yaml
        from gpuplan.workload_loading import load_workload

        if not (1 <= top <= 100):
            raise GpuplanError(_("--top {top} is out of range.").format(top=top), hint=_("Use 1 to 100."))
        interactive = sys.stdin.isatty() and not as_json
        answers = ask_terminal(lg, Console()) if interactive else ask_lines(sys.stdin, lg)
        data = build_workload(answers)
        w = load_workload(data)
        rec = run_recommend(w, top=top)
        path = out or _free_path(Path("workload.yaml"))
        try:
            path.write_text(dump_workload_yaml(data), encoding="utf-8")
        except OSError as err:
            raise GpuplanError(_("Cannot write {path!r}: {strerror}.").format(path=str(path), strerror=err.strerror), hint=_("Pass --out with a writable path.")) from None
        if as_json:
            _emit_json({**rec.to_dict(), "workload_file": str(path)})
        else:
            c = _console()
            c.print(tr("Wrote the workload to {path}.", lg).format(path=path), highlight=False, markup=False)
            from gpuplan.render.recommend import render_recommendation

            render_recommendation(rec, c, lg)
            c.print(tr("Plan it again with: gpuplan recommend {path}", lg).format(path=path), highlight=False,
                    markup=False)
        return 0 if rec.plans else 1

    raise _Exit(run_guarded(body, as_json, lang) or 0)


def _free_path(path: Path) -> Path:
    """`path`, or path-2, path-3... when it exists: the wizard never overwrites a file it was not told to."""
    n = 2
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


@app.command(help=N_("Run the web page and REST API (extra gpuplan[web])."))
def serve(host: Annotated[str, typer.Option(help=N_("Address to bind (default loopback only)."))] = "127.0.0.1",
          port: Annotated[int, typer.Option(help=N_("TCP port."))] = 8000) -> None:
    def body(lg: str) -> int:
        if not (1 <= port <= 65535):
            raise GpuplanError(_("Port {port} is out of range.").format(port=port), hint=_("Use 1-65535, e.g. 8000."))
        from gpuplan.api import serve as run_server

        run_server(host, port)
        return 0

    raise _Exit(run_guarded(body, False, None) or 0)
