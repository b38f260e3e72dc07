"""Hugging Face ``config.json`` -> ModelSpec: the keys each architecture spells its shape with.

Any keys are accepted; the ones read are listed per model_type in docs/models.md. Read directly: no
network, no ``transformers`` import.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuplan.catalog.hf_archs import HF_ARCHS, MIN_KEYS_HINT, PLAIN_DEFAULT_FFN, HfArch
from gpuplan.catalog.model_spec import MLASpec, ModelSpec, MoESpec
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.safeio import load_json, read_text_bounded

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
        raise GpuplanError(_("Model config {name!r} lacks {key}.").format(name=self.name, key=keys[0]), hint=MIN_KEYS_HINT, field=keys[0])

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
        raise GpuplanError(_("Model config {name!r} must be a mapping of config.json keys.").format(name=name), hint=MIN_KEYS_HINT)
    c = _Cfg(_flatten_config(cfg), name)
    model_type = c.str("model_type").lower().replace("-", "_")
    assumptions: list[str] = []
    base = HF_ARCHS.get(model_type)
    if base is None:
        base = HfArch("llama", model_type or "unknown")
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
                           hint=MIN_KEYS_HINT)

    attn_cfg = c.raw.get("attn_config") if isinstance(c.raw.get("attn_config"), Mapping) else {}
    ffn_keys = ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "d_ff")
    if t == "mpt":
        ratio = c.raw.get("expansion_ratio", 4)
        ffn = int(hidden * ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 < ratio < 1e4 else None
        if ffn is None:
            raise GpuplanError(_("Model config {name!r}: expansion_ratio must be a positive number.").format(name=name),
                               hint=_("Give the values of the model's config.json unchanged."), field="expansion_ratio")
    elif t in PLAIN_DEFAULT_FFN:
        ffn = c.int(*ffn_keys, default=4 * hidden)
    else:
        ffn = c.int(*ffn_keys, required=False)
        if ffn is None:
            if not c.has("moe_intermediate_size"):
                raise GpuplanError(_("Model config {name!r} lacks intermediate_size.").format(name=name), hint=MIN_KEYS_HINT,
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
                           hint=MIN_KEYS_HINT, field="max_position_embeddings")
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
