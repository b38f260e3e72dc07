"""Non-LLM models (CNN, ViT, diffusion, speech): a profile measured at a reference input, scaled.

A profile (data/models.yaml) gives parameters, forward FLOPs per sample and training activation
bytes per sample at a reference input size, how both grow with the input (e.g. image_size^2), and the
ops one eager forward launches. Time comes from :mod:`gpuplan.estimate.forward` (launch-bound at small
batch, FLOPs- and traffic-bound at large batch). Training costs 3x the forward FLOPs (forward +
backward, Kaplan et al. 2020 §2.1); inference keeps only the live tensors of a forward pass
(nonllm.inference_activation_share of the training activations). Diffusion pipelines (text encoders,
denoiser steps with classifier-free guidance, VAE decode) are in :mod:`gpuplan.estimate.diffusion`.
"""

from __future__ import annotations

from gpuplan.estimate.diffusion import diffusion_inference
from gpuplan.estimate.forward import ForwardCost, forward_time
from gpuplan.estimate.memory import COMPONENTS, OPT_STATE_BYTES, MemoryEstimate, overhead_fixed
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.training import peak_flops, sustained_flops
from gpuplan.estimate.profile import InputScale, NonLLMResult, dense_bytes, empty_perf, forward_cost, input_scale
from gpuplan.i18n import _
from gpuplan.units import GIB

__all__ = ["NonLLMResult", "input_scale", "nonllm_estimate"]


def speech_cache_bytes(prof, nl, precision: str, scale: float) -> tuple[float, float]:
    """(bytes one decoding hypothesis reads per step, bytes a batch element holds) of a Whisper-style decoder:
    its cross-attention keys and values over the encoder frames (decoder_layers x 2 x frames x d_model) plus
    its self-attention cache at half the transcript (read) or the whole transcript (held), times the beams
    (nonllm.speech_beam_size). 0 for a profile that does not give the decoder's shape."""
    comps = prof.components
    layers, d = float(comps.get("decoder_layers") or 0), float(comps.get("d_model") or 0)
    if not layers or not d:
        return 0.0, 0.0
    frames = float(prof.reference_input.get("encoder_frames") or 1500)
    tokens = float(nl.get("speech_tokens_per_30s", 100)) * max(1.0, scale)
    per_token = layers * 2.0 * d * dense_bytes(precision)
    beams = float(nl["speech_beam_size"]["value"])
    return beams * per_token * (frames + tokens / 2.0), beams * per_token * (frames + tokens)


def _speech_latency(model, prof, nl, scale: float, batch: int, precision: str, framework: str, system: System,
                    peak: float, eff: float, notes: list[str]) -> tuple[float, float]:
    """(seconds for one batch of windows, FLOPs per sample) of an encoder-decoder speech model: the
    encoder's FLOPs, then the decoder's token-by-token steps, each the larger of streaming the decoder
    weights plus every hypothesis's cross- and self-attention cache (:func:`speech_cache_bytes`) and its FLOPs,
    plus the engine's per-step cost. The transcript's decoding is part of the time."""
    inf = table("inference")
    comps = prof.components
    enc = float(comps.get("encoder_flops") or prof.forward_flops_per_sample) * scale
    windows = max(1.0, scale)
    tokens = float(nl.get("speech_tokens_per_30s", 100)) * windows
    dense = dense_bytes(precision)
    dec_params = comps.get("decoder_params")  # counted from the config (catalog/speech.py), else the share
    dec_bytes = (float(dec_params) if dec_params else
                 float(model.params_total) * float(nl.get("speech_decoder_param_share", 0.5))) * dense
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(inf["weight_stream_efficiency"])
    cache_read, _held = speech_cache_bytes(prof, nl, precision, scale)
    beams = float(nl["speech_beam_size"]["value"]) if cache_read else 1.0
    step_gpu = max((dec_bytes + batch * cache_read) / bw,
                   batch * beams * float(comps["decode_flops_per_token"]) / (peak * eff))
    overheads = inf["engine_step_overhead_s"]
    layers = int(getattr(model, "num_decoder_layers", 0) or getattr(model, "num_layers", 0) or 32)
    if framework in overheads and framework != "transformers":
        over = float(overheads[framework]) + float(inf["engine_layer_floor_s"]) * layers
    else:
        over = float(inf["eager_cpu_s_per_layer"]) * layers
    decode = tokens * (step_gpu + over)
    encode = enc * batch / (peak * eff)
    notes.append(_("speech: encoder {encode:.2f} s per batch of {batch}, then {tokens:.0f} decoder steps of {step_ms:.1f} ms "
                   "({tokens:.0f} tokens per {window_s:.0f} s, assumed; {beams:g} beams)").format(
        encode=encode, batch=batch, tokens=tokens, step_ms=(step_gpu + over) * 1000, window_s=30 * windows,
        beams=beams))
    per_sample = enc + tokens * beams * float(comps["decode_flops_per_token"])
    return encode + decode, per_sample


def _memory(model, *, training: bool, precision: str, batch: int, scale: InputScale, optimizer: str,
            layout: Layout, system: System, notes: list[str]) -> MemoryEstimate:
    prof = model.profile
    nl = table("nonllm")
    mem_tab = table("memory")
    params = float(model.params_total)
    ctx, nccl = overhead_fixed(system)
    weights = params * dense_bytes(precision)
    comp = dict.fromkeys(COMPONENTS, 0.0)
    comp["weights"] = weights / (layout.dp if layout.zero >= 3 else 1)
    acts = prof.activation_bytes_per_sample * scale.activations * batch
    if training:
        mode = "fp32" if precision == "fp32" else "mixed"
        states = OPT_STATE_BYTES.get((optimizer, mode), 12.0) * params / (layout.dp if layout.zero >= 1 else 1)
        grads = params * dense_bytes(precision) / (layout.dp if layout.zero >= 2 else 1)
        acts *= 2.0 if precision == "fp32" else 1.0
        if layout.checkpointing == "full":
            acts *= nl["checkpointed_activation_share"]
            notes.append(_("checkpointing keeps about {nl:.0%} of the activations (assumed for non-LLM models)").format(nl=nl['checkpointed_activation_share']))
        comp.update(gradients=grads, optimizer=states, activations=acts)
    else:
        comp["activations"] = acts * nl["inference_activation_share"]
        notes.append(_("inference keeps about {nl:.0%} of the training activations live (assumed)").format(nl=nl['inference_activation_share']))
        if model.kind == "speech":   # every hypothesis's cross- and self-attention cache (nonllm.speech_beam_size)
            comp["kv_cache"] = speech_cache_bytes(prof, nl, precision, scale.flops)[1] * batch
    alloc = sum(comp.values()) + mem_tab["workspace_bytes"]
    reserved = alloc * (1 + mem_tab["reserve_fraction_of_total"]) + 0.1 * comp["activations"]
    per_gpu = reserved + ctx + nccl
    comp["overhead"] = per_gpu - sum(v for k, v in comp.items() if k != "overhead")
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                          capacity_bytes=system.capacity_bytes, components=comp,
                          host_bytes=weights + 4 * GIB * system.gpus_per_node, peak_phase="step",
                          total_bytes=per_gpu * layout.gpus, notes=[])


def _training_perf(model, cost: ForwardCost, *, batch: int, framework: str, layout: Layout, system: System,
                   precision: str, notes: list[str]) -> dict:
    """A training step: forward + backward = 3x the forward's FLOPs, traffic and launches (4/3 more with
    full recomputation), the weights read and their gradients written."""
    recompute = 4.0 / 3.0 if layout.checkpointing == "full" else 1.0
    step_cost = cost.scaled(flops=3.0 * recompute, traffic=3.0 * recompute, weights=3.0, kernels=3.0 * recompute)
    step = forward_time(step_cost, batch, system, framework, notes).seconds
    gpus = layout.gpus
    samples_per_s = batch * gpus / step
    peak = peak_flops(system, precision, [])
    perf = empty_perf()
    perf.update(step_time_s=step, samples_per_s=samples_per_s, images_per_s=samples_per_s,
                mfu=3.0 * cost.flops_per_sample * samples_per_s / gpus / peak,
                tflops_per_gpu=step_cost.flops_per_sample * batch / step / 1e12, comm_fraction=0.0)
    return perf


def _inference_perf(model, cost: ForwardCost, *, batch: int, framework: str, system: System,
                    scale: InputScale, precision: str, notes: list[str]) -> dict:
    ft = forward_time(cost, batch, system, framework, notes)
    latency, per_sample = ft.seconds, cost.flops_per_sample
    prof = model.profile
    if model.kind == "speech" and prof.components.get("decode_flops_per_token"):
        nl = table("nonllm")
        peak = sustained_flops(system, precision, notes)
        eff = nl["compute_efficiency"] * by_key(table("training", "framework_factor"), framework, "auto")
        latency, per_sample = _speech_latency(model, prof, nl, scale.flops, batch, precision, framework, system,
                                              peak, eff, notes)
    else:
        notes.append(_("{batch} sample(s) per forward: {ms:.2f} ms ({bound}-bound: CPU launches {cpu_ms:.2f} ms, "
                       "GPU {gpu_ms:.2f} ms)").format(batch=batch, ms=latency * 1e3, bound=_(ft.bound),
                                                    cpu_ms=ft.cpu_s * 1e3, gpu_ms=ft.gpu_s * 1e3))
    perf = empty_perf()
    perf.update(ttft_s=latency, max_concurrency=batch, max_requests_per_s=batch / latency, latency_s=latency,
                samples_per_s=batch / latency, tflops_per_gpu=per_sample * batch / latency / 1e12)
    if model.kind == "vision":
        perf["images_per_s"] = batch / latency
    return perf


def nonllm_estimate(model, *, task: str, precision: str, batch: int, inp: dict | None, optimizer: str,
                    framework: str, layout: Layout, system: System) -> NonLLMResult:
    prof = model.profile
    scale, notes = input_scale(prof, inp)
    training = task != "inference"
    if model.kind == "diffusion" and not training:
        return diffusion_inference(model, precision=precision, batch=batch, inp=inp or {}, framework=framework,
                                   layout=layout, system=system, scale=scale, notes=notes)
    mem = _memory(model, training=training, precision=precision, batch=batch, scale=scale, optimizer=optimizer,
                  layout=layout, system=system, notes=notes)
    perf_notes: list[str] = []
    cost = forward_cost(model, scale, precision)
    if training:
        perf = _training_perf(model, cost, batch=batch, framework=framework, layout=layout, system=system,
                              precision=precision, notes=perf_notes)
    else:
        perf = _inference_perf(model, cost, batch=batch, framework=framework, system=system, scale=scale,
                               precision=precision, notes=perf_notes)
    notes.extend(perf_notes)
    return NonLLMResult(memory=mem, performance=perf, notes=notes)
