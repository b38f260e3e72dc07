"""What every non-LLM estimate shares: its result record, the input scaling of a profile
(data/models.yaml), and the cost of one forward of the network at batch 1 (for estimate/forward.py)."""

from __future__ import annotations

import math

from dataclasses import dataclass, field

from gpuplan.estimate.clocks import matmul_dtype
from gpuplan.estimate.forward import ForwardCost
from gpuplan.estimate.memory import COMPONENTS, MemoryEstimate, overhead_fixed
from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import quant_bits_per_param
from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import _
from gpuplan.units import GIB


@dataclass
class NonLLMResult:
    memory: MemoryEstimate
    performance: dict
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class InputScale:
    """How FLOPs and activations grow from the profile's reference input to the user's."""

    flops: float = 1.0
    activations: float = 1.0
    value: float | None = None     # the input the estimate is for (e.g. image_size)


def input_scale(profile, inp: dict | None) -> tuple[InputScale, list[str]]:
    """FLOPs scale with input^flops_exponent, activations with input^activation_exponent (``exponent``
    sets both; the profile's ``scaling`` block names the input, e.g. image_size)."""
    notes: list[str] = []
    scaling = profile.scaling or {}
    key = scaling.get("input")
    common = float(scaling.get("exponent", 1.0))
    ref = (profile.reference_input or {}).get(key) if key else None
    given = (image_side(inp) if key == "image_size" else (inp or {}).get(key)) if key else None
    if not key or ref is None:
        return InputScale(), notes
    joint = joint_tokens(profile, inp, float(given) if given is not None else float(ref))
    if joint is not None:   # a joint-attention transformer: the text tokens do not grow with the image
        tokens, ref_tokens, attention_share = joint
        t = tokens / ref_tokens
        if given is None:
            notes.append(_("assumed {key} {ref} (the profile's reference input)").format(key=key, ref=ref))
        return InputScale((1.0 - attention_share) * t + attention_share * t * t, t,
                          float(given if given is not None else ref)), notes
    if given is None:
        notes.append(_("assumed {key} {ref} (the profile's reference input)").format(key=key, ref=ref))
        return InputScale(value=float(ref)), notes
    ratio = float(given) / float(ref)
    return InputScale(ratio ** float(scaling.get("flops_exponent", common)),
                      ratio ** float(scaling.get("activation_exponent", common)), float(given)), notes


def text_tokens(profile, inp: dict | None) -> tuple[float, float] | None:
    """(the prompt's T5 tokens, the pipeline's default) of a joint-attention diffusion transformer (FLUX, SD3: the
    pipeline's ``max_sequence_length``; the workload's ``input.text_tokens`` overrides it), None for other models."""
    default = (getattr(profile, "pipeline", None) or {}).get("max_sequence_length")
    if not default:
        return None
    given = (inp or {}).get("text_tokens")
    return float(given or default), float(default)


def joint_tokens(profile, inp: dict | None, side: float) -> tuple[float, float, float] | None:
    """(tokens per pass, the reference's, the reference's attention share of FLOPs) of a joint-attention diffusion
    transformer, whose text tokens join the image tokens in every block (FLUX's double- and single-stream blocks, SD3's
    MMDiT): the image tokens grow with the side squared, the text tokens not (diffusers ``max_sequence_length``; CLIP's
    77 tokens in SD3's joint sequence stay fixed). Linear layers grow with the tokens, attention with their square;
    activations (fused attention) with the tokens. None for a model without a joint sequence."""
    text = text_tokens(profile, inp)
    pipe = getattr(profile, "pipeline", None) or {}
    groups: list = list(pipe.get("self_attention") or ())
    ref_tokens = float((profile.reference_input or {}).get("tokens") or 0.0)
    ref_side = float((profile.scaling or {}).get("reference") or 0.0)
    if text is None or len(groups) != 1 or not ref_tokens or not ref_side:
        return None
    extra = float(groups[0][1])                     # the joint text tokens at the pipeline's default
    fixed = extra - text[1]                         # CLIP's share of them (SD3: 77), independent of the T5 length
    image_ref = ref_tokens - extra
    tokens = image_ref * (side / ref_side) ** 2 + fixed + text[0]
    hidden = float(pipe.get("attention_hidden") or 0.0)
    layers = float(pipe.get("attention_layers") or 0.0)
    flops = float(getattr(profile, "forward_flops_per_sample", 0.0) or 0.0)
    share = min(0.9, layers * 4.0 * ref_tokens ** 2 * hidden / flops) if flops and hidden and layers else 0.0
    return tokens, ref_tokens, share


def image_side(inp: dict | None) -> float | None:
    """The image's side in pixels: ``image_size``, or the side of a square of ``height`` x ``width`` pixels (a
    non-square image costs what a square of as many pixels, hence latent tokens, costs); None when neither is given."""
    inp = inp or {}
    if inp.get("image_size"):
        return float(inp["image_size"])
    if inp.get("height") and inp.get("width"):
        return math.sqrt(float(inp["height"]) * float(inp["width"]))
    return None


def dense_bytes(precision: str) -> float:
    return 4.0 if precision == "fp32" else 2.0


def denoiser_weight_bytes(precision: str, quantization: str | None) -> float:
    """Bytes per parameter of a diffusion denoiser at rest: the compute dtype's, or a weight-only storage format's
    (fp8 / int8: 1 byte, 4-bit: half a byte plus its group scales, shapes.QUANT_STORAGE), which each layer casts to
    the compute dtype when it runs (diffusers' layerwise casting and quantization backends, DiffSynth's fp8
    ``torch_dtype``): the denoiser only; text encoders and the VAE keep the compute dtype."""
    if quantization in (None, "none"):
        return dense_bytes(precision)
    return quant_bits_per_param(quantization) / 8.0


def quantized_denoiser_note(precision: str, quantization: str, denoiser_bytes: float) -> str:
    """The assumption a quantized denoiser's estimate states; ``denoiser_bytes``: its weights as counted."""
    return _("the denoiser's weights are stored as {q} ({bytes:.2f} bytes per parameter: {gib:.1f} GiB) and cast to "
             "{dtype} layer by layer as it runs; the text encoders and the VAE stay in {dtype}; time is counted at "
             "{dtype} compute (the casts are not timed)").format(
        q=quantization, bytes=denoiser_weight_bytes(precision, quantization), gib=denoiser_bytes / GIB,
        dtype=precision)


def conv_flops_share(model) -> float | None:
    """The share of a network's forward FLOPs that cuDNN convolutions run (the rest are matmuls: nn.Linear,
    attention), from nonllm.conv_flops_share by family, then by arch; 0 for an arch the table does not name (a
    transformer: its patch embedding is under 1 %); None for an arch whose split is not known."""
    tab = table("nonllm", "conv_flops_share")
    family, arch = getattr(model, "family", None), getattr(model, "arch", None)
    if family in tab["family"]:
        return float(tab["family"][family])
    if arch in tab["unknown"]:
        return None
    return float(tab["arch"].get(arch, 0.0))


def forward_cost(model, scale: InputScale, precision: str, params: float | None = None,
                 tf32: bool = True) -> ForwardCost:
    """One forward of the whole network at batch 1: FLOPs and activation traffic per sample (each saved
    tensor written and read by the element-wise ops around it: nonllm.activation_traffic_per_saved_byte; none
    for a plain ViT encoder, whose element-wise work is in the prefill efficiency: nonllm.plain_encoder_families),
    the weights read once, and the ops it launches (profile kernels_per_forward, else
    nonllm.default_kernels_per_forward). ``tf32`` False: fp32 matmuls on the FP32 cores, the convolutions
    (:func:`conv_flops_share`; all of the FLOPs counted as matmuls where the share is unknown) still on TF32."""
    prof = model.profile
    nl = table("nonllm")
    traffic = prof.activation_bytes_per_sample * scale.activations * float(nl["activation_traffic_per_saved_byte"]) \
        * (dense_bytes(precision) / 2.0)
    if model.kind == "vision" and getattr(model, "family", None) in nl["plain_encoder_families"]:
        traffic = 0.0   # in the prefill efficiency, as for an encoder of the same shape (nonllm.plain_encoder_families)
    kernels = float(prof.kernels_per_forward or nl["default_kernels_per_forward"])
    weights = float(params if params is not None else model.params_total) * dense_bytes(precision)
    cpu_factor = float(table("nonllm", "eager_cpu_factor").get(model.kind, table("nonllm", "eager_cpu_factor")["default"]))
    flops = prof.forward_flops_per_sample * scale.flops
    return ForwardCost(flops, traffic, weights, kernels, matmul_dtype(precision, tf32), cpu_factor,
                       conv_flops_per_sample=flops * (conv_flops_share(model) or 0.0))


def empty_perf() -> dict:
    keys = ("step_time_s", "samples_per_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "tflops_per_gpu",
            "comm_fraction", "total_time_s", "gpu_hours", "ttft_s", "tpot_s", "output_tokens_per_s",
            "max_concurrency", "max_requests_per_s", "latency_s", "images_per_s")
    return dict.fromkeys(keys)


def pipeline_memory(weights: float, acts: float, *, system: System, layout: Layout, host_bytes: float,
                    phase: str, cached: float = 0.0) -> MemoryEstimate:
    """One GPU of a generation pipeline (image or video diffusion): the weights it holds and the activations of its
    peak phase, rounded up as the allocator does (memory.workspace_bytes, reserve_fraction_of_total, a tenth of the
    activations as fragmentation), plus the CUDA context and, when the pipeline is split over GPUs, NCCL buffers."""
    mem_tab = table("memory")
    ctx, nccl = overhead_fixed(system, replica=layout)   # data-parallel copies of a pipeline share no communicator
    alloc = weights + acts + mem_tab["workspace_bytes"]
    # ``cached``: the other phase's freed segments, which the caching allocator keeps and this phase's differently
    # sized tensors do not fill (as the training step's logits and recomputed layer: memory/train.py)
    reserved = alloc * (1 + mem_tab["reserve_fraction_of_total"]) + 0.1 * acts + cached
    per_gpu = reserved + ctx + nccl
    comp = dict.fromkeys(COMPONENTS, 0.0)
    comp.update(weights=weights, activations=acts)
    comp["overhead"] = per_gpu - weights - acts
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                          capacity_bytes=system.capacity_bytes, components=comp,
                          host_bytes=host_bytes + 4 * GIB * system.gpus_per_node, peak_phase=phase,
                          total_bytes=per_gpu * layout.gpus, notes=[])
