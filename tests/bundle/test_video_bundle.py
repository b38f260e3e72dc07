"""The bundle of a video-diffusion plan runs the video pipeline the plan estimated (issue: video bundles).

Before: a Wan2.1 / CogVideoX / HunyuanVideo / LTX-Video plan wrote generate_images.py, which loads
StableDiffusionXLPipeline and writes PNGs, and its storage advice sized the output as 1024x1024 PNG images. Now the
bundle writes generate_videos.py: diffusers DiffusionPipeline of the plan's diffusers-format repository, called with
the estimate's frames, height, width and steps at the plan's batch, the plan's CPU offload, the component dtypes the
estimate counted, one process per GPU, one MP4 per prompt (export_to_video), resumable; imageio and imageio-ffmpeg
are pinned; a model id in another format is refused with one GpuplanError naming the -Diffusers repository.

The GPU libraries are replaced by recording fakes (torch, diffusers, imageio_ffmpeg) and nvidia-smi by a script
listing the node's GPUs: the script itself runs unchanged.
"""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.check import check_bundle
from gpuplan.errors import GpuplanError
from gpuplan.estimate.nonllm.video import video_shape
from gpuplan.plan.advice.node_env import environments
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

# 16 h: one A100 takes 11.5 h (up to 23.8 h at the high end of its range), so the plan spreads the job over 4 GPUs
WAN = {"name": "wan-videos", "model": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers", "task": "inference",
       "input": {"frames": 81, "height": 480, "width": 832, "steps": 50}, "dataset": {"items": 200},
       "constraints": {"deadline_hours": 16, "regions": ["cn-shanghai"], "billing": ["payg"]}}

FAKES = {
    "torch.py": '''
import contextlib
float32, float16, bfloat16 = "float32", "float16", "bfloat16"
class cuda:
    @staticmethod
    def is_available(): return True
class Generator:
    def __init__(self, device=None): self.device = device
    def manual_seed(self, s): return self
def autocast(device, dtype=None, enabled=True):
    import json, os
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps({"autocast": [device, dtype, enabled]}) + "\\n")
    return contextlib.nullcontext()
''',
    "imageio_ffmpeg.py": "",
    "diffusers/__init__.py": '''
import json, os
def log(**kw):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps({"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), **kw}) + "\\n")
class _Vae:
    def enable_tiling(self): log(call="enable_tiling")
    def decode(self, *a, **kw): return None
class _Out:
    def __init__(self, n, frames): self.frames = [[b"frame"] * frames for _ in range(n)]
class DiffusionPipeline:
    vae = _Vae()
    @classmethod
    def from_pretrained(cls, path, **kw):
        log(call="from_pretrained", path=path, **kw)
        return cls()
    def to(self, device):
        log(call="to", device=device)
        return self
    def enable_model_cpu_offload(self): log(call="enable_model_cpu_offload")
    def enable_sequential_cpu_offload(self): log(call="enable_sequential_cpu_offload")
    def __call__(self, prompt, generator=None, **kw):
        log(call="pipe", prompt=prompt, **kw)
        return _Out(len(prompt), kw["num_frames"])
''',
    "diffusers/utils.py": '''
from diffusers import log
def export_to_video(frames, path, fps=10):
    log(call="export", path=path, fps=fps, frames=len(frames))
    open(path, "wb").write(b"mp4")
    return path
''',
}


def _bundle(tmp: Path, workload: dict) -> tuple[Path, dict]:
    path, _info = write_plan_bundle(Workload.model_validate(workload), tmp / "b")
    return path, json.loads((path / "plan.json").read_text())


@pytest.fixture(scope="module")
def wan(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("wan"), WAN)


def _run(tmp: Path, bundle: Path, gpus: int, prompts: list[str], *extra: str) -> tuple[subprocess.CompletedProcess,
                                                                                           list[dict]]:
    fakes = tmp / "fakes"
    if not fakes.exists():
        for name, text in FAKES.items():
            (fakes / name).parent.mkdir(parents=True, exist_ok=True)
            (fakes / name).write_text(text)
        smi = fakes / "nvidia-smi"
        smi.write_text("#!/bin/sh\n" + "".join(f'echo "GPU {g}: NVIDIA A100 (UUID: GPU-{g})"\n' for g in range(gpus)))
        smi.chmod(0o755)
        model = tmp / "model"
        model.mkdir()
        (model / "model_index.json").write_text("{}")
        (tmp / "p.txt").write_text("\n".join(prompts) + "\n")
    log = tmp / "log.jsonl"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{fakes}:{os.environ['PATH']}", "PYTHONPATH": str(fakes), "FAKE_LOG": str(log)}
    cmd = [sys.executable, str(bundle / "generate_videos.py"), "--model", str(tmp / "model"), "--prompts",
           str(tmp / "p.txt"), "--out", str(tmp / "out"), *extra]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return run, [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def test_a_video_plan_writes_generate_videos_not_the_image_script(wan):
    path, data = wan
    names = {p.name for p in path.iterdir()}
    assert "generate_videos.py" in names and "generate_images.py" not in names and "serve_images.py" not in names
    text = (path / "generate_videos.py").read_text()
    assert 'MODEL = "Wan-AI/Wan2.1-T2V-1.3B-Diffusers"' in text and "export_to_video" in text
    pins = environments()["stacks"]["diffusers"]["video"]
    req = (path / "requirements-serve.txt").read_text()
    assert f"imageio=={pins['imageio']}" in req and f"imageio-ffmpeg=={pins['imageio-ffmpeg']}" in req
    docker = (path / "Dockerfile").read_text()
    assert "generate_videos.py" in docker and "generate_images.py" not in docker
    md = (path / "PLAN.md").read_text()
    assert "generate_images.py" not in md and "PNG" not in md
    assert "/opt/gpuplan/generate_videos.py --prompts /mnt/data/prompts.txt --out /mnt/data/videos/" in md
    assert data["plan"]["job"]["unit"] == "video"


def test_the_script_compiles_and_passes_ruff(wan, tmp_path):
    script = wan[0] / "generate_videos.py"
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    run = subprocess.run([ruff, "check", "--isolated", "--line-length", "120", "--select", "E,F,W,I,B,UP",
                          str(script)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_script_runs_what_the_plan_estimated_on_every_gpu_and_resumes(wan, tmp_path):
    path, data = wan
    plan = data["plan"]
    gpus = plan["gpus_total"] // plan["instance_count"]
    assert gpus == plan["parallel"]["dp"] >= 2               # the plan counts one pipeline copy per GPU
    shape = video_shape(resolve_model(WAN["model"]), WAN["input"])
    assert (shape.frames, shape.height, shape.width, shape.steps, shape.offload) == (81, 480, 832, 50, "none")
    prompts = [f'a "quoted" prompt {k}; $(rm -rf /)' for k in range(7)]
    run, log = _run(tmp_path, path, gpus, prompts)
    assert run.returncode == 0, run.stderr
    calls = [r for r in log if r.get("call") == "pipe"]
    assert sorted(p for r in calls for p in r["prompt"]) == sorted(prompts)          # every prompt once, verbatim
    assert {r["gpu"] for r in calls} == {str(g) for g in range(gpus)}                 # on every GPU
    for r in calls:
        assert (r["num_frames"], r["height"], r["width"], r["num_inference_steps"]) == (81, 480, 832, 50)
        assert "guidance_scale" not in r and len(r["prompt"]) <= plan["job"]["batch"]
    loads = [r for r in log if r.get("call") == "from_pretrained"]
    assert len(loads) == gpus and all(r["local_files_only"] for r in loads)
    # the dtypes the estimate counted: Wan's DiT and VAE in float32 (denoiser/vae_weight_bytes 4), the rest bf16,
    # the DiT under bf16 autocast and the VAE decode outside it
    assert loads[0]["torch_dtype"] == {"default": "bfloat16", "transformer": "float32", "vae": "float32"}
    assert ["cuda", "bfloat16", True] in [r["autocast"] for r in log if "autocast" in r]
    assert {r["call"] for r in log if "call" in r} == {"from_pretrained", "to", "pipe", "export"}   # no offload
    exports = [r for r in log if r.get("call") == "export"]
    assert {r["fps"] for r in exports} == {16} and {r["frames"] for r in exports} == {81}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"{k:06d}.mp4" for k in range(7)]
    again, log2 = _run(tmp_path, path, gpus, prompts)                                 # a rerun resumes: nothing left
    assert again.returncode == 0, again.stderr
    assert not [r for r in log2 if r.get("call") == "pipe"]


def test_the_plans_offload_and_batch_reach_the_script(tmp_path):
    w = {**WAN, "name": "wan-offload", "input": {**WAN["input"], "offload": "sequential"}, "batch_size": 2}
    path, data = _bundle(tmp_path, w)
    text = (path / "generate_videos.py").read_text()
    assert 'OFFLOAD = "sequential"' in text
    assert f"DEFAULT_BATCH = {data['plan']['job']['batch']}" in text
    run, log = _run(tmp_path, path, 1, ["a cat", "a dog", "a fox"], "--gpus", "1")
    assert run.returncode == 0, run.stderr
    calls = {r["call"] for r in log if "call" in r}
    assert "enable_sequential_cpu_offload" in calls and "to" not in calls


def test_dry_run_and_bad_arguments_fail_in_one_line(wan, tmp_path):
    script = wan[0] / "generate_videos.py"
    (tmp_path / "p.txt").write_text("a red bicycle\n\nan astronaut riding a horse\n")
    dry = subprocess.run([sys.executable, str(script), "--prompts", str(tmp_path / "p.txt"), "--dry-run"],
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and dry.stdout.startswith("2 prompt(s)") and "81 frames at 832x480" in dry.stdout
    real = subprocess.run([sys.executable, str(script), "--prompts", str(tmp_path / "p.txt"), "--device", "cpu",
                           "--out", str(tmp_path / "v")], capture_output=True, text=True, timeout=120)
    # no diffusers, imageio-ffmpeg or torch here: one line, no traceback
    assert real.returncode != 0 and "Traceback" not in real.stderr
    assert len(real.stderr.strip().splitlines()) == 1 and real.stderr.startswith("generate_videos.py:")
    for bad, says in ((["--frames", "80"], "1 + a multiple of 4"), (["--height", "470"], "multiples of 16")):
        run = subprocess.run([sys.executable, str(script), "--prompts", str(tmp_path / "p.txt"), *bad],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 2 and says in run.stderr


def test_a_model_id_not_in_diffusers_format_is_refused_with_the_diffusers_repo(tmp_path):
    w = {**WAN, "model": "Wan-AI/Wan2.1-T2V-1.3B"}          # Wan's own format: no model_index.json
    with pytest.raises(GpuplanError) as err:
        write_plan_bundle(Workload.model_validate(w), tmp_path / "b")
    assert "not a diffusers-format repository" in str(err.value)
    assert "Wan-AI/Wan2.1-T2V-1.3B-Diffusers" in (err.value.hint or "")
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_the_storage_advice_sizes_videos_not_png_images(wan):
    _path, data = wan
    storage = data["plan"]["storage"]
    per_video = 81 * 832 * 480 * 0.28 / 8                      # data/storage.yaml batch_data.videos: 1.13 MB
    assert storage["budget"]["output_bytes"] == pytest.approx(200 * per_video, rel=1e-6)   # before: 200 x 3 MiB PNG
    assert any("200 H.264 MP4 videos of 81 frames at 832x480" in n for n in storage["notes"])


def test_gpuplan_check_passes_on_the_video_bundle_and_reads_its_script(wan, tmp_path):
    report = check_bundle(wan[0])
    assert report.ok, [f.to_dict() for f in report.findings]
    # the weights check reads generate_videos.py: a copy that loads the hub instead of MODEL_DIR is a finding
    copy = tmp_path / "b"
    shutil.copytree(wan[0], copy)
    script = copy / "generate_videos.py"
    script.write_text(script.read_text().replace("MODEL_DIR", "HUB_ID"))
    found = check_bundle(copy).findings
    assert [(f.path, f.code) for f in found if f.path == "generate_videos.py"] == [("generate_videos.py",
                                                                                  "weights-local")]
