"""The linear layers of a model shape (what LoRA adapts), with their module names per architecture."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

if TYPE_CHECKING:
    from gpuplan.catalog.model_spec import ModelSpec


@dataclass(frozen=True)
class _Linear:
    """One shape of linear layer of a model (LoRA targets)."""

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
    "minimaxm2": {"gate": "w1", "up": "w3", "down": "w2"},
    "glm4": {"gate_up": "gate_up_proj"},
    "gptj": {"o": "out_proj", "up": "fc_in", "down": "fc_out"},
    "starcoder2": {"up": "c_fc", "down": "c_proj"},
    "deberta": {"q": "query_proj", "k": "key_proj", "v": "value_proj", "o": "attention.output.dense",
                "up": "intermediate.dense", "down": "output.dense"},
    "modernbert": {"qkv": "Wqkv", "o": "attn.Wo", "gate_up": "Wi", "down": "mlp.Wo"},
}
# Hugging Face (Llama) module names a user may list, and the roles they stand for.
_HF_ROLE = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o",
            "gate_proj": "gate", "up_proj": "up", "down_proj": "down"}
_TARGET_ROLES = {
    "attn": frozenset({"q", "k", "v", "o", "q_a", "q_b", "kv_a", "kv_b", "lin_qkvz", "lin_ba", "lin_o"}),
    "qv": frozenset({"q", "v"}),
}


def linear_layers(spec: ModelSpec) -> list[_Linear]:
    """Every linear layer of the model (the LM head excluded), with how many there are."""
    names = {**_LLAMA_NAMES, **_ARCH_NAMES.get(spec.arch, {})}
    if spec.arch == "t5" and spec.mlp == "plain":
        names["up"] = "wi"
    h, H, kv, d = spec.hidden_size, spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim
    lin = spec.linear_attention
    attn_blocks = spec.num_layers + (2 * spec.num_decoder_layers if spec.kind == "encoder-decoder" else 0) \
        - (lin.layers if lin is not None else 0)
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
            add(names["q"], {"q"}, h, H * d * (2 if spec.attn_output_gate else 1), attn_blocks)
            add(names["k"], {"k"}, h, kv * d, attn_blocks)
            add(names["v"], {"v"}, h, kv * d, attn_blocks)
        add(names["o"], {"o"}, H * d, h, attn_blocks)
    if lin is not None:   # Qwen3-Next's Gated DeltaNet (transformers Qwen3NextGatedDeltaNet)
        qkvz = 2 * lin.key_heads * lin.key_head_dim + 2 * lin.value_heads * lin.value_head_dim
        add("in_proj_qkvz", {"lin_qkvz"}, h, qkvz, lin.layers, "linear_attn.")
        add("in_proj_ba", {"lin_ba"}, h, 2 * lin.value_heads, lin.layers, "linear_attn.")
        add("out_proj", {"lin_o"}, lin.value_heads * lin.value_head_dim, h, lin.layers, "linear_attn.")

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


def select_layers(spec: ModelSpec, layers: list[_Linear], targets: str | Iterable[str]) -> list[_Linear]:
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
