"""What the doctor found, as frozen records. ``None`` always means "the probe could not tell";
the report shows it as "unknown" and ``--json`` as ``null``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GpuFacts:
    index: int
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    memory_total_bytes: int | None = None
    ecc_enabled: bool | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    ecc_corrected_volatile: int | None = None
    remapped_rows_pending: bool | None = None
    remapping_failed: bool | None = None
    sm_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    power_limit_w: float | None = None
    power_default_limit_w: float | None = None
    persistence_mode: bool | None = None
    mig_enabled: bool | None = None
    performance_state: str | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    nvlink_links_total: int | None = None  # 0: the GPU has no NVLink
    nvlink_links_active: int | None = None
    numa_node: int | None = None


@dataclass(frozen=True)
class DriverFacts:
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # the newest CUDA the driver supports
    cuda_runtime_version: str | None = None  # the CUDA torch was built with
    cudnn_version: str | None = None
    nccl_version: str | None = None
    torch_version: str | None = None
    runtime_source: str | None = None  # "torch" (imported, --bench) or "package metadata"


@dataclass(frozen=True)
class Topology:
    """``nvidia-smi topo -m``: device names, the link matrix and each GPU's affinities."""

    devices: tuple[str, ...] = ()
    matrix: dict[str, dict[str, str]] = field(default_factory=dict)
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, str] = field(default_factory=dict)
    nic_names: dict[str, str] = field(default_factory=dict)

    @property
    def gpus(self) -> list[str]:
        return [d for d in self.devices if d.startswith("GPU")]

    def link(self, a: str, b: str) -> str | None:
        return self.matrix.get(a, {}).get(b)


@dataclass(frozen=True)
class Mount:
    path: str
    device: str
    fstype: str
    total_bytes: int | None
    free_bytes: int | None


@dataclass(frozen=True)
class HostFacts:
    cpus: int | None = None
    ram_total_bytes: int | None = None
    numa_nodes: int | None = None
    rdma_devices: tuple[str, ...] | None = None
    mounts: tuple[Mount, ...] = ()
    instance_type: str | None = None  # from the metadata service, only with --instance-metadata


@dataclass(frozen=True)
class Facts:
    driver: DriverFacts
    gpus: tuple[GpuFacts, ...]
    topology: Topology | None
    host: HostFacts
    gpu_source: str | None  # "nvml", "nvidia-smi" or None (no GPU found)
    notes: tuple[str, ...] = ()

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
