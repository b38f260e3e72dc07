"""Storage advice: the data read rate and checkpoint size of a job -> an ESSD level and size, or a
shared file system (Extreme NAS, else CPFS) and OSS, with sources (data/storage.yaml).

ESSD per-disk performance grows with capacity up to a per-level cap (IOPS = min{base + k x GiB,
cap}, throughput = min{base + k x GiB, cap}); the instance type caps the sum again.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.i18n import N_, _, tr
from gpuplan.units import GIB, TIB

MB = 1e6


@functools.cache
def storage_facts() -> dict[str, Any]:
    """data/storage.yaml, loaded once."""
    return load_data((files("gpuplan") / "data" / "storage.yaml"))


@dataclass(frozen=True)
class EssdLevel:
    """One cloud disk performance level."""

    level: str
    min_gib: float
    max_gib: float
    iops_base: float
    iops_per_gib: float
    iops_max: float
    throughput_base_mb_s: float
    throughput_per_gib_mb_s: float
    throughput_max_mb_s: float

    def iops(self, gib: float) -> float:
        """min{base + k x capacity, cap} (Alibaba ESSD formula)."""
        return min(self.iops_base + self.iops_per_gib * gib, self.iops_max)

    def throughput_mb_s(self, gib: float) -> float:
        return min(self.throughput_base_mb_s + self.throughput_per_gib_mb_s * gib, self.throughput_max_mb_s)

    def gib_for_throughput(self, mb_s: float) -> float | None:
        """Smallest capacity reaching ``mb_s``, or None when the level's cap is below it."""
        if mb_s > self.throughput_max_mb_s:
            return None
        need = (mb_s - self.throughput_base_mb_s) / self.throughput_per_gib_mb_s
        return max(self.min_gib, math.ceil(max(0.0, need)))


@functools.cache
def essd_levels() -> tuple[EssdLevel, ...]:
    return tuple(EssdLevel(**e) for e in storage_facts()["essd"]["levels"])


def choose_essd(capacity_gib: float, throughput_mb_s: float, instance_cap_mb_s: float | None = None) -> dict | None:
    """The lowest ESSD level (and the size) that holds ``capacity_gib`` and reaches ``throughput_mb_s``
    on one disk; None when no single disk can (then a shared or striped file system is advised)."""
    for lvl in essd_levels():
        size = lvl.gib_for_throughput(throughput_mb_s)
        if size is None:
            continue
        size = max(size, math.ceil(capacity_gib), lvl.min_gib)
        if size > lvl.max_gib:
            continue
        tput = lvl.throughput_mb_s(size)
        eff = min(tput, instance_cap_mb_s) if instance_cap_mb_s else tput
        return {"kind": "essd", "level": lvl.level, "size_gib": int(size), "iops": int(lvl.iops(size)),
                "throughput_mb_s": round(tput, 1), "effective_throughput_mb_s": round(eff, 1),
                "instance_cap_mb_s": instance_cap_mb_s,
                "formula": (f"IOPS min{{{lvl.iops_base:g} + {lvl.iops_per_gib:g} x GiB, {lvl.iops_max:g}}}; "
                            f"MB/s min{{{lvl.throughput_base_mb_s:g} + {lvl.throughput_per_gib_mb_s:g} x GiB, "
                            f"{lvl.throughput_max_mb_s:g}}}")}
    return None


def cpfs_capacity_gib(need_mb_s: float, data_gib: float) -> int:
    """CPFS General-purpose (200 MB/s/TiB baseline): throughput = 0.2 MB/s per GiB (capped), capacity from 3,600 GiB
    in 1,200 GiB steps; sized to hold the data x 1.2 and to reach ``need_mb_s`` (reads, or a checkpoint's writes)."""
    f = storage_facts()["cpfs"]
    return shared_capacity_gib("cpfs", max(data_gib * 1.2, min(need_mb_s, float(f["max_mb_s"])) / f["mb_s_per_gib"]))


def cpfs_mb_s(gib: float) -> float:
    """CPFS General-purpose throughput of a file system of ``gib`` GiB."""
    f = storage_facts()["cpfs"]
    return min(gib * float(f["mb_s_per_gib"]), float(f["max_mb_s"]))


def extreme_nas_bandwidth_mb_s(gib: float) -> float:
    """Extreme NAS (advanced): the bandwidth of a file system of ``gib`` provisioned GiB (the page's steps)."""
    bw = 0.0
    for start, mb_s in storage_facts()["nas_extreme"]["bandwidth_steps"]:
        if gib >= start:
            bw = float(mb_s)
    return bw


def shared_need_mb_s(read_bytes_s: float, nodes: int, checkpoint_bytes: float, training: bool) -> float:
    """MB/s the shared file system must deliver: every node's reads (with the read headroom) or a checkpoint
    written within the target time, whichever is more."""
    a = storage_facts()["assumptions"]
    read_mb_s = read_bytes_s * a["read_headroom"] / MB * max(1, nodes)
    ckpt_mb_s = checkpoint_bytes / a["checkpoint_write_target_s"] / MB if training else 0.0
    return max(read_mb_s, ckpt_mb_s, 1.0)


SHARED_FS_LABELS = {"extreme_nas": N_("Extreme NAS"), "cpfs": "CPFS", "nas": "NAS"}


def shared_fs_name(kind: str) -> str:
    """The English name of a shared file system kind (a msgid: localize() reads it back in a sentence)."""
    return SHARED_FS_LABELS.get(kind, kind.upper())


def shared_fs_label(kind: str, lang: str | None = None) -> str:
    """The name a shared file system kind reads as, in ``lang`` (default: the current language)."""
    return tr(shared_fs_name(kind), lang)


def shared_capacity_gib(kind: str, gib: float) -> int:
    """``gib`` rounded up to a capacity the kind sells (its minimum and step, storage.yaml); other kinds unchanged."""
    f = storage_facts().get({"extreme_nas": "nas_extreme", "cpfs": "cpfs"}.get(kind, ""))
    if not f:
        return int(math.ceil(gib))
    return int(math.ceil(max(gib, float(f["min_capacity_gib"])) / f["step_gib"]) * f["step_gib"])


def shared_nodes() -> int:
    """From this many nodes a training run shares one file system (its data, weights and checkpoints)."""
    return int(storage_facts()["assumptions"]["shared_fs_min_nodes"])


def shared_data_gib(dataset_bytes: float, model_bytes: float, checkpoint_bytes: float, final_bytes: float) -> float:
    """GiB a multi-node run keeps on its shared file system: the dataset, the weights, the checkpoints kept and the
    final export."""
    kept = storage_facts()["assumptions"]["checkpoints_kept"]
    return (dataset_bytes + model_bytes + kept * checkpoint_bytes + final_bytes) / GIB


def shared_fs(need_mb_s: float, data_gib: float) -> dict:
    """The shared file system for ``need_mb_s`` and ``data_gib`` stored: Extreme NAS, which the nodes mount with
    the stock NFS client, where its largest bandwidth step reaches the need and its capacity holds the data;
    else CPFS General-purpose (its NFS export's address is set by hand: PLAN.md). ``write_mb_s`` is what a checkpoint
    is written at (plan/money/costing.py counts the saves with it)."""
    facts = storage_facts()
    x = facts["nas_extreme"]
    hold_gib = data_gib * 1.2
    for start, mb_s in x["bandwidth_steps"]:
        if mb_s < need_mb_s:
            continue
        gib = shared_capacity_gib("extreme_nas", max(float(start), hold_gib))
        if gib > x["max_capacity_gib"]:
            break
        bw = extreme_nas_bandwidth_mb_s(gib)
        return {"kind": "extreme_nas", "capacity_gib": int(gib), "capacity_tib": round(gib / 1024, 3),
                "read_mb_s": bw, "write_mb_s": bw, "source": x["source"]}
    gib = cpfs_capacity_gib(need_mb_s, data_gib)
    return {"kind": "cpfs", "capacity_gib": gib, "capacity_tib": round(gib / 1024, 3), "read_mb_s": cpfs_mb_s(gib),
            "write_mb_s": cpfs_mb_s(gib), "source": facts["cpfs"]["source"]}


def storage_advice(*, training: bool, nodes: int, read_bytes_s: float, checkpoint_bytes: float,
                   model_bytes: float, dataset_bytes: float | None, instance_disk_mb_s: float | None,
                   final_bytes: float = 0.0, output_bytes: float = 0.0) -> dict:
    """Advice object for one plan (the `storage` field of the contract). The disks hold the whole run: the weights
    (``model_bytes``, what each node downloads), the dataset (a batch job's input), the checkpoints kept
    (``checkpoints_kept``: the bundle rotates to that many, ``--save_total_limit``), the final export and a batch
    job's output (``output_bytes``); ``budget`` carries those bytes."""
    facts = storage_facts()
    a = facts["assumptions"]
    read_mb_s = read_bytes_s * a["read_headroom"] / MB
    ckpt_mb_s = checkpoint_bytes / a["checkpoint_write_target_s"] / MB if training else 0.0
    need_mb_s = max(read_mb_s, ckpt_mb_s, 1.0)
    data_gib = (dataset_bytes or 0.0) / GIB
    kept = a["checkpoints_kept"] if training else 0
    final_bytes = final_bytes if training else 0.0
    output_bytes = 0.0 if training else output_bytes
    run_bytes = kept * checkpoint_bytes + final_bytes + output_bytes     # what the run writes and keeps
    local_gib = a["os_and_scratch_gib"] + model_bytes / GIB + run_bytes / GIB
    room = 1.0 / (1.0 - float(a["free_share"]))   # the disk keeps free_share free beyond what the run stores
    notes: list[str] = []
    sources = [facts["essd"]["source"]]
    shared = None
    if nodes >= shared_nodes() and training:
        shared = shared_fs(shared_need_mb_s(read_bytes_s, nodes, checkpoint_bytes, training),
                           shared_data_gib(dataset_bytes or 0.0, model_bytes, checkpoint_bytes, final_bytes))
        shared["why"] = _("{nodes} nodes read the same dataset and write shared checkpoints").format(nodes=nodes)
        sources.append(shared.pop("source"))
        disk = choose_essd(room * (a["os_and_scratch_gib"] + model_bytes / GIB), 0, instance_disk_mb_s)
    else:
        disk = choose_essd(room * (local_gib + data_gib), need_mb_s, instance_disk_mb_s)
        if disk is None:
            shared = shared_fs(need_mb_s, data_gib + run_bytes / GIB)
            shared["why"] = _("{need} MB/s is more than one ESSD delivers").format(need=f"{need_mb_s:,.0f}")
            sources.append(shared.pop("source"))
            disk = choose_essd(room * (a["os_and_scratch_gib"] + model_bytes / GIB), 0, instance_disk_mb_s)
        elif not training and nodes >= 1 and model_bytes > 50 * GIB:
            notes.append(_("keep the weights on NAS (shared by all replicas) or OSS and copy them to the local disk "
                           "at start-up"))
            sources.append(facts["nas"]["source"])
    if instance_disk_mb_s and disk and need_mb_s > instance_disk_mb_s and shared is None:
        notes.append(_("the instance type caps disk throughput at {cap} MB/s (< {need} MB/s needed)").format(
            cap=f"{instance_disk_mb_s:,.0f}", need=f"{need_mb_s:,.0f}"))
    if data_gib > 1024 or (training and nodes > 1):
        notes.append(_("keep the raw dataset in OSS (cold) and stage the working set on the fast tier"))
        sources.append(facts["oss"]["source"])
    return {
        "read_mb_s": round(read_bytes_s / MB, 2), "provisioned_read_mb_s": round(read_mb_s, 2),
        "checkpoint_bytes": int(checkpoint_bytes), "checkpoint_write_mb_s": round(ckpt_mb_s, 1),
        "dataset_bytes": None if dataset_bytes is None else int(dataset_bytes),
        "checkpoints_kept": kept,
        "budget": storage_budget(model_bytes=model_bytes, dataset_bytes=dataset_bytes or 0.0,
                                 checkpoint_bytes=checkpoint_bytes if training else 0.0, kept=kept,
                                 final_bytes=final_bytes, scratch_bytes=a["os_and_scratch_gib"] * GIB, disk=disk,
                                 shared=shared, output_bytes=output_bytes),
        "disk": disk, "shared": shared, "notes": notes, "sources": sources,
    }


def storage_budget(*, model_bytes: float, dataset_bytes: float, checkpoint_bytes: float, kept: int,
                   final_bytes: float, scratch_bytes: float, disk: dict | None, shared: dict | None,
                   output_bytes: float = 0.0) -> dict:
    """The bytes the run keeps and where (plan.storage.budget; `gpuplan check` and PLAN.md read it): the weights, the
    dataset (a batch job's input), ``kept`` checkpoints, the final export and a batch job's output on the shared file
    system when there is one, else on each node's data disk (which always holds the scratch space and the weights'
    local copy)."""
    run = kept * checkpoint_bytes + final_bytes + output_bytes
    disk_bytes = int((disk or {}).get("size_gib") or 0) * GIB
    if shared:
        shared_bytes = float(shared.get("capacity_gib") or 0.0) * GIB or float(shared.get("capacity_tib") or 0.0) * TIB
        on_shared, on_disk = model_bytes + dataset_bytes + run, scratch_bytes + model_bytes
    else:
        shared_bytes, on_shared, on_disk = 0.0, 0.0, scratch_bytes + model_bytes + dataset_bytes + run
    return {"weights_bytes": int(model_bytes), "dataset_bytes": int(dataset_bytes),
            "checkpoint_bytes": int(checkpoint_bytes), "checkpoints_kept": kept,
            "checkpoints_bytes": int(kept * checkpoint_bytes), "final_bytes": int(final_bytes),
            "output_bytes": int(output_bytes),
            "scratch_bytes": int(scratch_bytes), "checkpoints_on": "shared" if shared else "disk",
            "disk_needed_bytes": int(on_disk), "disk_bytes": int(disk_bytes),
            "shared_needed_bytes": int(on_shared), "shared_bytes": int(shared_bytes),
            "fits": on_disk <= disk_bytes and on_shared <= shared_bytes}


def checkpoint_bytes(params_total: float, trainable_params: float, task: str, optimizer: str) -> float:
    """Weights + optimizer states as saved: full fine-tuning keeps 16-bit weights plus fp32 master
    weights and two fp32 Adam moments (2 + 12 bytes/param; Rajbhandari et al. 2020, ZeRO §3);
    8-bit Adam stores the moments in 2 bytes; LoRA saves only the adapters and their states."""
    state = {"adamw-8bit": 6.0, "paged-adamw-8bit": 6.0, "sgd": 8.0, "sgd-plain": 4.0, "adafactor": 4.2}.get(optimizer, 12.0)
    if task in ("lora", "qlora"):
        return trainable_params * (2.0 + state)
    if task == "inference":
        return 0.0
    return params_total * 2.0 + trainable_params * state


def data_read_bytes_s(*, llm: bool, tokens_per_s: float | None, samples_per_s: float | None,
                      bytes_per_sample: float | None) -> float:
    """Training read rate: tokens/s x bytes per token (LLM) or samples/s x bytes per sample."""
    a = storage_facts()["assumptions"]
    if llm:
        return (tokens_per_s or 0.0) * a["bytes_per_token"]
    return (samples_per_s or 0.0) * (bytes_per_sample or a["image_bytes_per_sample"])


__all__ = ["storage_advice", "storage_budget", "checkpoint_bytes", "data_read_bytes_s", "choose_essd", "essd_levels", "TIB"]
