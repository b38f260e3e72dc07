"""The training recipe: the global batch a plan runs and how it is split, and the record that says
what the search chose and why (the ``recipe`` block of each training plan).

The global batch (sequences per optimizer step) is micro-batch x gradient accumulation x DP
(Megatron: GBS = MBS x DP x microbatches; Hugging Face: per-device batch x devices x accumulation).
It is taken from the workload (``global_batch_size`` or ``global_batch_tokens``), else from a
published recipe for the task and model size (data/recipes.yaml, every value sourced). For one DP
size the search may run any split whose global batch lies within the tolerance of the target
(:func:`batch_options`); :mod:`gpuplan.plan.search.recipe_search` picks the split, the checkpointing, the
ZeRO stage and the virtual pipeline stages. Pure: no prices, no estimates here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, NamedTuple

from gpuplan.files.datafiles import load_data
from gpuplan.errors import GpuplanError
from gpuplan.estimate.system import accumulation_for, global_sequences
from gpuplan.i18n import _
from gpuplan.workload import DatasetSpec, Workload


@functools.cache
def _doc() -> dict:
    return load_data((files("gpuplan") / "data" / "recipes.yaml")) or {}


def search_setting(key: str) -> Any:
    """A bound of the recipe search (data/recipes.yaml ``search``)."""
    return _doc()["search"][key]["value"]


class BatchOption(NamedTuple):
    """One split of the global batch on one DP size."""

    micro_batch: int
    grad_accum: int


@dataclass(frozen=True)
class BatchTarget:
    """The global batch a training plan aims at, and what the user pinned of its split."""

    sequences: int | None       # target sequences per optimizer step; None: micro x accumulation x DP (both pinned)
    seq_len: int
    tolerance: float
    micro_batch: int | None     # the workload's batch_size (pinned), else None (searched)
    grad_accum: int | None      # the workload's gradient_accumulation (pinned), else None (searched)
    origin: str                 # workload | default | pins
    label: str = ""             # the default's label (a msgid of data/recipes.yaml), or the workload key
    source: str = ""

    def origin_text(self) -> str:
        """Where the target comes from, in words (the current language)."""
        if self.origin == "default":
            return _("default: {label}, data/recipes.yaml").format(label=_(self.label))
        return _("your {key}").format(key=self.label)


def default_global_batch(task: str, model) -> dict:
    """The first rule of data/recipes.yaml that matches the task, the model kind and its size."""
    params_b = float(getattr(model, "params_total", 0.0) or 0.0) / 1e9
    kind = getattr(model, "kind", "decoder")
    for rule in _doc()["global_batch_defaults"]:
        if rule["task"] != task or ("kind" in rule and rule["kind"] != kind):
            continue
        if params_b < float(rule.get("min_params_b", 0.0)):
            continue
        return rule
    raise GpuplanError(_("No default global batch for task {task}.").format(task=task),
                       hint=_("Set global_batch_size (sequences per optimizer step)."), field="global_batch_size")


def batch_target(w: Workload, model) -> BatchTarget:
    """The target of a resolved training workload (searched fields unset)."""
    seq_len = int(w.seq_len or 2048)
    tol = float(search_setting("tolerance"))
    mb = w.batch_size
    ga = 1 if w.optimizer_in_backward else w.gradient_accumulation
    if w.global_batch_size is not None:
        return BatchTarget(int(w.global_batch_size), seq_len, tol, mb, ga, "workload", "global_batch_size")
    if w.global_batch_tokens is not None:
        return BatchTarget(int(global_sequences(w) or 1), seq_len, tol, mb, ga, "workload", "global_batch_tokens")
    if mb is not None and ga is not None:
        return BatchTarget(None, seq_len, tol, mb, ga, "pins")
    rule = default_global_batch(w.task or "full", model)
    seqs = int(rule["sequences"]) if "sequences" in rule else max(1, int(math.floor(rule["tokens"] / seq_len + 0.5)))
    return BatchTarget(seqs, seq_len, tol, mb, ga, "default", rule["label"], rule["source"])


def _powers_of_two(limit: int) -> list[int]:
    out, x = [], 1
    while x <= limit:
        out.append(x)
        x *= 2
    return out


@functools.lru_cache(maxsize=4096)
def batch_options(target: BatchTarget, dp: int) -> tuple[BatchOption, ...]:
    """The splits of the target on ``dp`` data-parallel ranks, smallest micro-batch first: micro-batches are
    powers of two up to data/recipes.yaml ``max_micro_batch`` (or the pinned one), each with the accumulation
    whose global batch comes nearest the target; only splits within the tolerance. Empty when ``dp`` ranks
    cannot come close (more ranks than the target has sequences)."""
    if target.sequences is None:
        return (BatchOption(int(target.micro_batch or 1), int(target.grad_accum or 1)),)
    t = target.sequences
    lo, hi = t * (1 - target.tolerance), t * (1 + target.tolerance)
    if target.micro_batch is not None:
        mbs = [target.micro_batch]
    else:
        mbs = _powers_of_two(int(search_setting("max_micro_batch")))
        if target.grad_accum is not None:   # accumulation pinned: also the micro-batch that meets the target best
            mbs.append(max(1, int(math.floor(t / (target.grad_accum * dp) + 0.5))))
    out: dict[int, BatchOption] = {}
    for mb in sorted(set(mbs)):
        ga = target.grad_accum or accumulation_for(t, mb, dp)
        if lo <= mb * ga * dp <= hi:
            out[mb] = BatchOption(mb, ga)
    return tuple(out.values())


def no_batch_reason(target: BatchTarget, dp: int) -> str:
    """Why ``dp`` ranks have no split of the target (a ``layout`` rejection)."""
    assert target.sequences is not None
    pins = [f"{k} {v}" for k, v in (("batch_size", target.micro_batch), ("gradient_accumulation", target.grad_accum))
            if v is not None]
    if pins:
        return _("DP {dp} with your {pins} cannot run a global batch within {tol} of {target} sequences ({origin}): "
                 "set global_batch_size to what you mean").format(dp=dp, pins=_(", ").join(pins),
                                                                  tol=f"{target.tolerance:.0%}", target=target.sequences,
                                                                  origin=target.origin_text())
    return _("DP {dp} cannot run a global batch within {tol} of {target} sequences ({origin}): use fewer GPUs or set "
             "global_batch_size").format(dp=dp, target=target.sequences, origin=target.origin_text(),
                                         tol=f"{target.tolerance:.0%}")


@dataclass(frozen=True)
class Recipe:
    """The ``recipe`` block of a training plan (recommend --json contract)."""

    micro_batch: int
    gradient_accumulation: int
    global_batch_sequences: int          # (samples for models without a sequence)
    global_batch_tokens: int | None      # None for non-transformer models (images, audio clips)
    checkpointing: str
    zero: int
    fsdp: str
    tp: int
    pp: int
    vp: int
    cp: int
    dp: int
    pipeline_bubble: float
    mfu: float | None
    optimizer: str | None
    optimizer_steps: int | None
    chosen: tuple[str, ...]
    pinned: tuple[str, ...]
    why: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["chosen"], d["pinned"], d["why"] = list(self.chosen), list(self.pinned), list(self.why)
        d["pipeline_bubble"] = round(self.pipeline_bubble, 6)
        d["mfu"] = None if self.mfu is None else round(self.mfu, 6)
        return d


RECIPE_FIELDS = ("batch_size", "gradient_accumulation", "grad_checkpointing", "optimizer")
PARALLEL_FIELDS = ("tp", "pp", "vp", "cp", "zero", "offload")


def pinned_fields(w: Workload) -> tuple[str, ...]:
    """The recipe fields the user set (workload names; the resolved workload leaves searched ones unset). A set
    ``parallel`` block fixes all its keys (unset ones at their defaults), so all its recipe keys are pinned."""
    out = [f for f in ("batch_size", "gradient_accumulation", "global_batch_size", "global_batch_tokens",
                       "grad_checkpointing", "optimizer") if getattr(w, f) is not None]
    if w.parallel is not None:
        out += [f"parallel.{k}" for k in PARALLEL_FIELDS]
    return tuple(out)


def chosen_fields(w: Workload, *, llm: bool) -> tuple[str, ...]:
    """The recipe fields the search chose: those left unset (the parallel block is fixed as a whole)."""
    out = [f for f in RECIPE_FIELDS if getattr(w, f) is None and (llm or f not in ("batch_size", "gradient_accumulation"))
           and not (f == "optimizer" and w.task in ("lora", "qlora"))]   # (LoRA keeps AdamW: tiny states)
    if w.optimizer_in_backward and "gradient_accumulation" in out:
        out.remove("gradient_accumulation")
    if w.parallel is None:
        out += [f"parallel.{k}" for k in PARALLEL_FIELDS]
    return tuple(out)


def optimizer_steps(dataset: DatasetSpec | None, seq_len: int, global_batch: int, packed: bool = False) -> int | None:
    """Optimizer steps of the whole job: samples (unpacked), or sequences of ``seq_len`` tokens (``packed``, or a
    dataset given in tokens), over the global batch. The plan's recipe and the bundle's launchers count with it."""
    ds = dataset
    if ds is None or global_batch < 1:
        return None
    if ds.samples and not packed:
        seqs = ds.samples * ds.epochs
    else:
        tokens = ds.total_tokens(seq_len)
        if not tokens:
            return None
        seqs = tokens / seq_len
    return max(1, math.ceil(seqs / global_batch))


def batch_why(target: BatchTarget, opt: BatchOption, dp: int, *, mem_gib: tuple[float, float],
              next_mb: tuple[int, float | None] | None, max_mb: int | None, bubble: float,
              pipelined: bool) -> list[str]:
    """Sentences for the micro-batch and accumulation a plan runs (only those the search chose)."""
    out: list[str] = []
    need, cap = mem_gib
    glob = opt.micro_batch * opt.grad_accum * dp
    if target.micro_batch is None:
        if pipelined and max_mb is not None and max_mb > opt.micro_batch:
            out.append(_("micro-batch {micro} ({largest} fits but is slower): {m} micro-batches per step keep the "
                         "pipeline bubble at {bubble}").format(micro=opt.micro_batch, largest=max_mb, m=opt.grad_accum,
                                               bubble=f"{bubble:.1%}"))
        elif next_mb is None:
            out.append(_("micro-batch {micro}: {need} of {cap} GiB; the global batch of {glob} sequences over DP {dp} "
                         "leaves no larger one").format(micro=opt.micro_batch, need=f"{need:.1f}", cap=f"{cap:.1f}",
                                                        glob=glob, dp=dp))
        elif next_mb[1] is not None:
            out.append(_("micro-batch {micro}: {need} of {cap} GiB; {next} would need {next_need} GiB at the high end "
                         "of its memory range").format(
                micro=opt.micro_batch, need=f"{need:.1f}", cap=f"{cap:.1f}", next=next_mb[0],
                next_need=f"{next_mb[1]:.1f}"))
        else:
            out.append(_("micro-batch {micro}: {need} of {cap} GiB; {next} does not fit the host RAM").format(
                micro=opt.micro_batch, need=f"{need:.1f}", cap=f"{cap:.1f}", next=next_mb[0]))
    tokens = _tokens(glob * target.seq_len)
    if target.sequences is None:
        out.append(_("global batch {glob} sequences ({tokens} tokens) = your micro-batch {micro} x accumulation "
                     "{accum} x DP {dp}").format(glob=glob, tokens=tokens, micro=opt.micro_batch, accum=opt.grad_accum,
                                                 dp=dp))
    elif glob == target.sequences:
        out.append(_("accumulation {accum} for a global batch of {glob} sequences ({tokens} tokens; {origin})").format(
            accum=opt.grad_accum, glob=glob, tokens=tokens, origin=target.origin_text()))
    else:
        out.append(_("accumulation {accum} for a global batch of {glob} sequences ({tokens} tokens), the nearest to "
                     "the target {target} that micro-batch {micro} x DP {dp} divides ({origin})").format(
            accum=opt.grad_accum, glob=glob, tokens=tokens, target=target.sequences, micro=opt.micro_batch, dp=dp,
            origin=target.origin_text()))
    return out


def _tokens(n: float) -> str:
    """4194304 -> "4.2M", 262144 -> "262k"."""
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    if n >= 1e3:
        return f"{n / 1e3:.0f}k"
    return f"{n:.0f}"
