"""Prefill: reading the prompts (compute-bound at long prompts, weight-streaming-bound at short ones).

- FLOPs: 2·N·P + 2·L·(a·d_h)·P² (causal attention) per sequence (Kaplan et al. 2020; the attention term in
  units of the GEMM rate, since FlashAttention runs in 16-bit when the GEMMs run in FP8).
- A forward of few rows runs thin GEMMs: the efficiency ramps up with the rows (:func:`gemm_row_ramp`).
- ``marginal``: the time one prompt adds to a running continuous batch (chunked prefill / in-flight
  batching): its FLOPs only, the weights being streamed for the decode step it rides with.
- Eager PyTorch launches every kernel from Python: a per-layer CPU cost overlapping the GPU time.
"""

from __future__ import annotations

from gpuplan.estimate.serving.decode import moe_loop_experts
from gpuplan.estimate.serving.decode_fixed import tp_allreduce_s
from gpuplan.estimate.serving.serving_case import (COMPILED, ServingCase, attention_dtype, compute_dtype, soft_max,
                                           stream_efficiency)
from gpuplan.estimate.forward import eager_cpu_s_per_op, unfused_scores_s
from gpuplan.estimate.memory import ENGINES
from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import Shape, weight_bytes
from gpuplan.estimate.serving.decode import int8_serial_s
from gpuplan.estimate.serving.legacy_quant import legacy_quant_kernel, reconstruct_s
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.clocks import attention_rate_factor, attention_rate_note, stated_kernel_note, sustained_flops


def prefill_time(s: Shape, case: ServingCase, layout: Layout, system: System, batch: int, notes: list[str],
                 marginal: bool = False, encoder: bool = False) -> float:
    """Seconds to process the prompts of ``batch`` sequences. ``marginal``: the extra time one prompt
    adds to a running continuous batch (chunked prefill / in-flight batching): its FLOPs only, the
    weights being streamed for the decode step it rides with and the pipeline stages kept busy."""
    inf = table("inference")
    p = max(1, case.prompt_tokens)
    # an encoder has no LM head: its (tied) embedding matrix is only looked up
    matmul = s.layers * (s.attn_params_layer + s.mlp_params_layer_active) if encoder else s.matmul_params_active
    lin_flops = batch * (2.0 * matmul * p + case.vision_flops_per_prompt)   # a VLM's tower runs before the prefill
    attn_flops = batch * 2.0 * s.context_layers * s.heads * s.head_dim * p * p
    peak = sustained_flops(system, compute_dtype(case), notes)
    # the attention core (FlashAttention) runs in 16-bit even when the GEMMs run in FP8
    peak_attn = sustained_flops(system, attention_dtype(case), [])
    # FlashAttention-2 under eager PyTorch on a full-rate Hopper part (clocks.attention_rate_factor; engines: 1)
    attn_rate = attention_rate_factor(system.gpu, case.framework, kernel=case.attention_kernel)
    if (stated := stated_kernel_note(system.gpu, case.attention_kernel)) and stated not in notes:
        notes.append(stated)
    peak_attn *= attn_rate
    if attn_rate < 1.0 and (note := attention_rate_note(system.gpu, case.framework, attn_rate)) not in notes:
        notes.append(note)
    flops = lin_flops + attn_flops * peak / peak_attn  # attention FLOPs in units of the GEMM rate
    eff = float(inf["prefill_efficiency"])
    if not marginal:
        # a forward of few rows runs thin GEMMs (engines batch many prompts into one step: marginal)
        eff *= gemm_row_ramp(batch * p)
    shards = layout.tp * layout.pp
    compute = flops / shards / (peak * eff)
    if not case.flash:     # the prompt x prompt scores of every head go through HBM (forward share)
        compute += unfused_scores_s(system, float(batch) * s.context_layers * s.heads * float(p) ** 2,
                                    float(inf["unfused_attention_bytes_per_score"])) / shards
    w_bytes, _dtype = weight_bytes(s, case.precision, case.quantization)
    stream = stream_efficiency(case.quantization, case.framework)
    rebuild = 0.0
    legacy = legacy_quant_kernel(case) if case.framework in ENGINES and not s.moe_experts and not encoder else None
    if legacy is not None and legacy.rebuilds(batch * p):
        # the engine rebuilds each weight in 16 bits and runs a 16-bit GEMM on it (legacy_quant)
        rebuild = reconstruct_s(legacy, s, layout, system)
        w_bytes, stream = weight_bytes(s, case.precision, "none")[0], float(inf["weight_stream_efficiency"])
    elif legacy is not None:
        # the old dequantising GEMM for every row, at its share of the peak
        compute += lin_flops / shards * (1.0 / (peak * legacy.gemm_share) - 1.0 / (peak * eff))
    memory = w_bytes / shards / (system.gpu.mem_bandwidth_gb_s * 1e9 * stream)
    t = (compute if marginal else max(compute, memory)) + rebuild
    if layout.pp > 1 and not marginal:
        t *= layout.pp  # stages in sequence for one request
    if case.framework not in ENGINES and case.framework not in COMPILED:
        # eager PyTorch launches every kernel from Python: the CPU time overlaps the GPU time (soft maximum)
        ops = eager_ops_per_layer(encoder)
        if s.moe_experts:
            ops += moe_loop_experts(s, case, batch * p) * float(table("training", "moe_eager_ops_per_expert"))
        cpu = s.layers * ops * eager_cpu_s_per_op()
        t = soft_max(cpu, t, float(inf["eager_overlap_exponent"])) + int8_serial_s(s, case.quantization)
    return t + tp_allreduce_s(system, layout, batch * p * s.hidden * 2.0, 2 * s.layers, case.framework)


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
