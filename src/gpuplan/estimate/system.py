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
from gpuplan.i18n import N_, _

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.catalog.hardware.gpus import GpuSpec
    from gpuplan.catalog.hardware.instances import InstanceType
    from gpuplan.workload import Workload


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
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
    gpu_p2p: bool = True                     # GPU peer-to-peer over PCIe (False: staged through host memory, a VM)

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
        # without peer-to-peer NCCL stages every transfer through host memory (communication.pcie_vm)
        staged = 1.0 if self.gpu_p2p else float(comm["pcie_vm"]["host_staged_share"])
        return per_dir * 1e9 * comm["pcie_efficiency"] * staged

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
    cp: int = 1                   # context parallelism: each sequence split over cp GPUs
    zero: int = 0                 # effective sharding stage 0-3 (FSDP full_shard = 3, shard_grad_op = 2)
    fsdp: str = "none"
    offload: str = "none"
    checkpointing: str = "full"   # full | selective | per-op | none
    micro_batch: int = 1
    grad_accum: int = 1
    microbatches: int = 1         # pipeline micro-batches in flight per step
    naive_pipeline: bool = False  # device_map layer split (sequential), not a pipelined schedule
    dp_attention: bool = False    # serving: data-parallel attention over the TP ranks (SGLang --enable-dp-attention)
    vp: int = 1                   # virtual pipeline stages per GPU (interleaved 1F1B when > 1)
    schedule: str = "1f1b"        # 1f1b | interleaved | gpipe
    tp_comm_overlap: bool = False # TP collectives overlapped with GEMMs (TE userbuffers)
    loss_parallel: bool = True    # with tp: the loss over the vocab-split logits, not logits gathered on every rank
    ep_dispatcher: str = "alltoall"  # alltoall | deepep (node-deduplicated MoE dispatch: comm.expert_all_to_all_s)

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    def describe(self) -> str:
        """"TP1, PP1, DP1, ckpt full, mb 1 x ga 16": English (it is a JSON value); its parts are msgids, so
        text output shows it translated with ``i18n.localize``."""
        parts = [f"TP{self.tp}", N_("PP{pp} (layer split)").format(pp=self.pp) if self.naive_pipeline else f"PP{self.pp}",
                 f"DP{self.dp}"]
        if self.cp > 1:
            parts.insert(2, f"CP{self.cp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.fsdp != "none":
            parts.append(f"FSDP {self.fsdp}")
        elif self.zero:
            parts.append(f"ZeRO-{self.zero}")
        if self.offload != "none":
            parts.append(N_("offload {target}").format(target=self.offload))
        parts.append(N_("ckpt {mode}").format(mode=self.checkpointing))
        parts.append(N_("mb {micro} x ga {accum}").format(micro=self.micro_batch, accum=self.grad_accum))
        return ", ".join(parts)


FSDP_TO_ZERO = {"none": 0, "shard_grad_op": 2, "full_shard": 3, "hybrid_shard": 3}
NAIVE_PP_FRAMEWORKS = {"transformers", "swift", "llama-factory", "torchtune", "auto"}


def naive_layer_split(framework: str, pp: int, tp: int = 1, zero: int = 0) -> bool:
    """Whether a pipeline of ``pp`` stages is a device_map layer split (stages run one after another,
    one micro-batch in flight) rather than a scheduled pipeline (1F1B keeps up to p micro-batches on the
    first stage). Only the Trainer stacks split layers that way, and a device_map split can combine with
    neither tensor parallelism nor ZeRO: a run with TP or ZeRO next to PP is a scheduled pipeline
    (Megatron/DeepSpeed/InternEvo 1F1B) whatever the stack's name."""
    return pp > 1 and framework in NAIVE_PP_FRAMEWORKS and tp <= 1 and zero <= 0


def global_sequences(w: "Workload") -> int | None:
    """Sequences per optimizer step a workload names: global_batch_size, or global_batch_tokens in whole
    sequences of seq_len (nearest); None when it names neither. Fewer tokens than one sequence is refused."""
    if w.global_batch_size is not None:
        return int(w.global_batch_size)
    if w.global_batch_tokens is None:
        return None
    seq_len = int(w.seq_len or 2048)
    seqs = int(math.floor(w.global_batch_tokens / seq_len + 0.5))
    if seqs < 1:
        raise GpuplanError(_("global_batch_tokens {tokens:g} is less than one sequence of {seq_len} tokens.").format(
            tokens=w.global_batch_tokens, seq_len=seq_len),
            hint=_("Set at least seq_len tokens per optimizer step, or set global_batch_size."),
            field="global_batch_tokens")
    return seqs


def accumulation_for(sequences: int, micro: int, dp: int) -> int:
    """Micro-batches per optimizer step whose global batch (micro x accumulation x dp) comes nearest
    ``sequences``: the one rule `estimate` (a fixed layout) and `recommend`'s recipe search use."""
    return max(1, int(math.floor(sequences / (micro * dp) + 0.5)))


def layout_from_workload(w: "Workload", total_gpus: int, gpus_per_node: int, layers: int = 0) -> Layout:
    """The layout a resolved workload asks for on ``total_gpus`` GPUs (defaults filled); ``layers``
    (the model's) sets the default virtual pipeline stages of interleaving frameworks."""
    par = w.parallel
    tp = par.tp if par else 1
    pp = par.pp if par else 1
    cp = par.cp if par else 1
    if cp > 1 and total_gpus % (tp * pp * cp):
        raise GpuplanError(_("TP {tp} x PP {pp} x CP {cp} does not divide the {total_gpus} GPUs.").format(
                               tp=tp, pp=pp, cp=cp, total_gpus=total_gpus),
                           hint=_("Choose tp, pp and cp whose product divides the GPU count."), field="parallel")
    if total_gpus % (tp * pp):
        raise GpuplanError(_("TP {tp} x PP {pp} does not divide the {total_gpus} GPUs.").format(
                               tp=tp, pp=pp, total_gpus=total_gpus),
                           hint=_("Choose tp and pp whose product divides the GPU count."), field="parallel")
    dp = par.dp if par and par.dp else total_gpus // (tp * pp * cp)
    if cp > 1 and tp * pp * cp * dp != total_gpus:
        raise GpuplanError(_("TP {tp} x PP {pp} x CP {cp} x DP {dp} = {product} GPUs, but the hardware has {total_gpus}.").format(
                               tp=tp, pp=pp, cp=cp, dp=dp, product=tp * pp * cp * dp, total_gpus=total_gpus),
                           hint=_("Leave dp unset to take gpus / (tp * pp * cp)."), field="parallel")
    if cp == 1 and tp * pp * dp != total_gpus:
        raise GpuplanError(_("TP {tp} x PP {pp} x DP {dp} = {product} GPUs, but the hardware has {total_gpus}.").format(
                               tp=tp, pp=pp, dp=dp, product=tp * pp * dp, total_gpus=total_gpus),
                           hint=_("Leave dp unset to take gpus / (tp * pp)."), field="parallel")
    if tp > gpus_per_node > 0 and tp % gpus_per_node:
        raise GpuplanError(_("TP {tp} spans nodes of {gpus_per_node} GPUs but is not a multiple of {gpus_per_node}.")
                           .format(tp=tp, gpus_per_node=gpus_per_node),
                           hint=_("A tensor-parallel group across nodes takes whole nodes (e.g. TP16 on 2 x 8 GPUs)."),
                           field="parallel")
    fsdp = par.fsdp if par else "none"
    framework = w.framework or "auto"
    zero = max(default_zero(par, framework), FSDP_TO_ZERO[fsdp])
    ckpt = w.grad_checkpointing
    checkpointing = ckpt if ckpt in ("selective", "per-op") else ("full" if ckpt else "none")
    ga = w.gradient_accumulation
    if ga is None:   # unset only where a training workload names its global batch (workload_defaults)
        seqs = global_sequences(w) if w.is_training and not w.optimizer_in_backward else None
        ga = accumulation_for(seqs, w.batch_size or 1, dp) if seqs else 1
    microbatches = (par.microbatches if par and par.microbatches else ga) if pp > 1 else 1
    vp, schedule = pipeline_schedule(w, pp, framework, layers)
    overlap = par.tp_comm_overlap if par and par.tp_comm_overlap is not None else framework in TP_OVERLAP_FRAMEWORKS
    return Layout(
        tp=tp, pp=pp, dp=dp, ep=par.ep if par else 1, sp=sequence_parallel(par, framework, tp), cp=cp, zero=zero,
        fsdp=fsdp,
        offload=par.offload if par else "none", checkpointing=checkpointing, micro_batch=w.batch_size or 1,
        grad_accum=ga, microbatches=microbatches,
        dp_attention=bool(getattr(par, "dp_attention", False)) if par else False,
        naive_pipeline=naive_layer_split(framework, pp, tp, zero), vp=vp, schedule=schedule,
        tp_comm_overlap=bool(overlap and tp > 1), loss_parallel=loss_parallel(par, framework, tp),
        ep_dispatcher=ep_dispatcher(par),
    )


# Stacks that turn on sequence parallelism whenever TP > 1 unless told otherwise: NeMo's LLM recipes
# (sequence_parallel=True with TP > 1), Megatron-Core's recipes, and gpuplan's own Megatron bundle
# (render/bundle/training.py megatron_args passes --sequence_parallel true whenever tp > 1).
SP_DEFAULT_FRAMEWORKS = {"megatron", "nemo"}


# NeMo 2.0 recipes build their optimizer with use_distributed_optimizer=True (Megatron-Core's ZeRO-1:
# optimizer states and fp32 master weights sharded over DP x CP); Megatron-LM turns it on only when asked
# (--use-distributed-optimizer), so parallel.zero says it.
DIST_OPT_DEFAULT_FRAMEWORKS = {"nemo"}


def default_zero(par, framework: str) -> int:
    """The workload's ZeRO stage, else the framework's: NeMo's distributed optimizer (1), 0 otherwise."""
    if par is not None and par.zero is not None:
        return int(par.zero)
    return 1 if framework in DIST_OPT_DEFAULT_FRAMEWORKS else 0


# Stacks whose tensor-parallel plan gathers the LM head's output on every rank before the loss: transformers'
# tp_plan ({"lm_head": "colwise_rep"} in *ForCausalLM._tp_plan) and the stacks that train through it. Megatron /
# NeMo (vocab-parallel cross-entropy) and torchtitan (loss_parallel, on by default) keep the logits split.
GATHERED_LOGITS_FRAMEWORKS = {"transformers", "llama-factory"}


def loss_parallel(par, framework: str, tp: int) -> bool:
    """Whether the loss runs on the TP-split logits: the workload's parallel.loss_parallel, else the framework's."""
    if par is not None and getattr(par, "loss_parallel", None) is not None:
        return bool(par.loss_parallel)
    return framework not in GATHERED_LOGITS_FRAMEWORKS


def ep_dispatcher(par) -> str:
    """How MoE tokens reach their experts: the workload's parallel.ep_dispatcher, else NCCL all-to-all."""
    return str(getattr(par, "ep_dispatcher", None) or "alltoall") if par is not None else "alltoall"


def sequence_parallel(par, framework: str, tp: int) -> bool:
    """Sequence parallelism: the workload's setting, else on for Megatron-class stacks with TP > 1."""
    if par is not None and par.sp is not None:
        return bool(par.sp) and tp > 1
    return tp > 1 and framework in SP_DEFAULT_FRAMEWORKS


# NeMo's performance recipes interleave the pipeline (Llama-3-70B: PP4 VP5, 20 layers per stage;
# GPT-3 175B: PP8 VP6, 12 layers per stage): about two layers per virtual stage. Megatron-LM itself
# interleaves only when asked (--num-layers-per-virtual-pipeline-stage): parallel.vp says it.
INTERLEAVING_FRAMEWORKS = {"nemo"}
# NeMo's performance recipes turn on tp_comm_overlap (Transformer Engine userbuffers) on Hopper.
TP_OVERLAP_FRAMEWORKS = {"nemo"}


def pipeline_schedule(w: "Workload", pp: int, framework: str, layers: int = 0) -> tuple[int, str]:
    """(virtual stages, schedule) of a pipelined run: the workload's, or the framework's default."""
    par = w.parallel
    vp = par.vp if par and par.vp else None
    schedule = par.schedule if par and par.schedule else None
    if pp <= 1:
        return 1, "1f1b"
    if vp is None:
        if schedule in (None, "interleaved") and framework in INTERLEAVING_FRAMEWORKS:
            per_stage = layers // pp
            vp = max(1, per_stage // int(table("training", "layers_per_virtual_stage"))) if per_stage else 1
        else:
            vp = 1
    if schedule is None:
        schedule = "interleaved" if vp > 1 else "1f1b"
    if schedule != "interleaved":
        vp = 1
    return vp, schedule


def system_for_instance(inst: "InstanceType", nodes: int = 1) -> System:
    """A System of ``nodes`` instances of one cloud instance type."""
    from gpuplan.catalog.hardware.gpus import get_gpu

    gpu = get_gpu(inst.gpu)
    per_node = max(1, int(math.floor(inst.gpu_count))) if inst.gpu_count >= 1 else 1
    slice_share = inst.gpu_count if inst.gpu_count < 1 else 1.0
    cap = None
    if slice_share < 1:  # a row without the slice's memory gets its share of the GPU's (was a TypeError)
        cap = (inst.gpu_memory_gib or gpu.memory_gib * slice_share) * (1024**3)
    link = inst.interconnect or ("none" if per_node == 1 else "pcie")
    return System(
        gpu=gpu, gpus_per_node=per_node, nodes=nodes, intra_link=link,
        inter_node_gbit_s=(inst.rdma_gbit_s or inst.network_gbit_s) if inst.rdma else inst.network_gbit_s,
        rdma=inst.rdma or None, instance_type=inst.instance_type,
        host_memory_bytes=inst.memory_gib * (1024**3) if inst.memory_gib else None, vcpus=inst.vcpus,
        gpu_fraction=slice_share, capacity_override_bytes=cap, gpu_p2p=instance_gpu_p2p(inst, link),
    )


def instance_gpu_p2p(inst: "InstanceType", link: str) -> bool:
    """Whether the GPUs of one instance reach each other peer to peer: always over NVLink / NVSwitch and on bare
    metal (the real PCIe topology); a VM's PCIe cards only where the cloud states P2P for the family
    (communication.pcie_vm.p2p_families), else NCCL stages through host memory."""
    if link != "pcie" or inst.kind != "vm":
        return True
    return inst.family in table("communication", "pcie_vm", "p2p_families")


def assumed_node_network_gbit_s(gpu: "GpuSpec", gpus_per_node: int) -> float:
    """Inter-node bandwidth of a typical cluster of ``gpu`` when no instance type says it: one
    400 Gbit/s NIC per Hopper/Blackwell SXM GPU, 200 per A100 SXM (DGX H100 / DGX A100 reference
    designs); PCIe cards get one shared NIC per node."""
    net = table("communication", "assumed_cluster_network")
    arch = (gpu.architecture or "").split(" (")[0].strip()
    if gpu.nvlink_gb_s:
        per_gpu = net["per_sxm_gpu_gbit_s"].get(arch, net["per_sxm_gpu_gbit_s"]["default"])
        return float(per_gpu) * gpus_per_node
    return float(net["pcie_node_gbit_s"])


def intra_node_link(gpu: "GpuSpec", gpus_per_node: int) -> str:
    """How the GPUs of one node talk when no instance type says it. SXM/OAM boards sit on an NVSwitch (or
    all-to-all NVLink) fabric; PCIe and NVL cards carry NVLink bridges that join pairs only (NVIDIA A100
    PCIe / H100 NVL product briefs: "NVLink bridge connects two GPUs"), so a group of more than two of them
    reduces over PCIe."""
    if gpus_per_node <= 1:
        return "none"
    if not gpu.nvlink_gb_s:
        return "pcie"
    if gpu.form_factor in ("PCIe", "NVL"):
        return "nvlink" if gpus_per_node == 2 else "pcie"
    return "nvswitch"


def system_from_workload(w: "Workload") -> tuple[System, list[str]]:
    """The fixed hardware of a workload (``hardware:`` block); defaults are reported."""
    from gpuplan.catalog.hardware.gpus import resolve_gpu

    notes: list[str] = []
    hw = w.hardware
    if hw and hw.instance_type:
        from gpuplan.catalog.hardware.instances import get_instance

        inst = get_instance(hw.instance_type)
        nodes = hw.nodes or 1
        if hw.count and not hw.nodes:
            per = max(1, int(inst.gpu_count))
            nodes = max(1, math.ceil(hw.count / per))
        system = system_for_instance(inst, nodes)
        return system, notes
    if hw and hw.gpu and not isinstance(hw.gpu, str):  # an inline GPU spec (catalog/hardware/gpu_inline.py)
        from gpuplan.catalog.hardware.gpu_inline import inline_gpu

        gpu, assumed_values = inline_gpu(hw.gpu)
        notes.extend(assumed_values)
    elif hw and isinstance(hw.gpu, str) and hw.gpu:
        gpu, assumed = resolve_gpu(hw.gpu)
        if assumed:
            notes.append(assumed)
    else:
        gpu, _frac = resolve_gpu("A100-SXM4-80GB")
        notes.append(_("assumed hardware 1 x A100-SXM4-80GB (no hardware given)"))
    count = (hw.count if hw and hw.count else None)
    if count is None:
        par = w.parallel
        count = (par.tp * par.pp * (par.dp or 1)) if par else 1
        if hw and hw.gpu:
            notes.append(_("assumed {count} GPU(s)").format(count=count))
    per_node = min(count, 8)
    if hw and hw.nodes:
        per_node = max(1, count // hw.nodes)
    nodes = max(1, math.ceil(count / per_node))
    link = intra_node_link(gpu, per_node)
    inter = None
    if nodes > 1:
        inter = assumed_node_network_gbit_s(gpu, per_node)
        notes.append(_("assumed {inter:.0f} Gbit/s RDMA per node between nodes (no instance type given; data/efficiency.yaml communication.assumed_cluster_network)").format(inter=inter))
    return System(gpu=gpu, gpus_per_node=per_node, nodes=nodes, intra_link=link, inter_node_gbit_s=inter,
                  rdma="rdma" if nodes > 1 else None), notes

