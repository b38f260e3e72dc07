"""The model facts of a bundle's context: the repository a training bundle trains (refusing what it cannot download),
the tiny model family its rehearsal builds, LLaMA-Factory's chat template, and whether a model is a video model."""

from __future__ import annotations

import os
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.render.bundle.safe import INERT_RE, check_argument

# LLaMA-Factory chat templates by model-id fragment (https://github.com/hiyouga/LLaMA-Factory ,
# "Supported Models" table); unknown families fall back to "default" and PLAN.md says to check it.
LLAMAFACTORY_TEMPLATES = (("qwen3", "qwen3"), ("qwen", "qwen"), ("llama-3", "llama3"), ("llama3", "llama3"),
                          ("llama-2", "llama2"), ("mistral", "mistral"), ("mixtral", "mistral"),
                          ("glm-4", "glm4"), ("glm4", "glm4"), ("gemma", "gemma"), ("baichuan2", "baichuan2"),
                          ("deepseek", "deepseek3"), ("yi-", "yi"), ("internlm", "intern2"))


# transformers model_type for `launch.sh --smoke` by catalog arch; families whose code lives outside
# transformers (Qwen-1, ChatGLM, Baichuan, ...) smoke-test the closest in-library decoder (llama).
SMOKE_MODEL_TYPES = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen2moe": "qwen2_moe",
                     "qwen3moe": "qwen3_moe", "qwen3next": "qwen3_next", "minimaxm2": "minimax_m2",
                     "mixtral": "mixtral"}


def train_model(workload: Any, arch: str | None = None) -> tuple[str, str]:
    """(repo id or local path for the training scripts, smoke model_type). Synthetic models, catalog
    aliases that are not repository ids and non-decoder models cannot be trained by the bundle:
    one GpuplanError."""
    from gpuplan.catalog.models import _looks_like_path, resolve_model

    ref = workload.model
    hint = _("Set model: to a Hugging Face or ModelScope repository id (e.g. Qwen/Qwen2.5-7B-Instruct) or a local "
             "folder with config.json and the weights; `gpuplan recommend` still sizes any model.")
    if not isinstance(ref, str):
        raise GpuplanError(_("A training bundle needs a real model: an inline model mapping has no weights to "
                             "download."), hint=hint, field="model")
    name = check_argument(ref.strip(), "model")
    if _looks_like_path(name):   # a local folder on the node: the estimate read its config.json
        return check_argument(local_folder(name), "model"), SMOKE_MODEL_TYPES.get(str(arch or ""), "llama")
    spec = resolve_model(name)
    repo = name if ("/" in name and ":" not in name) else spec.id
    if spec.synthetic or ":" in repo or "/" not in repo:
        raise GpuplanError(_("Model {name} is a catalog benchmark entry, not a Hugging Face or ModelScope "
                             "repository id, so the training bundle cannot download it.").format(name=repr(name)),
                           hint=hint, field="model")
    if spec.kind != "decoder":
        raise GpuplanError(_("The training bundle trains decoder language models; {name} is not one (its kind: {kind}).").format(
                               name=repr(name), kind=spec.kind),
                           hint=_("Use `gpuplan recommend` for sizing; write the training script for this model "
                                  "yourself."), field="model")
    return check_argument(repo, "model"), SMOKE_MODEL_TYPES.get(spec.arch, "llama")


def local_folder(name: str) -> str:
    """The absolute folder of a model named by a local path (a folder, or the config.json / model_index.json in it),
    as the estimate read it: every launcher and server loads it where it is (node/weights.model_dir). The path goes
    into shell defaults, the systemd unit's docker mounts, Kubernetes mounts and Terraform, whose quoting rules
    differ: a path with characters outside a plain set (letters, digits, . _ - / and a few more) is refused with one
    error, never quoted four ways."""
    path = os.path.abspath(os.path.expanduser(name))
    path = os.path.dirname(path) if path.endswith(".json") else path
    if not INERT_RE.match(path):
        raise GpuplanError(_("A bundle loads a local model folder where it is on the node, and {path} has characters "
                             "its launch files cannot carry safely (spaces, quotes, $ and the like).").format(
                               path=repr(path)),
                           hint=_("Put the weights at a plain path (letters, digits, . _ - /), e.g. "
                                  "/data/models/<name>, and name that path."), field="model")
    return path


def catalog_spec(model: Any) -> Any | None:
    """The catalog entry of a model id (None for an inline or unknown model)."""
    if not isinstance(model, str):
        return None
    try:
        from gpuplan.catalog.models import resolve_model

        return resolve_model(model)
    except Exception:  # noqa: BLE001 - an inline or unknown model is no catalog entry
        return None


def is_video_model(model: Any) -> bool:
    """True for a catalog video-diffusion model (a ``pipeline.video`` profile): its bundle writes generate_videos.py."""
    spec = catalog_spec(model)
    return spec is not None and bool((getattr(spec.profile, "pipeline", None) or {}).get("video"))


def template_for(model: str) -> str:
    low = model.lower()
    for frag, name in LLAMAFACTORY_TEMPLATES:
        if frag in low:
            return name
    return "default"
