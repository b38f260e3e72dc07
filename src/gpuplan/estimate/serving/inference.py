"""Serving latency and throughput of one replica (the ``performance`` block of an inference estimate).

The pieces: estimate/serving/decode.py (one decode step: roofline plus the per-layer fixed costs of kernels,
all-reduces and expert dispatch), estimate/serving/prefill.py (reading the prompts) and estimate/serving/replica.py (the
replica under load: continuous batching with prefill interference and queueing). This module builds the
replica model of one workload and reads the figures off it:

- at the workload's concurrency (``batch_size`` requests always in flight): TTFT of one request (p50 and
  p90), TPOT, the request's latency and the tokens/s it sees;
- at the SLA: the batch limit (``max_num_seqs``) and the requests/s one replica sustains with the TPOT under
  load and the p90 TTFT within their targets (the figure the recommender sizes replicas with, and the one
  every plan shows: plan/serving/serving_report.py reads the same model at the planned load).

Work that generates nothing (embeddings, reranking, scoring) is one forward per batch of prompts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuplan.estimate.memory.engine_limits import step_tokens
from gpuplan.estimate.serving.burst import burst_s
from gpuplan.estimate.serving.decode import COMPILED, ServingCase, decode_consts
from gpuplan.estimate.memory import ENGINES, InferenceInputs, MemoryEstimate, inference_memory, kv_pool_rule
from gpuplan.estimate.serving.prefill import prefill_time
from gpuplan.estimate.serving.replica import ReplicaModel
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.params import table
from gpuplan.i18n import _

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.workload import Workload

KV_DTYPE_BYTES = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0}

__all__ = ["COMPILED", "InferencePerf", "ServingCase", "engine_speedup_bound", "inference_perf", "max_concurrency",
           "job_time_s", "prefill_only_perf", "replica_model"]


@dataclass
class InferencePerf:
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    max_concurrency: int
    max_requests_per_s: float | None
    prefill_s: float
    decode_step_s: float
    batch: int
    notes: list[str] = field(default_factory=list)
    serving_batch: int = 1
    output_tokens: int = 0
    serving_tpot_s: float | None = None   # TPOT at the SLA capacity (the replica as sized)
    prompt_tokens: int = 0
    latency_s: float | None = None   # one request end to end: its TTFT and every decode step
    ttft_p90_s: float | None = None
    serving_ttft_p90_s: float | None = None   # p90 TTFT at the SLA capacity
    serving_running: float | None = None      # sequences running at the SLA capacity (what an autoscaler targets)
    warnings: list[str] = field(default_factory=list)
    model: ReplicaModel | None = None         # the replica model the figures were read from

    def to_dict(self) -> dict:
        return {
            "serving_batch": self.serving_batch, "serving_tpot_s": self.serving_tpot_s,
            "serving_ttft_p90_s": self.serving_ttft_p90_s, "serving_running": self.serving_running,
            "ttft_s": self.ttft_s, "ttft_p90_s": self.ttft_p90_s, "tpot_s": self.tpot_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "max_concurrency": self.max_concurrency, "max_requests_per_s": self.max_requests_per_s,
            "prefill_s": self.prefill_s, "batch": self.batch,
            "latency_s": self.latency_s,
            # sequences read per second at the workload's batch, and prompt tokens per second (prefill work)
            "sequences_per_s": self.batch / self.latency_s if self.latency_s else None,
            "input_tokens_per_s": (self.batch / self.latency_s * self.prompt_tokens
                                   if self.latency_s and self.prompt_tokens else None),
            # offline maximum throughput (every request queued at once: trtllm-bench throughput,
            # vLLM benchmark_throughput): the best continuous batch within the KV budget
            "max_output_tokens_per_s": (self.max_requests_per_s * self.output_tokens
                                        if self.max_requests_per_s is not None else None),
            # training fields do not apply
            "step_time_s": None, "tokens_per_s": None, "tokens_per_s_per_gpu": None, "samples_per_s": None,
            "mfu": None, "tflops_per_gpu": None, "comm_fraction": None, "total_time_s": None, "gpu_hours": None,
            # an inference job (a dataset of requests): filled in by _inference
            "job_time_s": None,
        }


def engine_speedup_bound(base: str, other: str) -> float:
    """The most requests/s engine ``other`` can gain over ``base`` on the same model, layout and GPUs in
    this model of serving (the recommender skips engines that cannot gain what it asks for). The engines
    differ in their per-step overhead, their per-kernel latency, the memory they reserve and a batch cap;
    prefill, GEMM, attention and all-reduce times are the same. Each request costs prefill + output x step /
    batch, so with no more memory and no higher cap the ratio is at most the larger of the ratios of step
    overheads and kernel latencies; otherwise a larger batch may fit and no bound is given (inf)."""
    inf = table("inference")
    steps = inf["engine_step_overhead_s"]
    kernels = inf["kernel_latency_s"]
    caps = inf["engine_max_batch"]

    def reserve(f: str) -> float:
        rule, frac = kv_pool_rule(f)
        return frac if rule == "total" else math.inf   # a share of the free memory: compared case by case

    if base not in ENGINES or other not in ENGINES or reserve(other) > reserve(base) or math.isinf(reserve(base)):
        return math.inf
    cap_base, cap_other = caps.get(base), caps.get(other)
    if cap_base is not None and (cap_other is None or float(cap_other) > float(cap_base)):
        return math.inf
    step = lambda f: float(steps.get(f, steps["default"]))  # noqa: E731
    kern = lambda f: float(kernels.get(f, kernels["default"]))  # noqa: E731
    return max(1.0, step(base) / step(other), kern(base) / kern(other))


def max_concurrency(mem: MemoryEstimate) -> int:
    if mem.kv_budget_bytes is None or not mem.kv_bytes_per_sequence:
        return 0
    return max(0, int(mem.kv_budget_bytes // mem.kv_bytes_per_sequence))


def chunk_tokens(case: ServingCase, system: System, layout: Layout) -> int:
    """Prompt tokens one engine step takes (memory/engine_limits.step_tokens: vLLM's max_num_batched_tokens default
    and SGLang's chunked_prefill_size by GPU memory); static batching takes one prompt per step."""
    if case.framework not in ENGINES:
        return max(1, case.prompt_tokens)
    return step_tokens(case.framework, system.gpu.id, system.gpu.memory_gib, version=case.framework_version,
                       context_tokens=case.prompt_tokens + case.output_tokens, dp_attention=layout.dp_attention)


def replica_model(s: Shape, case: ServingCase, layout: Layout, system: System, mem: MemoryEstimate,
                  notes: list[str], max_num_seqs: int | None = None) -> ReplicaModel:
    """The load model of one engine copy of this workload (estimate/serving/replica.py). ``max_num_seqs``: the
    batch limit the engine is launched with (unset: as many as the KV cache holds, within the engine's own cap)."""
    continuous = case.framework in ENGINES
    alone = prefill_time(s, case, layout, system, 1, notes)
    marginal = prefill_time(s, case, layout, system, 1, notes, marginal=True) if continuous else alone
    cap = table("inference", "engine_max_batch").get(case.framework)
    if max_num_seqs and continuous:
        cap = min(int(cap), max_num_seqs) if cap else max_num_seqs
    return ReplicaModel(
        consts=decode_consts(s, case, layout, system, notes),
        ctx_tokens=case.prompt_tokens + case.output_tokens / 2.0, prompt_tokens=case.prompt_tokens,
        output_tokens=case.output_tokens, prefill_alone_s=alone, prefill_marginal_s=marginal,
        chunk_tokens=chunk_tokens(case, system, layout), kv_sequences=max_concurrency(mem),
        batch_cap=int(cap) if cap else None, continuous=continuous)


def inference_perf(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int, mem: MemoryEstimate,
                   *, ttft_sla_s: float | None = None, tpot_sla_s: float | None = None,
                   encoder_only: bool = False, max_num_seqs: int | None = None) -> InferencePerf:
    notes: list[str] = []
    if encoder_only or case.output_tokens <= 0:
        return prefill_only_perf(s, case, layout, system, batch, mem, encoder_only, notes, ttft_sla_s)
    model = replica_model(s, case, layout, system, mem, notes, max_num_seqs)
    conc = model.kv_sequences
    warnings: list[str] = []
    at, extra_wait = model.closed_loop(batch)
    if case.framework in ENGINES and batch > max(1, model.slots()):
        warnings.append(_("the KV cache holds {running} of the {batch} concurrent sequences asked for; the other {rest} "
                          "wait for a free slot ({wait:.1f} s on average): more GPUs per model copy, an FP8 KV cache "
                          "or more replicas would serve them all").format(
            running=max(1, model.slots()), batch=batch, rest=batch - max(1, model.slots()), wait=extra_wait))
    ttft = at.ttft_p50_s + extra_wait
    ttft90 = at.ttft_p90_s + extra_wait
    total = at.ttft_mean_s + extra_wait + max(0, case.output_tokens - 1) * at.tpot_s
    running = at.running
    # the running sequences finish at the rate of their own service time; the queue's wait delays a request, not
    # the engine (Little's law over the running ones: before 2026-12-06 the wait was in the divisor, and an asked
    # concurrency past the KV cache's slots cut the reported throughput by the queue's length: SGLang's Gemma 4 E4B
    # rows at 1,024 and 4,096 concurrent requests, 2,403 and 2,397 tokens/s measured, read 389 and 97)
    service = total - extra_wait
    out_tps = running * case.output_tokens / service if service > 0 else 0.0
    limit = model.batch_limit(tpot_sla_s)
    cap = model.capacity(limit, ttft_sla_s, tpot_sla_s) if conc > 0 else None
    if conc <= 0:
        notes.append(_("no room for the KV cache of one sequence: no request rate"))
    elif cap is None:
        notes.append(_("no load meets the SLA: TTFT of one prompt alone {ttft:.2f} s, TPOT of one sequence "
                       "{tpot:.3f} s").format(ttft=model.first_s(1.0), tpot=model.step_s(1.0)))
    else:
        notes.append(_("batch limit {limit} sequences (max_num_seqs); at the SLA one replica sustains {rate:.3g} "
                       "requests/s with about {running:.0f} sequences running, TPOT {tpot:.3f} s and p90 TTFT "
                       "{ttft:.2f} s under that load").format(limit=limit, rate=cap.rate, running=cap.running,
                                                              tpot=cap.tpot_s, ttft=cap.ttft_p90_s))
    return InferencePerf(ttft_s=ttft, tpot_s=at.tpot_s, output_tokens_per_s=out_tps, max_concurrency=conc,
                         max_requests_per_s=cap.rate if cap else 0.0, prefill_s=model.prefill_alone_s,
                         decode_step_s=model.step_s(running), batch=batch, notes=notes,
                         serving_batch=max(1, limit), output_tokens=case.output_tokens,
                         prompt_tokens=case.prompt_tokens, latency_s=total,
                         serving_tpot_s=cap.tpot_s if cap else None, ttft_p90_s=ttft90,
                         serving_ttft_p90_s=cap.ttft_p90_s if cap else None,
                         serving_running=round(cap.running, 2) if cap else None, warnings=warnings, model=model)


PREFILL_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# A larger batch limit is taken only for a gain in requests/s above this share (else the smaller, faster forward).
PREFILL_BATCH_GAIN = 0.01


def pooling_batched_tokens(batch: int, prompt_tokens: int, max_model_len: int) -> int:
    """vLLM's ``--max-num-batched-tokens`` for a pooling (encoder-only) service whose batch limit is ``batch``: the
    tokens of the ``batch`` prompts the latency model timed per forward. vLLM runs bidirectional pooling models
    without chunked prefill, and then refuses a budget below ``max_model_len`` or below ``max_num_seqs``
    (vllm/config/scheduler.py ``SchedulerConfig.verify_max_model_len``), so it is at least both."""
    return max(int(max_model_len), int(batch), int(batch) * max(1, int(prompt_tokens)))


def prefill_only_perf(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int, mem: MemoryEstimate,
                      encoder: bool, notes: list[str], ttft_sla_s: float | None = None) -> InferencePerf:
    """Work that reads a prompt and generates nothing (embeddings, reranking, classification, scoring,
    prefill benchmarks): one forward over ``batch`` prompts. Latency is that forward; sequences/s at the
    workload's batch. A continuous-batching engine runs one forward per scheduler step (its per-step cost,
    inference.engine_step_overhead_s, on top) over the prompts waiting, as many as its batch limit
    (``max_num_seqs``): as many as its KV pool holds (decoders) or up to 1024 (encoders keep no cache). The limit
    is the batch with the best requests/s (a larger one only for a gain above PREFILL_BATCH_GAIN) whose forward
    leaves a request that arrives during one forward within the TTFT target (two forwards); that rate is the
    replica's capacity the recommender sizes with and the batch the bundle launches."""
    latency = prefill_time(s, case, layout, system, batch, notes, encoder=encoder)
    rate = batch / latency
    best, best_b = rate, batch
    if case.framework in ENGINES:
        step = float(table("inference", "engine_step_overhead_s").get(case.framework, 0.0))
        latency += step
        rate = batch / latency
        best, best_b = rate, batch
        cap = 1024 if encoder else max(1, max_concurrency(mem))
        for b in sorted({min(cap, x) for x in PREFILL_BATCHES}):
            forward = prefill_time(s, case, layout, system, b, [], encoder=encoder) + step
            if ttft_sla_s is not None and b > 1 and 2.0 * forward > ttft_sla_s:
                break
            if b / forward > best * (1.0 + PREFILL_BATCH_GAIN):
                best, best_b = b / forward, b
    notes.append(_("prefill only: {batch} prompt(s) of {tokens} tokens per forward, no tokens generated").format(
        batch=batch, tokens=case.prompt_tokens))
    if case.framework in ENGINES and encoder:
        notes.append(_("batch limit {limit} prompts per forward (max_num_seqs): one replica sustains {rate:.3g} "
                       "requests/s").format(limit=best_b, rate=best))
    return InferencePerf(ttft_s=latency, tpot_s=0.0, output_tokens_per_s=0.0, max_concurrency=max(best_b, batch),
                         max_requests_per_s=best, prefill_s=latency, decode_step_s=0.0, batch=batch, notes=notes,
                         serving_batch=best_b, output_tokens=0, prompt_tokens=case.prompt_tokens, latency_s=latency,
                         ttft_p90_s=latency)


def _kv_bytes(w: Workload) -> float:
    kv = w.kv_cache_dtype or "auto"
    if kv == "auto":
        if w.quantization == "fp8" and w.framework == "trtllm":
            return 1.0  # ModelOpt FP8 checkpoints (what TensorRT-LLM serves) quantize the KV cache too
        if w.quantization == "fp8" or w.precision == "fp8":
            return 2.0
        return 2.0 if w.precision != "fp32" else 4.0
    return KV_DTYPE_BYTES[kv]

def vision_flops(model, w: Workload) -> tuple[float, str | None]:
    """(FLOPs, note) of a vision-language model's tower over one request's images: 2 x its parameters x the patches
    behind the request's ``input.image_tokens`` (the tower's linear layers; attention within an image is left out).
    Qwen2-VL-2B's 675 M tower under 2,750 image tokens (4 patches each): 14.9 TFLOPs, against 8.5 for the 1.5 B
    language model's prefill of the whole prompt."""
    image = (w.input.image_tokens if w.input is not None else None) or 0
    params = float(getattr(model, "vision_params", 0.0) or 0.0)
    if not image or not params:
        return 0.0, None
    per_token = float(getattr(model, "vision_patches_per_token", 0.0) or 0.0)
    note_unknown = not per_token
    per_token = per_token or 1.0
    flops = 2.0 * params * per_token * image
    note = _("the vision tower ({params:.2f} B) runs on the {image} image tokens' {patches:,.0f} patches of each "
             "request: {tflops:.1f} TFLOPs before the prefill").format(
        params=params / 1e9, image=image, patches=image * per_token, tflops=flops / 1e12)
    if note_unknown:
        note += _(" (one patch per image token assumed: the config does not say how the tower merges them)")
    return flops, note


def _inference(w: Workload, model, s: Shape, system: System, layout: Layout, memory_only: bool = False):
    """The LLM serving estimate of one resolved workload (estimate.core.estimate_resolved): its memory and, unless
    ``memory_only``, the replica's figures at the workload's concurrency and SLA."""
    framework = w.framework or "vllm"
    encoder = model.kind == "encoder"
    # an encoder job's batch per forward is the layout's: the workload's batch_size (layout_from_workload), or the one
    # the recommender's job search tries (plan/search/search_job.py)
    conc = max(1, layout.micro_batch) if encoder else (w.batch_size or 1)
    output_tokens = 0 if encoder else (w.output_tokens if w.output_tokens is not None else 1)
    inp = InferenceInputs(precision=w.precision or "bf16", quantization=w.quantization or "none",
                          kv_dtype_bytes=_kv_bytes(w), framework=framework, flash=bool(w.flash_attention),
                          prompt_tokens=w.prompt_tokens or 0, output_tokens=output_tokens, concurrency=conc,
                          framework_version=w.framework_version, encoder=encoder)
    mem = inference_memory(s, inp, layout, system)
    if memory_only:
        return mem, {}, [], None, []
    vision, vision_note = vision_flops(model, w)
    case = ServingCase(framework_version=w.framework_version,
                       precision=inp.precision, quantization=inp.quantization, kv_dtype_bytes=inp.kv_dtype_bytes,
                       framework=framework, prompt_tokens=inp.prompt_tokens, output_tokens=inp.output_tokens,
                       flash=inp.flash, tf32=w.tf32 is not False, attention_kernel=w.attention_kernel,
                       vision_flops_per_prompt=vision)
    sla = w.serving
    perf = inference_perf(s, case, layout, system, conc, mem,
                          ttft_sla_s=(sla.ttft_ms / 1000 if sla and sla.ttft_ms else None),
                          tpot_sla_s=(sla.tpot_ms / 1000 if sla and sla.tpot_ms else None),
                          encoder_only=encoder, max_num_seqs=sla.max_num_seqs if sla else None)
    notes = list(perf.notes) + ([vision_note] if vision_note else [])
    if output_tokens:
        notes.append(_("decode at batch {conc}, average context {prompt_tokens:.0f} tokens").format(conc=conc, prompt_tokens=inp.prompt_tokens + inp.output_tokens / 2))
    figures = perf.to_dict()
    requests = w.dataset.job_items(inp.prompt_tokens + inp.output_tokens) if w.dataset else None
    if requests:
        figures["job_time_s"] = job_time_s(perf.model, perf.serving_batch, perf.max_requests_per_s,
                                           requests / max(1, layout.dp), w.max_output_tokens)
        if figures["job_time_s"] is not None:
            notes.append(_("the job: {requests:,.0f} requests queued at once, {copies} model copy(ies), take {seconds:,.0f} s "
                           "({hours:.2f} h) until the last one finishes: {lengths}").format(
                requests=requests, copies=max(1, layout.dp), seconds=figures["job_time_s"],
                hours=figures["job_time_s"] / 3600.0,
                lengths=(_("outputs of varying length, mean {mean}, at most {cap} tokens (exponential, "
                           "estimate/serving/burst.py)").format(mean=inp.output_tokens, cap=w.max_output_tokens)
                         if w.max_output_tokens and w.max_output_tokens > inp.output_tokens
                         else _("every output {mean} tokens long (set max_output_tokens when lengths vary)").format(
                             mean=inp.output_tokens))))
    return mem, figures, notes, perf.model, list(perf.warnings)


def job_time_s(model: ReplicaModel | None, batch_limit: int, rate: float | None, requests: float,
               max_output_tokens: int | None) -> float | None:
    """Seconds one model copy takes for ``requests`` requests queued at once: a continuous-batching engine (its
    load ``model``) runs them through ``batch_limit`` slots and drains to the longest (estimate/serving/burst.py);
    static batches and prefill-only work at the copy's steady ``rate`` (requests/s). None when it serves nothing.
    The estimate's ``job_time_s`` and every job plan's time (plan/money/costing.py) are this function."""
    if model is not None and model.continuous and model.output_tokens > 0:
        got = burst_s(model, requests, batch_limit, max_output_tokens)
        return got if got > 0 else None
    return requests / rate if rate else None
