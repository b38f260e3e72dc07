"""The `gpuplan` command line: thin typer commands over the Python API.

Every command takes `--json` (machine output, stable keys) and `--lang zh|en` (human text only).
User errors print one line and a hint and exit 2 (JSON: {"error", "hint"} on stdout); never a
traceback (set GPUPLAN_DEBUG=1 to see one). Heavy modules are imported inside the commands so
that `gpuplan gpus` starts fast and never imports torch.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from gpuplan import __version__
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Plan cloud GPU instances (Alibaba Cloud first) for training and serving models.")
catalog_app = typer.Typer(no_args_is_help=True, help="Bundled and refreshed catalog data.")
app.add_typer(catalog_app, name="catalog")

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
LangOpt = Annotated[Optional[str], typer.Option("--lang", help="zh or en (default: from the locale).")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Every table column, however wide the terminal.")]


class _Exit(Exception):
    def __init__(self, code: int):
        self.code = code


def _lang(lang: str | None) -> str:
    from gpuplan.i18n import default_lang

    if lang is None:
        return default_lang()
    low = lang.lower()
    if low not in ("zh", "en", "zh-cn", "zh_cn"):
        raise GpuplanError(_("Unknown language {lang!r}.").format(lang=lang), hint=_("Use --lang zh or --lang en."))
    return "zh" if low.startswith("zh") else "en"


def _console() -> Console:
    """The terminal's width; COLUMNS when set (also when piped); 160 for a pipe without COLUMNS."""
    probe = Console()
    return Console(soft_wrap=False, width=probe.width if probe.is_terminal or os.environ.get("COLUMNS") else 160)


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    from gpuplan.schemas import json_default

    return json_default(o)


def _fail(err: GpuplanError, as_json: bool, lang: str = "en") -> None:
    from rich.markup import escape

    from gpuplan.i18n import tr

    if as_json:
        _emit_json(err.to_dict("cli"))
    else:
        err_console = Console(stderr=True, soft_wrap=True)  # one line per message, never wrapped
        err_console.print(f"[bold red]{tr('Error', lang)}:[/bold red] {escape(err.message)}", highlight=False, markup=True)
        hint = err.hint_for("cli")
        if hint:
            err_console.print(f"[yellow]{tr('Hint', lang)}:[/yellow] {escape(hint)}", highlight=False)
    raise _Exit(2)


def run_guarded(fn, as_json: bool, lang_opt: str | None):
    """Run a command body; turn GpuplanError into one line + hint and exit code 2."""
    from gpuplan.i18n import use_lang, use_surface

    lang = "en"
    try:
        lang = _lang(lang_opt)
        # JSON values never change with --lang: messages made deep inside (`_()`) stay English there.
        with use_lang("en" if as_json else lang), use_surface("cli"):
            return fn(lang)
    except GpuplanError as err:
        _fail(err, as_json, lang)


def _version_cb(value: bool) -> None:
    if value:
        typer.echo(f"gpuplan {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[Optional[bool], typer.Option("--version", callback=_version_cb, is_eager=True,
                                                          help="Show the version and exit.")] = None) -> None:
    """gpuplan: which GPU instances, how many, configured how, for how long and at what cost."""


# ------------------------------------------------------------------------------------------------
# Catalog listings
# ------------------------------------------------------------------------------------------------

@app.command()
def gpus(as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """List the GPUs in the catalog (dense tensor figures, with sources)."""
    def body(lg: str) -> None:
        from gpuplan.catalog.gpus import load_gpus

        items = list(load_gpus().values())
        if as_json:
            _emit_json({"schema_version": 1, "gpus": [g.to_dict() for g in items]})
            return
        from gpuplan.render.text import gpus_table

        _console().print(gpus_table(items, lg))
    run_guarded(body, as_json, lang)


@app.command()
def instances(
    family: Annotated[Optional[str], typer.Option(help="Instance family, e.g. gn7i.")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="GPU name, e.g. A10 or A100-80GB.")] = None,
    min_gpu_memory: Annotated[Optional[float], typer.Option("--min-gpu-memory", help="Minimum GiB per GPU.")] = None,
    region: Annotated[Optional[str], typer.Option(help="Keep types with a known price in this region.")] = None,
    cloud: Annotated[str, typer.Option(help="alibaba, aws or tencent.")] = "alibaba",
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    """List instance types, filtered by family, GPU, GPU memory or region."""
    def body(lg: str) -> None:
        from gpuplan.catalog.query import filter_instances
        from gpuplan.catalog.prices import basis_label, load_offers
        from gpuplan.plan.record import price_mark

        if min_gpu_memory is not None and not (0 < min_gpu_memory <= 4096):
            raise GpuplanError(_("--min-gpu-memory {min_gpu_memory} is out of range.").format(min_gpu_memory=min_gpu_memory), hint=_("Give GiB per GPU, e.g. 48."))
        items = filter_instances(cloud=cloud, family=family, gpu=gpu, min_gpu_memory_gib=min_gpu_memory, region=region)
        from gpuplan.catalog.instances import default_region

        shown = (region or default_region(cloud) or "").strip().lower()   # one region's prices, never a mix
        offers = [o for o in load_offers(cloud=cloud) if o.billing == "payg" and (not shown or o.region == shown)]
        price: dict[str, tuple[str, str]] = {}      # table: (price with its mark, region and date)
        payg_text: dict[str, str] = {}               # JSON: one string
        for o in sorted(offers, key=lambda o: o.as_of):
            where = _("{region}, {date}, {basis}").format(region=o.region, date=o.as_of.isoformat(),
                                                          basis=basis_label(o))
            payg_text[o.instance_type] = f"{o.currency} {o.price_per_hour:,.2f}/h ({where})"
            mark = price_mark("estimated" if o.estimated else o.kind)   # ~ for a derived or guessed price
            price[o.instance_type] = (f"{o.currency} {o.price_per_hour:,.2f}/h{mark}", where)
        if as_json:
            recs = []
            for i in items:
                d = i.to_dict()
                d["price_payg"] = payg_text.get(i.instance_type)
                recs.append(d)
            _emit_json({"schema_version": 1, "instances": recs})
            return
        if not items:
            _console().print(_("No instance types match."))
            return
        from gpuplan.render.fit import print_fitted
        from gpuplan.render.text import instances_table

        console = _console()
        print_fitted(console, instances_table(items, lg, prices=price, width=console.width, wide=wide), wide)
    run_guarded(body, as_json, lang)


@app.command()
def models(kind: Annotated[Optional[str], typer.Option(help="decoder, encoder, vision, diffusion, speech...")] = None,
           as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """List the bundled models."""
    def body(lg: str) -> None:
        from gpuplan.catalog.models import list_models

        items = list_models(kind) if kind else list_models()
        if as_json:
            _emit_json({"schema_version": 1, "models": [m.to_dict() for m in items]})
            return
        from gpuplan.render.text import models_table

        _console().print(models_table(items, lg))
    run_guarded(body, as_json, lang)


@app.command()
def show(name: Annotated[str, typer.Argument(help="A GPU, instance type, family or model.")],
         as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Show one GPU, instance type, family or model with its sources."""
    def body(lg: str) -> None:
        from gpuplan.catalog.lookup import find_any

        kind, record = find_any(name)
        if as_json:
            _emit_json({"schema_version": 1, "kind": kind, kind: record})
            return
        from gpuplan.render.text import record_table

        _console().print(record_table(_("{kind}: {name}").format(kind=_(kind), name=name), record, lg))
    run_guarded(body, as_json, lang)


@app.command()
def schema(which: Annotated[str, typer.Argument(help="workload, estimate or recommend")] = "workload",
           as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Print the JSON Schema of the workload (or of an output).

    The output is always JSON (``--json`` is accepted like on every command). Keys and structure never
    change; ``--lang zh`` gives the properties Chinese titles and Chinese error messages.
    """
    def body(lg: str) -> None:
        from gpuplan.schemas import localized_schema, schema_for

        _emit_json(localized_schema(schema_for(which), lg if lang else "en"))   # the locale alone keeps English
    run_guarded(body, as_json, lang)


# ------------------------------------------------------------------------------------------------
# Workload commands
# ------------------------------------------------------------------------------------------------

_SHOW_KINDS = (N_("instance"), N_("family"), N_("gpu"), N_("model"))   # `show`'s title: "{kind}: {name}"
WorkloadArg = Annotated[Optional[Path], typer.Argument(help="Workload YAML/JSON file (flags override it).")]


def workload_flags(
    model: Optional[str], task: Optional[str], precision: Optional[str], quantization: Optional[str],
    seq_len: Optional[int], prompt_tokens: Optional[int], output_tokens: Optional[int], batch_size: Optional[int],
    gpu: Optional[str], gpus: Optional[int], tp: Optional[int], pp: Optional[int], zero: Optional[int],
    budget: Optional[float], deadline_hours: Optional[float], region: Optional[list[str]], objective: Optional[str],
    framework: Optional[str], instance_type: Optional[str], grad_checkpointing: Optional[str],
) -> dict[str, Any]:
    return {"model": model, "task": task, "precision": precision, "quantization": quantization, "seq_len": seq_len,
            "prompt_tokens": prompt_tokens, "output_tokens": output_tokens, "batch_size": batch_size, "gpu": gpu,
            "gpus": gpus, "tp": tp, "pp": pp, "zero": zero, "budget": budget, "deadline_hours": deadline_hours,
            "region": region or None, "objective": objective, "framework": framework, "instance_type": instance_type,
            "grad_checkpointing": grad_checkpointing}


def _load(path: Path | None, flags: dict[str, Any]):
    from gpuplan.workload import load_workload

    if path is None:
        if not flags.get("model"):
            raise GpuplanError(_("No workload given."), hint=_("Pass a workload file or at least --model NAME "
                                                            "(e.g. `gpuplan estimate --model qwen2.5-7b --task lora --gpu A10`)."))
        return load_workload({}, **flags)
    return load_workload(path, **flags)


_M = Annotated[Optional[str], typer.Option(help="Model id, alias, config.json path.")]
_T = Annotated[Optional[str], typer.Option(help="inference | pretrain | full | lora | qlora")]
_P = Annotated[Optional[str], typer.Option(help="fp32 | fp16 | bf16 | fp8")]
_Q = Annotated[Optional[str], typer.Option(help="none | int8 | int4 | gptq-int4 | awq | fp8 | bnb-nf4 ...")]
_I = Annotated[Optional[int], typer.Option()]
_F = Annotated[Optional[float], typer.Option()]
_S = Annotated[Optional[str], typer.Option()]
_R = Annotated[Optional[list[str]], typer.Option("--region", help="Region (repeatable).")]


@app.command()
def estimate(
    workload: WorkloadArg = None, model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None,
    seq_len: _I = None, prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None,
    gpu: _S = None, gpus: _I = None, tp: _I = None, pp: _I = None, zero: _I = None, budget: _F = None,
    deadline_hours: _F = None, region: _R = None, objective: _S = None, framework: _S = None,
    instance_type: _S = None, grad_checkpointing: _S = None,
    max_: Annotated[Optional[str], typer.Option("--max", help="batch_size | seq_len | prompt_tokens | concurrency")] = None,
    trace: Annotated[bool, typer.Option("--trace", help="Exact counts on torch meta/fake tensors (gpuplan[trace]).")] = False,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Memory, time and throughput of a workload on fixed hardware."""
    flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens, batch_size,
                           gpu, gpus, tp, pp, zero, budget, deadline_hours, region, objective, framework,
                           instance_type, grad_checkpointing)

    def body(lg: str) -> int:
        from gpuplan.workload import read_workload_documents

        if workload is not None and max_ is None and not trace:
            docs = read_workload_documents(workload)
            if isinstance(docs, list):
                return _estimate_many(docs, flags)
        w = _load(workload, flags)
        if max_:
            from gpuplan.estimate.core import max_fit

            value, est = max_fit(w, max_)
            out = {"schema_version": 1, "max": max_, "value": value,
                   "estimate": est.to_dict() if est else None}
            if as_json:
                _emit_json(out)
            else:
                c = _console()
                c.print(_("Largest {field} that fits: [bold]{value}[/bold]").format(field=max_, value=value))
                if est:
                    from gpuplan.render.text import print_estimate

                    print_estimate(c, est.to_dict(), lg)
            return 0
        if trace:
            from gpuplan.estimate.trace import trace_estimate

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
    from gpuplan.workload import apply_overrides, parse_workload

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


@app.command()
def recommend(
    workload: WorkloadArg = None, model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None,
    seq_len: _I = None, prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None,
    gpu: _S = None, gpus: _I = None, tp: _I = None, pp: _I = None, zero: _I = None, budget: _F = None,
    deadline_hours: _F = None, region: _R = None, objective: _S = None, framework: _S = None,
    instance_type: _S = None, grad_checkpointing: _S = None,
    top: Annotated[int, typer.Option(help="How many plans to show.")] = 5,
    prices: Annotated[Optional[list[Path]], typer.Option("--prices", help="Your own price file (same schema; repeatable).")] = None,
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    """Ranked instance plans for a workload: cost, time, memory, storage and network advice."""
    flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens, batch_size,
                           gpu, gpus, tp, pp, zero, budget, deadline_hours, region, objective, framework,
                           instance_type, grad_checkpointing)

    def body(lg: str) -> int:
        from gpuplan.plan import recommend as run_recommend

        if not (1 <= top <= 100):
            raise GpuplanError(_("--top {top} is out of range.").format(top=top), hint=_("Use 1 to 100."))
        w = _load(workload, flags)
        rec = run_recommend(w, top=top, price_files=tuple(prices or ()))
        if as_json:
            _emit_json(rec.to_dict())
        else:
            from gpuplan.render.recommend import render_recommendation

            render_recommendation(rec, _console(), lg, wide=wide)
        return 0 if rec.plans else 1

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command()
def quick(
    params: Annotated[str, typer.Option("--params", help="Model size, e.g. 7B, 70B, 350M.")],
    task: Annotated[str, typer.Option(help="train | finetune | lora | qlora | infer")] = "lora",
    seq_len: _I = None,
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    """The guides' decision tree by parameter count, answered by the estimators."""
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


@app.command()
def compare(
    workload: WorkloadArg = None, model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None,
    seq_len: _I = None, prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None,
    budget: _F = None, deadline_hours: _F = None, objective: _S = None, framework: _S = None,
    currency: Annotated[str, typer.Option(help="CNY or USD for the comparison.")] = "CNY",
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    """Best plan per cloud (Alibaba, AWS, Tencent) with time, cost and cost per million tokens."""
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


@app.command()
def doctor(
    plan: Annotated[Optional[Path], typer.Option("--plan", help="A plan folder written by `gpuplan plan`.")] = None,
    bench: Annotated[bool, typer.Option("--bench", help="Run the ~1 minute GPU micro-benchmarks.")] = False,
    instance_metadata: Annotated[bool, typer.Option("--instance-metadata",
                                                    help="Read the ECS instance type from the metadata service.")] = False,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Check this GPU machine (driver, CUDA, NCCL, topology, bandwidth, TFLOPS) against its plan.

    Exit codes: 0 all checks pass, 1 warnings, 2 failures or no GPU.
    """
    def body(lg: str) -> int:
        from gpuplan.doctor import run_doctor

        return run_doctor(plan_dir=plan, bench=bench, as_json=as_json, lang=lg, instance_metadata=instance_metadata)

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command()
def calibrate(
    workload: WorkloadArg = None,
    from_file: Annotated[Optional[Path], typer.Option("--from", help="Measurements CSV (the columns of "
                                                      "bench/data/measurements.csv).")] = None,
    show: Annotated[bool, typer.Option("--show", help="List the stored calibrations.")] = False,
    reset: Annotated[bool, typer.Option("--reset", help="Remove every stored calibration.")] = False,
    steps: Annotated[int, typer.Option("--steps", help="Timed training steps or generate calls.")] = 5,
    model: _M = None, task: _T = None, precision: _P = None, seq_len: _I = None, prompt_tokens: _I = None,
    output_tokens: _I = None, batch_size: _I = None,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Measure a workload on this GPU (or read measurements) and correct later estimates for it."""
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


@catalog_app.command("refresh")
def catalog_refresh(
    region: _R = None,
    all_regions: Annotated[bool, typer.Option("--all-regions", help="Every region the account can see.")] = False,
    cloud: Annotated[str, typer.Option(help="alibaba or aws.")] = "alibaba",
    timeout: Annotated[float, typer.Option("--timeout", help="Give up after this many seconds (no retry starts "
                                                             "later).")] = 180.0,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Fetch live instance types, stock and prices (Alibaba Cloud OpenAPI) into the local cache."""
    def body(lg: str) -> int:
        from gpuplan.providers import refresh

        if not (1 <= timeout <= 3600):
            raise GpuplanError(_("--timeout {timeout:g} is out of range.").format(timeout=timeout), hint=_("Give 1 to 3600 seconds."))
        return refresh(regions=list(region) if region else None, all_regions=all_regions, cloud=cloud,
                       as_json=as_json, timeout_s=timeout)

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@catalog_app.command("status")
def catalog_status(as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Show, per source, the date and coverage of the catalog and prices in use."""
    def body(lg: str) -> int:
        from gpuplan.providers import print_status

        return print_status(as_json=as_json)

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command()
def plan(
    workload: Annotated[Path, typer.Argument(help="Workload YAML/JSON file.")],
    out: Annotated[Path, typer.Option("--out", help="New folder for the bundle.")],
    pick: Annotated[int, typer.Option("--pick", "--rank", help="Which ranked plan to write (1 = best).")] = 1,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing folder.")] = False,
    instance_type: Annotated[Optional[str], typer.Option(help="Pin the instance type (e.g. ecs.gn7i-c8g1.2xlarge).")] = None,
    gpus: Annotated[Optional[int], typer.Option(help="Pin the number of GPUs in total.")] = None,
    tp: Annotated[Optional[int], typer.Option(help="Pin the tensor-parallel size.")] = None,
    pp: Annotated[Optional[int], typer.Option(help="Pin the pipeline-parallel size.")] = None,
    micro_batch: Annotated[Optional[int], typer.Option(help="Pin the micro-batch per GPU (training) or the "
                                                             "concurrent sequences (serving).")] = None,
    model: _M = None, task: _T = None, precision: _P = None, quantization: _Q = None, seq_len: _I = None,
    prompt_tokens: _I = None, output_tokens: _I = None, batch_size: _I = None, budget: _F = None,
    deadline_hours: _F = None, region: _R = None, objective: _S = None,
    lang: LangOpt = None, as_json: JsonOpt = False,
) -> None:
    """Write launch, infrastructure and monitoring files for the chosen plan (a ranked pick, or your pins)."""
    pins = {"instance_type": instance_type, "gpus": gpus, "tp": tp, "pp": pp, "micro_batch": micro_batch}

    def body(lg: str) -> int:
        from gpuplan.plan.bundle import pin_batch_size
        from gpuplan.write_bundle import write_plan_bundle

        flags = workload_flags(model, task, precision, quantization, seq_len, prompt_tokens, output_tokens,
                               pin_batch_size(batch_size, micro_batch), None, None, None, None, None, budget,
                               deadline_hours, region, objective, None, None, None)
        path, summary = write_plan_bundle(_load(workload, flags), out, pick=pick, force=force, lang=lg,
                                          pins={k: v for k, v in pins.items() if v is not None})
        if as_json:
            _emit_json({"schema_version": 1, "out": str(path), **summary})
        else:
            _console().print(_("Wrote {n} files to [bold]{path}[/bold] ({instance_type} x {count}).").format(
                n=summary.get("files_count", ""), path=path, instance_type=summary.get("instance_type"),
                count=summary.get("instance_count")))
        return 0

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@app.command()
def ask(
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to write the workload YAML (default: workload.yaml, "
                                                "or workload-N.yaml when that exists).")] = None,
    top: Annotated[int, typer.Option(help="How many plans to show.")] = 5,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Answer the guides' questions (task, model, data or traffic, deadline or SLA, budget) and get a plan.

    On a terminal it asks one question at a time and asks again after a bad answer. Otherwise it reads
    one answer per line: task, model, then for training: dataset samples, tokens per sample, epochs,
    deadline hours, budget; for inference: quantization, online or batch, then (online) requests/s,
    concurrent requests, prompt tokens, output tokens, TTFT target in ms, budget, or (batch) requests
    to process, prompt tokens, output tokens, deadline hours, budget. An empty line takes the default.
    Every answer is checked as it is given (the model must exist); the workload file is written only
    at the end, once the whole workload has been checked and planned.
    """

    def body(lg: str) -> int:
        from gpuplan.ask import ask_lines, ask_terminal, build_workload
        from gpuplan.i18n import tr
        from gpuplan.plan import recommend as run_recommend
        from gpuplan.workload import dump_workload_yaml, load_workload

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


@app.command()
def serve(host: Annotated[str, typer.Option(help="Address to bind (default loopback only).")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="TCP port.")] = 8000) -> None:
    """Run the web page and REST API (extra gpuplan[web])."""
    def body(lg: str) -> int:
        if not (1 <= port <= 65535):
            raise GpuplanError(_("Port {port} is out of range.").format(port=port), hint=_("Use 1-65535, e.g. 8000."))
        from gpuplan.api import serve as run_server

        run_server(host, port)
        return 0

    raise _Exit(run_guarded(body, False, None) or 0)


def _argv_lang() -> str:
    """The --lang of the command line (usage errors happen before the command runs)."""
    from gpuplan.i18n import default_lang

    args = sys.argv[1:]
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if arg.startswith("--lang=") else (args[i + 1] if arg == "--lang" and
                                                                         i + 1 < len(args) else None)
        if value is not None:
            return "zh" if value.lower().startswith("zh") else "en"
    return default_lang()


def _usage_message(exc: Any) -> str:
    """Click's usage errors as our own sentences (click's are English only); English keeps click's wording."""
    kinds = {k.__name__ for k in type(exc).__mro__}   # click's classes, or the copy typer vendors

    param = getattr(exc, "param", None)
    name = (getattr(exc, "param_hint", None) or (param.opts[0] if param is not None and getattr(param, "opts", None)
                                                    else getattr(param, "name", None) or ""))
    if isinstance(name, (list, tuple)):
        name = " / ".join(name)
    name = str(name).strip("'\"")
    if "NoSuchOption" in kinds:
        close = ", ".join(getattr(exc, "possibilities", None) or ())
        return (_("No such option: {option}. Did you mean {close}?").format(option=exc.option_name, close=close)
                if close else _("No such option: {option}.").format(option=exc.option_name))
    if "MissingParameter" in kinds:
        return _("Missing {param}.").format(param=name or _("argument"))
    if "BadParameter" in kinds:
        detail = str(getattr(exc, "message", "") or "")
        cause = exc.__cause__   # newer typer converts with pydantic: its error says what and which input
        first = cause.errors()[0] if callable(getattr(cause, "errors", None)) and cause.errors() else {}
        value = first.get("input", detail.split("'")[1] if detail.count("'") >= 2 else None)
        kind = str(first.get("type", "")) or ("int_parsing" if "integer" in detail else
                                               "float_parsing" if "float" in detail else "")
        if value is not None and kind.startswith("int"):
            return _("Invalid value for {param}: {value!r} is not a whole number.").format(param=name, value=value)
        if value is not None and kind.startswith("float"):
            return _("Invalid value for {param}: {value!r} is not a number.").format(param=name, value=value)
        if value is not None:
            return _("Invalid value for {param}: {value!r}.").format(param=name, value=value)
        return _("Invalid value for {param}.").format(param=name)
    if "BadOptionUsage" in kinds:
        return _("Option {option} needs a value.").format(option=getattr(exc, "option_name", ""))
    if "BadArgumentUsage" in kinds or "extra argument" in str(exc.format_message()).lower():
        extra = re.findall(r"\(([^)]*)\)", str(exc.format_message()))
        return _("Unexpected argument: {detail}.").format(detail=extra[-1] if extra else "?")
    return _("The command line is not valid.")


def _usage_error(exc: Any) -> None:
    """A click usage error (unknown option, bad value, missing argument) as one line and a hint, like
    every other error (JSON on stdout under --json, always English there)."""
    from gpuplan.i18n import tr, use_lang

    ctx = getattr(exc, "ctx", None)
    path = str(getattr(ctx, "command_path", "") or "gpuplan").split()
    command = " ".join(["gpuplan", *path[1:]])
    as_json = "--json" in sys.argv[1:]
    lang = "en" if as_json else _argv_lang()
    if lang == "en":
        message = " ".join(str(exc.format_message()).split())
    else:
        with use_lang(lang):
            try:
                message = _usage_message(exc)
            except Exception:  # noqa: BLE001 - an unknown click version: its own wording
                message = " ".join(str(exc.format_message()).split())
    hint = tr("See `{command} --help`.", lang).format(command=command)
    if as_json:
        _emit_json({"error": message, "hint": hint})
    else:
        sys.stderr.write(f"{tr('Error', lang)}: {message}\n{tr('Hint', lang)}: {hint}\n")


def main() -> None:
    """Console-script entry point."""
    try:
        app(standalone_mode=False)
    except _Exit as e:
        sys.exit(e.code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write(_("Interrupted.") + "\n")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last guard: never a traceback for users
        # Usage errors (unknown option, missing argument) come from click, or from the copy of click that
        # newer typer releases vendor: recognise them by their interface rather than their module.
        code = getattr(exc, "exit_code", None)
        if callable(getattr(exc, "format_message", None)) and isinstance(code, int):
            _usage_error(exc)
            sys.exit(code if code != 1 else 2)
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        if os.environ.get("GPUPLAN_DEBUG"):
            raise
        from gpuplan.i18n import tr

        lang = _argv_lang()
        sys.stderr.write(tr("Internal error: {name}: {detail}", lang).format(name=exc.__class__.__name__, detail=exc)
                         + "\n" + tr("Hint", lang) + ": "
                         + tr("this is a bug in gpuplan; rerun with GPUPLAN_DEBUG=1 and report the traceback.", lang)
                         + "\n")
        sys.exit(3)


if __name__ == "__main__":  # pragma: no cover
    main()
