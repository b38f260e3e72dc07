"""Vision models by name or config: timm architectures (``timm/resnet50.a1_in1k``, ``convnext_tiny``,
``vit_base_patch16_224``...) and Hugging Face ViT-family config.json files.

timm: the generated library (data/model_library.json, key ``timm``) holds one row per timm architecture,
copied from timm's own benchmark table (``results/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv``:
parameters in millions, GMACs and millions of activations per image at the default image size) plus the ops
one eager forward launches, counted by scripts/gen_model_library.py on the meta device. A name is the
architecture, optionally behind ``timm/`` (the Hugging Face organisation) and followed by a pretrained tag
(``.a1_in1k``); the tag changes the weights, not the shape (a 21k-class head is the exception, noted).

Training activation bytes per image come from the activation count (fvcore's convention: the output
elements of every convolution and linear layer): ``BYTES_PER_ACTIVATION`` bytes each, derived from the
curated ResNet-50 and ViT profiles (data/models.yaml) so that both paths give the same figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuplan.catalog.model_spec import ModelSpec, NonLLMProfile
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.catalog.configs.towers import LAYOUTS, ViTLayout, vit_params
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

TIMM_ORG = "timm"
TIMM_SOURCE = ("https://github.com/huggingface/pytorch-image-models/blob/aa4b5850c1543fa488abf260f18390eda46cf85d/"
               "results/benchmark-infer-amp-nchw-pt240-cu124-rtx3090.csv")

# Bytes kept for the backward pass per counted activation element (bf16), by block type. Derived, not fitted:
# ResNet-50's 47.0 MB (data/models.yaml: conv outputs saved about twice, BN input and ReLU output) over timm's
# 11.11 M activations = 4.23; ViT-B/16's 61.7 MB and ViT-L/16's 164.6 MB (Korthikanti et al. 2022, 34·s·h·L)
# over timm's 23.90 M and 63.52 M = 2.58 and 2.59.
BYTES_PER_ACTIVATION: dict[str, float] = {"conv": 4.23, "transformer": 2.58}
# timm architecture name prefixes whose blocks are attention + MLP (the rest are convolutional)
TRANSFORMER_PREFIXES = (
    "vit", "deit", "beit", "eva", "swin", "cait", "xcit", "levit", "crossvit", "volo", "pit_", "twins", "coat_",
    "coat", "tnt", "pvt", "mvit", "davit", "gcvit", "maxvit", "maxxvit", "coatnet", "hiera", "samvit", "flexivit",
    "mixer", "resmlp", "gmlp", "caformer", "convformer", "nest", "efficientformer", "fastvit", "focalnet",
    "tiny_vit", "sequencer", "eva02", "aimv2", "naflexvit", "vitamin", "mobilevit", "edgenext", "efficientvit",
    "sam2", "hgnet", "cvt", "poolformer", "inception_next", "rdnet", "starnet", "mambaout",
)
_RES_SUFFIX = re.compile(r"^(?P<stem>.+?)_(?P<res>\d{3,4})$")


def _block_type(arch: str) -> str:
    return "transformer" if arch.startswith(TRANSFORMER_PREFIXES) else "conv"


def _family(arch: str) -> str:
    m = re.match(r"[a-z]+(?:v\d)?", arch)
    return m.group(0) if m else arch


def parse_timm_name(name: str) -> tuple[str, str, bool] | None:
    """(architecture, pretrained tag, named with the timm/ organisation) of a timm-style name, or None."""
    s = str(name).strip()
    for prefix in ("hf-hub:", "hf_hub:", "hf:"):
        if s.lower().startswith(prefix):
            s = s[len(prefix):]
    org = s.lower().startswith(TIMM_ORG + "/")
    if org:
        s = s[len(TIMM_ORG) + 1:]
    if "/" in s or not s or len(s) > 120:
        return None
    arch, _sep, tag = s.partition(".")
    arch = arch.lower()
    if not re.fullmatch(r"[a-z0-9_]+", arch):
        return None
    return arch, tag, org


def timm_rows(table: Mapping[str, Any] | None) -> dict[str, Sequence[Any]]:
    """Architecture -> row of the generated library's timm table."""
    if not table:
        return {}
    cols = list(table.get("columns") or ())
    i = cols.index("model") if "model" in cols else 0
    return {str(r[i]).lower(): r for r in table.get("rows") or ()}


def timm_spec_from_row(row: Sequence[Any], columns: Sequence[str], *, name: str | None = None,
                       image_size: int | None = None, tag: str = "") -> ModelSpec:
    """A vision ModelSpec from one row of timm's benchmark table (optionally at another image size)."""
    r = dict(zip(columns, row, strict=False))
    arch = str(r["model"])
    ref = int(r["image_size"])
    size = int(image_size or ref)
    scale = (size / ref) ** 2
    kind = _block_type(arch)
    params = float(r["params_m"]) * 1e6
    flops = 2.0 * float(r["gmacs"]) * 1e9 * scale
    acts = float(r["macts_m"]) * 1e6 * BYTES_PER_ACTIVATION[kind] * scale
    kernels = float(r.get("kernels") or 0.0)
    notes = [_("timm {arch}: {params:.2f} M parameters, {gmacs:g} GMACs and {macts:g} M activations per image at "
               "{ref} px (timm's benchmark table); forward FLOPs = 2 x MACs; training activations = activations x "
               "{bpa} bytes ({kind} blocks, derived from the curated ResNet-50 / ViT profiles)").format(
        arch=arch, params=params / 1e6, gmacs=float(r["gmacs"]), macts=float(r["macts_m"]), ref=ref,
        bpa=BYTES_PER_ACTIVATION[kind], kind=kind)]
    if size != ref:
        notes.append(_("{arch} at {size} px: FLOPs and activations scaled by ({size}/{ref})^2 from timm's {ref} px "
                       "row").format(arch=arch, size=size, ref=ref))
    if ("21k" in tag or "22k" in tag) and "ft" not in tag:
        notes.append(_("the pretrained tag {tag!r} has an ImageNet-21k head (21,843 classes): a few million more "
                       "parameters than the 1,000-class count used here").format(tag=tag))
    profile = NonLLMProfile(
        reference_input={"image_size": size}, forward_flops_per_sample=flops, activation_bytes_per_sample=acts,
        scaling={"input": "image_size", "reference": size, "flops_exponent": 2, "activation_exponent": 2,
                 "rule": "convolution and patch-token FLOPs and activations grow with image_size^2"},
        sources=(TIMM_SOURCE,), kernels_per_forward=kernels,
    )
    spec = ModelSpec(
        id=name or f"{TIMM_ORG}/{arch}", family=_family(arch), kind="vision", arch=f"timm-{kind}",
        params_total=params, params_active=params, source=TIMM_SOURCE, profile=profile, notes="; ".join(notes),
        aliases=(arch,), unconfirmed=("profile.activation_bytes_per_sample", "profile.kernels_per_forward"),
    )
    return validate_spec(spec)


# Hugging Face transformers' ConvNeXt checkpoints (ConvNextForImageClassification, ConvNextV2ForImageClassification)
# hold Meta's ConvNeXt weights: the networks timm names convnext_<size> / convnextv2_<size> (Liu et al. 2022,
# arXiv:2201.03545, Table 1: the same depths and widths; the model cards: "ConvNeXT (large-sized model) trained on
# ImageNet-1k at resolution 224x224"). Ids: facebook/convnext-large-224, -224-22k (21k head), -224-22k-1k, -384,
# -384-22k-1k; facebook/convnextv2-tiny-1k-224, -22k-384.
_HF_CONVNEXT = re.compile(r"^facebook/convnext(?P<v2>v2)?-(?P<size>atto|femto|pico|nano|tiny|small|base|large|xlarge|"
                          r"huge)-(?:(?P<pre>1k|22k)-)?(?P<res>224|384|512)(?P<head>-22k-1k|-22k|-1k)?$")


def _hf_convnext(name: str) -> tuple[str, str, int] | None:
    """(timm architecture, pretrained tag, image size) of a Hugging Face ConvNeXt id, or None."""
    m = _HF_CONVNEXT.match(str(name).strip().lower())
    if m is None:
        return None
    arch = f"convnext{'v2' if m.group('v2') else ''}_{m.group('size')}"
    if m.group("head") == "-22k":                  # pre-trained on 22k and not fine-tuned: the 21k-class head
        tag = "fb_in22k"
    elif "22k" in f"{m.group('pre')}{m.group('head')}":
        tag = "fb_in22k_ft_in1k"
    else:
        tag = "fb_in1k"
    return arch, tag, int(m.group("res"))


def timm_spec(name: str, table: Mapping[str, Any] | None) -> ModelSpec | None:
    """The ModelSpec of a timm name (``timm/resnet50.a1_in1k``, ``convnext_tiny``, ``timm/vit_base_patch16_320``),
    or None when it names no timm architecture. An unknown resolution suffix after ``timm/`` scales the row of
    the same architecture at the nearest image size. A Hugging Face ConvNeXt id (``facebook/convnext-large-224``)
    is timm's row of the same network at the id's resolution."""
    hf = _hf_convnext(name)
    if hf is not None:
        arch, tag, res = hf
        row = timm_rows(table).get(arch)
        if row is None:
            return None
        spec = timm_spec_from_row(row, list((table or {}).get("columns") or ()), name=str(name).strip(),
                                  image_size=res, tag=tag)
        return validate_spec(replace(spec, aliases=(*spec.aliases, f"{TIMM_ORG}/{arch}.{tag}")))
    parsed = parse_timm_name(name)
    if parsed is None:
        return None
    arch, tag, org = parsed
    rows = timm_rows(table)
    cols = list((table or {}).get("columns") or ())
    row = rows.get(arch)
    size = None
    if row is None and org:
        m = _RES_SUFFIX.match(arch)
        if m:
            stem, want = m.group("stem"), int(m.group("res"))
            near = [(abs(int(dict(zip(cols, r, strict=False))["image_size"]) - want), a) for a, r in rows.items()
                    if _RES_SUFFIX.match(a) and a.rsplit("_", 1)[0] == stem]
            if near:
                row, size = rows[min(near)[1]], want
    if row is None:
        return None
    label = f"{TIMM_ORG}/{arch}" + (f".{tag}" if tag else "")
    return timm_spec_from_row(row, cols, name=label if (org or tag) else None, image_size=size, tag=tag)


# --------------------------------------------------------------------------------------------
# Hugging Face ViT-family config.json (ViTForImageClassification and kin)
# --------------------------------------------------------------------------------------------

VIT_CONFIG_LAYOUTS: dict[str, ViTLayout] = {
    "vit": ViTLayout(patch_bias=True, cls_token=True),
    "deit": ViTLayout(patch_bias=True, cls_token=True),
    "dinov2": ViTLayout(patch_bias=True, cls_token=True, layer_scale=True),
    "clip_vision_model": LAYOUTS["clip_vision_model"],
    "siglip_vision_model": LAYOUTS["siglip_vision_model"],
}


def vit_forward_flops(d: int, layers: int, ffn: int, patch: int, image: int, channels: int,
                      cls_token: bool) -> tuple[float, int]:
    """(forward FLOPs of one image through a ViT encoder, its tokens): 2·tokens·(4d² + 2·d·ffn) per layer +
    attention 4·tokens²·d per layer + the patch embedding (no head)."""
    patches = (image // patch) ** 2
    tokens = patches + (1 if cls_token else 0)
    flops = (2.0 * tokens * layers * (4 * d * d + 2 * d * ffn) + 4.0 * tokens**2 * d * layers
             + 2.0 * patches * channels * patch * patch * d)
    return flops, tokens


def recomputed_activation_bytes(towers: tuple[tuple[int, int, int], ...]) -> float:
    """Training activations (bytes, 16-bit) one sample keeps under full recomputation of every encoder layer, for
    towers of (tokens, width, layers): each layer's input, 2·tokens·d, and the one layer being recomputed, 34·tokens·d
    (Korthikanti et al. 2022, section 4.1: full recomputation stores 2sbh per layer)."""
    kept = sum(2.0 * tokens * d * layers for tokens, d, layers in towers)
    return kept + max(34.0 * tokens * d for tokens, d, _ in towers)


def vit_config_spec(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    """A vision ModelSpec from a ViT-family config.json: parameters from the layout, FLOPs per image
    2·tokens·(4d² + 2·d·ffn) per layer + attention 4·tokens²·d + the patch embedding, training activations
    34·tokens·d bytes per layer (Korthikanti et al. 2022, as the curated ViT profiles)."""
    t = str(cfg.get("model_type") or "vit").lower()
    layout = VIT_CONFIG_LAYOUTS.get(t, VIT_CONFIG_LAYOUTS["vit"])
    try:
        d = int(cfg["hidden_size"])
        layers = int(cfg["num_hidden_layers"])
        ffn = int(cfg.get("intermediate_size") or 4 * d)
        patch = int(cfg.get("patch_size") or 16)
        image = int(cfg.get("image_size") or 224)
        channels = int(cfg.get("num_channels") or 3)
    except (KeyError, TypeError, ValueError):
        raise GpuplanError(_("Model config {name!r} ({t}) lacks hidden_size, num_hidden_layers or image sizes.").format(
            name=name, t=t), hint=_("Give the model's config.json unchanged."), field="model") from None
    if min(d, layers, ffn, patch, image, channels) <= 0:
        raise GpuplanError(_("Model config {name!r} ({t}) lacks hidden_size, num_hidden_layers or image sizes.").format(
            name=name, t=t), hint=_("Give the model's config.json unchanged."), field="model")
    labels = cfg.get("id2label")
    classes = len(labels) if isinstance(labels, Mapping) and t in ("vit", "deit", "dinov2") else 0
    params = vit_params(cfg, layout) + (classes * d + classes if classes else 0)
    flops, tokens = vit_forward_flops(d, layers, ffn, patch, image, channels, layout.cls_token)
    flops += 2.0 * classes * d
    acts = 34.0 * tokens * d * layers
    profile = NonLLMProfile(
        reference_input={"image_size": image, "patch_size": patch, "tokens": tokens},
        forward_flops_per_sample=flops, activation_bytes_per_sample=acts,
        checkpointed_activation_bytes_per_sample=recomputed_activation_bytes(((tokens, d, layers),)),
        scaling={"input": "image_size", "reference": image, "flops_exponent": 2, "activation_exponent": 2,
                 "rule": f"tokens = (image_size/{patch})^2 + 1; FLOPs and activations grow with image_size^2"},
        sources=("https://arxiv.org/abs/2010.11929", "https://arxiv.org/abs/2205.05198"),
        # 13 eager ops per encoder layer (transformers ViTLayer) + embeddings, final norm, head
        kernels_per_forward=float(13 * layers + 6),
    )
    spec = ModelSpec(
        id=name, family=t, kind="vision", arch=t, num_layers=layers, hidden_size=d, intermediate_size=ffn,
        params_total=float(params), params_active=float(params), source="user config.json", profile=profile,
        unconfirmed=("profile.activation_bytes_per_sample",),
        notes=_("{t}: {layers} layers, hidden {d}, patch {patch}, {image} px; profile computed from the config").format(
            t=t, layers=layers, d=d, patch=patch, image=image),
    )
    return validate_spec(spec)
