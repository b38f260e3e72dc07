"""The node environment of a bundle (plan.json ``environment``): the image every launcher and platform runs in, the
Python inside it, the pinned packages over it, and where packages and weights come from.

One table, data/environments.yaml (images with sources and dates, the registry and mirror per region scope, the
pins per stack). Mainland regions (cn-*) get Alibaba registries, Alibaba's PyPI mirror and ModelScope; the others
the same image from its us-west-1 copy, PyPI and Hugging Face. The Dockerfile, requirements files, the ECS unit, the
Kubernetes manifests, PAI-DLC/EAS and Function Compute all read it here (images.py, training.py, serving.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files as _pkg_files
from typing import Any

import yaml

NAMESPACE_PLACEHOLDER = "your-namespace"
TAG = "gpuplan"
STACKS = ("training", "megatron", "vllm", "sglang", "diffusers", "whisper")
REQUIREMENTS_FILE = {"training": "requirements.txt", "megatron": "requirements.txt", "vllm": "requirements-serve.txt",
                     "sglang": "requirements-serve.txt", "diffusers": "requirements-serve.txt",
                     "whisper": "requirements-serve.txt"}


@functools.cache
def environments() -> dict[str, Any]:
    """data/environments.yaml, loaded once."""
    return yaml.safe_load((_pkg_files("gpuplan") / "data" / "environments.yaml").read_text(encoding="utf-8"))


def scope_of(region: str) -> str:
    """``mainland`` for cn-* regions, else ``global``."""
    return "mainland" if region.startswith(environments()["scopes"]["mainland"]["region_prefix"]) else "global"


@dataclass(frozen=True)
class Environment:
    """What one bundle's nodes, pods or functions run (plan.json ``environment``)."""

    stack: str                       # training | megatron | vllm | sglang | diffusers | whisper
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
                "forbidden_hosts": list(self.forbidden_hosts), "sources": list(self.sources)}


def mirror_region(region: str) -> str:
    """The registry region of the base image nearest ``region`` (it is published in three regions only)."""
    m = environments()["mirror_regions"]
    if region in m["nearest"]:
        return str(m["nearest"][region])
    return str(m["mainland_default"] if scope_of(region) == "mainland" else m["global_default"])


def image_ref(region: str, slug: str) -> str:
    """Where the user pushes the bundle's image: ACR in the plan's region (a placeholder namespace to replace)."""
    return f"{environments()['registry'].format(region=region)}/{NAMESPACE_PLACEHOLDER}/{slug}:{TAG}"


def stack_for(*, training: bool, launcher: str | None, engine: str, model_kind: str) -> str:
    if training:
        return "megatron" if launcher == "megatron" else "training"
    if model_kind == "diffusion":
        return "diffusers"
    if model_kind == "speech":
        return "whisper"
    return "sglang" if engine == "sglang" else "vllm"


def requirement_pins(stack: str, *, deepspeed: bool = False, bitsandbytes: bool = False,
                     online: bool = False) -> tuple[tuple[str, str], ...]:
    """The pinned packages of a stack (data/environments.yaml ``stacks``), with the optional ones the plan needs."""
    s = environments()["stacks"][stack]
    pins = dict(s["requirements"])
    optional = s.get("optional") or {}
    if deepspeed:
        pins["deepspeed"] = optional["deepspeed"]
    if bitsandbytes:
        pins["bitsandbytes"] = optional["bitsandbytes"]
    if online:
        pins.update(s.get("online") or {})
    return tuple((k, str(v)) for k, v in pins.items())


def node_environment(*, region: str, slug: str, stack: str, deepspeed: bool = False, bitsandbytes: bool = False,
                     online: bool = False) -> Environment:
    data = environments()
    s = data["stacks"][stack]
    img = data["images"][s["image"]]
    scope = scope_of(region)
    sc = data["scopes"][scope]
    base = f"{img['repository'].format(mirror=mirror_region(region))}:{img['tag']}"
    cuda = str(s.get("cuda") or img["cuda"])
    return Environment(
        stack=stack, scope=scope, region=region, image=image_ref(region, slug), base_image=base,
        python=str(img["python"]), cuda=cuda, torch=str(s.get("torch") or img["torch"]),
        min_driver_major=int(img.get("min_driver_major") or 0),
        registry=data["registry"].format(region=region), pip_index=str(sc["pip_index"]),
        pip_trusted_host=sc.get("pip_trusted_host"), weights_source=str(sc["weights_source"]),
        requirements_file=REQUIREMENTS_FILE[stack],
        requirements=requirement_pins(stack, deepspeed=deepspeed, bitsandbytes=bitsandbytes, online=online),
        venv=s.get("venv"), forbidden_hosts=tuple(sc.get("forbidden_hosts") or ()),
        dcgm_exporter_image=str(sc["dcgm_exporter"]).format(region=region),
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
