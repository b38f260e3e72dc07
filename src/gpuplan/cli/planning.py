"""Workload commands: estimate (one workload or a JSON Lines batch), recommend, quick and compare."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from gpuplan.cli.common import (JsonOpt, LangOpt, WideOpt, _console, _emit_json, _Exit, _json_default, app,
                                run_guarded)
from gpuplan.cli.options import _F, _I, _M, _P, _Q, _R, _S, _T, WorkloadArg, _load, workload_flags
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _


_GS = Annotated[Optional[str], typer.Option("--gpu-spec", help=N_("A GPU the catalog lacks: a YAML/JSON file or "
                                         "name=...,memory_gib=...,bf16_dense_tflops=...,mem_bandwidth_gb_s=... "
                                         "(docs/workload.md)."))]


def _gpu_spec_flag(flags: dict[str, Any], text: str | None) -> None:
    """--gpu-spec: the inline GPU goes where --gpu would (hardware.gpu)."""
    if text:
        from gpuplan.catalog.hardware.gpu_inline import parse_gpu_spec_arg

        flags["gpu"] = parse_gpu_spec_arg(text)


@app.command(help=N_("Memory, time and throughput of a workload on fixed hardware."))
def estimate(
    workload: WorkloadArg = None, model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None,
    seq_len: _I = None, prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None,
    gpu: _S = None, gpus: _I = None, tp: _I = None, pp: _I = None, zero: _I = None, budget: _F = None,
    deadline_hours: _F = None, region: _R = None, objective: _S = None, framework: _S = None,
    instance_type: _S = None, grad_checkpointing: _S = None, gpu_spec: _GS = None,
    max_: Annotated[Optional[str], typer.Option("--max", help=N_("batch_size | seq_len | prompt_tokens | concurrency"))] = None,
    trace: Annotated[bool, typer.Option("--trace", help=N_("Exact counts on torch meta/fake tensors (gpuplan[trace])."))] = False,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens, batch_size,
                           gpu, gpus, tp, pp, zero, budget, deadline_hours, region, objective, framework,
                           instance_type, grad_checkpointing)

    def body(lg: str) -> int:
        from gpuplan.files.workload_files import read_workload_documents

        _gpu_spec_flag(flags, gpu_spec)

        if workload is not None and max_ is None and not trace:
            docs = read_workload_documents(workload)
            if isinstance(docs, list):
                return _estimate_many(docs, flags)
        w = _load(workload, flags)
        if max_:
            from gpuplan.estimate.max_fit import max_fit

            value, est = max_fit(w, max_)
            # the larger value that runs only by freeing the allocator's cache (slower, no headroom), if any
            loose, _loose_est = max_fit(w, max_, clean=False) if max_ != "concurrency" else (value, est)
            out = {"schema_version": 1, "max": max_, "value": value, "estimate": est.to_dict() if est else None,
                   "value_freeing_cache": loose if loose > value else None}
            if as_json:
                _emit_json(out)
            else:
                c = _console()
                c.print(_("Largest {field} that fits: [bold]{value}[/bold]").format(field=max_, value=value))
                if loose > value:
                    c.print(_("Up to {value} runs only by freeing the allocator's cache: slower, no headroom.").format(
                        value=loose), highlight=False)
                if est:
                    from gpuplan.render.text import print_estimate

                    print_estimate(c, est.to_dict(), lg)
            return 0
        if trace:
            from gpuplan.estimate.tracing.trace import trace_estimate

            result = trace_estimate(w)
            if as_json:
                _emit_json(result)
            else:
                _console().print_json(data=result)
            return 0
        from gpuplan.estimate.core import estimate as run_estimate

        est = run_estimate(w)
        d = est.to_dict()
        if as_json:
            _emit_json(d)
        else:
            from gpuplan.render.text import print_estimate

            print_estimate(_console(), d, lg)
        return 0

    code = run_guarded(body, as_json, lang)
    raise _Exit(code or 0)


def _estimate_many(docs: list, flags: dict[str, Any]) -> int:
    """JSON Lines: one compact result per workload, in order; errors per line."""
    from gpuplan.estimate.core import estimate as run_estimate
    from gpuplan.workload import parse_workload
    from gpuplan.workload_loading import apply_overrides

    failed = 0
    for doc in docs:
        try:
            data = apply_overrides(doc, flags) if isinstance(doc, dict) else doc
            w = parse_workload(data)
            line = run_estimate(w).to_dict()
        except GpuplanError as err:
            failed += 1
            line = err.to_dict()
        sys.stdout.write(json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=_json_default) + "\n")
    return 1 if failed else 0


@app.command(help=N_("Ranked instance plans for a workload: cost, time, memory, storage and network advice."))
def recommend(
    workload: WorkloadArg = None, model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None,
    seq_len: _I = None, prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None,
    gpu: _S = None, gpus: _I = None, tp: _I = None, pp: _I = None, zero: _I = None, budget: _F = None,
    deadline_hours: _F = None, region: _R = None, objective: _S = None, framework: _S = None,
    instance_type: _S = None, grad_checkpointing: _S = None, gpu_spec: _GS = None,
    top: Annotated[int, typer.Option(help=N_("How many plans to show."))] = 5,
    prices: Annotated[Optional[list[Path]], typer.Option("--prices", help=N_("Your own price file (same schema; repeatable)."))] = None,
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens, batch_size,
                           gpu, gpus, tp, pp, zero, budget, deadline_hours, region, objective, framework,
                           instance_type, grad_checkpointing)

    def body(lg: str) -> int:
        from gpuplan.plan import recommend as run_recommend

        if not (1 <= top <= 100):
            raise GpuplanError(_("--top {top} is out of range.").format(top=top), hint=_("Use 1 to 100."))
        _gpu_spec_flag(flags, gpu_spec)
        w = _load(workload, flags)
        rec = run_recommend(w, top=top, price_files=tuple(prices or ()))
        if as_json:
            _emit_json(rec.to_dict())
        else:
            from gpuplan.render.recommend import render_recommendation

            render_recommendation(rec, _console(), lg, wide=wide)
        return 0 if rec.plans else 1

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command(help=N_("The guides' decision tree by parameter count, answered by the estimators."))
def quick(
    params: Annotated[str, typer.Option("--params", help=N_("Model size, e.g. 7B, 70B, 350M."))],
    task: Annotated[str, typer.Option(help=N_("pretrain | full | lora | qlora | inference (infer)"))] = "lora",
    seq_len: _I = None,
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    def body(lg: str) -> int:
        from gpuplan.plan import quick as run_quick

        res = run_quick(params, task, seq_len=seq_len)
        if as_json:
            _emit_json(res.to_dict())
        else:
            from gpuplan.render.recommend import render_quick

            render_quick(res, _console(), lg, wide=wide)
        return 0

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command(help=N_("Best plan per cloud (Alibaba, AWS, Tencent) with time, cost and cost per million tokens."))
def compare(
    workload: WorkloadArg = None, model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None,
    seq_len: _I = None, prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None,
    budget: _F = None, deadline_hours: _F = None, objective: _S = None, framework: _S = None,
    currency: Annotated[str, typer.Option(help=N_("CNY or USD for the comparison."))] = "CNY",
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens, batch_size,
                           None, None, None, None, None, budget, deadline_hours, None, objective, framework,
                           None, None)

    def body(lg: str) -> int:
        from gpuplan.plan.compare import compare_clouds
        from gpuplan.render.compare import render_comparison

        w = _load(workload, flags)
        result = compare_clouds(w, currency=currency.upper())
        if as_json:
            _emit_json(result)
        else:
            render_comparison(result, _console(), lg, wide=wide)
        return 0 if any(r.get("plan") for r in result["clouds"]) else 1

    raise _Exit(run_guarded(body, as_json, lang) or 0)
