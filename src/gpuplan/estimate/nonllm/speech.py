"""Whisper transcription: memory and time of one batch of 30 s windows, by mechanism.

Two engines, the one that runs:

* **faster-whisper** (CTranslate2), what a plan bundle launches (transcribe.py: ``BatchedInferencePipeline``,
  ``compute_type`` float16 on a GPU, beam 5). A batch is ``batch`` windows of 30 s (faster-whisper's
  ``batch_size``: the audio chunks decoded together). The GPU holds::

      runtime (CUDA context, cuBLAS/cuDNN handles)  +  weights in the compute type
      + batch x max(encoding: one encoder layer's live tensors,
                    decoding: the window's cross-attention K/V (once per window: CTranslate2 >= 3.10 keeps the
                              projected encoder keys/values at batch granularity and multiplies the beams
                              against them, "beamable MM") + every beam's self-attention K/V at the transcript)
        + the encoder output the decoder reads
      + the allocator's cache (cuda_malloc_async: none beyond the live peak)

  Each decoder step streams the decoder weights once, every window's cross-attention K/V once, and every beam's
  self-attention K/V several times (the attention reads it, the beam gather rewrites it, the concat that grows
  it copies it); plus the engine's fixed cost per step. The encoder's FLOPs run once per window. The host's
  work per window (audio decoding, VAD, log-Mel features) runs between the GPU batches.

* **eager transformers** (``framework: transformers``): ``generate`` expands the encoder output per beam, so every
  hypothesis keeps its own cross-attention K/V; each step is the larger of streaming the decoder weights and the
  caches, or its FLOPs, plus the eager CPU cost per layer.

Constants: data/efficiency.yaml ``nonllm`` (speech_* and faster_whisper, with their sources). Pinned to the
faster-whisper README's GPU memory figures in tests/estimate/test_faster_whisper_memory.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.memory import COMPONENTS, MemoryEstimate, overhead_fixed
from gpuplan.estimate.params import table
from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import _
from gpuplan.units import GIB

__all__ = ["WindowBytes", "ct2_compute_type", "ct2_memory", "ct2_weight_bytes", "runs_faster_whisper",
           "speech_cache_bytes", "speech_latency", "window_bytes"]


def runs_faster_whisper(model, framework: str) -> bool:
    """True when the job runs on faster-whisper: a speech model under any framework but eager transformers (the
    bundle's transcribe.py is faster-whisper whatever the serving default; transformers is asked for by name)."""
    return getattr(model, "kind", None) == "speech" and framework != "transformers"


def ct2_compute_type(precision: str) -> str:
    """CTranslate2's compute type for the workload's precision: float32 for fp32, else float16 (what the bundle's
    transcribe.py passes on a GPU; CTranslate2 has no faster path for bf16 weights of a float16 conversion)."""
    return "float32" if precision == "fp32" else "float16"


def _fw() -> dict:
    return table("nonllm", "faster_whisper")


def _act_bytes(compute_type: str) -> float:
    """Bytes of one activation element: int8 types keep the float16 (or float32) activations of their suffix."""
    return 4.0 if compute_type.endswith("float32") else 2.0


@dataclass(frozen=True)
class WindowBytes:
    """GPU bytes one 30 s window holds (a batch holds ``batch`` of them)."""

    encoder_out: float     # frames x d: the encoder output the decoder reads
    encoder_live: float    # one encoder layer's live tensors while it runs (attention scores, FFN, q/k/v)
    cross_kv: float        # decoder layers x 2 x frames x d: the projected encoder keys and values
    self_kv: float         # beams x decoder layers x 2 x d x tokens: every hypothesis's self-attention cache

    @property
    def decoding(self) -> float:
        return self.cross_kv + self.self_kv

    @property
    def peak(self) -> float:
        """The window's share of the peak: the larger phase, plus the encoder output both phases hold."""
        return self.encoder_out + max(self.encoder_live, self.decoding)


def _shape(model) -> tuple[float, float, float, float, float]:
    """(decoder layers, d_model, heads, FFN width, encoder frames) of a Whisper profile (0 when not given)."""
    prof = model.profile
    comps = prof.components
    d = float(comps.get("d_model") or getattr(model, "hidden_size", 0) or 0)
    layers = float(comps.get("decoder_layers") or getattr(model, "num_decoder_layers", 0) or 0)
    heads = float(comps.get("heads") or getattr(model, "num_attention_heads", 0) or (d / 64 if d else 0))
    ffn = float(comps.get("ffn_dim") or getattr(model, "intermediate_size", 0) or 4 * d)
    frames = float(prof.reference_input.get("encoder_frames") or 1500)
    return layers, d, heads, ffn, frames


def window_bytes(model, compute_type: str, beams: float, tokens: float) -> WindowBytes:
    """What one window holds under CTranslate2 (module docstring); zeros for a profile without the decoder's shape."""
    layers, d, heads, ffn, frames = _shape(model)
    if not layers or not d:
        return WindowBytes(0.0, 0.0, 0.0, 0.0)
    a = _act_bytes(compute_type)
    per_frame_kv = layers * 2.0 * d * a
    live = (heads * frames * frames + frames * ffn + 6.0 * frames * d) * a
    return WindowBytes(encoder_out=frames * d * a, encoder_live=live,
                       cross_kv=per_frame_kv * frames * float(_fw()["cross_kv_copies_per_window"]),
                       self_kv=beams * per_frame_kv * tokens)


def ct2_weight_bytes(model, compute_type: str) -> float:
    """The weights as CTranslate2 holds them: 2 bytes (4 for float32) per parameter; the int8 types quantize the
    linear and embedding weights to 1 byte with one float32 scale per output row and keep the rest (convolutions,
    position tables, norms, biases) in their float type (CTranslate2 docs/quantization.md)."""
    params = float(model.params_total)
    a = _act_bytes(compute_type)
    if not compute_type.startswith("int8"):
        return params * a
    layers, d, _heads, ffn, _frames = _shape(model)
    enc_layers = float(getattr(model, "num_layers", 0) or layers)
    vocab = float(getattr(model, "vocab_size", 0) or 0)
    linear = enc_layers * (4 * d * d + 2 * d * ffn) + layers * (8 * d * d + 2 * d * ffn) + vocab * d
    rows = enc_layers * (4 * d + ffn + d) + layers * (8 * d + ffn + d) + vocab
    return linear + 4.0 * rows + (params - linear) * a


def window_tokens(inp: dict | None) -> float:
    """Tokens the decoder writes per 30 s window: the workload's ``input.tokens_per_window`` where it states them (a
    benchmark that forces a count, or a language that runs longer than English), else the assumed
    nonllm.speech_tokens_per_30s."""
    stated = (inp or {}).get("tokens_per_window")
    return float(stated) if stated else float(table("nonllm", "speech_tokens_per_30s"))


def _tokens(scale: float, per_window: float) -> float:
    return per_window * max(1.0, scale)


def _beams() -> float:
    return float(table("nonllm", "speech_beam_size", "value"))


def ct2_memory(model, *, batch: int, compute_type: str, layout: Layout, system: System,
               notes: list[str], per_window: float) -> MemoryEstimate:
    """GPU memory of faster-whisper transcribing ``batch`` windows at once (module docstring)."""
    fw = _fw()
    win = window_bytes(model, compute_type, _beams(), _tokens(1.0, per_window))
    weights = ct2_weight_bytes(model, compute_type)
    live = batch * win.peak
    alloc_cache = float(fw["allocator_cache_fraction"]) * live
    runtime, nccl = overhead_fixed(system)   # the CUDA context stands for CTranslate2's runtime (data/efficiency.yaml)
    comp = dict.fromkeys(COMPONENTS, 0.0)
    comp["weights"] = weights
    comp["kv_cache"] = batch * (win.decoding if win.decoding >= win.encoder_live else 0.0)
    comp["activations"] = live - comp["kv_cache"]
    per_gpu = weights + live + alloc_cache + runtime + nccl
    comp["overhead"] = alloc_cache + runtime + nccl
    notes.append(_("faster-whisper ({compute}): {batch} window(s) of 30 s at once, each holding {cross} MB of "
                   "cross-attention keys/values (once per window, not per beam) and {self_kv} MB of self-attention "
                   "cache ({beams:g} beams x {tokens:.0f} tokens); weights {weights} GiB").format(
        compute=compute_type, batch=batch, cross=f"{win.cross_kv / 1e6:.0f}", self_kv=f"{win.self_kv / 1e6:.0f}",
        beams=_beams(), tokens=_tokens(1.0, per_window), weights=f"{weights / GIB:.2f}"))
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=weights + live,
                          peak_reserved_bytes=weights + live + alloc_cache, capacity_bytes=system.capacity_bytes,
                          components=comp, host_bytes=weights + 4 * GIB * system.gpus_per_node, peak_phase="decode",
                          total_bytes=per_gpu * layout.gpus, notes=[])


def speech_cache_bytes(model, precision: str, scale: float, per_window: float) -> tuple[float, float]:
    """Eager transformers: (bytes one hypothesis reads per step, bytes a batch element holds). ``generate``
    expands the encoder output per beam, so each hypothesis keeps its own cross-attention K/V
    (decoder_layers x 2 x frames x d_model) plus its self-attention cache at half the transcript (read) or the
    whole transcript (held), times the beams. 0 for a profile that does not give the decoder's shape."""
    layers, d, _heads, _ffn, frames = _shape(model)
    if not layers or not d:
        return 0.0, 0.0
    tokens = _tokens(scale, per_window)
    per_token = layers * 2.0 * d * (4.0 if precision == "fp32" else 2.0)
    beams = _beams()
    return beams * per_token * (frames + tokens / 2.0), beams * per_token * (frames + tokens)


def _decoder_bytes(model, bytes_per_param: float) -> float:
    comps = model.profile.components
    dec_params = comps.get("decoder_params")  # counted from the config (catalog/nonllm/speech.py), else the share
    return (float(dec_params) if dec_params else
            float(model.params_total) * float(table("nonllm", "speech_decoder_param_share"))) * bytes_per_param


def speech_latency(model, *, scale: float, batch: int, precision: str, framework: str, system: System,
                   peak: float, eff: float, notes: list[str], inp: dict | None = None) -> tuple[float, float, float]:
    """(seconds for one batch, FLOPs per batch element, batch elements per clip) of Whisper transcription on the
    engine that runs (module docstring); ``inp``: the workload's input (tokens_per_window)."""
    per_window = window_tokens(inp)
    inf = table("inference")
    comps = model.profile.components
    enc = float(comps.get("encoder_flops") or model.profile.forward_flops_per_sample)
    flops_tok = float(comps["decode_flops_per_token"])
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(inf["weight_stream_efficiency"])
    beams = _beams()
    layers = int(getattr(model, "num_decoder_layers", 0) or getattr(model, "num_layers", 0) or 32)
    if runs_faster_whisper(model, framework):
        fw = _fw()
        compute = ct2_compute_type(precision)
        windows, tokens = 1.0, _tokens(1.0, per_window)   # a batch element is one 30 s chunk
        per_item = max(1.0, scale)                   # a longer clip is several chunks
        win = window_bytes(model, compute, beams, tokens)
        dec_bytes = _decoder_bytes(model, ct2_weight_bytes(model, compute) / float(model.params_total))
        # the self-attention cache averages half the transcript over the steps, and moves several times a step
        step_bytes = dec_bytes + batch * (win.cross_kv + float(fw["self_kv_passes_per_step"]) * win.self_kv / 2.0)
        step_gpu = max(step_bytes / bw, batch * beams * flops_tok / (peak * eff))
        over = float(inf["engine_step_overhead_s"]["default"]) + float(inf["engine_layer_floor_s"]) * layers
        host = float(fw["host_s_per_window"]) * batch
        engine = _("faster-whisper")
    else:
        windows, per_item = max(1.0, scale), 1.0     # a batch element is one clip
        tokens = _tokens(scale, per_window)
        cache_read, _held = speech_cache_bytes(model, precision, scale, per_window)
        beams = beams if cache_read else 1.0
        dec_bytes = _decoder_bytes(model, 4.0 if precision == "fp32" else 2.0)
        step_gpu = max((dec_bytes + batch * cache_read) / bw, batch * beams * flops_tok / (peak * eff))
        over = float(inf["eager_cpu_s_per_layer"]) * layers
        host = 0.0
        engine = _("eager transformers")
    decode = tokens * (step_gpu + over)
    enc *= windows if runs_faster_whisper(model, framework) else scale
    encode = enc * batch / (peak * eff)
    notes.append(_("speech ({engine}): encoder {encode:.2f} s per batch of {batch}, then {tokens:.0f} decoder steps "
                   "of {step_ms:.1f} ms ({per_window:.0f} tokens per 30 s window, {source}; {beams:g} beams); host "
                   "work (audio decoding, VAD, features) {host:.2f} s").format(
        engine=engine, encode=encode, batch=batch, tokens=tokens, step_ms=(step_gpu + over) * 1000,
        per_window=per_window, source=_("input.tokens_per_window") if (inp or {}).get("tokens_per_window") else _("assumed"),
        beams=beams, host=host))
    return encode + decode + host, enc + tokens * beams * flops_tok, per_item
