"""Sharded training state: the shard group, what a ZeRO-3 / FSDP rank gathers beyond its shard, and
the bytes those collectives move (used by training/step.py for the communication time)."""

from __future__ import annotations

from gpuplan.estimate.memory.common import largest_block_matrix
from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import Shape, weight_bytes
from gpuplan.estimate.system import Layout, System


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
    gradients to reduce.

    Under expert parallelism a block gathers only the rank's 1/ep of its routed experts, and those only from
    the expert-data-parallel group (DP / EP ranks: FSDP2 + EP's expert mesh, Megatron-Core's expert DP): with
    EP = DP a rank holds its experts whole and gathers none of them (:func:`gathered_block_fraction`)."""
    if layout.zero < 3:
        return 0.0
    tp, dp = layout.tp, max(1, group if group is not None else layout.dp)
    local = gathered_block_fraction(s, layout, dp)
    layer_bytes *= local
    blocks = 2.0 * layer_bytes / tp
    layer_params = (s.attn_params_layer + s.mlp_params_layer_total) * local
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


def gathered_block_fraction(s: Shape, layout: Layout, group: int) -> float:
    """Share of a transformer block's parameters a sharded rank gathers: all of it without expert parallelism;
    with EP the attention and shared layers, plus the rank's 1/ep of the routed experts when the expert-data-
    parallel group (group / ep ranks) shards them (none when each rank holds its experts whole)."""
    return _collective_share(s.attn_params_layer + s.mlp_params_layer_total, s.routed_expert_params / max(1, s.layers),
                             layout.ep, group)


def _collective_share(whole: float, experts: float, ep: int, group: int) -> float:
    """Share of ``whole`` parameters (``experts`` of them routed experts) whose shards a rank gathers or whose
    gradients it reduces over a data-parallel ``group`` with expert parallelism ``ep`` inside it: the rest whole,
    the rank's 1/ep of the experts over the expert-data-parallel group (group / ep ranks), nothing of them when that
    group is one rank (EP = DP: each rank holds its experts alone)."""
    if ep <= 1 or whole <= 0.0:
        return 1.0
    experts = min(whole, experts)
    return (whole - experts + (experts / ep if group // ep > 1 else 0.0)) / whole


def sharded_traffic_bytes(s: Shape, layout: Layout, precision: str, quantization: str, task: str,
                          trainable_params: float) -> tuple[float, float]:
    """Bytes one rank's shard group moves for sharded parameters (ZeRO-3 / FSDP full_shard/hybrid_shard):
    (all-gathered per pass, reduce-scattered per step). Every pass (forward, backward) all-gathers the
    whole model slice at its storage dtype (4-bit for QLoRA: FSDP-QLoRA shards the packed weights,
    bnb_4bit_quant_storage), frozen weights included; only trainable gradients are reduce-scattered
    (bf16). Zero when nothing is sharded. Used by training/step.py for the communication time."""
    if layout.zero < 3 or layout.dp <= 1:
        return 0.0, 0.0
    quant = quantization if quantization not in (None, "none") else "none"
    w_total, _dtype = weight_bytes(s, "bf16" if precision != "fp32" else "fp32", quant,
                                   double_quant=(task == "qlora"))
    # expert parallelism: a rank gathers only its 1/ep of the experts, and reduces only their gradients
    gather = w_total / (layout.tp * layout.pp) * expert_collective_fraction(s, layout)
    reduce = trainable_params / (layout.tp * layout.pp) * 2.0 * trainable_local_fraction(s, layout, task)
    return gather, reduce


def trainable_local_fraction(s: Shape, layout: Layout, task: str) -> float:
    """``expert_collective_fraction`` of the trainable parameters, whose gradients a rank reduces: the whole model's
    when it all trains; a LoRA / QLoRA run trains adapters, whose split between experts and the rest the model's
    shares do not give (1)."""
    return 1.0 if task in ("lora", "qlora") else expert_collective_fraction(s, layout)


def expert_collective_fraction(s: Shape, layout: Layout) -> float:
    """Share of a rank's TP x PP slice that its data-parallel collectives move under expert parallelism (ZeRO-3 /
    FSDP gathers, gradient reduction): the attention and shared layers, and the rank's 1/ep of the routed experts
    unless each rank holds its experts alone (EP = DP). 1 without EP."""
    if not s.params_total:
        return 1.0
    return _collective_share(s.params_total, s.routed_expert_params, layout.ep, max(1, layout.dp))

