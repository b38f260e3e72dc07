"""Defaults of each Hugging Face config.json ``model_type`` (read from the transformers modeling code)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HfArch:
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


GPT_LIKE: dict[str, Any] = dict(mlp="plain", norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True)
HF_ARCHS: dict[str, HfArch] = {
    "llama": HfArch("llama", "llama"),
    "mistral": HfArch("llama", "mistral"),
    "mixtral": HfArch("mixtral", "mixtral"),
    "qwen2": HfArch("qwen2", "qwen2", qkv_bias=True),
    "qwen2_moe": HfArch("qwen2moe", "qwen2", qkv_bias=True),
    "qwen3": HfArch("qwen3", "qwen3", qk_norm=True),
    "qwen3_moe": HfArch("qwen3moe", "qwen3", qk_norm=True),
    "qwen": HfArch("qwen1", "qwen", qkv_bias=True),
    "chatglm": HfArch("chatglm", "glm", qkv_bias=True),
    "baichuan": HfArch("baichuan", "baichuan"),
    "yi": HfArch("llama", "yi"),
    "internlm2": HfArch("llama", "internlm"),
    "gemma": HfArch("llama", "gemma", tie=True),
    "gemma2": HfArch("llama", "gemma", tie=True),
    "phi3": HfArch("llama", "phi"),
    # Phi-1/1.5/2: parallel attention + GELU MLP from one LayerNorm, biases everywhere, lm_head bias
    "phi": HfArch("phi", "phi", **GPT_LIKE),
    # Phi-3.5-MoE: Mixtral-style experts with LayerNorm and biased attention projections
    "phimoe": HfArch("mixtral", "phi", norm="layernorm", qkv_bias=True, o_bias=True),
    "deepseek": HfArch("deepseek", "deepseek"),
    "deepseek_v2": HfArch("deepseekv2", "deepseek"),
    "deepseek_v3": HfArch("deepseekv3", "deepseek"),
    "gpt_oss": HfArch("gptoss", "gpt-oss", qkv_bias=True, o_bias=True),
    "nemotron": HfArch("nemotron", "nemotron", mlp="plain", norm="layernorm"),
    "bert": HfArch("bert", "bert", kind="encoder", position="learned", tie=True, embedding_norm=True, **GPT_LIKE),
    "gpt2": HfArch("gpt2", "gpt2", position="learned", tie=True, **GPT_LIKE),
    "gpt_bigcode": HfArch("bigcode", "starcoder", position="learned", tie=True, **GPT_LIKE),
    "gpt_neox": HfArch("gpt_neox", "gpt-neox", **GPT_LIKE),
    "opt": HfArch("opt", "opt", position="learned", tie=True, position_offset=2, **GPT_LIKE),
    "bloom": HfArch("bloom", "bloom", position="alibi", tie=True, embedding_norm=True, **GPT_LIKE),
    "mpt": HfArch("mpt", "mpt", mlp="plain", norm="layernorm", position="alibi", tie=True),
    "falcon": HfArch("falcon", "falcon", mlp="plain", norm="layernorm", tie=True),
    "t5": HfArch("t5", "t5", kind="encoder-decoder", position="relative", tie=True),
    "mt5": HfArch("t5", "t5", kind="encoder-decoder", position="relative"),
    "umt5": HfArch("t5", "t5", kind="encoder-decoder", position="relative"),
}
PLAIN_DEFAULT_FFN = {"gpt2", "gpt_bigcode", "bloom", "falcon", "mpt"}  # FFN width defaults to 4*hidden

MIN_KEYS_HINT = (
    "An inline model mapping needs config.json keys such as hidden_size, num_hidden_layers, "
    "num_attention_heads, intermediate_size and vocab_size - or use {params_b: N}."
)
