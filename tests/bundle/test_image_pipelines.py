"""The image scripts of a diffusion plan run the pipeline the plan estimated, whichever it is.

generate_images.py and serve_images.py had loaded StableDiffusionXLPipeline for every image model: a FLUX, SD3,
PixArt or SD 1.5 plan wrote a script that could not load its own weights. They had also run 30 steps at 1024 px
whatever the plan timed (FLUX.1-schnell is timed at its 4 steps, SD 1.5 at 512 px), and float16 for every 16-bit
plan, where FLUX's and SD3's T5 encoder overflows. Now: DiffusionPipeline (the class the weights' model_index.json
names), the steps and pixels of estimate/nonllm/diffusion.image_sizes, and the plan's dtype (float16 for SDXL,
whose VAE the estimate decodes upcast to fp32, as diffusers does under float16)."""

from __future__ import annotations

import re

import pytest

from gpuplan import estimate
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle


def _bundle(tmp_path, workload: dict):
    path, _info = write_plan_bundle(Workload.model_validate(workload), tmp_path / "b")
    return path


def _const(text: str, name: str) -> str:
    return re.search(rf"^{name} = (.+?)(\s+#.*)?$", text, re.M).group(1)


@pytest.mark.parametrize("model,gpu,steps,size,dtype", [
    ("black-forest-labs/FLUX.1-schnell", "A100-SXM4-80GB", 4, 1024, "bfloat16"),
    ("stable-diffusion-v1-5/stable-diffusion-v1-5", "A10", 50, 512, "bfloat16"),
    ("stabilityai/stable-diffusion-xl-base-1.0", "L20", 50, 1024, "float16"),
    ("stable-diffusion-v1-5/stable-diffusion-v1-5", "T4", 50, 512, "float16"),   # no BF16 on a T4
])
def test_the_script_runs_what_the_plan_timed(tmp_path, model, gpu, steps, size, dtype):
    w = {"model": model, "task": "inference", "dataset": {"items": 1000}, "hardware": {"gpu": gpu}}
    e = estimate(w)
    note = next(a for a in e.assumptions if "denoising steps at" in a)
    assert f"{steps} denoising steps at {size} px" in note          # the estimate's defaults
    text = (_bundle(tmp_path, w) / "generate_images.py").read_text()
    assert "DiffusionPipeline.from_pretrained(" in text and "StableDiffusionXLPipeline" not in text
    assert _const(text, "DEFAULT_STEPS") == str(steps)
    assert _const(text, "DEFAULT_HEIGHT") == _const(text, "DEFAULT_WIDTH") == str(size)
    assert f"torch.{dtype} if args.device" in text
    compile(text, "generate_images.py", "exec")


def test_a_non_square_input_keeps_its_height_and_width(tmp_path):
    w = {"model": "black-forest-labs/FLUX.1-schnell", "task": "inference", "input": {"height": 768, "width": 1344},
         "serving": {"requests_per_s": 0.2}, "hardware": {"gpu": "A100-SXM4-80GB"}}
    path = _bundle(tmp_path, w)
    text = (path / "generate_images.py").read_text()
    assert (_const(text, "DEFAULT_HEIGHT"), _const(text, "DEFAULT_WIDTH")) == ("768", "1344")
    server = (path / "serve_images.py").read_text()
    assert _const(server, "DEFAULT_SIZE") == '"1344x768"' and "DiffusionPipeline.from_pretrained(" in server
    compile(server, "serve_images.py", "exec")
    md = (path / "PLAN.md").read_text()
    assert "| Cost per image |" in md and "Cost per million output tokens" not in md   # an image service's unit
