"""The workload's ``tf32: false`` (issue 30): fp32 as plain PyTorch runs it since 1.12, matmuls on the FP32 cores
(torch.backends.cuda.matmul.allow_tf32 = False), cuDNN convolutions still on TF32 (torch.backends.cudnn.allow_tf32 =
True). Unset, fp32 is timed on the TF32 tensor cores, the rate the bundle's scripts run it at.

Published figures: transformers docs/source/en/perf_torch_compile.md @0559c47 (torch 2.0.1, fp32 from_pretrained
defaults, batch 16, eager): ViT-B/16 on an A100 40.944 ms per batch (390.8 images/s), on a V100 52.209 ms (306.5);
ConvNeXt-L 82.258 ms on the A100 (194.5 images/s). The TF32 timing put the A100's ViT at 2,263 images/s, 5.8x the
measurement; strict FP32 puts it within a quarter, as the V100's (no TF32) already was."""

from __future__ import annotations

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.workload import parse_workload


def _run(model: str, gpu: str, tf32: bool | None, **extra) -> tuple[dict, list[str]]:
    w = {"model": model, "task": "inference", "precision": "fp32", "batch_size": 16, **extra,
         "hardware": {"gpu": gpu, "count": 1}}
    if tf32 is not None:
        w["tf32"] = tf32
    est = estimate(w)
    return est.performance, est.assumptions


def test_a_vit_with_strict_fp32_matmuls_runs_at_the_fp32_core_rate_of_the_published_table():
    strict, notes = _run("google/vit-base-patch16-224", "A100-40GB", False)
    tf32, _ = _run("google/vit-base-patch16-224", "A100-40GB", None)
    assert strict["images_per_s"] == pytest.approx(390.8, rel=0.3)
    assert tf32["images_per_s"] > 5 * strict["images_per_s"]          # 156 against 19.5 TFLOP/s, less the fixed costs
    assert any("tf32: false: fp32 matmuls on A100-SXM4-40GB's FP32 cores (19.5 TFLOP/s)" in n for n in notes)


def test_convnext_runs_its_linear_pointwise_layers_on_the_fp32_cores():
    """ConvNeXt's pointwise layers are nn.Linear (95 % of its FLOPs): strict FP32 slows it as a ViT."""
    strict, _ = _run("facebook/convnext-large-224", "A100-40GB", False)
    tf32, _ = _run("facebook/convnext-large-224", "A100-40GB", None)
    assert strict["images_per_s"] == pytest.approx(194.5, rel=0.3)
    assert tf32["images_per_s"] > 3 * strict["images_per_s"]


def test_a_convolutional_network_keeps_tf32_for_its_convolutions():
    strict, notes = _run("microsoft/resnet-50", "A100-40GB", False)
    tf32, _ = _run("microsoft/resnet-50", "A100-40GB", None)
    assert strict["images_per_s"] == pytest.approx(tf32["images_per_s"], rel=1e-6)
    assert any("cuDNN convolutions stay on TF32" in n for n in notes)


def test_a_gpu_without_tf32_is_the_same_either_way():
    strict, _ = _run("google/vit-base-patch16-224", "V100-SXM2-16GB", False)
    default, _ = _run("google/vit-base-patch16-224", "V100-SXM2-16GB", None)
    assert strict["images_per_s"] == pytest.approx(default["images_per_s"], rel=1e-9)
    assert strict["images_per_s"] == pytest.approx(306.5, rel=0.3)


def test_llm_training_and_serving_read_it_too():
    train = {"task": "full", "seq_len": 1024, "batch_size": 4}
    strict, notes = _run("Qwen/Qwen2.5-0.5B", "A100-80GB", False, **train)
    tf32, _ = _run("Qwen/Qwen2.5-0.5B", "A100-80GB", None, **train)
    assert strict["step_time_s"] > 2 * tf32["step_time_s"]
    assert any("FP32 cores (no TF32)" in n for n in notes)
    enc = {"batch_size": 32, "prompt_tokens": 512, "output_tokens": 0}
    strict, _ = _run("BAAI/bge-large-en-v1.5", "A100-80GB", False, **enc)
    tf32, _ = _run("BAAI/bge-large-en-v1.5", "A100-80GB", None, **enc)
    assert strict["latency_s"] > 4 * tf32["latency_s"]


def test_a_unet_whose_split_is_not_counted_is_timed_at_the_slow_end_and_says_so():
    strict, notes = _run("runwayml/stable-diffusion-v1-5", "A100-80GB", False, batch_size=1)
    tf32, _ = _run("runwayml/stable-diffusion-v1-5", "A100-80GB", None, batch_size=1)
    assert strict["latency_s"] > 2 * tf32["latency_s"]
    assert any("all of them are timed on the FP32 cores, the slow end" in n for n in notes)


@pytest.mark.parametrize("precision", [None, "bf16", "fp16"])
def test_tf32_without_fp32_is_refused(precision):
    w = {"model": "google/vit-base-patch16-224", "tf32": False}
    if precision:
        w["precision"] = precision
    with pytest.raises(GpuplanError, match="tf32 says where fp32 matmuls run, so it needs precision fp32"):
        parse_workload(w)
