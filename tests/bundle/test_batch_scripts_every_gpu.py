"""The batch scripts use every GPU the plan counts (issue 29): a Whisper or SDXL job planned on a 4-GPU node counts
four copies of the model in its throughput (plan.parallel.dp = 4, job.items_per_s), so transcribe.py and
generate_images.py run one process per GPU (CUDA_VISIBLE_DEVICES), each with every n-th file or prompt, as embed.py
does. Before: one process on GPU 0, a quarter of the planned rate.

The GPU libraries are replaced by recording fakes (faster_whisper, ctranslate2, torch, diffusers) and nvidia-smi by a
script listing the node's GPUs: the scripts themselves run unchanged. Workloads: Whisper large-v3 over 1,000 h of
audio on ecs.gn7i-4x.8xlarge (4 x A10), SDXL 1024 px on the same type.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

FOUR_A10 = {"instance_type": "ecs.gn7i-4x.8xlarge"}
WHISPER = {"name": "whisper-4gpu", "model": "openai/whisper-large-v3", "task": "inference", "hardware": FOUR_A10,
           "dataset": {"audio_hours": 1000}, "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}
# SDXL at 1024 px on four L20: since the diffusion memory band is read from its own 9 measurements (x2.0 at the high
# end), an A10 no longer holds it with the search's headroom (22.5 GiB needed at the high end, 22.0 usable)
FOUR_L20 = {"instance_type": "ecs.gn8is-4x.16xlarge"}
SDXL = {"name": "sdxl-4gpu", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
        "hardware": FOUR_L20, "input": {"image_size": 1024, "steps": 30}, "dataset": {"items": 10000},
        "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}

FAKES = {
    "faster_whisper.py": '''
import json, os
class WhisperModel:
    def __init__(self, path, **kw):
        self.gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
class _Info:
    language, duration = "en", 1.0
class _Seg:
    start, end = 0.0, 1.0
    def __init__(self, text): self.text = text
class BatchedInferencePipeline:
    def __init__(self, model): self.model = model
    def transcribe(self, path, **kw):
        with open(os.environ["FAKE_LOG"], "a") as f:
            f.write(json.dumps({"gpu": self.model.gpu, "item": os.path.basename(path)}) + "\\n")
        return iter([_Seg("hello")]), _Info()
''',
    "ctranslate2.py": "def get_cuda_device_count():\n    return 1\n",
    "torch.py": '''
float16, float32 = "f16", "f32"
class cuda:
    @staticmethod
    def is_available(): return True
class Generator:
    def __init__(self, device=None): pass
    def manual_seed(self, s): return self
''',
    "diffusers.py": '''
import json, os
class _Img:
    def save(self, path): open(path, "wb").write(b"png")
class _Out:
    def __init__(self, n): self.images = [_Img() for _ in range(n)]
class DiffusionPipeline:
    @classmethod
    def from_pretrained(cls, *a, **kw): return cls()
    def to(self, device): return self
    def __call__(self, prompt, num_images_per_prompt=1, **kw):
        with open(os.environ["FAKE_LOG"], "a") as f:
            for p in prompt:
                f.write(json.dumps({"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "item": p}) + "\\n")
        return _Out(len(prompt) * num_images_per_prompt)
''',
}


def _env(tmp: Path, gpus: int) -> dict:
    fakes = tmp / "fakes"
    fakes.mkdir()
    for name, text in FAKES.items():
        (fakes / name).write_text(text)
    smi = fakes / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f'echo "GPU {g}: NVIDIA A10 (UUID: GPU-{g})"\n' for g in range(gpus)))
    smi.chmod(0o755)
    return {**os.environ, "PATH": f"{fakes}:{os.environ['PATH']}", "PYTHONPATH": str(fakes),
            "FAKE_LOG": str(tmp / "log.jsonl")}


def _plan(tmp: Path, workload: dict) -> tuple[Path, dict]:
    path, _info = write_plan_bundle(Workload.model_validate(workload), tmp / "b")
    return path, json.loads((path / "plan.json").read_text())["plan"]


def _log(tmp: Path) -> list[dict]:
    return [json.loads(ln) for ln in (tmp / "log.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("workload", [WHISPER, SDXL], ids=["whisper", "sdxl"])
def test_the_batch_script_runs_one_copy_per_gpu_the_plan_counts(workload, tmp_path):
    path, plan = _plan(tmp_path, workload)
    gpus = plan["gpus_per_instance"] if "gpus_per_instance" in plan else plan["gpus_total"] // plan["instance_count"]
    assert gpus == 4 and plan["parallel"]["dp"] == 4           # the plan counts four copies on the node
    env = _env(tmp_path, gpus)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (model_dir / "model_index.json").write_text("{}")
    out = tmp_path / "out"
    if workload is WHISPER:
        items = []
        for k in range(10):
            (tmp_path / f"a{k}.wav").write_bytes(b"RIFF")
            items.append(f"a{k}.wav")
        cmd = [sys.executable, str(path / "transcribe.py"), "--model", str(model_dir), "--out", str(out),
               *[str(tmp_path / a) for a in items]]
    else:
        items = [f"prompt {k}" for k in range(10)]
        (tmp_path / "p.txt").write_text("\n".join(items) + "\n")
        cmd = [sys.executable, str(path / "generate_images.py"), "--model", str(model_dir), "--prompts",
               str(tmp_path / "p.txt"), "--out", str(out)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    log = _log(tmp_path)
    assert sorted(r["item"] for r in log) == sorted(items)                 # every item once
    assert {r["gpu"] for r in log} == {str(g) for g in range(gpus)}         # on every GPU (before: GPU 0 only)
    assert len(list(out.iterdir())) == (2 * len(items) if workload is WHISPER else len(items))
    # a rerun finds every item done and does nothing again
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert len(_log(tmp_path)) == len(items)
