"""Exact mode, step 1: a ModelSpec's shape as the Hugging Face config.json that rebuilds it (pure, no torch)."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

# Architectures (ModelSpec.arch) that can be rebuilt from their shape, and the transformers
# model_type used for each. Others raise a GpuplanError with a hint.
_ARCH_TO_MODEL_TYPE = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "mixtral": "mixtral",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "deepseekv3": "deepseek_v3",
    "deepseekv2": "deepseek_v3",
}
SUPPORTED_TEXT = ("Llama-style decoders (llama, mistral, yi, internlm2...), qwen2, qwen3, mixtral, "
                  "qwen2-MoE, qwen3-MoE and DeepSeek-V2/V3 (MLA)")


def hf_config_from_spec(spec: Any, *, min_positions: int = 0) -> tuple[dict[str, Any], list[str]]:
    """A Hugging Face config.json mapping that rebuilds ``spec``'s shape, and the assumptions made.

    Fields map back to the config keys ModelSpec was read from (catalog/models.py
    ``from_hf_config``): num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
    num_key_value_heads, head_dim, vocab_size, tie_word_embeddings, attention_bias, mlp_bias and the
    MoE/MLA keys of each model_type.
    """
    notes: list[str] = []
    if not getattr(spec, "is_llm", False):
        raise GpuplanError(
            _("Exact mode cannot trace {model!r}: it is a {kind} profile without a transformer shape.").format(model=spec.id, kind=spec.kind),
            hint=_("Drop --trace: the analytic estimate uses the model's FLOPs/activation profile."))
    if spec.kind != "decoder":
        raise GpuplanError(
            _("Exact mode traces decoder-only language models; {model!r} is an {kind} model.").format(model=spec.id, kind=spec.kind),
            hint=_("Drop --trace for the analytic estimate. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
    model_type = _ARCH_TO_MODEL_TYPE.get(spec.arch)
    if model_type is None or spec.mlp != "gated" or spec.norm != "rmsnorm" or spec.position != "rope":
        raise GpuplanError(
            _("Exact mode cannot rebuild {model!r} (architecture {arch}, {mlp} MLP, {norm}, {position} positions).").format(model=spec.id, arch=spec.arch, mlp=spec.mlp, norm=spec.norm, position=spec.position),
            hint=_("Drop --trace for the analytic estimate. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
    if spec.attention_sinks or spec.norms_per_layer != 2 or spec.embedding_norm or spec.has_norm_bias:
        raise GpuplanError(_("Exact mode cannot rebuild {model!r}: its layer layout is not Llama-style.").format(model=spec.id),
                           hint=_("Drop --trace for the analytic estimate. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
    if spec.family not in ("llama", "qwen2", "qwen3", "mixtral", "deepseek", "synthetic", ""):
        notes.append(_("traced as a transformers {model_type!r} model with {model}'s shapes (family {family}: same matrices, norms and embeddings)").format(model_type=model_type, model=spec.id, family=spec.family))
    max_pos = max(int(spec.max_position_embeddings or 0), int(min_positions), 2048)
    cfg: dict[str, Any] = {
        "model_type": model_type,
        "num_hidden_layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads,
        "vocab_size": spec.vocab_size,
        "tie_word_embeddings": bool(spec.tie_word_embeddings),
        "max_position_embeddings": max_pos,
        "hidden_act": "silu",
        "use_cache": False,
    }
    if spec.sliding_window:
        notes.append(_("sliding window {sliding_window} not applied: traced with full causal attention (same FLOP count under torch's non-causal convention, same activation memory with SDPA)").format(sliding_window=spec.sliding_window))
    moe = spec.moe
    if model_type in ("llama", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"):
        cfg["head_dim"] = spec.head_dim
    if model_type == "llama":
        if moe is not None:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: generic Llama-style MoE layouts are not a transformers model.").format(model=spec.id), hint=_("Drop --trace. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
        if spec.qkv_bias and not spec.o_bias:
            cfg["model_type"] = "qwen2"  # q/k/v biases without an o_proj bias: Qwen2's attention
            cfg["use_sliding_window"] = False
        elif spec.o_bias and not spec.qkv_bias:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: an o_proj bias without q/k/v biases.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
        else:
            cfg["attention_bias"] = bool(spec.qkv_bias)
        cfg["mlp_bias"] = bool(spec.mlp_bias)
    elif model_type == "qwen2":
        if not spec.qkv_bias:
            cfg["model_type"] = "llama"
            cfg["attention_bias"] = False
        cfg["use_sliding_window"] = False
        if spec.o_bias or spec.mlp_bias:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: Qwen2 has no o_proj/MLP biases.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
    elif model_type == "qwen3":
        cfg["attention_bias"] = bool(spec.qkv_bias)
        cfg["use_sliding_window"] = False
    elif model_type == "mixtral":
        assert moe is not None
        if moe.shared_experts or moe.first_k_dense or moe.moe_layer_freq != 1:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: Mixtral has no shared experts or dense layers.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
        cfg["intermediate_size"] = moe.moe_intermediate_size
        cfg.update(num_local_experts=moe.num_experts, num_experts_per_tok=moe.experts_per_token)
    elif model_type in ("qwen2_moe", "qwen3_moe"):
        assert moe is not None
        if moe.first_k_dense:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: leading dense layers are not a {model_type} option.").format(model=spec.id, model_type=model_type), hint=_("Drop --trace for the analytic estimate."))
        cfg.update(num_experts=moe.num_experts, num_experts_per_tok=moe.experts_per_token,
                   moe_intermediate_size=moe.moe_intermediate_size, decoder_sparse_step=moe.moe_layer_freq,
                   mlp_only_layers=[], use_sliding_window=False)
        if moe.moe_layer_freq != 1:
            notes.append(_("transformers places a MoE block on layers with (i+1) % decoder_sparse_step == 0; gpuplan's shape counts i % freq == 0 (same count when num_layers is a multiple)"))
        if model_type == "qwen2_moe":
            width = moe.shared_expert_intermediate_size * max(1, moe.shared_experts) if moe.shared_experts else 0
            cfg["shared_expert_intermediate_size"] = width
            if not width:
                notes.append(_("Qwen2-MoE without a shared expert: transformers still builds a zero-width one"))
            cfg["qkv_bias"] = bool(spec.qkv_bias)
        else:
            cfg["attention_bias"] = bool(spec.qkv_bias)
    elif model_type == "deepseek_v3":
        mla = spec.mla
        if mla is None or moe is None:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: DeepSeek-V2/V3 need both MLA and MoE keys.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
        if moe.moe_layer_freq != 1:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: moe_layer_freq {moe_layer_freq} is not a deepseek_v3 option.").format(model=spec.id, moe_layer_freq=moe.moe_layer_freq), hint=_("Drop --trace for the analytic estimate."))
        cfg.pop("num_key_value_heads")
        cfg.update(num_key_value_heads=spec.num_attention_heads, kv_lora_rank=mla.kv_lora_rank,
                   q_lora_rank=mla.q_lora_rank or None, qk_rope_head_dim=mla.qk_rope_head_dim,
                   qk_nope_head_dim=mla.qk_nope_head_dim, v_head_dim=mla.v_head_dim,
                   n_routed_experts=moe.num_experts, num_experts_per_tok=moe.experts_per_token,
                   moe_intermediate_size=moe.moe_intermediate_size, n_shared_experts=moe.shared_experts,
                   first_k_dense_replace=moe.first_k_dense, n_group=1, topk_group=1,
                   attention_bias=bool(spec.qkv_bias), rope_scaling=None)
        notes.append(_("DeepSeek router traced with one expert group (n_group 1): routing groups change neither FLOPs nor memory; its score-correction bias is a buffer in transformers, not a parameter"))
        if spec.arch == "deepseekv2":
            notes.append(_("DeepSeek-V2 traced with the deepseek_v3 module layout (same matrices)"))
    return cfg, notes
