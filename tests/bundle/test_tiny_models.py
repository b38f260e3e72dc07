"""Every family the rehearsal stands a tiny model in for (`render/bundle/context_model.SMOKE_MODEL_TYPES`) builds from
train.py's TINY widths and trains a step: a Qwen3-Next rehearsal of 2 layers had been all linear attention, which
transformers refuses ("get_mask_sizes can only be called on Attention layers")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan.render.bundle.context_model import SMOKE_MODEL_TYPES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
TRAIN_PY = Path(__file__).resolve().parents[2] / "src" / "gpuplan" / "render" / "templates" / "bundle" / "train.py"


@pytest.mark.parametrize("model_type", sorted(set(SMOKE_MODEL_TYPES.values())))
def test_the_tiny_model_of_every_rehearsed_family_trains_a_step(model_type, tmp_path):
    out = subprocess.run([sys.executable, str(TRAIN_PY), "make-tiny-model", str(tmp_path), model_type, "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    ids = torch.randint(0, 256, (1, 16))
    loss = model(ids, labels=ids).loss
    loss.backward()
    assert torch.isfinite(loss)


def test_a_hybrid_training_bundle_installs_flash_linear_attention(tmp_path):
    """transformers (and Megatron's Gated DeltaNet) call fla's Triton kernels only when `fla` imports; without it
    they run a PyTorch loop several times slower than the rate the plan timed. A plain model's bundle does not
    install it, nor does a serving bundle (vLLM and SGLang ship their own kernels)."""
    from gpuplan.workload import Workload
    from gpuplan.write_bundle import write_plan_bundle

    from .env_matrix import MATRIX

    for name in ("lora-torchrun-hybrid", "full-megatron-hybrid"):
        assert "flash-linear-attention==0.6.0" in MATRIX[name]()["requirements.txt"], name
    for name in ("lora-torchrun", "full-megatron"):
        assert "flash-linear-attention" not in MATRIX[name]()["requirements.txt"], name
    w = Workload.model_validate({
        "name": "q3n", "model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "task": "lora", "seq_len": 4096,
        "batch_size": 1, "gradient_accumulation": 8, "lora": {"rank": 8},
        "dataset": {"samples": 5000, "tokens_per_sample": 4096}, "constraints": {"regions": ["cn-hangzhou"]}})
    path, _info = write_plan_bundle(w, tmp_path / "b")
    assert "flash-linear-attention==0.6.0" in (path / "requirements.txt").read_text()
    assert json.loads((path / "plan.json").read_text())["environment"]["requirements"]["flash-linear-attention"] \
        == "0.6.0"
    serve = Workload.model_validate({"name": "q3n-chat", "model": "Qwen/Qwen3-Next-80B-A3B-Instruct",
                                     "task": "inference", "prompt_tokens": 1000, "output_tokens": 300,
                                     "serving": {"requests_per_s": 1}, "constraints": {"regions": ["cn-hangzhou"]}})
    spath, _info = write_plan_bundle(serve, tmp_path / "s")
    assert "flash-linear-attention" not in (spath / "requirements-serve.txt").read_text()
