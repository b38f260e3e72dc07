"""Validation of a ModelSpec: enums, plausible ranges, and params_total / params_active filled from the shape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpuplan.catalog.model_spec import (
    ATTENTIONS,
    KINDS,
    LIMITS,
    MAX_PARAMS,
    MLPS,
    NORMS,
    POSITIONS,
    ModelSpec,
    active_param_count,
    param_count_from_shape,
)
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


def config_int(cfg: Mapping[str, Any], key: str, name: str, default: int | None = None) -> int:
    """A config.json value that must be a positive whole number (a width, a layer count, a size): one GpuplanError
    naming the key otherwise."""
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or value != int(value):
        raise GpuplanError(_("Model config {name!r}: {key} must be a positive whole number, not {value!r}.").format(
            name=name, key=key, value=value), hint=_("Give the model's config.json unchanged."), field=key)
    return int(value)


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
    tower = float(spec.vision_params or 0.0)
    if spec.params_total <= 0:
        spec = replace(spec, params_total=total + tower)
    if spec.params_active <= 0:
        spec = replace(spec, params_active=active_param_count(spec) + tower)
    return spec
