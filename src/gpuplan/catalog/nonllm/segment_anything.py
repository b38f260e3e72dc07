"""Segment Anything (SAM, SAM 2, SAM 2.1) by its Hugging Face id or a SAM config.json.

A SAM model is an image encoder that runs once per image (almost all of its compute and memory) and a prompt
encoder and mask decoder that run once per prompt. The image encoders are timm architectures: timm ported SAM's
ViT-B/L/H encoders as ``samvit_{base,large,huge}_patch16`` (1024 px, windowed attention with global blocks) and
SAM 2's Hiera encoders as ``sam2_hiera_*``, so their parameters, FLOPs and activations come from the same timm row
(catalog/nonllm/vision.py) that ``timm/samvit_huge_patch16`` gives: one rule for one encoder. The parameters
the encoder does not hold are added from the published model sizes:

- SAM: "The prompt encoder and mask decoder have 4M parameters" (segment-anything.com FAQ; the FAQ also gives
  the ViT-H encoder's 632M, timm's row counts 637M with the neck).
- SAM 2 / 2.1: the README's "Size (M)" (38.9, 46, 80.8, 224.4) minus timm's encoder; the rest is the memory
  attention, memory encoder and mask decoder used when tracking video.

The per-prompt mask decoder is not timed: its FLOPs are a few per cent of the encoder's for tens of prompts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpuplan.catalog.model_spec import ModelSpec
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

SAM_SOURCE = "https://segment-anything.com/ (FAQ: image encoder 632M parameters, prompt encoder and mask decoder 4M)"
SAM2_SOURCE = ("https://github.com/facebookresearch/sam2/blob/05d9e57fb3945b10c861046c1e6749e2bfc258e3/README.md "
               "(Model Description: Size (M) of the SAM 2 and SAM 2.1 checkpoints)")
SAM_IMAGE_SIZE = 1024  # SAM and SAM 2 resize every image's long side to 1024 px
SAM_HEADS_PARAMS = 4.0e6  # prompt encoder + mask decoder (SAM FAQ)

# Hugging Face id -> (timm encoder architecture, the model's published size in parameters or None for SAM's
# encoder + 4M, the names the original repositories use; timm's own names stay the encoders')
SAM_MODELS: dict[str, tuple[str, float | None, tuple[str, ...]]] = {
    "facebook/sam-vit-base": ("samvit_base_patch16", None, ("sam-vit-base", "sam_vit_b", "sam_vit_b_01ec64")),
    "facebook/sam-vit-large": ("samvit_large_patch16", None, ("sam-vit-large", "sam_vit_l", "sam_vit_l_0b3195")),
    "facebook/sam-vit-huge": ("samvit_huge_patch16", None, ("sam-vit-huge", "sam_vit_h", "sam_vit_h_4b8939")),
    "facebook/sam2-hiera-tiny": ("sam2_hiera_tiny", 38.9e6, ("sam2-hiera-tiny", "sam2_hiera_t")),
    "facebook/sam2-hiera-small": ("sam2_hiera_small", 46.0e6,
                                  ("sam2-hiera-small", "sam2_hiera_s")),
    "facebook/sam2-hiera-base-plus": ("sam2_hiera_base_plus", 80.8e6,
                                      ("sam2-hiera-base-plus", "sam2_hiera_b+")),
    "facebook/sam2-hiera-large": ("sam2_hiera_large", 224.4e6,
                                  ("sam2-hiera-large", "sam2_hiera_l")),
    "facebook/sam2.1-hiera-tiny": ("sam2_hiera_tiny", 38.9e6, ("sam2.1-hiera-tiny", "sam2.1_hiera_tiny")),
    "facebook/sam2.1-hiera-small": ("sam2_hiera_small", 46.0e6, ("sam2.1-hiera-small", "sam2.1_hiera_small")),
    "facebook/sam2.1-hiera-base-plus": ("sam2_hiera_base_plus", 80.8e6,
                                        ("sam2.1-hiera-base-plus", "sam2.1_hiera_base_plus")),
    "facebook/sam2.1-hiera-large": ("sam2_hiera_large", 224.4e6, ("sam2.1-hiera-large", "sam2.1_hiera_large")),
}
# The original segment-anything image encoder's attention (ImageEncoderViT, Kirillov et al. 2023 §3 and Appendix A:
# 14 x 14 windows with four global blocks, 64 x 64 = 4,096 patch tokens at 1024 px): (heads, blocks, global
# blocks). Its Attention.forward materialises q @ k^T, adds the decomposed relative positions into a new tensor and
# takes its softmax (no fused kernel): with flash_attention false the estimate counts those scores
# (estimate/nonllm/nonllm.py). A window is 196 tokens; 64 x 64 pads to 70 x 70, 25 windows.
SAM_ATTENTION: dict[str, tuple[int, int, int]] = {
    "samvit_base_patch16": (12, 12, 4), "samvit_large_patch16": (16, 24, 4), "samvit_huge_patch16": (16, 32, 4),
}
SAM_TOKENS, SAM_WINDOW_TOKENS, SAM_WINDOWS = 4096, 196, 25

# SAM config.json (transformers SamModel): the vision tower's (hidden_size, num_hidden_layers) name its encoder
SAM_CONFIG_ENCODERS: dict[tuple[int, int], str] = {
    (768, 12): "facebook/sam-vit-base", (1024, 24): "facebook/sam-vit-large", (1280, 32): "facebook/sam-vit-huge",
}


def _index() -> dict[str, str]:
    names: dict[str, str] = {}
    for model_id, (_arch, _size, aliases) in SAM_MODELS.items():
        for name in (model_id, *aliases):
            names[name.lower()] = model_id
    return names


def sam_spec(name: str, table: Mapping[str, Any] | None) -> ModelSpec | None:
    """The ModelSpec of a Segment Anything id or alias (``facebook/sam-vit-huge``, ``sam_vit_b``,
    ``facebook/sam2.1-hiera-large``), or None when the name is not one."""
    model_id = _index().get(str(name).strip().lower().removesuffix(".pth").removesuffix(".pt"))
    if model_id is None:
        return None
    from gpuplan.catalog.nonllm.vision import timm_rows, timm_spec_from_row

    arch, size, aliases = SAM_MODELS[model_id]
    row = timm_rows(table).get(arch)
    if row is None:  # pragma: no cover - the shipped table holds every encoder (tested)
        return None
    cols = list((table or {}).get("columns") or ())
    encoder = timm_spec_from_row(row, cols, name=model_id, image_size=SAM_IMAGE_SIZE)
    heads = (size - encoder.params_total) if size is not None else SAM_HEADS_PARAMS
    total = encoder.params_total + heads
    source = SAM2_SOURCE if size is not None else SAM_SOURCE
    note = _("Segment Anything {id}: the image encoder is timm's {arch} at {px} px (runs once per image; its "
             "FLOPs and activations are the encoder's); {heads:.1f} M parameters more for the prompt encoder and "
             "mask decoder{video} ({source}); the per-prompt mask decoder is not timed").format(
        id=model_id, arch=arch, px=SAM_IMAGE_SIZE, heads=heads / 1e6, source=source,
        video=_(" and the video memory modules") if size is not None else "")
    profile = encoder.profile
    assert profile is not None   # a timm row always has a profile
    pipeline = dict(profile.pipeline or {})
    if arch in SAM_ATTENTION:
        n_heads, blocks, global_blocks = SAM_ATTENTION[arch]
        # [tokens per attention, attentions per image (windows), heads, blocks]: scores = heads x windows x tokens^2
        pipeline["eager_attention"] = [[SAM_TOKENS, 1, n_heads, global_blocks],
                                       [SAM_WINDOW_TOKENS, SAM_WINDOWS, n_heads, blocks - global_blocks]]
    spec = replace(encoder, family="sam2" if size is not None else "sam", arch="sam", params_total=total,
                   params_active=total, source=source, aliases=aliases,
                   notes=note + "; " + encoder.notes,
                   profile=replace(profile, sources=(*profile.sources, source), pipeline=pipeline))
    return validate_spec(spec)


def sam_specs(table: Mapping[str, Any] | None) -> tuple[ModelSpec, ...]:
    """Every Segment Anything model of the table, for listings."""
    return tuple(s for s in (sam_spec(m, table) for m in SAM_MODELS) if s is not None)


def sam_config_spec(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    """A SAM config.json (``model_type: sam``): the vision tower's width and depth name the encoder (ViT-B/L/H);
    a fine-tuned SAM (MedSAM...) keeps its base's shape."""
    from gpuplan.catalog.bundled import generated_raw

    raw = cfg.get("vision_config")
    vision: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    try:
        key = (int(vision.get("hidden_size") or 768), int(vision.get("num_hidden_layers") or 12))
    except (TypeError, ValueError):
        key = (0, 0)
    base = SAM_CONFIG_ENCODERS.get(key)
    spec = sam_spec(base, generated_raw().get("timm")) if base else None
    if spec is None:
        raise GpuplanError(
            _("SAM config {name!r} has a vision encoder of width {d} and depth {n}, none of SAM's ViT-B/L/H "
              "encoders.").format(name=name, d=key[0], n=key[1]),
            hint=_("Name the model whose encoder it keeps (facebook/sam-vit-base, -large or -huge), or give "
                   "{{params_b: N}} for a rough estimate."), field="model")
    return replace(spec, id=name, aliases=(), source="user config.json",
                   notes=_("{name}: SAM config with the {base} encoder").format(name=name, base=base)
                   + "; " + spec.notes)
