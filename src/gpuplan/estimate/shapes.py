"""Model quantities the estimators need, derived from a ModelSpec's shape (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.catalog.models import ModelSpec

# Weight storage per quantization scheme: bits per weight, group size and the bits stored per group
# (fp16 scale + packed zero point). GPTQ/AWQ: Frantar et al. 2022, Lin et al. 2023 (g = 128:
# 16-bit scale + 4/8-bit zero per group). bitsandbytes NF4: Dettmers et al. 2023 §3 (block 64,
# absmax fp32 = 0.5 bit/param; double quantisation 0.127 bit/param). LLM.int8(): per-row fp32 scale.
QUANT_STORAGE: dict[str, tuple[float, float, float]] = {
    # scheme: (bits per weight, group size, bits per group)
    "gptq-int4": (4.0, 128.0, 20.0),
    "gptq-int8": (8.0, 128.0, 24.0),
    "awq": (4.0, 128.0, 20.0),
    "int4": (4.0, 128.0, 20.0),
    "int8": (8.0, 1e9, 0.0),
    "fp8": (8.0, 1e9, 0.0),
    "bnb-int8": (8.0, 1e9, 0.0),
    "bnb-nf4": (4.0, 64.0, 32.0),        # without double quantisation (transformers' default)
    "bnb-nf4-dq": (4.0, 64.0, 8.127),    # QLoRA default: double quantisation, 0.127 bit/param
    # OCP Microscaling MXFP4: E2M1 values, one E8M0 scale per block of 32 (OCP MX spec v1.0 §5); gpt-oss publishes
    # its routed experts so, everything else in bf16 (config.json quantization_config, modules_to_not_convert)
    "mxfp4": (4.0, 32.0, 8.0),
}

ACT_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 2.0}  # fp8 training keeps bf16 activations


def quant_bits_per_param(scheme: str) -> float:
    bits, group, per_group = QUANT_STORAGE[scheme]
    return bits + per_group / group


@dataclass(frozen=True)
class Shape:
    """The handful of numbers the formulas use, read once from a ModelSpec."""

    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    params_total: float
    params_active: float
    attn_params_layer: float
    mlp_params_layer_total: float
    mlp_params_layer_active: float
    embed_params: float
    lm_head_params: float
    gated: bool
    moe_active_ffn: float      # FFN width summed over the active experts of one token (MoE), else ffn
    moe_experts: int
    kv_bytes_per_token_16bit: float
    is_mla: bool
    moe_experts_per_token: int = 0   # routed experts per token (MoE), else 0
    moe_expert_ffn: int = 0          # FFN width of one routed expert (MoE), else 0
    moe_layer_count: int = 0         # layers with routed experts (DeepSeek keeps its first layers dense), else 0
    linear_calls: float = 0.0        # Linear modules one token passes, all layers (LM head out; MoE: its routed experts)
    attn_layers: int = 0             # layers with softmax attention over the context (0 = all: a hybrid model has fewer)
    state_bytes_per_seq_16bit: float = 0.0   # a hybrid model's linear-attention state per sequence, 16-bit
    state_heads: int = 0             # the heads that state splits over under TP (value heads)

    @property
    def context_layers(self) -> int:
        """Layers whose attention reads the whole context: every layer unless the model is hybrid."""
        return self.attn_layers or self.layers

    @property
    def linear_params_total(self) -> float:
        """Weights of the transformer blocks' matrices (what quantization compresses)."""
        return self.layers * (self.attn_params_layer + self.mlp_params_layer_total)

    @property
    def matmul_params_active(self) -> float:
        """Parameters multiplied per token: active block matrices + the LM head (PaLM's N for FLOPs)."""
        head = self.lm_head_params if self.lm_head_params else self.embed_params
        return self.layers * (self.attn_params_layer + self.mlp_params_layer_active) + head

    @property
    def routed_expert_params(self) -> float:
        """Weights of every routed expert, all layers (MoE: what expert parallelism splits), else 0. The per-layer
        averages hold E - k unused experts beside the k a token uses (shared experts in both)."""
        e, k = self.moe_experts, self.moe_experts_per_token
        if not e or not k or e <= k:
            return 0.0
        return self.layers * (self.mlp_params_layer_total - self.mlp_params_layer_active) * e / (e - k)

    @property
    def other_params(self) -> float:
        """Embeddings, LM head, norms: kept in 16-bit when the blocks are quantized."""
        return max(0.0, self.params_total - self.linear_params_total)


# A task head's outputs (transformers' num_labels default: 2); a few more (token classification, QA spans) change
# nothing measurable beside a vocabulary of tens of thousands.
CLASSIFIER_OUTPUTS = 2


def with_classifier_head(s: Shape) -> Shape:
    """The shape trained with a task head (workload head: classifier) instead of its vocabulary projection: the
    head's outputs are CLASSIFIER_OUTPUTS wide, so neither the [tokens x vocab] logits nor the projection's matmuls
    remain. The embedding table stays (its parameters, gradients and optimizer states)."""
    return replace(s, vocab=CLASSIFIER_OUTPUTS, lm_head_params=float(s.hidden * CLASSIFIER_OUTPUTS))


def shape_of(m: "ModelSpec") -> Shape:
    """Read a ModelSpec into a Shape (per-layer figures averaged over MoE and dense layers)."""
    layers = max(1, int(m.num_layers) + int(getattr(m, "num_decoder_layers", 0) or 0))
    attn = float(m.attention_params_per_layer())
    mlp_total = float(m.mlp_params_per_layer(active=False))
    mlp_active = float(m.mlp_params_per_layer(active=True))
    moe = m.moe
    if moe:
        active_ffn = moe.experts_per_token * moe.moe_intermediate_size + \
            moe.shared_experts * (moe.shared_expert_intermediate_size or moe.moe_intermediate_size)
        experts = moe.num_experts
        routed = int(moe.experts_per_token)
    else:
        active_ffn = m.intermediate_size
        experts = 0
        routed = 0
    kv16 = float(m.kv_cache_bytes_per_token(2.0))
    return Shape(
        layers=layers, hidden=int(m.hidden_size), ffn=int(m.intermediate_size), heads=int(m.num_attention_heads),
        kv_heads=int(m.num_key_value_heads or m.num_attention_heads), head_dim=int(m.head_dim),
        vocab=int(m.vocab_size), params_total=float(m.params_total), params_active=float(m.params_active or m.params_total),
        attn_params_layer=attn, mlp_params_layer_total=mlp_total, mlp_params_layer_active=mlp_active,
        embed_params=float(m.embedding_params()), lm_head_params=float(m.lm_head_params()),
        gated=(m.mlp == "gated"), moe_active_ffn=float(active_ffn), moe_experts=experts,
        kv_bytes_per_token_16bit=kv16, is_mla=m.mla is not None, moe_experts_per_token=routed,
        moe_expert_ffn=int(moe.moe_intermediate_size) if moe else 0,
        moe_layer_count=_moe_layers(int(m.num_layers), moe) if moe else 0,
        linear_calls=_linear_calls(m),
        attn_layers=int(m.full_attention_layers) if m.linear_attention else 0,
        state_bytes_per_seq_16bit=float(m.recurrent_state_bytes(2.0)),
        state_heads=int(m.linear_attention.value_heads) if m.linear_attention else 0,
    )


def _linear_calls(m: "ModelSpec") -> float:
    """Linear modules one token passes through (catalog/model_linears.py: fused q/k/v and gate/up count once): every
    block's attention and dense MLP linears, and of the routed experts only the ``experts_per_token`` it is sent to."""
    from gpuplan.catalog.model_linears import linear_layers

    layers = linear_layers(m)
    calls = sum(lay.count for lay in layers if not lay.name.startswith("experts."))
    if m.moe is not None:
        per_expert = sum(1 for lay in layers if lay.name.startswith("experts."))
        calls += m.moe_layer_count() * m.moe.experts_per_token * per_expert
    return float(calls)


def _moe_layers(layers: int, moe) -> int:
    """Layers with routed experts: after the first ``first_k_dense`` dense ones, every ``moe_layer_freq``-th."""
    freq = max(1, int(getattr(moe, "moe_layer_freq", 1) or 1))
    first = max(0, int(getattr(moe, "first_k_dense", 0) or 0))
    return max(0, len(range(first, layers, freq)))


@lru_cache(maxsize=4096)
def weight_bytes(s: Shape, precision: str, quantization: str, *, double_quant: bool = False) -> tuple[float, str]:
    """Bytes of all weights at rest, and how they were counted (memoised: the recommender asks for the
    same few thousand times per search)."""
    dense = 4.0 if precision == "fp32" else 2.0
    if quantization in (None, "none"):
        return s.params_total * dense, f"{s.params_total / 1e9:.2f}B params x {dense:g} bytes"
    scheme = "bnb-nf4-dq" if (quantization == "bnb-nf4" and double_quant) else quantization
    bits = quant_bits_per_param(scheme)
    if scheme == "mxfp4":   # only the routed experts are MXFP4 (gpt-oss): attention, router, embeddings stay 16-bit
        experts = s.routed_expert_params
        rest = s.params_total - experts
        return experts * bits / 8 + rest * dense, (f"{experts / 1e9:.2f}B routed-expert weights x {bits:.2f} bits "
                                                   f"(mxfp4) + {rest / 1e9:.2f}B other params x {dense:g} bytes")
    other_bytes = 2.0 if dense == 2.0 else 4.0
    total = s.linear_params_total * bits / 8 + s.other_params * other_bytes
    return total, (f"{s.linear_params_total / 1e9:.2f}B block weights x {bits:.3f} bits ({scheme}, group scales incl.) "
                   f"+ {s.other_params / 1e9:.2f}B embedding/norm params x {other_bytes:g} bytes")
