"""The bundle's container image: a Dockerfile that builds FROM the node environment's base image (plan.json
``environment``, data/environments.yaml) and contains every command the platform runs in it.

- LLM serving: the engine pinned in requirements-serve.txt (vLLM over the image's torch; SGLang in its own virtual
  environment), serve.sh, serve-sglang.sh, healthcheck.sh and fetch-model.sh under /opt/gpuplan; the entrypoint is
  the deployed engine's script. Used by the ECS systemd unit, ACK, Function Compute and PAI-EAS. The base image's
  ENTRYPOINT is cleared and the script is the CMD, so a platform that sets its own start command (EAS ``script``,
  ``docker run --entrypoint``) replaces it instead of appending to it.
- Diffusion, speech and embedding jobs: the pinned requirements-serve.txt, the scripts and fetch-model.sh; the online
  image server is the entrypoint.
- Training: requirements.txt over the image (its torch kept) and the bundle in /workspace: the ECS unit, the ACK
  Job and the PAI-DLC job run `bash launch.sh` (through run-with-resume.sh on ECS) in it.

pip installs from the environment's index (Alibaba's PyPI mirror in mainland regions). Mainland images also set
HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE: nothing reaches Hugging Face at run time. ossutil (Alibaba's CDN) copies
weights and checkpoints to and from OSS.

Registry: Alibaba Cloud Container Registry, ``registry.<region>.aliyuncs.com/<namespace>/<repo>:<tag>`` (Function
Compute pulls custom-container images from ACR in the function's region:
https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/create-a-custom-container-function).
"""

from __future__ import annotations

from gpuplan.render.bundle.node import environment as envmod
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.environment import pip_install_args
from gpuplan.render.bundle.serving import deployed_script
from gpuplan.render.bundle.node.weights import serves_engine

APP_DIR = "/opt/gpuplan"
NAMESPACE_PLACEHOLDER = envmod.NAMESPACE_PLACEHOLDER
TAG = envmod.TAG
SERVING_SCRIPTS = ("serve.sh", "serve-sglang.sh", "healthcheck.sh", "fetch-model.sh")
# ossutil 1.7 (the `ossutil cp -r -u/-f --jobs` syntax the scripts use), from Alibaba's CDN:
# https://www.alibabacloud.com/help/en/oss/developer-reference/install-ossutil (download URLs
# gosspublic.alicdn.com/ossutil/<version>/ossutil64; 1.7.18 as used in third-party install scripts, unconfirmed).
OSSUTIL_URL = "https://gosspublic.alicdn.com/ossutil/1.7.18/ossutil64"


def image_ref(c: Ctx) -> str:
    """Where the user pushes the bundle's image (a placeholder namespace to replace)."""
    return envmod.image_ref(c.region, c.slug)


def _env(c: Ctx) -> envmod.Environment:
    assert c.env is not None   # build_context always sets it
    return c.env


def _header(c: Ctx, what: str) -> str:
    e = _env(c)
    return (f"# {what} for {c.slug}, FROM the node environment in plan.json: Python {e.python}, CUDA {e.cuda}, "
            f"torch {e.torch}\n# ({e.stack} stack, data/environments.yaml). Build and push (PLAN.md): "
            f"docker build -t {image_ref(c)} . && docker push {image_ref(c)}\n")


def _common(c: Ctx) -> str:
    """Environment lines every image shares: the pip index, offline hubs in mainland regions, ossutil."""
    e = _env(c)
    lines = [f"FROM {e.base_image}", f"ENV PIP_INDEX_URL={e.pip_index} PIP_DISABLE_PIP_VERSION_CHECK=1"]
    if e.pip_trusted_host:
        lines.append(f"ENV PIP_TRUSTED_HOST={e.pip_trusted_host}")
    if e.mainland:
        lines.append("# Mainland region: weights come from ModelScope or OSS (fetch-model.sh); nothing reaches Hugging "
                     "Face at run time.")
        lines.append("ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 MODEL_HUB=modelscope")
    lines.append(f"RUN (command -v ossutil >/dev/null || (curl -fsSL -o /usr/local/bin/ossutil {OSSUTIL_URL} && "
                 "chmod 0755 /usr/local/bin/ossutil))")
    return "\n".join(lines) + "\n"


def _install(c: Ctx, target: str) -> str:
    """The RUN line that installs the pinned requirements file (into the stack's virtual environment when it has
    one; the image's torch stays, the files pin it)."""
    e = _env(c)
    if e.venv:
        return (f"RUN python3 -m venv {e.venv} && {e.venv}/bin/python -m pip install --no-cache-dir "
                f"{pip_install_args(e)} -r {target}\n"
                f"# {e.stack} runs from its own virtual environment (it pins torch {e.torch}; the image keeps its own).\n"
                f"ENV PATH={e.venv}/bin:$PATH\n")
    return f"RUN python3 -m pip install --no-cache-dir {pip_install_args(e)} -r {target}\n"


def _llm(c: Ctx) -> str:
    return (_header(c, f"Serving image ({c.engine})")
            + _common(c)
            + f"COPY requirements-serve.txt {APP_DIR}/\n"
            + _install(c, f"{APP_DIR}/requirements-serve.txt")
            + f"COPY {' '.join(SERVING_SCRIPTS)} {APP_DIR}/\n"
            f"RUN chmod 0755 {APP_DIR}/*.sh\n"
            f"WORKDIR {APP_DIR}\n"
            f"EXPOSE {c.serve_port}\n"
            "ENTRYPOINT []\n"
            f'CMD ["bash", "{APP_DIR}/{deployed_script(c)}"]\n')


def _python_app(c: Ctx, scripts: list[str], cmd: str) -> str:
    return (_header(c, "Image server" if c.online else "Batch image")
            + _common(c)
            + f"COPY requirements-serve.txt {APP_DIR}/\n"
            + _install(c, f"{APP_DIR}/requirements-serve.txt")
            + f"COPY {' '.join(scripts)} fetch-model.sh {APP_DIR}/\n"
            f"RUN chmod 0755 {APP_DIR}/fetch-model.sh\n"
            f"WORKDIR {APP_DIR}\n"
            + (f"EXPOSE {c.serve_port}\n" if c.online else "")
            + "ENTRYPOINT []\n"
            f'CMD {cmd}\n')


def _training(c: Ctx) -> str:
    return (_header(c, "Training image")
            + "# requirements.txt (what launch.sh and train.py call: torchrun, transformers, peft, DeepSpeed, ms-swift "
            "for Megatron\n# plans) over the image; the bundle in /workspace. The ECS unit, the ACK Job and the PAI-DLC "
            "job run it.\n"
            + _common(c)
            + "WORKDIR /workspace\n"
            "COPY requirements.txt /workspace/\n"
            + _install(c, "requirements.txt")
            + "COPY . /workspace/\n"
            "RUN chmod 0755 /workspace/*.sh\n")


def files(c: Ctx) -> dict[str, str]:
    if c.training:
        return {"Dockerfile": _training(c)}
    if serves_engine(c):
        return {"Dockerfile": _llm(c)}
    if c.model_kind == "diffusion":
        batch = "generate_videos.py" if c.video else "generate_images.py"   # a video model: serving.py, video.py
        scripts = ["serve_images.py", batch] if c.online else [batch]
        cmd = f'["python3", "{APP_DIR}/serve_images.py"]' if c.online else f'["python3", "{APP_DIR}/{batch}", "--help"]'
        return {"Dockerfile": _python_app(c, scripts, cmd)}
    if c.model_kind == "speech":
        return {"Dockerfile": _python_app(c, ["transcribe.py"], f'["python3", "{APP_DIR}/transcribe.py", "--help"]')}
    if c.embed_job:
        return {"Dockerfile": _python_app(c, ["embed.py"], f'["python3", "{APP_DIR}/embed.py", "--help"]')}
    return {}
