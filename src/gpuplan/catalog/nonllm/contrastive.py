"""Dual-encoder contrastive image-text models: an image tower and a text tower, each with a projection (or head)
into a shared embedding space, trained together on image-text pairs. Three config families, one builder:

- ``model_type: chinese_clip`` (OFA-Sys/Chinese-CLIP; transformers ``modeling_chinese_clip.py``): the text tower is a
  BERT encoder without its pooler (``ChineseCLIPTextModel(text_config, add_pooling_layer=False)``: word, position and
  token-type embeddings, an embedding LayerNorm, post-LN layers with biases), the image tower CLIP's ViT, two bias-free
  projections and the logit scale. The text length is Chinese-CLIP's context length, 52 tokens
  (``cn_clip/clip/utils.py tokenize``). OFA-Sys/chinese-clip-vit-base-patch16 gives 188,262,913 parameters, the count
  Chinese-CLIP's README prints for it (``num_params`` of its ELEVATER example); ViT-L/14 406.2 M, ViT-L/14@336px
  406.6 M, ViT-H/14 957.6 M (README: 406 M, 407 M, 958 M).
- ``model_type: clip`` (OpenAI CLIP; ``modeling_clip.py`` CLIPModel): the text tower is CLIP's text transformer
  (token and position embeddings, pre-LN layers with biases, a final LayerNorm), the image tower the same ViT, two
  bias-free projections and the logit scale; the text runs at its context length, ``max_position_embeddings`` (77:
  CLIP pads every text to it). openai/clip-vit-base-patch32 gives 151,277,313 parameters, clip-vit-large-patch14
  427,616,513 (the transformers model summaries of both checkpoints).
- ``model_type: siglip`` (Google SigLIP; ``modeling_siglip.py`` SiglipModel): text tower as CLIP's plus a biased head
  (hidden -> projection_size, the last token's), the image tower a ViT with a biased patch convolution, no class
  token, a post-LayerNorm and an attention-pooling head (a probe, ``nn.MultiheadAttention``, a LayerNorm and the MLP),
  the logit scale and bias; the text runs at ``max_position_embeddings`` (64: SigLIP pads to it).
  google/siglip-base-patch16-224 gives 203.2 M, siglip-so400m-patch14-384 878.0 M (the model pages: 203 M, 878 M).

The profile describes one *pair*: parameters are both towers, their projections and the logit scale; forward FLOPs
and training activations are the image tower's at the config's image size plus the text tower's at its text length.
So a vision estimate (``batch_size`` = pairs, ``input.image_size``) times a contrastive training or embedding step
with both towers in it; the in-batch similarity logits (batch x batch) and the feature all-gather are small and not
counted. Keys a config leaves out take the transformers config classes' defaults; the older ``text_config_dict`` /
``vision_config_dict`` win over ``text_config`` / ``vision_config`` as they do in transformers.

FLOPs per pair as for the ViT-family configs (catalog/nonllm/vision.py): 2·tokens·(4d² + 2·d·ffn) per layer +
attention 4·tokens²·d per layer, the patch embedding, and the projections; training activations 34·tokens·d bytes
per layer for each tower (Korthikanti et al. 2022, eq. 1, memory-efficient attention).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplan.catalog.configs.towers import LAYOUTS, vit_params
from gpuplan.catalog.model_spec import ModelSpec, NonLLMProfile
from gpuplan.catalog.model_validate import config_int, validate_spec
from gpuplan.catalog.nonllm.vision import recomputed_activation_bytes, vit_forward_flops
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


@dataclass(frozen=True)
class DualEncoder:
    """One family of dual-encoder configs: its config classes' defaults and how its towers are built."""

    text_defaults: tuple[tuple[str, int], ...]
    vision_defaults: tuple[tuple[str, int], ...]
    projection_dim: int           # the top-level default (CLIP / Chinese-CLIP); SigLIP's head is the text width
    text_tokens: int | None       # a fixed text length; None: the text tower's max_position_embeddings
    bert_text: bool               # BERT text tower (token types, embedding LayerNorm) or CLIP's (final LayerNorm)
    siglip: bool                  # SigLIP heads (text head with bias, attention-pooling image head, logit bias)
    vision_layout: str
    sources: tuple[str, ...]


_CLIP_VISION = (("hidden_size", 768), ("intermediate_size", 3072), ("num_hidden_layers", 12),
                ("num_attention_heads", 12), ("num_channels", 3), ("image_size", 224), ("patch_size", 32))
FAMILIES: dict[str, DualEncoder] = {
    # transformers configuration_chinese_clip.py; the text length: cn_clip tokenize() and the training scripts'
    # default --context-length ([CLS] and [SEP] included)
    "chinese_clip": DualEncoder(
        text_defaults=(("vocab_size", 30522), ("hidden_size", 768), ("num_hidden_layers", 12),
                       ("num_attention_heads", 12), ("intermediate_size", 3072), ("max_position_embeddings", 512),
                       ("type_vocab_size", 2)),
        vision_defaults=_CLIP_VISION, projection_dim=512, text_tokens=52, bert_text=True, siglip=False,
        vision_layout="clip_vision_model",
        sources=("https://github.com/OFA-Sys/Chinese-CLIP",
                 "https://github.com/huggingface/transformers/blob/main/src/transformers/models/chinese_clip/modeling_chinese_clip.py",
                 "https://arxiv.org/abs/2205.05198")),
    # transformers configuration_clip.py (CLIPTextConfig / CLIPVisionConfig / CLIPConfig defaults)
    "clip": DualEncoder(
        text_defaults=(("vocab_size", 49408), ("hidden_size", 512), ("intermediate_size", 2048),
                       ("num_hidden_layers", 12), ("num_attention_heads", 8), ("max_position_embeddings", 77)),
        vision_defaults=_CLIP_VISION, projection_dim=512, text_tokens=None, bert_text=False, siglip=False,
        vision_layout="clip_vision_model",
        sources=("https://github.com/openai/CLIP",
                 "https://github.com/huggingface/transformers/blob/main/src/transformers/models/clip/modeling_clip.py",
                 "https://arxiv.org/abs/2103.00020")),
    # transformers configuration_siglip.py (SiglipTextConfig / SiglipVisionConfig defaults)
    "siglip": DualEncoder(
        text_defaults=(("vocab_size", 32000), ("hidden_size", 768), ("intermediate_size", 3072),
                       ("num_hidden_layers", 12), ("num_attention_heads", 12), ("max_position_embeddings", 64)),
        vision_defaults=(("hidden_size", 768), ("intermediate_size", 3072), ("num_hidden_layers", 12),
                         ("num_attention_heads", 12), ("num_channels", 3), ("image_size", 224), ("patch_size", 16)),
        projection_dim=0, text_tokens=None, bert_text=False, siglip=True, vision_layout="siglip_vision_model",
        sources=("https://github.com/google-research/big_vision",
                 "https://github.com/huggingface/transformers/blob/main/src/transformers/models/siglip/modeling_siglip.py",
                 "https://arxiv.org/abs/2303.15343")),
}


def _tower_config(cfg: Mapping[str, Any], key: str, defaults: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    block = cfg.get(f"{key}_dict")
    if not isinstance(block, Mapping) or not block:
        block = cfg.get(key)
    return {**dict(defaults), **(dict(block) if isinstance(block, Mapping) else {})}


def bert_tower_params(h: int, layers: int, ffn: int, vocab: int, positions: int, token_types: int) -> int:
    """A BERT encoder without its pooler: embeddings (word, position, token type, LayerNorm) and post-LN layers
    with biased q/k/v/o and MLP. CLIP's text transformer counts the same with no token types: its final LayerNorm
    takes the place of the embedding LayerNorm."""
    embeddings = (vocab + positions + token_types) * h + 2 * h
    per_layer = 4 * h * h + 4 * h + 2 * h * ffn + ffn + h + 2 * 2 * h
    return embeddings + layers * per_layer


def attention_pool_params(d: int, ffn: int) -> int:
    """SigLIP's image head (SiglipMultiheadAttentionPoolingHead): a probe, nn.MultiheadAttention (in and out
    projections with biases), a LayerNorm and the MLP."""
    return d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (2 * d * ffn + ffn + d)


def dual_encoder_spec(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    """A vision ModelSpec for one image-text pair of a CLIP / SigLIP / Chinese-CLIP config.json (both towers, both
    projections or heads)."""
    t = str(cfg.get("model_type") or "clip").lower().replace("-", "_")
    fam = FAMILIES.get(t, FAMILIES["clip"])
    text = _tower_config(cfg, "text_config", fam.text_defaults)
    vision = _tower_config(cfg, "vision_config", fam.vision_defaults)
    h, t_layers, t_ffn = (config_int(text, k, name) for k in ("hidden_size", "num_hidden_layers", "intermediate_size"))
    vocab, positions = config_int(text, "vocab_size", name), config_int(text, "max_position_embeddings", name)
    d, v_layers, v_ffn = (config_int(vision, k, name) for k in ("hidden_size", "num_hidden_layers", "intermediate_size"))
    patch, image, channels = (config_int(vision, k, name) for k in ("patch_size", "image_size", "num_channels"))
    if fam.siglip:
        proj = config_int({"projection_size": h, **text}, "projection_size", name)
    else:
        proj = config_int({"projection_dim": fam.projection_dim, **cfg}, "projection_dim", name)
    if image < patch:
        raise GpuplanError(_("Model config {name!r} ({t}) lacks hidden_size, num_hidden_layers or image sizes.").format(
            name=name, t=t), hint=_("Give the model's config.json unchanged."), field="model")
    tokens = fam.text_tokens or positions
    types = int(text.get("type_vocab_size") or 0) if fam.bert_text else 0
    text_params = bert_tower_params(h, t_layers, t_ffn, vocab, positions, types)
    image_params = vit_params(vision, LAYOUTS[fam.vision_layout])
    image_flops, image_tokens = vit_forward_flops(d, v_layers, v_ffn, patch, image, channels,
                                                  cls_token=LAYOUTS[fam.vision_layout].cls_token)
    text_flops = 2.0 * tokens * t_layers * (4 * h * h + 2 * h * t_ffn) + 4.0 * tokens**2 * h * t_layers
    if fam.siglip:
        head = vision.get("vision_use_head", True) is not False
        image_params += attention_pool_params(d, v_ffn) if head else 0
        image_flops += (4.0 * image_tokens * d * d + 2.0 * (2 * d * d + 2 * d * v_ffn)) if head else 0.0
        text_params += h * proj + proj                                                # text head (with bias)
        text_flops += 2.0 * h * proj
        scalars = 2                                                                   # logit_scale, logit_bias
    else:
        image_params += d * proj                                                      # visual_projection
        image_flops += 2.0 * d * proj
        text_params += h * proj                                                       # text_projection
        text_flops += 2.0 * h * proj
        scalars = 1                                                                   # logit_scale
    params = image_params + text_params + scalars
    acts = 34.0 * image_tokens * d * v_layers + 34.0 * tokens * h * t_layers
    profile = NonLLMProfile(
        reference_input={"image_size": image, "patch_size": patch, "tokens": image_tokens, "text_tokens": tokens},
        forward_flops_per_sample=image_flops + text_flops, activation_bytes_per_sample=acts,
        checkpointed_activation_bytes_per_sample=recomputed_activation_bytes(
            ((image_tokens, d, v_layers), (tokens, h, t_layers))),
        scaling={"input": "image_size", "reference": image, "flops_exponent": 2, "activation_exponent": 2,
                 "rule": f"image tokens = (image_size/{patch})^2"
                         f"{' + 1' if LAYOUTS[fam.vision_layout].cls_token else ''}; the pair's FLOPs and activations "
                         f"(the text tower's {tokens} tokens included) scale with image_size^2"},
        sources=fam.sources,
        components={"image_encoder_params": float(image_params), "text_encoder_params": float(text_params),
                    "image_encoder_flops": image_flops, "text_encoder_flops": text_flops},
        # 13 eager ops per encoder layer of either tower (as the ViT configs) + embeddings, norms, projections,
        # the normalisation of both embeddings and the logits
        kernels_per_forward=float(13 * (v_layers + t_layers) + 16),
    )
    spec = ModelSpec(
        id=name, family=t, kind="vision", arch=t, num_layers=v_layers, hidden_size=d,
        intermediate_size=v_ffn, params_total=float(params), params_active=float(params), source="user config.json",
        profile=profile, unconfirmed=("profile.activation_bytes_per_sample", "profile.kernels_per_forward"),
        notes=_("{t}: a dual encoder, one sample is an image-text pair: image tower {v_layers} layers, hidden {d}, "
                "patch {patch}, {image} px ({image_params:.1f} M parameters with its projection); text tower "
                "{t_layers} layers, hidden {h}, {tokens} tokens ({text_params:.1f} M parameters with its projection); "
                "both towers train; profile computed from the config").format(
            t=t, v_layers=v_layers, d=d, patch=patch, image=image, image_params=image_params / 1e6, t_layers=t_layers,
            h=h, tokens=tokens, text_params=text_params / 1e6),
        assumptions=(_("{name}: each sample is an image and a text of {tokens} tokens (the model's context length) "
                       "through both towers; the contrastive logits (batch x batch) are not counted, and "
                       "input.image_size scales the text tower's share of the FLOPs and activations too").format(
            name=name, tokens=tokens),),
    )
    return validate_spec(spec)
