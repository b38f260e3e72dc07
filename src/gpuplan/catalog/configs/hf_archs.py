"""Defaults of each Hugging Face config.json ``model_type`` (read from the transformers modeling code).

A model_type missing here is read as a Llama-style decoder and the guess is recorded in the spec's
assumptions. ``defaults`` lists values the config class supplies when a config.json leaves a key out
(e.g. ``Gemma3TextConfig.vocab_size``); a config.json that states the key wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplan.i18n import N_


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
    norms_per_layer: int = 2  # Gemma-2/3, GLM-4-0414: 4 (pre and post norms); parallel blocks: 1
    norm_bias: bool | None = None  # None: a LayerNorm has a bias, an RMSNorm not
    pooler: bool = False  # BERT-style pooler (hidden x hidden + bias)
    type_vocab_size: int = 0  # token-type embeddings when the config does not say
    multimodal: bool = False  # a vision (or audio) tower beside the language model, not counted
    defaults: dict[str, Any] = field(default_factory=dict)
    note: str | None = None   # what of this architecture the uniform layer shape leaves out (a spec assumption)


_GEMMA4 = N_("{name}: Gemma 4's full-attention layers (512-wide heads, fewer KV heads, keys reused as values), its "
             "KV-shared layers (no cache of their own) and its per-layer embedding table (E2B / E4B) are not modelled: "
             "every layer is read as a sliding one (the config's head_dim and KV heads)")
GPT_LIKE: dict[str, Any] = dict(mlp="plain", norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True)
HF_ARCHS: dict[str, HfArch] = {
    "llama": HfArch("llama", "llama"),
    "mistral": HfArch("llama", "mistral"),
    "mixtral": HfArch("mixtral", "mixtral"),
    # DBRX: GLU experts (w1, v1, w2), LayerNorm without bias, RoPE, untied head (transformers modeling_dbrx.py)
    "dbrx": HfArch("mixtral", "dbrx", norm="layernorm", norm_bias=False),
    "qwen2": HfArch("qwen2", "qwen2", qkv_bias=True),
    "qwen2_moe": HfArch("qwen2moe", "qwen2", qkv_bias=True),
    "qwen3": HfArch("qwen3", "qwen3", qk_norm=True),
    "qwen3_moe": HfArch("qwen3moe", "qwen3", qk_norm=True),
    # hybrid: 3 of every 4 layers Gated DeltaNet (ModelSpec.linear_attention), the 4th gated full attention
    "qwen3_next": HfArch("qwen3next", "qwen3", qk_norm=True),
    # MiniMax-M2 / M2.5 / M2.7: GQA with q/k norms, 256 sigmoid-routed experts (w1/w3/w2 as Mixtral's), no shared expert
    "minimax_m2": HfArch("minimaxm2", "minimax", qk_norm=True),
    "qwen": HfArch("qwen1", "qwen", qkv_bias=True),
    "chatglm": HfArch("chatglm", "glm", qkv_bias=True),
    "baichuan": HfArch("baichuan", "baichuan"),
    "yi": HfArch("llama", "yi"),
    "internlm": HfArch("llama", "internlm"),  # InternLM v1: "bias" puts biases on q, k, v and o
    "internlm2": HfArch("llama", "internlm"),
    "internlm3": HfArch("llama", "internlm"),
    "gemma": HfArch("llama", "gemma", tie=True),
    # Gemma-2/3: input, post-attention, pre-feed-forward and post-feed-forward RMSNorm in every layer
    "gemma2": HfArch("llama", "gemma", tie=True, norms_per_layer=4),
    "gemma3_text": HfArch("llama", "gemma", tie=True, qk_norm=True, norms_per_layer=4,
                          defaults={"vocab_size": 262208, "head_dim": 256}),  # Gemma3TextConfig defaults
    "gemma3": HfArch("llama", "gemma", tie=True, qk_norm=True, norms_per_layer=4, multimodal=True,
                     defaults={"vocab_size": 262208, "head_dim": 256}),
    # Gemma 4 (transformers modeling_gemma4.py): Gemma 3's layer (q/k norms, four RMSNorms, tied head) with parts the
    # uniform shape leaves out, stated in the spec's assumptions; 26B-A4B keeps its dense MLP beside the experts
    # (read as a shared expert of intermediate_size: hf_config._moe_from_config)
    "gemma4_text": HfArch("llama", "gemma", tie=True, qk_norm=True, norms_per_layer=4, note=_GEMMA4),
    "gemma4": HfArch("llama", "gemma", tie=True, qk_norm=True, norms_per_layer=4, multimodal=True, note=_GEMMA4),
    "phi3": HfArch("llama", "phi"),
    "phi3_v": HfArch("llama", "phi", multimodal=True),
    "granite": HfArch("llama", "granite", tie=True),
    "minicpm": HfArch("llama", "minicpm"),
    "olmo2": HfArch("llama", "olmo", qk_norm=True),  # post-norms only (2 per layer), q/k RMSNorm
    "ministral3": HfArch("llama", "mistral"),
    "mistral3": HfArch("llama", "mistral", multimodal=True),
    "llava": HfArch("llama", "llava", multimodal=True),
    "qwen2_vl": HfArch("qwen2", "qwen2", qkv_bias=True, multimodal=True),
    "qwen2_5_vl": HfArch("qwen2", "qwen2", qkv_bias=True, multimodal=True),
    # Qwen3-VL: a Qwen3 (dense or MoE) language model under text_config (q/k RMSNorm, no biases)
    "qwen3_vl": HfArch("qwen3", "qwen3", qk_norm=True, multimodal=True),
    "qwen3_vl_text": HfArch("qwen3", "qwen3", qk_norm=True),
    "qwen3_vl_moe": HfArch("qwen3moe", "qwen3", qk_norm=True, multimodal=True),
    "qwen3_vl_moe_text": HfArch("qwen3moe", "qwen3", qk_norm=True),
    # StableLM: LayerNorm (with bias), SwiGLU, optional q/k/v biases (use_qkv_bias)
    "stablelm": HfArch("llama", "stablelm", norm="layernorm"),
    # Cohere (Command-R, Aya): one bias-free LayerNorm feeds attention and MLP in parallel; tied head
    "cohere": HfArch("llama", "cohere", norm="layernorm", norm_bias=False, tie=True, norms_per_layer=1),
    "cohere2": HfArch("llama", "cohere", norm="layernorm", norm_bias=False, tie=True, norms_per_layer=1),
    # GLM-4-0414: biased q/k/v, fused gate_up_proj, four RMSNorms per layer
    "glm4": HfArch("glm4", "glm", qkv_bias=True, norms_per_layer=4),
    # Phi-1/1.5/2: parallel attention + GELU MLP from one LayerNorm, biases everywhere, lm_head bias
    "phi": HfArch("phi", "phi", norms_per_layer=1, **GPT_LIKE),
    "phi_msft": HfArch("phi", "phi", norms_per_layer=1, **GPT_LIKE),  # Phi-1.5/2 before transformers' PhiConfig
    # Phi-3.5-MoE: Mixtral-style experts with LayerNorm and biased attention projections
    "phimoe": HfArch("mixtral", "phi", norm="layernorm", qkv_bias=True, o_bias=True),
    "deepseek": HfArch("deepseek", "deepseek"),
    "deepseek_v2": HfArch("deepseekv2", "deepseek"),
    "deepseek_v3": HfArch("deepseekv3", "deepseek"),
    "deepseek_v32": HfArch("deepseekv3", "deepseek"),  # DeepSeek-V3.2: V3 plus a small attention indexer
    "kimi_k2": HfArch("deepseekv3", "kimi"),  # Kimi-K2: the DeepSeek-V3 architecture (DeepseekV3ForCausalLM)
    "gpt_oss": HfArch("gptoss", "gpt-oss", qkv_bias=True, o_bias=True),
    "nemotron": HfArch("nemotron", "nemotron", mlp="plain", norm="layernorm"),
    "bert": HfArch("bert", "bert", kind="encoder", position="learned", tie=True, embedding_norm=True, pooler=True,
                   type_vocab_size=2, **GPT_LIKE),
    # RoBERTa / XLM-R (BGE-M3, bge-reranker, e5, multilingual): BERT layout; max_position_embeddings
    # already counts the padding offset (514 rows); one token type
    "roberta": HfArch("bert", "roberta", kind="encoder", position="learned", tie=True, embedding_norm=True,
                      pooler=True, type_vocab_size=1, **GPT_LIKE),
    "xlm_roberta": HfArch("bert", "roberta", kind="encoder", position="learned", tie=True, embedding_norm=True,
                          pooler=True, type_vocab_size=1, **GPT_LIKE),
    # MPNet (all-mpnet-base-v2): BERT layout, no token types, one relative position bias table
    "mpnet": HfArch("bert", "mpnet", kind="encoder", position="learned", tie=True, embedding_norm=True,
                    pooler=True, **GPT_LIKE),
    "distilbert": HfArch("bert", "bert", kind="encoder", position="learned", tie=True, embedding_norm=True,
                         **GPT_LIKE),
    # DeBERTa-v2/v3: no absolute positions; 2 x position_buckets relative embeddings (read as a table)
    "deberta_v2": HfArch("deberta", "deberta", kind="encoder", position="learned", tie=True, embedding_norm=True,
                         **GPT_LIKE),
    # ModernBERT: GeGLU MLP, bias-free LayerNorms and linears, RoPE
    "modernbert": HfArch("modernbert", "modernbert", kind="encoder", norm="layernorm", norm_bias=False, tie=True,
                         embedding_norm=True),
    "gpt2": HfArch("gpt2", "gpt2", position="learned", tie=True, **GPT_LIKE),
    "gpt_bigcode": HfArch("bigcode", "starcoder", position="learned", tie=True, **GPT_LIKE),
    "gpt_neox": HfArch("gpt_neox", "gpt-neox", **GPT_LIKE),
    # GPT-J: parallel attention + MLP from one LayerNorm; bias-free attention, biased MLP
    "gptj": HfArch("gptj", "gpt-j", mlp="plain", norm="layernorm", mlp_bias=True, norms_per_layer=1),
    # StarCoder2: LayerNorm, plain GELU MLP (c_fc, c_proj), biases everywhere (use_bias)
    "starcoder2": HfArch("starcoder2", "starcoder", tie=True, **GPT_LIKE),
    "opt": HfArch("opt", "opt", position="learned", tie=True, position_offset=2, **GPT_LIKE),
    "bloom": HfArch("bloom", "bloom", position="alibi", tie=True, embedding_norm=True, **GPT_LIKE),
    "mpt": HfArch("mpt", "mpt", mlp="plain", norm="layernorm", position="alibi", tie=True),
    "falcon": HfArch("falcon", "falcon", mlp="plain", norm="layernorm", tie=True),
    "refinedwebmodel": HfArch("falcon", "falcon", mlp="plain", norm="layernorm", tie=True),  # Falcon-7B's first config
    "refinedweb": HfArch("falcon", "falcon", mlp="plain", norm="layernorm", tie=True),  # Falcon-40B's first config
    "t5": HfArch("t5", "t5", kind="encoder-decoder", position="relative", tie=True),
    "mt5": HfArch("t5", "t5", kind="encoder-decoder", position="relative"),
    "umt5": HfArch("t5", "t5", kind="encoder-decoder", position="relative"),
}
# FFN width defaults to 4*hidden when the config leaves it out (or null)
PLAIN_DEFAULT_FFN = {"gpt2", "gpt_bigcode", "bloom", "falcon", "refinedwebmodel", "refinedweb", "mpt", "gptj", "phi_msft"}

MIN_KEYS_HINT = N_(
    "An inline model mapping needs config.json keys such as hidden_size, num_hidden_layers, "
    "num_attention_heads, intermediate_size and vocab_size - or use {params_b: N}."
)
