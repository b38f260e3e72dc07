"""The node environments a plan can run in (data/environments.yaml), read by the planner, the bundle renderer and the
preflight alike: one table, one rule for which regions are mainland (catalog.hardware.regions.is_mainland), one list of hosts
a mainland node must not depend on, one set of pins per stack.

- the planner counts the image pull of a plan from the image's size and where it is pulled from (:func:`image_pull`);
- the renderer builds plan.json ``environment`` from it (gpuplan.render.bundle.node.environment);
- ``gpuplan check`` refuses a mainland bundle that names a forbidden host or pulls an image from anywhere but the
  bundle's own ACR image, its base image and the documented copies (gpuplan.check.mainland).
"""

from __future__ import annotations

import functools
import itertools
from importlib.resources import files as _pkg_files
from typing import Any

from gpuplan.catalog.hardware.regions import is_mainland
from gpuplan.files.datafiles import load_data

STACKS = ("training", "megatron", "vllm", "sglang", "diffusers", "whisper", "embeddings")


@functools.cache
def environments() -> dict[str, Any]:
    """data/environments.yaml, loaded once (gpuplan.files.datafiles: libyaml, then its compiled copy)."""
    return load_data(_pkg_files("gpuplan") / "data" / "environments.yaml")


def scope_of(region: str) -> str:
    """``mainland`` for regions in the Chinese mainland (any ``cn-`` id but cn-hongkong), else ``global``."""
    return "mainland" if is_mainland(region) else "global"


def scope(region: str) -> dict[str, Any]:
    """The scope record (pip index, weights source, forbidden hosts, NVIDIA repository, copied images)."""
    return environments()["scopes"][scope_of(region)]


def forbidden_hosts() -> tuple[str, ...]:
    """Hosts no file a mainland node runs may depend on."""
    return tuple(environments()["scopes"]["mainland"].get("forbidden_hosts") or ())


def mirror_region(region: str) -> str:
    """The registry region of the base image nearest ``region`` (it is published in three regions only)."""
    m = environments()["mirror_regions"]
    if region in m["nearest"]:
        return str(m["nearest"][region])
    return str(m["mainland_default"] if scope_of(region) == "mainland" else m["global_default"])


def stack_image(stack: str) -> dict[str, Any]:
    """The image record of a stack (repository, tag, python, cuda, torch, compressed size, sources)."""
    data = environments()
    return data["images"][data["stacks"][stack]["image"]]


def base_image(region: str, stack: str) -> str:
    img = stack_image(stack)
    return f"{img['repository'].format(mirror=mirror_region(region))}:{img['tag']}"


# (requirement_pins flag, the optional package it adds: data/environments.yaml stacks.<stack>.optional)
OPTIONAL_FLAGS = (("deepspeed", "deepspeed"), ("bitsandbytes", "bitsandbytes"),
                  ("linear_attention", "flash-linear-attention"))
SET_NAMES = {"linear_attention": "fla"}   # the short names pin_sets gives its sets


def requirement_pins(stack: str, *, deepspeed: bool = False, bitsandbytes: bool = False,
                     linear_attention: bool = False, online: bool = False,
                     video: bool = False) -> tuple[tuple[str, str], ...]:
    """The pinned packages of a stack (data/environments.yaml ``stacks``), with the optional ones the plan needs: the
    one source of every pin a bundle's requirements file holds (``linear_attention``: flash-linear-attention for a
    hybrid model's Gated DeltaNet layers; ``video``: the MP4 writer of generate_videos.py)."""
    s = environments()["stacks"][stack]
    pins = dict(s["requirements"])
    optional = s.get("optional") or {}
    wanted = {"deepspeed": deepspeed, "bitsandbytes": bitsandbytes, "linear_attention": linear_attention}
    for flag, package in OPTIONAL_FLAGS:
        if wanted[flag] and package in optional:
            pins[package] = optional[package]
    if online:
        pins.update(s.get("online") or {})
    if video:
        pins.update(s.get("video") or {})
    return tuple((k, str(v)) for k, v in pins.items())


def pin_sets() -> dict[str, tuple[str, tuple[tuple[str, str], ...]]]:
    """Every requirements set a bundle can write: {name: (Python, pins)} over each stack and its optional parts
    (DeepSpeed, bitsandbytes, flash-linear-attention, the online server, the video writer: a video plan is a batch
    job, never online). scripts/gen_pin_metadata.py resolves each with pip; the tests check
    that every bundle's set is one of them."""
    data = environments()
    out = {}
    for stack, s in data["stacks"].items():
        python = str(data["images"][s["image"]]["python"])
        # every subset of the stack's optional packages, with and without the online server
        flags = [flag for flag, package in OPTIONAL_FLAGS if package in (s.get("optional") or {})]
        flags += ["online"] if s.get("online") else []
        for chosen in itertools.product((False, True), repeat=len(flags)):
            on = {flag: True for flag, picked in zip(flags, chosen, strict=True) if picked}
            name = "+".join([stack] + [SET_NAMES.get(flag, flag) for flag in on])
            out[name] = (python, requirement_pins(stack, **on))
        if s.get("video"):
            out[f"{stack}+video"] = (python, requirement_pins(stack, video=True))
    return out


def image_pull(region: str, stack: str, platform: str) -> tuple[float, str]:
    """(compressed image bytes, how it is pulled) for one node of a plan: ``acr-vpc`` when the platform pulls the
    bundle's image from your ACR in the plan's region over the VPC (ACK, PAI, Function Compute), ``public`` when the
    node builds it from the base image over its public bandwidth (ECS: the systemd unit builds it on the node; the
    base image's registry is ModelScope's, reachable only over its public endpoint)."""
    img = stack_image(stack)
    gib = float(img["compressed_gib"])
    how = "public" if platform == "ecs" else "acr-vpc"
    return gib * 2 ** 30, how
