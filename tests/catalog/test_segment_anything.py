"""Segment Anything (catalog/nonllm/segment_anything.py): the image encoder is timm's row, the prompt encoder and
mask decoder are added from the published sizes, and every door (id, alias, config.json, listing) gives it."""

from __future__ import annotations

import json

import pytest

from gpuplan.catalog.library import list_models, lookup, resolve_model
from gpuplan.catalog.nonllm.segment_anything import SAM_HEADS_PARAMS, SAM_MODELS
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate


def test_sam_encoder_is_timms_row_and_the_heads_are_four_million():
    sam, encoder = lookup("facebook/sam-vit-huge"), lookup("timm/samvit_huge_patch16")
    assert sam.params_total - encoder.params_total == pytest.approx(SAM_HEADS_PARAMS)
    # one rule for the encoder: the same FLOPs and activations per 1024 px image
    assert sam.profile.forward_flops_per_sample == encoder.profile.forward_flops_per_sample
    assert sam.profile.activation_bytes_per_sample == encoder.profile.activation_bytes_per_sample
    assert sam.profile.reference_input["image_size"] == 1024
    assert sam.arch == "sam" and sam.kind == "vision"
    assert "mask decoder" in sam.notes and "segment-anything.com" in sam.source


def test_sam2_runs_its_hiera_encoder_at_1024_px():
    # timm benchmarks sam2_hiera_tiny at 224 px; SAM 2 resizes every image to 1024: (1024/224)^2 the FLOPs
    sam2, row = lookup("facebook/sam2-hiera-tiny"), lookup("timm/sam2_hiera_tiny")
    assert sam2.profile.forward_flops_per_sample == pytest.approx(
        row.profile.forward_flops_per_sample * (1024 / 224) ** 2, rel=1e-9)
    assert sam2.params_total == pytest.approx(38.9e6)
    assert "facebookresearch/sam2" in sam2.source
    assert lookup("facebook/sam2.1-hiera-small").params_total == pytest.approx(46.0e6)


@pytest.mark.parametrize("alias", ["sam_vit_h", "SAM-ViT-Huge", "sam_vit_h_4b8939.pth", "facebook/SAM-VIT-HUGE"])
def test_sam_aliases_as_the_original_repository_names_them(alias):
    assert resolve_model(alias).id == "facebook/sam-vit-huge"


def test_every_sam_model_is_listed_once_and_not_as_a_timm_row():
    ids = [m.id for m in list_models("vision") if m.arch == "sam"]
    assert sorted(ids) == sorted(SAM_MODELS)


def test_a_sam_config_json_names_its_encoder(tmp_path):
    cfg = {"model_type": "sam", "vision_config": {"hidden_size": 768, "num_hidden_layers": 12}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = resolve_model(str(tmp_path))
    assert spec.params_total == pytest.approx(lookup("facebook/sam-vit-base").params_total)
    assert spec.source == "user config.json" and "sam-vit-base" in spec.notes


def test_a_sam_config_with_an_unknown_encoder_is_refused_with_a_hint(tmp_path):
    cfg = {"model_type": "sam", "vision_config": {"hidden_size": 512, "num_hidden_layers": 8}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(GpuplanError) as err:
        resolve_model(str(tmp_path))
    assert "512" in str(err.value) and "facebook/sam-vit-base" in err.value.hint


def test_sam_estimates_like_its_encoder_plus_the_heads_weights():
    work = {"task": "inference", "batch_size": 8, "precision": "bf16", "hardware": {"gpu": "A100-40GB"}}
    sam = estimate({"model": "facebook/sam-vit-huge", **work}).to_dict()
    enc = estimate({"model": "timm/samvit_huge_patch16", **work}).to_dict()
    assert sam["performance"]["images_per_s"] == pytest.approx(enc["performance"]["images_per_s"], rel=0.01)
    extra = sam["memory"]["components"]["weights"] - enc["memory"]["components"]["weights"]
    assert extra == pytest.approx(SAM_HEADS_PARAMS * 2, rel=1e-6)   # bf16: 2 bytes a parameter


def test_the_original_encoders_unfused_attention_holds_its_largest_scores_and_moves_them_all():
    """segment-anything's Attention.forward materialises q @ k^T for 4,096 tokens in the global blocks: with
    flash_attention false the largest block's scores and their softmax (2 tensors) are live, and every block's scores
    go through HBM (segment-anything-fast: SAM ViT-B, batch 8, bf16 on an A100-40GB peaked at 9.8 GiB)."""
    work = {"model": "facebook/sam-vit-base", "task": "inference", "batch_size": 8, "precision": "bf16",
            "hardware": {"gpu": "A100-40GB"}}
    fused = estimate({**work, "flash_attention": True})
    eager = estimate({**work, "flash_attention": False})
    scores = 12 * 4096**2   # heads x tokens^2 of one global block, per image
    extra = eager.memory.components["activations"] - fused.memory.components["activations"]
    assert extra == pytest.approx(2 * scores * 8 * 2)
    assert eager.performance["images_per_s"] < fused.performance["images_per_s"]
    assert 9.0 < eager.memory.peak_allocated_bytes / 2**30 < 11.0


def test_fp32_inference_holds_twice_the_live_activations():
    work = {"model": "timm/resnet50", "task": "inference", "batch_size": 64, "hardware": {"gpu": "A100"}}
    bf16 = estimate({**work, "precision": "bf16"}).memory.components["activations"]
    fp32 = estimate({**work, "precision": "fp32"}).memory.components["activations"]
    assert fp32 == pytest.approx(2 * bf16)
