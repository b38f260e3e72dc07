"""Text-to-image diffusion pipelines (diffusers' StableDiffusion / SDXL / SD3 / Flux pipelines) at inference.

One image (a batch of B images) costs:
    the text encoders once per prompt (and per negative prompt with classifier-free guidance),
    ``steps`` denoiser forwards at batch B x passes (classifier-free guidance concatenates the
    unconditional and conditional latents: passes = 2; guidance-distilled models such as FLUX.1-dev feed
    the guidance scale as an input: passes = 1; Ho & Salimans 2022),
    one VAE decode of B images at full resolution.
Memory holds every component's weights (no offload) plus the larger of the denoiser's live activations
and the VAE decoder's (reserved memory holds both: the caching allocator keeps the denoiser's freed segments, which
the decoder's differently sized tensors do not fill): at the decoder's last up block, ``vae_decode_live_channels`` channels of the
full-resolution image are live at once (the block input kept for the residual, the GroupNorm output and
its SiLU: 256 + 256 + 256 at 1024 x 1024 for the SD/SDXL decoder), in fp32 where the pipeline upcasts the
VAE (SDXL: force_upcast). That decode is the peak at 1024 px, not the UNet.

Context parallelism (``parallel.cp``: xDiT's and diffusers' Ulysses degree, DiT pipelines only) splits each
denoiser pass's token sequence over cp GPUs: each runs 1/cp of its FLOPs and activations, holds every weight, and
pays four all-to-alls per attention layer (comm.ulysses_all_to_all_s over the pipeline's ``attention_hidden`` and
``attention_layers``); the text encoders and the VAE decode run whole on every GPU.

Attention without a fused kernel (``flash_attention: false``: diffusers' ``Attention.get_attention_scores``,
baddbmm then softmax, the default before xformers / torch 2.0's SDPA) writes every head's tokens x tokens scores to
HBM and reads them back: the prefill's rule (forward.unfused_scores_s, inference.unfused_attention_bytes_per_score)
over the pipeline's ``self_attention`` geometry (per group of layers: the share of the latent's pixels that are its
tokens, the text tokens joined to them, heads, layers; cross-attention over 77 text tokens is left out, under 2 % of
the scores), and the largest layer's scores and their softmax stay live (2 tensors in the pipeline's dtype).
"""

from __future__ import annotations

from dataclasses import replace

from gpuplan.errors import GpuplanError
from gpuplan.estimate.clocks import matmul_dtype
from gpuplan.estimate.comm import ulysses_all_to_all_s
from gpuplan.estimate.forward import ForwardCost, ForwardTime, forward_time, unfused_scores_s
from gpuplan.estimate.memory import MemoryEstimate
from gpuplan.estimate.params import table
from gpuplan.estimate.profile import (
    InputScale,
    NonLLMResult,
    conv_flops_share,
    dense_bytes,
    denoiser_weight_bytes,
    empty_perf,
    forward_cost,
    image_side,
    pipeline_memory,
    quantized_denoiser_note,
    text_tokens,
)
from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import N_, _

# phases of a pipeline's memory peak (put into the notes at run time)
PHASES = (N_("VAE decode"), N_("denoising"))


def _pipe(model) -> dict:
    return dict(model.profile.pipeline or {})


def guidance_passes(model) -> int:
    """Denoiser forwards per step and image: 2 with classifier-free guidance (the pipeline's default),
    1 for guidance-distilled models (pipeline cfg: false)."""
    return 2 if _pipe(model).get("cfg", True) else 1


def component_params(model) -> tuple[float, float, float]:
    """(denoiser, text encoders, VAE) parameters: profile components, else all in the denoiser."""
    comps = model.profile.components or {}
    denoiser = float(comps.get("unet") or comps.get("transformer") or 0.0)
    vae = float(comps.get("vae") or 0.0)
    text = sum(float(v) for k, v in comps.items() if k.startswith("text_encoder"))
    if not denoiser:
        return float(model.params_total) - text - vae, text, vae
    return denoiser, text, vae


def image_sizes(model, inp: dict | None) -> tuple[int, int]:
    """(image side in pixels, denoising steps): the workload's input, else the pipeline's defaults (its reference
    image size, its default steps). The estimate times these and the bundle's image scripts run them
    (render/bundle/serving.py): one function for both."""
    prof, pipe, inp = model.profile, _pipe(model), inp or {}
    side = int(round(image_side(inp) or (prof.reference_input or {}).get("image_size") or 1024))
    steps = int(inp.get("steps") or pipe.get("default_steps") or table("nonllm")["default_diffusion_steps"])
    return side, steps


def text_encoder_flops(model, inp: dict | None) -> float:
    """FLOPs of the text encoders for one prompt: the pipeline's figure at its default prompt length, in proportion
    to the T5 tokens a joint-attention pipeline is given (``input.text_tokens``; CLIP's fixed 77 tokens are a few
    per cent of it and scale along)."""
    base = float(_pipe(model).get("text_encoder_flops_per_prompt", 0.0))
    text = text_tokens(model.profile, inp)
    return base * text[0] / text[1] if text is not None else base


def text_encoder_cost(model, precision: str, tf32: bool = True, inp: dict | None = None) -> ForwardCost:
    """The text encoders' forward for one prompt (FLOPs at the prompt's T5 length, their weights read once per
    call): what a training step without precomputed conditioning runs beside the denoiser."""
    pipe = _pipe(model)
    _denoiser, text_p, _vae = component_params(model)
    cpu = forward_cost(model, InputScale(), precision, params=1.0, tf32=tf32).cpu_factor
    return ForwardCost(text_encoder_flops(model, inp), 0.0, text_p * dense_bytes(precision),
                       float(pipe.get("text_encoder_kernels", 0.0)), matmul_dtype(precision, tf32), cpu)


def _costs(model, precision: str, scale, side: int, tf32: bool = True,
           inp: dict | None = None) -> tuple[ForwardCost, ForwardCost, ForwardCost]:
    """(denoiser forward, text encoders per prompt, VAE decode per image) at batch 1. ``tf32`` False: the matmuls on
    the FP32 cores; the VAE decoder is convolutions, which stay on TF32 (clocks.conv_dtype), so its rate is the
    precision's whatever ``tf32`` says."""
    pipe = _pipe(model)
    denoiser_p, text_p, vae_p = component_params(model)
    b = dense_bytes(precision)
    denoiser = forward_cost(model, scale, precision, params=denoiser_p, tf32=tf32)
    text = ForwardCost(text_encoder_flops(model, inp), 0.0, text_p * b,
                       float(pipe.get("text_encoder_kernels", 0.0)), matmul_dtype(precision, tf32), denoiser.cpu_factor)
    vae_prec = "fp32" if pipe.get("vae_upcast") else precision
    pixels = float(side) ** 2
    live = float(pipe.get("vae_decode_live_channels", 0.0)) * dense_bytes(vae_prec) * pixels
    vae = ForwardCost(float(pipe.get("vae_decode_flops_per_pixel", 0.0)) * pixels,
                      live * float(table("nonllm")["activation_traffic_per_saved_byte"]), vae_p * dense_bytes(vae_prec),
                      float(pipe.get("vae_decode_kernels", 0.0)), vae_prec, denoiser.cpu_factor)
    return denoiser, text, vae


def self_attention_scores(model, side: int) -> tuple[float, float]:
    """(scores of every self-attention layer of one denoiser pass, the largest layer's) for one image at ``side``
    pixels, from the pipeline's ``self_attention`` groups [latent-pixel share, text tokens, heads, layers]."""
    pipe = _pipe(model)
    latent = (float(side) / float(pipe.get("vae_scale") or 8)) ** 2
    total = largest = 0.0
    for share, extra, heads, layers in pipe.get("self_attention") or ():
        per_layer = float(heads) * (float(share) * latent + float(extra)) ** 2
        total += per_layer * float(layers)
        largest = max(largest, per_layer)
    return total, largest


def context_parallel_shape(model, layout: Layout) -> tuple[float, float] | None:
    """(attention hidden size, attention layers) of a DiT pipeline split over ``layout.cp`` GPUs (Ulysses), None
    without context parallelism; one clear error for a pipeline whose denoiser is not a transformer."""
    if layout.cp <= 1:
        return None
    pipe = _pipe(model)
    if not pipe.get("attention_hidden") or not pipe.get("attention_layers"):
        raise GpuplanError(_("Context parallelism (parallel.cp {cp}) splits a diffusion transformer's token "
                             "sequence; {model} has no transformer denoiser this estimate knows.").format(
                               cp=layout.cp, model=model.id),
                           hint=_("Drop parallel.cp (a UNet pipeline runs on one GPU; more GPUs serve more images), "
                                  "or name a DiT pipeline (FLUX, SD3, PixArt)."), field="parallel")
    return float(pipe["attention_hidden"]), float(pipe["attention_layers"])


def diffusion_memory(model, *, precision: str, batch: int, side: int, scale, system: System,
                     layout: Layout, flash: bool = True, quantization: str = "none") -> MemoryEstimate:
    """Weights of every component (the denoiser in its storage format: profile.denoiser_weight_bytes) + the larger
    of the denoiser's and the VAE decoder's live tensors."""
    pipe, prof = _pipe(model), model.profile
    nl = table("nonllm")
    denoiser_p, text_p, vae_p = component_params(model)
    vae_b = 4.0 if pipe.get("vae_upcast") else dense_bytes(precision)
    weights = denoiser_p * denoiser_weight_bytes(precision, quantization) + text_p * dense_bytes(precision) \
        + vae_p * vae_b
    per_sample = pipe.get("inference_activation_bytes_per_sample")
    denoise_act = (float(per_sample) * scale.activations if per_sample is not None else
                   prof.activation_bytes_per_sample * scale.activations * float(nl["inference_activation_share"]))
    per_pass = batch * guidance_passes(model) * dense_bytes(precision) / max(1, layout.cp)   # 2-byte units above
    # unfused attention: the largest layer's scores and their softmax (get_attention_scores), each one tensor
    score_tensor = 0.0 if flash else self_attention_scores(model, side)[1] * per_pass
    denoise_act = denoise_act * per_pass / 2.0 + 2.0 * score_tensor
    vae_act = float(pipe.get("vae_decode_live_channels", 0.0)) * vae_b * float(side) ** 2 * batch
    acts = max(denoise_act, vae_act)
    phase = PHASES[0] if vae_act >= denoise_act else PHASES[1]
    # reserved memory holds both phases when the decoder's tensors (a third of its live channels each) are larger than
    # the denoiser's freed blocks: the caching allocator keeps those segments and allocates new ones (as the training
    # step's logits and recomputed layer: memory/train.py); the denoiser's unfused score blocks are larger, and the
    # decoder's tensors are carved from them
    cached = min(denoise_act, vae_act) if score_tensor < vae_act / 3.0 else 0.0
    return pipeline_memory(weights, acts, system=system, layout=layout, host_bytes=weights, phase=phase,
                           cached=cached)


def diffusion_inference(model, *, precision: str, batch: int, inp: dict, framework: str, layout: Layout,
                        system: System, scale, notes: list[str], flash: bool = True, quantization: str = "none",
                        tf32: bool = True, attention_kernel: str | None = None):
    """Memory and speed of generating ``batch`` images (see the module docstring)."""
    side, steps = image_sizes(model, inp)
    passes = guidance_passes(model)
    pipe = _pipe(model)
    mem = diffusion_memory(model, precision=precision, batch=batch, side=side, scale=scale, system=system,
                           layout=layout, flash=flash, quantization=quantization)
    if quantization not in (None, "none"):
        notes.append(quantized_denoiser_note(precision, quantization, component_params(model)[0]
                                             * denoiser_weight_bytes(precision, quantization)))
    denoiser, text, vae = _costs(model, precision, scale, side, tf32, inp)
    if precision == "fp32" and not tf32 and conv_flops_share(model) is None:
        notes.append(_("tf32: false: the split of {arch}'s FLOPs between convolutions (on TF32) and matmuls (on the FP32 "
                       "cores) is not counted here: all of them are timed on the FP32 cores, the slow end").format(
            arch=model.arch))
    scores = self_attention_scores(model, side)[0]
    if not flash and scores:
        # the scores of every head go through HBM: the prefill's rule and bytes (forward.unfused_scores_s)
        unfused = scores * float(table("inference", "unfused_attention_bytes_per_score"))
        denoiser = replace(denoiser, traffic_bytes_per_sample=denoiser.traffic_bytes_per_sample + unfused)
        notes.append(_("attention without a fused kernel: every denoiser pass moves {gb:.1f} GB of attention scores "
                       "per image through HBM ({ms:.1f} ms)").format(
            gb=unfused / 1e9, ms=unfused_scores_s(system, scores, float(table("inference", "unfused_attention_bytes_per_score"))) * 1e3))
    split = context_parallel_shape(model, layout)
    cp = max(1, layout.cp)
    step: ForwardTime = forward_time(denoiser.scaled(flops=1.0 / cp, traffic=1.0 / cp), batch * passes, system,
                                     framework, notes, attention_kernel)
    a2a_s = 0.0
    if split is not None:
        tokens = float((model.profile.reference_input or {}).get("tokens") or 0.0) * scale.activations
        a2a_s = ulysses_all_to_all_s(system, cp, tokens * batch * passes, split[0], split[1])
        step = ForwardTime(step.seconds + a2a_s, step.cpu_s, step.gpu_s + a2a_s)
        notes.append(_("context parallel {cp} (Ulysses): each GPU runs 1/{cp} of every denoiser pass's {tokens} tokens "
                       "and holds every weight; the all-to-alls add {ms:.1f} ms per step; the text encoders and the VAE "
                       "run whole on each GPU").format(cp=cp, tokens=f"{tokens:,.0f}", ms=a2a_s * 1e3))
    text_s = forward_time(text, batch * passes, system, framework, attention_kernel=attention_kernel).seconds if text.kernels or text.flops_per_sample else 0.0
    vae_s = forward_time(vae, batch, system, framework).seconds if vae.flops_per_sample else 0.0
    total = text_s + steps * step.seconds + vae_s
    perf = empty_perf()
    perf.update(ttft_s=total, latency_s=total, max_concurrency=batch, max_requests_per_s=batch / total,
                samples_per_s=batch / total, images_per_s=batch / total, denoising_steps_per_s=1.0 / step.seconds,
                step_time_s=None,
                tflops_per_gpu=denoiser.flops_per_sample * batch * passes / cp / step.seconds / 1e12)
    notes.append(_("{steps} denoising steps at {side} px, {passes} denoiser pass(es) per step and image "
                   "({guidance}): {step_ms:.0f} ms per step, text encoders {text_ms:.0f} ms, VAE decode {vae_ms:.0f} ms").format(
        steps=steps, side=side, passes=passes, step_ms=step.seconds * 1e3, text_ms=text_s * 1e3, vae_ms=vae_s * 1e3,
        guidance=_("classifier-free guidance") if passes == 2 else _("guidance-distilled, no CFG batch")))
    notes.append(_("peak memory in the {phase} phase: every component's weights stay on the GPU{upcast}").format(
        phase=_(mem.peak_phase), upcast=_(" (the VAE upcast to fp32)") if pipe.get("vae_upcast") else ""))
    return NonLLMResult(memory=mem, performance=perf, notes=notes)
