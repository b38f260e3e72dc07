"""Serving latency and throughput: prefill is compute-bound, decode memory-bound at small batch.

- Prefill FLOPs: 2·N·P + 2·L·(a·d_h)·P² (causal attention) per sequence.
- Decode step: read the (local) weights once plus every sequence's KV cache; roofline time is the
  larger of bytes / achieved bandwidth and FLOPs / achieved compute (Williams et al. 2009; Yuan
  et al. 2024, arXiv 2402.16363). Serving engines add a per-step scheduler/sampler overhead.
- Eager ``generate`` launches every kernel from Python: a per-layer CPU cost that overlaps with the
  GPU time (soft maximum), and Hugging Face's DynamicCache re-reads the cache several times per step.
  Both constants are calibrated on published measurements (data/efficiency.yaml).
- Tensor parallelism: two all-reduces of B·h activations per layer per step (Shoeybi et al. 2019),
  over the inter-node network when the TP group spans nodes (comm.tp_collective_s).
- Engines: vLLM, SGLang, TensorRT-LLM, LMDeploy (TurboMind) and TGI run continuous batching with
  CUDA graphs (a per-step scheduler cost and a per-layer launch floor); compiled PyTorch
  (torch.compile + CUDA graphs, gpt-fast/torchao) runs the whole decode step as one graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuplan.estimate.forward import eager_cpu_s_per_op
from gpuplan.estimate.memory import ENGINES, MemoryEstimate, kv_shard_fraction
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.shapes import Shape, weight_bytes
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.comm import tp_collective_s
from gpuplan.estimate.training import sustained_flops
from gpuplan.i18n import _

COMPILED = {"torch-compile"}


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
    serving_tpot_s: float | None = None   # TPOT with the serving batch full (the replica at capacity)
    prompt_tokens: int = 0
    latency_s: float | None = None   # one request end to end: its prefill and every decode step

    def to_dict(self) -> dict:
        return {
            "serving_batch": self.serving_batch, "serving_tpot_s": self.serving_tpot_s,
            "ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "output_tokens_per_s": self.output_tokens_per_s,
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
        }


def _soft_max(a: float, b: float, k: float) -> float:
    return (a**k + b**k) ** (1.0 / k)


@dataclass(frozen=True)
class ServingCase:
    precision: str
    quantization: str
    kv_dtype_bytes: float
    framework: str
    prompt_tokens: int
    output_tokens: int
    framework_version: str | None = None


def moe_loop_experts(s: Shape, case: ServingCase, tokens: float) -> float:
    """Experts an eager transformers MoE block loops over per layer for ``tokens`` tokens: every one of them
    before transformers 4.53 (``for expert_idx in range(self.num_experts)``, each launching its ops even with
    no token; huggingface/transformers PR #38133 'Skip non-selected experts for qwen3_moe', following #32429),
    only the ones the tokens hit since (inference.eager_moe_all_experts_before)."""
    if not s.moe_experts or case.framework in ENGINES or case.framework in COMPILED:
        return 0.0
    from gpuplan.estimate.memory.serve import _version_tuple
    from gpuplan.estimate.training import experts_touched

    fixed = str(table("inference", "eager_moe_all_experts_before"))
    if case.framework_version and _version_tuple(case.framework_version) < _version_tuple(fixed):
        return float(s.moe_experts)
    return experts_touched(s, tokens)


def _compute_dtype(case: ServingCase) -> str:
    """FP8 compute needs FP8 weights; otherwise an fp8 precision runs its GEMMs in 16-bit. Serving
    engines run FP8 checkpoints (W8A8: ModelOpt / compressed-tensors / Qwen "-FP8") through FP8 tensor-core
    GEMMs, the activations quantized on the fly, whatever the model's 16-bit dtype (vLLM fp8 docs,
    TensorRT-LLM FP8 quantization, SGLang w8a8_fp8); GPUs without FP8 tensor cores fall back to 16-bit
    (training.peak_flops)."""
    if case.quantization == "fp8" and case.framework in ENGINES:
        return "fp8"
    return "fp16" if case.precision == "fp8" and case.quantization != "fp8" else case.precision


def _attention_dtype(case: ServingCase) -> str:
    """The attention core's dtype: 16-bit unless the model itself is fp32."""
    return "fp32" if case.precision == "fp32" else "fp16"


def _stream_efficiency(quantization: str, framework: str = "transformers") -> float:
    inf = table("inference")
    if quantization in (None, "none"):
        if framework in COMPILED:
            return float(inf["compiled_stream_efficiency"])
        return float(inf["weight_stream_efficiency"])
    if framework in ENGINES and quantization not in ("bnb-nf4", "bnb-int8"):
        return float(inf["engine_quantized_stream_efficiency"])
    if framework in COMPILED and quantization in inf["compiled_quantized_stream_efficiency"]:
        return float(inf["compiled_quantized_stream_efficiency"][quantization])
    return float(inf["quantized_stream_efficiency"].get(quantization, 0.4))


def _tp_allreduce_s(system: System, layout: Layout, bytes_each: float, count: float, framework: str = "") -> float:
    """``count`` TP all-reduces of ``bytes_each``. Serving engines inside one NVLink node replace NCCL's
    ring by a one-shot custom all-reduce for small messages (vLLM/SGLang custom_all_reduce, TensorRT-LLM
    AllReduce plugin, LMDeploy): its start-up latency, not NCCL's, is paid per decode all-reduce."""
    if layout.tp <= 1:
        return 0.0
    t = tp_collective_s(system, layout.tp, bytes_each) * count
    custom = table("inference", "engine_custom_allreduce")
    if (framework in custom["frameworks"] and layout.tp <= system.gpus_per_node
            and system.intra_link in ("nvswitch", "nvlink") and bytes_each <= float(custom["max_bytes"])):
        t -= count * (2 * system.intra_latency_s() - float(custom["latency_s"]))
    return max(0.0, t)


def prefill_time(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int, notes: list[str],
                 marginal: bool = False, encoder: bool = False) -> float:
    """Seconds to process the prompts of ``batch`` sequences. ``marginal``: the extra time one prompt
    adds to a running continuous batch (chunked prefill / in-flight batching): its FLOPs only, the
    weights being streamed for the decode step it rides with and the pipeline stages kept busy."""
    inf = table("inference")
    p = max(1, case.prompt_tokens)
    # an encoder has no LM head: its (tied) embedding matrix is only looked up
    matmul = s.layers * (s.attn_params_layer + s.mlp_params_layer_active) if encoder else s.matmul_params_active
    lin_flops = batch * 2.0 * matmul * p
    attn_flops = batch * 2.0 * s.layers * s.heads * s.head_dim * p * p
    peak = sustained_flops(system, _compute_dtype(case), notes)
    # the attention core (FlashAttention) runs in 16-bit even when the GEMMs run in FP8
    peak_attn = sustained_flops(system, _attention_dtype(case), [])
    flops = lin_flops + attn_flops * peak / peak_attn  # attention FLOPs in units of the GEMM rate
    eff = float(inf["prefill_efficiency"])
    if not marginal:
        # a forward of few rows runs thin GEMMs (engines batch many prompts into one step: marginal)
        eff *= gemm_row_ramp(batch * p)
    shards = layout.tp * layout.pp
    compute = flops / shards / (peak * eff)
    w_bytes, _dtype = weight_bytes(s, case.precision, case.quantization)
    memory = w_bytes / shards / (system.gpu.mem_bandwidth_gb_s * 1e9 * _stream_efficiency(case.quantization, case.framework))
    t = compute if marginal else max(compute, memory)
    if layout.pp > 1 and not marginal:
        t *= layout.pp  # stages in sequence for one request
    if case.framework not in ENGINES and case.framework not in COMPILED:
        # eager PyTorch launches every kernel from Python: the CPU time overlaps the GPU time (soft maximum)
        ops = eager_ops_per_layer(encoder)
        if s.moe_experts:
            ops += moe_loop_experts(s, case, batch * p) * float(table("training", "moe_eager_ops_per_expert"))
        cpu = s.layers * ops * eager_cpu_s_per_op()
        t = _soft_max(cpu, t, float(inf["eager_overlap_exponent"]))
    return t + _tp_allreduce_s(system, layout, batch * p * s.hidden * 2.0, 2 * s.layers, case.framework)


def gemm_row_ramp(rows: float) -> float:
    """Share of the large-GEMM efficiency a forward of ``rows`` token rows reaches: a GEMM with few rows
    cannot fill the GPU's SMs; the multiplier ramps from 0.5 at 0 rows to 1 at
    training.min_tokens_for_full_efficiency (the training step's ramp, the same GEMMs)."""
    full = float(table("training", "min_tokens_for_full_efficiency"))
    return min(1.0, 0.5 + 0.5 * rows / full)


def eager_ops_per_layer(encoder: bool) -> float:
    """Ops one transformer layer launches in eager PyTorch: a decoder layer (training.dequant_traffic.
    eager_ops_per_layer), or an encoder layer without rotary embeddings, cache or gated MLP
    (inference.eager_ops_per_encoder_layer)."""
    if encoder:
        return float(table("inference", "eager_ops_per_encoder_layer"))
    return float(table("training", "dequant_traffic")["eager_ops_per_layer"])


@dataclass(frozen=True)
class _DecodeConsts:
    """What a decode step costs per unit of batch and context, for one (model, case, layout, system)."""

    mem_fixed_s: float       # streaming the local weights
    kv_s_per_token: float    # reading one sequence-token of KV cache
    comp_s_per_seq: float    # FLOPs of one sequence at zero context
    comp_s_per_ctx: float    # attention FLOPs per sequence per context token
    tp_fixed_s: float        # TP all-reduces: latency part
    tp_s_per_seq: float      # TP all-reduces: bytes part per sequence
    pp: int
    naive_pipeline: bool
    layers: int
    framework: str
    expert_s: float = 0.0    # streaming every routed expert (MoE); a batch reads only those it touches
    experts: int = 0
    experts_per_token: int = 0
    quantized: bool = False  # weight-only quantized GEMV kernels
    min_rows: int = 1        # M-tile a decode GEMM is padded to (engines' tensor-core kernels)
    quantization: str = "none"
    moe_ops_per_expert: float = 0.0   # eager MoE: ops each looped expert launches per layer
    shape: Shape | None = None
    case: ServingCase | None = None

    def touched_share(self, batch: int) -> float:
        """Share of the routed experts a decode step of ``batch`` tokens reads."""
        if not self.experts or not self.experts_per_token:
            return 1.0
        return 1.0 - (1.0 - self.experts_per_token / self.experts) ** max(1, batch)


def _decode_consts(s: Shape, case: ServingCase, layout: Layout, system: System, notes: list[str]) -> _DecodeConsts:
    inf = table("inference")
    shards = layout.tp * layout.pp
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction
    w_local = weight_bytes(s, case.precision, case.quantization)[0] / shards
    eager = case.framework not in ENGINES and case.framework not in COMPILED
    kv_mult = float(inf["eager_kv_traffic_multiplier"]) if eager else 1.0
    # KV bytes each GPU reads per sequence-token: its share of the cache (memory.kv_shard_fraction: TP splits
    # K/V by heads, never below one head per rank; the MLA latent is whole on every rank unless DP attention)
    kv_tok = s.kv_bytes_per_token_16bit * case.kv_dtype_bytes / 2.0 * kv_shard_fraction(s, layout)
    # decode GEMMs have M = the batch, not the thousands of prompt rows a prefill GEMM has
    peak_eff = sustained_flops(system, _compute_dtype(case), notes) * float(inf["decode_gemm_efficiency"])
    attn_eff = sustained_flops(system, _attention_dtype(case), []) * float(inf["decode_gemm_efficiency"])
    tp0 = _tp_allreduce_s(system, layout, 0.0, 2 * s.layers, case.framework)
    tp1 = _tp_allreduce_s(system, layout, s.hidden * 2.0, 2 * s.layers, case.framework) - tp0
    # MoE: a decode step reads only the routed experts its batch touches: B tokens choosing k of E
    # experts each touch E·(1 - (1 - k/E)^B) of them (uniform routing), the rest stay in HBM unread.
    expert_s = 0.0
    if s.moe_experts and s.moe_experts_per_token and s.moe_experts > s.moe_experts_per_token:
        e, k = s.moe_experts, s.moe_experts_per_token
        routed = s.layers * (s.mlp_params_layer_total - s.mlp_params_layer_active) * e / (e - k)
        dense = 4.0 if case.precision == "fp32" else 2.0
        w_all, _ = weight_bytes(s, case.precision, case.quantization)
        per_linear = dense if case.quantization in (None, "none") else \
            max(0.0, w_all - s.other_params * dense) / max(1.0, s.linear_params_total)
        expert_s = routed * per_linear / shards / (bw * _stream_efficiency(case.quantization, case.framework))
    return _DecodeConsts(
        mem_fixed_s=w_local / (bw * _stream_efficiency(case.quantization, case.framework)),
        kv_s_per_token=kv_mult * kv_tok / (bw * inf["weight_stream_efficiency"]),
        comp_s_per_seq=2.0 * s.matmul_params_active / shards / peak_eff,
        comp_s_per_ctx=2.0 * s.layers * s.heads * s.head_dim / shards / attn_eff,
        tp_fixed_s=tp0, tp_s_per_seq=tp1, pp=layout.pp, naive_pipeline=layout.naive_pipeline, layers=s.layers,
        framework=case.framework, expert_s=expert_s, experts=s.moe_experts, experts_per_token=s.moe_experts_per_token,
        quantized=case.quantization not in (None, "none"),
        min_rows=_decode_min_rows(system, case.framework, case.quantization or "none"),
        quantization=case.quantization or "none",
        moe_ops_per_expert=float(table("training", "moe_eager_ops_per_expert")) if eager and s.moe_experts else 0.0,
        shape=s, case=case)


# Weight-only quantized schemes that serving engines run through Marlin-class mixed-input kernels
# (vLLM/SGLang awq_marlin, gptq_marlin): FP8 and W8A8 int8 use the architecture's own GEMMs.
WEIGHT_ONLY_MARLIN = frozenset({"awq", "gptq-int4", "gptq-int8", "int4"})


def _decode_min_rows(system: System, framework: str, quantization: str = "none") -> int:
    """Rows a serving engine's decode GEMM computes whatever the batch: its tensor-core tile's M. Hopper's
    wgmma works on 64-row warpgroup tiles, Ampere/Ada mma.sync on 16 (PTX ISA, wgmma.mma_async shapes
    m64nNk16; mma.sync m16n8k16). Hidden under the weight stream on GPUs with compute to spare (H100:
    64 x 2 FLOP per 2-byte weight is 64 FLOP/B against 295 FLOP/B of compute per byte of bandwidth), it
    binds on compute-starved parts: the H20 (148 TFLOP/s, 4 TB/s: 37 FLOP/B)."""
    if framework not in ENGINES:
        return 1
    rows = table("inference", "decode_gemm_min_rows")
    if quantization in WEIGHT_ONLY_MARLIN:
        # 4/8-bit weight-only layers run Marlin-class kernels on every architecture: mma.sync 16-row blocks
        return int(rows["weight_only"])
    return int(by_key(rows, system.gpu.architecture.split(" (")[0].strip()))


def _decode_step(c: _DecodeConsts, batch: int, context_tokens: float) -> float:
    inf = table("inference")
    # The GEMMs (weights streamed, FLOPs of the linear layers) and the attention kernels (KV cache read, attention
    # FLOPs) run one after the other: each kernel is bound by its own roofline, and the step is their sum.
    gemm_s = max(c.mem_fixed_s - c.expert_s * (1.0 - c.touched_share(batch)), max(batch, c.min_rows) * c.comp_s_per_seq)
    attn_s = max(c.kv_s_per_token * context_tokens * batch, batch * c.comp_s_per_ctx * context_tokens)
    gpu_s = gemm_s + attn_s
    if c.pp > 1:
        gpu_s *= c.pp if c.naive_pipeline or batch == 1 else 1.0
    tp_s = c.tp_fixed_s + c.tp_s_per_seq * batch
    if c.framework not in ENGINES and c.framework not in COMPILED:
        cpu_layer = float(inf["eager_cpu_s_per_layer"]) * (1.3 if c.pp > 1 else 1.0)
        # bitsandbytes' Linear4bit/Linear8bitLt add Python work per linear call (quant-state handling, casts)
        cpu_layer += float(inf["eager_bnb_cpu_s_per_layer"].get(c.quantization, 0.0))
        if c.moe_ops_per_expert and c.shape is not None and c.case is not None:
            # the Python loop over the MoE block's experts, each launching its ops (moe_loop_experts)
            cpu_layer += moe_loop_experts(c.shape, c.case, batch) * c.moe_ops_per_expert * eager_cpu_s_per_op()
        gpu_layer = gpu_s / c.layers
        k = float(inf["eager_overlap_exponent"])
        return c.layers * _soft_max(cpu_layer, gpu_layer, k) + float(inf["engine_step_overhead_s"]["transformers"]) + tp_s
    overhead = float(inf["engine_step_overhead_s"].get(c.framework, inf["engine_step_overhead_s"]["default"]))
    if c.framework in COMPILED:
        # one CUDA graph: no per-layer launch floor; weight-only int8/int4 dequantising GEMVs still pay a
        # fixed latency per layer inside the graph (few CTAs per small matrix)
        fixed = float(inf["compiled_quantized_layer_s"]) * c.layers / c.pp if c.quantized else 0.0
        return overhead + gpu_s + fixed + tp_s
    floor = float(inf["engine_layer_floor_s"]) * c.layers / c.pp
    return overhead + max(gpu_s, floor) + min(gpu_s, floor) * 0.5 + tp_s


def decode_step_time(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int,
                     context_tokens: float, notes: list[str]) -> float:
    """Seconds per generated token for ``batch`` sequences at ``context_tokens`` of context."""
    return _decode_step(_decode_consts(s, case, layout, system, notes), batch, context_tokens)


def engine_speedup_bound(base: str, other: str) -> float:
    """The most requests/s engine ``other`` can gain over ``base`` on the same model, layout and GPUs in
    this model of serving (the recommender skips engines that cannot gain what it asks for). The engines
    differ only in their per-step overhead, the memory they reserve and a batch cap; prefill, GEMM,
    attention and all-reduce times are the same. Each request costs prefill + output x step / batch, so
    with no more memory and no higher cap the ratio is at most the ratio of step overheads; otherwise a
    larger batch may fit and no bound is given (inf)."""
    inf = table("inference")
    steps = inf["engine_step_overhead_s"]
    caps = inf["engine_max_batch"]

    def reserve(f: str) -> float:
        return float(inf["sglang_mem_fraction_static"] if f == "sglang" else inf["vllm_gpu_memory_utilization"])

    if base not in ENGINES or other not in ENGINES or reserve(other) > reserve(base):
        return math.inf
    cap_base, cap_other = caps.get(base), caps.get(other)
    if cap_base is not None and (cap_other is None or float(cap_other) > float(cap_base)):
        return math.inf
    step = lambda f: float(steps.get(f, steps["default"]))  # noqa: E731
    return max(1.0, step(base) / step(other))


def max_concurrency(mem: MemoryEstimate) -> int:
    if mem.kv_budget_bytes is None or not mem.kv_bytes_per_sequence:
        return 0
    return max(0, int(mem.kv_budget_bytes // mem.kv_bytes_per_sequence))


def inference_perf(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int, mem: MemoryEstimate,
                   *, ttft_sla_s: float | None = None, tpot_sla_s: float | None = None,
                   encoder_only: bool = False) -> InferencePerf:
    notes: list[str] = []
    if encoder_only or case.output_tokens <= 0:
        return prefill_only_perf(s, case, layout, system, batch, mem, encoder_only, notes)
    conc = max_concurrency(mem)
    running = engine_running_batch(case, batch, conc, notes)
    prefill = prefill_time(s, case, layout, system, running, notes)
    ctx_avg = case.prompt_tokens + case.output_tokens / 2.0
    tpot = decode_step_time(s, case, layout, system, running, ctx_avg, notes)
    ttft = prefill  # the first token comes out of the prefill pass
    total = prefill + case.output_tokens * tpot
    out_tps = running * case.output_tokens / total
    rate, serving_batch, serving_tpot = _max_request_rate(s, case, layout, system, conc, ttft_sla_s, tpot_sla_s,
                                                          notes)
    return InferencePerf(ttft_s=ttft, tpot_s=tpot, output_tokens_per_s=out_tps, max_concurrency=conc,
                         max_requests_per_s=rate, prefill_s=prefill, decode_step_s=tpot, batch=batch, notes=notes,
                         serving_batch=serving_batch, output_tokens=case.output_tokens,
                         prompt_tokens=case.prompt_tokens, latency_s=total, serving_tpot_s=serving_tpot)


def engine_running_batch(case: ServingCase, batch: int, conc: int, notes: list[str]) -> int:
    """Sequences a continuous-batching engine runs at once when ``batch`` are submitted together: no more than
    its KV pool holds (``conc``) nor its batch cap (inference.engine_max_batch); the rest wait in its queue
    (vLLM / SGLang / TensorRT-LLM schedulers admit a request only when its KV blocks are free), so the throughput
    is that of the running batch. Eager generate runs the whole batch (or runs out of memory)."""
    if case.framework not in ENGINES or batch <= 1:
        return batch
    cap = table("inference", "engine_max_batch").get(case.framework)
    limit = min(conc if conc > 0 else batch, int(cap) if cap else batch)
    if batch > limit:
        notes.append(_("{framework} runs {running} of the {batch} sequences at once (its KV pool and batch cap); "
                       "the rest wait").format(framework=case.framework, running=max(1, limit), batch=batch))
        return max(1, limit)
    return batch


PREFILL_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def prefill_only_perf(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int, mem: MemoryEstimate,
                      encoder: bool, notes: list[str]) -> InferencePerf:
    """Work that reads a prompt and generates nothing (embeddings, reranking, classification, scoring,
    prefill benchmarks): one forward over ``batch`` prompts. Latency is that forward; sequences/s at the
    workload's batch; a continuous-batching engine packs as many prompts per step as its KV pool holds
    (decoders) or up to 1024 (encoders keep no cache), and its best rate is the offline maximum."""
    latency = prefill_time(s, case, layout, system, batch, notes, encoder=encoder)
    rate = batch / latency
    best, best_b = rate, batch
    if case.framework in ENGINES:
        cap = 1024 if encoder else max(1, max_concurrency(mem))
        for b in sorted({min(cap, x) for x in PREFILL_BATCHES}):
            r = b / prefill_time(s, case, layout, system, b, [], encoder=encoder)
            if r > best:
                best, best_b = r, b
    notes.append(_("prefill only: {batch} prompt(s) of {tokens} tokens per forward, no tokens generated").format(
        batch=batch, tokens=case.prompt_tokens))
    return InferencePerf(ttft_s=latency, tpot_s=0.0, output_tokens_per_s=0.0, max_concurrency=max(best_b, batch),
                         max_requests_per_s=best, prefill_s=latency, decode_step_s=0.0, batch=batch, notes=notes,
                         serving_batch=best_b, output_tokens=0, prompt_tokens=case.prompt_tokens, latency_s=latency)


def _max_request_rate(s: Shape, case: ServingCase, layout: Layout, system: System, conc: int,
                      ttft_sla_s: float | None, tpot_sla_s: float | None, notes: list[str]
                      ) -> tuple[float, int, float | None]:
    """Requests/s one replica sustains: the best batch B <= max concurrency within the SLA, each request
    costing its prefill plus its share of B-wide decode steps (continuous batching); with that B and
    its TPOT."""
    if conc <= 0:
        return 0.0, 1, None
    prefill_one = prefill_time(s, case, layout, system, 1, notes)
    # engines batch prompts into running decode steps; eager generate stalls the batch for each prompt
    prefill_cost = prefill_time(s, case, layout, system, 1, notes, marginal=True) if case.framework in ENGINES \
        else prefill_one
    if ttft_sla_s is not None and prefill_one > ttft_sla_s:
        notes.append(_("TTFT {prefill_one:.2f} s exceeds the SLA of {ttft_sla_s:.2f} s even alone").format(prefill_one=prefill_one, ttft_sla_s=ttft_sla_s))
        return 0.0, 1, None
    ctx_avg = case.prompt_tokens + case.output_tokens / 2.0
    best, best_b, best_tpot = 0.0, 1, None
    cap = table("inference", "engine_max_batch").get(case.framework)
    if cap and conc > cap:
        conc = int(cap)
        notes.append(_("{framework} runs at most {conc} sequences per step by default").format(framework=case.framework, conc=conc))
    candidates = sorted({min(conc, x) for x in (1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 1024, 2048, conc)})
    consts = _decode_consts(s, case, layout, system, notes)
    for b in candidates:
        tpot = _decode_step(consts, b, ctx_avg)
        if tpot_sla_s is not None and tpot > tpot_sla_s:
            break
        # each request: its prefill (stalls the batch) + output_tokens decode steps shared by b
        per_req = prefill_cost + case.output_tokens * tpot / b
        if ttft_sla_s is not None:
            # queueing for prefills of the other b-1 requests in the same cycle
            if prefill_one * max(1, b // 4) > ttft_sla_s:
                break
        if 1.0 / per_req > best:
            best, best_b, best_tpot = 1.0 / per_req, b, tpot
    notes.append(_("serving batch {best_b}: the number of concurrent sequences that serves the most requests within the SLA and the KV budget").format(best_b=best_b))
    return best, best_b, best_tpot
