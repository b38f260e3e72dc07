"""Sustained tensor throughput of a GPU relative to the cards the efficiency tables were fitted on (data/efficiency.yaml
``sustained_tensor``).

A datasheet tensor rate is the rate at the rated boost clock. Under a long GEMM load a card reaches some share of it,
and the efficiency tables (training HFU, prefill, decode GEMMs, non-LLM forwards) were fitted on cards whose share is
the reference's (A100 / H100 SXM). A listed card's compute-bound times are scaled by

    fraction = (measured / datasheet) / (reference measured / reference datasheet)

with both measurements from one benchmark (the same script on both cards). Below 1: a card whose board power cannot
feed every tensor core at the boost clock (A10 150 W, L4 72 W, T4 70 W, L40S 350 W) runs a lower SM clock; its memory
clock stays. Above 1: a card that outruns the reference's share (GeForce cards whose GPU Boost runs past the rated boost
clock, and GA102 / AD102 parts whose FP32-accumulate tensor rate is half the FP16-accumulate one and so easier to feed:
an RTX 3090 measures 76 of its 71 TFLOPS). The fraction scales every tensor rate of the card (the measurements are
16-bit; MLPerf's INT8/FP8 runs show 8-bit loads on power-limited cards holding somewhat more, efficiency.yaml
``sustained_tensor``). Bandwidth-bound times are not scaled: the memory clock does not change.

:func:`peak_flops` (the datasheet rate at a precision) and :func:`sustained_flops` (times that fraction) are the GPU
rates every time model reads: training, prefill, decode and the non-LLM forwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuplan.estimate.params import table
from gpuplan.i18n import _

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.catalog.hardware.gpus import GpuSpec
    from gpuplan.estimate.system import System


def _entry(gpu_id: str) -> dict[str, Any] | None:
    return table("sustained_tensor", "gpus").get(gpu_id)


def _datasheet(gpu: "GpuSpec", dtype: str) -> float | None:
    return gpu.peak_tflops(dtype)


def measured_share(gpu_id: str) -> tuple[float, float] | None:
    """(the GPU's measured share of its datasheet rate, the reference card's share in the same benchmark), or None
    when the GPU has no measurement in efficiency.yaml."""
    from gpuplan.catalog.hardware.gpus import get_gpu

    e = _entry(gpu_id)
    if e is None:
        return None
    dtype = str(e["dtype"])
    own = _datasheet(get_gpu(gpu_id), dtype)
    ref = _datasheet(get_gpu(str(e["reference_gpu"])), dtype)
    if not own or not ref:
        return None
    return float(e["measured_tflops"]) / own, float(e["reference_tflops"]) / ref


def sustained_tensor_fraction(gpu: "GpuSpec") -> float:
    """Share of its datasheet tensor rate ``gpu`` sustains under a long GEMM load, relative to the reference card's
    share (1.0 when not measured; below 1 for a power-limited card, above 1 for one that outruns the reference). An
    inline GPU's declared fraction comes first: its name is the user's, so the table (keyed by catalog id) cannot
    know it."""
    declared = getattr(gpu, "sustained_tensor_fraction", None)
    if declared is not None:
        return float(declared)
    shares = measured_share(gpu.id)
    if shares is None:
        return 1.0
    own, ref = shares
    return own / ref


def sustained_note(gpu: "GpuSpec") -> str | None:
    """The sentence an estimate states when it scales ``gpu``'s compute by its sustained fraction (None: no scaling)."""
    f = sustained_tensor_fraction(gpu)
    if f == 1.0:
        return None
    if getattr(gpu, "sustained_tensor_fraction", None) is not None:
        return _("{gpu} sustains {share:.0%} of its datasheet tensor rate under a long GEMM load (hardware.gpu "
                 "sustained_tensor_fraction): compute-bound times are scaled by it, bandwidth-bound ones are "
                 "not").format(gpu=gpu.id, share=f)
    e = _entry(gpu.id) or {}
    args = {"gpu": gpu.id, "share": f, "measured": float(e.get("measured_tflops", 0.0)), "tdp": gpu.tdp_w or 0.0}
    if f > 1.0:
        return _("{gpu} runs its compute-bound work at {share:.0%} of the rate the efficiency tables give a card of "
                 "its datasheet ({measured:g} TFLOP/s measured on a long GEMM load, a larger share of its datasheet than "
                 "an A100 reaches in the same benchmark): compute-bound times are scaled by it, bandwidth-bound ones are "
                 "not (data/efficiency.yaml sustained_tensor)").format(**args)
    return _("{gpu} sustains {share:.0%} of the tensor rate its datasheet gives at the boost clock ({measured:g} TFLOP/s "
             "measured on a long GEMM load against an A100's share in the same benchmark; board power {tdp:g} W): "
             "compute-bound times are scaled by it, bandwidth-bound ones are not (data/efficiency.yaml "
             "sustained_tensor)").format(**args)


def attention_rate_factor(gpu: "GpuSpec", framework: str, model_parallel: bool = False,
                          kernel: str | None = None) -> float:
    """Rate of the attention core relative to the GEMMs' on ``gpu`` under ``framework`` (efficiency.yaml
    ``fa2_on_hopper``): a FlashAttention-2 stack on a full-rate Hopper part runs it at ``relative_rate``; 1.0 otherwise
    (FA2 on Ampere/Ada reaches about the GEMMs' share, the rate the efficiency tables were fitted at). A model-parallel
    layout launches Megatron-Core, whose Transformer Engine attention runs Hopper kernels. A stated ``kernel`` (the
    workload's attention_kernel) decides on those parts: fa3 / cudnn run Hopper's wgmma kernels (the GEMMs' rate), fa2
    runs at ``relative_rate`` under any stack."""
    tab = table("fa2_on_hopper")
    if getattr(gpu, "id", None) not in tab["gpus"]:
        return 1.0
    if kernel in ("fa3", "cudnn"):
        return 1.0
    if kernel == "fa2":
        return float(tab["relative_rate"])
    if model_parallel or framework not in tab["stacks"]:
        return 1.0
    return float(tab["relative_rate"])


KERNEL_NAMES = {"fa2": "FlashAttention-2", "fa3": "FlashAttention-3", "cudnn": "cuDNN SDPA"}


def stated_kernel_note(gpu: "GpuSpec", kernel: str | None) -> str | None:
    """The assumption a forward states when the workload's attention_kernel lifts its attention to the GEMMs' rate on
    a part where the stack's FA2 would run it at half (None elsewhere)."""
    if kernel not in ("fa3", "cudnn") or getattr(gpu, "id", None) not in table("fa2_on_hopper")["gpus"]:
        return None
    return _("attention runs {kernel} on {gpu}, at the GEMMs' rate (Hopper's wgmma; workload attention_kernel)").format(
        kernel=KERNEL_NAMES[kernel], gpu=gpu.id)


def training_kernel(kernel: str | None) -> str | None:
    """The stated attention kernel a training step is timed with: fa2 as stated; fa3 and cudnn keep the stack's rule.
    Their Hopper rate is a forward figure (FlashAttention-3's 740 TFLOP/s, 75 % of an H100); the only training runs
    measured with FA3 (prime-rl SFT and LoRA of Qwen3 on H100 / H200, 8-64k tokens: held-out set 11) step at the
    FA2 rule's pace (median ratio 1.0 at the FA2 rate, 1.4 at the GEMMs'), so no faster backward is assumed."""
    return kernel if kernel == "fa2" else None


def attention_rate_note(gpu: "GpuSpec", framework: str, factor: float, share: float | None = None) -> str:
    """The sentence an estimate states when its attention core runs below the GEMM rate (``share``: the time it adds
    to the compute, where one figure holds)."""
    text = _("{framework} runs attention with FlashAttention-2 on {gpu}, at {rate:.0%} of the GEMMs' rate (Ampere's "
             "mma.sync instructions, not Hopper's wgmma; data/efficiency.yaml fa2_on_hopper)").format(
        framework=framework, gpu=gpu.id, rate=factor)
    if share is None:
        return text
    return _("{text}: +{share:.0%} on the compute").format(text=text, share=share)


# The rate key of fp32 matmuls kept off the TF32 tensor cores (workload tf32: false): see matmul_dtype.
FP32_CORES = "fp32-cores"


def matmul_dtype(precision: str, tf32: bool = True) -> str:
    """The rate a run's matmuls are timed at: ``precision``, except that fp32 with ``tf32`` False (the workload's
    ``tf32: false``, PyTorch's default since 1.12: torch.backends.cuda.matmul.allow_tf32 = False) runs them on the FP32
    cores (``FP32_CORES``). Bytes stay the precision's: this is a rate key for :func:`peak_flops`, nothing else."""
    return FP32_CORES if precision == "fp32" and not tf32 else precision


def conv_dtype(dtype: str) -> str:
    """The rate key of cuDNN convolutions in a run whose matmuls run at ``dtype``: TF32 stays on for them when matmul
    TF32 is off (torch.backends.cudnn.allow_tf32 defaults to True), so fp32 convolutions keep the TF32 rate."""
    return "fp32" if dtype == FP32_CORES else dtype


def peak_flops(system: "System", precision: str, notes: list[str]) -> float:
    """Dense tensor FLOP/s of one GPU at the compute precision (vGPU slices get their share); ``precision`` may be
    ``FP32_CORES`` (:func:`matmul_dtype`): fp32 on the FP32 cores."""
    gpu = system.gpu
    key = {"fp32": "tf32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8", FP32_CORES: "fp32"}[precision]
    val = gpu.peak_tflops(key)
    if key == "fp32" and gpu.peak_tflops("tf32"):
        note = _("tf32: false: fp32 matmuls on {gpu}'s FP32 cores ({fp32:g} TFLOP/s), PyTorch's default "
                 "(torch.backends.cuda.matmul.allow_tf32 = False), not its TF32 tensor cores ({tf32:g} TFLOP/s); cuDNN "
                 "convolutions stay on TF32 (torch.backends.cudnn.allow_tf32 = True)").format(
            gpu=gpu.id, fp32=val or 0.0, tf32=gpu.peak_tflops("tf32"))
        if note not in notes:
            notes.append(note)
    if val is not None and key == "tf32":
        note = _("fp32 matmuls timed on the TF32 tensor cores ({tf32:g} TFLOP/s on {gpu}): the bundle's train.py, "
                 "LLaMA-Factory and ms-swift configs, embed.py and the image and video scripts turn TF32 on; PyTorch's "
                 "default leaves matmuls on the FP32 cores ({fp32:g} TFLOP/s): say tf32: false to time that").format(
            tf32=val, gpu=gpu.id, fp32=gpu.peak_tflops("fp32") or 0.0)
        if note not in notes:
            notes.append(note)
    if val is None and key == "bf16":
        val = gpu.peak_tflops("fp16")
        if val is not None:
            notes.append(_("{gpu} has no BF16 tensor cores; timed at its FP16 rate").format(gpu=gpu.id))
    if val is None and key == "tf32":
        val = gpu.peak_tflops("fp32")
    if val is None and key == "fp8":
        val = gpu.peak_tflops("bf16") or gpu.peak_tflops("fp16")
        notes.append(_("{gpu} has no FP8 tensor cores; timed at its 16-bit rate").format(gpu=gpu.id))
    if val is None:
        val = gpu.peak_tflops("fp32") or 1.0
    return val * 1e12 * system.gpu_fraction


def sustained_flops(system: "System", precision: str, notes: list[str]) -> float:
    """Dense tensor FLOP/s one GPU delivers under a long GEMM load: :func:`peak_flops` times the GPU's sustained
    fraction (the share of its datasheet rate it reaches against the reference card's: the module docstring).
    Compute-bound times use this; MFU stays relative to :func:`peak_flops`."""
    note = sustained_note(system.gpu)
    if note and note not in notes:
        notes.append(note)
    return peak_flops(system, precision, notes) * sustained_tensor_fraction(system.gpu)
