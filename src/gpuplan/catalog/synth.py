"""``model: {params_b: N}``: a Llama-style GQA shape synthesized from the nearest real model's widths."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpuplan.catalog.model_spec import LIMITS, MAX_PARAMS_B, ModelSpec, param_count_from_shape
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


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
    # an int is finite however large (math.isfinite would overflow converting 10**400); the range check below
    # compares it exactly
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float)
                                                                         and not math.isfinite(value)):
        raise GpuplanError(_("params_b must be a number of billions of parameters, not {value!r}.").format(value=value),
                           hint=_("E.g. model: {params_b: 7}."), field="model.params_b")
    if not MIN_PARAMS_B <= value <= MAX_PARAMS_B:
        raise GpuplanError(
            _("params_b = {value} is outside {lo}..{hi:g} (billions of parameters).").format(
                value=value if len(str(value)) <= 24 else f"{str(value)[:12]}...", lo=MIN_PARAMS_B, hi=MAX_PARAMS_B),
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
