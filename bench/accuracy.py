"""Accuracy benchmark: run the analytic estimator on published measurements and report the error.

Usage: python bench/accuracy.py [CSV ...] [--out bench/results/accuracy.md] [--rows]

Reads measurement CSVs in the schema of ../shared/validation (bench/data/measurements.csv is the
project's copy), maps each row to a workload, hardware and layout, and compares each measured
value with the matching estimate: max_allocated -> peak_allocated_bytes, max_reserved ->
peak_reserved_bytes, nvidia-smi/unknown -> per_gpu_bytes, *_total -> the sum over the run's GPUs;
throughput rows with the matching performance field. Writes per metric and per source group the
median and p90 absolute relative error, the signed bias, and whether every completed run is
predicted to fit.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from gpuplan.catalog.gpus import get_gpu
from gpuplan.catalog.models import resolve_model
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate_resolved
from gpuplan.estimate.system import Layout, System
from gpuplan.units import GIB
from gpuplan.workload import resolve_defaults, parse_workload

HERE = Path(__file__).resolve().parent
DEFAULT_CSV = [HERE / "data" / "measurements.csv", HERE / "data" / "h200-calibration.csv"]

FRAMEWORKS = {"transformers", "vllm", "sglang", "trtllm", "deepspeed", "megatron", "nemo", "fsdp", "torchtune",
              "llm-foundry", "llama-factory", "swift"}
# The LoRA target modules a framework uses when the run does not name them (ms-swift 1.x
# DEFAULT = the attention's fused qkv projection; PEFT examples: q and v).
DEFAULT_LORA_TARGETS = {"swift": ["c_attn", "query_key_value", "W_pack", "q_proj", "k_proj", "v_proj"],
                        "transformers": ["q_proj", "v_proj", "q", "v", "query_key_value", "c_attn"]}
# Multi-node clusters the published runs used (per node): DGX A100 8 x 200 Gb/s HDR, DGX H100 8 x 400 Gb/s NDR.
CLUSTER_NIC_GBIT_S = {"A100": 1600.0, "H100": 3200.0}


@dataclass
class Row:
    id: str
    group: str
    metric: str
    measured: float
    predicted: float | None
    error: float | None
    fits: bool | None
    note: str = ""


def _f(x: str, default=None):
    x = (x or "").strip()
    if not x:
        return default
    try:
        return float(x)
    except ValueError:
        return default


def _i(x: str, default=None):
    v = _f(x, None)
    return default if v is None else int(v)


OLD_TRAINER_FRAMEWORKS = {"swift", "transformers", "llama-factory"}


def _old_torch(notes: str) -> bool:
    """The row's stated stack predates fused AdamW as the Trainer default (torch < 2.2)."""
    m = re.search(r"torch (\d+)\.(\d+)", notes or "")
    return bool(m) and (int(m.group(1)), int(m.group(2))) < (2, 2)


def row_to_case(r: dict[str, str]):
    """(workload, system, layout) for one measurement row."""
    task = r["task"]
    framework = r["framework"] if r["framework"] in FRAMEWORKS else "auto"
    gpus = _i(r["gpu_count"], 1) or 1
    tp, pp = _i(r["tp"], 1) or 1, _i(r["pp"], 1) or 1
    dp = _i(r["dp"], None) or max(1, gpus // (tp * pp))
    if gpus != tp * pp * dp:
        gpus = tp * pp * dp
    mb = _i(r["micro_batch"], 1) or 1
    gb = _i(r["global_batch"], None)
    ga = max(1, round(gb / (mb * dp))) if gb else 1
    fsdp = r["fsdp"] or ""
    offload = "cpu" if "offload" in fsdp else "none"
    fsdp_mode = "full_shard" if fsdp.startswith("full_shard") else "none"
    zero = _i(r["zero_stage"], 0) or 0
    ckpt = {"yes": True, "no": False, "selective": "selective"}.get(r["grad_ckpt"], True if task != "inference" else None)
    flash = {"yes": True, "no": False}.get(r["flash_attn"], None)
    if flash is None:
        flash = framework in ("vllm", "sglang", "llm-foundry") or task == "inference"
        if framework == "megatron":
            flash = False  # Megatron-LM 2021 predates FlashAttention
    seq = _i(r["seq_len"], None)
    if seq is None and task != "inference":
        seq = 64  # PEFT examples pad short tweets; the length is not stated
    data = {
        "model": r["model"], "task": task, "precision": r["precision"] or "bf16",
        "quantization": r["quantization"] or "none", "framework": framework, "batch_size": mb,
        "gradient_accumulation": ga, "flash_attention": flash,
        "parallel": {"tp": tp, "pp": pp, "dp": dp, "zero": zero, "fsdp": fsdp_mode, "offload": offload},
    }
    if r["kv_cache_dtype"] and r["kv_cache_dtype"] != "auto":
        data["kv_cache_dtype"] = r["kv_cache_dtype"]
    if task == "inference":
        data["prompt_tokens"] = _i(r["prompt_tokens"], 1)
        data["output_tokens"] = _i(r["output_tokens"], 1)
    else:
        data["seq_len"] = seq
        data["grad_checkpointing"] = ckpt
    if task in ("lora", "qlora"):
        data["lora"] = {"rank": _i(r["lora_rank"], 8) or 8,
                        "targets": DEFAULT_LORA_TARGETS.get(framework, "all-linear")}
    if r["precision"] == "fp16" and r["quantization"] in ("gptq-int4", "gptq-int8", "awq"):
        data["precision"] = "fp16"
    notes = r.get("notes") or ""
    if "AdamW foreach" in notes:
        data["optimizer"] = "adamw-foreach"
    elif "AdamW fused" in notes:
        data["optimizer"] = "adamw-fused"
    if task in ("lora", "qlora") and "all-linear" in notes:
        data["lora"]["targets"] = "all-linear"
    if "optimizer" not in data and task != "inference" and framework in OLD_TRAINER_FRAMEWORKS and _old_torch(notes):
        data["optimizer"] = "adamw-foreach"  # Trainers before transformers 4.46 / torch 2.2 used foreach AdamW"
    w = parse_workload(data)
    w, _ = resolve_defaults(w)
    gpu = get_gpu(r["gpu"])
    per_node = min(gpus, 8)
    nodes = max(1, math.ceil(gpus / per_node))
    link = "nvswitch" if gpu.nvlink_gb_s else "pcie"
    nic = CLUSTER_NIC_GBIT_S.get(gpu.id.split("-")[0], 400.0) if nodes > 1 else None
    system = System(gpu=gpu, gpus_per_node=per_node, nodes=nodes, intra_link=link if per_node > 1 else "none",
                    inter_node_gbit_s=nic, rdma="ib" if nodes > 1 else None)
    naive = pp > 1 and framework in ("transformers", "swift", "auto", "llama-factory")
    layout = Layout(tp=tp, pp=pp, dp=dp, zero=max(zero, 3 if fsdp_mode == "full_shard" else 0), fsdp=fsdp_mode,
                    offload=offload,
                    checkpointing=("selective" if ckpt == "selective" else ("full" if ckpt else "none")),
                    micro_batch=mb, grad_accum=ga, microbatches=ga if pp > 1 else 1, naive_pipeline=naive)
    return w, system, layout


def dataset_tokens_from_notes(notes: str) -> float | None:
    m = re.search(r"on ([\d.]+)T tokens", notes)
    return float(m.group(1)) * 1e12 if m else None


def predict(r: dict[str, str]) -> tuple[float | None, bool | None, str]:
    w, system, layout = row_to_case(r)
    model = resolve_model(r["model"])
    est = estimate_resolved(w, model, system, layout, with_suggestions=False)
    mem, perf = est.memory, est.performance
    metric, api = r["metric"], r["measure_api"]
    fits = mem.fits
    if metric == "peak_mem_gib_per_gpu":
        val = {"max_allocated": mem.peak_allocated_bytes, "max_reserved": mem.peak_reserved_bytes}.get(api, mem.per_gpu_bytes)
        return val / GIB, fits, ""
    if metric == "peak_mem_gib_total":
        val = {"max_allocated": mem.total_allocated_bytes, "max_reserved": mem.total_reserved_bytes}.get(api, mem.total_bytes)
        return val / GIB, fits, ""
    if metric == "output_tokens_per_s":
        return perf["output_tokens_per_s"], fits, ""
    if metric == "train_tokens_per_s_per_gpu":
        return perf["tokens_per_s_per_gpu"], fits, ""
    if metric == "train_samples_per_s":
        return perf["samples_per_s"], fits, ""
    if metric == "tflops_per_gpu":
        return perf["tflops_per_gpu"], fits, ""
    if metric == "gpu_hours":
        tokens = dataset_tokens_from_notes(r["notes"])
        if not tokens:
            return None, fits, "dataset size not in notes"
        return tokens / perf["tokens_per_s_per_gpu"] / 3600.0, fits, ""
    return None, fits, f"unknown metric {metric}"


def run(paths: list[Path]) -> list[Row]:
    out: list[Row] = []
    for path in paths:
        with open(path, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                measured = float(r["value"])
                try:
                    pred, fits, note = predict(r)
                except GpuplanError as err:
                    out.append(Row(r["id"], r["group"], r["metric"], measured, None, None, None, f"error: {err.message}"))
                    continue
                err = None if pred is None else (pred - measured) / measured
                out.append(Row(r["id"], r["group"], r["metric"], measured, pred, err, fits, note))
    return out


METRIC_KIND = {"peak_mem_gib_per_gpu": "memory", "peak_mem_gib_total": "memory", "output_tokens_per_s": "speed",
               "train_tokens_per_s_per_gpu": "speed", "train_samples_per_s": "speed", "tflops_per_gpu": "speed",
               "gpu_hours": "speed"}


def _p90(xs: list[float]) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = 0.9 * (len(xs) - 1)
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


GROUP_NOTES = {
    "swspd": "ms-swift samples/s cannot be reproduced at full-length samples: e.g. H250 (Qwen-7B LoRA, seq 2048, "
             "4.31 samples/s on one A100) implies 4.31 x 2048 tokens x 6 x 7.7 GFLOP = 4.1e14 FLOP/s, above the "
             "A100's 3.12e14 dense peak. The samples were shorter than max_length (the source's dataset length is "
             "3234 +- 2548 units, apparently characters), and the CSV gives no mean token count, so the estimator, "
             "which must assume seq_len tokens per sample, is low by the length ratio. Of the 512-token rows, where "
             "samples do fill max_length, the 7B LoRA and full runs are within 14%; the 1.8B LoRA run is predicted "
             "1.9x too fast (narrow layers, where per-step overheads the model does not capture dominate).",
    "h200vm-speed": "Our own H200 runs happened in a sandboxed VM where each CUDA kernel launch costs several times "
                    "the CPU time of bare metal (HF generate: 92 ms/token for a 7B on an H200 vs 25 ms on a bare-metal "
                    "A100); the speed rows measure that launch overhead, not the GPU. Their memory rows (group h200cal) "
                    "are valid and are scored.",
    "peft": "The PEFT table's sequence length is not stated (short tweets; 64 tokens assumed) and it predates fused "
            "AdamW as the default; the full fine-tune row matches within 4%, the LoRA rows are high by 11-23%.",
    "swmem": "H275 (Qwen-1.8B full fine-tune, 35.1 GiB) matches fp32 master weights (16 bytes/param + a temporary), "
             "while the 7B and 14B rows of the same table match pure bf16 (10 bytes/param): the table does not say "
             "which was used; we keep the pure-bf16 default that fits the majority.",
}


def summarize(rows: list[Row]) -> str:
    lines = ["# Accuracy of the analytic estimator", "",
             "Generated by `python bench/accuracy.py` from bench/data/measurements.csv (published measurements; "
             "sources per row). Error = (predicted - measured) / measured. Memory rows compare like with like "
             "(max_allocated -> peak_allocated_bytes, max_reserved -> peak_reserved_bytes, nvidia-smi -> per_gpu_bytes).",
             "", "## By kind", "", "| kind | rows | median abs error | p90 abs error | signed bias (median) |",
             "|---|---|---|---|---|"]
    for kind in ("memory", "speed"):
        errs = [r.error for r in rows if r.error is not None and METRIC_KIND.get(r.metric) == kind]
        if errs:
            lines.append(f"| {kind} | {len(errs)} | {statistics.median(abs(e) for e in errs):.1%} | "
                         f"{_p90([abs(e) for e in errs]):.1%} | {statistics.median(errs):+.1%} |")
    lines += ["", "## By source group and metric", "",
              "| group | metric | rows | median abs error | p90 abs error | signed bias | completed runs predicted to fit |",
              "|---|---|---|---|---|---|---|"]
    keys = sorted({(r.group, r.metric) for r in rows})
    for g, m in keys:
        sel = [r for r in rows if r.group == g and r.metric == m and r.error is not None]
        if not sel:
            continue
        errs = [r.error for r in sel]
        fit = sum(1 for r in sel if r.fits) if METRIC_KIND[m] == "memory" else None
        fit_s = f"{fit}/{len(sel)}" if fit is not None else "-"
        lines.append(f"| {g} | {m} | {len(sel)} | {statistics.median(abs(e) for e in errs):.1%} | "
                     f"{_p90([abs(e) for e in errs]):.1%} | {statistics.median(errs):+.1%} | {fit_s} |")
    lines += ["", "## Notes on groups", ""]
    lines += [f"- **{g}**: {text}" for g, text in GROUP_NOTES.items() if any(r.group == g for r in rows)]
    misfit = [r for r in rows if METRIC_KIND.get(r.metric) == "memory" and r.fits is False]
    lines += ["", "## Completed runs predicted not to fit", ""]
    lines += [f"- {r.id}: measured {r.measured:.2f} GiB, predicted {r.predicted:.2f} GiB" for r in misfit] or ["- none"]
    failed = [r for r in rows if r.predicted is None]
    if failed:
        lines += ["", "## Rows not estimated", ""] + [f"- {r.id}: {r.note}" for r in failed]
    lines += ["", "## Every row", "", "| id | metric | measured | predicted | error |", "|---|---|---|---|---|"]
    for r in rows:
        pred = "-" if r.predicted is None else f"{r.predicted:.4g}"
        err = "-" if r.error is None else f"{r.error:+.1%}"
        lines.append(f"| {r.id} | {r.metric} | {r.measured:.4g} | {pred} | {err} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="*", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "accuracy.md")
    ap.add_argument("--rows", action="store_true", help="print every row")
    args = ap.parse_args(argv)
    rows = run(args.csv)
    text = summarize(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    head = text.split("## Completed runs")[0]
    print(head)
    if args.rows:
        for r in rows:
            print(r.id, r.metric, r.measured, None if r.predicted is None else round(r.predicted, 3),
                  None if r.error is None else f"{r.error:+.1%}", r.note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
