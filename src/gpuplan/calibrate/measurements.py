"""``gpuplan calibrate --from FILE.csv``: calibrations from measurements the user already has.

The CSV has the columns of the project's published-measurement tables (bench/data/measurements.csv,
docs/calibrate in docs/models.md): one measured figure per row (``metric``, ``value``) and the run that
produced it (model, task, precision, quantization, framework, gpu, gpu_count, tp, pp, dp, zero_stage,
fsdp, grad_ckpt, flash_attn, micro_batch, global_batch, seq_len, prompt_tokens, output_tokens,
lora_rank, kv_cache_dtype, measure_api). Throughput rows give the calibration factor (measured /
estimated, geometric mean per GPU, framework and workload class); memory rows are kept beside it for
``--show``. Rows that cannot be estimated are reported, not guessed.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, get_args

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, check_factor, suspended, workload_class
from gpuplan.i18n import _
from gpuplan.files.safeio import read_text_bounded
from gpuplan.units import GIB

REQUIRED = ("model", "task", "gpu", "metric", "value")
# metric -> (estimate performance field, +1 when a larger value is faster, -1 for a time)
THROUGHPUT = {
    "train_tokens_per_s_per_gpu": ("tokens_per_s_per_gpu", 1),
    "train_samples_per_s": ("samples_per_s", 1),
    "tflops_per_gpu": ("tflops_per_gpu", 1),
    "mfu": ("mfu", 1),
    "step_time_s": ("step_time_s", -1),
    "output_tokens_per_s": ("output_tokens_per_s", 1),
    "max_output_tokens_per_s": ("max_output_tokens_per_s", 1),
}
MEMORY = ("peak_mem_gib_per_gpu",)
_API_FIELD = {"max_allocated": "peak_allocated_bytes", "max_reserved": "peak_reserved_bytes"}
_CKPT = {"yes": True, "no": False, "selective": "selective", "per-op": "per-op"}


@dataclass(frozen=True)
class RowResult:
    """One usable row: the calibration key it belongs to and measured vs estimated."""

    row: int
    key: tuple[str, str, str]
    metric: str
    measured: float
    estimated: float
    model: str

    @property
    def ratio(self) -> float:
        sign = THROUGHPUT[self.metric][1] if self.metric in THROUGHPUT else 1
        return self.measured / self.estimated if sign > 0 else self.estimated / self.measured


def _num(text: str | None) -> float | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(text: str | None) -> int | None:
    value = _num(text)
    return int(value) if value is not None and value == int(value) and value > 0 else None


def _framework(name: str) -> str:
    from gpuplan.workload_parts import Framework

    name = (name or "").strip().lower()
    return name if name in get_args(Framework) else "auto"


def row_workload(r: dict[str, str]) -> dict[str, Any]:
    """The workload (with its fixed hardware and layout) a measurement row describes."""
    task = r["task"].strip()
    gpus = _int(r.get("gpu_count")) or 1
    tp, pp = _int(r.get("tp")) or 1, _int(r.get("pp")) or 1
    dp = _int(r.get("dp")) or max(1, gpus // (tp * pp))
    mb = _int(r.get("micro_batch")) or 1
    fsdp = (r.get("fsdp") or "").strip()
    data: dict[str, Any] = {
        "model": r["model"].strip(), "task": task, "framework": _framework(r.get("framework", "")),
        "hardware": {"gpu": r["gpu"].strip(), "count": tp * pp * dp}, "batch_size": mb,
        "parallel": {"tp": tp, "pp": pp, "dp": dp, "zero": _int(r.get("zero_stage")) or 0,
                     "fsdp": "full_shard" if fsdp.startswith("full_shard") else "none",
                     "offload": "cpu" if "offload" in fsdp else "none"},
    }
    for key in ("precision", "quantization"):
        if (r.get(key) or "").strip():
            data[key] = r[key].strip()
    if (r.get("flash_attn") or "").strip() in ("yes", "no"):
        data["flash_attention"] = r["flash_attn"].strip() == "yes"
    if task == "inference":
        data["prompt_tokens"] = _int(r.get("prompt_tokens")) or 1
        data["output_tokens"] = _int(r.get("output_tokens")) or 1
        kv = (r.get("kv_cache_dtype") or "").strip()
        if kv and kv != "auto":
            data["kv_cache_dtype"] = kv
    else:
        data["seq_len"] = _int(r.get("seq_len")) or 2048
        gb = _int(r.get("global_batch"))
        data["gradient_accumulation"] = max(1, round(gb / (mb * dp))) if gb else 1
        if (r.get("grad_ckpt") or "").strip() in _CKPT:
            data["grad_checkpointing"] = _CKPT[r["grad_ckpt"].strip()]
        if task in ("lora", "qlora"):
            data["lora"] = {"rank": _int(r.get("lora_rank")) or 8}
    return data


def _estimated(est: Any, metric: str, api: str) -> float | None:
    if metric in THROUGHPUT:
        value = est.performance.get(THROUGHPUT[metric][0])
        return float(value) if isinstance(value, (int, float)) and value > 0 else None
    mem = est.memory
    return float(getattr(mem, _API_FIELD.get(api, "per_gpu_bytes"))) / GIB


def read_rows(path: Path) -> list[dict[str, str]]:
    text = read_text_bounded(path, "measurements file")
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise GpuplanError(_("{path} lacks the column(s) {columns}.").format(path=path, columns=", ".join(missing)),
                           hint=_("Use the columns of bench/data/measurements.csv (docs/models.md, `gpuplan calibrate`)."))
    return list(reader)


def evaluate(rows: list[dict[str, str]]) -> tuple[list[RowResult], list[str]]:
    """(usable rows measured vs estimated without any calibration, one line per skipped row)."""
    from gpuplan.estimate.core import estimate

    results: list[RowResult] = []
    skipped: list[str] = []
    for n, r in enumerate(rows, start=2):  # line 1 is the header
        metric, value = (r.get("metric") or "").strip(), _num(r.get("value"))
        if metric not in THROUGHPUT and metric not in MEMORY:
            skipped.append(_("line {n}: metric {metric!r} is not one calibrate uses").format(n=n, metric=metric))
            continue
        if value is None or value <= 0:
            skipped.append(_("line {n}: value is not a positive number").format(n=n))
            continue
        try:
            with suspended():
                est = estimate(row_workload(r))
        except GpuplanError as err:
            skipped.append(_("line {n}: {error}").format(n=n, error=err.message))
            continue
        predicted = _estimated(est, metric, (r.get("measure_api") or "").strip())
        if not predicted:
            skipped.append(_("line {n}: the estimate has no {metric}").format(n=n, metric=metric))
            continue
        key = (est.system.gpu.id, est.workload.framework or "auto", workload_class(est.workload.task or "inference", est.model))
        results.append(RowResult(n, key, metric, value, predicted, est.model.id))
    return results, skipped


def calibrations(results: list[RowResult], source: str, today: date | None = None) -> list[Calibration]:
    """One calibration per key with throughput rows: the geometric mean of measured / estimated."""
    day = (today or date.today()).isoformat()
    out: list[Calibration] = []
    for key in sorted({r.key for r in results}):
        speed = [r for r in results if r.key == key and r.metric in THROUGHPUT]
        if not speed:
            continue
        factor = math.exp(statistics.fmean(math.log(r.ratio) for r in speed))
        check_factor(factor, " / ".join(key))  # ids only: nothing to translate
        shown = min(speed, key=lambda r: abs(math.log(r.ratio / factor)))
        memory = next((r for r in results if r.key == key and r.metric in MEMORY), None)
        mem = {"measured_gib": memory.measured, "estimated_gib": round(memory.estimated, 3)} if memory else {}
        out.append(Calibration(gpu=key[0], framework=key[1], workload_class=key[2], factor=round(factor, 4),
                               metric=shown.metric, measured=shown.measured, default=round(shown.estimated, 4),
                               date=day, source=source, runs=len(speed), model=shown.model, memory=mem))
    return out
