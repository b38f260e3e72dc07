"""The memory result record and the building blocks training and inference memory share.

- bytes per trainable parameter (weights, gradients, optimizer states) by precision mode, after ZeRO
  (Rajbhandari et al. 2020 §3);
- activations per token per layer, Korthikanti et al. 2022 Table 2 written term by term;
- LoRA adapter sizes (Hu et al. 2021), logits per token, the fixed CUDA-context and NCCL costs.
Formulas and sources: docs/formulas.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.shapes import ACT_BYTES, Shape, weight_bytes
from gpuplan.estimate.system import Layout, System

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
    # torch.optim.SGD without momentum keeps no state: only the fp32 master copy of mixed precision
    ("sgd-plain", "mixed"): 4.0, ("sgd-plain", "pure"): 0.0, ("sgd-plain", "fp32"): 0.0,
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
# builders keep every non-NF4 parameter in bf16) and ms-swift (no version calls it: swift/llm/tuner.py only casts
# trainable fp16 parameters to fp32; checked from 1.7 at d1e9962 to 4.5).
NO_KBIT_UPCAST_FRAMEWORKS = {"llama-factory", "torchtune", "swift"}
# Stacks whose LoRA adapters stay in the model's 16-bit dtype: torchtune builds the whole model, adapters
# included, under training.set_default_dtype(bf16) and never upcasts them (peft upcasts adapters to fp32:
# autocast_adapter_dtype=True).
BF16_ADAPTER_FRAMEWORKS = {"torchtune"}


def adapter_param_bytes(framework: str, precision: str, adapter_dtype: str | None = None) -> float:
    """Bytes per LoRA adapter element (its weights, and the activations its element-wise work moves): the workload's
    lora.adapter_dtype, else the stack's. PEFT upcasts adapters to fp32 (autocast_adapter_dtype, the default since
    PEFT 0.12, July 2024; before it they took the base layer's dtype); torchtune keeps the model's dtype."""
    if precision == "fp32" or adapter_dtype == "float32":
        return 4.0
    if adapter_dtype == "model":
        return 2.0
    return 2.0 if framework in BF16_ADAPTER_FRAMEWORKS else 4.0


# Stacks whose NF4 base is not bitsandbytes: torchtune quantizes with torchao (NF4Tensor; its linear_nf4 autograd
# function keeps only the weight), so the frozen base keeps no layer inputs (kept_base_input_elements).
TORCHAO_NF4_FRAMEWORKS = {"torchtune"}


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class MemoryEstimate:
    """Per-GPU memory of the busiest GPU, with its breakdown (bytes). Components add up to per_gpu_bytes.

    ``need_bytes`` is what the job would hold with nothing capped: the caching allocator's full reserve
    (training, eager generate) or everything a serving engine needs. Where that exceeds the card, the
    allocator frees its cache and retries before it fails, so the run can still fit (``per_gpu_bytes``
    stays at the card); ``need_bytes`` says how much memory the same job would use on a larger card."""

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
    kv_batch_bytes: float | None = None   # a serving engine: the KV cache of the workload's batch (its pool holds it)
    notes: list[str] = field(default_factory=list)
    need_bytes: float | None = None
    loss: str | None = None   # training: "chunked" (the bundle's chunked fused loss) or "model" (the whole logits)

    @property
    def fits(self) -> bool:
        return self.per_gpu_bytes <= self.capacity_bytes

    @property
    def shortfall_bytes(self) -> float:
        return max(0.0, self.per_gpu_bytes - self.capacity_bytes)

    @property
    def required_bytes(self) -> float:
        """The uncapped need (``need_bytes``), never below ``per_gpu_bytes``."""
        return max(self.per_gpu_bytes, self.need_bytes or 0.0)

    def _int_components(self) -> dict[str, int]:
        """Whole-byte components that add up exactly to int(per_gpu_bytes) (overhead takes the rounding)."""
        comps = {k: int(round(self.components.get(k, 0.0))) for k in COMPONENTS}
        comps["overhead"] += int(self.per_gpu_bytes) - sum(comps.values())
        return comps

    def to_dict(self) -> dict:
        return {
            "per_gpu_bytes": int(self.per_gpu_bytes),
            "need_bytes": int(self.required_bytes),
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
            **({"loss": self.loss} if self.loss else {}),
        }


def precision_mode(precision: str, framework: str, optimizer: str, deepspeed_engine: bool = False) -> str:
    """'fp32', 'pure' (16-bit weights and states) or 'mixed' (fp32 master + fp32 moments). A Trainer stack
    that hands its model to the DeepSpeed engine (ZeRO, parallel.zero >= 1) runs DeepSpeed's mixed-precision
    optimizer, which keeps fp32 master weights and fp32 Adam moments whatever dtype the model was loaded in
    (DeepSpeed BF16_Optimizer / ZeRO stage 1-3 optimizers: fp32 partitions of every trainable parameter)."""
    if precision == "fp32":
        return "fp32"
    if optimizer == "adamw-bf16":
        return "pure"
    if deepspeed_engine:
        return "mixed"
    return "pure" if framework in PURE_16BIT_FRAMEWORKS else "mixed"


def activation_bytes_per_token_layer(s: Shape, precision: str, framework: str, *, flash: bool, seq_len: int,
                                     tp: int = 1, sp: bool = False, lora_din: float = 0.0,
                                     lora_dropout: bool = True, frozen_base: bool = False,
                                     linear_input_bytes: float = 2.0, base_keeps_inputs: bool = False) -> float:
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
    A bitsandbytes 4-bit base (``base_keeps_inputs``) runs every block matrix through MatMul4Bit, which keeps
    its input whenever the input needs a gradient (bitsandbytes autograd/_functions.py: ``if
    any(ctx.needs_input_grad[:2]): ctx.tensors = (A, B)``), frozen or not: the QKV, out-proj, MLP and
    down-proj inputs, 3·h + f elements at 16 bits (:func:`kept_base_input_elements`).
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
    if frozen_base and base_keeps_inputs:
        per += 2.0 * kept_base_input_elements(s, tp, sp)
    return per


def per_op_saved_bytes_per_token_layer(s: Shape, precision: str, tp: int = 1, sp: bool = False) -> float:
    """Bytes per token per layer that torchtitan's per-op selective checkpointing keeps (activation_checkpoint
    mode "selective", selective_ac_option "op"; torchtitan models/llama3/infra/parallelize.py ``_save_list`` and
    ``_custom_policy``): each block is checkpointed with its input saved, and inside it only the outputs of the
    attention kernel (SDPA) and of every other matrix multiply (aten.mm), counted in the block's order q, k, v, o,
    gate, up, down (plain MLP: fc1, fc2), are kept: q, v, gate (fc1) and down (the odd ones). Norms, rotary, the MLP's
    nonlinearity and product, and k, o and up are recomputed in backward. 16-bit: 2·(2·h + 2·q_dim + kv_dim + f)
    (Llama 3 8B: 63.5 kB, against ~34·h = 139 kB kept without recomputation).

    A MoE block (models/deepseek_v3 and qwen3 infra/parallelize.py ``_op_sac_save_list``) runs its routed experts
    as grouped matrix multiplies (torch._grouped_mm), which are not on the save list: their outputs are recomputed.
    The router is the fifth mm (kept: one logit per expert), a shared expert's gate, up and down the next three (up
    kept); the layer's output is the experts' weighted sum, not an mm output. Dense layers of a MoE model (DeepSeek's
    first ones) keep as above; the figure is the average over the layers."""
    b = ACT_BYTES.get(precision, 2.0)
    q_dim = s.heads * s.head_dim
    kv_dim = s.kv_heads * s.head_dim
    h = s.hidden / (tp if sp else 1)                              # replicated: the block input, the down output
    attention = (2.0 * q_dim + kv_dim) / tp                       # q, the attention output, v
    dense = 2.0 * h + attention + s.ffn / tp                      # + gate (fc1)
    if not s.moe_experts:
        return b * (2.0 * h + attention + s.moe_active_ffn / tp)
    shared = max(0.0, s.moe_active_ffn - s.moe_experts_per_token * s.moe_expert_ffn)
    moe = h + attention + (s.moe_experts + shared) / tp
    moe_layers = float(s.moe_layer_count or s.layers)
    return b * (moe * moe_layers + dense * (s.layers - moe_layers)) / max(1.0, float(s.layers))


def kept_base_input_elements(s: Shape, tp: int = 1, sp: bool = False) -> float:
    """Elements per token per layer a bitsandbytes-quantized frozen base keeps for backward: the inputs of its
    block matrices (the attention norm output QKV reads, the attention output the out-proj reads, the MLP norm
    output, the MLP product the down-proj reads). Matrices that read one tensor share it (q, k and v; gate and
    up). Checked on litgpt's LoRA/QLoRA pairs (Llama 2 7B and 13B at 1,304 tokens on an A100): the QLoRA peaks
    sit 1.7 and 2.8 GiB above LoRA's minus the weights saved, 3·h + f at 16 bits per token and layer."""
    return 3.0 * s.hidden / (tp if sp else 1) + s.moe_active_ffn / tp


def eager_score_bytes(framework: str) -> float:
    """Bytes per attention score (per head, per query-key pair) that unfused attention keeps for
    backward: Hugging Face eager 6 (16-bit product + fp32 softmax); Megatron's fused scale-mask-softmax
    5 (Korthikanti et al. 2022 Table 2: softmax output 2 + dropout mask 1 + dropout output 2)."""
    return by_key(table("memory", "eager_attention_score_bytes"), framework)


def lora_param_count(model, targets, rank: int) -> tuple[float, float]:
    """(adapter parameters in the whole model, sum of adapted input widths one token passes per layer).
    A token passes only the k routed experts it is sent to, so an adapted expert linear counts k/E of its
    E copies toward the inputs a token's dropout keeps (all E toward the parameters)."""
    try:
        shapes = model.linear_shapes_per_layer(targets)
    except Exception:  # noqa: BLE001 - an unknown target list falls back to all linear layers
        shapes = model.linear_shapes_per_layer("all-linear")
    moe = getattr(model, "moe", None)
    routed = (float(moe.experts_per_token) / float(moe.num_experts)) if moe and moe.num_experts else 1.0
    per_layer = 0.0
    din = 0.0
    for name, d_in, d_out, count in shapes:
        per_layer += rank * (d_in + d_out) * count
        din += d_in * count * (routed if moe and name.startswith("experts.") else 1.0)
    layers = model.num_layers + (getattr(model, "num_decoder_layers", 0) or 0)
    return per_layer * layers, din


def logits_bytes_per_token(s: Shape, framework: str, tp: int = 1, compiled: bool = False) -> float:
    """Bytes of the logits pipeline at its peak, per token (vocab-parallel under TP). A compiled loss
    (torch.compile) uses ``logits_bytes_per_vocab_token_compiled`` where the framework has an entry."""
    per_vocab = by_key(table("memory", "logits_bytes_per_vocab_token"), framework)
    if compiled:
        per_vocab = table("memory", "logits_bytes_per_vocab_token_compiled").get(framework, per_vocab)
    return per_vocab * s.vocab / tp


def overhead_fixed(system: System, replica: Layout | None = None) -> tuple[float, float]:
    """(CUDA context outside the allocator, NCCL buffers) per GPU. ``replica``: the layout of an inference copy,
    whose data-parallel copies share no communicator: NCCL buffers only when one copy spans GPUs (tp, pp, cp, ep)."""
    mem = table("memory")
    nccl = mem["nccl_buffer_bytes"] if system.total_gpus > 1 else 0.0
    if replica is not None and replica.tp * replica.pp * max(1, replica.cp) * max(1, replica.ep) <= 1:
        nccl = 0.0
    return float(mem["cuda_context_bytes"]), float(nccl)


def block_storage_bytes_per_layer(s: Shape, precision: str, quantization: str, *, double_quant: bool = False) -> float:
    """Bytes of one transformer block's weights at rest (quantized storage included), whole model width."""
    w_total, _dtype = weight_bytes(s, precision, quantization, double_quant=double_quant)
    other_b = 4.0 if precision == "fp32" else 2.0
    return max(0.0, w_total - s.other_params * other_b) / max(1, s.layers)


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
