"""Communication time of a training or serving step (the estimator's network model).

- Ring all-reduce 2(n-1)/n·S, reduce-scatter/all-gather (n-1)/n·S (nccl-tests PERFORMANCE.md), over NVLink/PCIe
  inside a node and the nodes' NICs across them, with a per-hop latency (efficiency.yaml ``communication``).
- Tensor parallelism all-reduces the activations 4 times per layer per micro-batch (Shoeybi et al. 2019 §3);
  a TP group that spans nodes pays the inter-node links.
- Pipeline: the bubble (p-1)/(v·m) (Narayanan et al. 2021 §2.2) and the point-to-point activation sends at
  stage boundaries (split over the TP ranks, scatter/gather §4.1).
- Expert parallelism: the dispatch and combine all-to-all of MoE layers.
"""

from __future__ import annotations

import math

from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System


def _ring_time(size_bytes: float, n: int, bus_bytes_s: float, latency_s: float, factor: float) -> float:
    """factor·(n-1)/n·S over the bus bandwidth, plus one latency per ring step."""
    if n <= 1 or size_bytes <= 0:
        return 0.0
    return factor * (n - 1) / n * size_bytes / bus_bytes_s + latency_s * 2 * (n - 1)


def ring_latency_s(system: System, layout: Layout) -> float:
    """Start-up latency of one ring all-gather/reduce-scatter over the DP group: (n-1) hops."""
    n = layout.dp
    lat = float(table("communication", "inter_node_hop_s")) if system.nodes > 1 else system.intra_latency_s()
    return (n - 1) * lat


def dp_collective_time(system: System, layout: Layout, size_bytes: float, factor: float) -> float:
    """Time of a data-parallel collective over dp ranks: intra-node ring, plus the nodes' NICs."""
    dp = layout.dp
    if dp <= 1:
        return 0.0
    model_parallel = layout.tp * layout.pp
    ranks_in_node = max(1, min(dp, system.gpus_per_node // model_parallel)) if model_parallel <= system.gpus_per_node else 1
    t = _ring_time(size_bytes, ranks_in_node, system.intra_bus_bytes_s(), system.intra_latency_s(), factor)
    groups = math.ceil(dp / ranks_in_node)  # DP peers in other nodes
    inter = system.inter_bus_bytes_s()
    if groups > 1 and inter:
        # Hierarchical collective: after the intra-node step each GPU holds 1/ranks_in_node of S and
        # exchanges it with its peers in the other nodes; the node's NICs carry all of its GPUs' shares
        # (model-parallel groups in the node run their own DP collectives at the same time).
        gpus_sharing_nic = system.gpus_per_node
        per_gpu_bw = inter / gpus_sharing_nic
        t += factor * (groups - 1) / groups * (size_bytes / ranks_in_node) / per_gpu_bw \
            + system.inter_latency_s() * 2 * math.log2(groups + 1)
    return t


def tp_collective_s(system: System, tp: int, size_bytes: float, factor: float = 2.0) -> float:
    """One tensor-parallel collective of ``size_bytes`` (factor 2: all-reduce; 1: all-gather or
    reduce-scatter). Inside a node: a ring over NVLink/PCIe. A TP group wider than a node (TP16 on
    2 x 8 GPUs, as SGLang serves DeepSeek-R1) runs hierarchically: the intra-node ring, then each GPU
    exchanges its 1/g share with its peers in the other nodes over its share of the node's NICs."""
    if tp <= 1 or size_bytes < 0:
        return 0.0
    intra_bw, intra_lat, inter_per_gpu, inter_lat = _links(system)
    g = max(1, min(tp, system.gpus_per_node))
    t = factor * (g - 1) / g * size_bytes / intra_bw + 2 * intra_lat if g > 1 else 0.0
    if g > 2 and system.intra_link not in ("nvswitch", "nvlink"):
        # over PCIe NCCL runs a ring: every step of it waits one hop (communication.inter_node_hop_s), where
        # NVSwitch systems use NVLS / one-shot kernels; vLLM's custom all-reduce also stops at 2 PCIe GPUs
        t += factor * (g - 1) * float(table("communication", "inter_node_hop_s"))
    k = math.ceil(tp / g)
    if k > 1:
        t += factor * (k - 1) / k * (size_bytes / g) / inter_per_gpu + 2 * inter_lat * math.ceil(math.log2(k))
    return t


def _links(system: System) -> tuple[float, float, float, float]:
    """(intra-node bus bytes/s, intra latency, inter-node bytes/s per GPU, inter latency)."""
    inter = system.inter_bus_bytes_s() or (float(table("communication", "assumed_cluster_network",
                                                       "pcie_node_gbit_s")) / 8 * 1e9 * 0.5)
    return (system.intra_bus_bytes_s(), system.intra_latency_s(), inter / max(1, system.gpus_per_node),
            system.inter_latency_s())


def pipeline_bubble(layout: Layout) -> float:
    """Idle share of a pipelined step: (p-1)/m for GPipe and 1F1B, (p-1)/(v·m) interleaved."""
    if layout.pp <= 1:
        return 0.0
    m = max(1, layout.microbatches)
    v = layout.vp if layout.schedule == "interleaved" else 1
    return (layout.pp - 1) / (v * m)


def pipeline_p2p_s(system: System, layout: Layout, act_bytes: float) -> float:
    """Activations (forward) and their gradients (backward) sent across each stage boundary per
    micro-batch; interleaving crosses v times as many boundaries. Split over the TP ranks."""
    if layout.pp <= 1:
        return 0.0
    per_gpu = act_bytes / max(1, layout.tp)
    model_parallel = layout.tp * layout.pp
    inter = system.inter_bus_bytes_s()
    if model_parallel > system.gpus_per_node and system.nodes > 1 and inter:
        bw = inter / system.gpus_per_node
        lat = system.inter_latency_s()
    else:
        bw, lat = system.intra_bus_bytes_s(), system.intra_latency_s()
    v = layout.vp if layout.schedule == "interleaved" else 1
    transfers = 2 * layout.microbatches * v if not layout.naive_pipeline else 2 * layout.grad_accum * (layout.pp - 1)
    return transfers * (per_gpu / bw + lat)


def group_link(system: System, width: int) -> tuple[float, float]:
    """(bytes/s per GPU, latency) of a group of ``width`` GPUs exchanging with each other: inside one node at its bus
    bandwidth; a group wider than a node crosses the node's NICs, shared by its GPUs."""
    inter = system.inter_bus_bytes_s()
    if width <= system.gpus_per_node or not inter:
        return system.intra_bus_bytes_s(), system.intra_latency_s()
    return float(inter) / system.gpus_per_node, system.inter_latency_s()


def expert_all_to_all_s(system: System, s: Shape, layout: Layout, tokens_mb: float) -> float:
    """Expert-parallel token exchange per micro-batch: every MoE layer dispatches each token's hidden state
    to its k experts and combines the results, in forward and again in backward (4 all-to-alls of
    tokens x k x h x 2 bytes, (ep-1)/ep of it leaving the GPU; Lepikhin et al. 2020 GShard §2.2,
    Megatron-Core MoE token dispatcher). With tensor parallelism each TP rank sends only its 1/tp of the tokens:
    Megatron-Core requires sequence parallelism with TP and EP (TransformerConfig: "When using expert parallelism
    and tensor parallelism, sequence parallelism must be used"), so a rank holds S/tp tokens when it dispatches, and
    DeepSpeed-MoE drops the TP duplicates before its all-to-all (sharded_moe.py drop_tokens). Inside an NVLink
    domain at its bus bandwidth. An EP group wider than a node sends only the share bound for other nodes' ranks,
    (ep - local) / ep with ``local`` EP ranks per node, through the node's NICs (shared by its GPUs); the share for the
    local - 1 ranks beside it crosses NVLink at the same time: an all-to-all is pairwise sends to every peer, each over
    the link that joins the two GPUs (NCCL all-to-all, Megatron-Core's alltoall dispatcher). ``layout.ep_dispatcher``
    deepep: each token crosses to a remote node once (below)."""
    if layout.ep <= 1 or not s.moe_experts or not s.moe_experts_per_token:
        return 0.0
    per_rank = tokens_mb / max(1, layout.tp) * s.moe_experts_per_token * s.hidden * 2.0 / layout.ep
    layers = s.layers / (1 if layout.naive_pipeline else layout.pp)
    inter = system.inter_bus_bytes_s()
    if layout.ep * layout.tp <= system.gpus_per_node or not inter:
        bw, lat = group_link(system, layout.ep * layout.tp)
        return 4.0 * layers * (per_rank * (layout.ep - 1) / bw + lat * (layout.ep - 1))
    local = max(1, min(layout.ep, system.gpus_per_node // max(1, layout.tp)))
    remote = layout.ep - local
    if layout.ep_dispatcher == "deepep":
        # node-deduplicated dispatch (DeepEP's normal kernels; Megatron-Core's flex dispatcher, DeepEP or HybridEP
        # backend): a token crosses to each remote node holding one of its k experts once, and that node's NVLink
        # forwards it to the experts (DeepSeek-V3 report arXiv 2412.19437 §3.2.2: "IB ... then forwarded via NVLink").
        # With uniform routing over n nodes a token reaches (n - 1)(1 - (1 - 1/n)^k) remote nodes, against k x
        # remote / ep copies through the NICs under an all-to-all (e.g. k 8 over 2 nodes: 1.0 instead of 4).
        nodes = max(1.0, layout.ep / local)
        reached = (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** s.moe_experts_per_token)
        cross = tokens_mb / max(1, layout.tp) * s.hidden * 2.0 * reached
        off_node = cross / (float(inter) / system.gpus_per_node) + system.inter_latency_s() * (nodes - 1.0)
    else:
        off_node = per_rank * remote / (float(inter) / system.gpus_per_node) + system.inter_latency_s() * remote
    on_node = per_rank * (local - 1) / system.intra_bus_bytes_s() + system.intra_latency_s() * (local - 1)
    return 4.0 * layers * max(off_node, on_node)


def context_parallel_s(system: System, s: Shape, layout: Layout, tokens_local: float, passes: float) -> float:
    """Context-parallel ring exchange per micro-batch: every attention layer passes its local chunk's keys and
    values (2 x kv_heads x head_dim x tokens x 2 bytes, split over the TP ranks) to the next of the cp ranks,
    cp - 1 times per pass (forward, recomputed forward, and the backward's K/V plus their gradients; Megatron-Core /
    Transformer Engine ring attention, Liu et al. 2023 arXiv 2310.01889). Inside the node at its bus bandwidth; a
    TP x CP group wider than a node crosses the node's NICs, shared by its GPUs."""
    if layout.cp <= 1:
        return 0.0
    size = 2.0 * s.kv_heads * s.head_dim * tokens_local * 2.0 / max(1, layout.tp)
    bw, lat = group_link(system, layout.cp * layout.tp)
    layers = s.layers / (1 if layout.naive_pipeline else layout.pp)
    return passes * layers * (layout.cp - 1) * (size / bw + lat)


def ulysses_all_to_all_s(system: System, cp: int, tokens: float, hidden: float, layers: float) -> float:
    """Ulysses sequence parallelism over ``cp`` GPUs, one forward: every attention layer turns the sequence-split
    q, k and v into head-split ones and the output back, four all-to-alls of tokens/cp x hidden x 2 bytes per GPU,
    (cp - 1)/cp of it leaving the GPU (Jacobs et al. 2023, DeepSpeed-Ulysses §3; xDiT / diffusers
    ContextParallelConfig ulysses_degree). Inside an NVLink domain at its bus bandwidth; PCIe cards at theirs."""
    if cp <= 1:
        return 0.0
    size = tokens / cp * hidden * 2.0 * (cp - 1) / cp
    bw, lat = group_link(system, cp)
    return 4.0 * layers * (size / bw + lat * (cp - 1))


def dp_gradient_sync_s(system: System, layout: Layout, grad_bytes: float, backward_mb_s: float, forward_mb_s: float,
                       hidden_share: float, *, every_micro_batch: bool, gather_overlap: bool) -> tuple[float, float]:
    """(all, exposed) seconds per optimizer step of the data-parallel gradient reduction without ZeRO-3.

    The reduction overlaps only the backward that produces the gradients (bucketed, Li et al. 2020), and with
    gradient accumulation only the last micro-batch's backward produces them: DDP's ``no_sync``, Megatron-Core's
    grad buffers and DeepSpeed ZeRO-0/1 reduce at the accumulation boundary, so the window is one micro-batch's
    backward (``backward_mb_s``), of which ``hidden_share`` can hide traffic (communication.overlap). With a
    sharded optimizer (ZeRO-1/2, Megatron's distributed optimizer) the reduction is a reduce-scatter and the
    updated parameters are all-gathered after the step: behind the next step's first forward where the stack
    overlaps it (``gather_overlap``: NeMo's overlap_param_gather), else exposed (DeepSpeed gathers in its step,
    Megatron-Core without --overlap-param-gather too). DeepSpeed ZeRO-2 keeps only its gradient partition, so it
    reduce-scatters every micro-batch's gradients (``every_micro_batch``; stage_1_and_2.py: ``if
    self.partition_gradients or self.is_gradient_accumulation_boundary``), each behind its own backward."""
    if layout.dp <= 1 or grad_bytes <= 0:
        return 0.0, 0.0
    if layout.zero == 0:
        t = dp_collective_time(system, layout, grad_bytes, 2.0)
        return t, max(0.0, t - hidden_share * backward_mb_s)
    rs = dp_collective_time(system, layout, grad_bytes, 1.0)
    ag = dp_collective_time(system, layout, grad_bytes, 1.0)
    n_rs = max(1, layout.grad_accum) if every_micro_batch else 1
    exposed = n_rs * max(0.0, rs - hidden_share * backward_mb_s)
    exposed += max(0.0, ag - hidden_share * forward_mb_s) if gather_overlap else ag
    return n_rs * rs + ag, exposed
