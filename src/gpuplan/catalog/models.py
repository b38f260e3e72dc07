"""The model library: typed model shapes, parameter counts and model resolution.

A workload's ``model:`` is one of (see docs/models.md):

* a bundled id, alias or ModelScope id (``Qwen/Qwen2.5-7B-Instruct``, ``qwen2.5-7b``);
* a path to a Hugging Face ``config.json`` or to a folder that holds one (read directly: no network,
  no ``transformers`` import);
* an inline mapping with config.json keys, or ``{params_b: 7}`` (a synthesized Llama-style shape,
  marked ``synthetic`` with its guesses in ``assumptions``).

Parameter counts are computed from the shape by :func:`param_count_from_shape`; the formulas follow
the module layouts of the Hugging Face ``transformers`` implementations of each architecture
(``modeling_llama.py``, ``modeling_qwen2_moe.py``, ``modeling_deepseek_v3.py``, ``modeling_t5.py``,
``modeling_bert.py``, ...) and are written out in docs/models.md.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from gpuplan.errors import GpuplanError, unknown_name_error
from gpuplan.safeio import load_json, read_text_bounded
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


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class MLASpec:
    """DeepSeek multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434, §2.1)."""

    kv_lora_rank: int
    q_lora_rank: int  # 0 = no query compression (DeepSeek-V2-Lite)
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
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
    # diffusion pipelines: {cfg: bool, default_steps, vae_upcast: bool, vae_scale, vae_decode_flops_per_pixel,
    # vae_decode_live_channels, text_tokens, inference_activation_bytes_per_sample, ...} (docs/models.md)
    pipeline: dict = field(default_factory=dict)


@dataclass(frozen=True)
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
        return n

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
        """KV-cache bytes per token of context, all layers.

        Standard/GQA/MQA: 2 (K and V) x layers x kv_heads x head_dim x bytes.
        MLA: layers x (kv_lora_rank + qk_rope_head_dim) x bytes - the compressed latent and the
        shared RoPE key are what is cached (DeepSeek-V2 paper, §2.1.2, Table 1).
        Encoder-only models cache nothing; encoder-decoder models count decoder self-attention.
        """
        self._need_shape()
        if self.kind == "encoder":
            return 0.0
        layers = self.num_decoder_layers if self.kind == "encoder-decoder" else self.num_layers
        if self.mla is not None:
            return float(layers * (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * dtype_bytes)
        return float(2 * layers * self.num_key_value_heads * self.head_dim * dtype_bytes)

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
        self._need_shape()
        chosen = _select_layers(self, _linear_layers(self), targets)
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


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_range(name: str, value: int | None, model: str) -> None:
    if value is None:
        return
    lo, hi = LIMITS[name]
    if not lo <= value <= hi:
        raise GpuplanError(
            _("Model {model!r}: {name} = {value} is outside the plausible range {lo}..{hi}.").format(model=model, name=name, value=value, lo=lo, hi=hi),
            hint=_("Check the config values (a typo or a wrong unit?)."),
            field=name,
        )


def validate_spec(spec: ModelSpec) -> ModelSpec:
    """Check enums and ranges; fill params_total/params_active from the shape when missing."""
    if spec.kind not in KINDS:
        raise GpuplanError(_("Model {model!r}: unknown kind {kind!r}.").format(model=spec.id, kind=spec.kind), hint=_("Use one of {kinds}.").format(kinds=', '.join(KINDS)))
    if not spec.is_llm:
        if spec.profile is None or spec.params_total <= 0:
            raise GpuplanError(_("Model {model!r}: a {kind} model needs a profile and params_total.").format(
                model=spec.id, kind=spec.kind), hint=_("The bundled models.yaml is damaged: reinstall gpuplan."))
        return spec
    for name, allowed in (("attention", ATTENTIONS), ("mlp", MLPS), ("norm", NORMS), ("position", POSITIONS)):
        if getattr(spec, name) not in allowed:
            raise GpuplanError(
                _("Model {model!r}: {name} {value!r} is not one of {allowed}.").format(
                    model=spec.id, name=name, value=getattr(spec, name), allowed=', '.join(allowed)),
                hint=_("The bundled models.yaml is damaged: reinstall gpuplan."), field=name
            )
    for name in ("num_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                 "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
                 "type_vocab_size", "position_offset", "norms_per_layer", "relative_attention_num_buckets"):
        _check_range(name, getattr(spec, name), spec.id)
    if spec.kind == "encoder-decoder":
        _check_range("num_decoder_layers", spec.num_decoder_layers, spec.id)
    if spec.mla is None and spec.num_attention_heads % spec.num_key_value_heads:
        raise GpuplanError(
            _("Model {model!r}: {num_attention_heads} attention heads are not a multiple of {num_key_value_heads} key/value heads.").format(model=spec.id, num_attention_heads=spec.num_attention_heads, num_key_value_heads=spec.num_key_value_heads),
            hint=_("num_attention_heads must be divisible by num_key_value_heads."),
        )
    if spec.moe is not None:
        m = spec.moe
        for name in ("num_experts", "experts_per_token", "moe_intermediate_size", "shared_experts",
                     "shared_expert_intermediate_size", "first_k_dense", "moe_layer_freq"):
            _check_range(name, getattr(m, name), spec.id)
        if m.experts_per_token > m.num_experts:
            raise GpuplanError(
                _("Model {model!r}: {experts_per_token} experts per token but only {num_experts} experts.").format(model=spec.id, experts_per_token=m.experts_per_token, num_experts=m.num_experts),
                hint=_("experts_per_token (num_experts_per_tok) must not exceed the number of experts."),
            )
    if spec.mla is not None:
        for name in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            _check_range(name, getattr(spec.mla, name), spec.id)
    total = param_count_from_shape(spec)
    if total > MAX_PARAMS:
        raise GpuplanError(
            _("Model {model!r}: the shape gives {total:.0f} T parameters, beyond any real model.").format(model=spec.id, total=total / 1e12),
            hint=_("Check hidden_size, num_hidden_layers, intermediate_size and vocab_size."),
        )
    if spec.params_total <= 0:
        spec = replace(spec, params_total=total)
    if spec.params_active <= 0:
        spec = replace(spec, params_active=active_param_count(spec))
    return spec


# --------------------------------------------------------------------------------------------
# Bundled library
# --------------------------------------------------------------------------------------------

_SUB_RECORDS = {"moe": MoESpec, "mla": MLASpec}


def _spec_from_entry(entry: Mapping[str, Any]) -> ModelSpec:
    """Build a ModelSpec from one models.yaml entry (unknown keys are an error: typos)."""
    known = {f.name for f in fields(ModelSpec)}
    data = dict(entry)
    unknown = set(data) - known
    if unknown:
        raise GpuplanError(
            _("models.yaml entry {entry!r} has unknown keys: {unknown}.").format(entry=data.get('id'), unknown=', '.join(sorted(unknown))),
            hint=_("Fix the bundled data file (see docs/models.md for the schema)."),
        )
    for key, cls in _SUB_RECORDS.items():
        if data.get(key) is not None:
            data[key] = cls(**data[key])
    if data.get("profile") is not None:
        prof = dict(data["profile"])
        prof["sources"] = tuple(prof.get("sources", ()))
        data["profile"] = NonLLMProfile(**prof)
    for key in ("unconfirmed", "aliases", "assumptions"):
        data[key] = tuple(data.get(key) or ())
    for key in ("params_total", "params_active"):
        if data.get(key) is not None:
            data[key] = float(data[key])
    return ModelSpec(**data)


@functools.cache
def load_models() -> tuple[ModelSpec, ...]:
    """All bundled models (data/models.yaml), validated; loaded once, on first use."""
    path = importlib.resources.files("gpuplan") / "data" / "models.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:  # pragma: no cover - shipped data is tested
        raise GpuplanError(_("Bundled models.yaml is malformed: {exc}").format(exc=exc), hint=_("Reinstall gpuplan.")) from exc
    entries = raw["models"] if isinstance(raw, dict) else raw
    specs = []
    for entry in entries:
        try:
            specs.append(validate_spec(_spec_from_entry(entry)))
        except TypeError as exc:  # pragma: no cover - shipped data is tested
            raise GpuplanError(_("models.yaml entry {entry!r}: {exc}").format(entry=entry.get('id'), exc=exc),
                               hint=_("The bundled models.yaml is damaged: reinstall gpuplan.")) from exc
    return tuple(specs)


@functools.cache
def _name_index() -> dict[str, ModelSpec]:
    index: dict[str, ModelSpec] = {}
    for spec in load_models():
        names = [spec.id, *spec.aliases]
        if spec.modelscope_id:
            names.append(spec.modelscope_id)
        for name in names:
            key = name.lower()
            other = index.get(key)
            assert other is None or other.id == spec.id, f"name {name!r} used by {other.id} and {spec.id}"
            index[key] = spec
    return index


def list_models(kind: str | None = None) -> list[ModelSpec]:
    """Bundled models, optionally only one kind, in file order."""
    return [m for m in load_models() if kind is None or m.kind == kind]


def get_model(name: str) -> ModelSpec:
    """A bundled model by id, alias or ModelScope id (case-insensitive)."""
    spec = _name_index().get(str(name).strip().lower())
    if spec is None:
        choices = [m.id for m in load_models()] + [a for m in load_models() for a in m.aliases]
        raise unknown_name_error("model", name, choices, "gpuplan models")
    return spec


# --------------------------------------------------------------------------------------------
# Resolution of a workload's model reference
# --------------------------------------------------------------------------------------------


def resolve_model(ref: Any) -> ModelSpec:
    """Turn a workload's ``model:`` value into a ModelSpec.

    ``ref``: a bundled id/alias/ModelScope id; a path to config.json or to a folder holding one;
    a Hugging Face / ModelScope id outside the library (cached config.json, or fetched when
    ``GPUPLAN_ONLINE=1``: see gpuplan.catalog.hub);
    a mapping ``{params_b: N}``; a mapping of config.json keys; or a ModelSpec.
    Anything unusable raises GpuplanError (never another exception).
    """
    if isinstance(ref, ModelSpec):
        return ref
    if isinstance(ref, Mapping):
        if "params_b" in ref:
            return synthesize_from_params_b(ref)
        name = ref.get("_name_or_path") or ref.get("name") or "inline-config"
        return from_hf_config(ref, name=str(name)[:200])
    if isinstance(ref, os.PathLike):
        return load_config_file(ref)
    if not isinstance(ref, str) or not ref.strip():
        raise GpuplanError(
            _("model must be a name, a config.json path or a mapping, not {name} {ref!r}.").format(name=type(ref).__name__, ref=ref),
            hint=_("E.g. model: Qwen/Qwen2.5-7B-Instruct, model: ./config.json or model: {params_b: 7}."),
            field="model",
        )
    name = ref.strip()
    spec = _name_index().get(name.lower())
    if spec is not None:
        return spec
    if _looks_like_path(name):
        return load_config_file(name)
    from gpuplan.catalog import hub

    if hub.parse_repo_id(name) is not None:
        # A Hugging Face / ModelScope id the library lacks: its cached config.json, or (only with
        # GPUPLAN_ONLINE=1) a download; offline the error says how to switch online resolution on.
        return hub.resolve_remote(name)
    raise get_model_error(name)


def get_model_error(name: str) -> GpuplanError:
    choices = [m.id for m in load_models()] + [a for m in load_models() for a in m.aliases]
    return unknown_name_error("model", name, choices, "gpuplan models")


def _looks_like_path(name: str) -> bool:
    if len(name) > 4096 or "\x00" in name:
        return False
    try:
        if os.path.exists(name):
            return True
    except (OSError, ValueError):
        return False
    return name.endswith(".json") or name.startswith((".", "~", os.sep)) or (os.sep == "\\" and ":" in name)


def load_config_file(path: str | os.PathLike) -> ModelSpec:
    """Read a Hugging Face config.json (or the config.json inside a folder) into a ModelSpec."""
    p = Path(os.path.expanduser(os.fspath(path)))
    try:
        if p.is_dir():
            p = p / "config.json"
        if not p.exists():
            raise FileNotFoundError(p)
        text = read_text_bounded(p, "model config")
    except FileNotFoundError:
        raise GpuplanError(
            _("Model config not found: {p}.").format(p=p),
            hint=_("Give a bundled model name (see `gpuplan models`), a config.json path or a folder holding one."),
            field="model",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GpuplanError(_("Cannot read model config {p}: {exc}.").format(p=p, exc=exc), hint=_("Check the path and permissions.")) from None
    cfg = load_json(text, origin=str(p), hint=_("Give the model's Hugging Face config.json unchanged."))
    if not isinstance(cfg, dict):
        raise GpuplanError(_("{p} does not hold a JSON object.").format(p=p), hint=_("A config.json is a JSON object {...}."))
    name = cfg.get("_name_or_path") or (p.parent.name if p.name == "config.json" else p.stem)
    return from_hf_config(cfg, name=str(name)[:200] or "config.json")


# --------------------------------------------------------------------------------------------
# Linear layers (LoRA targets)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Linear:
    name: str
    roles: frozenset[str]
    d_in: int
    d_out: int
    count: float  # matrices of this shape in the whole model


# Native module names per architecture; roles not listed use the Llama names.
_LLAMA_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
                "gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
_GPT2_NAMES = {"qkv": "c_attn", "o": "attn.c_proj", "up": "c_fc", "down": "mlp.c_proj"}
_NEOX_NAMES = {"qkv": "query_key_value", "o": "dense", "up": "dense_h_to_4h", "down": "dense_4h_to_h"}
_ARCH_NAMES: dict[str, dict[str, str]] = {
    "qwen1": {"qkv": "c_attn", "o": "attn.c_proj", "up": "w1", "gate": "w2", "down": "mlp.c_proj"},
    "chatglm": {"qkv": "query_key_value", "o": "dense", "gate_up": "dense_h_to_4h", "down": "dense_4h_to_h"},
    "baichuan": {"qkv": "W_pack"},
    "gpt": _GPT2_NAMES, "gpt2": _GPT2_NAMES, "bigcode": _GPT2_NAMES,
    "bloom": _NEOX_NAMES, "falcon": _NEOX_NAMES, "gpt_neox": _NEOX_NAMES,
    "opt": {"o": "out_proj", "up": "fc1", "down": "fc2"},
    "mpt": {"qkv": "Wqkv", "o": "out_proj"},
    "t5": {"q": "q", "k": "k", "v": "v", "o": "o", "gate": "wi_0", "up": "wi_1", "down": "wo"},
    "bert": {"q": "query", "k": "key", "v": "value", "o": "attention.output.dense",
             "up": "intermediate.dense", "down": "output.dense"},
    "mixtral": {"gate": "w1", "up": "w3", "down": "w2"},
}
# Hugging Face (Llama) module names a user may list, and the roles they stand for.
_HF_ROLE = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o",
            "gate_proj": "gate", "up_proj": "up", "down_proj": "down"}
_TARGET_ROLES = {
    "attn": frozenset({"q", "k", "v", "o", "q_a", "q_b", "kv_a", "kv_b"}),
    "qv": frozenset({"q", "v"}),
}


def _linear_layers(spec: ModelSpec) -> list[_Linear]:
    """Every linear layer of the model (the LM head excluded), with how many there are."""
    names = {**_LLAMA_NAMES, **_ARCH_NAMES.get(spec.arch, {})}
    if spec.arch == "t5" and spec.mlp == "plain":
        names["up"] = "wi"
    h, H, kv, d = spec.hidden_size, spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim
    attn_blocks = spec.num_layers + (2 * spec.num_decoder_layers if spec.kind == "encoder-decoder" else 0)
    out: list[_Linear] = []

    def add(name: str, roles: Iterable[str], d_in: int, d_out: int, count: float, prefix: str = "") -> None:
        if count > 0:
            out.append(_Linear(prefix + name, frozenset(roles), d_in, d_out, count))

    if spec.mla is not None:
        m = spec.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            add("q_a_proj", {"q_a"}, h, m.q_lora_rank, attn_blocks)
            add("q_b_proj", {"q", "q_b"}, m.q_lora_rank, H * qk, attn_blocks)
        else:
            add("q_proj", {"q"}, h, H * qk, attn_blocks)
        add("kv_a_proj_with_mqa", {"kv_a"}, h, m.kv_lora_rank + m.qk_rope_head_dim, attn_blocks)
        add("kv_b_proj", {"kv_b", "k", "v"}, m.kv_lora_rank, H * (m.qk_nope_head_dim + m.v_head_dim), attn_blocks)
        add(names["o"], {"o"}, H * m.v_head_dim, h, attn_blocks)
    else:
        if "qkv" in names:
            add(names["qkv"], {"q", "k", "v"}, h, (H + 2 * kv) * d, attn_blocks)
        else:
            add(names["q"], {"q"}, h, H * d, attn_blocks)
            add(names["k"], {"k"}, h, kv * d, attn_blocks)
            add(names["v"], {"v"}, h, kv * d, attn_blocks)
        add(names["o"], {"o"}, H * d, h, attn_blocks)

    def add_mlp(width: int, count: float, prefix: str = "") -> None:
        if spec.mlp == "gated":
            if "gate_up" in names:
                add(names["gate_up"], {"gate", "up"}, h, 2 * width, count, prefix)
            else:
                add(names["gate"], {"gate"}, h, width, count, prefix)
                add(names["up"], {"up"}, h, width, count, prefix)
        else:
            add(names["up"], {"up"}, h, width, count, prefix)
        add(names["down"], {"down"}, width, h, count, prefix)

    n_moe = spec.moe_layer_count()
    add_mlp(spec.intermediate_size, spec.num_blocks - n_moe)
    if spec.moe is not None and n_moe:
        add_mlp(spec.moe.moe_intermediate_size, n_moe * spec.moe.num_experts, "experts.")
        if spec.moe.shared_experts:
            add_mlp(spec.moe.shared_expert_intermediate_size, n_moe * spec.moe.shared_experts, "shared_experts.")
    return out


def _select_layers(spec: ModelSpec, layers: list[_Linear], targets: str | Iterable[str]) -> list[_Linear]:
    if isinstance(targets, str):
        key = targets.strip().lower()
        if key in ("all-linear", "all", "all_linear"):
            return layers
        if key in _TARGET_ROLES:
            roles = _TARGET_ROLES[key]
            return [lay for lay in layers if lay.roles & roles]
        targets = [t.strip() for t in targets.split(",") if t.strip()]
    wanted = list(targets)
    chosen: list[_Linear] = []
    for target in wanted:
        role = _HF_ROLE.get(target)
        hits = [
            lay for lay in layers
            if target in (lay.name, lay.name.split(".")[-1]) or (role is not None and role in lay.roles)
        ]
        if not hits:
            known = sorted({lay.name.split(".")[-1] for lay in layers} | set(_HF_ROLE))
            raise GpuplanError(
                _("LoRA target {target!r} is not a linear layer of {model}.").format(target=target, model=spec.id),
                hint=_("Use all-linear, attn, qv or module names among: {known}.").format(known=', '.join(known)),
                field="lora.targets",
            )
        chosen.extend(lay for lay in hits if lay not in chosen)
    return chosen


# --------------------------------------------------------------------------------------------
# Hugging Face config.json
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _HfArch:
    """Defaults of one config.json model_type (from the transformers modeling code)."""

    arch: str
    family: str
    kind: str = "decoder"
    mlp: str = "gated"
    norm: str = "rmsnorm"
    position: str = "rope"
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    tie: bool = False
    embedding_norm: bool = False
    position_offset: int = 0
    qk_norm: bool = False


_GPT_LIKE: dict[str, Any] = dict(mlp="plain", norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True)
_HF_ARCHS: dict[str, _HfArch] = {
    "llama": _HfArch("llama", "llama"),
    "mistral": _HfArch("llama", "mistral"),
    "mixtral": _HfArch("mixtral", "mixtral"),
    "qwen2": _HfArch("qwen2", "qwen2", qkv_bias=True),
    "qwen2_moe": _HfArch("qwen2moe", "qwen2", qkv_bias=True),
    "qwen3": _HfArch("qwen3", "qwen3", qk_norm=True),
    "qwen3_moe": _HfArch("qwen3moe", "qwen3", qk_norm=True),
    "qwen": _HfArch("qwen1", "qwen", qkv_bias=True),
    "chatglm": _HfArch("chatglm", "glm", qkv_bias=True),
    "baichuan": _HfArch("baichuan", "baichuan"),
    "yi": _HfArch("llama", "yi"),
    "internlm2": _HfArch("llama", "internlm"),
    "gemma": _HfArch("llama", "gemma", tie=True),
    "gemma2": _HfArch("llama", "gemma", tie=True),
    "phi3": _HfArch("llama", "phi"),
    # Phi-1/1.5/2: parallel attention + GELU MLP from one LayerNorm, biases everywhere, lm_head bias
    "phi": _HfArch("phi", "phi", **_GPT_LIKE),
    # Phi-3.5-MoE: Mixtral-style experts with LayerNorm and biased attention projections
    "phimoe": _HfArch("mixtral", "phi", norm="layernorm", qkv_bias=True, o_bias=True),
    "deepseek": _HfArch("deepseek", "deepseek"),
    "deepseek_v2": _HfArch("deepseekv2", "deepseek"),
    "deepseek_v3": _HfArch("deepseekv3", "deepseek"),
    "gpt_oss": _HfArch("gptoss", "gpt-oss", qkv_bias=True, o_bias=True),
    "nemotron": _HfArch("nemotron", "nemotron", mlp="plain", norm="layernorm"),
    "bert": _HfArch("bert", "bert", kind="encoder", position="learned", tie=True, embedding_norm=True, **_GPT_LIKE),
    "gpt2": _HfArch("gpt2", "gpt2", position="learned", tie=True, **_GPT_LIKE),
    "gpt_bigcode": _HfArch("bigcode", "starcoder", position="learned", tie=True, **_GPT_LIKE),
    "gpt_neox": _HfArch("gpt_neox", "gpt-neox", **_GPT_LIKE),
    "opt": _HfArch("opt", "opt", position="learned", tie=True, position_offset=2, **_GPT_LIKE),
    "bloom": _HfArch("bloom", "bloom", position="alibi", tie=True, embedding_norm=True, **_GPT_LIKE),
    "mpt": _HfArch("mpt", "mpt", mlp="plain", norm="layernorm", position="alibi", tie=True),
    "falcon": _HfArch("falcon", "falcon", mlp="plain", norm="layernorm", tie=True),
    "t5": _HfArch("t5", "t5", kind="encoder-decoder", position="relative", tie=True),
    "mt5": _HfArch("t5", "t5", kind="encoder-decoder", position="relative"),
    "umt5": _HfArch("t5", "t5", kind="encoder-decoder", position="relative"),
}
_PLAIN_DEFAULT_FFN = {"gpt2", "gpt_bigcode", "bloom", "falcon", "mpt"}  # FFN width defaults to 4*hidden

_MIN_KEYS_HINT = (
    "An inline model mapping needs config.json keys such as hidden_size, num_hidden_layers, "
    "num_attention_heads, intermediate_size and vocab_size - or use {params_b: N}."
)


class _Cfg:
    """Typed, error-reporting access to a config.json mapping."""

    def __init__(self, raw: Mapping[str, Any], name: str):
        self.raw = raw
        self.name = name

    def has(self, *keys: str) -> bool:
        return any(self.raw.get(k) is not None for k in keys)

    def int(self, *keys: str, default: int | None = None, required: bool = True) -> int | None:
        for key in keys:
            value = self.raw.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise GpuplanError(
                    _("Model config {name!r}: {key} must be an integer, not {value!r}.").format(name=self.name, key=key, value=value),
                    hint=_("Give the values of the model's config.json unchanged."), field=key,
                )
            if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
                raise GpuplanError(
                    _("Model config {name!r}: {key} = {value!r} is not a whole number.").format(
                        name=self.name, key=key, value=value),
                    hint=_("Give the values of the model's config.json unchanged."), field=key,
                )
            number = int(value)
            if number < 0 or number > 10**12:
                raise GpuplanError(
                    _("Model config {name!r}: {key} = {number} is out of range.").format(name=self.name, key=key, number=number),
                    hint=_("Check the config values (a typo?)."), field=key,
                )
            return number
        if default is not None or not required:
            return default
        raise GpuplanError(_("Model config {name!r} lacks {key}.").format(name=self.name, key=keys[0]), hint=_MIN_KEYS_HINT, field=keys[0])

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise GpuplanError(_("Model config {name!r}: {key} must be true or false, not {value!r}.").format(
                name=self.name, key=key, value=value), hint=_("Give the values of the model's config.json unchanged."), field=key)
        return value

    def str(self, key: str) -> str:
        value = self.raw.get(key)
        return value if isinstance(value, str) else ""


def _flatten_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Multimodal configs nest the language model under text_config (llm_config for some)."""
    for key in ("text_config", "llm_config", "language_config"):
        inner = cfg.get(key)
        if isinstance(inner, Mapping) and inner:
            merged = {k: v for k, v in cfg.items() if k not in (key, "vision_config", "audio_config")}
            merged.update(inner)
            if "model_type" in inner:
                merged["model_type"] = inner["model_type"]
            return merged
    return dict(cfg)


def from_hf_config(cfg: Mapping[str, Any], name: str = "inline-config") -> ModelSpec:
    """Build a ModelSpec from the keys of a Hugging Face config.json (any keys accepted)."""
    if not isinstance(cfg, Mapping):
        raise GpuplanError(_("Model config {name!r} must be a mapping of config.json keys.").format(name=name), hint=_MIN_KEYS_HINT)
    c = _Cfg(_flatten_config(cfg), name)
    model_type = c.str("model_type").lower().replace("-", "_")
    assumptions: list[str] = []
    base = _HF_ARCHS.get(model_type)
    if base is None:
        base = _HfArch("llama", model_type or "unknown")
        assumptions.append(
            _("model_type {model_type!r} is not one gpuplan knows: assumed a Llama-style decoder "
              "(gated MLP, RMSNorm, RoPE, no biases)").format(model_type=model_type or "(none)")
        )
    t = model_type
    layers = c.int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    hidden = c.int("hidden_size", "n_embd", "d_model", "n_embed")
    heads = c.int("num_attention_heads", "n_head", "num_heads", "n_heads")
    vocab = c.int("padded_vocab_size", "vocab_size")
    assert layers is not None and hidden is not None and heads is not None and vocab is not None
    if heads == 0 or layers == 0 or hidden == 0:
        raise GpuplanError(_("Model config {name!r}: layers, hidden size and heads must be positive.").format(name=name),
                           hint=_MIN_KEYS_HINT)

    attn_cfg = c.raw.get("attn_config") if isinstance(c.raw.get("attn_config"), Mapping) else {}
    ffn_keys = ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "d_ff")
    if t == "mpt":
        ratio = c.raw.get("expansion_ratio", 4)
        ffn = int(hidden * ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 < ratio < 1e4 else None
        if ffn is None:
            raise GpuplanError(_("Model config {name!r}: expansion_ratio must be a positive number.").format(name=name),
                               hint=_("Give the values of the model's config.json unchanged."), field="expansion_ratio")
    elif t in _PLAIN_DEFAULT_FFN:
        ffn = c.int(*ffn_keys, default=4 * hidden)
    else:
        ffn = c.int(*ffn_keys, required=False)
        if ffn is None:
            if not c.has("moe_intermediate_size"):
                raise GpuplanError(_("Model config {name!r} lacks intermediate_size.").format(name=name), hint=_MIN_KEYS_HINT,
                                   field="intermediate_size")
            ffn = c.int("moe_intermediate_size")
    assert ffn is not None
    if t == "qwen":  # QWen v1: config intermediate_size is twice the width of w1/w2
        ffn //= 2

    # key/value heads
    if t == "chatglm":
        kv = c.int("multi_query_group_num", default=heads) if c.bool("multi_query_attention", False) else heads
    elif c.bool("multi_query", False) and not c.bool("new_decoder_architecture", False):
        kv = 1
    else:
        kv = c.int("num_key_value_heads", "num_kv_heads", "n_head_kv", default=heads)
        if isinstance(attn_cfg, Mapping) and isinstance(attn_cfg.get("kv_n_heads"), int):
            kv = _Cfg(attn_cfg, name).int("kv_n_heads")
    assert kv is not None
    if kv == 0:
        raise GpuplanError(_("Model config {name!r}: key/value heads must be positive.").format(name=name),
                           hint=_("Give the values of the model's config.json unchanged."), field="num_key_value_heads")

    head_dim = c.int("head_dim", "kv_channels", "d_kv", required=False)
    if head_dim is None:
        if hidden % heads:
            raise GpuplanError(
                _("Model config {name!r}: hidden_size {hidden} is not a multiple of {heads} heads.").format(name=name, hidden=hidden, heads=heads),
                hint=_("Add head_dim to the config."), field="head_dim",
            )
        head_dim = hidden // heads

    # Flags
    qkv_bias, o_bias, mlp_bias = base.qkv_bias, base.o_bias, base.mlp_bias
    if "attention_bias" in c.raw:
        qkv_bias = c.bool("attention_bias", qkv_bias)
        o_bias = qkv_bias if t in ("llama", "gpt_oss", "mistral", "phimoe") else o_bias
    if "mlp_bias" in c.raw:
        mlp_bias = c.bool("mlp_bias", mlp_bias)
    if t == "chatglm":
        qkv_bias = c.bool("add_qkv_bias", True)
        o_bias = mlp_bias = c.bool("add_bias_linear", False)
    if t in ("falcon",):
        qkv_bias = o_bias = mlp_bias = c.bool("bias", False)
    if t == "mpt":
        qkv_bias = o_bias = mlp_bias = not c.bool("no_bias", True)
    if t in ("gpt_neox",):
        qkv_bias = o_bias = mlp_bias = c.bool("attention_bias", True)
    norm_bias = None
    if t == "mpt":
        norm_bias = not c.bool("no_bias", True)

    position = base.position
    if t == "mpt":
        position = "alibi" if (isinstance(attn_cfg, Mapping) and attn_cfg.get("alibi") is True) else "learned"
    if t == "falcon" and c.bool("alibi", False):
        position = "alibi"
    if t == "baichuan" and not c.has("max_position_embeddings"):
        position = "alibi"  # Baichuan-13B / Baichuan2-13B use ALiBi and set only model_max_length
    if t == "bert" and c.str("position_embedding_type") not in ("", "absolute"):
        position = "relative"

    mlp = base.mlp
    if base.kind == "encoder-decoder":
        proj = c.str("feed_forward_proj") or "relu"
        mlp = "gated" if proj.startswith("gated") else "plain"

    norms_per_layer = 2
    if t == "phi":  # PhiDecoderLayer: one input_layernorm feeds attention and MLP in parallel
        norms_per_layer = 1
    if t == "falcon" and c.bool("parallel_attn", True) and not c.bool("new_decoder_architecture", False):
        norms_per_layer = 1
    if t == "falcon" and c.bool("new_decoder_architecture", False):
        kv = c.int("num_kv_heads", default=kv)
        assert kv is not None

    max_pos = c.int("max_position_embeddings", "n_positions", "seq_length", "max_seq_len",
                    "max_sequence_length", "model_max_length", required=False)
    if t == "qwen":
        max_pos = c.int("seq_length", "max_position_embeddings", required=False)
    sliding = None
    if c.bool("use_sliding_window", True) and isinstance(c.raw.get("sliding_window"), int) \
            and not isinstance(c.raw.get("sliding_window"), bool):
        sliding = c.int("sliding_window", required=False)

    moe = _moe_from_config(c, t, ffn)
    mla = None
    if t in ("deepseek_v2", "deepseek_v3") or c.has("kv_lora_rank"):
        mla = MLASpec(
            kv_lora_rank=c.int("kv_lora_rank"),  # type: ignore[arg-type]
            q_lora_rank=c.int("q_lora_rank", default=0),  # type: ignore[arg-type]
            qk_rope_head_dim=c.int("qk_rope_head_dim", default=64),  # type: ignore[arg-type]
            qk_nope_head_dim=c.int("qk_nope_head_dim", default=128),  # type: ignore[arg-type]
            v_head_dim=c.int("v_head_dim", default=128),  # type: ignore[arg-type]
        )
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        kv = heads

    if mla is not None:
        attention = "mla"
    elif kv == 1 and heads > 1:
        attention = "mqa"
    elif kv < heads:
        attention = "gqa"
    else:
        attention = "mha"

    arch = base.arch
    if moe is not None and arch == "llama":
        arch = "llama-moe"
    kind = base.kind
    spec = ModelSpec(
        id=name,
        family=base.family,
        kind=kind,
        arch=arch,
        num_layers=layers,
        hidden_size=hidden,
        intermediate_size=ffn,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        vocab_size=vocab,
        tie_word_embeddings=c.bool("tie_word_embeddings", base.tie),
        attention=attention,
        mlp=mlp,
        norm=base.norm,
        position=position,
        qkv_bias=qkv_bias,
        max_position_embeddings=max_pos if position == "learned" or max_pos else None,
        moe=moe,
        mla=mla,
        source="user config.json",
        o_bias=o_bias,
        mlp_bias=mlp_bias,
        norm_bias=norm_bias,
        qk_norm=base.qk_norm or t in ("qwen3", "qwen3_moe"),
        attention_sinks=t == "gpt_oss",
        norms_per_layer=norms_per_layer,
        position_offset=base.position_offset,
        type_vocab_size=c.int("type_vocab_size", default=2) if t == "bert" else 0,  # type: ignore[arg-type]
        pooler=t == "bert",
        embedding_norm=base.embedding_norm,
        num_decoder_layers=(c.int("num_decoder_layers", default=layers) or 0) if kind == "encoder-decoder" else 0,
        relative_attention_num_buckets=(c.int("relative_attention_num_buckets", default=32) or 0)
        if kind == "encoder-decoder" else 0,
        sliding_window=sliding,
        assumptions=tuple(assumptions),
    )
    if position == "learned" and not spec.max_position_embeddings:
        raise GpuplanError(_("Model config {name!r} lacks max_position_embeddings (learned positions).").format(name=name),
                           hint=_MIN_KEYS_HINT, field="max_position_embeddings")
    return validate_spec(spec)


def _moe_from_config(c: _Cfg, t: str, ffn: int) -> MoESpec | None:
    experts = c.int("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts", required=False)
    if not experts:
        return None
    top_k = c.int("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk", "moe_top_k")
    assert top_k is not None
    width = c.int("moe_intermediate_size", default=ffn)
    shared = c.int("n_shared_experts", default=0) or 0
    shared_width = width
    if t == "qwen2_moe" or c.has("shared_expert_intermediate_size"):
        shared_width = c.int("shared_expert_intermediate_size", default=0) or 0
        shared = 1 if shared_width else 0
    return MoESpec(
        num_experts=experts,
        experts_per_token=top_k,
        moe_intermediate_size=width,  # type: ignore[arg-type]
        shared_experts=shared,
        shared_expert_intermediate_size=shared_width if shared else 0,  # type: ignore[arg-type]
        first_k_dense=c.int("first_k_dense_replace", default=0) or 0,
        moe_layer_freq=c.int("moe_layer_freq", "decoder_sparse_step", default=1) or 1,
        router_bias=t == "gpt_oss" or c.str("topk_method") == "noaux_tc",
        expert_bias=t == "gpt_oss",
        shared_expert_gate=t == "qwen2_moe",
    )


# --------------------------------------------------------------------------------------------
# {params_b: N}
# --------------------------------------------------------------------------------------------

# Real Llama-style GQA shapes, smallest to largest: (source model, hidden, ffn, heads, kv_heads,
# head_dim, vocab, tied, layers). Configs: huggingface.co/<model>/blob/main/config.json.
_SYNTH_TABLE: tuple[tuple[str, int, int, int, int, int, int, bool, int], ...] = (
    ("HuggingFaceTB/SmolLM2-135M", 576, 1536, 9, 3, 64, 49152, True, 30),
    ("Qwen/Qwen2.5-0.5B", 896, 4864, 14, 2, 64, 151936, True, 24),
    ("meta-llama/Llama-3.2-1B", 2048, 8192, 32, 8, 64, 128256, True, 16),
    ("Qwen/Qwen2.5-1.5B", 1536, 8960, 12, 2, 128, 151936, True, 28),
    ("meta-llama/Llama-3.2-3B", 3072, 8192, 24, 8, 128, 128256, True, 28),
    ("meta-llama/Llama-3.1-8B", 4096, 14336, 32, 8, 128, 128256, False, 32),
    ("Qwen/Qwen2.5-14B", 5120, 13824, 40, 8, 128, 152064, False, 48),
    ("Qwen/Qwen2.5-32B", 5120, 27648, 40, 8, 128, 152064, False, 64),
    ("meta-llama/Llama-3.1-70B", 8192, 28672, 64, 8, 128, 128256, False, 80),
    ("meta-llama/Llama-3.1-405B", 16384, 53248, 128, 8, 128, 128256, False, 126),
)
MIN_PARAMS_B = 0.05


def _synth_spec(row: tuple, layers: int, name: str) -> ModelSpec:
    src, h, ffn, heads, kv, d, vocab, tied, _extra = row
    return ModelSpec(
        id=name, family="synthetic", kind="decoder", arch="llama", num_layers=layers, hidden_size=h,
        intermediate_size=ffn, num_attention_heads=heads, num_key_value_heads=kv, head_dim=d,
        vocab_size=vocab, tie_word_embeddings=tied, attention="gqa", mlp="gated", norm="rmsnorm",
        position="rope", max_position_embeddings=131072, source=f"synthesized from {src} widths",
        synthetic=True,
    )


def synthesize_from_params_b(ref: Mapping[str, Any]) -> ModelSpec:
    """A Llama-style GQA shape with about ``params_b`` billion parameters.

    Picks the real model in _SYNTH_TABLE nearest in size (log scale), keeps its widths, heads,
    vocabulary and tying, and sets the layer count so the total matches; every guess is listed
    in ``assumptions`` and ``synthetic`` is True.
    """
    extra = set(ref) - {"params_b", "name"}
    if extra:
        raise GpuplanError(
            _("model: {{params_b: ...}} takes no other keys (got {keys}).").format(keys=', '.join(sorted(map(str, extra)))),
            hint=_("Use either {params_b: N} or a mapping of config.json keys, not both."), field="model",
        )
    value = ref.get("params_b")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GpuplanError(_("params_b must be a number of billions of parameters, not {value!r}.").format(value=value),
                           hint=_("E.g. model: {params_b: 7}."), field="model.params_b")
    if not MIN_PARAMS_B <= value <= MAX_PARAMS_B:
        raise GpuplanError(
            _("params_b = {value} is outside {lo}..{hi:g} (billions of parameters).").format(value=value, lo=MIN_PARAMS_B, hi=MAX_PARAMS_B),
            hint=_("Give the size in billions (7 for a 7B model), or the model's config.json."),
            field="model.params_b",
        )
    target = float(value) * 1e9
    row = min(_SYNTH_TABLE, key=lambda r: abs(math.log(target / param_count_from_shape(_synth_spec(r, r[8], "x")))))
    probe = _synth_spec(row, 1, "x")
    per_layer = param_count_from_shape(_synth_spec(row, 2, "x")) - param_count_from_shape(probe)
    fixed = param_count_from_shape(probe) - per_layer
    layers = max(1, min(LIMITS["num_layers"][1], round((target - fixed) / per_layer)))
    name = str(ref.get("name") or f"synthetic-{value:g}b")[:200]
    spec = _synth_spec(row, layers, name)
    total = param_count_from_shape(spec)
    src, h, ffn, heads, kv, d, vocab, tied, _extra = row
    spec = replace(spec, params_total=total, params_active=total, assumptions=(
        (_("model {{params_b: {value:g}}}: no real shape given; synthesized a Llama-style GQA decoder with the "
           "widths of {src} (hidden {h}, FFN {ffn}, {heads} heads, {kv} KV heads, head_dim {d}, vocab {vocab}, "
           "tied embeddings) and {layers} layers = {total:.2f}B parameters") if tied else
         _("model {{params_b: {value:g}}}: no real shape given; synthesized a Llama-style GQA decoder with the "
           "widths of {src} (hidden {h}, FFN {ffn}, {heads} heads, {kv} KV heads, head_dim {d}, vocab {vocab}, "
           "untied embeddings) and {layers} layers = {total:.2f}B parameters")).format(
            value=value, src=src, h=h, ffn=ffn, heads=heads, kv=kv, d=d, vocab=vocab, layers=layers,
            total=total / 1e9),
    ))
    return validate_spec(spec)


__all__ = [
    "MoESpec", "MLASpec", "NonLLMProfile", "ModelSpec", "param_count_from_shape", "active_param_count",
    "load_models", "list_models", "get_model", "resolve_model", "from_hf_config", "synthesize_from_params_b",
    "load_config_file", "validate_spec",
]
