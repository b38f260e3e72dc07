"""Fixed costs of every decode layer in a serving engine (estimate/serving/decode.py adds them to the roofline).

- Kernels: an engine launches a fixed set of kernels per layer and block (``inference.decode_kernels``), each
  with a fixed latency inside its CUDA graph (``inference.kernel_latency_s``), more above the graph capture limit.
- Collectives: two tensor-parallel all-reduces per layer at the measured latency of the engine's all-reduce
  (``inference.allreduce_latency_s``: NVIDIA aiconfigurator-core 0.12.0's kernel databases, Apache-2.0), the
  ring model across nodes; expert-parallel dispatch and combine per MoE layer (``inference.ep_all_to_all``).
- Older engines' fused-MoE overhead per MoE layer (``inference.moe_layer_overhead_s``, by version).
"""

from __future__ import annotations

import math

from gpuplan.estimate.comm import tp_collective_s
from gpuplan.estimate.memory import ENGINES
from gpuplan.estimate.params import interpolate_log2, table
from gpuplan.estimate.memory.engine_limits import version_tuple
from gpuplan.estimate.serving.serving_case import ServingCase, compute_dtype
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System

PCIE_MEASURED_MAX_BYTES = 1 << 20     # decode-sized all-reduces over PCIe: the measured curve as it is


def _link_class(system: System, tp: int) -> str:
    """Which measured all-reduce curve applies: NVLink/NVSwitch, or PCIe (custom all-reduce between two
    PCIe GPUs; NCCL's ring beyond two, where vLLM and SGLang turn their custom all-reduce off)."""
    if system.intra_link in ("nvswitch", "nvlink"):
        return "nvlink"
    return "pcie_pair" if tp <= 2 else "pcie"


def engine_allreduce_s(system: System, tp: int, size_bytes: float) -> float:
    """One decode all-reduce of ``size_bytes`` inside a node, as serving engines run it in a CUDA graph: the
    measured latency curve of the link class and GPU count (inference.allreduce_latency_s, by message size,
    interpolated in log2 between the measured sizes and between 2, 4 and 8 GPUs)."""
    if tp <= 1:
        return 0.0
    link = _link_class(system, tp)
    lo_pts, hi_pts, weight = _curves(link, tp)
    t_lo = _curve_s(lo_pts, size_bytes)
    t = t_lo if hi_pts is lo_pts else t_lo + (_curve_s(hi_pts, size_bytes) - t_lo) * weight
    if not system.gpu_p2p and link != "nvlink":
        # a VM's PCIe cards without peer-to-peer: NCCL stages every transfer through host memory at
        # communication.pcie_vm.host_staged_share of the bus the measured (peer-to-peer) curves ran at
        t = t / float(table("communication", "pcie_vm", "host_staged_share"))
    return t


_CURVES: dict[tuple[str, int], tuple] = {}


def _curves(link: str, tp: int) -> tuple[list, list, float]:
    """The measured curves either side of ``tp`` GPUs and the log2 weight between them (cached per table
    object: bench/accuracy.py swaps the tables while it fits)."""
    table_now = table("inference", "allreduce_latency_s")
    got = _CURVES.get((link, tp))
    if got is not None and got[0] is table_now:
        return got[1], got[2], got[3]
    curves = table_now[link]
    sizes = sorted(int(k) for k in curves)
    lo = max([g for g in sizes if g <= tp] or [sizes[0]])
    hi = min([g for g in sizes if g >= tp] or [sizes[-1]])
    weight = 0.0 if hi == lo else (math.log2(tp) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    lo_pts, hi_pts = curves[lo], curves[hi] if hi != lo else curves[lo]
    _CURVES[(link, tp)] = (table_now, lo_pts, hi_pts, weight)
    return lo_pts, hi_pts, weight


def _curve_s(points: list[list[float]], size_bytes: float) -> float:
    """A measured latency curve at ``size_bytes``; beyond its largest size the time grows with the bytes."""
    last_bytes, last_s = points[-1]
    if size_bytes > last_bytes:
        return float(last_s) * size_bytes / float(last_bytes)
    return interpolate_log2(points, max(1.0, size_bytes))


def tp_allreduce_s(system: System, layout: Layout, bytes_each: float, count: float, framework: str = "") -> float:
    """``count`` TP all-reduces of ``bytes_each``. Serving engines inside one node: the measured latency of
    their all-reduce (:func:`engine_allreduce_s`); across nodes, or other stacks: the ring model
    (comm.tp_collective_s)."""
    if layout.tp <= 1:
        return 0.0
    if framework in ENGINES and layout.tp <= system.gpus_per_node:
        measured = engine_allreduce_s(system, layout.tp, bytes_each)
        if _link_class(system, layout.tp) == "pcie" and bytes_each > PCIE_MEASURED_MAX_BYTES:
            # the measured PCIe curve comes from one server's topology (its large messages run at a few GB/s,
            # through the host): for prefill-sized messages the ring over this system's own PCIe bandwidth
            # decides when it is faster
            measured = min(measured, tp_collective_s(system, layout.tp, bytes_each))
        return measured * count
    return tp_collective_s(system, layout.tp, bytes_each) * count


def ep_all_to_all_s(system: System, ep: int, tokens_per_rank: float) -> float:
    """Dispatch + combine of one MoE layer under expert parallelism (DeepEP low-latency kernels, the path
    SGLang and vLLM take with data-parallel attention): a start-up plus a cost per token a rank sends,
    inside one NVLink node or across nodes (inference.ep_all_to_all)."""
    if ep <= 1:
        return 0.0
    c = table("inference", "ep_all_to_all")
    key = "intra_node" if ep <= system.gpus_per_node and system.intra_link in ("nvswitch", "nvlink") else "inter_node"
    base, per_token = c[key]
    return float(base) + float(per_token) * max(1.0, tokens_per_rank)


# ------------------------------------------------------------------ fixed kernels per layer
def kernels_per_layer(s: Shape, case: ServingCase) -> tuple[float, float]:
    """(kernels every layer launches, extra kernels of a MoE layer) in one decode step
    (inference.decode_kernels): the attention or MLA block and the FFN block; a MoE layer's router, fused
    experts and shared expert instead of a dense MLP; one activation-quantisation kernel before each W8A8
    FP8 GEMM input."""
    k = table("inference", "decode_kernels")
    per, gemms = k["per_layer"], k["gemm_inputs"]
    fp8 = compute_dtype(case) == "fp8"
    attn = "mla" if s.is_mla else "attention"
    base = float(per[attn]) + float(per["mlp"]) + (float(gemms[attn] + gemms["mlp"]) * float(per["fp8_act_quant"])
                                                    if fp8 else 0.0)
    if not s.moe_experts:
        return base, 0.0
    moe = float(per["moe"]) - float(per["mlp"])
    moe_gemms = float(gemms["moe"]) - float(gemms["mlp"])
    if s.moe_active_ffn > s.moe_experts_per_token * s.moe_expert_ffn:     # shared experts
        moe += float(per["shared_expert"])
        moe_gemms += float(gemms["shared_expert"])
    return base, moe + (moe_gemms * float(per["fp8_act_quant"]) if fp8 else 0.0)


def moe_layers(s: Shape) -> float:
    """Layers with routed experts (DeepSeek-V3/R1 keep dense MLPs in their first three layers)."""
    if not s.moe_experts:
        return 0.0
    return float(s.moe_layer_count or s.layers)


def cuda_graph_max_batch(framework: str, system: System, tp: int, version: str | None = None) -> float:
    """The largest decode batch an engine captures in a CUDA graph by default (vLLM V1: 512; SGLang by GPU
    memory and TP size, server_args.py; TensorRT-LLM and LMDeploy: their batch limit); 0 for a release before the
    engine captured any (inference.cuda_graphs_since: TGI before 1.4 decoded eagerly)."""
    since = table("inference", "cuda_graphs_since").get(framework)
    if since and version and version_tuple(version) < version_tuple(str(since)):
        return 0.0
    caps = table("inference", "cuda_graph_max_batch")
    got = caps.get(framework, caps["default"])
    if isinstance(got, (int, float)):
        return float(got)
    mem_gib = system.gpu.memory_gib
    for row in got:      # [[memory GiB below, max batch with TP < 4, with TP >= 4], ...]
        if mem_gib < float(row[0]):
            return float(row[1] if tp < 4 else row[2])
    return float(got[-1][2])


def moe_layer_overhead_s(framework: str, version: str | None) -> float:
    """Extra fixed time per MoE layer of engine versions whose fused-MoE path was slower at small batch
    (inference.moe_layer_overhead_s: [[version it was fixed in, seconds], ...]); 0 for current versions."""
    rows = table("inference", "moe_layer_overhead_s").get(framework)
    if not rows or not version:
        return 0.0
    v = version_tuple(version)
    for fixed_in, seconds in rows:
        if v < version_tuple(str(fixed_in)):
            return float(seconds)
    return 0.0


# ------------------------------------------------------------------ the step


def _tp_layout(tp: int) -> Layout:
    got = _TP_LAYOUTS.get(tp)
    if got is None:
        got = _TP_LAYOUTS[tp] = Layout(tp=tp)
    return got


_TP_LAYOUTS: dict[int, Layout] = {}
