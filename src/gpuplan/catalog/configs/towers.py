"""Parameters of the vision tower beside a vision-language model's language model (LLaVA, Qwen-VL,
Qwen2-VL, Qwen2.5-VL, InternVL, Gemma 3, Phi-3.5-vision, Mistral 3 / Pixtral).

The counts follow the module layouts of the towers' reference code (transformers ``modeling_clip.py``,
``modeling_siglip.py``, ``modeling_qwen2_vl.py``, ``modeling_qwen2_5_vl.py``, ``modeling_pixtral.py``,
``modeling_llava.py``, ``modeling_gemma3.py``; Qwen-VL's ``visual.py`` and InternVL's
``modeling_intern_vit.py`` / ``modeling_internvl_chat.py``) and are checked against the model cards in
tests/catalog/test_named_models.py (LLaVA-1.5-7B 7.06 B, Qwen2-VL-7B 8.29 B, InternVL2-8B 8.08 B, ...).
The tower's weights count in memory and checkpoints; its compute per image counts where a served workload gives
``input.image_tokens`` (:func:`patches_per_token`, estimate/serving/inference.vision_flops).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


@dataclass(frozen=True)
class ViTLayout:
    """How one family of vision towers is built (per-layer structure and embeddings)."""

    norm_bias: bool = True          # LayerNorm (weight + bias) or RMSNorm (weight only)
    gated: bool = False             # SwiGLU MLP (3 matrices) or GELU MLP (2)
    linear_bias: bool = True        # biases on q/k/v/o and the MLP
    patch_bias: bool = False        # bias on the patch-embedding convolution
    cls_token: bool = False         # a class embedding (one more position)
    learned_pos: bool = True        # a learned position table (one row per patch)
    pre_norm: bool = False          # CLIP's pre_layrnorm
    post_norm: bool = True          # a final norm after the last layer
    layer_scale: bool = False       # InternViT ls1/ls2 (one vector each per layer)
    qk_norm: bool = False           # InternViT-6B per-head q/k norm (over the full width)
    temporal_patch: int = 1         # Qwen2-VL: 3-D patches of 2 frames
    defaults: tuple[tuple[str, Any], ...] = ()   # the config class's defaults for keys a config leaves out


# Vision ``model_type`` -> layout. Keys: the vision_config's model_type (or the tower's own name).
LAYOUTS: dict[str, ViTLayout] = {
    "clip_vision_model": ViTLayout(cls_token=True, pre_norm=True),
    "siglip_vision_model": ViTLayout(patch_bias=True),
    "qwen2_vl": ViTLayout(post_norm=False, learned_pos=False, temporal_patch=2,
                          defaults=(("depth", 32), ("embed_dim", 1280), ("mlp_ratio", 4), ("patch_size", 14),
                                    ("spatial_merge_size", 2), ("in_chans", 3))),
    "qwen2_5_vl": ViTLayout(norm_bias=False, gated=True, post_norm=False, learned_pos=False, temporal_patch=2,
                            defaults=(("depth", 32), ("hidden_size", 1280), ("intermediate_size", 3420),
                                      ("patch_size", 14), ("spatial_merge_size", 2), ("in_chans", 3))),
    "intern_vit_6b": ViTLayout(patch_bias=True, cls_token=True, post_norm=False, layer_scale=True),
    "pixtral": ViTLayout(norm_bias=False, gated=True, linear_bias=False, learned_pos=False, post_norm=False,
                         pre_norm=True),
}


def _int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    if default is not None:
        return default
    raise GpuplanError(_("The vision tower config lacks {key}.").format(key=keys[0]),
                       hint=_("Give the model's config.json unchanged (its vision_config block included)."),
                       field="model")


def vit_params(cfg: Mapping[str, Any], layout: ViTLayout) -> int:
    """Parameters of a ViT tower: patch embedding, positions, layers, norms (no projector)."""
    cfg = {**dict(layout.defaults), **cfg}
    d = _int(cfg, "hidden_size", "embed_dim", "width")  # Qwen2-VL passes embed_dim alone
    layers = _int(cfg, "num_hidden_layers", "depth", "layers")
    ratio = cfg.get("mlp_ratio")
    ffn = _int(cfg, "intermediate_size", default=int(d * float(ratio)) if isinstance(ratio, (int, float)) else 4 * d)
    patch = _int(cfg, "patch_size", "spatial_patch_size", default=14)
    channels = _int(cfg, "num_channels", "in_chans", "in_channels", default=3)
    norm = 2 * d if layout.norm_bias else d
    n = channels * layout.temporal_patch * patch * patch * d + (d if layout.patch_bias else 0)
    if layout.learned_pos:
        side = _int(cfg, "image_size", default=224) // patch
        n += (side * side + (1 if layout.cls_token else 0)) * d
    n += d if layout.cls_token else 0
    n += norm if layout.pre_norm else 0
    n += norm if layout.post_norm else 0
    mats = 3 if layout.gated else 2
    per_layer = 4 * d * d + mats * d * ffn + 2 * norm
    if layout.linear_bias:
        per_layer += 4 * d + (mats - 1) * ffn + d
    if layout.layer_scale:
        per_layer += 2 * d
    if layout.qk_norm:
        per_layer += 2 * norm
    return n + layers * per_layer


def _qwen_vl_v1(visual: Mapping[str, Any]) -> int:
    """Qwen-VL (v1) ``visual``: an OpenCLIP ViT-bigG/14 (learned 256-row positions, ln_pre, ln_post) and a
    one-layer cross-attention resampler of 256 queries into output_dim (Qwen-VL visual.py)."""
    d = _int(visual, "width")
    layers = _int(visual, "layers")
    ffn = int(d * float(visual.get("mlp_ratio", 4.0)))
    patch = _int(visual, "patch_size", default=14)
    out = _int(visual, "output_dim", default=4096)
    n = 3 * patch * patch * d + 256 * d + 4 * d                    # conv1 (no bias), positions, ln_pre, ln_post
    n += layers * (4 * d * d + 4 * d + 2 * d * ffn + ffn + d + 4 * d)
    queries = 256
    n += queries * out + d * out                                   # resampler queries, kv_proj (no bias)
    n += 4 * out * out + 4 * out                                   # nn.MultiheadAttention in/out projections
    n += 3 * 2 * out + out * out                                   # ln_q, ln_kv, ln_post, proj
    return n


def _projector(model_type: str, cfg: Mapping[str, Any], vision: Mapping[str, Any], v_width: int, text_h: int) -> int:
    """The layers that map vision features into the language model's width."""
    if model_type in ("qwen2_vl", "qwen2_5_vl"):
        merge = _int(vision, "spatial_merge_size", default=2)
        wide = v_width * merge * merge
        out = _int(vision, "out_hidden_size", "hidden_size" if model_type == "qwen2_vl" else "out_hidden_size",
                   default=text_h)
        norm = 2 * v_width if model_type == "qwen2_vl" else v_width   # ln_q: LayerNorm / RMSNorm
        return norm + wide * wide + wide + wide * out + out
    if model_type == "internvl_chat":
        ratio = float(cfg.get("downsample_ratio", 0.5))
        wide = int(v_width / (ratio * ratio))
        return 2 * wide + wide * text_h + text_h + text_h * text_h + text_h
    if model_type == "gemma3":
        return v_width * text_h + v_width                           # mm_input_projection + mm_soft_emb_norm
    if model_type == "phi3_v":
        wide = 4 * v_width                                         # 2x2 merged crops, image_dim_out x 4
        return wide * text_h + text_h + text_h * text_h + text_h + 2 * wide
    if model_type == "mistral3":
        merge = _int(cfg, "spatial_merge_size", default=2)
        bias = bool(cfg.get("multimodal_projector_bias", False))
        return v_width + v_width * merge * merge * v_width + v_width * text_h + text_h * text_h + \
            (2 * text_h if bias else 0)
    # LLaVA and its kin: a two-layer GELU MLP with biases (mlp2x_gelu)
    return v_width * text_h + text_h + text_h * text_h + text_h


# Towers a config names instead of describing (Phi-3-vision's img_processor): the named checkpoint's config.
NAMED_TOWERS: dict[str, dict[str, Any]] = {
    # openai/clip-vit-large-patch14-336 vision_config (hidden 1024, 24 layers, MLP 4096, patch 14, image 336)
    "openai/clip-vit-large-patch14-336": {"model_type": "clip_vision_model", "hidden_size": 1024,
                                          "intermediate_size": 4096, "num_hidden_layers": 24, "patch_size": 14,
                                          "image_size": 336},
}


def patches_per_token(cfg: Mapping[str, Any]) -> float | None:
    """Vision-tower patches behind one image token the language model reads (None where the config does not say):
    Qwen2/2.5/3-VL and Mistral 3 merge spatial_merge_size^2 patches (2 x 2), InternVL's pixel shuffle 1 /
    downsample_ratio^2 (0.5: 4), Gemma 3 pools its 896 px image's 64 x 64 patches to mm_tokens_per_image (256: 16),
    Qwen-VL's resampler 1,024 patches to 256 queries, LLaVA passes each CLIP patch through (1)."""
    model_type = str(cfg.get("model_type") or "").lower()
    vision = cfg.get("vision_config") if isinstance(cfg.get("vision_config"), Mapping) else {}
    assert isinstance(vision, Mapping)
    if model_type.startswith(("qwen2_vl", "qwen2_5_vl", "qwen3_vl")):
        return float(_int(vision, "spatial_merge_size", default=2) ** 2)
    if model_type == "mistral3":
        return float(_int(cfg, "spatial_merge_size", default=2) ** 2)
    if model_type == "internvl_chat":
        return 1.0 / float(cfg.get("downsample_ratio", 0.5)) ** 2
    if model_type == "gemma3":
        side = _int(vision, "image_size", default=896) // _int(vision, "patch_size", default=14)
        return side * side / float(_int(cfg, "mm_tokens_per_image", default=256))
    if model_type == "qwen" and isinstance(cfg.get("visual"), Mapping):
        return 4.0
    if model_type in ("llava", "llava_next"):
        return 1.0
    return None


def tower_params(cfg: Mapping[str, Any], text_hidden: int) -> tuple[int, str] | None:
    """(parameters of the vision tower and its projector, what was counted), or None when the config
    describes no vision tower (or one gpuplan cannot count: then the caller says it is left out). A
    malformed tower block is one GpuplanError naming it."""
    try:
        found = _tower_params(cfg, text_hidden)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        raise GpuplanError(_("The vision tower config has a value gpuplan cannot read."),
                           hint=_("Give the model's config.json unchanged (its vision_config block included)."),
                           field="model") from None
    if found is not None and not 0 < found[0] < 1e13:
        raise GpuplanError(_("The vision tower config gives {n:.3g} parameters, not a real tower.").format(n=found[0]),
                           hint=_("Give the model's config.json unchanged (its vision_config block included)."),
                           field="model")
    return found


def _tower_params(cfg: Mapping[str, Any], text_hidden: int) -> tuple[int, str] | None:
    model_type = str(cfg.get("model_type") or "").lower()
    visual = cfg.get("visual")
    if model_type == "qwen" and isinstance(visual, Mapping) and visual:
        return _qwen_vl_v1(visual), "Qwen-VL ViT-bigG + resampler"
    vision = cfg.get("vision_config")
    if not isinstance(vision, Mapping) or not vision:
        proc = cfg.get("img_processor")
        if isinstance(proc, Mapping) and isinstance(proc.get("model_name"), str):
            vision = NAMED_TOWERS.get(proc["model_name"])
        if not vision:
            return None
    v_type = str(vision.get("model_type") or "").lower()
    if model_type == "internvl_chat":
        v_type = "intern_vit_6b"
    layout = LAYOUTS.get(v_type) or LAYOUTS.get(model_type)
    if layout is None:
        if not any(k in vision for k in ("hidden_size", "embed_dim")):
            return None
        layout = LAYOUTS["clip_vision_model"]
    if v_type == "intern_vit_6b":
        rms = str(vision.get("norm_type", "layer_norm")) == "rms_norm"
        layout = ViTLayout(norm_bias=not rms, patch_bias=True, cls_token=True, post_norm=False, layer_scale=True,
                           qk_norm=bool(vision.get("qk_normalization")))
    merged = {**dict(layout.defaults), **vision}
    tower_cfg = dict(vision)
    if v_type == "qwen2_vl":  # Qwen2-VL: hidden_size is the merger's output width, embed_dim the tower's
        tower_cfg = {k: v for k, v in merged.items() if k != "hidden_size"}
    v_width = _int(tower_cfg if v_type == "qwen2_vl" else merged, "embed_dim" if v_type == "qwen2_vl" else "hidden_size",
                   "embed_dim", "width")
    n = vit_params(tower_cfg, layout) + _projector(model_type, cfg, merged, v_width, text_hidden)
    return n, v_type or model_type
