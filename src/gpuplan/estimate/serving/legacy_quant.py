"""Weight-only 4/8-bit layers of serving engines before Marlin (inference.legacy_weight_only).

An engine release older than the one that moved a scheme to Marlin-class kernels runs the scheme's earlier
kernel: a dequantising GEMM that reaches a fraction of the 16-bit peak (``gemm_share``) for every row of a
forward, and, above a row count (exllama's MAX_Q_GEMM_ROWS for GPTQ, vLLM's 256-token threshold for AWQ from
0.3.0), a reconstruction of each whole weight in 16 bits followed by a 16-bit GEMM. Decode of a few sequences
stays on the slow kernel; a prompt pays the reconstruction once per forward. A workload without an engine
version is taken as a current release: Marlin, and nothing here applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.estimate.params import table
from gpuplan.estimate.memory.engine_limits import version_tuple
from gpuplan.estimate.serving.serving_case import ServingCase
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System

__all__ = ["LegacyQuantKernel", "legacy_quant_kernel", "reconstruct_s"]


@dataclass(frozen=True)
class LegacyQuantKernel:
    """The pre-Marlin kernel a serving case runs its quantized linears through."""

    gemm_share: float       # share of the 16-bit dense peak its dequantising GEMM reaches
    dequant_rows: float     # rows of one forward from which each weight is rebuilt in 16 bits (inf: never)
    bytes_per_param: float  # HBM bytes to rebuild one weight (packed read + 16-bit write)

    def rebuilds(self, rows: float) -> bool:
        """Whether a forward of ``rows`` token rows reconstructs the weights (and runs a 16-bit GEMM)."""
        return rows >= self.dequant_rows


def legacy_quant_kernel(case: ServingCase) -> LegacyQuantKernel | None:
    """The old kernel of ``case``'s engine version for its weight-only scheme, or None (Marlin, or a scheme,
    engine or version the table does not date)."""
    if not case.framework_version:
        return None
    tab = table("inference", "legacy_weight_only")
    since = tab["marlin_since"].get(case.framework, {}).get(case.quantization or "none")
    if since is None or version_tuple(case.framework_version) >= version_tuple(str(since)):
        return None
    rows = math.inf
    for start, n in tab["dequant_rows"].get(case.quantization, {}).get(case.framework, []):
        if version_tuple(case.framework_version) >= version_tuple(str(start)):
            rows = float(n)
    return LegacyQuantKernel(gemm_share=float(tab["gemm_share"][case.quantization]), dequant_rows=rows,
                             bytes_per_param=float(tab["reconstruct_bytes_per_param"][case.quantization]))


def reconstruct_s(kernel: LegacyQuantKernel, s: Shape, layout: Layout, system: System) -> float:
    """Seconds to rebuild one GPU's share of the quantized linears in 16 bits, once (one forward)."""
    bw = system.gpu.mem_bandwidth_gb_s * 1e9 * system.gpu_fraction * \
        float(table("inference", "weight_stream_efficiency"))
    return s.linear_params_total / (layout.tp * layout.pp) * kernel.bytes_per_param / bw
