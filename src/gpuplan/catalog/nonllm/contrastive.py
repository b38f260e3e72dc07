"""Dual-encoder contrastive image-text models (``model_type: chinese_clip``): an image tower and a text tower, each
with a projection into a shared embedding space, trained together on image-text pairs.

The profile describes one *pair*: parameters are both towers, their projections and the logit scale; forward FLOPs
and training activations are the image tower's at the config's image size plus the text tower's at the text length
the model was trained with (Chinese-CLIP: 52 tokens, ``cn_clip/clip/utils.py tokenize``). So a vision estimate
(``batch_size`` = pairs, ``input.image_size``) times a contrastive training or embedding step with both towers in
it; the in-batch similarity logits (batch x batch) and the feature all-gather are small and not counted.

Counts follow transformers ``modeling_chinese_clip.py`` (ChineseCLIPModel): the text tower is a BERT encoder
without its pooler (``ChineseCLIPTextModel(text_config, add_pooling_layer=False)``: word, position and token-type
embeddings, an embedding LayerNorm, post-LN layers with biases), the image tower CLIP's ViT (class token, bias-free
patch convolution, learned positions, pre- and post-LayerNorm: ``towers.LAYOUTS["clip_vision_model"]``), two
bias-free projections and the logit scale. Keys a config leaves out take the defaults of ``ChineseCLIPTextConfig``
/ ``ChineseCLIPVisionConfig`` / ``ChineseCLIPConfig``; the older ``text_config_dict`` / ``vision_config_dict`` win
over ``text_config`` / ``vision_config`` as they do in transformers. OFA-Sys/chinese-clip-vit-base-patch16 gives
188,262,913 parameters, the count Chinese-CLIP's README prints for it (``num_params`` of its ELEVATER example);
ViT-L/14 406.2 M, ViT-L/14@336px 406.6 M, ViT-H/14 957.6 M (README: 406 M, 407 M, 958 M).

FLOPs per pair as for the ViT-family configs (catalog/nonllm/vision.py): 2·tokens·(4d² + 2·d·ffn) per layer +
attention 4·tokens²·d per layer, the patch embedding, and the projections; training activations 34·tokens·d bytes
per layer for each tower (Korthikanti et al. 2022, eq. 1, memory-efficient attention).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.catalog.configs.towers import LAYOUTS, vit_params
from gpuplan.catalog.model_spec import ModelSpec, NonLLMProfile
from gpuplan.catalog.model_validate import config_int, validate_spec
from gpuplan.catalog.nonllm.vision import vit_forward_flops
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

# transformers configuration_chinese_clip.py: the defaults of keys a config.json leaves out
TEXT_DEFAULTS: dict[str, int] = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
                                 "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512,
                                 "type_vocab_size": 2}
VISION_DEFAULTS: dict[str, int] = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                                   "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 32}
PROJECTION_DIM = 512
# the text length of one pair: Chinese-CLIP's context length (cn_clip tokenize() and the training scripts' default
# --context-length, [CLS] and [SEP] included)
TEXT_TOKENS = 52
SOURCES = ("https://github.com/OFA-Sys/Chinese-CLIP",
           "https://github.com/huggingface/transformers/blob/main/src/transformers/models/chinese_clip/modeling_chinese_clip.py",
           "https://arxiv.org/abs/2205.05198")


def _tower_config(cfg: Mapping[str, Any], key: str, defaults: Mapping[str, int]) -> dict[str, Any]:
    block = cfg.get(f"{key}_dict")
    if not isinstance(block, Mapping) or not block:
        block = cfg.get(key)
    return {**defaults, **(dict(block) if isinstance(block, Mapping) else {})}


def bert_tower_params(h: int, layers: int, ffn: int, vocab: int, positions: int, token_types: int) -> int:
    """A BERT encoder without its pooler: embeddings (word, position, token type, LayerNorm) and post-LN layers
    with biased q/k/v/o and MLP."""
    embeddings = (vocab + positions + token_types) * h + 2 * h
    per_layer = 4 * h * h + 4 * h + 2 * h * ffn + ffn + h + 2 * 2 * h
    return embeddings + layers * per_layer


def chinese_clip_spec(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    """A vision ModelSpec for one image-text pair of a Chinese-CLIP config.json (both towers, both projections)."""
    t = str(cfg.get("model_type") or "chinese_clip").lower()
    text = _tower_config(cfg, "text_config", TEXT_DEFAULTS)
    vision = _tower_config(cfg, "vision_config", VISION_DEFAULTS)
    proj = config_int({"projection_dim": PROJECTION_DIM, **cfg}, "projection_dim", name)
    h, t_layers, t_ffn = (config_int(text, k, name) for k in ("hidden_size", "num_hidden_layers", "intermediate_size"))
    vocab, positions = config_int(text, "vocab_size", name), config_int(text, "max_position_embeddings", name)
    types = int(text.get("type_vocab_size") or 0)
    d, v_layers, v_ffn = (config_int(vision, k, name) for k in ("hidden_size", "num_hidden_layers", "intermediate_size"))
    patch, image, channels = (config_int(vision, k, name) for k in ("patch_size", "image_size", "num_channels"))
    if image < patch:
        raise GpuplanError(_("Model config {name!r} ({t}) lacks hidden_size, num_hidden_layers or image sizes.").format(
            name=name, t=t), hint=_("Give the model's config.json unchanged."), field="model")
    tokens = TEXT_TOKENS
    image_params = vit_params(vision, LAYOUTS["clip_vision_model"]) + d * proj       # + visual_projection
    text_params = bert_tower_params(h, t_layers, t_ffn, vocab, positions, types) + h * proj   # + text_projection
    params = image_params + text_params + 1                                           # + logit_scale
    image_flops, image_tokens = vit_forward_flops(d, v_layers, v_ffn, patch, image, channels, cls_token=True)
    image_flops += 2.0 * d * proj
    text_flops = 2.0 * tokens * t_layers * (4 * h * h + 2 * h * t_ffn) + 4.0 * tokens**2 * h * t_layers + 2.0 * h * proj
    acts = 34.0 * image_tokens * d * v_layers + 34.0 * tokens * h * t_layers
    profile = NonLLMProfile(
        reference_input={"image_size": image, "patch_size": patch, "tokens": image_tokens, "text_tokens": tokens},
        forward_flops_per_sample=image_flops + text_flops, activation_bytes_per_sample=acts,
        scaling={"input": "image_size", "reference": image, "flops_exponent": 2, "activation_exponent": 2,
                 "rule": f"image tokens = (image_size/{patch})^2 + 1; the pair's FLOPs and activations (the text "
                         f"tower's {tokens} tokens included) scale with image_size^2"},
        sources=SOURCES,
        components={"image_encoder_params": float(image_params), "text_encoder_params": float(text_params),
                    "image_encoder_flops": image_flops, "text_encoder_flops": text_flops},
        # 13 eager ops per encoder layer of either tower (as the ViT configs) + embeddings, norms, projections,
        # the normalisation of both embeddings and the logits
        kernels_per_forward=float(13 * (v_layers + t_layers) + 16),
    )
    spec = ModelSpec(
        id=name, family="chinese_clip", kind="vision", arch="chinese_clip", num_layers=v_layers, hidden_size=d,
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
