"""One decode step of a serving replica: the roofline of its kernels plus the fixed costs of every layer.

- **Roofline.** The GEMMs stream the local weights (a MoE batch reads only the routed experts it touches:
  E·(1 - (1 - k/E)^B) of them) or are bound by their FLOPs; the attention kernels read every sequence's KV
  cache or are bound by their FLOPs. The two run one after the other (Williams et al. 2009; Yuan et al. 2024,
  arXiv 2402.16363).
- **Fixed costs per layer** (what dominates big models at small batch): every kernel a layer launches costs a
  fixed latency even inside a CUDA graph (``inference.decode_kernels``: the kernels of an attention block,
  an MLA block, a dense MLP, a fused-MoE block with its router and shared expert, the FP8 activation
  quantisation before each W8A8 GEMM), more when the batch exceeds the engine's CUDA-graph capture limit and
  the kernels are launched from Python; two tensor-parallel all-reduces per layer at the measured latency of
  the engine's all-reduce for that message size, GPU count and link (``inference.allreduce_latency_s``);
  with expert parallelism a dispatch and a combine per MoE layer (``inference.ep_all_to_all``); and older
  engine versions' fused-MoE overhead (``inference.moe_layer_overhead_s``).
- Engines add a per-step scheduler and sampler time (``inference.engine_step_overhead_s``).
- Eager ``generate`` launches every kernel from Python: a per-layer CPU cost that overlaps the GPU time (soft
  maximum), and Hugging Face's DynamicCache re-reads the cache several times per step.

The fixed costs are in estimate/serving/decode_fixed.py, the serving case in estimate/serving/serving_case.py. Every constant
and its source is in data/efficiency.yaml; docs/formulas.md "Fixed decode costs per layer" explains them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.estimate.serving.decode_fixed import (_tp_layout, cuda_graph_max_batch, engine_allreduce_s, ep_all_to_all_s,
                                           kernels_per_layer, moe_layer_overhead_s, moe_layers, tp_allreduce_s)
from gpuplan.estimate.forward import eager_cpu_s_per_op
from gpuplan.estimate.memory import ENGINES, inference_weight_bytes, kv_shard_fraction, state_bytes_per_sequence
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.serving.legacy_quant import LegacyQuantKernel, legacy_quant_kernel, reconstruct_s
from gpuplan.estimate.memory.engine_limits import version_tuple
from gpuplan.estimate.serving.serving_case import (COMPILED, ServingCase, attention_dtype, compute_dtype, soft_max,
                                           stream_efficiency)
from gpuplan.estimate.shapes import Shape, weight_bytes
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.clocks import sustained_flops

__all__ = ["COMPILED", "DecodeConsts", "ServingCase", "WEIGHT_ONLY_MARLIN", "attention_dtype", "compute_dtype",
           "decode_consts", "decode_min_rows", "decode_step", "decode_step_time", "engine_allreduce_s",
           "ep_all_to_all_s", "kernels_per_layer", "moe_loop_experts", "soft_max", "stream_efficiency",
           "tp_allreduce_s"]

# Weight-only quantized schemes that serving engines run through Marlin-class mixed-input kernels
# (vLLM/SGLang awq_marlin, gptq_marlin): FP8 and W8A8 int8 use the architecture's own GEMMs.
WEIGHT_ONLY_MARLIN = frozenset({"awq", "gptq-int4", "gptq-int8", "int4"})


@dataclass(frozen=True)
class DecodeConsts:
    """What a decode step costs per unit of batch and context, for one (model, case, layout, system)."""

    mem_fixed_s: float       # streaming the local weights
    kv_s_per_token: float    # reading one sequence-token of KV cache
    state_s_per_seq: float   # reading and writing one sequence's linear-attention state (hybrid models), else 0
    comp_s_per_seq: float    # FLOPs of one sequence at zero context
    comp_s_per_ctx: float    # attention FLOPs per sequence per context token
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
    kernels: float = 0.0              # kernels per layer (all layers)
    moe_kernels: float = 0.0          # extra kernels per MoE layer
    moe_layers: float = 0.0
    moe_overhead_s: float = 0.0       # per MoE layer (older engine versions)
    tp: int = 1
    ep: int = 1
    dp_attention: bool = False
    hidden: int = 0
    system: System | None = None
    expert_row_s: float = 0.0         # FLOP time of one token row through one routed expert, all MoE layers
    moe_tile_rows: int = 1            # rows a fused-MoE GEMM pads each touched expert's tokens to
    kernel_s: float = 0.0             # one kernel's fixed time inside the CUDA graph (engine)
    eager_kernel_s: float = 0.0       # ... launched from Python, above the graph capture limit
    graph_max_batch: float = math.inf
    legacy: LegacyQuantKernel | None = None  # a pre-Marlin weight-only kernel (legacy_quant)
    legacy_row_s: float = 0.0         # ... its FLOP time of one sequence row (dense linears, gemm_share of peak)
    rebuild_s: float = 0.0            # ... rebuilding the local weights in 16 bits once
    w16_s: float = 0.0                # ... streaming the rebuilt 16-bit weights

    def expert_rows(self, batch: float) -> float:
        """Rows the routed-expert GEMMs compute per MoE layer: each touched expert's tokens padded to the
        kernel's row tile (the grouped GEMM runs whole tiles: vLLM/SGLang fused_moe BLOCK_SIZE_M, DeepGEMM's
        64-row masked layout under expert parallelism; LMSYS 'Serving DeepSeek-R1 on H20-96G', 2025: 'WGMMA's
        block_m is fixed at 64 ... redundant MLP GEMM computations' at small batch)."""
        if not self.experts or not self.experts_per_token:
            return 0.0
        touched = self.experts * self.touched_share(batch)
        per_expert = max(1.0, batch) * self.experts_per_token / max(1e-9, touched)
        return touched * max(per_expert, float(self.moe_tile_rows))

    def touched_share(self, batch: float) -> float:
        """Share of the routed experts a decode step of ``batch`` tokens reads."""
        if not self.experts or not self.experts_per_token:
            return 1.0
        return 1.0 - (1.0 - self.experts_per_token / self.experts) ** max(1.0, batch)

    def fixed_s(self, batch: float) -> float:
        """Fixed costs of one step (all layers of one pipeline stage's share): kernel latencies, TP all-reduces,
        expert-parallel dispatch and combine, the older engines' MoE overhead."""
        sys = self.system
        assert sys is not None
        lat = self.kernel_s if batch <= self.graph_max_batch else max(self.kernel_s, self.eager_kernel_s)
        per_stage = 1.0 / self.pp
        t = (self.layers * self.kernels + self.moe_layers * self.moe_kernels) * lat * per_stage
        t += self.moe_layers * self.moe_overhead_s * per_stage
        if self.ep > 1 and self.moe_layers:
            per_rank = batch / max(1, self.tp) if self.dp_attention else batch
            t += self.moe_layers * ep_all_to_all_s(sys, self.ep, per_rank * self.experts_per_token) * per_stage
            dense_layers = self.layers - self.moe_layers
            # data-parallel attention gathers and scatters the hidden states around the dense FFN layers
            t += dense_layers * 2 * tp_allreduce_s(sys, _tp_layout(self.tp), batch * self.hidden * 2.0, 1,
                                                   self.framework) * per_stage
        else:
            t += self.layers * tp_allreduce_s(sys, _tp_layout(self.tp), batch * self.hidden * 2.0, 2,
                                              self.framework) * per_stage
        return t



def decode_consts(s: Shape, case: ServingCase, layout: Layout, system: System, notes: list[str]) -> DecodeConsts:
    inf = table("inference")
    shards = layout.tp * layout.pp
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction
    # the weights a GPU streams are the ones it holds (memory.inference_weight_bytes: DP attention's replicas, EP)
    w_local = inference_weight_bytes(s, weight_bytes(s, case.precision, case.quantization)[0], layout)
    expert_ranks = layout.pp * max(layout.tp, layout.ep)
    eager = case.framework not in ENGINES and case.framework not in COMPILED
    kv_mult = float(inf["eager_kv_traffic_multiplier"]) if eager else 1.0
    # KV bytes each GPU reads per sequence-token: its share of the cache (memory.kv_shard_fraction: TP splits
    # K/V by heads, never below one head per rank; the MLA latent is whole on every rank unless DP attention)
    kv_tok = s.kv_bytes_per_token_16bit * case.kv_dtype_bytes / 2.0 * kv_shard_fraction(s, layout)
    # decode GEMMs have M = the batch, not the thousands of prompt rows a prefill GEMM has
    peak_eff = sustained_flops(system, compute_dtype(case), notes) * float(inf["decode_gemm_efficiency"])
    attn_eff = sustained_flops(system, attention_dtype(case), []) * float(inf["decode_gemm_efficiency"])
    # MoE: a decode step reads only the routed experts its batch touches: B tokens choosing k of E
    # experts each touch E·(1 - (1 - k/E)^B) of them (uniform routing), the rest stay in HBM unread.
    expert_s = 0.0
    if s.moe_experts and s.moe_experts_per_token and s.moe_experts > s.moe_experts_per_token:
        dense = 4.0 if case.precision == "fp32" else 2.0
        w_all, _ = weight_bytes(s, case.precision, case.quantization)
        per_linear = dense if case.quantization in (None, "none") else \
            max(0.0, w_all - s.other_params * dense) / max(1.0, s.linear_params_total)
        expert_s = s.routed_expert_params * per_linear / expert_ranks / \
            (bw * stream_efficiency(case.quantization, case.framework))
    engine = case.framework in ENGINES
    kernels, moe_kernels = kernels_per_layer(s, case) if engine else (0.0, 0.0)
    # routed experts' FLOPs apart: a batch computes each touched expert's tokens padded to the tile
    per_expert = (3.0 if s.gated else 2.0) * s.hidden * s.moe_expert_ffn if s.moe_experts else 0.0
    n_moe = moe_layers(s)
    routed_active = n_moe * s.moe_experts_per_token * per_expert
    dense_params = max(0.0, s.matmul_params_active - routed_active)
    tile = int(by_key(inf["moe_gemm_min_rows"], "expert_parallel" if layout.ep > 1 else case.framework)) \
        if engine and s.moe_experts else 1
    legacy = legacy_quant_kernel(case) if engine and not s.moe_experts else None
    if legacy is not None:
        w16 = inference_weight_bytes(s, weight_bytes(s, case.precision, "none")[0], layout)
        if (note := _legacy_note(case, legacy)) not in notes:
            notes.append(note)
    return DecodeConsts(
        legacy=legacy,
        legacy_row_s=2.0 * dense_params / shards / (peak_eff / float(inf["decode_gemm_efficiency"])
                                                    * legacy.gemm_share) if legacy else 0.0,
        rebuild_s=reconstruct_s(legacy, s, layout, system) if legacy else 0.0,
        w16_s=w16 / (bw * float(inf["weight_stream_efficiency"])) if legacy else 0.0,
        mem_fixed_s=w_local / (bw * stream_efficiency(case.quantization, case.framework)),
        kv_s_per_token=kv_mult * kv_tok / (bw * inf["weight_stream_efficiency"]),
        comp_s_per_seq=2.0 * dense_params / shards / peak_eff,
        expert_row_s=2.0 * n_moe * per_expert / shards / peak_eff, moe_tile_rows=tile,
        comp_s_per_ctx=2.0 * s.context_layers * s.heads * s.head_dim / shards / attn_eff,
        state_s_per_seq=2.0 * state_bytes_per_sequence(s, layout) / (bw * inf["weight_stream_efficiency"]),
        pp=layout.pp, naive_pipeline=layout.naive_pipeline, layers=s.layers,
        framework=case.framework, expert_s=expert_s, experts=s.moe_experts, experts_per_token=s.moe_experts_per_token,
        quantized=case.quantization not in (None, "none"),
        min_rows=decode_min_rows(system, case.framework, case.quantization or "none"),
        quantization=case.quantization or "none",
        moe_ops_per_expert=float(table("training", "moe_eager_ops_per_expert")) if eager and s.moe_experts else 0.0,
        shape=s, case=case, kernels=kernels, moe_kernels=moe_kernels,
        moe_layers=moe_layers(s) if engine else 0.0,
        moe_overhead_s=moe_layer_overhead_s(case.framework, case.framework_version) if s.moe_experts else 0.0,
        tp=layout.tp, ep=max(1, layout.ep), dp_attention=layout.dp_attention, hidden=s.hidden, system=system,
        kernel_s=by_key(inf["kernel_latency_s"], case.framework) if engine else 0.0,
        eager_kernel_s=float(inf["eager_kernel_latency_s"]),
        graph_max_batch=cuda_graph_max_batch(case.framework, system, layout.tp, case.framework_version)
        if engine else math.inf)


def _legacy_note(case: ServingCase, k: LegacyQuantKernel) -> str:
    from gpuplan.i18n import _

    rows = "" if math.isinf(k.dequant_rows) else _("; from {rows:.0f} rows a forward rebuilds the weights in 16 "
                                                     "bits").format(rows=k.dequant_rows)
    return _("{engine} {version} runs {quant} layers through its pre-Marlin kernel (about {share:.0%} of the "
             "16-bit peak{rows}): inference.legacy_weight_only").format(
        engine=case.framework, version=case.framework_version, quant=case.quantization, share=k.gemm_share,
        rows=rows)


def decode_min_rows(system: System, framework: str, quantization: str = "none") -> int:
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


def moe_loop_experts(s: Shape, case: ServingCase, tokens: float) -> float:
    """Experts an eager transformers MoE block loops over per layer for ``tokens`` tokens: every one of them
    before transformers 4.53 (``for expert_idx in range(self.num_experts)``, each launching its ops even with
    no token; huggingface/transformers PR #38133 'Skip non-selected experts for qwen3_moe', following #32429),
    only the ones the tokens hit since (inference.eager_moe_all_experts_before)."""
    if not s.moe_experts or case.framework in ENGINES or case.framework in COMPILED:
        return 0.0
    from gpuplan.estimate.training.costs import experts_touched

    fixed = str(table("inference", "eager_moe_all_experts_before"))
    if case.framework_version and version_tuple(case.framework_version) < version_tuple(fixed):
        return float(s.moe_experts)
    return experts_touched(s, tokens)


def _stage_gpu_s(c: DecodeConsts, batch: float, context_tokens: float) -> float:
    """Kernel time of one pipeline stage (the whole model without a pipeline) for ``batch`` sequences."""
    # The GEMMs (weights streamed, FLOPs of the linear layers) and the attention kernels (KV cache read, attention
    # FLOPs) run one after the other: each kernel is bound by its own roofline, and the step is their sum.
    if c.legacy is not None and c.legacy.rebuilds(batch):
        # the old kernel's engine rebuilds each weight in 16 bits and runs a 16-bit GEMM (legacy_quant)
        gemm_s = c.rebuild_s + max(c.w16_s, batch * c.comp_s_per_seq)
    elif c.legacy is not None:
        # the old dequantising kernel: no 16-row tile, each row at its share of the peak
        gemm_s = max(c.mem_fixed_s, batch * c.legacy_row_s)
    else:
        gemm_s = max(c.mem_fixed_s - c.expert_s * (1.0 - c.touched_share(batch)),
                     max(batch, c.min_rows) * c.comp_s_per_seq + c.expert_rows(batch) * c.expert_row_s)
    attn_s = max(c.kv_s_per_token * context_tokens * batch, batch * c.comp_s_per_ctx * context_tokens) \
        + batch * c.state_s_per_seq
    return gemm_s + attn_s


def int8_serial_s(s: Shape | None, quantization: str) -> float:
    """Host-synchronised time of LLM.int8() per forward (bitsandbytes Linear8bitLt, threshold 6.0): each call reads
    its outlier count back to the host (``double_quant``'s ``.item()``; ``torch.unique`` over the outlier columns), so
    its Python work and kernels run one after the other and do not overlap the rest of the step: a fixed time per
    Linear call (inference.bnb_int8_call_s) x the calls one token passes (Shape.linear_calls)."""
    if quantization != "bnb-int8" or s is None:
        return 0.0
    calls = s.linear_calls or s.layers * (7.0 if s.gated else 4.0)
    return calls * float(table("inference", "bnb_int8_call_s"))


def engine_seq_overhead_s(framework: str, version: str | None) -> float:
    """Python time per running sequence per step of an engine release that processed every sequence's output in
    series with the GPU step (inference.engine_seq_overhead_s: vLLM before 0.6.0); 0 for a current release."""
    for gone_in, per_seq in table("inference", "engine_seq_overhead_s").get(framework, []):
        if version and version_tuple(version) < version_tuple(str(gone_in)):
            return float(per_seq)
    return 0.0


def decode_step(c: DecodeConsts, batch: float, context_tokens: float) -> float:
    """Seconds between two tokens of a sequence when ``batch`` sequences decode at ``context_tokens`` of context.

    With a pipeline of ``pp`` stages a token passes every stage in turn: an engine splits the batch into ``pp``
    micro-batches that keep the stages busy, so a sequence advances once every ``pp`` stage-times of a
    micro-batch (vLLM / SGLang pipeline parallelism); a layer split without a schedule (``device_map``) runs the
    whole batch through the stages one after the other. Either way each stage reads its weights once per
    micro-batch: decode needs pp times the batch to match tensor parallelism on the same GPUs."""
    inf = table("inference")
    micro = batch if c.pp <= 1 or c.naive_pipeline else max(1.0, batch / c.pp)
    gpu_s = _stage_gpu_s(c, micro, context_tokens) * c.pp
    if c.framework not in ENGINES and c.framework not in COMPILED:
        cpu_layer = float(inf["eager_cpu_s_per_layer"]) * (1.3 if c.pp > 1 else 1.0)
        # bitsandbytes' Linear4bit/Linear8bitLt add Python work per linear call (quant-state handling, casts)
        cpu_layer += float(inf["eager_bnb_cpu_s_per_layer"].get(c.quantization, 0.0))
        if c.moe_ops_per_expert and c.shape is not None and c.case is not None:
            # the Python loop over the MoE block's experts, each launching its ops (moe_loop_experts)
            cpu_layer += moe_loop_experts(c.shape, c.case, batch) * c.moe_ops_per_expert * eager_cpu_s_per_op()
        gpu_layer = gpu_s / c.layers
        k = float(inf["eager_overlap_exponent"])
        tp_s = tp_allreduce_s(c.system, _tp_layout(c.tp), batch * c.hidden * 2.0, 2 * c.layers, c.framework) \
            if c.system is not None else 0.0
        return c.layers * soft_max(cpu_layer, gpu_layer, k) + float(inf["engine_step_overhead_s"]["transformers"]) + tp_s \
            + int8_serial_s(c.shape, c.quantization)
    overhead = float(inf["engine_step_overhead_s"].get(c.framework, inf["engine_step_overhead_s"]["default"]))
    overhead += batch * engine_seq_overhead_s(c.framework, c.case.framework_version if c.case else None)
    if c.framework in COMPILED:
        # one CUDA graph: no per-layer launch floor; weight-only int8/int4 dequantising GEMVs still pay a
        # fixed latency per layer inside the graph (few CTAs per small matrix)
        fixed = float(inf["compiled_quantized_layer_s"]) * c.layers / c.pp if c.quantized else 0.0
        tp_s = tp_allreduce_s(c.system, _tp_layout(c.tp), batch * c.hidden * 2.0, 2 * c.layers, c.framework) \
            if c.system is not None else 0.0
        return overhead + gpu_s + fixed + tp_s
    return overhead + gpu_s + c.fixed_s(micro) * c.pp


def decode_step_time(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int,
                     context_tokens: float, notes: list[str]) -> float:
    """Seconds per generated token for ``batch`` sequences at ``context_tokens`` of context."""
    return decode_step(decode_consts(s, case, layout, system, notes), batch, context_tokens)
