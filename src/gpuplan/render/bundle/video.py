"""The batch script of a video-diffusion plan (CogVideoX, Wan2.1, HunyuanVideo, LTX-Video): generate_videos.py.

It launches what estimate/nonllm/video.py timed and sized, one model for one figure:

- the diffusers-format repository of the planned model (data/model_sources.yaml ``diffusers_format``), loaded with
  ``DiffusionPipeline.from_pretrained`` (it reads model_index.json and picks the pipeline class). A plan whose model
  id is not that repository (Wan's own Wan-AI/Wan2.1-T2V-1.3B, tencent/HunyuanVideo: no model_index.json) gets no
  bundle: one GpuplanError naming the repository to plan instead, not a script that fails on the node;
- the frames, height, width and steps of ``video_shape`` (the workload's ``input``, else the pipeline's defaults);
- the components in the dtypes the estimate counted: the plan's 16-bit type, and float32 for a DiT or VAE whose
  profile counts 4-byte weights (Wan: ``denoiser_weight_bytes``/``vae_weight_bytes`` 4, as Wan's generate.py holds
  them), the float32 DiT run under bf16 autocast as Wan runs it and the float32 VAE decoding outside the autocast;
- the plan's offload (``input.offload``: model -> ``enable_model_cpu_offload``, sequential ->
  ``enable_sequential_cpu_offload``), VAE tiling where the profile decodes in tiles (``vae_decode_tile``,
  HunyuanVideo: ``pipe.vae.enable_tiling()``), classifier-free guidance at the pipeline's own guidance_scale;
- the plan's batch (prompts per pipeline call) and one process per GPU the plan counts, as generate_images.py.

A video model is not served online by the bundle (serve_images.py is an image server): a video service plan gets
one GpuplanError too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.context_model import catalog_spec
from gpuplan.render.bundle.node.model_sources import model_sources, modelscope_id
from gpuplan.render.bundle.safe import Safe

SCRIPT = "generate_videos.py"


@dataclass(frozen=True)
class VideoLaunch:
    """What generate_videos.py runs by default: the estimate's shape and settings."""

    repo: str                      # the diffusers-format repository (the plan's model id)
    frames: int
    height: int
    width: int
    steps: int
    fps: int
    offload: str                   # none | model | sequential
    dtype: str                     # the pipeline's torch dtype: bfloat16 | float16 | float32
    fp32: tuple[str, ...]          # components loaded in float32 as the estimate counted them
    autocast: bool                 # the float32 DiT runs under autocast to ``dtype`` (Wan's generate.py)
    vae_tiling: bool
    frame_step: int                # (frames - 1) a multiple of the VAE's temporal compression
    pixel_step: int                # height and width multiples of the VAE's spatial compression x the patch


def _variants(repo: str) -> set[str]:
    """The names a repository is planned by: itself, its renamed organisation (THUDM -> zai-org), its ModelScope id."""
    table = model_sources()["modelscope"]
    out = {repo.lower()}
    org, _sep, name = repo.partition("/")
    for old, new in (table.get("renamed_hf_orgs") or {}).items():
        if org.lower() == old.lower():
            out.add(f"{new}/{name}".lower())
    ms = modelscope_id(repo).id
    if ms:
        out.add(ms.lower())
    return out


def diffusers_repo(c: Ctx, spec: Any) -> str:
    """The plan's model id when it is the diffusers-format repository of its catalog model (or a local folder), else
    one GpuplanError naming that repository."""
    from gpuplan.catalog.models import _looks_like_path

    name = c.model.strip()
    if _looks_like_path(name):    # the user's own copy on the node: generate_videos.py checks its model_index.json
        return name
    table = {k.lower(): v for k, v in (model_sources().get("diffusers_format") or {}).items()}
    target = table.get(str(spec.id).lower())
    if target and name.lower() in _variants(target):
        return name
    if target:
        hint = _("Plan {repo} instead (the same weights in diffusers format): set model: {repo} in the workload and "
                 "run `gpuplan plan` again; the estimate is the same.").format(repo=target)
    else:
        hint = _("Set model: to a diffusers-format repository of the same weights (one with model_index.json at its "
                 "root), or to a local folder holding one.")
    raise GpuplanError(_("{model} is not a diffusers-format repository (no model_index.json), so the bundle's "
                         "generate_videos.py could not load it with diffusers DiffusionPipeline.").format(
                             model=repr(name)), hint=hint, field="model")


def diffusers_dtype(c: Ctx) -> str:
    """The torch dtype a diffusers script loads its pipeline in: the plan's precision; BF16 on a GPU without it (T4,
    V100) is float16, where the estimate's 2-byte weights hold too."""
    dtype = {"fp32": "float32", "fp16": "float16"}.get(c.precision, "bfloat16")
    return "float16" if dtype == "bfloat16" and not c.bf16 else dtype


def video_launch(c: Ctx) -> VideoLaunch | None:
    """The launch of a video plan (None for any other model); a launch the bundle cannot run is one GpuplanError."""
    from gpuplan.estimate.nonllm.video import video_shape

    spec = catalog_spec(c.model)
    if spec is None or not (getattr(spec.profile, "pipeline", None) or {}).get("video"):
        return None
    if c.online:
        raise GpuplanError(_("The bundle has no online server for the video model {model} (serve_images.py serves "
                             "images).").format(model=repr(c.model)),
                           hint=_("Plan a batch job instead: drop the serving block and state dataset.items (the "
                                  "number of videos); the bundle then writes generate_videos.py."), field="serving")
    repo = diffusers_repo(c, spec)
    video = dict(spec.profile.pipeline["video"])
    s = video_shape(spec, c.model_input)
    dtype = diffusers_dtype(c)
    fp32 = tuple(name for name, key in (("transformer", "denoiser_weight_bytes"), ("vae", "vae_weight_bytes"))
                 if dtype != "float32" and float(video.get(key, 0) or 0) == 4)
    return VideoLaunch(repo=repo, frames=s.frames, height=s.height, width=s.width, steps=s.steps,
                       fps=int(video.get("fps") or 16), offload=s.offload, dtype=dtype, fp32=fp32,
                       autocast="transformer" in fp32, vae_tiling=bool(video.get("vae_decode_tile")),
                       frame_step=int(video["vae_temporal"]),
                       pixel_step=int(video["vae_spatial"]) * int(video.get("patch_s", 2)))


def _py(value: Any) -> Safe:
    """A Python literal (JSON is valid Python for strings, numbers and lists of strings; ASCII only)."""
    return Safe(json.dumps(value, ensure_ascii=True))


def script(c: Ctx, v: VideoLaunch, *, batch: int, model_dir: str) -> str:
    from gpuplan.render.bundle.templates import render

    return render("generate_videos.py.j2", c=c, model_py=_py(v.repo), model_dir_py=_py(model_dir), v=v, batch=batch,
                  fp32_py=Safe("(" + ", ".join(json.dumps(n) for n in v.fp32) + ("," if len(v.fp32) == 1 else "") + ")"),
                  offload_py=_py(v.offload), dtype_py=_py(v.dtype))
