"""One serving case (precision, quantization, KV dtype, engine and its version, prompt and output lengths) and
the dtypes and stream efficiencies it implies: shared by prefill, decode and their fixed costs."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.clocks import matmul_dtype
from gpuplan.estimate.memory import ENGINES
from gpuplan.estimate.params import table

COMPILED = {"torch-compile"}


@dataclass(frozen=True)
class ServingCase:
    precision: str
    quantization: str
    kv_dtype_bytes: float
    framework: str
    prompt_tokens: int
    output_tokens: int
    framework_version: str | None = None
    flash: bool = True          # fused attention; False: the scores go through HBM (forward.unfused_scores_s)
    tf32: bool = True           # fp32 matmuls on the TF32 tensor cores (workload tf32; clocks.matmul_dtype)
    attention_kernel: str | None = None   # the workload's stated attention kernel (clocks.attention_rate_factor)
    vision_flops_per_prompt: float = 0.0  # a VLM's vision tower over one request's images (inference.vision_flops)


def soft_max(a: float, b: float, k: float) -> float:
    return (a**k + b**k) ** (1.0 / k)


def compute_dtype(case: ServingCase) -> str:
    """FP8 compute needs FP8 weights; otherwise an fp8 precision runs its GEMMs in 16-bit. Serving
    engines run FP8 checkpoints (W8A8: ModelOpt / compressed-tensors / Qwen "-FP8") through FP8 tensor-core
    GEMMs, the activations quantized on the fly, whatever the model's 16-bit dtype (vLLM fp8 docs,
    TensorRT-LLM FP8 quantization, SGLang w8a8_fp8); GPUs without FP8 tensor cores fall back to 16-bit
    (clocks.peak_flops)."""
    if case.quantization == "fp8" and case.framework in ENGINES:
        return "fp8"
    return "fp16" if case.precision == "fp8" and case.quantization != "fp8" else matmul_dtype(case.precision, case.tf32)


def attention_dtype(case: ServingCase) -> str:
    """The attention core's dtype: 16-bit unless the model itself is fp32 (then on the TF32 or the FP32 cores, as
    its other matmuls)."""
    return matmul_dtype("fp32", case.tf32) if case.precision == "fp32" else "fp16"


def stream_efficiency(quantization: str, framework: str = "transformers") -> float:
    inf = table("inference")
    if quantization in (None, "none"):
        if framework in COMPILED:
            return float(inf["compiled_stream_efficiency"])
        return float(inf["weight_stream_efficiency"])
    if framework in ENGINES and quantization not in ("bnb-nf4", "bnb-int8"):
        return float(inf["engine_quantized_stream_efficiency"])
    if framework in COMPILED and quantization in inf["compiled_quantized_stream_efficiency"]:
        return float(inf["compiled_quantized_stream_efficiency"][quantization])
    return float(inf["quantized_stream_efficiency"].get(quantization, 0.4))


# ------------------------------------------------------------------ collectives
