"""Rich terminal views of catalog records and estimates (English or Chinese headers)."""

from __future__ import annotations

from typing import Any, Iterable

from rich.console import Console
from rich.table import Table

from gpuplan.i18n import N_, localize, tr
from gpuplan.fieldnames import field_label
from gpuplan.render import ranges as rng
from gpuplan.units import GIB, fmt_bytes, fmt_duration


_LABELS = (N_("Price region, date"),)   # a header chosen at run time


def _num(v: Any, fmt: str = "{:g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 100_000 else str(v)
    if isinstance(v, float):
        if v.is_integer() and abs(v) >= 100_000:
            return f"{int(v):,}"
        return fmt.format(v)
    return str(v)


def gpus_table(gpus: Iterable, lang: str) -> Table:
    t = Table(title=tr("GPUs", lang), show_lines=False)
    for col in ("GPU", "Architecture", "GPU memory (GiB)", "Bandwidth (GB/s)", "BF16 dense TFLOPS", "FP16 dense TFLOPS",
                "FP8 dense TFLOPS", "INT8 dense TOPS", "NVLink (GB/s)", "MIG"):
        t.add_column(tr(col, lang), justify="left" if col in ("GPU", "Architecture") else "right")
    for g in gpus:
        flag = " *" if g.unconfirmed else ""
        t.add_row(g.id + flag, g.architecture, _num(g.memory_gib), _num(g.mem_bandwidth_gb_s), _num(g.bf16_dense_tflops),
                  _num(g.fp16_dense_tflops), _num(g.fp8_dense_tflops), _num(g.int8_dense_tops), _num(g.nvlink_gb_s),
                  tr("yes", lang) if g.mig else tr("no", lang))
    t.caption = tr("* {unconfirmed}: see `gpuplan show GPU`. Tensor figures are dense (no sparsity).", lang).format(
        unconfirmed=tr("unconfirmed", lang))
    return t


def instances_table(insts: Iterable, lang: str, prices: dict | None = None, *, width: int = 10_000,
                    wide: bool = False):
    """Instance types as a fitted table (render.fit): type, GPU and price first; the rest by priority,
    folded into a detail line when the terminal is narrow. ``prices``: {instance type: (price, where)}."""
    from gpuplan.catalog.hardware.instances import STATUS_NAMES
    from gpuplan.plan.record import PRICE_MARKS
    from gpuplan.render.fit import Column, fitted_table, price_legend

    spec = [("Instance type", 0, "left"), ("GPU", 1, "left"), ("GPUs", 1, "right"), ("GPU memory (GiB)", 2, "right"),
            ("Family", 4, "left"), ("vCPU", 3, "right"), ("Memory (GiB)", 3, "right"), ("Network (Gbit/s)", 5, "right"),
            ("RDMA", 5, "left"), ("Interconnect", 6, "left"), ("Status", 2, "left")]
    if prices is not None:
        spec[2:2] = [("Price", 0, "right"), ("Price region, date", 3, "left")]
    cols = [Column(tr(name, lang), prio, just) for name, prio, just in spec]
    rows = []
    for i in insts:
        gpu = i.gpu + ("" if i.gpu_basis == "named" else tr(" ({basis})", lang).format(
            basis=tr(STATUS_NAMES.get(i.gpu_basis, i.gpu_basis), lang)))
        row = [i.instance_type, gpu, _num(i.gpu_count, "{:.4g}"), _num(i.gpu_memory_gib), i.family, _num(i.vcpus),
               _num(i.memory_gib), _num(i.network_gbit_s), i.rdma or "-", i.interconnect or "-",
               tr(STATUS_NAMES.get(i.status, i.status), lang)]
        if prices is not None:
            value, where = prices.get(i.instance_type) or ("-", "")
            row[2:2] = [value, where]
        rows.append(row)
    marks = [m for m in PRICE_MARKS.values() for v, _ in (prices or {}).values() if v.endswith(m)]
    return fitted_table(tr("Instance type", lang), cols, rows, width=width, wide=wide,
                        legend=price_legend(marks, lang))


def models_table(models: Iterable, lang: str) -> Table:
    t = Table(title=tr("Model", lang))
    for col in ("Model", "Kind", "Parameters", "Layers", "Hidden", "Heads", "KV heads", "Attention", "Vocab", "Max positions"):
        t.add_column(tr(col, lang), justify="left" if col in ("Model", "Kind", "Attention") else "right")
    for m in models:
        params = f"{m.params_total / 1e9:.2f}B"
        if m.params_active and m.params_active != m.params_total:
            params += f" ({m.params_active / 1e9:.1f}B active)"
        t.add_row(m.id, m.kind, params, _num(m.num_layers or None), _num(m.hidden_size or None),
                  _num(m.num_attention_heads or None), _num(m.num_key_value_heads or None), m.attention if (m.is_llm() if callable(m.is_llm) else m.is_llm) else "-",
                  _num(m.vocab_size or None), _num(m.max_position_embeddings))
    return t


def record_table(title: str, record: dict, lang: str) -> Table:
    t = Table(title=title, show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value")
    for k, v in record.items():
        if isinstance(v, (list, tuple)):
            v = "\n".join(str(x) for x in v) if v else "-"
        elif isinstance(v, dict):
            v = ", ".join(f"{a}={b}" for a, b in v.items()) if v else "-"
        t.add_row(field_label(k, lang), _num(v))
    return t


BAR_WIDTH = 40


def memory_line(mem: dict, lang: str, ranges: dict | None = None) -> str:
    """'Memory per GPU: used (80 % range) / capacity (verdict, confidence)', with the real need when it exceeds
    the card: the allocator's reserve (or an engine's pool) is capped at the card, so the capped figure alone
    would read 80.0 / 80.0 GiB exactly when the job is at the limit."""
    used, cap = mem["per_gpu_bytes"], mem["capacity_bytes"]
    conf = mem.get("fit_confidence")
    need = max(used, mem.get("need_bytes") or 0)
    if need > cap and mem["fits"]:
        return tr("Memory per GPU: needs {need}, {capacity} on the card ({verdict})", lang).format(
            need=fmt_bytes(need), capacity=fmt_bytes(cap),
            verdict=tr("fits only by freeing the allocator's cache: slower, no headroom", lang))
    if need > cap:
        return tr("Memory per GPU: needs {need}, {capacity} on the card ({verdict})", lang).format(
            need=fmt_bytes(need), capacity=fmt_bytes(cap), verdict=tr("does not fit", lang))
    verdict = tr("fits", lang) if conf is None else tr("fits; {p} chance the real peak fits", lang).format(
        p=">99%" if conf >= 0.995 else f"{conf:.0%}")
    return tr("Memory per GPU: {used} / {capacity} ({verdict})", lang).format(
        used=_used_with_range(used, (ranges or {}).get("memory.per_gpu_bytes")),
        capacity=fmt_bytes(cap), verdict=verdict)


def _used_with_range(used: float, pair: list | None) -> str:
    """'40.00 GiB (31.2-57.0)': the point as fmt_bytes writes it, then its 80 % range in GiB."""
    text = fmt_bytes(used)
    return text if not pair else rng.with_range(text, pair[0] / GIB, pair[1] / GIB, lambda x: f"{x:.1f}")


def memory_view(est_dict: dict, lang: str) -> Table:
    mem = est_dict["memory"]
    total = max(1, mem["per_gpu_bytes"])
    cap = mem["capacity_bytes"]
    t = Table(title=memory_line(mem, lang, est_dict.get("intervals")))
    t.add_column(tr("Component", lang))
    t.add_column("GiB", justify="right")
    t.add_column(tr("Share", lang), justify="right")
    t.add_column("", no_wrap=True)
    scale = max(total, cap)
    for key, val in mem["components"].items():
        if not val:
            continue
        bar = "█" * max(1, round(BAR_WIDTH * val / scale))
        t.add_row(tr(key, lang), f"{val / GIB:.2f}", f"{val / total:.0%}", f"[cyan]{bar}[/cyan]")
    cap_mark = round(BAR_WIDTH * cap / scale)
    t.add_row(tr("Total", lang), f"{total / GIB:.2f}", "100%",
              ("[green]" if mem["fits"] else "[red]") + "█" * round(BAR_WIDTH * total / scale) + "[/]")
    t.add_row(tr("capacity", lang), f"{cap / GIB:.2f}", "", "─" * cap_mark + "┤")
    figures = [("Peak allocated", mem["peak_allocated_bytes"]), ("Peak reserved", mem["peak_reserved_bytes"]),
               ("Engine reserved", mem.get("engine_reserved_bytes")), ("Host RAM", mem["host_bytes"])]
    t.caption = tr(", ", lang).join(f"{tr(label, lang)} {fmt_bytes(value)}" for label, value in figures
                                    if value or label != "Engine reserved")
    return t


def _rate(value: float) -> str:
    """A per-second rate: two decimals from 1 up, three significant digits below (a video every 3.4 min is 0.00485
    per second, not 0.00)."""
    return f"{value:,.2f}" if value >= 1 else f"{value:.3g}"


def performance_view(est_dict: dict, lang: str) -> Table:
    p = est_dict["performance"]
    t = Table(title=tr("Performance", lang), show_header=False)
    t.add_column("k", style="bold")
    t.add_column("v", justify="right")
    rows = [
        ("Step time", fmt_duration(p.get("step_time_s")) if p.get("step_time_s") else None),
        ("Tokens/s", f"{p['tokens_per_s']:,.0f}" if p.get("tokens_per_s") else None),
        ("Tokens/s per GPU", f"{p['tokens_per_s_per_gpu']:,.0f}" if p.get("tokens_per_s_per_gpu") else None),
        ("Samples/s", _rate(p['samples_per_s']) if p.get("samples_per_s") else None),
        ("MFU", f"{p['mfu']:.1%}" if p.get("mfu") else None),
        ("TFLOP/s per GPU", f"{p['tflops_per_gpu']:.0f}" if p.get("tflops_per_gpu") else None),
        ("Communication share", f"{p['comm_fraction']:.1%}" if p.get("comm_fraction") is not None else None),
        ("Total time", fmt_duration(p.get("total_time_s")) if p.get("total_time_s") else None),
        ("GPU-hours", f"{p['gpu_hours']:,.0f}" if p.get("gpu_hours") else None),
        # an image or video generator (or classifier) has no first token: its latency is the figure
        ("TTFT", fmt_duration(p.get("ttft_s")) if p.get("ttft_s") and not (p.get("images_per_s") or
                                                                          p.get("denoising_steps_per_s")) else None),
        ("TPOT", fmt_duration(p.get("tpot_s")) if p.get("tpot_s") else None),
        ("Output tokens/s", f"{p['output_tokens_per_s']:,.1f}" if p.get("output_tokens_per_s") else None),
        (N_("Max output tokens/s"), f"{p['max_output_tokens_per_s']:,.0f}" if p.get("max_output_tokens_per_s") else None),
        ("Latency", fmt_duration(p.get("latency_s")) if p.get("latency_s") else None),
        # an inference job (dataset): every request queued at once, until the last one finishes
        (N_("Job time"), fmt_duration(p.get("job_time_s")) if p.get("job_time_s") else None),
        ("Sequences/s", f"{p['sequences_per_s']:,.1f}" if p.get("sequences_per_s") and not p.get("output_tokens_per_s")
         else None),
        ("Input tokens/s", f"{p['input_tokens_per_s']:,.0f}" if p.get("input_tokens_per_s")
         and not p.get("output_tokens_per_s") else None),
        ("Images/s", _rate(p['images_per_s']) if p.get("images_per_s") else None),
        ("Denoising steps/s", _rate(p['denoising_steps_per_s']) if p.get("denoising_steps_per_s") else None),
        ("Max concurrency", str(p["max_concurrency"]) if p.get("max_concurrency") is not None else None),
        ("Max requests/s", f"{p['max_requests_per_s']:.3g}" if p.get("max_requests_per_s") is not None else None),
    ]
    ranges = est_dict.get("intervals") or {}
    for k, v in rows:
        if v is not None:
            t.add_row(tr(k, lang), _with_range(k, v, p, ranges))
    return t


# the performance rows that get their 80 % range: label -> (figure, shown as a duration, scale of the shown number)
RANGED = {"Step time": ("step_time_s", True, 1.0), "Tokens/s": ("tokens_per_s", False, 1.0),
          "Tokens/s per GPU": ("tokens_per_s_per_gpu", False, 1.0), "Samples/s": ("samples_per_s", False, 1.0),
          "MFU": ("mfu", False, 100.0), "TFLOP/s per GPU": ("tflops_per_gpu", False, 1.0),
          "Total time": ("total_time_s", True, 1.0), "GPU-hours": ("gpu_hours", False, 1.0), "TTFT": ("ttft_s", True, 1.0),
          "TPOT": ("tpot_s", True, 1.0), "Output tokens/s": ("output_tokens_per_s", False, 1.0),
          "Max output tokens/s": ("max_output_tokens_per_s", False, 1.0), "Latency": ("latency_s", True, 1.0),
          "Job time": ("job_time_s", True, 1.0),
          "Images/s": ("images_per_s", False, 1.0), "Denoising steps/s": ("denoising_steps_per_s", False, 1.0),
          "Max requests/s": ("max_requests_per_s", False, 1.0)}


def _with_range(label: str, text: str, perf: dict, ranges: dict) -> str:
    """A performance row's value followed by its 80 % range (from the estimate's ``intervals``)."""
    key, is_time, scale = RANGED.get(label, (None, False, 1.0))
    if key is None or f"performance.{key}" not in ranges:
        return text
    sub = {key: ranges[f"performance.{key}"]}
    return rng.duration(perf.get(key), sub, key) if is_time else (rng.number(text, sub, key, scale) or text)


# activation checkpointing modes as text output names them
CHECKPOINTING = {"full": N_("full"), "selective": N_("selective"), "per-op": N_("per-op selective"), "none": N_("none")}


def layout_line(est_dict: dict, lang: str) -> str:
    """The parallel layout in one line: training fields for training, the serving ones for inference."""
    par, w, p = est_dict["parallel"], est_dict["workload"], est_dict["performance"]
    if w["task"] == "inference":
        ep = f" EP{par['ep']}" if par.get("ep", 1) > 1 else ""
        line = tr("Layout: TP{tp} PP{pp} DP{dp}{ep}, request batch {batch}", lang).format(
            tp=par["tp"], pp=par["pp"], dp=par["dp"], ep=ep, batch=p.get("batch") or w.get("batch_size") or 1)
        if p.get("serving_batch"):
            line += tr(", ", lang) + tr("up to {n} concurrent sequences per replica", lang).format(n=p["serving_batch"])
        return line
    ckpt = par["checkpointing"]
    return tr("Layout: TP{tp} PP{pp} DP{dp}{zero}, ckpt {mode}, micro-batch {micro} x GA {accum}", lang).format(
        tp=par["tp"], pp=par["pp"], dp=par["dp"], zero=f" ZeRO-{par['zero']}" if par["zero"] else "",
        mode=tr(CHECKPOINTING.get(ckpt, ckpt), lang), micro=par["micro_batch"], accum=par["gradient_accumulation"])


def print_estimate(console: Console, est_dict: dict, lang: str) -> None:
    m = est_dict["model"]
    hw = est_dict["hardware"]
    w = est_dict["workload"]
    quant = f" · {w['quantization']}" if w.get("quantization") not in (None, "none") else ""
    where = f" ({hw['instance_type']} x {hw['nodes']})" if hw.get("instance_type") else ""
    head = tr("{model} ({params}B) · {task} · {precision}{quantization} on {n} x {gpu}{instance}", lang).format(
        model=f"[bold]{m['id']}[/bold]", params=f"{m['params_total'] / 1e9:.2f}", task=w["task"],
        precision=w["precision"], quantization=quant, n=hw["total_gpus"], gpu=hw["gpu"], instance=where)
    console.print(head)
    console.print(layout_line(est_dict, lang))
    console.print(memory_view(est_dict, lang))
    console.print(performance_view(est_dict, lang))
    for title, key, style in (("Suggestions", "suggestions", "yellow"), ("Warnings", "warnings", "red"),
                              ("Assumptions", "assumptions", "dim")):
        items = est_dict.get(key) or []
        if items:
            console.print(f"[bold]{tr(title, lang)}[/bold]")
            for it in items:
                console.print(f"  [{style}]- {localize(it, lang)}[/{style}]")
