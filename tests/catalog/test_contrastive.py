"""Chinese-CLIP dual encoders (catalog/nonllm/contrastive.py): one sample is an image-text pair through both towers.

Pinned to OFA-Sys/Chinese-CLIP's README (model table: #Params (All) / (I) / (T); the ELEVATER example's
num_params 188,262,913 and num_visual_params 86,192,640 for CN-CLIP ViT-B/16) and to the ViT formula the ViT configs
use (ViT-B/16: 17.6 GMACs per 224 px image, Dosovitskiy et al. 2020)."""

from __future__ import annotations

import pytest

from gpuplan.catalog.configs.hf_config import from_hf_config
from gpuplan.catalog.library import resolve_model
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.i18n import localize

M = 1e6

# id -> (all, image tower with its projection, text tower with its projection), README rounding in millions
README = {
    "OFA-Sys/chinese-clip-vit-base-patch16": (188, 86, 102),
    "OFA-Sys/chinese-clip-vit-large-patch14": (406, 304, 102),
    "OFA-Sys/chinese-clip-vit-large-patch14-336px": (407, 304, 102),
    "OFA-Sys/chinese-clip-vit-huge-patch14": (958, 632, 326),
}


@pytest.mark.parametrize("model_id", sorted(README))
def test_both_towers_match_the_readme(model_id):
    spec = resolve_model(model_id)
    total, image, text = README[model_id]
    comp = spec.profile.components
    assert spec.kind == "vision" and spec.arch == "chinese_clip"
    assert spec.params_total == comp["image_encoder_params"] + comp["text_encoder_params"] + 1   # + logit_scale
    assert round(spec.params_total / M) == total
    assert round(comp["image_encoder_params"] / M) == image
    assert round(comp["text_encoder_params"] / M) == text
    # one pair: both towers' FLOPs, the image's at the config's resolution, the text at Chinese-CLIP's 52 tokens
    assert spec.profile.forward_flops_per_sample == pytest.approx(comp["image_encoder_flops"] + comp["text_encoder_flops"])
    assert spec.profile.reference_input["text_tokens"] == 52
    assert spec.source.startswith(f"https://huggingface.co/{model_id}/")


def test_vit_b16_counts_are_the_readme_example_and_its_image_tower_the_vit_formula():
    spec = resolve_model("OFA-Sys/chinese-clip-vit-base-patch16")
    assert spec.params_total == 188_262_913
    assert spec.profile.components["image_encoder_params"] == 86_192_640
    # ViT-B/16 at 224 px: 17.6 GMACs (2 FLOPs each) + the 768 x 512 visual projection
    assert spec.profile.components["image_encoder_flops"] == pytest.approx(2 * 17.6e9, rel=0.01)
    assert resolve_model("cn-clip-vit-b-16").id == spec.id


def test_the_336px_model_is_the_224px_one_with_more_position_rows_and_2_3x_the_image_flops():
    low = resolve_model("OFA-Sys/chinese-clip-vit-large-patch14")
    high = resolve_model("OFA-Sys/chinese-clip-vit-large-patch14-336px")
    assert high.params_total - low.params_total == (577 - 257) * 1024
    assert high.profile.reference_input["image_size"] == 336
    ratio = high.profile.components["image_encoder_flops"] / low.profile.components["image_encoder_flops"]
    assert 2.25 < ratio < 2.5     # 577 vs 257 tokens: linear layers 2.25x, attention 5x


MINIMAL = {"model_type": "chinese_clip", "projection_dim": 512,
           "text_config": {"model_type": "chinese_clip_text_model", "vocab_size": 21128},
           "vision_config": {"model_type": "chinese_clip_vision_model", "patch_size": 16}}


def test_keys_a_config_leaves_out_take_the_transformers_defaults():
    # configs saved by recent transformers drop the keys equal to ChineseCLIPTextConfig / VisionConfig defaults
    assert from_hf_config(MINIMAL, "x").params_total == 188_262_913


def test_the_older_config_dict_keys_win_as_in_transformers():
    cfg = {**MINIMAL, "text_config": {"vocab_size": 1}, "text_config_dict": {"vocab_size": 21128}}
    assert from_hf_config(cfg, "x").params_total == 188_262_913


@pytest.mark.parametrize("bad", [{"vision_config": {"patch_size": 0}}, {"text_config": {"hidden_size": "wide"}},
                                 {"vision_config": {"patch_size": 16, "image_size": 8}}, {"projection_dim": -1}])
def test_a_malformed_tower_is_one_clear_error(bad):
    with pytest.raises(GpuplanError):
        from_hf_config({**MINIMAL, **bad}, "x")


def test_fp16_contrastive_training_and_embedding_estimate_end_to_end():
    base = {"model": "OFA-Sys/chinese-clip-vit-huge-patch14", "hardware": {"gpu": "RTX 4090 D", "count": 8}}
    train = estimate({**base, "task": "full", "batch_size": 32, "precision": "fp16"}).to_dict()
    assert train["memory"]["per_gpu_bytes"] > 958e6 * 2      # at least the 16-bit weights of both towers
    assert train["performance"]["step_time_s"] > 0
    said = train.get("assumptions", [])
    assert any("52 tokens" in a for a in said)
    infer = estimate({**base, "task": "inference", "batch_size": 64}).to_dict()
    assert infer["performance"]["images_per_s"] > 0


def test_the_pair_assumption_reads_in_chinese():
    said = resolve_model("OFA-Sys/chinese-clip-vit-base-patch16").assumptions[0]
    zh = localize(said, "zh")
    assert zh != said and "52 个 token" in zh
