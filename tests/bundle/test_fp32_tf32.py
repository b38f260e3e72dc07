"""One rate for fp32 (issue 30, "one model for one figure"): the estimate times fp32 matmuls on the TF32 tensor cores
(estimate/clocks.peak_flops, 156 TFLOP/s on an A100 against 19.5 on its FP32 cores), so every launcher of an fp32 plan
on a TF32 GPU turns TF32 on; PyTorch's default (torch.backends.cuda.matmul.allow_tf32 = False) would run 8x slower
than the plan says. A GPU without TF32 (V100, T4) is timed at its FP32 rate and its launchers pass nothing."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gpuplan.estimate.core import estimate
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

LORA_FP32 = {"name": "lora-fp32", "model": "Qwen/Qwen2.5-0.5B-Instruct", "task": "lora", "precision": "fp32",
             "seq_len": 1024, "dataset": {"tokens": 1.0e7}, "constraints": {"regions": ["cn-hangzhou"], "billing": ["payg"]}}


def _bundle(tmp: Path, workload: dict) -> tuple[Path, dict]:
    path, _info = write_plan_bundle(Workload.model_validate(workload), tmp / "b")
    return path, json.loads((path / "plan.json").read_text())


def test_fp32_is_timed_at_the_tf32_rate_and_says_so():
    est = estimate({**LORA_FP32, "hardware": {"gpu": "A100-SXM4-80GB", "count": 1}})
    assert any("TF32 tensor cores (156 TFLOP/s" in a and "19.5 TFLOP/s" in a for a in est.assumptions)
    v100 = estimate({**LORA_FP32, "hardware": {"gpu": "V100-SXM2-32GB", "count": 1}})
    assert not any("TF32 tensor cores" in a for a in v100.assumptions)   # the V100 has none: its FP32 cores


def test_an_fp32_bundle_on_a_tf32_gpu_turns_tf32_on(tmp_path):
    path, doc = _bundle(tmp_path, LORA_FP32)
    from gpuplan.catalog.hardware.gpus import get_gpu

    assert get_gpu(doc["plan"]["gpu"]).tf32_dense_tflops    # the cheapest fp32 plan runs on a TF32 GPU (A10)
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in (path / "train.py").read_text()
    assert "allow_tf32(args)" in (path / "train.py").read_text()
    assert yaml.safe_load((path / "llamafactory.yaml").read_text()).get("tf32") is True
    assert "--tf32 true" in (path / "swift-sft.sh").read_text()


def test_a_bf16_bundle_leaves_tf32_alone(tmp_path):
    path, _doc = _bundle(tmp_path, {**LORA_FP32, "precision": "bf16"})
    assert "tf32" not in yaml.safe_load((path / "llamafactory.yaml").read_text())
    assert "--tf32" not in (path / "swift-sft.sh").read_text()


def test_a_whisper_job_transcribes_in_the_precision_its_plan_sized(tmp_path):
    """An fp32 Whisper plan counts 5.75 GiB of float32 weights (large-v3); transcribe.py ran float16 whatever the plan
    said. Now its GPU default is the plan's: float32 for fp32, float16 (faster-whisper's default) otherwise."""
    job = {"name": "whisper", "model": "openai/whisper-large-v3", "task": "inference", "dataset": {"audio_hours": 10},
           "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}
    fp32, _ = _bundle(tmp_path / "a", {**job, "precision": "fp32"})
    fp16, _ = _bundle(tmp_path / "b", {**job, "precision": "fp16"})
    assert 'args.compute_type or ("float32" if args.device == "cuda"' in (fp32 / "transcribe.py").read_text()
    assert 'args.compute_type or ("float16" if args.device == "cuda"' in (fp16 / "transcribe.py").read_text()


def test_an_image_job_generates_in_the_precision_its_plan_sized(tmp_path):
    """An fp32 SDXL plan counts 12.9 GiB of float32 weights; generate_images.py loaded float16 whatever the plan said."""
    job = {"name": "sdxl", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
           "dataset": {"items": 1000}, "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}
    fp32, _ = _bundle(tmp_path / "a", {**job, "precision": "fp32"})
    fp16, _ = _bundle(tmp_path / "b", {**job, "precision": "fp16"})
    assert 'dtype = torch.float32 if args.device == "cuda"' in (fp32 / "generate_images.py").read_text()
    assert 'dtype = torch.float16 if args.device == "cuda"' in (fp16 / "generate_images.py").read_text()


def test_an_fp32_image_job_runs_its_matmuls_at_the_rate_its_plan_timed(tmp_path):
    """generate_images.py (and serve_images.py, generate_videos.py) ran float32 pipelines with PyTorch's default, the
    FP32 cores, while the plan timed them at the TF32 rate: the scripts now turn TF32 on for a float32 pipeline on a
    compute-capability-8.0+ GPU, as train.py and embed.py do, and leave a 16-bit one alone."""
    job = {"name": "sdxl", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
           "dataset": {"items": 1000}, "precision": "fp32",
           "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}
    path, _ = _bundle(tmp_path, job)
    text = (path / "generate_images.py").read_text()
    switch = 'if dtype == torch.float32 and args.device == "cuda" and torch.cuda.get_device_capability()[0] >= 8:'
    assert switch in text
    after = text.split(switch, 1)[1].splitlines()
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in "\n".join(after[:4])
    assert text.index('dtype = torch.float32 if args.device == "cuda"') < text.index(switch)
    root = Path(__file__).resolve().parents[2] / "src" / "gpuplan" / "render" / "templates" / "bundle"
    for script in ("serve_images.py.j2", "generate_videos.py.j2"):
        assert "torch.backends.cuda.matmul.allow_tf32 = True" in (root / script).read_text()
    est = estimate({**job, "hardware": {"gpu": "A10", "count": 1}})
    assert any("the image and video scripts turn TF32 on" in a for a in est.assumptions)


def test_tf32_false_keeps_pytorchs_default_in_every_launcher(tmp_path):
    """A workload that says tf32: false is timed on the FP32 cores, so no launcher turns TF32 on."""
    path, _doc = _bundle(tmp_path / "a", {**LORA_FP32, "tf32": False})
    assert "tf32" not in yaml.safe_load((path / "llamafactory.yaml").read_text())
    assert "--tf32" not in (path / "swift-sft.sh").read_text()
    assert '"tf32": true' not in (path / "train.py").read_text().lower().replace("'", '"')
    job = {"name": "sdxl", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
           "dataset": {"items": 1000}, "precision": "fp32", "tf32": False,
           "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}
    img, _ = _bundle(tmp_path / "b", job)
    text = (img / "generate_images.py").read_text()
    assert "allow_tf32 = True" not in text
    assert "tf32: false in the workload: fp32 matmuls stay on the FP32 cores" in text
