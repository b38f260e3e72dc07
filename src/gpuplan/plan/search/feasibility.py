"""Feasibility checks: each returns None (feasible) or a :class:`Reject` with a contract code.

Codes (the `rejected[].code` values of the `recommend --json` contract): memory, host_memory,
network, budget, deadline, status, no_price, region, layout, and sla (serving SLA not met —
proposed addition to the contract).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuplan.catalog.hardware.instances import InstanceType
from gpuplan.i18n import _
from gpuplan.units import GIB

CODES = ("memory", "host_memory", "network", "budget", "deadline", "status", "no_price", "region", "layout", "sla")
# How close a rejection is to a plan (lower = closer): picks the one rejection shown per type.
CODE_RANK = {"budget": 0, "deadline": 0, "sla": 1, "network": 2, "host_memory": 3, "memory": 4, "no_price": 5,
             "layout": 6, "region": 7, "status": 8}

MEMORY_HEADROOM = 0.02        # keep 2 % of the usable GPU memory free (allocator jitter, driver growth)
HOST_RESERVE = 0.10           # OS, page cache and agents keep ~10 % of the instance's RAM
MIN_VCPUS_PER_GPU = 4         # data-loader workers + the rank's own process (guides: GPU:vCPU >= 1:4)
NETWORK_BOUND_COMM_FRACTION = 0.5  # multi-node without RDMA: reject when communication exceeds half a step


@dataclass(frozen=True)
class Reject:
    """Why a candidate was dropped."""

    code: str
    text: str | Callable[[], str]  # the reason, or a function that writes it when it is shown
    shortfall: float = 0.0    # how far from feasible, in the unit of the code (bytes, currency, s)

    @property
    def reason(self) -> str:
        """The reason in the current language. The search rejects thousands of layouts and shows a
        handful: memory reasons are written on first use (then kept)."""
        if callable(self.text):
            object.__setattr__(self, "text", self.text())
        return str(self.text)


def gpu_label(inst: InstanceType) -> str:
    """"gn7i (A10 24 GB)" — family and GPU, as users name them."""
    gpu = inst.gpu.split("-")[0]
    mem = f" {inst.gpu_memory_gib:g} GB" if inst.gpu_memory_gib else ""
    return f"{inst.family} ({gpu}{mem})"


def check_status(inst: InstanceType, allowed: frozenset[str]) -> Reject | None:
    """Preview / by-ticket / retired / not-recommended / unconfirmed types only when asked."""
    if inst.status in allowed:
        return None
    return Reject("status", _("{label}: status {status}; add it to constraints.include_status to consider it").format(
        label=gpu_label(inst), status=_(inst.status)))


def check_kind(inst: InstanceType, training: bool, nodes: int) -> Reject | None:
    """vGPU slices are for inference and graphics: never training, never multi-node."""
    if inst.gpu_count < 1 and training:
        return Reject("layout", _("{label}: a {n} vGPU slice is not meant for training").format(
            label=gpu_label(inst), n=f"{inst.gpu_count:.3g}"))
    if inst.kind == "vgpu" and (nodes > 1 or (training and inst.gpu_count > 1)):
        return Reject("layout", _("{label}: vGPU types are not meant for multi-GPU training").format(label=gpu_label(inst)))
    return None


def check_memory(per_gpu_bytes: float, capacity_bytes: float, headroom: float = MEMORY_HEADROOM) -> bool:
    """Fits when the job's per-GPU memory stays within (1 - headroom) of the usable capacity."""
    return per_gpu_bytes <= capacity_bytes * (1.0 - headroom)


def memory_reject(inst: InstanceType, per_gpu_bytes: float, capacity_bytes: float, what: str | Callable[[], str],
                  headroom: float = MEMORY_HEADROOM) -> Reject:
    """``what`` names the layout tried (a string, or a function that writes it when the reason is shown)."""
    need = per_gpu_bytes / GIB
    cap = capacity_bytes * (1 - headroom) / GIB

    def text() -> str:
        return _("{label}: needs {need} GiB per GPU {what}; {cap} GiB usable").format(
            label=gpu_label(inst), need=f"{need:.1f}", what=what() if callable(what) else what, cap=f"{cap:.1f}")
    return Reject("memory", text, per_gpu_bytes - capacity_bytes * (1 - headroom))


def check_host(inst: InstanceType, host_bytes_per_node: float, reserve: float = HOST_RESERVE) -> Reject | None:
    """Host RAM for model loading, data loading and offloaded states (per node)."""
    if not inst.memory_gib:
        return None
    usable = inst.memory_gib * GIB * (1 - reserve)
    if host_bytes_per_node <= usable:
        return None
    return Reject("host_memory", _("{label} {instance}: needs {need} GiB host RAM per node; {usable} GiB usable of "
                                   "{total}").format(label=gpu_label(inst), instance=inst.short_name,
                                                     need=f"{host_bytes_per_node / GIB:.0f}",
                                                     usable=f"{usable / GIB:.0f}", total=f"{inst.memory_gib:g}"),
                  host_bytes_per_node - usable)


def vcpu_warning(inst: InstanceType, training: bool) -> str | None:
    """Few vCPUs per GPU starve data loading (a warning, not a rejection)."""
    if not training or not inst.vcpus or inst.gpus < 1:
        return None
    per = inst.vcpus / inst.gpus
    if per < MIN_VCPUS_PER_GPU:
        return _("{instance} has {per} vCPUs per GPU (< {min}): data loading may starve the GPUs; pre-tokenize or "
                 "pick a type with more vCPUs").format(instance=inst.short_name, per=f"{per:g}", min=MIN_VCPUS_PER_GPU)
    return None


def check_network(inst: InstanceType, nodes: int, comm_fraction: float | None) -> tuple[Reject | None, str | None]:
    """Multi-node without eRDMA/RoCE: allowed with a warning (the estimator charges TCP speed),
    rejected when communication would take more than half of each step."""
    if nodes <= 1 or inst.rdma:
        return None, None
    frac = comm_fraction or 0.0
    if frac > NETWORK_BOUND_COMM_FRACTION:
        return Reject("network", _("{label} x {nodes} nodes: no eRDMA/RoCE, communication takes {share} of each step "
                                   "over the VPC network").format(label=gpu_label(inst), nodes=nodes,
                                                                  share=f"{frac:.0%}")), None
    return None, _("{instance} has no eRDMA/RoCE: {nodes} nodes talk over the VPC network (TCP; {share} of the step "
                   "communicating)").format(instance=inst.short_name, nodes=nodes, share=f"{frac:.0%}")


def sla_reject(inst: InstanceType, gpus: int, perf: dict, memory, sla) -> Reject:
    """Why a serving layout sustains no request rate, naming the limit that binds: no room for one
    sequence's KV cache, the TTFT of a request alone, or the TPOT of a single sequence.

    ``memory``: the estimate's MemoryEstimate (KV budget and bytes per sequence); ``sla``: the
    workload's ServingSpec (None: no targets). An unset target is said to be unset, never "0 ms"."""
    label = f"{gpu_label(inst)} x {gpus}"
    ttft_t = sla.ttft_ms / 1000.0 if sla and sla.ttft_ms else None
    tpot_t = sla.tpot_ms / 1000.0 if sla and sla.tpot_ms else None
    budget = getattr(memory, "kv_budget_bytes", None)
    per_seq = getattr(memory, "kv_bytes_per_sequence", None)
    conc = perf.get("max_concurrency")
    if (conc is not None and conc <= 0) or (budget is not None and per_seq and budget < per_seq):
        left = max(0.0, budget or 0.0) / GIB
        text = (_("{label}: no room for the KV cache: the weights and activations leave {left} GiB per GPU; one "
                  "sequence needs {need} GiB") if per_seq else
                _("{label}: no room for the KV cache: the weights and activations leave {left} GiB per GPU")).format(
            label=label, left=f"{left:.2f}", need=f"{(per_seq or 0) / GIB:.2f}")
        return Reject("memory", text, max(0.0, (per_seq or 0.0) - max(0.0, budget or 0.0)))
    ttft = perf.get("ttft_s")
    tpot = perf.get("tpot_s")
    if ttft_t is not None and ttft is not None and ttft > ttft_t:
        return Reject("sla", _("{label}: cannot meet the TTFT target: {ttft} s for one request alone vs {target} ms")
                      .format(label=label, ttft=f"{ttft:.2f}", target=f"{ttft_t * 1000:g}"), ttft - ttft_t)
    if tpot_t is not None and tpot is not None and tpot > tpot_t:
        return Reject("sla", _("{label}: cannot meet the TPOT target: {tpot} ms per token for one sequence vs "
                               "{target} ms").format(label=label, tpot=f"{tpot * 1000:.0f}",
                                                     target=f"{tpot_t * 1000:g}"), tpot - tpot_t)
    targets = " / ".join(x for x in (f"TTFT {ttft_t * 1000:g} ms" if ttft_t else "",
                                     f"TPOT {tpot_t * 1000:g} ms" if tpot_t else "") if x) or _("no latency target")
    return Reject("sla", _("{label}: no batch meets the latency targets together ({targets}; alone: TTFT {ttft} s, "
                           "TPOT {tpot} ms)").format(label=label, targets=targets, ttft=f"{(ttft or 0):.2f}",
                                                      tpot=f"{(tpot or 0) * 1000:.0f}"))
