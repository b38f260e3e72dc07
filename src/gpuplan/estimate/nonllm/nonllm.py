"""Non-LLM models (CNN, ViT, diffusion, speech): a profile measured at a reference input, scaled.

A profile (data/models.yaml) gives parameters, forward FLOPs per sample and training activation
bytes per sample at a reference input size, how both grow with the input (e.g. image_size^2), and the
ops one eager forward launches. Time comes from :mod:`gpuplan.estimate.forward` (launch-bound at small
batch, FLOPs- and traffic-bound at large batch). Training costs 3x the forward FLOPs (forward +
backward, Kaplan et al. 2020 §2.1); inference keeps only the live tensors of a forward pass
(nonllm.inference_activation_share of the training activations). Diffusion pipelines (text encoders,
denoiser steps with classifier-free guidance, VAE decode) are in :mod:`gpuplan.estimate.nonllm.diffusion`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpuplan.errors import GpuplanError
from gpuplan.estimate.nonllm.diffusion import diffusion_inference, text_encoder_cost
from gpuplan.estimate.nonllm.video import is_video, video_inference
from gpuplan.estimate.nonllm.video_training import dit_training_activations, dit_training_cost
from gpuplan.estimate.forward import ForwardCost, forward_time
from gpuplan.estimate.memory import COMPONENTS, MemoryEstimate, overhead_fixed
from gpuplan.estimate.nonllm.trained_weights import TrainedWeights, trained_weights
from gpuplan.estimate.training.costs import dequant_weights_s
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.clocks import matmul_dtype, peak_flops, sustained_flops, training_kernel
from gpuplan.estimate.profile import InputScale, NonLLMResult, dense_bytes, empty_perf, forward_cost, input_scale
from gpuplan.estimate.nonllm.speech import ct2_compute_type, ct2_memory, runs_faster_whisper, speech_cache_bytes, speech_latency, window_tokens
from gpuplan.i18n import _
from gpuplan.units import GIB

__all__ = ["NonLLMResult", "input_scale", "nonllm_estimate", "refuse_unmodelled_quantization"]


def eager_attention_scores(model) -> tuple[float, float]:
    """(attention scores of one image's forward, the largest layer's) of a vision model whose profile states its
    attention geometry (``pipeline.eager_attention``: [tokens per attention, attentions per image, heads, layers]
    groups; Segment Anything's windowed and global blocks), else (0, 0)."""
    total = largest = 0.0
    for tokens, per_image, heads, layers in (model.profile.pipeline or {}).get("eager_attention") or ():
        per_layer = float(heads) * float(per_image) * float(tokens) ** 2
        total += per_layer * float(layers)
        largest = max(largest, per_layer)
    return total, largest


def _memory(model, *, training: bool, precision: str, batch: int, scale: InputScale, optimizer: str,
            framework: str, layout: Layout, system: System, notes: list[str],
            trained: TrainedWeights | None = None, inp: dict | None = None, flash: bool = True) -> MemoryEstimate:
    if not training and runs_faster_whisper(model, framework):
        return ct2_memory(model, batch=batch, compute_type=ct2_compute_type(precision), layout=layout,
                          system=system, notes=notes, per_window=window_tokens(inp))
    prof = model.profile
    nl = table("nonllm")
    mem_tab = table("memory")
    params = float(model.params_total)
    ctx, nccl = overhead_fixed(system)
    weights = trained.weights if trained is not None else params * dense_bytes(precision)
    comp = dict.fromkeys(COMPONENTS, 0.0)
    comp["weights"] = weights / (layout.dp if layout.zero >= 3 else 1)
    # Whisper pads every input to one 30 s window and transcribes longer audio window after window (long-form
    # generate): a batch element holds one window's activations and caches whatever the audio's length
    speech = model.kind == "speech"
    acts = prof.activation_bytes_per_sample * (1.0 if speech else scale.activations) * batch
    if training:
        assert trained is not None
        states = trained.optimizer / (layout.dp if layout.zero >= 1 else 1)
        grads = trained.gradients / (layout.dp if layout.zero >= 2 else 1)
        comp["adapters"] = trained.adapters / (layout.dp if layout.zero >= 3 else 1)
        comp["weights"] -= comp["adapters"]
        if is_video(model):   # a video DiT: by its clip's tokens (video_training)
            acts = dit_training_activations(model, inp or {}, batch=batch, checkpointing=layout.checkpointing,
                                            precision=precision, notes=notes)
        else:
            acts *= 2.0 if precision == "fp32" else 1.0
            if layout.checkpointing == "full" and prof.checkpointed_activation_bytes_per_sample > 0:
                share = prof.checkpointed_activation_bytes_per_sample / prof.activation_bytes_per_sample
                acts *= share
                notes.append(_("checkpointing keeps each encoder layer's input and one layer's activations, {share:.0%} "
                               "of them (Korthikanti et al. 2022)").format(share=share))
            elif layout.checkpointing == "full":
                acts *= nl["checkpointed_activation_share"]
                notes.append(_("checkpointing keeps about {nl:.0%} of the activations (assumed for non-LLM models)").format(nl=nl['checkpointed_activation_share']))
        comp.update(gradients=grads, optimizer=states, activations=acts)
    else:
        # the live tensors of a forward, in the compute dtype (the training figure is bf16's: fp32 holds twice)
        comp["activations"] = acts * nl["inference_activation_share"] * dense_bytes(precision) / 2.0
        notes.append(_("inference keeps about {nl:.0%} of the training activations live (assumed)").format(nl=nl['inference_activation_share']))
        scores = eager_attention_scores(model)[1] if not flash else 0.0
        if scores:   # the largest layer's scores and the tensor made from them (their softmax) stay live
            comp["activations"] += 2.0 * scores * batch * dense_bytes(precision)
            notes.append(_("attention without a fused kernel: the largest layer's {n:,.0f} scores per image and their "
                           "softmax are live at once").format(n=scores))
        if speech:   # every hypothesis's cross- and self-attention cache of its window (nonllm.speech_beam_size)
            comp["kv_cache"] = speech_cache_bytes(model, precision, 1.0, window_tokens(inp))[1] * batch
    alloc = sum(comp.values()) + mem_tab["workspace_bytes"]
    reserved = alloc * (1 + mem_tab["reserve_fraction_of_total"]) + 0.1 * comp["activations"]
    per_gpu = reserved + ctx + nccl
    comp["overhead"] = per_gpu - sum(v for k, v in comp.items() if k != "overhead")
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                          capacity_bytes=system.capacity_bytes, components=comp,
                          host_bytes=weights + 4 * GIB * system.gpus_per_node, peak_phase="step",
                          total_bytes=per_gpu * layout.gpus, notes=[])


def _training_perf(model, cost: ForwardCost, *, batch: int, framework: str, layout: Layout, system: System,
                   notes: list[str], trained: TrainedWeights, attention_kernel: str | None = None,
                   conditioning: ForwardCost | None = None) -> dict:
    """A training step: forward + backward = 3x the forward's FLOPs, traffic and launches (+1 forward with full
    recomputation), the weights read and their gradients written; adapters (LoRA / QLoRA) backpropagate input
    gradients only: 2x (training.costs.flops_per_token's rule), and a QLoRA base is dequantised in every pass
    (training.dequant_traffic, as the language models' NF4 bases)."""
    passes = 2.0 if trained.trainable < trained.trained_network else 3.0
    recompute = 1.0 if layout.checkpointing == "full" else 0.0
    f = passes + recompute
    step_cost = cost.scaled(flops=f, traffic=f, weights=passes, kernels=f)
    micro = forward_time(step_cost, batch, system, framework, notes, training_kernel(attention_kernel)).seconds
    if trained.quantized_bytes:   # a QLoRA base, dequantised in every pass (the language models' rule)
        micro += dequant_weights_s(system, trained.trained_network, layout, "bnb-nf4")
    if conditioning is not None:  # the frozen text encoders run on every micro-batch's prompts (no backward)
        cond_s = forward_time(conditioning, batch, system, framework, []).seconds
        micro += cond_s
        notes.append(_("the text encoders encode each micro-batch's {batch} prompt(s): {ms:.0f} ms per micro-batch "
                       "(the VAE's encoding of the images is not timed)").format(batch=batch, ms=cond_s * 1e3))
    # an optimizer step runs grad_accum micro-batches
    step = micro * max(1, layout.grad_accum)
    gpus = layout.gpus
    samples_per_s = batch * max(1, layout.grad_accum) * gpus / step
    peak = peak_flops(system, cost.precision, [])   # the rate the step's matmuls run at (clocks.matmul_dtype)
    perf = empty_perf()
    perf.update(step_time_s=step, samples_per_s=samples_per_s, images_per_s=samples_per_s,
                mfu=passes * cost.flops_per_sample * samples_per_s / gpus / peak,
                tflops_per_gpu=step_cost.flops_per_sample * batch / micro / 1e12, comm_fraction=0.0)
    return perf


def _inference_perf(model, cost: ForwardCost, *, batch: int, framework: str, system: System,
                    scale: InputScale, precision: str, notes: list[str], tf32: bool = True,
                    inp: dict | None = None, attention_kernel: str | None = None) -> dict:
    ft = forward_time(cost, batch, system, framework, notes, attention_kernel)
    latency, per_sample = ft.seconds, cost.flops_per_sample
    prof = model.profile
    per_item = 1.0
    if model.kind == "speech" and prof.components.get("decode_flops_per_token"):
        peak = sustained_flops(system, matmul_dtype(precision, tf32), notes)
        eff = table("nonllm", "compute_efficiency") * by_key(table("training", "framework_factor"), framework, "auto")
        latency, per_sample, per_item = speech_latency(model, scale=scale.flops, batch=batch, precision=precision,
                                                      framework=framework, system=system, peak=peak, eff=eff,
                                                      notes=notes, inp=inp)
    else:
        notes.append(_("{batch} sample(s) per forward: {ms:.2f} ms ({bound}-bound: CPU launches {cpu_ms:.2f} ms, "
                       "GPU {gpu_ms:.2f} ms)").format(batch=batch, ms=latency * 1e3, bound=_(ft.bound),
                                                    cpu_ms=ft.cpu_s * 1e3, gpu_ms=ft.gpu_s * 1e3))
    perf = empty_perf()
    items = batch / per_item    # faster-whisper batches 30 s windows; a longer clip is several of them
    # one clip's windows go through the batches one after another: its latency is that many batches
    passes = max(1, math.ceil(per_item / batch - 1e-9)) if per_item > 1.0 else 1
    clip = latency * passes
    if passes > 1:
        notes.append(_("a clip of {windows:.1f} windows of 30 s takes {passes} batch(es) of {batch}: {s:.2f} s").format(
            windows=per_item, passes=passes, batch=batch, s=clip))
    perf.update(ttft_s=latency, max_concurrency=batch, max_requests_per_s=items / latency, latency_s=clip,
                samples_per_s=items / latency, tflops_per_gpu=per_sample * items / latency / 1e12)
    if model.kind == "vision":
        perf["images_per_s"] = batch / latency
    return perf


def refuse_unmodelled_quantization(model, task: str, quantization: str | None, precision: str) -> None:
    """One clear error for weight quantization of a vision or speech model at inference, which nothing models
    (a diffusion denoiser's is counted: profile.denoiser_weight_bytes); estimate and recommend both ask."""
    if task != "inference" or model.kind == "diffusion" or quantization in (None, "none"):
        return
    raise GpuplanError(_("Weight quantization ({q}) of a {kind} model at inference is not modelled: the estimate "
                         "would be the {dtype} one.").format(q=quantization, kind=model.kind, dtype=precision),
                       hint=_("Drop quantization (estimate it in {dtype}), or give a diffusion or language model, "
                              "whose quantized weights are counted.").format(dtype=precision),
                       field="quantization")


def nonllm_estimate(model, *, task: str, precision: str, batch: int, inp: dict | None, optimizer: str,
                    framework: str, layout: Layout, system: System, flash: bool = True, quantization: str = "none",
                    lora_rank: int = 8, tf32: bool = True, attention_kernel: str | None = None) -> NonLLMResult:
    """``tf32`` False: fp32 matmuls on the FP32 cores, convolutions on TF32 (clocks.matmul_dtype, conv_dtype);
    ``attention_kernel``: the workload's stated attention kernel (clocks.attention_rate_factor)."""
    prof = model.profile
    scale, notes = input_scale(prof, inp)
    training = task != "inference"
    if model.kind == "diffusion" and not training and is_video(model):
        return video_inference(model, precision=precision, batch=batch, inp=inp or {}, framework=framework,
                               layout=layout, system=system, notes=[], quantization=quantization, tf32=tf32,
                               attention_kernel=attention_kernel)
    if model.kind == "diffusion" and not training:
        return diffusion_inference(model, precision=precision, batch=batch, inp=inp or {}, framework=framework,
                                   layout=layout, system=system, scale=scale, notes=notes, flash=flash,
                                   quantization=quantization, tf32=tf32, attention_kernel=attention_kernel)
    refuse_unmodelled_quantization(model, task, quantization, precision)
    trained = None
    if training:
        trained, weight_notes = trained_weights(model, task=task, precision=precision, quantization=quantization,
                                                optimizer=optimizer, lora_rank=lora_rank, inp=inp)
        notes.extend(weight_notes)
    mem = _memory(model, training=training, precision=precision, batch=batch, scale=scale, optimizer=optimizer,
                  framework=framework, layout=layout, system=system, notes=notes, trained=trained, inp=inp,
                  flash=flash)
    perf_notes: list[str] = []
    if training:
        assert trained is not None
        cost = dit_training_cost(model, inp or {}, matmul_dtype(precision, tf32),
                                 trained.trained_network * dense_bytes(precision)) \
            if is_video(model) else forward_cost(model, scale, precision, params=trained.trained_network, tf32=tf32)
        online = model.kind == "diffusion" and not is_video(model) and not (inp or {}).get("precomputed_conditioning")
        perf = _training_perf(model, cost, batch=batch, framework=framework, layout=layout, system=system,
                              notes=perf_notes, trained=trained, attention_kernel=attention_kernel,
                              conditioning=text_encoder_cost(model, precision, tf32, inp) if online else None)
    else:
        cost = forward_cost(model, scale, precision, tf32=tf32)
        scores = eager_attention_scores(model)[0] if not flash else 0.0
        if scores:   # every head's scores go to HBM and back: the prefill's rule and bytes (forward.unfused_scores_s)
            per_score = float(table("inference", "unfused_attention_bytes_per_score"))
            cost = replace(cost, traffic_bytes_per_sample=cost.traffic_bytes_per_sample + scores * per_score)
            perf_notes.append(_("attention without a fused kernel: {gb:.1f} GB of attention scores per image through "
                                "HBM").format(gb=scores * per_score / 1e9))
        perf = _inference_perf(model, cost, batch=batch, framework=framework, system=system, scale=scale,
                               precision=precision, notes=perf_notes, tf32=tf32, inp=inp,
                               attention_kernel=attention_kernel)
    notes.extend(perf_notes)
    return NonLLMResult(memory=mem, performance=perf, notes=notes)
