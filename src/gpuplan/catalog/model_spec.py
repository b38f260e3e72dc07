"""The model record: a frozen ``ModelSpec`` (one model's shape) and parameter counts from the shape.

Counts follow the module layouts of the Hugging Face ``transformers`` implementations of each
architecture (``modeling_llama.py``, ``modeling_qwen2_moe.py``, ``modeling_deepseek_v3.py``,
``modeling_t5.py``, ``modeling_bert.py``, ...); the formulas are written out in docs/models.md.
Config parsing is in :mod:`gpuplan.catalog.configs.hf_config`, the bundled library in
:mod:`gpuplan.catalog.library`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuplan.catalog.model_linears import linear_layers, select_layers
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

KINDS = ("decoder", "encoder", "encoder-decoder", "vision", "diffusion", "speech")
LLM_KINDS = ("decoder", "encoder", "encoder-decoder")
ATTENTIONS = ("mha", "gqa", "mqa", "mla")
MLPS = ("gated", "plain")
NORMS = ("rmsnorm", "layernorm")
POSITIONS = ("rope", "learned", "alibi", "relative")

# Sanity limits for user-supplied shapes (generous: the largest published models are far inside).
LIMITS: dict[str, tuple[int, int]] = {
    "num_layers": (1, 1024),
    "num_decoder_layers": (0, 1024),
    "hidden_size": (1, 131_072),
    "intermediate_size": (1, 1_048_576),
    "num_attention_heads": (1, 4096),
    "num_key_value_heads": (1, 4096),
    "head_dim": (1, 4096),
    "vocab_size": (1, 16_777_216),
    "max_position_embeddings": (1, 268_435_456),
    "num_experts": (1, 4096),
    "experts_per_token": (1, 4096),
    "moe_intermediate_size": (1, 1_048_576),
    "shared_experts": (0, 64),
    "shared_expert_intermediate_size": (0, 1_048_576),
    "first_k_dense": (0, 1024),
    "moe_layer_freq": (1, 1024),
    "kv_lora_rank": (1, 65_536),
    "q_lora_rank": (0, 65_536),
    "qk_rope_head_dim": (0, 4096),
    "qk_nope_head_dim": (0, 4096),
    "v_head_dim": (1, 4096),
    "type_vocab_size": (0, 1024),
    "position_offset": (0, 1024),
    "norms_per_layer": (0, 4),
    "relative_attention_num_buckets": (0, 4096),
}
MAX_PARAMS = 1e14  # 100 T parameters: anything larger is a typo
MAX_PARAMS_B = 3000.0  # {params_b: N} accepts 0 < N <= 3000

@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class MoESpec:
    """Mixture-of-experts layout. Expert MLPs have the same form (gated/plain) as the dense MLP."""

    num_experts: int
    experts_per_token: int
    moe_intermediate_size: int  # width of one routed expert
    shared_experts: int = 0  # always-active experts per MoE layer
    shared_expert_intermediate_size: int = 0  # width of ONE shared expert
    first_k_dense: int = 0  # leading layers with a dense MLP (DeepSeek first_k_dense_replace)
    moe_layer_freq: int = 1  # MoE every n-th layer after the dense ones
    router_bias: bool = False  # gpt-oss router bias; DeepSeek-V3 e_score_correction_bias
    expert_bias: bool = False  # biases inside each expert MLP (gpt-oss)
    shared_expert_gate: bool = False  # Qwen2-MoE sigmoid gate (hidden -> 1) on the shared expert


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class LinearAttentionSpec:
    """Hybrid models' linear-attention layers (Qwen3-Next's Gated DeltaNet, transformers Qwen3NextGatedDeltaNet):
    ``layers`` of the model's blocks replace softmax attention with a recurrent state of value_heads x key_head_dim x
    value_head_dim per sequence, fed by a causal 1-D convolution of ``conv_kernel`` taps over q, k and v. They keep no
    KV cache; the other blocks are full attention."""

    layers: int
    key_heads: int
    value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4

    @property
    def conv_channels(self) -> int:
        """Channels of the short convolution: q and k (key heads) and v (value heads)."""
        return 2 * self.key_heads * self.key_head_dim + self.value_heads * self.value_head_dim

    def block_params(self, hidden: int) -> int:
        """One linear-attention block: in_proj_qkvz (q, k, v and the output gate z), in_proj_ba (the beta and alpha
        gates, one per value head), the depthwise convolution, dt_bias and A_log per value head, the gated RMSNorm
        over a value head, out_proj."""
        qkvz = 2 * self.key_heads * self.key_head_dim + 2 * self.value_heads * self.value_head_dim
        v = self.value_heads * self.value_head_dim
        return (hidden * qkvz + hidden * 2 * self.value_heads + self.conv_channels * self.conv_kernel
                + 2 * self.value_heads + self.value_head_dim + v * hidden)

    def state_elements(self) -> int:
        """Elements one sequence keeps per linear-attention layer: the recurrent state and the convolution's last
        conv_kernel - 1 inputs (vLLM's mamba-style state cache for Gated DeltaNet)."""
        return self.value_heads * self.key_head_dim * self.value_head_dim + \
            (self.conv_kernel - 1) * self.conv_channels


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class MLASpec:
    """DeepSeek multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434, §2.1)."""

    kv_lora_rank: int
    q_lora_rank: int  # 0 = no query compression (DeepSeek-V2-Lite)
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class NonLLMProfile:
    """Compute/memory profile of a non-transformer-LM model at a reference input size."""

    reference_input: dict
    forward_flops_per_sample: float
    activation_bytes_per_sample: float  # training, bf16, at the reference input
    scaling: dict  # {"input": "image_size", "exponent": 2, ...}: how FLOPs/activations grow
    sources: tuple[str, ...] = ()
    components: dict = field(default_factory=dict)  # e.g. {"unet": 2.567e9, ...} parameters
    # PyTorch ops (kernels) one eager forward launches, whatever the batch: the launch-bound floor of small
    # batches (counted from the architecture; 0 = unknown, estimated from the parameter count)
    kernels_per_forward: float = 0.0
    # transformer encoders (ViT configs, dual encoders): the training activations full recomputation keeps at the
    # reference input - every layer's input (2·tokens·d bytes) and one layer's activations (34·tokens·d); 0 = not
    # known (the non-LLM share, efficiency.yaml nonllm.checkpointed_activation_share, applies)
    checkpointed_activation_bytes_per_sample: float = 0.0
    # diffusion pipelines: {cfg: bool, default_steps, vae_upcast: bool, vae_scale, vae_decode_flops_per_pixel,
    # vae_decode_live_channels, inference_activation_bytes_per_sample, self_attention, ...} (docs/models.md)
    pipeline: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class ModelSpec:
    """One model's shape. Integers are per layer unless named otherwise.

    For ``kind == "encoder-decoder"`` ``num_layers`` counts encoder blocks and
    ``num_decoder_layers`` decoder blocks. Non-LLM entries (vision, diffusion, speech) carry a
    ``profile`` and zeros in the transformer fields.
    """

    id: str
    family: str = ""
    kind: str = "decoder"
    arch: str = "llama"
    num_layers: int = 0
    hidden_size: int = 0
    intermediate_size: int = 0
    num_attention_heads: int = 0
    num_key_value_heads: int = 0
    head_dim: int = 0
    vocab_size: int = 0
    tie_word_embeddings: bool = False
    attention: str = "mha"
    mlp: str = "gated"
    norm: str = "rmsnorm"
    position: str = "rope"
    qkv_bias: bool = False
    max_position_embeddings: int | None = None
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    linear_attention: LinearAttentionSpec | None = None   # hybrid models: the blocks without softmax attention
    attn_output_gate: bool = False   # q_proj also emits a sigmoid gate on the attention output (Qwen3-Next)
    params_total: float = 0.0
    params_active: float = 0.0
    source: str = ""
    unconfirmed: tuple[str, ...] = ()
    notes: str = ""
    aliases: tuple[str, ...] = ()
    modelscope_id: str | None = None
    # Finer structure, needed to count parameters exactly for every architecture.
    o_bias: bool = False  # bias on the attention output projection
    mlp_bias: bool = False  # biases on the MLP matrices
    norm_bias: bool | None = None  # None: LayerNorm has a bias, RMSNorm not
    qk_norm: bool = False  # per-head RMSNorm on q and k (Qwen3)
    attention_sinks: bool = False  # one learned logit per head (gpt-oss)
    norms_per_layer: int = 2  # Falcon-7B parallel attention: 1
    position_offset: int = 0  # OPT learned positions have max_position_embeddings + 2 rows
    type_vocab_size: int = 0  # BERT token-type embeddings
    pooler: bool = False  # BERT pooler (hidden x hidden + bias)
    embedding_norm: bool = False  # LayerNorm after the embeddings (BERT, BLOOM)
    num_decoder_layers: int = 0  # encoder-decoder only
    relative_attention_num_buckets: int = 0  # T5 relative position bias (per stack)
    sliding_window: int | None = None
    profile: NonLLMProfile | None = None
    synthetic: bool = False
    assumptions: tuple[str, ...] = ()
    # The format the publisher stores the weights in when it is not 16-bit: "fp8" (DeepSeek-V3/R1,
    # Kimi-K2: config.json quantization_config.quant_method "fp8"), "mxfp4" (gpt-oss experts), "fp32" (torch_dtype
    # float32: bge-m3); None = 16-bit or unstated. It sizes the download (plan/money/transfer.download_bytes).
    native_dtype: str | None = None
    # Vision-language models: parameters of the vision tower and its projector (catalog/configs/towers.py). They
    # count in params_total (weights, gradients, checkpoints) but not in the per-token shape above.
    vision_params: float = 0.0
    # vision-language models: the tower's patches behind one image token (towers.patches_per_token; 0 = unknown): an
    # image of N tokens costs 2 x vision_params x N x this many FLOPs (estimate/serving/inference.vision_flops)
    vision_patches_per_token: float = 0.0

    # ---- derived flags ----------------------------------------------------------------------
    @property
    def is_llm(self) -> bool:
        return self.kind in LLM_KINDS and self.profile is None

    @property
    def has_norm_bias(self) -> bool:
        return self.norm == "layernorm" if self.norm_bias is None else bool(self.norm_bias)

    @property
    def num_blocks(self) -> int:
        """Transformer blocks in the whole model (encoder + decoder for encoder-decoder models)."""
        return self.num_layers + (self.num_decoder_layers if self.kind == "encoder-decoder" else 0)

    @property
    def params_b(self) -> float:
        return self.params_total / 1e9

    # ---- per-part counts (see docs/models.md for the formulas) ------------------------------
    def _need_shape(self) -> None:
        if not self.is_llm:
            raise GpuplanError(
                _("Model {model!r} is a {kind} profile without a transformer shape.").format(model=self.id, kind=self.kind),
                hint=_("Use its profile (FLOPs and activation bytes per sample) instead."),
            )

    def _attention_block(self) -> int:
        """Parameters of one self-attention block (projections, biases, q/k norms, sinks)."""
        h, H, d = self.hidden_size, self.num_attention_heads, self.head_dim
        if self.mla is not None:
            m = self.mla
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                n = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * H * qk
            else:
                n = h * H * qk
            n += h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
            n += m.kv_lora_rank * H * (m.qk_nope_head_dim + m.v_head_dim)
            n += H * m.v_head_dim * h
            return n
        kv = self.num_key_value_heads
        n = h * H * d + 2 * h * kv * d + H * d * h
        if self.qkv_bias:
            n += (H + 2 * kv) * d
        if self.o_bias:
            n += h
        if self.qk_norm:
            n += 2 * d
        if self.attention_sinks:
            n += H
        if self.attn_output_gate:
            n += h * H * d
        return n

    @property
    def full_attention_layers(self) -> int:
        """Blocks with softmax attention over the context (all of them unless the model is hybrid)."""
        return self.num_layers - (self.linear_attention.layers if self.linear_attention else 0)

    def _mlp(self, width: int, bias: bool) -> int:
        """One MLP of the model's form: gated (3 matrices) or plain (2), with optional biases."""
        h = self.hidden_size
        mats = 3 if self.mlp == "gated" else 2
        n = mats * h * width
        if bias:
            n += (mats - 1) * width + h
        return n

    def moe_layer_count(self) -> int:
        """Layers whose MLP is a MoE block (DeepSeek rule: i >= first_k_dense and i % freq == 0)."""
        if self.moe is None:
            return 0
        m = self.moe
        return sum(1 for i in range(self.num_layers) if i >= m.first_k_dense and i % m.moe_layer_freq == 0)

    def _moe_block(self, active: bool) -> int:
        m = self.moe
        assert m is not None
        h = self.hidden_size
        n = h * m.num_experts + (m.num_experts if m.router_bias else 0)
        experts = m.experts_per_token if active else m.num_experts
        n += experts * self._mlp(m.moe_intermediate_size, m.expert_bias)
        if m.shared_experts:
            n += m.shared_experts * self._mlp(m.shared_expert_intermediate_size, m.expert_bias)
            if m.shared_expert_gate:
                n += h
        return n

    def _attention_total(self) -> int:
        blocks = self.num_layers
        if self.kind == "encoder-decoder":  # decoder blocks have self- and cross-attention
            blocks += 2 * self.num_decoder_layers
        lin = self.linear_attention
        if lin is not None:
            return (blocks - lin.layers) * self._attention_block() + lin.layers * lin.block_params(self.hidden_size)
        return blocks * self._attention_block()

    def _mlp_total(self, active: bool = False) -> int:
        n_moe = self.moe_layer_count()
        dense_layers = self.num_blocks - n_moe
        n = dense_layers * self._mlp(self.intermediate_size, self.mlp_bias)
        if n_moe:
            n += n_moe * self._moe_block(active)
        return n

    def _norm_total(self) -> int:
        per = self.hidden_size * (2 if self.has_norm_bias else 1)
        if self.kind == "encoder-decoder":
            count = 2 * self.num_layers + 3 * self.num_decoder_layers + 2  # + one final norm per stack
        elif self.kind == "encoder":
            count = self.norms_per_layer * self.num_layers  # post-LN BERT: no final norm
        else:
            count = self.norms_per_layer * self.num_layers + 1
        if self.embedding_norm:
            count += 1
        return count * per

    def attention_params_per_layer(self) -> float:
        """Attention parameters per transformer block, averaged over all blocks."""
        self._need_shape()
        return self._attention_total() / self.num_blocks

    def mlp_params_per_layer(self, active: bool = False) -> float:
        """MLP/MoE parameters per block, averaged over all blocks (routers and shared experts
        included). ``active=True`` counts only the experts_per_token routed experts."""
        self._need_shape()
        return self._mlp_total(active) / self.num_blocks

    def norm_params(self) -> int:
        """All normalization parameters in the model (per-layer, final and embedding norms)."""
        self._need_shape()
        return self._norm_total()

    def embedding_params(self) -> int:
        """Token embeddings plus learned positions, token types and T5 relative position biases."""
        self._need_shape()
        h = self.hidden_size
        n = self.vocab_size * h
        if self.position == "learned" and self.max_position_embeddings:
            n += (self.max_position_embeddings + self.position_offset) * h
        n += self.type_vocab_size * h
        if self.relative_attention_num_buckets:
            stacks = 2 if self.kind == "encoder-decoder" else 1
            n += stacks * self.relative_attention_num_buckets * self.num_attention_heads
        return n

    def lm_head_params(self) -> int:
        """Output projection (vocab x hidden); 0 when tied to the input embedding or encoder-only."""
        self._need_shape()
        if self.tie_word_embeddings or self.kind == "encoder":
            return 0
        return self.vocab_size * self.hidden_size

    def pooler_params(self) -> int:
        return self.hidden_size * self.hidden_size + self.hidden_size if self.pooler else 0

    def kv_cache_bytes_per_token(self, dtype_bytes: float) -> float:
        """KV-cache bytes per token of context, all layers with softmax attention (a hybrid model's linear-attention
        layers keep a fixed state per sequence instead: :meth:`recurrent_state_bytes`).

        Standard/GQA/MQA: 2 (K and V) x layers x kv_heads x head_dim x bytes.
        MLA: layers x (kv_lora_rank + qk_rope_head_dim) x bytes - the compressed latent and the
        shared RoPE key are what is cached (DeepSeek-V2 paper, §2.1.2, Table 1).
        Encoder-only models cache nothing; encoder-decoder models count decoder self-attention.
        """
        self._need_shape()
        if self.kind == "encoder":
            return 0.0
        layers = self.num_decoder_layers if self.kind == "encoder-decoder" else self.full_attention_layers
        if self.mla is not None:
            return float(layers * (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * dtype_bytes)
        return float(2 * layers * self.num_key_value_heads * self.head_dim * dtype_bytes)

    def recurrent_state_bytes(self, dtype_bytes: float) -> float:
        """Bytes one sequence keeps in a hybrid model's linear-attention layers, whatever its length (0 otherwise)."""
        lin = self.linear_attention
        return float(lin.layers * lin.state_elements() * dtype_bytes) if lin is not None else 0.0

    def linear_shapes_per_layer(self, targets: str | Iterable[str] = "all-linear") -> list[tuple[str, int, int, float]]:
        """(module name, d_in, d_out, count_per_layer) of the linear layers LoRA would adapt.

        ``targets``: 'all-linear' (every linear layer but the LM head, as PEFT does), 'attn'
        (q, k, v, o), 'qv', or a list of module names: the Hugging Face names q_proj, k_proj,
        v_proj, o_proj, gate_proj, up_proj, down_proj (mapped onto fused modules where the
        architecture fuses them) or the architecture's own names (c_attn, w1, query_key_value,
        dense_h_to_4h, ...). MoE experts are listed per expert shape with their count.
        ``count_per_layer`` is averaged over all blocks, so count x num_blocks is the model total
        (fractional for MoE models with leading dense layers).
        """
        key = targets if isinstance(targets, str) else tuple(targets)
        cache = self.__dict__.get("_linear_shapes_cache")
        if cache is None:      # computed once per spec and target list: the search asks for it per candidate
            cache = {}
            object.__setattr__(self, "_linear_shapes_cache", cache)
        if key not in cache:
            cache[key] = tuple(self._linear_shapes(targets))
        return list(cache[key])

    def _linear_shapes(self, targets: str | Iterable[str]) -> list[tuple[str, int, int, float]]:
        self._need_shape()
        chosen = select_layers(self, linear_layers(self), targets)
        merged: dict[tuple[str, int, int], float] = {}
        for layer in chosen:
            key = (layer.name, layer.d_in, layer.d_out)
            merged[key] = merged.get(key, 0.0) + layer.count
        return [(n, i, o, c / self.num_blocks) for (n, i, o), c in merged.items()]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (tuples as lists), for the output contract and plan.json."""
        out = asdict(self)
        for key in ("unconfirmed", "aliases", "assumptions"):
            out[key] = list(out[key])
        if self.profile is not None:
            out["profile"]["sources"] = list(self.profile.sources)
        return out


def param_count_from_shape(spec: ModelSpec) -> float:
    """Total parameters computed from the shape (formulas in docs/models.md)."""
    spec._need_shape()
    return float(
        spec._attention_total()
        + spec._mlp_total(active=False)
        + spec._norm_total()
        + spec.embedding_params()
        + spec.lm_head_params()
        + spec.pooler_params()
    )


def active_param_count(spec: ModelSpec) -> float:
    """Parameters used per token: as the total, but each MoE layer counts only its
    experts_per_token routed experts (plus router and shared experts). Embeddings included."""
    spec._need_shape()
    if spec.moe is None:
        return param_count_from_shape(spec)
    return float(
        spec._attention_total()
        + spec._mlp_total(active=True)
        + spec._norm_total()
        + spec.embedding_params()
        + spec.lm_head_params()
        + spec.pooler_params()
    )
