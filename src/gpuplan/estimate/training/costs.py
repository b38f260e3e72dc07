"""The pieces a training step's time is built from (the step itself: training/step.py): FLOPs per token (PaLM's
6·N + 12·L·h·s, recomputation included), achievable HFU by architecture, layer width and MoE expert width, the
dequantization of a quantized base, the eager stacks' CPU launch costs, the training loop's fixed costs and the
optimizer step's HBM traffic. The GPU's peak and sustained FLOP/s are in estimate/clocks.py."""

from __future__ import annotations

from gpuplan.estimate.clocks import sustained_tensor_fraction
from gpuplan.estimate.memory.train import sharded_share
from gpuplan.estimate.params import by_key, interpolate_log2, table
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System


def attention_flops_fwd_per_token(s: Shape, seq_len: int) -> float:
    """4·L·(a·d_h)·s: QK^T and AV for one token over the whole sequence (non-causal convention, as
    PaLM and llm-foundry count it); L counts the softmax-attention layers (a hybrid model's linear-attention layers
    cost what their projections cost, whatever the length)."""
    return 4.0 * s.context_layers * s.heads * s.head_dim * seq_len


def flops_per_token(s: Shape, seq_len: int, task: str, checkpointing: str,
                    attn_executed_share: float = 1.0) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) per trained token. Model FLOPs count the attention core over the
    whole sequence (the MFU convention); hardware FLOPs count the share a kernel executes
    (``attn_executed_share``: causal FlashAttention skips the blocks above the diagonal)."""
    n = s.matmul_params_active

    def per_token(attn: float) -> tuple[float, float]:
        fwd = 2.0 * n + attn
        if task in ("lora", "qlora"):
            total = fwd + (2.0 * n + 2.0 * attn)  # input gradients only; adapters are negligible
        else:
            total = 3.0 * fwd
        if checkpointing == "full":
            return total, total + fwd
        if checkpointing == "selective":
            return total, total + attn
        if checkpointing == "per-op":
            return total, total + per_op_recompute_flops_per_token(s)
        return total, total

    attn = attention_flops_fwd_per_token(s, seq_len)
    model, _ = per_token(attn)
    _, hw = per_token(attn * attn_executed_share)
    return model, hw

def per_op_recompute_flops_per_token(s: Shape) -> float:
    """Forward FLOPs per token that torchtitan's per-op selective checkpointing runs again in backward: the matrix
    multiplies whose outputs it does not keep, every second one in the block's order (k, o and up; plain MLP:
    fc2): 2·L·(h·kv_dim + q_dim·h + h·f). The attention kernel's output is kept (memory/common.py
    per_op_saved_bytes_per_token_layer)."""
    q_dim = s.heads * s.head_dim
    kv_dim = s.kv_heads * s.head_dim
    return 2.0 * s.layers * (s.hidden * kv_dim + q_dim * s.hidden + s.hidden * s.moe_active_ffn)


def routed_expert_share(s: Shape) -> float:
    """Share of a token's block FLOPs spent in its routed experts (MoE), else 0."""
    if not s.moe_experts or not s.moe_experts_per_token or not s.moe_expert_ffn:
        return 0.0
    routed = s.moe_experts_per_token * (3.0 if s.gated else 2.0) * s.hidden * s.moe_expert_ffn
    return min(1.0, routed / max(1.0, s.attn_params_layer + s.mlp_params_layer_active))


def width_factor(s: Shape) -> float:
    """GEMM efficiency by width (training.hidden_size_curve): a dense layer's GEMMs are about the hidden
    size wide; an MoE layer's routed experts run GEMMs of the expert's FFN width (Qwen3-30B-A3B: 768 for a
    2048 hidden size), each on a few tokens, so their share of the FLOPs runs at that narrower width's
    efficiency (harmonic mix: the time of each share adds up)."""
    points = table("training", "hidden_size_curve")["points"]
    dense = interpolate_log2(points, float(s.hidden))
    share = routed_expert_share(s)
    if not share:
        return dense
    expert = interpolate_log2(points, float(min(s.hidden, s.moe_expert_ffn)))
    return 1.0 / ((1.0 - share) / dense + share / expert)


def experts_touched(s: Shape, tokens: float) -> float:
    """Routed experts that receive at least one of ``tokens`` tokens per layer (uniform routing):
    E·(1 - (1 - k/E)^T)."""
    if not s.moe_experts or not s.moe_experts_per_token:
        return 0.0
    e, k = float(s.moe_experts), float(s.moe_experts_per_token)
    return e * (1.0 - (1.0 - min(1.0, k / e)) ** max(1.0, tokens))


def moe_eager_cpu_s(s: Shape, layout: Layout, tokens_mb: float, passes: float, adapted_expert_linears: float) -> float:
    """CPU time per micro-batch of an eager MoE layer's Python loop over its experts (transformers
    MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock.forward: for every expert that
    received tokens, torch.where, gather, the expert MLP, the routing-weight product and index_add_:
    training.moe_eager_ops_per_expert ops, plus PEFT's per adapted expert linear), each at the eager per-op
    cost, for every local layer and pass. Grouped-GEMM stacks (Megatron-Core, NeMo) launch a few kernels
    per layer instead and pay nothing here."""
    if not s.moe_experts:
        return 0.0
    tab = table("training")
    per_op = float(table("inference", "eager_cpu_s_per_layer")) / float(tab["dequant_traffic"]["eager_ops_per_layer"])
    ops = float(tab["moe_eager_ops_per_expert"]) + adapted_expert_linears * float(tab["lora_eager_ops"]["per_adapter"])
    layers = s.layers / (1 if layout.naive_pipeline else layout.pp)
    local = experts_touched(s, tokens_mb) / max(1, layout.ep)
    return passes * layers * local * ops * per_op


def achievable_hfu(system: System, s: Shape, framework: str, quantization: str, tokens_mb: float) -> float:
    eff_table = table("training")
    base = by_key(eff_table["hfu_by_arch"], system.gpu.architecture.split(" (")[0].strip())
    size = width_factor(s)
    fw = by_key(eff_table["framework_factor"], framework, "auto")
    q = 1.0
    if quantization not in (None, "none") and quantization not in eff_table["dequant_traffic"]["bytes_per_param"]:
        q = float(eff_table["quantized_base_factor"].get(quantization, 0.6))
    ramp = min(1.0, 0.5 + 0.5 * tokens_mb / float(eff_table["min_tokens_for_full_efficiency"]))
    # the HFU table is of cards that hold their boost clock; a power-limited card sustains less (clocks.py)
    return base * size * fw * q * ramp * sustained_tensor_fraction(system.gpu)


def fp32_core_hfu(hfu16: float, peak16: float, peak32: float) -> float:
    """HFU of a step on the FP32 CUDA cores from the 16-bit tensor-core HFU of the same step (training.
    fp32_core_training): the 16-bit time per FLOP is the GEMMs' plus a bandwidth-bound rest; on the FP32 cores
    the GEMMs run at the FP32 rate and the rest costs activation_bytes_ratio times its 16-bit time."""
    tab = table("training", "fp32_core_training")
    e = float(tab["gemm_efficiency"])
    rest = max(0.0, 1.0 / (peak16 * hfu16) - 1.0 / (peak16 * e))
    return 1.0 / (peak32 * (1.0 / (peak32 * e) + float(tab["activation_bytes_ratio"]) * rest))


def dequant_passes(layout: Layout, quantization: str) -> float:
    """Times a quantized base is unpacked per micro-batch: the forward, the recomputed forward under full
    checkpointing, and the backward where the stack unpacks again for the input gradient (bitsandbytes)."""
    tab = table("training", "dequant_traffic")
    return (float(tab["passes_per_micro_batch"]) + float(tab["backward_passes"].get(quantization, 0))
            + (1.0 if layout.checkpointing == "full" else 0.0))


def dequant_s(system: System, s: Shape, layout: Layout, quantization: str) -> float:
    """HBM time to unpack a quantized base per micro-batch (training.dequant_traffic): bytes per quantized
    weight x the local block matrices x the passes. GPTQ's torch path unpacks in PyTorch ops; bitsandbytes
    NF4 in one kernel that writes the 16-bit weight the GEMM reads."""
    local = s.linear_params_total / (layout.tp * (1 if layout.naive_pipeline else layout.pp))
    return dequant_weights_s(system, local, layout, quantization)


def dequant_weights_s(system: System, params: float, layout: Layout, quantization: str) -> float:
    """HBM time to unpack ``params`` quantized weights in every pass of one micro-batch (training.dequant_traffic
    bytes per weight x dequant_passes, at the weight-streaming share of the bandwidth); 0 for a base stored unpacked."""
    per = table("training", "dequant_traffic")["bytes_per_param"].get(quantization)
    if per is None:
        return 0.0
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(table("inference", "weight_stream_efficiency"))
    return dequant_passes(layout, quantization) * params * float(per) / bw


def dequant_cpu_s(s: Shape, layout: Layout, quantization: str) -> float:
    """CPU time per micro-batch of launching the PyTorch ops that unpack a GPTQ weight on every call
    (eager stacks): ops per call x the block's linear layers x layers x passes, each at the eager
    per-op cost (inference.eager_cpu_s_per_layer over the ops of one decoder layer)."""
    tab = table("training", "dequant_traffic")
    if quantization not in tab["bytes_per_param"]:
        return 0.0
    passes = dequant_passes(layout, quantization)
    linears = 4 + (3 if s.gated else 2)  # q, k, v, o + the MLP's matrices
    per_op = float(table("inference", "eager_cpu_s_per_layer")) / float(tab["eager_ops_per_layer"])
    layers = s.layers / (1 if layout.naive_pipeline else layout.pp)
    return passes * layers * linears * float(tab["eager_ops_per_call"][quantization]) * per_op


def framework_overhead_s(framework: str, grad_accum: int, deepspeed_engine: bool = False) -> float:
    """Serial loop cost per step: per micro-batch and per optimizer step (data/efficiency.yaml).
    A Trainer stack running ZeRO through the DeepSpeed engine pays at least the engine's step."""
    fo = table("training", "framework_overhead_s")
    mb = float(by_key(fo["per_micro_batch"], framework, "auto"))
    st = float(by_key(fo["per_optimizer_step"], framework, "auto"))
    if deepspeed_engine:
        mb = max(mb, float(fo["per_micro_batch"]["deepspeed"]))
        st = max(st, float(fo["per_optimizer_step"]["deepspeed"]))
    return grad_accum * mb + st


def optimizer_step_s(system: System, layout: Layout, trainable_params: float, optimizer: str,
                     expert_params: float = 0.0) -> float:
    """The optimizer step reads and writes every local parameter's states once (memory-bound): the rank's states as
    memory/train.py counts them (``sharded_share``: expert parallelism keeps 1/ep of the ``expert_params``, and a
    sharded optimizer shards them over the expert-data-parallel group)."""
    per = table("training", "optimizer_step_bytes_per_param")
    ep = max(1, layout.ep)
    local = (trainable_params - expert_params * (1.0 - 1.0 / ep)) / (layout.tp * layout.pp)
    local = sharded_share(local, expert_params / (layout.tp * layout.pp * ep) if ep > 1 else 0.0,
                          layout.dp if layout.zero >= 1 else 1, ep)
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(table("inference", "weight_stream_efficiency"))
    return local * float(per.get(optimizer, per["adamw"])) / bw


def adapter_bytes_per_element(adapter_b: float, compute_b: float, dropout: bool) -> tuple[float, float, float, float]:
    """HBM bytes one token moves per element of an adapted linear's input and of its output in an unfused PEFT LoRA
    adapter (peft tuners/lora/layer.py Linear.forward: ``x`` cast to the adapters' dtype, dropout, lora_A, lora_B, the
    scaling, the add to the base output, the cast back), run under autocast as the Trainer and the bundle's train.py
    run 16-bit training. ``adapter_b``: the adapters' dtype (PEFT upcasts them to fp32: autocast_adapter_dtype),
    ``compute_b``: autocast's (fp32 training: both 4, no casts).

    Forward, per input element: PEFT's cast (read c, write a), dropout (read a, write a and a 1-byte mask), autocast's
    cast for lora_A (read a, write c), lora_A reads it (c). Per output element: lora_B writes (c), the scaling (read
    c, write c), the add (read c twice, write c). Backward, per input element: lora_A's weight gradient reads its
    saved input (c) and its input gradient is written (c), the two casts' and dropout's backward (read and write each,
    and the mask), the sum into the input's gradient (read c twice, write c); per output element: the scaling's
    backward (read c, write c) and lora_B's two GEMMs reading the gradient (2c). Derived, not fitted. Returns (per
    input element, per output element) over forward and backward, then the forward's alone."""
    a, c = adapter_b, compute_b
    casts = 2.0 * (a + c) if a != c else 0.0          # PEFT's cast to a, autocast's back to c
    drop = (2 * a + 1) if dropout else 0.0
    fwd_in = casts + drop + c
    fwd_out = c + 2 * c + 3 * c
    bwd_in = 2 * c + casts + drop + 3 * c
    bwd_out = 2 * c + 2 * c
    return fwd_in + bwd_in, fwd_out + bwd_out, fwd_in, fwd_out


def adapter_traffic_s(system: System, layout: Layout, tokens_mb: float, layers: float, widths: tuple[float, float],
                      adapter_b: float, compute_b: float, dropout: bool) -> float:
    """HBM time per micro-batch of the LoRA adapters' element-wise work on one GPU: tokens x layers x (adapted input
    widths x bytes per input element + adapted output widths x bytes per output element), the forward once more
    under full recomputation (:func:`adapter_bytes_per_element`), at the stream efficiency of the weight reads."""
    din, dout = widths
    if not din and not dout:
        return 0.0
    per_in, per_out, fwd_in, fwd_out = adapter_bytes_per_element(adapter_b, compute_b, dropout)
    if layout.checkpointing == "full":
        per_in, per_out = per_in + fwd_in, per_out + fwd_out
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(table("inference", "weight_stream_efficiency"))
    return tokens_mb * layers * (din * per_in + dout * per_out) / layout.tp / bw

