"""Per-GPU memory as a breakdown: training (phases: forward/backward and optimizer step) and inference.

Formulas and their sources are in docs/formulas.md. In short:
- weights/gradients/optimizer states per trainable parameter follow ZeRO (Rajbhandari et al. 2020,
  §3): mixed-precision Adam keeps 2 + 2 + 12 bytes; stacks that load the model in bf16 and let the
  optimizer inherit the dtype (Hugging Face Trainer: ms-swift, LLaMA-Factory) keep 2 + 2 + 4;
  ZeRO-1/2/3 (FSDP shard_grad_op/full_shard) shard states, then gradients, then weights over DP.
- activations per layer per token follow Korthikanti et al. 2022 (Table 2) with the terms of a
  gated-MLP, GQA layer written out (common.activation_bytes_per_token_layer); eager attention adds the
  s x s scores; full recomputation keeps only each layer's input.
- the peak is the larger of two phases — forward/backward (activations, logits) and the optimizer
  step (gradients + the optimizer's temporaries) — not the sum of everything.
- what the caching allocator reserves on top, the CUDA context and NCCL buffers are calibrated
  constants in data/efficiency.yaml, reported as assumptions.

Modules: ``common`` (the result record and shared building blocks), ``sharding`` (ZeRO-3 / FSDP),
``train`` (training memory, one function per component), ``serve`` (inference memory).
"""

from gpuplan.estimate.memory.common import (
    BF16_ADAPTER_FRAMEWORKS,
    COMPONENTS,
    NO_KBIT_UPCAST_FRAMEWORKS,
    OPT_STATE_BYTES,
    PAGED_OPTIMIZERS,
    PURE_16BIT_FRAMEWORKS,
    MemoryEstimate,
    activation_bytes_per_token_layer,
    block_storage_bytes_per_layer,
    eager_score_bytes,
    largest_block_matrix,
    largest_param_tensor,
    logits_bytes_per_token,
    lora_param_count,
    overhead_fixed,
    precision_mode,
)
from gpuplan.estimate.memory.serve import (
    ENGINES,
    MAX_SHARD_BYTES,
    InferenceInputs,
    inference_memory,
    inference_weight_bytes,
    kv_bytes_per_sequence,
    kv_pool_rule,
    kv_shard_fraction,
    prefill_transient_bytes,
    prompt_logits_bytes_per_vocab,
    state_bytes_per_sequence,
)
from gpuplan.estimate.memory.run import kbit_upcast
from gpuplan.estimate.memory.sharding import (expert_collective_fraction, gathered_param_bytes, shard_group,
                                              sharded_traffic_bytes, trainable_local_fraction)
from gpuplan.estimate.memory.train import (
    TrainingInputs,
    stage_inflight,
    stage_layers,
    training_memory,
    training_memory_key,
)

__all__ = [
    "BF16_ADAPTER_FRAMEWORKS", "COMPONENTS", "ENGINES", "MAX_SHARD_BYTES", "NO_KBIT_UPCAST_FRAMEWORKS",
    "OPT_STATE_BYTES", "PAGED_OPTIMIZERS", "PURE_16BIT_FRAMEWORKS", "InferenceInputs", "MemoryEstimate",
    "TrainingInputs", "activation_bytes_per_token_layer", "block_storage_bytes_per_layer", "eager_score_bytes",
    "expert_collective_fraction", "gathered_param_bytes", "inference_memory", "inference_weight_bytes", "kbit_upcast", "kv_bytes_per_sequence",
    "kv_pool_rule", "kv_shard_fraction", "largest_block_matrix", "largest_param_tensor", "logits_bytes_per_token", "state_bytes_per_sequence",
    "lora_param_count", "overhead_fixed", "precision_mode", "prefill_transient_bytes",
    "prompt_logits_bytes_per_vocab", "shard_group", "sharded_traffic_bytes", "stage_inflight", "stage_layers",
    "trainable_local_fraction", "training_memory", "training_memory_key",
]
