"""The node environment of a bundle (plan.json ``environment``): the image every launcher and platform runs in, the
Python inside it, the pinned packages over it, and where packages and weights come from.

One table, data/environments.yaml (images with sources and dates, the registry and mirror per region scope, the
pins per stack). Mainland regions (cn-*) get Alibaba registries, Alibaba's PyPI mirror and ModelScope; the others
the same image from its us-west-1 copy, PyPI and Hugging Face. The Dockerfile, requirements files, the ECS unit, the
Kubernetes manifests, PAI-DLC/EAS and Function Compute all read it here (images.py, training.py, serving.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.plan.advice.node_env import (STACKS, base_image, environments, mirror_region, requirement_pins, scope,
                                   scope_of)

__all__ = ["STACKS", "Environment", "environments", "image_ref", "mirror_region", "node_environment",
           "pip_install_args", "requirement_pins", "requirements_text", "scope_of", "stack_for"]

NAMESPACE_PLACEHOLDER = "your-namespace"
TAG = "gpuplan"
REQUIREMENTS_FILE = {"training": "requirements.txt", "megatron": "requirements.txt", "vllm": "requirements-serve.txt",
                     "sglang": "requirements-serve.txt", "diffusers": "requirements-serve.txt",
                     "whisper": "requirements-serve.txt", "embeddings": "requirements-serve.txt"}


@dataclass(frozen=True)
class Environment:
    """What one bundle's nodes, pods or functions run (plan.json ``environment``)."""

    stack: str                       # training | megatron | vllm | sglang | diffusers | whisper | embeddings
    scope: str                       # mainland | global
    region: str
    image: str                       # the bundle's image (Dockerfile) in your ACR: what runs
    base_image: str                  # what the Dockerfile builds FROM
    python: str                      # "3.11"
    cuda: str
    torch: str
    min_driver_major: int            # the NVIDIA driver branch the image's CUDA needs
    registry: str                    # your ACR in the plan's region
    pip_index: str
    pip_trusted_host: str | None
    weights_source: str              # modelscope | huggingface (MODEL_OSS overrides both)
    requirements_file: str
    requirements: tuple[tuple[str, str], ...]   # (package, pinned version), the file's lines
    venv: str | None                 # the stack's own virtual environment (SGLang), else None
    forbidden_hosts: tuple[str, ...]
    dcgm_exporter_image: str
    copied_images: tuple[tuple[str, str], ...]   # (image in your ACR, the source to copy it from), mainland only
    nvidia_container_toolkit_repo: str           # apt/yum repository of the NVIDIA Container Toolkit
    sources: tuple[str, ...]

    @property
    def mainland(self) -> bool:
        return self.scope == "mainland"

    def pins(self) -> dict[str, str]:
        return dict(self.requirements)

    def to_json(self) -> dict:
        """plan.json ``environment``."""
        return {"image": self.image, "base_image": self.base_image, "python": self.python, "cuda": self.cuda,
                "torch": self.torch, "min_driver_major": self.min_driver_major, "registry": self.registry, "pip_index": self.pip_index,
                "weights_source": self.weights_source, "stack": self.stack, "scope": self.scope,
                "platform": "linux_x86_64", "requirements_file": self.requirements_file,
                "requirements": {k: v for k, v in self.requirements}, "venv": self.venv,
                "forbidden_hosts": list(self.forbidden_hosts),
                "copied_images": [{"image": i, "source": src} for i, src in self.copied_images],
                "dcgm_exporter_image": self.dcgm_exporter_image,
                "nvidia_container_toolkit_repo": self.nvidia_container_toolkit_repo, "sources": list(self.sources)}


def image_ref(region: str, slug: str) -> str:
    """Where the user pushes the bundle's image: ACR in the plan's region (a placeholder namespace to replace)."""
    return f"{environments()['registry'].format(region=region)}/{NAMESPACE_PLACEHOLDER}/{slug}:{TAG}"


def stack_for(*, training: bool, launcher: str | None, engine: str, model_kind: str, embed_job: bool = False) -> str:
    if training:
        return "megatron" if launcher == "megatron" else "training"
    if embed_job:       # embed.py: sentence-transformers (context_serving.runs_embed_script)
        return "embeddings"
    if model_kind == "diffusion":
        return "diffusers"
    if model_kind == "speech":
        return "whisper"
    return "sglang" if engine == "sglang" else "vllm"


def node_environment(*, region: str, slug: str, stack: str, deepspeed: bool = False, bitsandbytes: bool = False,
                     linear_attention: bool = False, online: bool = False, video: bool = False) -> Environment:
    data = environments()
    s = data["stacks"][stack]
    img = data["images"][s["image"]]
    sc = scope(region)
    cuda = str(s.get("cuda") or img["cuda"])
    copies = {k: {"image": str(v["image"]).format(region=region), "source": v.get("source")}
              for k, v in (sc.get("copied_images") or {}).items()}
    return Environment(
        stack=stack, scope=scope_of(region), region=region, image=image_ref(region, slug),
        base_image=base_image(region, stack),
        python=str(img["python"]), cuda=cuda, torch=str(s.get("torch") or img["torch"]),
        min_driver_major=int(img.get("min_driver_major") or 0),
        registry=data["registry"].format(region=region), pip_index=str(sc["pip_index"]),
        pip_trusted_host=sc.get("pip_trusted_host"), weights_source=str(sc["weights_source"]),
        requirements_file=REQUIREMENTS_FILE[stack],
        requirements=requirement_pins(stack, deepspeed=deepspeed, bitsandbytes=bitsandbytes,
                                      linear_attention=linear_attention, online=online, video=video),
        venv=s.get("venv"), forbidden_hosts=tuple(sc.get("forbidden_hosts") or ()),
        dcgm_exporter_image=copies["dcgm_exporter"]["image"],
        copied_images=tuple((v["image"], str(v["source"])) for v in copies.values() if v["source"]),
        nvidia_container_toolkit_repo=str(sc["nvidia_container_toolkit_repo"]),
        sources=tuple(" ".join(str(x).split()) for x in img.get("sources") or ()))


def pip_install_args(env: Environment) -> str:
    """`pip install` index arguments for the environment (the mirror in mainland regions)."""
    out = f"-i {env.pip_index}"
    if env.pip_trusted_host:
        out += f" --trusted-host {env.pip_trusted_host}"
    return out


def requirements_text(env: Environment, header: list[str]) -> str:
    """A requirements file: the header comments, then one ``name==version`` line per pin."""
    return "\n".join([*(f"# {line}" if line else "#" for line in header),
                      *(f"{k}=={v}" for k, v in env.requirements)]) + "\n"
