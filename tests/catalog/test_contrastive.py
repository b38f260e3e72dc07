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


# OpenAI CLIP and Google SigLIP (model_type clip / siglip): the same builder, their own text towers and heads.
# Counts: transformers' model summaries of the checkpoints (openai/clip-vit-base-patch32 151,277,313; ViT-B/16
# 149,620,737; ViT-L/14 427,616,513) and the SigLIP model pages (base 203 M; so400m 878 M, its image tower 428 M).
EXACT = {
    "openai/clip-vit-base-patch32": 151_277_313,
    "openai/clip-vit-base-patch16": 149_620_737,
    "openai/clip-vit-large-patch14": 427_616_513,
}


@pytest.mark.parametrize("model_id", sorted(EXACT))
def test_openai_clip_counts_are_the_checkpoints(model_id):
    spec = resolve_model(model_id)
    assert spec.kind == "vision" and spec.arch == "clip"
    assert spec.params_total == EXACT[model_id]
    # CLIP pads every text to its 77 positions: the text tower runs at 77 tokens
    assert spec.profile.reference_input["text_tokens"] == 77


def test_clip_text_tower_is_the_one_stable_diffusion_ships():
    # the text tower without its projection is SD 1.5's CLIP-L text encoder, 123,060,480 parameters
    spec = resolve_model("clip-vit-l-14")
    assert spec.profile.components["text_encoder_params"] - 768 * 768 == 123_060_480


def test_the_336px_clip_has_577_image_tokens():
    spec = resolve_model("openai/clip-vit-large-patch14-336")
    assert spec.profile.reference_input["tokens"] == 577
    assert spec.params_total - EXACT["openai/clip-vit-large-patch14"] == (577 - 257) * 1024


@pytest.mark.parametrize(("model_id", "total_m", "image_m"), [("google/siglip-base-patch16-224", 203, None),
                                                              ("google/siglip-so400m-patch14-384", 878, 428)])
def test_siglip_counts_match_the_model_pages(model_id, total_m, image_m):
    spec = resolve_model(model_id)
    assert spec.arch == "siglip"
    assert round(spec.params_total / M) == total_m
    if image_m is not None:
        assert round(spec.profile.components["image_encoder_params"] / M) == image_m
    # SigLIP pads its texts to 64 positions; no class token: 729 patches at 384 px / 14
    assert spec.profile.reference_input["text_tokens"] == 64
    assert spec.profile.reference_input["tokens"] == (729 if "384" in model_id else 196)


def test_siglip_without_its_pooling_head_drops_the_head_and_its_flops():
    cfg = {"model_type": "siglip", "text_config": {}, "vision_config": {}}
    with_head = from_hf_config(cfg, "x")
    without = from_hf_config({**cfg, "vision_config": {"vision_use_head": False}}, "x")
    d, ffn = 768, 3072
    head = d + 3 * d * d + 3 * d + d * d + d + 2 * d + 2 * d * ffn + ffn + d
    assert with_head.params_total - without.params_total == head
    assert with_head.profile.forward_flops_per_sample > without.profile.forward_flops_per_sample


def test_a_clip_folder_is_a_dual_encoder_not_a_language_model(tmp_path):
    # before: a CLIP config.json was flattened to its text_config and read as a 0.19 B decoder with a KV cache
    import json

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "clip", "text_config": {}, "vision_config": {}}))
    spec = resolve_model(str(tmp_path))
    assert spec.kind == "vision" and spec.params_total == EXACT["openai/clip-vit-base-patch32"]
    out = estimate({"model": str(tmp_path), "task": "inference", "batch_size": 64,
                    "hardware": {"gpu": "A10", "count": 1}}).to_dict()
    assert out["memory"]["components"].get("kv_cache", 0) == 0
    assert out["performance"]["images_per_s"] > 0


def test_full_recomputation_keeps_each_layers_input_and_one_layer():
    # open_clip trains ViT-L/14 at 512 pairs per A100-40GB with --grad-checkpointing (JUBE's mmoclip benchmark,
    # set 15); the non-LLM share (35 %) put 52 GiB on the card. Korthikanti et al. 2022: full recomputation stores
    # each layer's input (2·tokens·d bytes) and recomputes one layer (34·tokens·d) at a time.
    spec = resolve_model("openai/clip-vit-large-patch14")
    kept = 2 * 257 * 1024 * 24 + 2 * 77 * 768 * 12 + 34 * 257 * 1024
    assert spec.profile.checkpointed_activation_bytes_per_sample == kept
    base = {"model": spec.id, "task": "full", "batch_size": 512, "precision": "fp16",
            "hardware": {"gpu": "A100-40GB", "count": 1}}
    on = estimate({**base, "grad_checkpointing": True}).to_dict()
    off = estimate({**base, "grad_checkpointing": False}).to_dict()
    assert on["memory"]["components"]["activations"] == pytest.approx(kept * 512)
    assert off["memory"]["components"]["activations"] == pytest.approx(spec.profile.activation_bytes_per_sample * 512)
    assert on["memory"]["per_gpu_bytes"] < 40 * 2**30 < off["memory"]["per_gpu_bytes"]
    # recomputation costs one more forward
    assert on["performance"]["step_time_s"] > off["performance"]["step_time_s"]
