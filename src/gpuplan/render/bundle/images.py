"""The bundle's container image: a Dockerfile whose image contains every command the platform runs in it.

- LLM serving: the engine's image (vLLM or SGLang, context.IMAGES) plus serve.sh, serve-sglang.sh,
  healthcheck.sh and fetch-model.sh under /opt/gpuplan; the entrypoint is the deployed engine's script. Used by
  Function Compute, PAI-EAS and the ECS systemd unit (ACK runs the engine's own command). The base image's
  ENTRYPOINT is cleared and the script is the CMD, so a platform that sets its own start command (EAS ``script``,
  ``docker run --entrypoint``) replaces it instead of appending to it.
- Diffusion serving: Python + the pinned requirements-serve.txt (diffusers, FastAPI, uvicorn) and
  serve_images.py as the entrypoint.
- Training: the PyTorch image plus requirements.txt (torch, transformers, peft, DeepSpeed or ms-swift for
  Megatron plans) and the bundle in /workspace: the ACK Job and the PAI-DLC job run `bash launch.sh` in it.

Registry: Alibaba Cloud Container Registry, ``registry.<region>.aliyuncs.com/<namespace>/<repo>:<tag>`` (Function
Compute pulls custom-container images from ACR in the function's region:
https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/create-a-custom-container-function).
"""

from __future__ import annotations

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.serving import deployed_script
from gpuplan.render.bundle.weights import MODELSCOPE_PIN, is_llm

APP_DIR = "/opt/gpuplan"
NAMESPACE_PLACEHOLDER = "your-namespace"
TAG = "gpuplan"
# ModelScope client for mainland downloads (PyPI, latest release seen 2026-10), installed only when the base
# image lacks it.
# PyPI CUDA wheels of torch for requirements.txt (the same index requirements.txt names).
TORCH_INDEX = "https://download.pytorch.org/whl/cu128"
PYTHON_IMAGE = "python:3.12-slim"   # https://hub.docker.com/_/python (Debian slim, official image)
SERVING_SCRIPTS = ("serve.sh", "serve-sglang.sh", "healthcheck.sh", "fetch-model.sh")


def image_ref(c: Ctx) -> str:
    """Where the user pushes the bundle's image (a placeholder namespace to replace)."""
    return f"registry.{c.region}.aliyuncs.com/{NAMESPACE_PLACEHOLDER}/{c.slug}:{TAG}"


def _llm(c: Ctx) -> str:
    base = c.images["sglang" if c.engine == "sglang" else "vllm"]
    return (f"# Serving image for {c.slug}: the {c.engine} image plus the bundle's scripts, so every command the\n"
            f"# platform runs is inside. Build and push (PLAN.md): docker build -t {image_ref(c)} . && docker push "
            f"{image_ref(c)}\n"
            f"FROM {base}\n"
            f"COPY {' '.join(SERVING_SCRIPTS)} {APP_DIR}/\n"
            f"RUN chmod 0755 {APP_DIR}/*.sh && (python3 -c 'import modelscope' 2>/dev/null || "
            f"python3 -m pip install --no-cache-dir '{MODELSCOPE_PIN}')\n"
            f"WORKDIR {APP_DIR}\n"
            f"EXPOSE {c.serve_port}\n"
            "ENTRYPOINT []\n"
            f'CMD ["bash", "{APP_DIR}/{deployed_script(c)}"]\n')


def _diffusion(c: Ctx) -> str:
    return (f"# Image server for {c.slug}: Python, the pinned diffusers/FastAPI stack (torch's PyPI wheels bring their\n"
            f"# CUDA runtime; the host needs only the driver) and serve_images.py.\n"
            f"# Build and push (PLAN.md): docker build -t {image_ref(c)} . && docker push {image_ref(c)}\n"
            f"FROM {PYTHON_IMAGE}\n"
            f"COPY requirements-serve.txt {APP_DIR}/\n"
            f"RUN python3 -m pip install --no-cache-dir -r {APP_DIR}/requirements-serve.txt '{MODELSCOPE_PIN}'\n"
            f"COPY serve_images.py generate_images.py fetch-model.sh {APP_DIR}/\n"
            f"RUN chmod 0755 {APP_DIR}/fetch-model.sh\n"
            f"WORKDIR {APP_DIR}\n"
            f"EXPOSE {c.serve_port}\n"
            "ENTRYPOINT []\n"
            f'CMD ["python3", "{APP_DIR}/serve_images.py"]\n')


def _training(c: Ctx) -> str:
    return (f"# Training image for {c.slug}: the PyTorch image, the pinned requirements.txt (what launch.sh and train.py\n"
            "# call: torchrun, transformers, peft, DeepSpeed, ms-swift for Megatron plans) and the bundle in /workspace.\n"
            f"# The ACK Job (k8s/job.yaml) and the PAI-DLC job (pai-dlc-job.json) run `bash launch.sh` in it.\n"
            f"# Build and push (PLAN.md): docker build -t {image_ref(c)} . && docker push {image_ref(c)}\n"
            f"FROM {c.images['pytorch']}\n"
            "WORKDIR /workspace\n"
            "COPY requirements.txt /workspace/\n"
            f"RUN python3 -m pip install --no-cache-dir -r requirements.txt --extra-index-url {TORCH_INDEX}\n"
            "COPY . /workspace/\n"
            "RUN chmod 0755 /workspace/*.sh\n")


def files(c: Ctx) -> dict[str, str]:
    if c.training:
        return {"Dockerfile": _training(c)}
    if is_llm(c):
        return {"Dockerfile": _llm(c)}
    if c.model_kind == "diffusion" and c.online:
        return {"Dockerfile": _diffusion(c)}
    return {}
