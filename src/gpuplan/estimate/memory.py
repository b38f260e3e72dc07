"""Per-GPU memory as a breakdown: training (phases: forward/backward and optimizer step) and inference.

Formulas and their sources are in docs/formulas.md. In short:
- weights/gradients/optimizer states per trainable parameter follow ZeRO (Rajbhandari et al. 2020,
  §3): mixed-precision Adam keeps 2 + 2 + 12 bytes; stacks that load the model in bf16 and let the
  optimizer inherit the dtype (Hugging Face Trainer: ms-swift, LLaMA-Factory) keep 2 + 2 + 4;
  ZeRO-1/2/3 (FSDP shard_grad_op/full_shard) shard states, then gradients, then weights over DP.
- activations per layer per token follow Korthikanti et al. 2022 (Table 2) with the terms of a
  gated-MLP, GQA layer written out (see :func:`activation_bytes_per_token_layer`); eager attention
  adds the s x s scores; full recomputation keeps only each layer's input.
- the peak is the larger of two phases — forward/backward (activations, logits) and the optimizer
  step (gradients + the optimizer's temporaries) — not the sum of everything.
- what the caching allocator reserves on top, the CUDA context and NCCL buffers are calibrated
  constants in data/efficiency.yaml, reported as assumptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.shapes import ACT_BYTES, Shape, weight_bytes
from gpuplan.estimate.system import Layout, System
from gpuplan.units import GIB
from gpuplan.i18n import N_, _

# Words put into the notes at run time (phase of the peak, precision mode).
_NOTE_WORDS = (N_("forward/backward"), N_("optimizer step"), N_("pure"), N_("mixed"), N_("fp32"))

COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "adapters", "logits", "overhead")

# Optimizer state bytes per trainable parameter, beyond the weights and gradients.
# "mixed": fp32 master copy + fp32 moments (Adam: 4 + 4 + 4); "pure": states in the weight dtype.
OPT_STATE_BYTES = {
    ("adamw", "mixed"): 12.0, ("adamw-fused", "mixed"): 12.0, ("adamw-foreach", "mixed"): 12.0,
    ("adamw-bf16", "mixed"): 4.0, ("adamw-8bit", "mixed"): 6.0, ("sgd", "mixed"): 8.0, ("adafactor", "mixed"): 4.2,
    ("adamw", "pure"): 4.0, ("adamw-fused", "pure"): 4.0, ("adamw-foreach", "pure"): 4.0,
    ("adamw-bf16", "pure"): 4.0, ("adamw-8bit", "pure"): 2.0, ("sgd", "pure"): 2.0, ("adafactor", "pure"): 0.2,
    ("adamw", "fp32"): 8.0, ("adamw-fused", "fp32"): 8.0, ("adamw-foreach", "fp32"): 8.0, ("adamw-bf16", "fp32"): 8.0,
    ("adamw-8bit", "fp32"): 2.0, ("sgd", "fp32"): 4.0, ("adafactor", "fp32"): 0.2,
    # bitsandbytes paged optimizers: the 8-bit one keeps two 8-bit moments (+ block absmax, ~0.03 B),
    # the 32-bit one keeps fp32 moments whatever the parameter dtype (Optimizer2State, optim_bits=32).
    ("paged-adamw-8bit", "mixed"): 6.0, ("paged-adamw-8bit", "pure"): 2.0, ("paged-adamw-8bit", "fp32"): 2.0,
    ("paged-adamw", "mixed"): 12.0, ("paged-adamw", "pure"): 8.0, ("paged-adamw", "fp32"): 8.0,
}
# bitsandbytes paged optimizers allocate their states with cudaMallocManaged (unified memory), outside
# PyTorch's caching allocator: the driver pages them to host RAM when the GPU runs short, so they never
# cause an out-of-memory error and do not show in torch.cuda.max_memory_reserved (bitsandbytes docs,
# "Paged optimizers"; Dettmers et al. 2023 §2).
PAGED_OPTIMIZERS = {"paged-adamw", "paged-adamw-8bit"}
# Frameworks whose default fine-tuning recipe loads the model in bf16 and lets AdamW keep bf16
# states (LLaMA-Factory / ms-swift / HF Trainer with torch_dtype=bfloat16).
PURE_16BIT_FRAMEWORKS = {"transformers", "swift", "llama-factory", "torchtune"}
# Stacks whose QLoRA path does not call peft.prepare_model_for_kbit_training, so embeddings and the LM
# head stay in 16-bit: LLaMA-Factory (model/model_utils/checkpointing.py prepare_model_for_training
# only upcasts layer norms, and only with upcast_layernorm, default off) and torchtune (its QLoRA
# builders keep every non-NF4 parameter in bf16).
NO_KBIT_UPCAST_FRAMEWORKS = {"llama-factory", "torchtune"}
# Stacks whose LoRA adapters stay in the model's 16-bit dtype: torchtune builds the whole model, adapters
# included, under training.set_default_dtype(bf16) and never upcasts them (peft upcasts adapters to fp32:
# autocast_adapter_dtype=True).
BF16_ADAPTER_FRAMEWORKS = {"torchtune"}


@dataclass
class MemoryEstimate:
    """Per-GPU memory of the busiest GPU, with its breakdown (bytes). Components add up to per_gpu_bytes."""

    per_gpu_bytes: float
    peak_allocated_bytes: float
    peak_reserved_bytes: float
    capacity_bytes: float
    components: dict[str, float]
    host_bytes: float
    engine_reserved_bytes: float | None = None
    peak_phase: str = ""
    total_bytes: float = 0.0          # sum over the GPUs of one model replica (tp x pp)
    total_allocated_bytes: float = 0.0
    total_reserved_bytes: float = 0.0
    kv_budget_bytes: float | None = None
    kv_bytes_per_sequence: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.per_gpu_bytes <= self.capacity_bytes

    @property
    def shortfall_bytes(self) -> float:
        return max(0.0, self.per_gpu_bytes - self.capacity_bytes)

    def _int_components(self) -> dict[str, int]:
        """Whole-byte components that add up exactly to int(per_gpu_bytes) (overhead takes the rounding)."""
        comps = {k: int(round(self.components.get(k, 0.0))) for k in COMPONENTS}
        comps["overhead"] += int(self.per_gpu_bytes) - sum(comps.values())
        return comps

    def to_dict(self) -> dict:
        return {
            "per_gpu_bytes": int(self.per_gpu_bytes),
            "peak_allocated_bytes": int(self.peak_allocated_bytes),
            "peak_reserved_bytes": int(self.peak_reserved_bytes),
            "engine_reserved_bytes": None if self.engine_reserved_bytes is None else int(self.engine_reserved_bytes),
            "capacity_bytes": int(self.capacity_bytes),
            "fits": self.fits,
            "shortfall_bytes": int(self.shortfall_bytes),
            "components": self._int_components(),
            "host_bytes": int(self.host_bytes),
            "peak_phase": self.peak_phase,
            "replica_total_bytes": int(self.total_bytes),
        }


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------

def precision_mode(precision: str, framework: str, optimizer: str) -> str:
    """'fp32', 'pure' (16-bit weights and states) or 'mixed' (fp32 master + fp32 moments)."""
    if precision == "fp32":
        return "fp32"
    if optimizer == "adamw-bf16":
        return "pure"
    return "pure" if framework in PURE_16BIT_FRAMEWORKS else "mixed"


def activation_bytes_per_token_layer(s: Shape, precision: str, framework: str, *, flash: bool, seq_len: int,
                                     tp: int = 1, sp: bool = False, lora_din: float = 0.0,
                                     lora_dropout: bool = True, frozen_base: bool = False,
                                     linear_input_bytes: float = 2.0) -> float:
    """Bytes kept for backward per token per layer (no recomputation).

    c_h·h (norm inputs incl. fp32 upcasts, q, attention output, softmax statistics)
    + 4·kv·d (K and V, 16-bit) + 8·f (gated MLP: gate, act, up, product; plain MLP: 4·f; stacks with a
    fused SwiGLU kernel — Megatron-Core, NeMo — keep its fused gate/up input and its output: 6·f,
    memory.gated_mlp_saved_coeff)
    — Korthikanti et al. 2022 Table 2 written per term, with flash attention; eager attention adds
    the scores: 6·a·s bytes (16-bit product + fp32 softmax kept by Hugging Face's eager path).
    LoRA with dropout adds a dropped-out copy of each adapted input (2 bytes) and its mask (1 byte).
    linear_input_bytes < 2 (Transformer Engine FP8: memory.fp8_saved_linear_input_bytes) stores the
    inputs of the four trainable block GEMMs (QKV and fc1: the norm outputs; out-proj: the attention
    output; fc2: the MLP activation) at that width instead of 16 bits: 3·h + f elements.
    With a frozen base (LoRA/QLoRA) autograd does not keep the inputs of frozen matrices for weight
    gradients: the MLP keeps only what its nonlinearity and product need (6·f gated, 2·f plain).
    """
    b = ACT_BYTES.get(precision, 2.0) / 2.0
    c_h = by_key(table("memory", "act_hidden_coeff"), framework)
    gated = float(by_key(table("memory", "gated_mlp_saved_coeff"), framework))
    if frozen_base:
        mlp_coeff = min(6.0, gated) if s.gated else 2.0
    else:
        mlp_coeff = gated if s.gated else 4.0
    replicated = c_h * s.hidden / (tp if sp else 1)
    sharded = (4.0 * s.kv_heads * s.head_dim + mlp_coeff * s.moe_active_ffn) / tp
    per = b * (replicated + sharded)
    if linear_input_bytes < 2.0 and not frozen_base:
        saved = 2.0 - linear_input_bytes
        per -= saved * (2.0 * s.hidden / (tp if sp else 1) + (s.hidden + s.moe_active_ffn) / tp)
    if not flash:
        per += eager_score_bytes(framework) * s.heads * seq_len / tp
    if lora_din and lora_dropout:
        per += 3.0 * lora_din / tp
    return per


def eager_score_bytes(framework: str) -> float:
    """Bytes per attention score (per head, per query-key pair) that unfused attention keeps for
    backward: Hugging Face eager 6 (16-bit product + fp32 softmax); Megatron's fused scale-mask-softmax
    5 (Korthikanti et al. 2022 Table 2: softmax output 2 + dropout mask 1 + dropout output 2)."""
    return by_key(table("memory", "eager_attention_score_bytes"), framework)


def lora_param_count(model, targets, rank: int) -> tuple[float, float]:
    """(adapter parameters in the whole model, sum of adapted input widths per layer)."""
    try:
        shapes = model.linear_shapes_per_layer(targets)
    except Exception:  # noqa: BLE001 - an unknown target list falls back to all linear layers
        shapes = model.linear_shapes_per_layer("all-linear")
    per_layer = 0.0
    din = 0.0
    for _name, d_in, d_out, count in shapes:
        per_layer += rank * (d_in + d_out) * count
        din += d_in * count
    layers = model.num_layers + (getattr(model, "num_decoder_layers", 0) or 0)
    return per_layer * layers, din


def logits_bytes_per_token(s: Shape, framework: str, tp: int = 1, compiled: bool = False) -> float:
    """Bytes of the logits pipeline at its peak, per token (vocab-parallel under TP). A compiled loss
    (torch.compile) uses ``logits_bytes_per_vocab_token_compiled`` where the framework has an entry."""
    per_vocab = by_key(table("memory", "logits_bytes_per_vocab_token"), framework)
    if compiled:
        per_vocab = table("memory", "logits_bytes_per_vocab_token_compiled").get(framework, per_vocab)
    return per_vocab * s.vocab / tp


def overhead_fixed(system: System) -> tuple[float, float]:
    """(CUDA context outside the allocator, NCCL buffers) per GPU."""
    mem = table("memory")
    nccl = mem["nccl_buffer_bytes"] if system.total_gpus > 1 else 0.0
    return float(mem["cuda_context_bytes"]), float(nccl)


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainingInputs:
    task: str
    precision: str
    quantization: str
    optimizer: str
    framework: str
    flash: bool
    seq_len: int
    lora_rank: int = 8
    lora_targets: object = "all-linear"
    lora_dropout: float = 0.05
    variable_length: bool = True
    optimizer_in_backward: bool = False
    activation_offloading: bool = False
    compiled: bool = False


def _stage_layers(layers: int, pp: int) -> list[int]:
    base, extra = divmod(layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def block_storage_bytes_per_layer(s: Shape, precision: str, quantization: str, *, double_quant: bool = False) -> float:
    """Bytes of one transformer block's weights at rest (quantized storage included), whole model width."""
    w_total, _dtype = weight_bytes(s, precision, quantization, double_quant=double_quant)
    other_b = 4.0 if precision == "fp32" else 2.0
    return max(0.0, w_total - s.other_params * other_b) / max(1, s.layers)


def shard_group(layout: Layout, system: System) -> int:
    """Ranks the sharded states are divided over: the data-parallel group, except FSDP hybrid_shard
    (HSDP), which shards within a node and replicates across nodes (PyTorch FSDP ShardingStrategy)."""
    dp = max(1, layout.dp) * max(1, layout.cp)  # Megatron's distributed optimizer and FSDP shard over DP x CP
    if layout.fsdp == "hybrid_shard" and system.nodes > 1:
        per_node = max(1, system.gpus_per_node // max(1, layout.tp * layout.pp))
        return max(1, min(dp, per_node))
    return dp


def gathered_param_bytes(s: Shape, layout: Layout, layer_bytes: float, dense_w: float, *, trainable: bool,
                         group: int | None = None, grad_bytes: float = 4.0) -> float:
    """Unsharded parameters live on a rank under ZeRO-3 / FSDP full_shard beyond its own shard.

    One block is gathered at a time and the next is prefetched (FSDP forward/backward prefetch,
    DeepSpeed stage3_prefetch_bucket_size): two blocks at their storage dtype. The embedding and LM
    head are gathered too: FSDP's root unit (embeddings, final norm, head) is not resharded after
    forward (torch.distributed.fsdp _runtime_utils: the root keeps its parameters for backward);
    DeepSpeed gathers the largest of them when used. Full training adds one reduce-scatter bucket of gradients (at the gradient dtype: fp32
    under mixed precision, bf16 for pure-bf16 stacks) the size of a block. LoRA's frozen base has no
    gradients to reduce."""
    if layout.zero < 3:
        return 0.0
    tp, dp = layout.tp, max(1, group if group is not None else layout.dp)
    blocks = 2.0 * layer_bytes / tp
    layer_params = s.attn_params_layer + s.mlp_params_layer_total
    bucket_params = layer_params
    if layout.fsdp != "none":
        root = (s.embed_params + s.lm_head_params) / tp * dense_w
    else:
        root = max(s.embed_params, s.lm_head_params) / tp * dense_w
        # DeepSpeed ZeRO-3 fetches module by module and releases gathered parameters beyond
        # stage3_max_live_parameters; gradients are reduced in reduce_bucket_size buckets
        # (DeepSpeed config defaults): for blocks larger than those, the caps bound what is live.
        ds = table("memory", "deepspeed_zero3")
        per_elem = layer_bytes / layer_params if layer_params else dense_w
        live = max(float(ds["max_live_parameters"]), largest_block_matrix(s)) * per_elem / tp
        blocks = min(blocks, live)
        bucket_params = min(layer_params, float(ds["reduce_bucket_size"]) * tp)
    root *= (1.0 - 1.0 / dp)  # the rank's own shard is already counted with the weights
    bucket = bucket_params / tp * grad_bytes if trainable else 0.0
    return blocks + root + bucket


def sharded_traffic_bytes(s: Shape, layout: Layout, precision: str, quantization: str, task: str,
                          trainable_params: float) -> tuple[float, float]:
    """Bytes one rank's shard group moves for sharded parameters (ZeRO-3 / FSDP full_shard/hybrid_shard):
    (all-gathered per pass, reduce-scattered per step). Every pass (forward, backward) all-gathers the
    whole model slice at its storage dtype (4-bit for QLoRA: FSDP-QLoRA shards the packed weights,
    bnb_4bit_quant_storage), frozen weights included; only trainable gradients are reduce-scattered
    (bf16). Zero when nothing is sharded. Used by training.py for the communication time."""
    if layout.zero < 3 or layout.dp <= 1:
        return 0.0, 0.0
    quant = quantization if quantization not in (None, "none") else "none"
    w_total, _dtype = weight_bytes(s, "bf16" if precision != "fp32" else "fp32", quant,
                              double_quant=(task == "qlora"))
    gather = w_total / (layout.tp * layout.pp)
    reduce = trainable_params / (layout.tp * layout.pp) * 2.0
    return gather, reduce


def largest_block_matrix(s: Shape) -> float:
    """Elements of the largest matrix inside a transformer block (an MLP projection, or for MoE
    one expert's, or the attention's output projection)."""
    mlp_mat = s.mlp_params_layer_total / (3.0 if s.gated else 2.0)
    if s.moe_experts:
        mlp_mat = s.mlp_params_layer_total / max(1, s.moe_experts) / (3.0 if s.gated else 2.0)
    return max(mlp_mat, float(s.heads * s.head_dim * s.hidden))


def largest_param_tensor(s: Shape) -> float:
    """Elements of the largest single parameter tensor (the embedding, the LM head or a block matrix)."""
    return max(s.embed_params, s.lm_head_params, largest_block_matrix(s))


def training_memory(model, s: Shape, t: TrainingInputs, layout: Layout, system: System, *,
                    with_notes: bool = True) -> MemoryEstimate:
    """Memory of one training step on the busiest GPU (and the sum over one replica's GPUs).
    ``with_notes=False`` skips the explanatory notes (the recommender's feasibility pass)."""
    mem_tab = table("memory")
    peft = t.task in ("lora", "qlora")
    mode = precision_mode(t.precision, t.framework, t.optimizer)
    dense_w = 4.0 if t.precision == "fp32" else 2.0
    quant = t.quantization if t.quantization not in (None, "none") else "none"
    w_total, _dtype = weight_bytes(s, t.precision, quant, double_quant=(t.task == "qlora"))
    if t.task == "qlora" and quant in ("bnb-nf4", "bnb-int8") and layout.zero < 3 \
            and t.framework not in NO_KBIT_UPCAST_FRAMEWORKS:
        # peft.prepare_model_for_kbit_training casts the non-quantized parameters (embeddings,
        # LM head, norms) to fp32 (PEFT docs, "quantization" guide). Sharded QLoRA (FSDP / ZeRO-3)
        # skips it: FSDP needs one dtype per flat parameter (TRL SFTTrainer: is_sharded_qlora).
        w_total += s.other_params * (4.0 - 2.0)
    bytes_per_param_w = w_total / s.params_total if s.params_total else dense_w
    grad_b = 4.0 if mode == "fp32" else 2.0
    if mode == "mixed":
        # Megatron-Core accumulates gradients in fp32 main_grad buffers (memory.mixed_precision_grad_bytes)
        grad_b = by_key(table("memory", "mixed_precision_grad_bytes"), t.framework)
    state_b = OPT_STATE_BYTES.get((t.optimizer, mode), 12.0 if mode == "mixed" else 4.0)
    step_temp_mult = by_key(table("memory", "optimizer_step_transient"), t.optimizer, "adamw")
    temp_b = (4.0 if mode in ("mixed", "fp32") else 2.0) * step_temp_mult
    if t.optimizer == "adamw" and t.framework not in PURE_16BIT_FRAMEWORKS | {"auto"} and mode == "mixed":
        # DeepSpeed / Megatron / FSDP use fused or multi-tensor-apply Adam kernels that step in place.
        temp_b = 0.0

    dp = shard_group(layout, system)
    zero = layout.zero
    shard_states = dp if zero >= 1 else 1
    shard_grads = dp if zero >= 2 else 1
    shard_weights = dp if zero >= 3 else 1
    offload = layout.offload

    lora_params, lora_din = (0.0, 0.0)
    if peft:
        lora_params, lora_din = lora_param_count(model, t.lora_targets, t.lora_rank)
    paged = t.optimizer in PAGED_OPTIMIZERS and not peft
    in_bwd = t.optimizer_in_backward and not peft and layout.grad_accum == 1
    layer_store = block_storage_bytes_per_layer(s, t.precision, quant, double_quant=(t.task == "qlora"))

    ctx, nccl = overhead_fixed(system)
    per_layer_params = s.attn_params_layer + s.mlp_params_layer_total
    fp8_te = t.precision == "fp8" and quant == "none"
    # Transformer Engine's cached FP8 weight + FP8 transpose per block weight (memory.fp8_weight_cache_bytes)
    fp8_cache_b = by_key(mem_tab["fp8_weight_cache_bytes"], t.framework) if fp8_te else 0.0
    stage_layers = _stage_layers(s.layers, layout.pp)
    act_tok_layer = activation_bytes_per_token_layer(
        s, t.precision, t.framework, flash=t.flash, seq_len=t.seq_len, tp=layout.tp, sp=layout.sp,
        lora_din=lora_din if peft else 0.0, lora_dropout=t.lora_dropout > 0, frozen_base=peft,
        linear_input_bytes=by_key(mem_tab["fp8_saved_linear_input_bytes"], t.framework) if fp8_te else 2.0)
    tokens_mb = t.seq_len * layout.micro_batch / max(1, layout.cp)  # context parallelism splits each sequence
    frac_key = "variable_length" if (t.variable_length and t.task != "pretrain") else "packed"
    reserve_transient = mem_tab["reserve_fraction_of_transient"][frac_key]
    reserve_total = mem_tab["reserve_fraction_of_total"]

    stages = []
    seen: dict[tuple, tuple] = {}  # stages alike in layers, ends and in-flight micro-batches are computed once
    offloaded_acts = 0.0
    for i, n_layers in enumerate(stage_layers):
        first, last = i == 0, i == layout.pp - 1
        inflight: float = 1 if layout.naive_pipeline else min(layout.pp - i, layout.microbatches)
        if layout.schedule == "interleaved" and layout.vp > 1 and not layout.naive_pipeline:
            # Megatron-LM forward_backward_pipelining_with_interleaving: rank i warms up 2(p-i-1) + (v-1)p
            # chunks of L/(p·v) layers and holds one more in steady state: p + (p-2i-1)/v stages' worth
            # (Narayanan et al. 2021: the first stage's (1 + (p-1)/(p·v)) x 1F1B; the last stage holds ~p, not 1)
            inflight = min(layout.pp + (layout.pp - 2 * i - 1) / layout.vp, layout.microbatches)
        stage_key = (n_layers, first, last, inflight)
        if stage_key in seen:
            stages.append(seen[stage_key])
            continue
        params = n_layers * per_layer_params
        if first:
            params += s.embed_params
        if last:
            params += s.lm_head_params
            if layout.pp > 1 and not s.lm_head_params:
                params += s.embed_params  # tied head: a copy lives on the last stage
        params_local = params / layout.tp
        if s.moe_experts and layout.ep > 1:
            expert_share = (s.mlp_params_layer_total - s.mlp_params_layer_active) * n_layers / layout.tp
            params_local -= expert_share * (1 - 1 / layout.ep)
        # ZeRO-3 / FSDP shard every parameter, frozen ones included (LoRA/QLoRA base weights too).
        weights = params_local * bytes_per_param_w / shard_weights
        if fp8_cache_b:
            weights += (params_local - (params - n_layers * per_layer_params) / layout.tp) * fp8_cache_b
        if offload != "none" and zero >= 3:
            weights = 0.0  # FSDP offload_params / ZeRO-3 offload_param: the shards live in host RAM
        adapters = 0.0
        if peft:
            lora_local = lora_params * (n_layers / max(1, s.layers)) / layout.tp
            trainable = lora_local
            # fp32 adapter weights, grads and Adam states (peft upcasts), sharded like the stage says;
            # torchtune builds the adapters in the model dtype (bf16 weights, grads and AdamW states)
            ad_b = 2.0 if (t.framework in BF16_ADAPTER_FRAMEWORKS and t.precision != "fp32") else 4.0
            adapter_states = 0.0 if offload != "none" else 2.0 * ad_b / shard_states
            adapters = lora_local * (ad_b / shard_weights + ad_b / shard_grads + adapter_states)
            grads = states = step_temp = 0.0
        else:
            trainable = params_local
            grads = trainable * grad_b / shard_grads
            states = trainable * state_b / shard_states
            step_temp = trainable * temp_b / shard_states
            if in_bwd:
                # torchtune optimizer_in_bwd: a hook steps each parameter as soon as its gradient is
                # accumulated and frees it, so one parameter's gradient is live at a time.
                grads = min(grads, largest_param_tensor(s) / layout.tp * grad_b)
                step_temp = min(step_temp, largest_param_tensor(s) / layout.tp * temp_b)
            if offload != "none":
                states = 0.0
                step_temp = 0.0
                # ZeRO-Offload / FSDP CPU offload also move the (reduced, sharded) gradients to host RAM
                # for the CPU optimizer step (Ren et al. 2021 §4; FSDP CPUOffload(offload_params=True)
                # and FSDP2 CPUOffloadPolicy offload parameters, gradients and optimizer states): only
                # the gradient bucket being reduced stays on the GPU (counted with the gathered
                # parameters under ZeRO-3 / FSDP; one block's gradients otherwise).
                bucket = (s.attn_params_layer + s.mlp_params_layer_total) / layout.tp * grad_b
                grads = 0.0 if zero >= 3 else min(grads, bucket)
        paged_states = states if paged else 0.0
        states -= paged_states
        gather = gathered_param_bytes(s, layout, layer_store, dense_w, trainable=not peft, group=dp,
                                      grad_bytes=4.0 if mode in ("mixed", "fp32") else 2.0)

        # activations
        if layout.checkpointing == "full":
            stored = n_layers * tokens_mb * 2.0 * s.hidden * ACT_BYTES.get(t.precision, 2.0) / 2.0 / (layout.tp if layout.sp else 1)
            stored *= inflight
            recompute = tokens_mb * act_tok_layer * 1.5  # one layer rebuilt + its gradients
        else:
            per_tok = act_tok_layer
            if layout.checkpointing == "selective" and not t.flash:
                per_tok -= eager_score_bytes(t.framework) * s.heads * t.seq_len / layout.tp
            stored = n_layers * tokens_mb * per_tok * inflight
            recompute = 0.0
        # A weight-only quantized base (QLoRA) is dequantized to the compute dtype one matrix at a time
        # in forward and again in backward (bitsandbytes MatMul4Bit: dequantize_4bit, then a 16-bit
        # GEMM): the largest block matrix is transiently live.
        dequant = largest_block_matrix(s) / layout.tp * 2.0 if (peft and quant != "none") else 0.0
        recompute += dequant
        if t.activation_offloading:
            # torchtune OffloadActivations: saved tensors are copied to pinned host RAM on a side stream
            # and fetched back one layer ahead in backward: only a few layers' worth stay on the GPU.
            resident = float(mem_tab["activation_offload_resident_layers"]) / max(1, n_layers * inflight)
            offloaded_acts = max(offloaded_acts, stored * (1.0 - min(1.0, resident)))
            stored *= min(1.0, resident)
        acts = stored + recompute
        logits = tokens_mb * logits_bytes_per_token(s, t.framework, layout.tp, t.compiled) if last else 0.0
        transient = logits + recompute
        cached = 0.0
        if layout.checkpointing == "full":
            # The loss (forward and backward) runs before the last layer is recomputed and frees its
            # logits first: the two peaks follow one another, so only the larger one is allocated.
            # The caching allocator keeps the freed logit segments, which the recomputed layer's
            # differently sized tensors do not fill: reserved memory still holds both.
            cached = min(logits, recompute)
            if logits >= recompute:
                acts = stored
            else:
                logits = 0.0

        # phases
        persistent = weights + states + adapters
        if in_bwd:
            fb_grads = grads
            fb = persistent + grads + gather + acts + logits
            act_part, logit_part = acts, logits
        elif layout.grad_accum > 1 or zero < 2:
            fb_grads = grads if layout.grad_accum > 1 else 0.0
            fb = persistent + fb_grads + gather + max(acts + logits, 0.0 if layout.grad_accum > 1 else grads)
            if layout.grad_accum == 1 and grads > acts + logits:
                fb_grads, act_part, logit_part = grads, 0.0, 0.0
            else:
                act_part, logit_part = acts, logits
        else:
            fb_grads = grads
            fb = persistent + grads + gather + acts + logits
            act_part, logit_part = acts, logits
        step = persistent + grads + step_temp
        workspace = mem_tab["workspace_bytes"]
        if fb >= step:
            phase = "forward/backward"
            comp = {"weights": weights + gather, "gradients": fb_grads, "optimizer": states,
                    "activations": act_part, "logits": logit_part, "adapters": adapters}
            alloc = fb + workspace
        else:
            phase = "optimizer step"
            comp = {"weights": weights, "gradients": grads, "optimizer": states + step_temp,
                    "activations": 0.0, "logits": 0.0, "adapters": adapters}
            alloc = step + workspace
        reserved = alloc + (cached if phase == "forward/backward" else 0.0) \
            + reserve_transient * transient + reserve_total * alloc
        reserved = min(reserved, max(alloc, system.capacity_bytes - ctx - nccl))
        per_gpu = reserved + ctx + nccl
        # paged optimizer states sit in unified memory: resident on the GPU as far as room allows
        paged_resident = min(paged_states, max(0.0, system.capacity_bytes - per_gpu))
        per_gpu += paged_resident
        comp["optimizer"] += paged_resident
        comp["kv_cache"] = 0.0
        comp["overhead"] = per_gpu - sum(v for k, v in comp.items() if k != "overhead")
        seen[stage_key] = (per_gpu, alloc, reserved, comp, phase, paged_states - paged_resident)
        stages.append(seen[stage_key])

    busiest = max(stages, key=lambda st: st[0])
    per_gpu, alloc, reserved, comp, phase, paged_spill = busiest
    total = sum(st[0] for st in stages) * layout.tp
    total_alloc = sum(st[1] for st in stages) * layout.tp
    total_res = sum(st[2] for st in stages) * layout.tp

    # host RAM: offloaded states (and ZeRO-3 params), data loading, model loading staging
    host = 0.0
    if offload != "none" and not peft:
        host += s.params_total / layout.tp / layout.pp * (state_b + (dense_w if zero >= 3 else 0.0)) / shard_states \
            * system.gpus_per_node
    if offload != "none" and peft and zero >= 3:
        host += w_total / layout.tp / layout.pp / shard_weights * system.gpus_per_node
    host += paged_spill * system.gpus_per_node
    host += offloaded_acts * system.gpus_per_node
    host += 3.0 * GIB * system.gpus_per_node
    host += 0.5 * w_total
    if not with_notes:
        return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                              capacity_bytes=system.capacity_bytes, components=comp, host_bytes=host,
                              peak_phase=phase, total_bytes=total, total_allocated_bytes=total_alloc,
                              total_reserved_bytes=total_res, notes=[])
    notes = [_("peak in the {phase} phase").format(phase=_(phase)),
             _("optimizer states: {optimizer} ({mode} precision, {bytes:g} bytes/param)").format(
                 optimizer=t.optimizer, mode=_(mode), bytes=state_b)]
    if zero >= 3 and dp > 1:
        notes.append(_("ZeRO-3 / FSDP: every weight{peft} is sharded {dp} ways; two gathered blocks and the embedding/head are live at a time").format(peft=_(' (the frozen base included)') if peft else '', dp=dp))
    if paged:
        notes.append(_("paged optimizer: states live in CUDA unified memory outside PyTorch's allocator and page to host RAM when the GPU runs short (they never cause an out-of-memory error)"))
    if in_bwd:
        notes.append(_("optimizer step fused into backward: one parameter's gradient is live at a time"))
    if t.activation_offloading:
        notes.append(_("activation offloading: saved activations wait in pinned host RAM; about {layers:g} layers' "
                       "worth stay on the GPU").format(layers=mem_tab['activation_offload_resident_layers']))
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                          capacity_bytes=system.capacity_bytes, components=comp, host_bytes=host,
                          peak_phase=phase, total_bytes=total, total_allocated_bytes=total_alloc,
                          total_reserved_bytes=total_res, notes=notes)


# ---------------------------------------------------------------------------------------------
# Inference
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InferenceInputs:
    precision: str
    quantization: str
    kv_dtype_bytes: float
    framework: str
    flash: bool
    prompt_tokens: int
    output_tokens: int
    concurrency: int
    framework_version: str | None = None


def _version_tuple(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def prompt_logits_bytes_per_vocab(framework: str, version: str | None) -> float:
    """Bytes per vocabulary entry per prompt token that generate's prefill materialises.

    transformers before 4.45 runs the LM head on every prompt position during generate and upcasts
    the result (``logits = logits.float()`` in every *ForCausalLM.forward): the bf16 logits and their
    fp32 copy are live together, prompt x vocab x 6 bytes, although only the last position is used
    (transformers issue #30860; PR #31292 added ``num_logits_to_keep``, released in 4.45). Newer
    versions compute the last position only (0 here). Unset version = the current stack."""
    if framework != "transformers" or not version:
        return 0.0
    cfg = table("memory", "generate_prompt_logits")
    if _version_tuple(version) >= _version_tuple(str(cfg["fixed_in"])):
        return 0.0
    return float(cfg["bytes_per_vocab_token"])


ENGINES = {"vllm", "sglang", "trtllm", "lmdeploy", "tgi"}  # paged KV pool, continuous batching


def kv_bytes_per_sequence(s: Shape, tokens: int, kv_dtype_bytes: float, framework: str) -> float:
    """KV cache of one sequence (all layers). Paged engines round up to whole blocks."""
    if framework in ENGINES:
        block = table("inference", "paged_block_tokens")
        tokens = math.ceil(tokens / block) * block
    return s.kv_bytes_per_token_16bit * kv_dtype_bytes / 2.0 * tokens


def kv_shard_fraction(s: Shape, layout: Layout) -> float:
    """Share of one sequence's KV cache a GPU holds, per sequence the replica serves.

    Pipeline stages split the layers. Tensor parallelism splits K/V by heads, but never below one
    KV head per rank: with fewer KV heads than ranks, vLLM/SGLang replicate heads (each rank keeps
    ceil(kv_heads / tp) heads, at least one). The MLA latent (DeepSeek-V2/V3/R1) has no heads to split: every TP
    rank keeps the whole latent of every sequence (vLLM MLA backend, SGLang), unless data-parallel
    attention is on (SGLang --enable-dp-attention), where each of the tp attention ranks serves its
    own 1/tp of the sequences with the whole latent of each."""
    frac = 1.0 / layout.pp
    if s.is_mla:
        return frac / (layout.tp if layout.dp_attention else 1)
    if layout.dp_attention:
        return frac / layout.tp
    kv_heads = max(1, s.kv_heads)
    heads_per_rank = math.ceil(kv_heads / layout.tp)  # 1 when tp >= kv_heads: heads are replicated
    return frac * heads_per_rank / kv_heads


def inference_weight_bytes(s: Shape, w_total: float, layout: Layout) -> float:
    """Weights per GPU: split over TP x PP; with data-parallel attention the attention blocks are
    replicated on every TP rank (only the MLP/experts stay split)."""
    shards = layout.tp * layout.pp
    weights = w_total / shards
    if layout.dp_attention and layout.tp > 1 and s.params_total:
        attn_share = s.layers * s.attn_params_layer / s.params_total
        weights += w_total * attn_share / layout.pp * (1.0 - 1.0 / layout.tp)
    return weights


def prefill_transient_bytes(s: Shape, tokens: float, tp: int, flash: bool, batch: int) -> float:
    """Largest activation live during a prefill forward (no autograd): the MLP's intermediates
    (act(gate), up and their product: 3·f for a gated MLP, 2·f plain) plus a few hidden-size
    tensors; eager attention also materialises the scores of one layer (6·a·s² bytes)."""
    mlp = (3.0 if s.gated else 2.0) * s.moe_active_ffn
    per_tok = 2.0 * (mlp + 4.0 * s.hidden) / tp
    out = per_tok * tokens * batch
    if not flash:
        out += 6.0 * s.heads / tp * tokens * tokens * batch
    out += batch * s.vocab * 4.0  # last-token logits in fp32
    return out


def inference_memory(s: Shape, t: InferenceInputs, layout: Layout, system: System) -> MemoryEstimate:
    """Memory of serving ``concurrency`` sequences of prompt+output tokens."""
    mem_tab = table("memory")
    inf = table("inference")
    shards = layout.tp * layout.pp
    w_total, _dtype = weight_bytes(s, t.precision, t.quantization)
    weights = inference_weight_bytes(s, w_total, layout)
    seq_tokens = t.prompt_tokens + t.output_tokens
    per_seq = kv_bytes_per_sequence(s, seq_tokens, t.kv_dtype_bytes, t.framework) * kv_shard_fraction(s, layout)
    kv = per_seq * t.concurrency
    ctx, nccl = overhead_fixed(system)
    cap = system.capacity_bytes
    notes: list[str] = []
    if t.framework in ENGINES:
        util = inf["vllm_gpu_memory_utilization"] if t.framework != "sglang" else inf["sglang_mem_fraction_static"]
        profile_tokens = max(min(seq_tokens, 8192), 2048)
        act = prefill_transient_bytes(s, profile_tokens, layout.tp, True, 1) + 256 * s.vocab * 4.0 / layout.tp
        graphs = float(inf["engine_graph_bytes"])
        needed = weights + kv + act + graphs + ctx + nccl
        reserved_engine = util * cap
        budget = reserved_engine - (weights + act + graphs + ctx + nccl)
        per_gpu = max(needed, reserved_engine)
        pool = max(kv, per_gpu - (weights + act + graphs + ctx + nccl))
        comp = {"weights": weights, "kv_cache": pool, "activations": act, "overhead": graphs + ctx + nccl,
                "gradients": 0.0, "optimizer": 0.0, "adapters": 0.0, "logits": 0.0}
        alloc = weights + kv + act + graphs
        reserved = per_gpu - ctx - nccl
        notes.append(_("{framework} pre-allocates {util:.0%} of GPU memory; the KV pool takes what weights and activations leave").format(framework=t.framework, util=util))
        if s.is_mla and layout.tp > 1:
            notes.append(_("MLA latent cache: every TP rank keeps the whole latent of its sequences (data-parallel "
                           "attention: each rank serves 1/tp of them)") if layout.dp_attention else
                         _("MLA latent cache: every TP rank keeps the whole latent of its sequences (not split by TP; "
                           "parallel.dp_attention: true splits the sequences instead)"))
        elif layout.tp > s.kv_heads and not layout.dp_attention:
            notes.append(_("{kv_heads} KV heads over TP {tp}: heads are replicated, one per rank").format(kv_heads=s.kv_heads, tp=layout.tp))
        if needed > reserved_engine:
            notes.append(_("needs gpu_memory_utilization {needed:.2f} (above the default {util:.2f})").format(needed=min(0.99, needed / cap + 0.01), util=util))
        return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                              capacity_bytes=cap, components=comp, host_bytes=_inference_host(w_total, system),
                              engine_reserved_bytes=reserved_engine, peak_phase="serving",
                              total_bytes=per_gpu * shards, total_allocated_bytes=alloc * shards,
                              total_reserved_bytes=reserved * shards, kv_budget_bytes=budget,
                              kv_bytes_per_sequence=per_seq, notes=notes)
    # Eager PyTorch (transformers generate): DynamicCache grows by concatenation.
    act = prefill_transient_bytes(s, t.prompt_tokens, layout.tp, t.flash, t.concurrency)
    old_logits = prompt_logits_bytes_per_vocab(t.framework, t.framework_version)
    if old_logits:
        # The LM head runs after the last decoder layer has freed its MLP intermediates: the prompt's
        # logits (bf16 + fp32) live next to the final normed hidden states, not on top of the layer peak.
        head = (old_logits * s.vocab + 2.0 * s.hidden) / layout.tp * t.prompt_tokens * t.concurrency
        act = max(act, head)
        notes.append(_("transformers {version} computes the logits of every prompt position in generate (bf16 + fp32 "
                       "copy, {bytes:g} bytes per vocabulary entry per prompt token); >= 4.45 keeps only the last").format(
            version=t.framework_version, bytes=old_logits))
    cat_copy = kv / max(1, s.layers / layout.pp)  # one layer's cache copied while it grows
    seq_tokens_all = max(1, t.prompt_tokens + t.output_tokens)
    kv_prompt = kv * t.prompt_tokens / seq_tokens_all
    alloc = weights + max(kv_prompt + act, kv + cat_copy) + mem_tab["workspace_bytes"]
    reserve = mem_tab["reserve_fraction_of_transient"]["generate"] * kv + mem_tab["reserve_fraction_of_total"] * alloc
    reserved = min(alloc + reserve, max(alloc, cap - ctx - nccl))  # the allocator frees its cache before OOM
    per_gpu = reserved + ctx + nccl
    comp = {"weights": weights, "kv_cache": kv, "activations": max(act, cat_copy), "gradients": 0.0,
            "optimizer": 0.0, "adapters": 0.0, "logits": 0.0}
    comp["overhead"] = per_gpu - sum(comp.values())
    budget = cap - (weights + act + ctx + nccl + mem_tab["workspace_bytes"])
    notes.append(_("transformers generate: the cache grows by concatenation, so the allocator's reserve approaches twice the KV cache"))
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                          capacity_bytes=cap, components=comp, host_bytes=_inference_host(w_total, system),
                          peak_phase="prefill/decode", total_bytes=per_gpu * shards,
                          total_allocated_bytes=alloc * shards, total_reserved_bytes=reserved * shards,
                          kv_budget_bytes=budget / 2.0, kv_bytes_per_sequence=per_seq, notes=notes)


MAX_SHARD_BYTES = 5e9  # Hugging Face checkpoints are saved in shards of at most 5 GB by default


def _inference_host(weight_total: float, system: System) -> float:
    """Host RAM to load and serve: safetensors shards are memory-mapped and copied to the GPU one at a
    time, so the process holds about one shard, plus ~3 GiB per GPU process (Python, CUDA, tokenizer)."""
    return min(weight_total, MAX_SHARD_BYTES) + 3.0 * GIB * system.gpus_per_node
