"""Which weights a bundle's nodes load and where from: the repo (a pre-quantized checkpoint when the plan's
quantization needs one, data/quantized_checkpoints.yaml; faster-whisper's CTranslate2 conversion for Whisper), its
ModelScope id (data/model_sources.yaml), the folder they are staged in (the data disk, or the shared file system when
the plan has one), and fetch-model.sh, the one script that downloads them (a staged mirror, OSS, ModelScope; Hugging
Face outside the mainland). Shared by the serving, image, infrastructure and monitoring files; imports none of them."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files as _pkg_files

import yaml

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.environment import pip_install_args, requirement_pins
from gpuplan.render.bundle.node.model_sources import ModelScopeId, modelscope_id
from gpuplan.render.bundle.node.oss import node_role, oss_endpoint
from gpuplan.render.bundle.safe import Safe, check_argument
from gpuplan.render.bundle.templates import render
from gpuplan.render.bundle.node.transfer import script_duration, transfers

LLM_KINDS = ("decoder", "encoder-decoder")
# Weight quantizations vLLM only serves from a pre-quantized checkpoint (no on-the-fly AWQ/GPTQ).
NEEDS_CHECKPOINT = ("awq", "gptq-int4", "gptq-int8", "int4", "int8")
# Repo-name fragments that mark a checkpoint as already quantized.
QUANT_MARKERS = ("-awq", "-gptq", "-fp8", "-int4", "-int8", "-w4a16", "-w8a8", "-nf4", "-bnb")
# faster-whisper's CTranslate2 conversions of the OpenAI Whisper repos (SYSTRAN/faster-whisper faster_whisper/utils.py
# _MODELS): what transcribe.py loads.
FASTER_WHISPER_REPOS = {"openai/whisper-large-v3": "Systran/faster-whisper-large-v3",
                        "openai/whisper-large-v3-turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
                        "openai/whisper-large-v2": "Systran/faster-whisper-large-v2",
                        "openai/whisper-medium": "Systran/faster-whisper-medium",
                        "openai/whisper-small": "Systran/faster-whisper-small",
                        "openai/whisper-base": "Systran/faster-whisper-base",
                        "openai/whisper-tiny": "Systran/faster-whisper-tiny"}


def modelscope_pin() -> str:
    """The ModelScope client fetch-model.sh installs when the image lacks it (the training stack's pin)."""
    return f"modelscope=={dict(requirement_pins('training'))['modelscope']}"


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


def serves_engine(c: Ctx) -> bool:
    """True when the bundle's server is the vLLM/SGLang engine (serve.sh): an LLM, or an encoder-only model served
    online by vLLM's pooling runner (embeddings, reranking); not its batch job (embed.py, context_serving.
    runs_embed_script). Such a service gets the engine's image, systemd unit, health check, load balancer and
    monitoring, as an LLM's."""
    return is_llm(c) or (c.model_kind == "encoder" and not c.embed_job and not c.training)


def local_folder_model(c: Ctx) -> bool:
    """True when the model is a folder on the node, loaded where it is (context_model.local_folder made the path
    absolute once), not a repository fetch-model.sh downloads."""
    return c.model.startswith("/")


def model_dir(c: Ctx) -> str:
    """Where every launcher and server loads the weights from (plan.json ``weights.local_dir``, each script's
    MODEL_DIR): the local model folder the user named (used where it is, nothing to download), else the copy staged
    once: on the shared file system when a multi-node training plan has one (one download for every node), else on
    the node's data disk (it outlives the instance)."""
    if local_folder_model(c):
        return c.model
    base = c.shared_dir if (c.training and c.shared_kind) else c.data_dir
    return f"{base}/models/{c.slug}"


def models_mount(c: Ctx) -> str:
    """Where a pod mounts the models volume that fetch-model.sh fills (the staged copies' folder on the data disk)."""
    return f"{c.data_dir}/models"


def download_repo(c: Ctx) -> str:
    """The repository fetch-model.sh downloads: the served checkpoint (a pre-quantized repo when the plan needs
    one), faster-whisper's conversion for Whisper, else the model."""
    if c.model_kind == "speech":
        return FASTER_WHISPER_REPOS.get(c.model.lower(), c.model)
    if not c.training and is_llm(c):
        return checkpoint(c).repo or c.model
    return c.model


def weights_source(c: Ctx) -> ModelScopeId:
    """The ModelScope id of what the bundle downloads (None when the table does not know it)."""
    return modelscope_id(download_repo(c))


def stage_weights_script(c: Ctx) -> str:
    """stage-weights.sh: the weights staged once in OSS by a machine in the region before the GPUs start, for a plan
    that counted them so (plan.weights_staging; fetch-model.sh then refuses to start without MODEL_OSS)."""
    from gpuplan.plan.money.transfer import MB, MBIT, transfer_s

    t = transfers(c)
    n_bytes = t.download_bytes or 0.0
    staging_s = (transfer_s(n_bytes, t.bandwidth_mbit * MBIT) + transfer_s(n_bytes, t.oss_mb_s * MB)) if n_bytes else None
    assert c.env is not None
    return render("stage-weights.sh.j2", c=c, mainland=c.env.mainland, download_gb=f"{n_bytes / 1e9:.0f}",
                  staging_text=script_duration(staging_s), node_text=script_duration(t.download_s))


def fetch_model_script(c: Ctx) -> str:
    """fetch-model.sh: the one place weights are downloaded (a staged mirror, OSS, ModelScope; Hugging Face outside
    the mainland)."""
    t = transfers(c)
    ms = weights_source(c)
    assert c.env is not None
    return render("fetch-model.sh.j2", c=c, model=download_repo(c), model_dir=model_dir(c),
                  bandwidth_mbit=t.bandwidth_mbit, oss_mb_s=f"{t.oss_mb_s:g}", download_text=script_duration(t.download_s),
                  download_gb=f"{t.download_bytes / 1e9:.0f}" if t.download_bytes else "",
                  ms_id=check_argument(ms.id, "ModelScope id") if ms.id else "",
                  ms_rule=Safe({"ms-swift": "ms-swift's model registry", "other": "seen on modelscope.cn",
                           "org": "same name under the organisation's ModelScope namespace"}.get(ms.rule or "", "")),
                  mainland=c.env.mainland, wait_s=int(600 + 2 * (t.download_s or 0)),
                  pip_args=Safe(pip_install_args(c.env)), modelscope_pin=modelscope_pin(),
                  endpoint=oss_endpoint(c.region), role=node_role(c))
