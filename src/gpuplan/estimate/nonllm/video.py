"""Text-to-video diffusion pipelines (CogVideoX, Wan2.1, HunyuanVideo, LTX-Video) at inference.

A profile's ``pipeline.video`` block gives the shapes; the workload gives frames, height, width and steps
(``input.frames``, ``input.height``, ``input.width``, ``input.steps``; the pipeline's defaults otherwise).

    latent frames  = (frames - 1) / vae_temporal + 1           (causal 3D VAEs keep the first frame alone)
    video tokens L = latent frames / patch_t x (H / vae_spatial / patch_s) x (W / vae_spatial / patch_s)
    one DiT pass   = 2 x linear_params x tokens                 (every token through every block's linears)
                   + layers x 4 x T^2 x hidden                  (QK^T and AV; T = L + text tokens for joint
                                                                  attention, L for cross-attention to the text)
                   + layers x 4 x L x text_tokens x hidden      (cross-attention, where the model has it)
    one video      = text encoder + steps x passes x DiT pass + 3D VAE decode of every pixel of every frame

At 720p the attention term is most of a pass (Wan2.1-14B, 75,600 tokens: 4.7e15 of 6.8e15 FLOPs), so time
grows faster than linearly with frames at a fixed resolution. Passes per step are the pipeline's default
classifier-free guidance: 2 (CogVideoX, Wan, LTX-Video), 1 for embedded guidance (HunyuanVideo);
``cfg_batched: false`` where the pipeline runs the two as separate batch-1 forwards (Wan's generate.py).

Memory holds the resident weights and the largest phase's live tensors: the DiT's live tensors at the
peak of one block (``live_bytes_per_token`` x tokens, x the CFG batch) or the 3D VAE decoder's
(``vae_decode_bytes_per_pixel_frame`` x the pixel-frames it decodes at once: a batch of frames, or one tile
where the pipeline tiles by default). ``input.offload``: ``model`` (diffusers enable_model_cpu_offload,
Wan --offload_model) keeps one component on the GPU at a time, each copied over PCIe once per video;
``sequential`` (enable_sequential_cpu_offload) streams every submodule's weights for every forward.

``parallel.cp`` splits every DiT pass's sequence over cp GPUs (Ulysses: Wan's generate.py --ulysses_size, xDiT's
ulysses_degree): each GPU runs 1/cp of the FLOPs and live tensors, holds every weight and pays four all-to-alls per
attention layer (comm.ulysses_all_to_all_s); the text encoder and the 3D VAE decode run whole on every GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.clocks import matmul_dtype
from gpuplan.estimate.comm import ulysses_all_to_all_s
from gpuplan.estimate.forward import ForwardCost, forward_time
from gpuplan.estimate.memory import MemoryEstimate
from gpuplan.estimate.params import table
from gpuplan.estimate.profile import (
    NonLLMResult,
    dense_bytes,
    denoiser_weight_bytes,
    empty_perf,
    pipeline_memory,
    quantized_denoiser_note,
)
from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import N_, _
from gpuplan.units import GIB

PHASES = (N_("VAE decode"), N_("denoising"), N_("text encoding"))
OFFLOAD = ("none", "model", "sequential")


def is_video(model) -> bool:
    return bool((getattr(model.profile, "pipeline", None) or {}).get("video"))


def video_block(model) -> dict:
    return dict((model.profile.pipeline or {}).get("video") or {})


@dataclass(frozen=True)
class VideoShape:
    frames: int
    height: int
    width: int
    steps: int
    latent_frames: int
    tokens: int            # video tokens of the DiT
    text_tokens: int
    offload: str


def video_shape(model, inp: dict) -> VideoShape:
    v, pipe = video_block(model), dict(model.profile.pipeline or {})
    frames = int(inp.get("frames") or v["default_frames"])
    side = inp.get("image_size")
    height = int(inp.get("height") or side or v["default_height"])
    width = int(inp.get("width") or side or v["default_width"])
    steps = int(inp.get("steps") or pipe.get("default_steps") or table("nonllm")["default_diffusion_steps"])
    lat_f = (frames - 1) // int(v["vae_temporal"]) + 1
    sp = int(v["vae_spatial"]) * int(v.get("patch_s", 2))
    pt = int(v.get("patch_t", 1))
    tokens = -(-lat_f // pt) * -(-height // sp) * -(-width // sp)
    offload = str(inp.get("offload") or "none")
    return VideoShape(frames, height, width, steps, lat_f, tokens, int(v.get("text_tokens", 0)), offload)


def dit_sequence(v: dict, s: VideoShape) -> tuple[bool, float]:
    """(whether the text joins the video tokens in one sequence, that sequence's length)."""
    joint = v.get("text_attention", "joint") == "joint"
    return joint, float(s.tokens + (s.text_tokens if joint else 0))


def dit_flops(model, s: VideoShape) -> float:
    """FLOPs of one DiT pass for one video (see the module docstring)."""
    v = video_block(model)
    return 2.0 * float(v["linear_params"]) * dit_sequence(v, s)[1] + dit_attention_flops(model, s)


def dit_attention_flops(model, s: VideoShape) -> float:
    """The attention kernel's part of :func:`dit_flops`: QK^T and AV over the joint (or video) sequence, plus the
    cross-attention to the text tokens where the text is not joint."""
    v = video_block(model)
    layers, hidden = float(v["layers"]), float(v["hidden"])
    joint, seq = dit_sequence(v, s)
    flops = layers * 4.0 * seq ** 2 * hidden
    if not joint:
        flops += layers * 4.0 * s.tokens * s.text_tokens * hidden
    return flops


def dit_cost(model, s: VideoShape, precision: str, weight_bytes: float) -> ForwardCost:
    """One DiT pass over one video: its FLOPs, the activation traffic of its blocks, the weights it reads."""
    v = video_block(model)
    traffic = float(v["live_bytes_per_token"]) * s.tokens * float(v["layers"]) \
        * float(table("nonllm", "activation_traffic_per_saved_byte"))
    return ForwardCost(dit_flops(model, s), traffic, weight_bytes, float(model.profile.kernels_per_forward or 0.0),
                       precision, float(table("nonllm", "eager_cpu_factor").get("diffusion", 1.0)),
                       attention_flops_per_sample=dit_attention_flops(model, s))


def passes(model) -> int:
    return 2 if (model.profile.pipeline or {}).get("cfg", True) else 1


def _weights(model, precision: str, quantization: str = "none") -> tuple[float, float, float]:
    """Bytes of (DiT, text encoders, VAE) weights as the pipeline holds them (a weight-only quantized DiT in its
    storage format: profile.denoiser_weight_bytes)."""
    comps, v = model.profile.components or {}, video_block(model)
    den = float(comps.get("transformer") or comps.get("unet") or 0.0)
    vae = float(comps.get("vae") or 0.0)
    text = sum(float(x) for k, x in comps.items() if k.startswith("text_encoder"))
    b = dense_bytes(precision)
    den_b = float(v.get("denoiser_weight_bytes", b)) if quantization in (None, "none") else \
        denoiser_weight_bytes(precision, quantization)
    return (den * den_b, text * float(v.get("text_weight_bytes", b)), vae * float(v.get("vae_weight_bytes", b)))


def _vae_pixel_frames(v: dict, s: VideoShape) -> float:
    """Pixel-frames the decoder holds at once: a tile (frames, height, width) where the pipeline tiles by
    default, else a batch of frames at full resolution."""
    tile = v.get("vae_decode_tile")
    if tile:
        return float(min(s.frames, tile[0]) * min(s.height, tile[1]) * min(s.width, tile[2]))
    return float(min(s.frames, int(v.get("vae_decode_frames_in_flight") or s.frames)) * s.height * s.width)


def video_memory(model, *, precision: str, batch: int, s: VideoShape, system: System,
                 layout: Layout, quantization: str = "none") -> MemoryEstimate:
    v = video_block(model)
    den_w, text_w, vae_w = _weights(model, precision, quantization)
    cfg_batch = passes(model) if v.get("cfg_batched", True) else 1
    den_act = float(v["live_bytes_per_token"]) * s.tokens * batch * cfg_batch / max(1, layout.cp)
    vae_act = float(v["vae_decode_bytes_per_pixel_frame"]) * _vae_pixel_frames(v, s) * batch
    phases = {PHASES[1]: (den_w, den_act), PHASES[0]: (vae_w, vae_act), PHASES[2]: (text_w, 0.0)}
    if s.offload == "model":        # one component on the GPU at a time
        phase, (w, acts) = max(phases.items(), key=lambda kv: kv[1][0] + kv[1][1])
        weights = w
    elif s.offload == "sequential":  # one block's weights at a time
        weights = den_w / float(v["layers"])
        phase, (_w, acts) = max(phases.items(), key=lambda kv: kv[1][1])
    else:
        weights = den_w + text_w + vae_w
        phase, (_w, acts) = max(phases.items(), key=lambda kv: kv[1][1])
    return pipeline_memory(weights, acts, system=system, layout=layout,
                           host_bytes=den_w + text_w + vae_w - weights, phase=phase)


def _host_link_bytes_s(system: System) -> float:
    comm = table("communication")
    gen = system.gpu.pcie_gen or 4
    return float(comm["pcie_gb_s"].get(gen, comm["pcie_gb_s"][4])) * 1e9 * float(comm["pcie_efficiency"])


def video_inference(model, *, precision: str, batch: int, inp: dict, framework: str, layout: Layout,
                    system: System, notes: list[str], quantization: str = "none", tf32: bool = True,
                    attention_kernel: str | None = None) -> NonLLMResult:
    """Memory and time of generating ``batch`` videos in one pipeline call (see the module docstring)."""
    v = video_block(model)
    s = video_shape(model, inp)
    n_pass = passes(model)
    batched = bool(v.get("cfg_batched", True))
    mem = video_memory(model, precision=precision, batch=batch, s=s, system=system, layout=layout,
                       quantization=quantization)
    den_w, text_w, vae_w = _weights(model, precision, quantization)
    if quantization not in (None, "none"):
        notes.append(quantized_denoiser_note(precision, quantization, den_w))
    cpu_factor = float(table("nonllm", "eager_cpu_factor").get("diffusion", 1.0))
    cp = max(1, layout.cp)
    rate = matmul_dtype(precision, tf32)   # the DiT and the text encoders' matmuls; the VAE's convolutions keep TF32
    dit = dit_cost(model, s, rate, den_w).scaled(flops=1.0 / cp, traffic=1.0 / cp)
    seq = dit_sequence(v, s)[1]
    if batched:
        step = forward_time(dit, batch * n_pass, system, framework, notes, attention_kernel).seconds
        a2a = ulysses_all_to_all_s(system, cp, seq * batch * n_pass, float(v["hidden"]), float(v["layers"]))
    else:
        step = n_pass * forward_time(dit, batch, system, framework, notes, attention_kernel).seconds
        a2a = n_pass * ulysses_all_to_all_s(system, cp, seq * batch, float(v["hidden"]), float(v["layers"]))
    step += a2a
    if cp > 1:
        notes.append(_("context parallel {cp} (Ulysses): each GPU runs 1/{cp} of every DiT pass's {tokens} tokens and "
                       "holds every weight; the all-to-alls add {sec:.2f} s per step; the text encoder and the 3D VAE "
                       "run whole on each GPU").format(cp=cp, tokens=f"{seq:,.0f}", sec=a2a))
    text = ForwardCost(float(v.get("text_encoder_flops_per_prompt", 0.0)), 0.0, text_w,
                       float(v.get("text_encoder_kernels", 0.0)), rate, cpu_factor)
    text_s = forward_time(text, batch * n_pass, system, framework, attention_kernel=attention_kernel).seconds if text.flops_per_sample else 0.0
    pix = float(s.frames * s.height * s.width)
    vae = ForwardCost(float(v.get("vae_decode_flops_per_pixel_frame", 0.0)) * pix,
                      float(v["vae_decode_bytes_per_pixel_frame"]) * pix, vae_w,
                      float(v.get("vae_decode_kernels", 0.0)), precision, cpu_factor)
    vae_s = forward_time(vae, batch, system, framework).seconds if vae.flops_per_sample else 0.0
    link = _host_link_bytes_s(system)
    forwards = s.steps * (1 if batched else n_pass)
    offload_s = {"model": (den_w + text_w + vae_w) / link,
                 "sequential": (den_w * forwards + text_w + vae_w) / link}.get(s.offload, 0.0)
    total = text_s + s.steps * step + vae_s + offload_s
    perf = empty_perf()
    perf.update(ttft_s=total, latency_s=total, max_concurrency=batch, max_requests_per_s=batch / total,
                samples_per_s=batch / total, denoising_steps_per_s=1.0 / step, step_time_s=None,
                tflops_per_gpu=dit.flops_per_sample * batch * n_pass / step / 1e12)   # the GPU's 1/cp share
    notes.append(_("{frames} frames at {width}x{height}: {latent} latent frames, {tokens} video tokens per DiT pass; "
                   "{steps} steps x {passes} pass(es) ({guidance}): {step_s:.2f} s per step, text encoder "
                   "{text_s:.1f} s, 3D VAE decode {vae_s:.1f} s").format(
        frames=s.frames, width=s.width, height=s.height, latent=s.latent_frames, tokens=f"{s.tokens:,}",
        steps=s.steps, passes=n_pass, step_s=step, text_s=text_s, vae_s=vae_s,
        guidance=_("classifier-free guidance") if n_pass == 2 else _("embedded guidance, no CFG batch")))
    if s.offload != "none":
        notes.append(_("CPU offload ({mode}): {gib:.1f} GiB of weights stay in host memory; PCIe copies add "
                       "{sec:.0f} s per video").format(mode=s.offload, gib=(den_w + text_w + vae_w - mem.components["weights"]) / GIB,
                                                       sec=offload_s))
    notes.append(_("peak memory in the {phase} phase").format(phase=_(mem.peak_phase)))
    return NonLLMResult(memory=mem, performance=perf, notes=notes)
