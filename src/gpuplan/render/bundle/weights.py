"""Which weights a bundle's nodes load and where from: the repo (a pre-quantized checkpoint when the plan's
quantization needs one, data/quantized_checkpoints.yaml), the folder on the data disk, and fetch-model.sh, the
one script that downloads them (OSS, ModelScope in mainland regions, Hugging Face). Shared by the serving,
image, infrastructure and monitoring files; imports none of them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files as _pkg_files

import yaml

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.safe import check_argument
from gpuplan.render.bundle.templates import render
from gpuplan.render.bundle.transfer import script_duration, transfers

LLM_KINDS = ("decoder", "encoder-decoder")
# Weight quantizations vLLM only serves from a pre-quantized checkpoint (no on-the-fly AWQ/GPTQ).
NEEDS_CHECKPOINT = ("awq", "gptq-int4", "gptq-int8", "int4", "int8")
# Repo-name fragments that mark a checkpoint as already quantized.
QUANT_MARKERS = ("-awq", "-gptq", "-fp8", "-int4", "-int8", "-w4a16", "-w8a8", "-nf4", "-bnb")
MODELSCOPE_PIN = "modelscope==1.40.2"


@dataclass(frozen=True)
class Checkpoint:
    """What serve.sh loads: the repo (None = the user must name one) and why."""

    repo: str | None
    source: str | None
    quantized_from: str | None  # the base repo when the table replaced it


@functools.cache
def _table() -> tuple[dict, ...]:
    text = (_pkg_files("gpuplan") / "data" / "quantized_checkpoints.yaml").read_text(encoding="utf-8")
    return tuple(yaml.safe_load(text).get("checkpoints") or [])


def quantized_checkpoint(model: str, quantization: str) -> dict | None:
    """The table row for (base repo, quantization), or None."""
    low = model.lower()
    for row in _table():
        names = [row["base"], *(row.get("aliases") or [])]
        if row["quantization"] == quantization and any(n.lower() == low for n in names):
            return row
    return None


def checkpoint(c: Ctx) -> Checkpoint:
    """The repo serve.sh loads for this plan's quantization."""
    q = c.quantization
    if q in ("none", None) or q in ("bnb-nf4", "bnb-int8"):
        return Checkpoint(c.model, None, None)
    if any(m in c.model.lower() for m in QUANT_MARKERS):
        return Checkpoint(c.model, None, None)   # already a quantized repo
    row = quantized_checkpoint(c.model, q)
    if row:
        return Checkpoint(check_argument(row["repo"], "quantized checkpoint"), row.get("source"), c.model)
    if q in NEEDS_CHECKPOINT:
        return Checkpoint(None, None, c.model)
    return Checkpoint(c.model, None, None)       # fp8 without an FP8 repo: vLLM quantizes at load


def is_llm(c: Ctx) -> bool:
    return c.model_kind in LLM_KINDS


def model_dir(c: Ctx) -> str:
    """Where fetch-model.sh keeps the weights on a node: the data disk, which outlives the instance."""
    return f"{c.data_dir}/models/{c.slug}"


def fetch_model_script(c: Ctx) -> str:
    """fetch-model.sh: the one place weights are downloaded (OSS, ModelScope in mainland regions, Hugging Face)."""
    t = transfers(c)
    model = (checkpoint(c).repo or c.model) if (not c.training and is_llm(c)) else c.model
    return render("fetch-model.sh.j2", c=c, model=model, model_dir=model_dir(c), bandwidth_mbit=t.bandwidth_mbit,
                  download_text=script_duration(t.download_s),
                  download_gb=f"{t.download_bytes / 1e9:.0f}" if t.download_bytes else "",
                  modelscope_pin=MODELSCOPE_PIN)
