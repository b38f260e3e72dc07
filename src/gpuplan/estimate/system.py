"""The system (GPUs, nodes, links) and the execution layout an estimate runs on.

Three inputs stay separate, as in Calculon: the model (catalog.models.ModelSpec), the execution
(:class:`Layout`: parallelism, checkpointing, batch, precision) and the system (:class:`System`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplan.errors import GpuplanError
from gpuplan.estimate.params import table

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.catalog.gpus import GpuSpec
    from gpuplan.catalog.instances import InstanceType
    from gpuplan.workload import Workload


@dataclass(frozen=True)
class System:
    """GPUs and links: ``gpus_per_node`` GPUs in each of ``nodes`` nodes."""

    gpu: "GpuSpec"
    gpus_per_node: int
    nodes: int = 1
    intra_link: str = "pcie"          # nvswitch | nvlink | pcie | pcie-switch | none
    inter_node_gbit_s: float | None = None
    rdma: str | None = None           # erdma | roce | efa | ib | None
    instance_type: str | None = None
    host_memory_bytes: float | None = None   # per node
    vcpus: int | None = None                 # per node
    gpu_fraction: float = 1.0                # vGPU slice share (< 1)
    capacity_override_bytes: float | None = None  # vGPU slice memory

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def capacity_bytes(self) -> float:
        if self.capacity_override_bytes is not None:
            return self.capacity_override_bytes
        return float(self.gpu.capacity_bytes)

    def intra_bus_bytes_s(self) -> float:
        """NCCL bus bandwidth between GPUs of one node, bytes/s."""
        comm = table("communication")
        if self.intra_link in ("nvswitch", "nvlink") and self.gpu.nvlink_gb_s:
            return self.gpu.nvlink_gb_s / 2 * 1e9 * comm["nvlink_efficiency"]
        gen = self.gpu.pcie_gen or 4
        per_dir = comm["pcie_gb_s"].get(gen, comm["pcie_gb_s"][4])
        return per_dir * 1e9 * comm["pcie_efficiency"]

    def intra_latency_s(self) -> float:
        lat = table("communication", "latency_s")
        return lat["nvlink"] if self.intra_link in ("nvswitch", "nvlink") else lat["pcie"]

    def inter_bus_bytes_s(self) -> float | None:
        """Per-node network bandwidth for collectives across nodes, bytes/s."""
        if self.nodes <= 1:
            return None
        comm = table("communication")
        gbit = self.inter_node_gbit_s or 10.0
        eff = comm["rdma_efficiency"] if self.rdma else comm["tcp_efficiency"]
        return gbit / 8 * 1e9 * eff

    def inter_latency_s(self) -> float:
        lat = table("communication", "latency_s")
        return lat["rdma"] if self.rdma else lat["tcp"]


@dataclass(frozen=True)
class Layout:
    """How the job runs on the system: parallel sizes, sharding, checkpointing, batch."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    sp: bool = False
    zero: int = 0                 # effective sharding stage 0-3 (FSDP full_shard = 3, shard_grad_op = 2)
    fsdp: str = "none"
    offload: str = "none"
    checkpointing: str = "full"   # full | selective | none
    micro_batch: int = 1
    grad_accum: int = 1
    microbatches: int = 1         # pipeline micro-batches in flight per step
    naive_pipeline: bool = False  # device_map layer split (sequential), not a pipelined schedule
    dp_attention: bool = False    # serving: data-parallel attention over the TP ranks (SGLang --enable-dp-attention)

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    def describe(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}" + (" (layer split)" if self.naive_pipeline else ""), f"DP{self.dp}"]
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.fsdp != "none":
            parts.append(f"FSDP {self.fsdp}")
        elif self.zero:
            parts.append(f"ZeRO-{self.zero}")
        if self.offload != "none":
            parts.append(f"offload {self.offload}")
        parts.append(f"ckpt {self.checkpointing}")
        parts.append(f"mb {self.micro_batch} x ga {self.grad_accum}")
        return ", ".join(parts)


FSDP_TO_ZERO = {"none": 0, "shard_grad_op": 2, "full_shard": 3, "hybrid_shard": 3}
NAIVE_PP_FRAMEWORKS = {"transformers", "swift", "llama-factory", "torchtune", "auto"}


def layout_from_workload(w: "Workload", total_gpus: int, gpus_per_node: int) -> Layout:
    """The layout a resolved workload asks for on ``total_gpus`` GPUs (defaults filled)."""
    par = w.parallel
    tp = par.tp if par else 1
    pp = par.pp if par else 1
    if total_gpus % (tp * pp):
        raise GpuplanError(f"TP {tp} x PP {pp} does not divide the {total_gpus} GPUs.",
                           hint="Choose tp and pp whose product divides the GPU count.")
    dp = par.dp if par and par.dp else total_gpus // (tp * pp)
    if tp * pp * dp != total_gpus:
        raise GpuplanError(f"TP {tp} x PP {pp} x DP {dp} = {tp * pp * dp} GPUs, but the hardware has {total_gpus}.",
                           hint="Leave dp unset to take gpus / (tp * pp).")
    if tp > gpus_per_node and gpus_per_node > 0:
        raise GpuplanError(f"TP {tp} is larger than the {gpus_per_node} GPUs of one node.",
                           hint="Tensor parallelism stays within a node: lower tp and raise pp or dp.")
    fsdp = par.fsdp if par else "none"
    zero = max(par.zero if par else 0, FSDP_TO_ZERO[fsdp])
    ckpt = w.grad_checkpointing
    checkpointing = "selective" if ckpt == "selective" else ("full" if ckpt else "none")
    framework = w.framework or "auto"
    ga = w.gradient_accumulation or 1
    microbatches = (par.microbatches if par and par.microbatches else ga) if pp > 1 else 1
    return Layout(
        tp=tp, pp=pp, dp=dp, ep=par.ep if par else 1, sp=bool(par.sp) if par else False, zero=zero, fsdp=fsdp,
        offload=par.offload if par else "none", checkpointing=checkpointing, micro_batch=w.batch_size or 1,
        grad_accum=ga, microbatches=microbatches,
        naive_pipeline=pp > 1 and framework in NAIVE_PP_FRAMEWORKS,
        dp_attention=bool(getattr(par, "dp_attention", False)) if par else False,
    )


def system_for_instance(inst: "InstanceType", nodes: int = 1) -> System:
    """A System of ``nodes`` instances of one cloud instance type."""
    from gpuplan.catalog.gpus import get_gpu

    gpu = get_gpu(inst.gpu)
    per_node = max(1, int(math.floor(inst.gpu_count))) if inst.gpu_count >= 1 else 1
    slice_share = inst.gpu_count if inst.gpu_count < 1 else 1.0
    cap = None
    if slice_share < 1:
        cap = inst.gpu_memory_gib * (1024**3)
    link = inst.interconnect or ("none" if per_node == 1 else "pcie")
    return System(
        gpu=gpu, gpus_per_node=per_node, nodes=nodes, intra_link=link,
        inter_node_gbit_s=(inst.rdma_gbit_s or inst.network_gbit_s) if inst.rdma else inst.network_gbit_s,
        rdma=inst.rdma or None, instance_type=inst.instance_type,
        host_memory_bytes=inst.memory_gib * (1024**3) if inst.memory_gib else None, vcpus=inst.vcpus,
        gpu_fraction=slice_share, capacity_override_bytes=cap,
    )


def system_from_workload(w: "Workload") -> tuple[System, list[str]]:
    """The fixed hardware of a workload (``hardware:`` block); defaults are reported."""
    from gpuplan.catalog.gpus import resolve_gpu

    notes: list[str] = []
    hw = w.hardware
    if hw and hw.instance_type:
        from gpuplan.catalog.instances import get_instance

        inst = get_instance(hw.instance_type)
        nodes = hw.nodes or 1
        if hw.count and not hw.nodes:
            per = max(1, int(inst.gpu_count))
            nodes = max(1, math.ceil(hw.count / per))
        system = system_for_instance(inst, nodes)
        return system, notes
    if hw and hw.gpu:
        gpu, assumed = resolve_gpu(hw.gpu)
        if assumed:
            notes.append(assumed)
    else:
        gpu, _ = resolve_gpu("A100-SXM4-80GB")
        notes.append("assumed hardware 1 x A100-SXM4-80GB (no hardware given)")
    count = (hw.count if hw and hw.count else None)
    if count is None:
        par = w.parallel
        count = (par.tp * par.pp * (par.dp or 1)) if par else 1
        if hw and hw.gpu:
            notes.append(f"assumed {count} GPU(s)")
    per_node = min(count, 8)
    if hw and hw.nodes:
        per_node = max(1, count // hw.nodes)
    nodes = max(1, math.ceil(count / per_node))
    link = "nvswitch" if gpu.nvlink_gb_s and per_node > 1 else ("pcie" if per_node > 1 else "none")
    inter = None
    if nodes > 1:
        inter = 100.0
        notes.append("assumed 100 Gbit/s RDMA between nodes (no instance type given)")
    return System(gpu=gpu, gpus_per_node=per_node, nodes=nodes, intra_link=link, inter_node_gbit_s=inter,
                  rdma="rdma" if nodes > 1 else None), notes

