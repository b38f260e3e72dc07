"""The constants one training run shares across its pipeline stages: bytes per parameter of weights,
gradients and optimizer states, shard factors, activation and logit sizes (docs/formulas.md, "Memory")."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.memory.common import (
    NO_KBIT_UPCAST_FRAMEWORKS,
    OPT_STATE_BYTES,
    PAGED_OPTIMIZERS,
    PURE_16BIT_FRAMEWORKS,
    TORCHAO_NF4_FRAMEWORKS,
    activation_bytes_per_token_layer,
    block_storage_bytes_per_layer,
    lora_param_count,
    overhead_fixed,
    precision_mode,
)
from gpuplan.estimate.memory.loss import runs_chunked_loss
from gpuplan.estimate.memory.sharding import shard_group
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.shapes import Shape, weight_bytes
from gpuplan.estimate.system import Layout, System


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class TrainingInputs:
    """The workload fields a training memory estimate reads."""

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
    lora_adapter_dtype: str | None = None   # float32 | model | None (the stack's: memory.common.adapter_param_bytes)
    variable_length: bool = True
    optimizer_in_backward: bool = False
    activation_offloading: bool = False
    compiled: bool = False
    fused_loss: bool = False   # the loop runs the chunked fused loss where it applies (workload fused_loss)


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class Run:
    """What every pipeline stage of one training run shares: bytes per parameter, shard factors and sizes."""

    t: TrainingInputs
    s: Shape
    layout: Layout
    peft: bool
    mode: str
    dense_w: float
    quant: str
    w_total: float
    bytes_per_param_w: float
    grad_b: float
    state_b: float
    temp_b: float
    dp: int
    shard_states: int
    shard_grads: int
    shard_weights: int
    lora_params: float
    paged: bool
    in_bwd: bool
    chunked_loss: bool         # the chunked fused loss runs (estimate/memory/loss.py runs_chunked_loss)
    persistent_grads: bool     # gradients in buffers allocated for the whole run (memory.persistent_grad_buffer_*)
    sharded_master: bool       # PyTorch FSDP full sharding in mixed precision: the fp32 shard is the master weight
    layer_store: float
    fp8_cache_b: float
    act_tok_layer: float
    tokens_mb: float
    reserve_transient: float
    reserve_total: float
    ctx: float
    nccl: float
    capacity: float


def stage_layers(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage (the first stages take the remainder)."""
    base, extra = divmod(layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def _fp8_te(t: TrainingInputs) -> bool:
    """Transformer Engine FP8 training of an unquantized model."""
    return t.precision == "fp8" and t.quantization in (None, "none")


def _weights_total(s: Shape, t: TrainingInputs, layout: Layout) -> float:
    """Bytes of the whole model's weights at rest. QLoRA with bitsandbytes upcasts the non-quantized
    parameters (embeddings, LM head, norms) to fp32 (peft.prepare_model_for_kbit_training, PEFT docs),
    except when sharded (FSDP / ZeRO-3 need one dtype per flat parameter: TRL is_sharded_qlora) and in
    stacks that never call it (NO_KBIT_UPCAST_FRAMEWORKS)."""
    quant = t.quantization if t.quantization not in (None, "none") else "none"
    w_total, _dtype = weight_bytes(s, t.precision, quant, double_quant=(t.task == "qlora"))
    if kbit_upcast(t.task, quant, t.framework, sharded=layout.zero >= 3):
        w_total += s.other_params * (4.0 - 2.0)
    return w_total


def kbit_upcast(task: str, quantization: str | None, framework: str, *, sharded: bool) -> bool:
    """Whether a QLoRA run upcasts its non-quantized parameters (embeddings, LM head, norms) to fp32: PEFT's
    prepare_model_for_kbit_training does, for a bitsandbytes base that is not sharded (FSDP / ZeRO-3 need one dtype
    per flat parameter), in the stacks that call it (not NO_KBIT_UPCAST_FRAMEWORKS). The bundle's train.py
    follows the same answer (--kbit_upcast), so the launch holds what the plan sized."""
    return task == "qlora" and quantization in ("bnb-nf4", "bnb-int8") and not sharded \
        and framework not in NO_KBIT_UPCAST_FRAMEWORKS


def _grad_state_bytes(t: TrainingInputs, mode: str) -> tuple[float, float, float]:
    """(gradient, optimizer state, optimizer-step temporary) bytes per trainable parameter."""
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
    return grad_b, state_b, temp_b


def fp8_weight_cache_bytes(t: TrainingInputs) -> float:
    """Bytes per block weight Transformer Engine keeps beside the weight for FP8 GEMMs
    (memory.fp8_weight_cache_bytes: an FP8 copy and an FP8 transpose across micro-batches). A frozen
    LoRA base is held as FP8 weights instead (see :func:`frozen_fp8_primary`)."""
    if not _fp8_te(t):
        return 0.0
    return float(by_key(table("memory", "fp8_weight_cache_bytes"), t.framework))


def frozen_fp8_primary(t: TrainingInputs) -> float | None:
    """Bytes per frozen block weight of a LoRA base trained at precision fp8: the base is held as FP8 weights
    (memory.fp8_frozen_base_bytes: 1, or 2 where Transformer Engine keeps the FP8 transpose), no 16-bit
    copy; None when the task trains every weight (full / pretrain keep the 16-bit weights)."""
    if not (_fp8_te(t) and t.task in ("lora", "qlora")):
        return None
    return float(by_key(table("memory", "fp8_frozen_base_bytes"), t.framework))


def fsdp_sharded_master(mode: str, layout: Layout, peft: bool, persistent_grads: bool) -> bool:
    """PyTorch FSDP (FSDP2 MixedPrecisionPolicy, FSDP1 MixedPrecision) fully sharding a model trained in mixed
    precision keeps each sharded parameter in fp32 and casts it to the compute dtype only to all-gather it: the
    shard is the master weight the optimizer steps, so no 16-bit shard sits beside it (the gathered 16-bit
    blocks are counted by sharding.gathered_param_bytes). Megatron-Core's own FSDP (the stacks with persistent
    gradient buffers) keeps a 16-bit parameter shard beside its fp32 main parameters; ZeRO-1/2 layouts keep the
    gathered 16-bit parameters between steps; LoRA's frozen base is stored in its load dtype."""
    return mode == "mixed" and layout.fsdp != "none" and layout.zero >= 3 and not peft and not persistent_grads


def run_constants(model, s: Shape, t: TrainingInputs, layout: Layout, system: System) -> Run:
    mem_tab = table("memory")
    peft = t.task in ("lora", "qlora")
    mode = precision_mode(t.precision, t.framework, t.optimizer,
                          deepspeed_engine=layout.zero >= 1 and layout.fsdp == "none" and t.framework in PURE_16BIT_FRAMEWORKS
                          and t.framework != "torchtune")
    quant = t.quantization if t.quantization not in (None, "none") else "none"
    w_total = _weights_total(s, t, layout)
    grad_b, state_b, temp_b = _grad_state_bytes(t, mode)
    dp = shard_group(layout, system)
    zero = layout.zero
    lora_params, lora_din = lora_param_count(model, t.lora_targets, t.lora_rank) if peft else (0.0, 0.0)
    fp8_te = _fp8_te(t)
    act_tok_layer = activation_bytes_per_token_layer(
        s, t.precision, t.framework, flash=t.flash, seq_len=t.seq_len, tp=layout.tp, sp=layout.sp,
        lora_din=lora_din if peft else 0.0, lora_dropout=t.lora_dropout > 0, frozen_base=peft,
        linear_input_bytes=by_key(mem_tab["fp8_saved_linear_input_bytes"], t.framework) if fp8_te else 2.0,
        base_keeps_inputs=peft and quant == "bnb-nf4" and t.framework not in TORCHAO_NF4_FRAMEWORKS)
    persistent = t.framework in mem_tab["persistent_grad_buffer_frameworks"]["frameworks"]
    frac_key = "variable_length" if (t.variable_length and t.task != "pretrain") else "packed"
    ctx, nccl = overhead_fixed(system)
    return Run(
        t=t, s=s, layout=layout, peft=peft, mode=mode, dense_w=4.0 if t.precision == "fp32" else 2.0, quant=quant,
        w_total=w_total, bytes_per_param_w=w_total / s.params_total if s.params_total else 2.0,
        grad_b=grad_b, state_b=state_b, temp_b=temp_b, dp=dp,
        shard_states=dp if zero >= 1 else 1, shard_grads=dp if zero >= 2 else 1, shard_weights=dp if zero >= 3 else 1,
        lora_params=lora_params, paged=t.optimizer in PAGED_OPTIMIZERS and not peft,
        in_bwd=t.optimizer_in_backward and not peft and layout.grad_accum == 1,
        chunked_loss=runs_chunked_loss(model, t.fused_loss, layout.tp * layout.pp * max(1, layout.cp)),
        persistent_grads=persistent,
        sharded_master=fsdp_sharded_master(mode, layout, peft, persistent),
        layer_store=block_storage_bytes_per_layer(s, t.precision, quant, double_quant=(t.task == "qlora")),
        fp8_cache_b=fp8_weight_cache_bytes(t), act_tok_layer=act_tok_layer,
        tokens_mb=t.seq_len * layout.micro_batch / max(1, layout.cp),  # context parallelism splits each sequence
        reserve_transient=mem_tab["reserve_fraction_of_transient"][frac_key],
        reserve_total=mem_tab["reserve_fraction_of_total"], ctx=ctx, nccl=nccl, capacity=system.capacity_bytes)


