"""The batch of an offline job that runs fixed batches per forward (speech transcription, image generation, vision,
embeddings with an encoder-only model: estimate/engine_defaults.py ``batched_job``): the number of samples each forward
(or pipeline call) processes, searched per machine like a training recipe's micro-batch.

A batch job has no request stream: its throughput is what it buys. A forward's time grows slower than its
batch (the weights are read once per forward, the CPU launches once per forward, a speech decoder streams its
weights once per token step: estimate/forward.py, estimate/nonllm/nonllm.py), so samples per second grow with the
batch until the GPU is busy. The search doubles the batch from 1 (data/recipes.yaml ``max_job_batch``) while
it fits the GPU (the estimator's memory at that batch), stays within the job's latency target when the workload
sets ``serving.ttft_ms`` (one batch's latency), and gains at least ``JOB_BATCH_MIN_GAIN`` per doubling; the plan
says which batch runs and what stopped the climb, and the bundle's transcribe.py / generate_images.py / embed.py take
it. LLM jobs are batched by the serving estimator (its best serving batch within the KV-cache budget)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from gpuplan.i18n import _
from gpuplan.estimate.engine_defaults import batched_job
from gpuplan.plan.search.candidates import Knobs
from gpuplan.plan.money.ranges import memory_need
from gpuplan.plan.search.recipe import BatchOption, search_setting
from gpuplan.plan.search.search_point import Candidate, Variant
from gpuplan.units import GIB

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.search.search import Searcher

JOB_BATCH_MIN_GAIN = 0.02    # a doubling that adds less throughput than this stops the climb (assumed)


def job_batches(s: "Searcher") -> tuple[int, ...]:
    """The batches an offline job searches: powers of two up to max_job_batch for a model that runs fixed batches
    per forward (``batched_job``) whose workload leaves batch_size unset and has a dataset (a job, not a service);
    () otherwise."""
    w = s.w
    if s.training or w.dataset is None or w.batch_size is not None or not batched_job(s.model, w.framework):
        return ()
    out, b = [], 1
    while b <= int(search_setting("max_job_batch")):
        out.append(b)
        b *= 2
    return tuple(out)


def _latency_cap_s(s: "Searcher") -> float | None:
    sla = s.w.serving
    return sla.ttft_ms / 1000.0 if sla and sla.ttft_ms else None


def search_job_batch(s: "Searcher", inst, nodes: int, system, shape: tuple[int, int, int, int], v: Variant,
                     cands: list[Candidate], reject, best_mem) -> bool:
    """Climb the batch on one layout; append the best candidate (with its reasons); True when one fits."""
    tp, pp, dp, cp = shape
    cap = _latency_cap_s(s)
    best: Candidate | None = None
    stop: str | None = None
    for b in s.job_batches:
        lay = s.layout(v, tp, pp, dp, Knobs(), BatchOption(b, 1), cp=cp)
        e = s.estimate(v, system, lay, full=True)
        r = s._check(inst, e, lay, v, system, nodes, best_mem if b == 1 else None)
        if r is not None or e is None:
            if best is None and r is not None:
                reject(inst, r)
            elif best is not None and e is not None and r is not None and r.code == "memory":
                stop = _("batch {next} would need {need} GiB per GPU at the high end of its memory range, over the "
                         "{cap} GiB usable").format(
                    next=b, need=f"{memory_need(e) / GIB:.1f}",
                    cap=f"{e.memory.capacity_bytes * (1 - s.headroom) / GIB:.1f}")
            elif best is not None:
                stop = _("batch {next} does not fit the host RAM").format(next=b)
            break
        latency = float(e.performance.get("latency_s") or 0.0)
        if cap is not None and latency > cap and best is not None:
            stop = _("batch {next} would take {latency} s per batch, over the {cap} s latency target").format(
                next=b, latency=f"{latency:.2f}", cap=f"{cap:g}")
            break
        c = Candidate(inst, nodes, tp, pp, dp, Knobs(), v, e, lay, batch=BatchOption(b, 1))
        if best is not None and c.speed(False) < best.speed(False) * (1.0 + JOB_BATCH_MIN_GAIN):
            stop = _("batch {next} adds less than {gain} ({rate}/s against {best}/s)").format(
                next=b, gain=f"{JOB_BATCH_MIN_GAIN:.0%}", rate=f"{c.speed(False):.3g}", best=f"{best.speed(False):.3g}")
            break
        best = c
    if best is None or not s._post_checks(best, reject):
        return False
    b = best.layout.micro_batch
    first = s.estimate(v, system, s.layout(v, tp, pp, dp, Knobs(), BatchOption(1, 1), cp=cp), full=True)
    base = float(first.performance.get("max_requests_per_s") or 0.0) * dp if first is not None else 0.0
    mem = _("{need} of {cap} GiB").format(need=f"{best.est.memory.per_gpu_bytes / GIB:.1f}",
                                         cap=f"{best.est.memory.capacity_bytes / GIB:.1f}")
    rate = f"{best.speed(False):.3g}"
    if stop is None:
        stop = _("the largest batch searched (data/recipes.yaml max_job_batch)")
    if b > 1 and base > 0:
        why = _("batch {batch} per forward: {rate}/s against {base}/s at batch 1, {mem} per GPU; {stop}").format(
            batch=b, rate=rate, base=f"{base:.3g}", mem=mem, stop=stop)
    else:
        why = _("batch {batch} per forward: {rate}/s, {mem} per GPU; {stop}").format(batch=b, rate=rate, mem=mem,
                                                                                    stop=stop)
    best.explain = functools.partial(_say, why=why)   # written when the candidate wins (and on its aliases)
    s.best = max(s.best, best.speed(False))
    cands.append(best)
    return True


def _say(c: Candidate, *, why: str) -> None:
    c.why.append(why)
