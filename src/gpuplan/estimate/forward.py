"""Time of one batched forward pass of a network that is not decoded token by token (CNN, ViT, diffusion
UNet/DiT, VAE): the small-batch / large-batch physics the LLM decode path has.

    GPU time = weights / (HBM x stream efficiency)                  read once per forward, whatever the batch
             + batch x FLOPs / (dense peak x GEMM efficiency)        compute-bound at large batch
             + batch x activation traffic / (HBM x stream efficiency)  element-wise ops (norms, activations,
                                                                       residuals) read and write every tensor
    CPU time = kernels x per-op launch cost                          eager PyTorch launches every op from Python
    time     = soft maximum of the two (the GPU runs ahead of the CPU until one of them binds)

At batch 1 a ResNet-50 forward is the CPU launching ~175 ops (a few ms); at batch 64 it is the GPU's
FLOPs and activation traffic: images/s grow with the batch until the GPU is busy. Compiled stacks
(torch.compile CUDA graphs, TensorRT) launch the whole graph at once and pay a small GPU floor per kernel.
Constants: inference.* (weight_stream_efficiency, prefill_efficiency, eager_cpu_s_per_layer,
eager_overlap_exponent, engine_layer_floor_s) and nonllm.activation_traffic_per_saved_byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.params import table
from gpuplan.estimate.system import System
from gpuplan.estimate.clocks import (attention_rate_factor, attention_rate_note, conv_dtype, stated_kernel_note,
                                     sustained_flops)
from gpuplan.i18n import N_

COMPILED_FRAMEWORKS = frozenset({"torch-compile", "trtllm"})  # one CUDA graph / TensorRT engine per forward


def unfused_scores_s(system: System, scores: float, bytes_per_score: float) -> float:
    """Seconds to move ``scores`` attention-score elements through HBM, ``bytes_per_score`` bytes each, at the
    weight-streaming share of the bandwidth: attention without a fused kernel writes the s x s scores and reads them
    back (Dao et al. 2022, Algorithm 0). The one rule of the training step (training.unfused_attention_bytes_per_score:
    forward, backward, recomputation) and of prefill (inference.unfused_attention_bytes_per_score: forward)."""
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * float(table("inference", "weight_stream_efficiency"))
    return scores * bytes_per_score / bw


@dataclass(frozen=True)
class ForwardCost:
    """What one forward costs: per sample (FLOPs, activation traffic) and per call (weights, kernels)."""

    flops_per_sample: float
    traffic_bytes_per_sample: float
    weight_bytes: float
    kernels: float
    precision: str = "bf16"
    cpu_factor: float = 1.0      # Python cost per op relative to a Hugging Face decoder's (nonllm.eager_cpu_factor)
    attention_flops_per_sample: float = 0.0   # the part of flops_per_sample the attention kernel runs (s x s terms)
    conv_flops_per_sample: float = 0.0   # the part cuDNN convolutions run (at clocks.conv_dtype(precision))

    def scaled(self, flops: float = 1.0, traffic: float = 1.0, weights: float = 1.0, kernels: float = 1.0) -> "ForwardCost":
        return ForwardCost(self.flops_per_sample * flops, self.traffic_bytes_per_sample * traffic,
                           self.weight_bytes * weights, self.kernels * kernels, self.precision, self.cpu_factor,
                           self.attention_flops_per_sample * flops, self.conv_flops_per_sample * flops)


@dataclass(frozen=True)
class ForwardTime:
    seconds: float
    cpu_s: float
    gpu_s: float

    @property
    def bound(self) -> str:
        return N_("launch") if self.cpu_s > self.gpu_s else N_("GPU")


def eager_cpu_s_per_op() -> float:
    """CPU seconds to launch one PyTorch op from Python (inference.eager_cpu_s_per_layer, calibrated on
    Hugging Face decoder layers, over that layer's ops: training.dequant_traffic.eager_ops_per_layer)."""
    return float(table("inference", "eager_cpu_s_per_layer")) / float(
        table("training", "dequant_traffic")["eager_ops_per_layer"])


def gpu_floor_s_per_op() -> float:
    """Least GPU time of one kernel when the launches are not the bound (a CUDA graph): the engines'
    per-layer floor (inference.engine_layer_floor_s) over a decoder layer's ops."""
    return float(table("inference", "engine_layer_floor_s")) / float(
        table("training", "dequant_traffic")["eager_ops_per_layer"])


def gpu_seconds(cost: ForwardCost, batch: int, system: System, notes: list[str] | None = None,
                framework: str = "", attention_kernel: str | None = None) -> float:
    """GPU time of one forward of ``batch`` samples (see the module docstring); the attention part of the FLOPs at its
    kernel's rate under ``framework`` (clocks.attention_rate_factor), the convolutions' at theirs (clocks.conv_dtype:
    TF32 for fp32 whatever the matmuls run at)."""
    inf = table("inference")
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * float(inf["weight_stream_efficiency"])
    peak = sustained_flops(system, cost.precision, notes if notes is not None else [])
    rate = attention_rate_factor(system.gpu, framework, kernel=attention_kernel)
    stated = stated_kernel_note(system.gpu, attention_kernel) if cost.attention_flops_per_sample else None
    if stated and notes is not None and stated not in notes:
        notes.append(stated)
    flops = cost.flops_per_sample + cost.attention_flops_per_sample * (1.0 / rate - 1.0)
    if rate < 1.0 and cost.attention_flops_per_sample and notes is not None:
        note = attention_rate_note(system.gpu, framework, rate,
                                   cost.attention_flops_per_sample * (1.0 / rate - 1.0) / cost.flops_per_sample)
        if note not in notes:
            notes.append(note)
    conv = cost.conv_flops_per_sample
    if conv and conv_dtype(cost.precision) != cost.precision:
        flops += conv * (peak / sustained_flops(system, conv_dtype(cost.precision), []) - 1.0)
    compute = batch * flops / (peak * float(inf["prefill_efficiency"]))
    traffic = batch * cost.traffic_bytes_per_sample / bw
    return max(cost.weight_bytes / bw + compute + traffic, cost.kernels * gpu_floor_s_per_op())


def forward_time(cost: ForwardCost, batch: int, system: System, framework: str,
                 notes: list[str] | None = None, attention_kernel: str | None = None) -> ForwardTime:
    """Seconds for one forward of ``batch`` samples: eager stacks overlap the CPU's launches with the GPU
    (soft maximum, inference.eager_overlap_exponent); compiled stacks are bound by the GPU alone."""
    gpu = gpu_seconds(cost, batch, system, notes, framework, attention_kernel)
    if framework in COMPILED_FRAMEWORKS:
        return ForwardTime(gpu, 0.0, gpu)
    cpu = cost.kernels * eager_cpu_s_per_op() * cost.cpu_factor
    k = float(table("inference", "eager_overlap_exponent"))
    return ForwardTime((cpu**k + gpu**k) ** (1.0 / k), cpu, gpu)
