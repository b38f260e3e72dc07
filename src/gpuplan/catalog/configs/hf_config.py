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

from gpuplan.catalog.configs.hf_archs import HF_ARCHS, MIN_KEYS_HINT, PLAIN_DEFAULT_FFN, HfArch
from gpuplan.catalog.model_spec import LinearAttentionSpec, MLASpec, ModelSpec, MoESpec
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.catalog.configs.towers import patches_per_token, tower_params
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.files.safeio import load_json, read_text_bounded

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
                    hint=_(_UNCHANGED), field=key,
                )
            if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
                raise GpuplanError(
                    _("Model config {name!r}: {key} = {value!r} is not a whole number.").format(
                        name=self.name, key=key, value=value),
                    hint=_(_UNCHANGED), field=key,
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
        raise GpuplanError(_("Model config {name!r} lacks {key}.").format(name=self.name, key=keys[0]), hint=_(MIN_KEYS_HINT), field=keys[0])

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise GpuplanError(_("Model config {name!r}: {key} must be true or false, not {value!r}.").format(
                name=self.name, key=key, value=value), hint=_(_UNCHANGED), field=key)
        return value

    def str(self, key: str) -> str:
        value = self.raw.get(key)
        return value if isinstance(value, str) else ""


_TOWERS = ("vision_config", "audio_config", "img_processor", "vision_tower", "visual")
_FALCON = ("falcon", "refinedwebmodel", "refinedweb")
_FFN_KEYS = ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim", "d_ff", "hidden_dim")
_UNCHANGED = N_("Give the values of the model's config.json unchanged.")


def _flatten_config(cfg: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the language model's keys, whether a vision/audio tower sits beside it). Multimodal configs
    nest the language model under text_config (llm_config, language_config for some)."""
    towers = any(isinstance(cfg.get(k), Mapping) and cfg.get(k) for k in _TOWERS)
    for key in ("text_config", "llm_config", "language_config"):
        inner = cfg.get(key)
        if isinstance(inner, Mapping) and inner:
            merged = {k: v for k, v in cfg.items() if k not in (key, *_TOWERS)}
            merged.update(inner)
            if "model_type" in inner:
                merged["model_type"] = inner["model_type"]
            return merged, True
    flat = dict(cfg)
    ffn_cfg = cfg.get("ffn_config")
    if isinstance(ffn_cfg, Mapping):   # DBRX nests its MLP and experts (ffn_hidden_size, moe_num_experts, moe_top_k)
        flat.update({k: v for k, v in ffn_cfg.items() if k not in flat})
    return flat, towers


def _arch_for(model_type: str) -> tuple[HfArch, list[str]]:
    base = HF_ARCHS.get(model_type)
    if base is not None:
        return base, []
    return HfArch("llama", model_type or "unknown"), [
        _("model_type {model_type!r} is not one gpuplan knows: assumed a Llama-style decoder "
          "(gated MLP, RMSNorm, RoPE, no biases)").format(model_type=model_type or "(none)")]


def _ffn_width(c: _Cfg, t: str, hidden: int) -> int:
    """Width of ONE dense MLP matrix."""
    name = c.name
    if t == "mpt":
        ratio = c.raw.get("expansion_ratio", 4)
        if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 < ratio < 1e4):
            raise GpuplanError(_("Model config {name!r}: expansion_ratio must be a positive number.").format(name=name),
                               hint=_(_UNCHANGED), field="expansion_ratio")
        return int(hidden * ratio)
    if t in PLAIN_DEFAULT_FFN:
        ffn = c.int(*_FFN_KEYS, default=4 * hidden)
    else:
        ffn = c.int(*_FFN_KEYS, required=False)
        if ffn is None:
            if not c.has("moe_intermediate_size"):
                raise GpuplanError(_("Model config {name!r} lacks intermediate_size.").format(name=name),
                                   hint=_(MIN_KEYS_HINT), field="intermediate_size")
            ffn = c.int("moe_intermediate_size")
    assert ffn is not None
    return ffn // 2 if t == "qwen" else ffn  # QWen v1: config intermediate_size is twice the width of w1/w2


def _kv_heads(c: _Cfg, t: str, heads: int) -> int:
    attn_cfg = c.raw.get("attn_config")
    new_falcon = t == "refinedweb" or c.bool("new_decoder_architecture", False)
    if t == "chatglm":
        kv = c.int("multi_query_group_num", default=heads) if c.bool("multi_query_attention", False) else heads
    elif c.bool("multi_query", False) and not new_falcon:
        kv = 1
    elif isinstance(attn_cfg, Mapping) and isinstance(attn_cfg.get("kv_n_heads"), int):
        kv = _Cfg(attn_cfg, c.name).int("kv_n_heads")
    else:
        kv = c.int("num_key_value_heads", "num_kv_heads", "n_head_kv", default=heads)
    assert kv is not None
    if kv == 0:
        raise GpuplanError(_("Model config {name!r}: key/value heads must be positive.").format(name=c.name),
                           hint=_(_UNCHANGED), field="num_key_value_heads")
    return kv


def _head_dim(c: _Cfg, hidden: int, heads: int) -> int:
    head_dim = c.int("head_dim", "kv_channels", "d_kv", required=False)
    if head_dim is None:
        if hidden % heads:
            raise GpuplanError(
                _("Model config {name!r}: hidden_size {hidden} is not a multiple of {heads} heads.").format(
                    name=c.name, hidden=hidden, heads=heads),
                hint=_("Add head_dim to the config."), field="head_dim",
            )
        head_dim = hidden // heads
    return head_dim


# The config key that switches every bias of the block (attention and MLP) on or off, per model_type.
_ALL_BIAS_KEY = {"falcon": "bias", "refinedwebmodel": "bias", "refinedweb": "bias", "gpt_neox": "attention_bias",
                 "starcoder2": "use_bias"}


def _biases(c: _Cfg, t: str, base: HfArch) -> tuple[bool, bool, bool, bool | None]:
    """(q/k/v bias, output-projection bias, MLP bias, norm bias)."""
    qkv, o, mlp, norm = base.qkv_bias, base.o_bias, base.mlp_bias, base.norm_bias
    if "attention_bias" in c.raw:
        qkv = c.bool("attention_bias", qkv)
        o = o if t in ("glm4", "qwen2", "qwen2_moe") else qkv  # GLM-4-0414: o_proj has no bias
    if "mlp_bias" in c.raw:
        mlp = c.bool("mlp_bias", mlp)
    if t in ("internlm", "internlm2"):  # one "bias" switch for q, k, v and o
        qkv = o = c.bool("bias", qkv)
    if t == "stablelm":
        qkv = c.bool("use_qkv_bias", False)
    if t == "chatglm":
        qkv = c.bool("add_qkv_bias", True)
        o = mlp = c.bool("add_bias_linear", False)
    if t in _ALL_BIAS_KEY:
        qkv = o = mlp = c.bool(_ALL_BIAS_KEY[t], t in ("gpt_neox", "starcoder2"))
    if t == "mpt":
        qkv = o = mlp = not c.bool("no_bias", True)
        norm = qkv
    if "norm_bias" in c.raw:  # ModernBERT
        norm = c.bool("norm_bias", bool(norm))
    return qkv, o, mlp, norm


def _position(c: _Cfg, t: str, base: HfArch) -> tuple[str, int | None, str | None]:
    """(position kind, rows of the learned position table or the context length, a note)."""
    position, note = base.position, None
    max_pos = c.int("max_position_embeddings", "n_positions", "seq_length", "max_seq_len",
                    "max_sequence_length", "model_max_length", required=False)
    attn_cfg = c.raw.get("attn_config")
    if t == "qwen":
        max_pos = c.int("seq_length", "max_position_embeddings", required=False)
    if t == "mpt":
        position = "alibi" if (isinstance(attn_cfg, Mapping) and attn_cfg.get("alibi") is True) else "learned"
    if t in _FALCON and c.bool("alibi", False):
        position = "alibi"
    if t == "baichuan" and not c.has("max_position_embeddings"):
        position = "alibi"  # Baichuan-13B / Baichuan2-13B use ALiBi and set only model_max_length
    if t == "bert" and c.str("position_embedding_type") not in ("", "absolute"):
        position = "relative"
    if t == "distilbert" and c.bool("sinusoidal_pos_embds", False):
        position = "rope"  # fixed sinusoids: no parameters
    if t == "deberta_v2" and c.bool("relative_attention", False) and not c.bool("position_biased_input", True):
        buckets = c.int("position_buckets", default=0) or c.int("max_relative_positions", default=0) or max_pos or 0
        max_pos = 2 * buckets  # DebertaV2Encoder.rel_embeddings: 2 x position_buckets rows of hidden_size
        note = _("{name}: DeBERTa's relative position embeddings ({rows} rows) are counted as a learned position "
                 "table").format(name=c.name, rows=max_pos)
    return position, max_pos, note


def _norms_per_layer(c: _Cfg, t: str, base: HfArch) -> int:
    if t in _FALCON:
        new = t == "refinedweb" or c.bool("new_decoder_architecture", False)
        return 2 if new or not c.bool("parallel_attn", True) else 1  # parallel block: one input LayerNorm
    return base.norms_per_layer


def _mla(c: _Cfg, t: str) -> MLASpec | None:
    if t not in ("deepseek_v2", "deepseek_v3", "kimi_k2") and not c.has("kv_lora_rank"):
        return None
    return MLASpec(
        kv_lora_rank=c.int("kv_lora_rank"),  # type: ignore[arg-type]
        q_lora_rank=c.int("q_lora_rank", default=0),  # type: ignore[arg-type]
        qk_rope_head_dim=c.int("qk_rope_head_dim", default=64),  # type: ignore[arg-type]
        qk_nope_head_dim=c.int("qk_nope_head_dim", default=128),  # type: ignore[arg-type]
        v_head_dim=c.int("v_head_dim", default=128),  # type: ignore[arg-type]
    )


# quantization_config.quant_method values that mean the publisher's own weights are stored in that
# format (DeepSeek-V3/R1, Kimi-K2: block-scaled FP8; gpt-oss: MXFP4 experts), not a third-party
# quantization of another checkpoint.
_NATIVE_FORMATS = {"fp8": "fp8", "mxfp4": "mxfp4"}


def _native_dtype(raw: Mapping[str, Any]) -> str | None:
    """The publisher's weight format when it is not 16-bit: a native quantization (``quantization_config``), or
    fp32 where the config says its weights are float32 (``torch_dtype`` / transformers 5's ``dtype``: bge-m3,
    snowflake-arctic-embed). A config that says nothing is read as 16-bit (the checkpoint's size is unknown)."""
    qc = raw.get("quantization_config")
    method = qc.get("quant_method") if isinstance(qc, Mapping) else None
    if isinstance(method, str) and method in _NATIVE_FORMATS:
        return _NATIVE_FORMATS[method]
    stated = raw.get("torch_dtype", raw.get("dtype"))
    return "fp32" if stated == "float32" else None


def _attention_kind(heads: int, kv: int, mla: MLASpec | None) -> str:
    if mla is not None:
        return "mla"
    if kv == 1 and heads > 1:
        return "mqa"
    return "gqa" if kv < heads else "mha"


def from_hf_config(cfg: Mapping[str, Any], name: str = "inline-config") -> ModelSpec:
    """Build a ModelSpec from the keys of a Hugging Face config.json (any keys accepted)."""
    if not isinstance(cfg, Mapping):
        raise GpuplanError(_("Model config {name!r} must be a mapping of config.json keys.").format(name=name), hint=_(MIN_KEYS_HINT))
    nonllm = _nonllm_builder(cfg)
    if nonllm is not None:
        return nonllm(cfg, name)
    flat, towers = _flatten_config(cfg)
    raw_type = flat.get("model_type")
    t = (raw_type if isinstance(raw_type, str) else "").lower().replace("-", "_")
    base, assumptions = _arch_for(t)
    if base.note:
        assumptions.append(_(base.note).format(name=name))
    c = _Cfg({**base.defaults, **flat}, name)
    layers = c.int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    hidden = c.int("hidden_size", "n_embd", "d_model", "n_embed", "dim")
    heads = c.int("num_attention_heads", "n_head", "num_heads", "n_heads")
    vocab = c.int("padded_vocab_size", "vocab_size")
    assert layers is not None and hidden is not None and heads is not None and vocab is not None
    if heads == 0 or layers == 0 or hidden == 0:
        raise GpuplanError(_("Model config {name!r}: layers, hidden size and heads must be positive.").format(name=name),
                           hint=_(MIN_KEYS_HINT))
    ffn = _ffn_width(c, t, hidden)
    kv = _kv_heads(c, t, heads)
    head_dim = _head_dim(c, hidden, heads)
    qkv_bias, o_bias, mlp_bias, norm_bias = _biases(c, t, base)
    position, max_pos, pos_note = _position(c, t, base)
    if pos_note:
        assumptions.append(pos_note)
    tower = tower_params(cfg, hidden) if (towers or base.multimodal) else None
    if tower is not None:
        assumptions.append(_("{name}: the vision tower and its projector ({params:.0f} M parameters, {kind}) are counted "
                             "in the weights; their compute per image where a served workload gives input.image_tokens "
                             "(else an image reaches the language model as prompt tokens only)").format(
            name=name, params=tower[0] / 1e6, kind=tower[1]))
    elif towers or base.multimodal:
        assumptions.append(_("{name}: the shape is the language model's; the vision/audio encoder beside it is not "
                             "counted").format(name=name))
    mla = _mla(c, t)
    linear = _linear_attention(c, t, layers)
    if mla is not None:
        head_dim, kv = mla.qk_nope_head_dim + mla.qk_rope_head_dim, heads
    moe = _moe_from_config(c, t, ffn)
    mlp = base.mlp
    if base.kind == "encoder-decoder":
        mlp = "gated" if (c.str("feed_forward_proj") or "relu").startswith("gated") else "plain"
    sliding = c.raw.get("sliding_window")
    enc_dec = base.kind == "encoder-decoder"
    spec = ModelSpec(
        id=name, family=base.family, kind=base.kind,
        arch="llama-moe" if moe is not None and base.arch == "llama" else base.arch,
        num_layers=layers, hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads,
        num_key_value_heads=kv, head_dim=head_dim, vocab_size=vocab,
        tie_word_embeddings=c.bool("tie_word_embeddings", base.tie), attention=_attention_kind(heads, kv, mla),
        mlp=mlp, norm=base.norm, position=position, qkv_bias=qkv_bias,
        max_position_embeddings=max_pos if position == "learned" or max_pos else None,
        moe=moe, mla=mla, linear_attention=linear, attn_output_gate=t == "qwen3_next", source="user config.json", o_bias=o_bias, mlp_bias=mlp_bias, norm_bias=norm_bias,
        qk_norm=base.qk_norm, attention_sinks=t == "gpt_oss", norms_per_layer=_norms_per_layer(c, t, base),
        position_offset=base.position_offset,
        type_vocab_size=(c.int("type_vocab_size", default=base.type_vocab_size) or 0) if base.kind == "encoder" else 0,
        pooler=base.pooler, embedding_norm=base.embedding_norm,
        num_decoder_layers=(c.int("num_decoder_layers", default=layers) or 0) if enc_dec else 0,
        relative_attention_num_buckets=(c.int("relative_attention_num_buckets", default=32 if enc_dec else 0) or 0)
        if enc_dec or t == "mpnet" else 0,
        sliding_window=sliding if isinstance(sliding, int) and not isinstance(sliding, bool)
        and c.bool("use_sliding_window", True) else None,
        native_dtype=_native_dtype(cfg), assumptions=tuple(assumptions),
        vision_params=float(tower[0]) if tower is not None else 0.0,
        vision_patches_per_token=(patches_per_token(cfg) or 0.0) if tower is not None else 0.0,
    )
    if position == "learned" and not spec.max_position_embeddings:
        raise GpuplanError(_("Model config {name!r} lacks max_position_embeddings (learned positions).").format(name=name),
                           hint=_(MIN_KEYS_HINT), field="max_position_embeddings")
    return validate_spec(spec)


def _nonllm_builder(cfg: Mapping[str, Any]):
    """The builder of a config that describes no language model (Whisper, a ViT), else None."""
    raw = cfg.get("model_type")
    if not isinstance(raw, str):
        return None
    from gpuplan.catalog.configs.nonllm_configs import NONLLM_BUILDERS

    return NONLLM_BUILDERS.get(raw.lower().replace("-", "_"))


def _linear_attention(c: _Cfg, t: str, layers: int) -> LinearAttentionSpec | None:
    """Qwen3-Next's Gated DeltaNet layers: every layer but each full_attention_interval-th (layer_types where the
    config lists them: "linear_attention" / "full_attention"), transformers Qwen3NextConfig."""
    if t != "qwen3_next":
        return None
    types = c.raw.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        linear = sum(1 for x in types if x == "linear_attention")
    else:
        interval = c.int("full_attention_interval", default=4) or 4
        linear = sum(1 for i in range(layers) if (i + 1) % interval != 0)
    if not linear:     # every layer full attention: an ordinary decoder
        return None
    return LinearAttentionSpec(
        layers=linear,
        key_heads=c.int("linear_num_key_heads", default=16),  # type: ignore[arg-type]
        value_heads=c.int("linear_num_value_heads", default=32),  # type: ignore[arg-type]
        key_head_dim=c.int("linear_key_head_dim", default=128),  # type: ignore[arg-type]
        value_head_dim=c.int("linear_value_head_dim", default=128),  # type: ignore[arg-type]
        conv_kernel=c.int("linear_conv_kernel_dim", default=4),  # type: ignore[arg-type]
    )


def _moe_from_config(c: _Cfg, t: str, ffn: int) -> MoESpec | None:
    experts = c.int("num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts", required=False)
    if not experts or (t.startswith("gemma4") and not c.bool("enable_moe_block", False)):
        return None
    top_k = c.int("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk", "moe_top_k",
                  "top_k_experts")
    assert top_k is not None
    width = c.int("moe_intermediate_size", default=ffn)
    shared = c.int("n_shared_experts", default=0) or 0
    shared_width = width
    if t == "qwen2_moe" or c.has("shared_expert_intermediate_size"):
        shared_width = c.int("shared_expert_intermediate_size", default=0) or 0
        shared = 1 if shared_width else 0
    if t.startswith("gemma4"):   # Gemma4TextDecoderLayer keeps its dense MLP and adds the expert block beside it
        shared, shared_width = 1, ffn
    return MoESpec(
        num_experts=experts,
        experts_per_token=top_k,
        moe_intermediate_size=width,  # type: ignore[arg-type]
        shared_experts=shared,
        shared_expert_intermediate_size=shared_width if shared else 0,  # type: ignore[arg-type]
        first_k_dense=c.int("first_k_dense_replace", default=0) or 0,
        moe_layer_freq=c.int("moe_layer_freq", "decoder_sparse_step", default=1) or 1,
        router_bias=t == "gpt_oss" or c.str("topk_method") == "noaux_tc" or c.bool("use_routing_bias", False),
        expert_bias=t == "gpt_oss",
        shared_expert_gate=t in ("qwen2_moe", "qwen3_next"),
    )


def load_config_file(path: str | os.PathLike) -> ModelSpec:
    """Read a Hugging Face config.json (or the config.json inside a folder) into a ModelSpec."""
    p = Path(os.path.expanduser(os.fspath(path)))
    pipeline = p if p.is_dir() and (p / "model_index.json").is_file() and not (p / "config.json").is_file() else (
        p.parent if p.name == "model_index.json" and p.is_file() else None)
    if pipeline is not None:  # a diffusers pipeline folder: its components' configs
        from gpuplan.catalog.nonllm.diffusers import load_pipeline_folder

        return load_pipeline_folder(pipeline)
    try:
        if p.is_dir():
            p = p / "config.json"
        if not p.exists():
            raise FileNotFoundError(p)
        text = read_text_bounded(p, "model config")
    except FileNotFoundError:
        raise GpuplanError(
            _("Model config not found: {p}.").format(p=p),
            hint=_("Give a bundled model name (see `gpuplan models`), a config.json path or a folder holding one "
                   "(or a diffusers pipeline folder with model_index.json)."),
            field="model",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GpuplanError(_("Cannot read model config {p}: {exc}.").format(p=p, exc=exc), hint=_("Check the path and permissions.")) from None
    cfg = load_json(text, origin=str(p), hint=_("Give the model's Hugging Face config.json unchanged."))
    if not isinstance(cfg, dict):
        raise GpuplanError(_("{p} does not hold a JSON object.").format(p=p), hint=_("A config.json is a JSON object {...}."))
    name = cfg.get("_name_or_path") or (p.parent.name if p.name == "config.json" else p.stem)
    return from_hf_config(cfg, name=str(name)[:200] or "config.json")
