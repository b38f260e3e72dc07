"""What the search says about a layout: the words of a memory rejection, why a memory-saving knob is
on, and the ``recipe`` record of a training candidate (plan/search/recipe.py). Text only; no estimates here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import _
from gpuplan.plan.search.candidates import Knobs, is_llm
from gpuplan.plan.search.recipe import BatchTarget, Recipe, batch_why, chosen_fields, optimizer_steps, pinned_fields
from gpuplan.units import GIB

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.search import feasibility as fz
    from gpuplan.plan.search.search_point import Candidate
    from gpuplan.workload import Workload


def what(lay: Layout, w: "Workload", model, training: bool, quantization: str, system: System) -> str:
    """"(at seq 4096, ckpt full, ZeRO-2, mb 4, TP8 PP2, 16 GPUs)": the layout a memory rejection tried."""
    bits = []
    if training:
        bits.append(_("at seq {n}").format(n=w.seq_len))
        bits.append(_("ckpt {mode}").format(mode=_(lay.checkpointing)))
        if lay.zero:
            bits.append(f"ZeRO-{lay.zero}")
        if lay.offload != "none":
            bits.append(_("offload {target}").format(target=lay.offload))
        if lay.micro_batch > 1:
            bits.append(_("micro-batch {n}").format(n=lay.micro_batch))
    else:
        if is_llm(model):
            bits.append(_("at {prompt}+{output} tokens").format(prompt=w.prompt_tokens, output=w.output_tokens))
        if quantization != "none":
            bits.append(quantization)
    if lay.tp > 1 or lay.pp > 1:
        bits.append(f"TP{lay.tp} PP{lay.pp}")
    if lay.cp > 1:
        bits.append(f"CP{lay.cp}")
    n = system.total_gpus
    bits.append(_("{n} GPUs").format(n=n) if n > 1 else _("1 GPU") if n == 1 else _("{n} GPU").format(n=n))
    return _("({items})").format(items=_(", ").join(bits))


def knob_why(k: Knobs, rejected_below: "dict[Knobs, fz.Reject | None]") -> list[str]:
    """"full checkpointing needed: without it needs ..." for each knob whose step down failed on memory
    at the same micro-batch."""
    out = []
    for feature, down in k.steps_down():
        r = rejected_below.get(down)
        if r is not None and r.code in ("memory", "host_memory"):
            if feature.endswith(" checkpointing"):
                feature = _("{mode} checkpointing").format(mode=_(feature.removesuffix(" checkpointing")))
            elif feature == "CPU offload":
                feature = _("CPU offload")
            reason = re.split(r": |：", r.reason, maxsplit=1)[-1]
            out.append(_("{feature} needed: without it {reason}").format(feature=feature, reason=reason))
    return out


def recipe_of(c: "Candidate", w: "Workload", target: BatchTarget | None, *, llm: bool) -> Recipe:
    """The recipe block of a training candidate: the numbers it runs, what was chosen and pinned, and why."""
    lay = c.layout
    perf = c.est.performance
    # the estimator's bubble is idle time over the ideal step ((p-1)/(v m)); the recipe states the share of the
    # pipelined step that is idle, b / (1 + b) (GPipe's (K-1)/(M+K-1), Huang et al. 2019)
    ratio = float(perf.get("pipeline_bubble") or 0.0)
    bubble = ratio / (1.0 + ratio)
    glob = lay.micro_batch * lay.grad_accum * lay.dp
    why: list[str] = []
    if target is not None and c.batch is not None:
        mem = (c.est.memory.per_gpu_bytes / GIB, c.est.memory.capacity_bytes / GIB)
        why += batch_why(target, c.batch, lay.dp, mem_gib=mem, next_mb=c.next_need, max_mb=c.largest_fit,
                         bubble=bubble, pipelined=lay.pp > 1 and not lay.naive_pipeline)
    if lay.pp > 1 and not lay.naive_pipeline and w.parallel is None:
        if lay.vp > 1:
            why.append(_("interleaved pipeline, {vp} virtual stages per GPU: bubble {bubble} ((p-1)/(v m), "
                         "m = {m} micro-batches per step)").format(vp=lay.vp, bubble=f"{bubble:.1%}",
                                                                  m=lay.microbatches))
        else:
            why.append(_("pipeline bubble {bubble} ((p-1)/m, m = {m} micro-batches per step)").format(
                bubble=f"{bubble:.1%}", m=lay.microbatches))
    if target is None and w.batch_size is None:
        why.append(_("micro-batch {micro} per GPU: the batch search covers transformer models; set batch_size for "
                     "this one").format(micro=lay.micro_batch))
    if lay.cp > 1 and w.parallel is None:
        why.append(_("context parallelism {cp}: each {seq}-token sequence is split over {cp} GPUs because no layout "
                     "without it fits (its ring exchange of keys and values is timed, hidden behind the attention it overlaps)").format(cp=lay.cp,
                                                                                                  seq=w.seq_len))
    mfu = perf.get("mfu")
    return Recipe(micro_batch=lay.micro_batch, gradient_accumulation=lay.grad_accum, global_batch_sequences=glob,
                  global_batch_tokens=int(glob * int(w.seq_len or 2048)) if llm else None,
                  checkpointing=lay.checkpointing,
                  zero=lay.zero, fsdp=lay.fsdp, tp=lay.tp, pp=lay.pp, vp=lay.vp, cp=lay.cp, dp=lay.dp,
                  pipeline_bubble=bubble, mfu=float(mfu) if mfu is not None else None,
                  optimizer=c.variant.w.optimizer, optimizer_steps=optimizer_steps(w.dataset, int(w.seq_len or 2048), glob,
                                                                   bool(c.variant.w.packed)),
                  chosen=chosen_fields(w, llm=llm), pinned=pinned_fields(w), why=tuple(why))
