"""Every family the rehearsal stands a tiny model in for (`render/bundle/context_model.SMOKE_MODEL_TYPES`) builds from
train.py's TINY widths and trains a step: a Qwen3-Next rehearsal of 2 layers had been all linear attention, which
transformers refuses ("get_mask_sizes can only be called on Attention layers")."""

from __future__ import annotations

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
