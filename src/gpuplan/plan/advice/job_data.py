"""The data a batch inference job keeps on its disk besides the weights: its input (audio, prompts, texts, images)
and its output (transcripts, images, videos, embeddings, completions), from the size the workload states and the figures
of data/storage.yaml ``batch_data`` (with sources and derivations). The storage advice sizes the data disk with
them and the auto-release counts their copies (plan/money/transfer.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuplan.i18n import _
from gpuplan.plan.advice.storage import storage_facts
from gpuplan.units import GIB, HOUR_S

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.context import PlanContext


@dataclass(frozen=True)
class JobData:
    """Bytes of one batch job's input and output, and what they were counted as (an English sentence made from
    catalog templates, translated where it is shown)."""

    input_bytes: float
    output_bytes: float
    basis: str


def _text_bytes(tokens: float) -> float:
    return tokens * float(storage_facts()["assumptions"]["bytes_per_token"])


def _audio(ctx: PlanContext, cfg: dict, ds: Any) -> JobData:
    audio_s = float(ds.audio_hours) * HOUR_S
    per_s = float(cfg["input_bytes_per_audio_s"])
    basis = _("{hours} h of audio as {kbit} kbit/s MP3; set dataset.size_gib for WAV or another format").format(
        hours=f"{ds.audio_hours:,.0f}", kbit=f"{per_s * 8 / 1000:g}")
    return JobData(audio_s * per_s, audio_s * ds.epochs * float(cfg["output_bytes_per_audio_s"]), basis)


def _videos(ctx: PlanContext, cfg: dict, items: float, done: float) -> JobData:
    """A video-diffusion job: prompts in, one H.264 MP4 per prompt out at the estimate's frames x height x width."""
    from gpuplan.estimate.nonllm.video import video_shape

    s = video_shape(ctx.model, ctx.w.input.model_dump() if ctx.w.input else {})
    bits = float(cfg["output_bits_per_pixel_frame"])
    per_video = s.frames * s.width * s.height * bits / 8
    return JobData(items * float(cfg["input_bytes_per_item"]), done * per_video,
                   _("{items} prompts in, {items_out} H.264 MP4 videos of {frames} frames at {width}x{height} out, "
                     "{mb} MB each at an assumed {bits} bit per pixel per frame").format(
                       items=f"{items:,.0f}", items_out=f"{done:,.0f}", frames=s.frames, width=s.width,
                       height=s.height, mb=f"{per_video / 1e6:,.1f}", bits=f"{bits:g}"))


def _kind(ctx: PlanContext) -> str:
    kind = str(getattr(ctx.model, "kind", "") or "decoder")
    if kind == "diffusion" and (getattr(getattr(ctx.model, "profile", None), "pipeline", None) or {}).get("video"):
        return "videos"
    return {"speech": "audio", "diffusion": "images", "encoder": "embeddings", "vision": "vision"}.get(kind, "text")


def _items(ctx: PlanContext, ds: Any) -> tuple[float, float] | None:
    """(distinct items, items processed over all epochs) of a job that is not audio."""
    from gpuplan.plan.context import job_items

    got = job_items(ctx)
    if got is None:
        return None
    return got[0] / ds.epochs, got[0]


def job_data(ctx: PlanContext) -> JobData | None:
    """The batch job's input and output bytes (None for training, services and jobs of no stated size)."""
    ds = ctx.w.dataset
    if ctx.training or not ctx.job or ds is None:
        return None
    facts = storage_facts()
    cfg = facts["batch_data"]
    kind = _kind(ctx)
    if kind == "audio" and ds.audio_hours:
        data = _audio(ctx, cfg["audio"], ds)
    else:
        counts = _items(ctx, ds)
        if counts is None:
            return None
        items, done = counts
        prompt, output = float(ctx.w.prompt_tokens or 0), float(ctx.w.output_tokens or 0)
        if kind == "videos":
            data = _videos(ctx, cfg["videos"], items, done)
        elif kind == "images":
            side = float((ctx.w.input.image_size if ctx.w.input and ctx.w.input.image_size else None)
                         or (getattr(getattr(ctx.model, "profile", None), "reference_input", None) or {}).get("image_size")
                         or 1024)
            data = JobData(items * float(cfg["images"]["input_bytes_per_item"]),
                           done * side * side * float(cfg["images"]["output_bytes_per_pixel"]),
                           _("{items} prompts in, {items_out} PNG images of {side}x{side} out, counted at their raw "
                             "RGB size").format(items=f"{items:,.0f}", items_out=f"{done:,.0f}", side=f"{side:g}"))
        elif kind == "embeddings":
            dim = float(getattr(ctx.model, "hidden_size", 0) or 0)
            data = JobData(items * _text_bytes(prompt), done * dim * float(cfg["embeddings"]["output_bytes_per_value"]),
                           _("{items} texts of {tokens} tokens in, one {dim}-value float32 embedding each out").format(
                               items=f"{items:,.0f}", tokens=f"{prompt:,.0f}", dim=f"{dim:g}"))
        elif kind == "vision":
            per = ds.bytes_per_sample or float(facts["assumptions"]["image_bytes_per_sample"])
            data = JobData(items * per, done * float(cfg["vision"]["output_bytes_per_item"]),
                           _("{items} images of {kb} kB in, a label each out").format(
                               items=f"{items:,.0f}", kb=f"{per / 1e3:,.0f}"))
        else:
            data = JobData(items * _text_bytes(prompt), done * _text_bytes(output),
                           _("{items} prompts of {prompt} tokens in, {output} tokens each out, as text").format(
                               items=f"{items:,.0f}", prompt=f"{prompt:,.0f}", output=f"{output:,.0f}"))
    if ds.size_gib:   # the workload's own figure for its input wins
        data = JobData(ds.size_gib * GIB, data.output_bytes, _("the input as stated (dataset.size_gib {gib} GiB)")
                       .format(gib=f"{ds.size_gib:g}"))
    elif ds.bytes_per_sample and kind != "audio" and kind != "vision":
        counts = _items(ctx, ds)
        if counts:
            data = JobData(counts[0] * ds.bytes_per_sample, data.output_bytes,
                           _("the input at the stated {kb} kB per item (dataset.bytes_per_sample)").format(
                               kb=f"{ds.bytes_per_sample / 1e3:,.1f}"))
    return data
