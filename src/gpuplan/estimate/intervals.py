"""Prediction intervals: how far a figure may be from the estimate, read from measured error.

The one place that turns an estimate into a range. ``bench/accuracy.py --write-intervals`` scores the
estimator on the project's published measurements (leave-one-source-group-out, each source group weighing
the same), builds one 80 % band per workload class and kind of figure (:mod:`gpuplan.estimate.interval_fit`)
and writes them to ``data/intervals.json`` with their provenance; this module reads that file and applies it.

A band is two quantiles of ln(measured / estimated), in the time orientation for time-like figures
(ln(measured time / estimated time)): a memory or time figure E has the range [E·e^low, E·e^high]; a rate
(tokens/s, images/s, TFLOP/s) has [E·e^-high, E·e^-low]. A serving engine that pre-allocates its share of the
card holds its weights and the KV cache of its batch exactly (a checkpoint's bytes; tokens x bytes per token in a
paged pool), X bytes in all: its memory band is of ln((measured - X) / (estimated - X)) and its range
[X + (M - X)·e^low, X + (M - X)·e^high] (bench/accuracy.py fits the engine rows the same way); X is at most 95 % of
the figure, so the spread never rests on a sliver. Spreading only
the bytes beside the weights in every class was measured and dropped: on the held-out set it widened the
memory ranges (median high/low 2.05 -> 3.25) for no gain in coverage. Classes follow the issue's split of the error
(``CLASS_PARENT``): LLM training (full, LoRA, QLoRA, sharded, pipelined), serving per engine, diffusion,
vision, speech and embeddings; a class with too few measurements borrows its parent's errors and is widened,
and its band says so (:meth:`Band.describe`).

The recommender sizes plans at the high end: :func:`memory_high_bytes` for the fit decision and the
micro-batch, :func:`time_bounds` for deadlines and costs. Nothing else derives a range.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplan.i18n import N_, _

COVERAGE = 0.8  # the central interval: 10th to 90th percentile of the measured/estimated ratio
COVERAGE_TEXT = f"{COVERAGE:.0%}"  # shown in sentences (a placeholder: a literal % in a msgid reads as %-format)
DATA_FILE = "intervals.json"
KINDS = ("memory", "time")
# Parent of each class: a class with few measurements borrows from it (interval_fit.py); "all" is the root.
CLASS_PARENT = {
    "train/full": "train", "train/lora": "train", "train/qlora": "train", "train/sharded": "train",
    "train/pipelined": "train", "train/moe": "train",
    "diffusion": "non-llm", "vision": "non-llm", "speech": "non-llm", "embeddings": "non-llm",
    "train": "all", "serve": "all", "non-llm": "all",
}
# Class names in words (assumption sentences); "serve/<engine>" classes name their engine.
CLASS_LABEL = {
    "train/full": N_("full fine-tuning / pre-training"), "train/lora": N_("LoRA training"),
    "train/qlora": N_("QLoRA training"), "train/sharded": N_("sharded training (ZeRO-3 / FSDP)"),
    "train/pipelined": N_("tensor / pipeline-parallel training"),
    "train/moe": N_("mixture-of-experts training"), "train": N_("LLM training"),
    "serve": N_("LLM serving"), "diffusion": N_("diffusion"), "vision": N_("vision models"),
    "speech": N_("speech models"), "embeddings": N_("embedding / encoder models"), "non-llm": N_("non-LLM models"),
    "all": N_("all workloads"),
}
KIND_LABEL = {"memory": N_("memory"), "time": N_("time")}
NON_LLM_CLASS = {"diffusion": "diffusion", "vision": "vision", "speech": "speech", "encoder": "embeddings"}

# Figures of `performance` that get a range: time-like ones scale with the time band, rates inversely.
TIME_KEYS = ("step_time_s", "total_time_s", "gpu_hours", "ttft_s", "tpot_s", "latency_s", "prefill_s", "job_time_s")
RATE_KEYS = ("tokens_per_s", "tokens_per_s_per_gpu", "samples_per_s", "tflops_per_gpu", "mfu", "output_tokens_per_s",
             "max_output_tokens_per_s", "max_requests_per_s", "sequences_per_s", "input_tokens_per_s", "images_per_s",
             "denoising_steps_per_s")
MEMORY_KEYS = ("per_gpu_bytes", "need_bytes", "peak_allocated_bytes", "peak_reserved_bytes")


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class Band:
    """The 80 % band of one class and kind: ln(measured / estimated) from ``low`` to ``high``."""

    cls: str                # the class asked for
    kind: str               # memory | time
    low: float
    high: float
    rows: int               # measurements behind the band
    groups: int             # their source groups
    source: str             # the class whose measurements gave it (cls, or a parent when pooled)
    widen: float = 1.0      # small-sample factor applied to the half-widths (1: none)

    @property
    def pooled(self) -> bool:
        return self.source != self.cls

    @property
    def ratio(self) -> float:
        """high / low of the range (the width the issue's target bounds: median <= 2.2)."""
        return math.exp(self.high - self.low)

    def bounds(self, value: float, *, rate: bool = False) -> tuple[float, float]:
        """[low, high] of a figure: a size or a time scales with the band, a rate against it."""
        if rate:
            return value * math.exp(-self.high), value * math.exp(-self.low)
        return value * math.exp(self.low), value * math.exp(self.high)

    def upper(self, value: float) -> float:
        """The high end of a memory or time figure (what plans are sized and checked at)."""
        return value * math.exp(self.high)

    def describe(self) -> str:
        """One assumption sentence: where the band comes from, and whether it is borrowed and widened."""
        what = class_words(self.cls)
        kind = _(KIND_LABEL[self.kind])
        lo, hi = f"{math.exp(self.low) - 1:+.0%}", f"{math.exp(self.high) - 1:+.0%}"
        if self.pooled:
            return _("{kind} range for {what}: {lo} to {hi} of the estimate ({coverage} interval); few measurements of this "
                     "class, so it is borrowed from {source} ({rows} measurements in {groups} source groups) and widened "
                     "x{widen}").format(kind=kind, what=what, lo=lo, hi=hi, source=class_words(self.source),
                                        rows=self.rows, groups=self.groups, widen=f"{self.widen:.2f}",
                                        coverage=COVERAGE_TEXT)
        return _("{kind} range for {what}: {lo} to {hi} of the estimate ({coverage} interval from {rows} measurements in "
                 "{groups} source groups, bench/accuracy.py)").format(kind=kind, what=what, lo=lo, hi=hi,
                                                                     rows=self.rows, groups=self.groups,
                                                                     coverage=COVERAGE_TEXT)


def class_words(cls: str) -> str:
    """A class in words, in the current language."""
    if cls.startswith("serve/"):
        return _("LLM serving on {engine}").format(engine=cls.split("/", 1)[1])
    return _(CLASS_LABEL[cls]) if cls in CLASS_LABEL else cls


def parent(cls: str) -> str | None:
    if cls == "all":
        return None
    if cls.startswith("serve/"):
        return "serve"
    return CLASS_PARENT.get(cls, "all")


def interval_class(task: str, framework: str | None, model_kind: str, *, profile: bool, tp: int = 1, pp: int = 1,
                   zero: int = 0, fsdp: str = "none", moe: bool = False) -> str:
    """The workload class whose measured error sizes the ranges (the issue's split; one class per workload).

    Training a model with routed experts is its own class, whatever its layout: its step is set by the routing
    (tokens per expert, the dispatch's all-to-all and host syncs, the stack's grouped GEMMs and CUDA graphs), and
    its measured error is several times the dense classes' (Qwen3-30B-A3B from 0.5x to 3.9x of the estimate across
    Megatron-Bridge editions). Pooled with dense runs it had widened their ranges and still missed its own."""
    if model_kind in NON_LLM_CLASS and (profile or model_kind == "encoder"):
        return NON_LLM_CLASS[model_kind]
    if task == "inference":
        return f"serve/{framework or 'auto'}"
    if moe:
        return "train/moe"
    if tp > 1 or pp > 1:   # a model-parallel run's time is its pipeline's and collectives', adapters or not
        return "train/pipelined"
    if task == "qlora":
        return "train/qlora"
    if task == "lora":
        return "train/lora"
    if zero >= 3 or (fsdp or "none") != "none":
        return "train/sharded"
    return "train/full"


def class_of(est: Any) -> str:
    """The class of an Estimate (its resolved workload, model and layout)."""
    w, lay, model = est.workload, est.layout, est.model
    return interval_class(w.task or "inference", w.framework, getattr(model, "kind", "decoder"),
                          profile=getattr(model, "profile", None) is not None, tp=lay.tp, pp=lay.pp, zero=lay.zero,
                          fsdp=lay.fsdp, moe=getattr(model, "moe", None) is not None)


# ------------------------------------------------------------------------------------------ the data file

@functools.cache
def table() -> Mapping[str, Any]:
    """data/intervals.json (read once, on first use)."""
    path = importlib.resources.files("gpuplan") / "data" / DATA_FILE
    return json.loads(path.read_text(encoding="utf-8"))


def provenance() -> dict[str, Any]:
    """What the bands were computed from (date, measurement files, rows, groups, method, calibration)."""
    return {k: v for k, v in table().items() if k != "classes"}


@functools.cache
def band(cls: str, kind: str) -> Band:
    """The band of a class: its own entry, else the nearest ancestor's (marked pooled)."""
    classes = table()["classes"]
    cur: str | None = cls
    while cur is not None:
        entry = classes.get(cur, {}).get(kind)
        if entry:
            return Band(cls=cls, kind=kind, low=float(entry["low"]), high=float(entry["high"]),
                        rows=int(entry["rows"]), groups=int(entry["groups"]), source=str(entry.get("source", cur)),
                        widen=float(entry.get("widen", 1.0)))
        cur = parent(cur)
    raise KeyError(f"intervals.json has no {kind} band for {cls!r} nor for 'all'")  # shipped file: a bug


# ------------------------------------------------------------------------------------------ applying bands

def _num(x: float, whole: bool) -> float | int:
    return int(round(x)) if whole else float(f"{x:.6g}")


def _engine_need(mem: Any) -> float:
    """What a serving engine needs (weights, KV cache of the batch, activations, graphs, context) as opposed to
    what it pre-allocates: the peak allocation plus the fixed costs outside the allocator."""
    return mem.peak_allocated_bytes + max(0.0, mem.per_gpu_bytes - mem.peak_reserved_bytes)


# Classes whose weights are a checkpoint's bytes held whole on every GPU, beside activations the band spreads: a
# diffusion pipeline's components (FLUX.1-dev holds 31 GiB of its 34 GiB at 1024 px). The other classes do not borrow
# these residuals (interval_fit.band_entry). Serving engines are treated the same way (their pre-allocation aside:
# memory_bounds).
WEIGHTS_EXACT_CLASSES = frozenset({"diffusion"})


def weights_exact(est: Any) -> bool:
    """True when the band spreads only what sits beside the weights (a serving engine, a diffusion pipeline); the
    bench fits those classes' residuals the same way (bench/accuracy.py Row.exact)."""
    return bool(est.memory.engine_reserved_bytes) or class_of(est) in WEIGHTS_EXACT_CLASSES


def memory_bounds(est: Any, value: float) -> tuple[float, float]:
    """The range of the per-GPU memory of this estimate (``value``: per_gpu_bytes or need_bytes). A serving
    engine pre-allocates a fixed share of the card (vLLM gpu_memory_utilization, SGLang mem_fraction_static):
    only what it needs beyond that share is uncertain. A diffusion pipeline's weights are exact: the band spreads
    the rest."""
    reserved = est.memory.engine_reserved_bytes
    if reserved:
        lo, hi = _weights_exact_bounds(est, _engine_need(est.memory))
        return max(reserved, lo), max(reserved, hi)
    if weights_exact(est):
        return _weights_exact_bounds(est, value)
    return _floored(est, value, *band(class_of(est), "memory").bounds(value))


# What a training step certainly holds on one GPU: the tensors counted from the model's shape and the layout (weights,
# gradients, optimizer states, and a LoRA adapter with its gradients and states), exact up to the allocator's rounding.
EXACT_COMPONENTS = ("weights", "gradients", "optimizer", "adapters")


def _floored(est: Any, value: float, lo: float, hi: float) -> tuple[float, float]:
    """A band scales the whole figure, so its low end can fall below the weights, gradients and optimizer states
    that are on the card whatever the activations do (QLoRA's band, x0.44 at its low end, put a 32B's NF4 weights
    above the low end of its range). The low end is at least those tensors; the high end, which sizes plans, is the
    band's."""
    comps = getattr(est.memory, "components", None) or {}
    exact = sum(float(comps.get(k, 0.0)) for k in EXACT_COMPONENTS)
    return max(lo, min(exact, value)), hi


def _weights_exact_bounds(est: Any, value: float) -> tuple[float, float]:
    """A serving engine's (a diffusion pipeline's) memory figure: what it certainly holds (:func:`exact_bytes`) is
    known, so the band spreads only what ``value`` holds beside it (an engine's activations, CUDA graphs, context and
    communicator buffers). The engine rows of bench/accuracy.py are fitted the same way (ln of measured over
    estimated memory beside those bytes)."""
    exact = min(exact_bytes(est), 0.95 * value)
    lo, hi = band(class_of(est), "memory").bounds(max(1.0, value - exact))
    return exact + lo, exact + hi


def _exact_weights(mem: Any) -> float:
    """The weight bytes a serving engine (a diffusion pipeline) loads on one GPU (0 when the estimate has no
    breakdown)."""
    return float((getattr(mem, "components", None) or {}).get("weights", 0.0))


def exact_bytes(est: Any) -> float:
    """The bytes of a weights-exact estimate (:func:`weights_exact`) that are arithmetic, not estimated: the weights
    (a checkpoint's bytes) and, in a serving engine's paged pool, the KV cache of the workload's batch (its tokens x
    bytes per token, as the engine's block manager allocates it). The band spreads the rest; bench/accuracy.py
    subtracts the same bytes from the measurement. 0 for the other classes."""
    if not weights_exact(est):
        return 0.0
    mem = est.memory
    kv = float(getattr(mem, "kv_batch_bytes", None) or 0.0) if mem.engine_reserved_bytes else 0.0
    return _exact_weights(mem) + kv


def memory_high_bytes(est: Any) -> float:
    """GPU memory at the high end of its 80 % interval: what the recommender's fit decision and micro-batch
    use (the point figure is the middle of the range, not a bound)."""
    return memory_bounds(est, est.memory.per_gpu_bytes)[1]


def time_bounds(seconds: float, cls: str) -> tuple[float, float]:
    """The range of a duration of this class (a job's compute time; fixed costs are added outside)."""
    return band(cls, "time").bounds(seconds)


def estimate_intervals(est: Any) -> dict[str, list[float | int]]:
    """``intervals`` of the estimate contract: {dotted path: [low, high]} for every memory and time figure."""
    out: dict[str, list[float | int]] = {}
    mem = est.memory
    figures = {"per_gpu_bytes": mem.per_gpu_bytes, "need_bytes": mem.required_bytes,
               "peak_allocated_bytes": mem.peak_allocated_bytes, "peak_reserved_bytes": mem.peak_reserved_bytes}
    for key in MEMORY_KEYS:
        value = figures[key]
        if value:
            if key in ("per_gpu_bytes", "need_bytes"):
                lo, hi = memory_bounds(est, value)
            elif weights_exact(est):    # the engine's (pipeline's) peaks hold the same exact weights
                lo, hi = _weights_exact_bounds(est, value)
            else:
                lo, hi = _floored(est, value, *band(class_of(est), "memory").bounds(value))
            out[f"memory.{key}"] = [_num(lo, True), _num(hi, True)]
    perf = est.performance or {}
    tb = band(class_of(est), "time")
    for key in TIME_KEYS + RATE_KEYS:
        value = perf.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            lo, hi = tb.bounds(float(value), rate=key in RATE_KEYS)
            out[f"performance.{key}"] = [_num(lo, False), _num(hi, False)]
    return out


def fit_confidence(est: Any) -> float:
    """The chance that the job's real peak stays within the card, reading the band as a split normal (its
    10th and 90th percentiles on each side of the median). 0.9 at the high end of the interval."""
    b = band(class_of(est), "memory")
    value, cap = est.memory.per_gpu_bytes, est.memory.capacity_bytes
    if value <= 0 or cap <= 0:
        return 1.0
    if weights_exact(est):   # as memory_bounds: the weights (and an engine's batch KV) are exact, the rest is spread
        value = _engine_need(est.memory) if est.memory.engine_reserved_bytes else value
        exact = min(exact_bytes(est), 0.95 * value)
        value, cap = max(1.0, value - exact), cap - exact
        if cap <= 0:
            return 0.0
    z90 = 1.2815515655446004
    mid = (b.low + b.high) / 2.0
    x = math.log(cap / value) - mid
    sigma = (b.high - mid if x >= 0 else mid - b.low) / z90
    if sigma <= 0:
        return 1.0 if x >= 0 else 0.0
    return 0.5 * (1.0 + math.erf(x / sigma / math.sqrt(2.0)))


def notes(est: Any) -> list[str]:
    """The assumption sentences of an estimate's ranges (memory and time bands of its class)."""
    cls = class_of(est)
    out = [band(cls, "memory").describe()]
    weights = _exact_weights(est.memory)
    kv = exact_bytes(est) - weights if weights_exact(est) else 0.0
    if weights_exact(est) and weights > 0 and kv > 0:
        out.append(_("the memory range applies to what sits beside the weights and the batch's KV cache ({gib:.2f} + "
                     "{kv:.2f} GiB per GPU: a checkpoint's bytes and tokens x bytes per token, exact)").format(
            gib=weights / 1024**3, kv=kv / 1024**3))
    elif weights_exact(est) and weights > 0:
        out.append(_("the memory range applies to what sits beside the weights ({gib:.2f} GiB per GPU, a "
                     "checkpoint's bytes, exact)").format(gib=weights / 1024**3))
    if est.performance:
        out.append(band(cls, "time").describe())
    return out
