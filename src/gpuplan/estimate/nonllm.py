"""Non-LLM models (CNN, ViT, diffusion, speech): a profile measured at a reference input, scaled.

A profile (data/models.yaml) gives parameters, forward FLOPs per sample and training activation
bytes per sample at a reference input size, with how both grow with the input (e.g. image_size^2).
Training costs 3x the forward FLOPs (forward + backward, Kaplan et al. 2020 §2.1); inference keeps
only the live tensors of a forward pass (assumed 15% of the training activations). Diffusion
inference runs the denoiser once per step, twice with classifier-free guidance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuplan.estimate.memory import COMPONENTS, OPT_STATE_BYTES, MemoryEstimate, overhead_fixed
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.training import peak_flops
from gpuplan.units import GIB
from gpuplan.i18n import _



@dataclass
class NonLLMResult:
    memory: MemoryEstimate
    performance: dict
    notes: list[str] = field(default_factory=list)


def input_scale(profile, inp: dict | None) -> tuple[float, list[str]]:
    """Factor by which FLOPs and activations grow from the reference input to the user's input."""
    notes: list[str] = []
    scaling = profile.scaling or {}
    key = scaling.get("input")
    exponent = float(scaling.get("exponent", 1.0))
    ref = (profile.reference_input or {}).get(key) if key else None
    given = (inp or {}).get(key) if key else None
    if not key or ref is None:
        return 1.0, notes
    if given is None:
        notes.append(_("assumed {key} {ref} (the profile's reference input)").format(key=key, ref=ref))
        return 1.0, notes
    return (float(given) / float(ref)) ** exponent, notes


def _speech_latency(model, prof, nl, scale: float, batch: int, precision: str, framework: str, system: System,
                    peak: float, eff: float, notes: list[str]) -> tuple[float, float]:
    """(seconds for one batch of windows, FLOPs per sample) of an encoder-decoder speech model: the
    encoder's FLOPs, then the decoder's token-by-token steps, each the larger of streaming the decoder
    weights and its FLOPs, plus the engine's per-step cost. The transcript's decoding is part of the time."""
    inf = table("inference")
    comps = prof.components
    enc = float(comps.get("encoder_flops") or prof.forward_flops_per_sample) * scale
    windows = max(1.0, scale)
    tokens = float(nl.get("speech_tokens_per_30s", 100)) * windows
    dense = 4.0 if precision == "fp32" else 2.0
    dec_bytes = float(model.params_total) * dense * float(nl.get("speech_decoder_param_share", 0.5))
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(inf["weight_stream_efficiency"])
    step_gpu = max(dec_bytes / bw, batch * float(comps["decode_flops_per_token"]) / (peak * eff))
    overheads = inf["engine_step_overhead_s"]
    layers = int(getattr(model, "num_decoder_layers", 0) or getattr(model, "num_layers", 0) or 32)
    if framework in overheads and framework != "transformers":
        over = float(overheads[framework]) + float(inf["engine_layer_floor_s"]) * layers
    else:
        over = float(inf["eager_cpu_s_per_layer"]) * layers
    decode = tokens * (step_gpu + over)
    encode = enc * batch / (peak * eff)
    notes.append(_("speech: encoder {encode:.2f} s per batch of {batch}, then {tokens:.0f} decoder steps of {step_ms:.1f} ms "
                   "({tokens:.0f} tokens per {window_s:.0f} s, assumed)").format(
        encode=encode, batch=batch, tokens=tokens, step_ms=(step_gpu + over) * 1000, window_s=30 * windows))
    per_sample = enc + tokens * float(comps["decode_flops_per_token"])
    return encode + decode, per_sample


def nonllm_estimate(model, *, task: str, precision: str, batch: int, inp: dict | None, optimizer: str,
                    framework: str, layout: Layout, system: System) -> NonLLMResult:
    prof = model.profile
    nl = table("nonllm")
    scale, notes = input_scale(prof, inp)
    params = float(model.params_total)
    dense = 4.0 if precision == "fp32" else 2.0
    ctx, nccl = overhead_fixed(system)
    mem_tab = table("memory")
    training = task != "inference"
    weights = params * dense
    comp = dict.fromkeys(COMPONENTS, 0.0)
    comp["weights"] = weights / (layout.dp if layout.zero >= 3 else 1)
    if training:
        mode = "fp32" if precision == "fp32" else "mixed"
        states = OPT_STATE_BYTES.get((optimizer, mode), 12.0) * params / (layout.dp if layout.zero >= 1 else 1)
        grads = params * (4.0 if precision == "fp32" else 2.0) / (layout.dp if layout.zero >= 2 else 1)
        acts = prof.activation_bytes_per_sample * scale * batch * (2.0 if precision == "fp32" else 1.0)
        if layout.checkpointing == "full":
            acts *= nl["checkpointed_activation_share"]
            notes.append(_("checkpointing keeps about {nl:.0%} of the activations (assumed for non-LLM models)").format(nl=nl['checkpointed_activation_share']))
        comp.update(gradients=grads, optimizer=states, activations=acts)
    else:
        acts = prof.activation_bytes_per_sample * scale * batch * nl["inference_activation_share"]
        comp["activations"] = acts
        notes.append(_("inference keeps about {nl:.0%} of the training activations live (assumed)").format(nl=nl['inference_activation_share']))
    alloc = sum(comp.values()) + mem_tab["workspace_bytes"]
    reserved = alloc * (1 + mem_tab["reserve_fraction_of_total"]) + 0.1 * comp["activations"]
    per_gpu = reserved + ctx + nccl
    comp["overhead"] = per_gpu - sum(v for k, v in comp.items() if k != "overhead")
    mem = MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                         capacity_bytes=system.capacity_bytes, components=comp,
                         host_bytes=weights + 4 * GIB * system.gpus_per_node, peak_phase="step",
                         total_bytes=per_gpu * layout.gpus, notes=[])

    perf_notes: list[str] = []
    peak = peak_flops(system, precision, perf_notes)
    eff = nl["compute_efficiency"] * by_key(table("training", "framework_factor"), framework, "auto")
    fwd = prof.forward_flops_per_sample * scale
    gpus = layout.gpus
    if training:
        flops = 3.0 * fwd * batch * (1.33 if layout.checkpointing == "full" else 1.0)
        step = flops / (peak * eff)
        samples_per_s = batch * gpus / step
        perf = {"step_time_s": step, "samples_per_s": samples_per_s, "tokens_per_s": None,
                "tokens_per_s_per_gpu": None, "mfu": 3.0 * fwd * samples_per_s / gpus / peak,
                "tflops_per_gpu": flops / step / 1e12, "comm_fraction": 0.0, "total_time_s": None, "gpu_hours": None,
                "ttft_s": None, "tpot_s": None, "output_tokens_per_s": None, "max_concurrency": None,
                "max_requests_per_s": None}
    else:
        per_sample = fwd
        if model.kind == "diffusion":
            steps = (inp or {}).get("steps") or nl["default_diffusion_steps"]
            per_sample = fwd * steps * nl["cfg_passes"]
            notes.append(_("{steps} denoising steps with classifier-free guidance (2 passes per step)").format(steps=steps))
        latency = per_sample * batch / (peak * eff)
        if model.kind == "speech" and prof.components.get("decode_flops_per_token"):
            latency, per_sample = _speech_latency(model, prof, nl, scale, batch, precision, framework, system,
                                                  peak, eff, notes)
        perf = {"ttft_s": latency, "tpot_s": None, "output_tokens_per_s": None, "max_concurrency": batch,
                "max_requests_per_s": batch / latency, "latency_s": latency, "samples_per_s": batch / latency,
                "step_time_s": None, "tokens_per_s": None, "tokens_per_s_per_gpu": None, "mfu": None,
                "tflops_per_gpu": per_sample * batch / latency / 1e12, "comm_fraction": None, "total_time_s": None,
                "gpu_hours": None}
    notes.extend(perf_notes)
    notes.append(_("compute efficiency {eff:.0%} of dense peak assumed for this model kind").format(eff=eff))
    return NonLLMResult(memory=mem, performance=perf, notes=notes)
