"""Probes: gather facts, render nothing. Each gets the machine through an injected runner (and
NVML module) and answers ``None`` where it cannot tell. Nothing here imports torch unless asked
(``--bench``), and nothing touches the network unless a metadata fetcher is passed in."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
from collections.abc import Callable
from typing import Any

from gpuplan.i18n import _
from gpuplan.doctor import smi
from gpuplan.doctor.facts import DriverFacts, Facts, GpuFacts, HostFacts, Mount, Topology
from gpuplan.doctor.nvml import NvmlSession, nvml_gpus
from gpuplan.doctor.runner import Runner

# Filesystems that can hold training data (local disks, cloud disks, NAS/CPFS/OSS mounts).
DATA_FSTYPES = frozenset({
    "ext4", "ext3", "xfs", "btrfs", "zfs", "nfs", "nfs4", "lustre", "cpfs", "gpfs", "beegfs",
    "ceph", "fuse.ossfs", "fuse.jindofs", "fuse.s3fs", "fuse.juicefs", "fuse.ossfs2", "overlay",
})
METADATA_URL = "http://100.100.100.200/latest/meta-data/instance/instance-type"


# --------------------------------------------------------------------------- GPUs


def sysfs_pci(bus_id: str | None) -> str | None:
    """NVML/nvidia-smi ``00000000:06:00.0`` → sysfs ``0000:06:00.0``."""
    if not bus_id:
        return None
    m = re.fullmatch(r"([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.(\d)", bus_id.strip())
    if not m:
        return None
    return f"{m.group(1)[-4:]}:{m.group(2)}:{m.group(3)}.{m.group(4)}".lower()


def _numa_from_sysfs(runner: Runner, bus_id: str | None) -> int | None:
    addr = sysfs_pci(bus_id)
    text = runner.read_text(f"/sys/bus/pci/devices/{addr}/numa_node") if addr else None
    try:
        node = int((text or "").strip())
    except ValueError:
        return None
    return node if node >= 0 else None


def probe_gpus(runner: Runner, nvml: Any | None) -> tuple[dict[str, str | None], list[GpuFacts], str | None, list[str]]:
    """GPUs through NVML, else ``nvidia-smi -q``, else ``--query-gpu`` CSV.

    Returns ({driver_version, cuda_driver_version}, gpus, source, notes).
    """
    notes: list[str] = []
    session, why = NvmlSession.open(nvml)
    if session is not None:
        try:
            head = {"driver_version": session.driver_version(),
                    "cuda_driver_version": session.cuda_driver_version()}
            gpus = nvml_gpus(session)
        finally:
            session.close()
        if gpus:
            return head, _complete(runner, gpus), "nvml", notes
        notes.append("NVML started but reports no GPU")
    elif why:
        notes.append(why)

    res = runner.run(["nvidia-smi", "-q"])
    if res.rc == 127:
        notes.append(_("nvidia-smi not found"))
        return {"driver_version": None, "cuda_driver_version": None}, [], None, notes
    head, gpus = smi.parse_q(res.stdout) if res.ok else ({}, [])
    if not gpus:
        csv_res = runner.run(smi.QUERY_ARGV)
        if csv_res.ok:
            gpus = smi.parse_query_csv(csv_res.stdout)
            head = {"driver_version": smi.driver_from_query_csv(csv_res.stdout),
                    "cuda_driver_version": head.get("cuda_driver_version")}
    if not gpus:
        detail = (res.stderr or res.stdout).strip().splitlines()
        notes.append(_("nvidia-smi failed: {detail}").format(detail=detail[0] if detail else "rc " + str(res.rc)))
        return {"driver_version": head.get("driver_version"), "cuda_driver_version": None}, [], None, notes
    return head, _complete(runner, gpus), "nvidia-smi", notes


def _complete(runner: Runner, gpus: list[GpuFacts]) -> list[GpuFacts]:
    """Fill NVLink counts (``nvidia-smi nvlink --status``) and NUMA nodes (sysfs) left unknown."""
    links: dict[int, tuple[int, int]] | None = None
    if any(g.nvlink_links_total is None for g in gpus):
        res = runner.run(["nvidia-smi", "nvlink", "--status"])
        links = smi.parse_nvlink_status(res.stdout) if res.ok else None
    out = []
    for g in gpus:
        changes: dict[str, Any] = {}
        if g.nvlink_links_total is None and links is not None:
            total, active = links.get(g.index, (0, 0))
            changes.update(nvlink_links_total=total, nvlink_links_active=active)
        if g.numa_node is None:
            changes["numa_node"] = _numa_from_sysfs(runner, g.bus_id)
        out.append(dataclasses.replace(g, **changes) if changes else g)
    return out


def probe_topology(runner: Runner) -> Topology | None:
    res = runner.run(["nvidia-smi", "topo", "-m"])
    return smi.parse_topo(res.stdout) if res.ok else None


# --------------------------------------------------------------------------- CUDA stack


def _torch_cuda_from_version(version: str | None) -> str | None:
    """``2.5.1+cu124`` → ``12.4``; ``2.13.0+cpu`` → None."""
    m = re.search(r"\+cu(\d+)(\d)$", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def probe_runtime(import_torch: bool = False,
                  metadata_version: Callable[[str], str | None] | None = None,
                  torch_module: Any | None = None) -> dict[str, str | None]:
    """CUDA runtime, cuDNN and NCCL versions.

    Without ``import_torch`` they come from installed package metadata (``torch`` and the
    ``nvidia-*-cu12`` wheels it depends on), so torch is never imported by a plain ``doctor``.
    """
    if import_torch:
        torch = torch_module
        if torch is None:
            try:
                torch = importlib.import_module("torch")  # only with --bench (no redefinition for mypy)
            except ImportError:
                torch = None
        if torch is not None:
            return _runtime_from_torch(torch)
    version = metadata_version or _dist_version
    torch_v = version("torch")
    cuda = _torch_cuda_from_version(torch_v)
    if cuda is None and torch_v and "+cpu" not in torch_v:
        # CUDA 12 wheels are suffixed (-cu12); CUDA 13 ones are not (nvidia-cuda-runtime 13.0.96).
        runtime = (version("nvidia-cuda-runtime-cu12") or version("nvidia-cuda-runtime-cu13")
                   or version("nvidia-cuda-runtime"))
        cuda = ".".join(runtime.split(".")[:2]) if runtime else None
    return {
        "torch_version": torch_v,
        "cuda_runtime_version": cuda,
        "cudnn_version": version("nvidia-cudnn-cu12") or version("nvidia-cudnn-cu13") or version("nvidia-cudnn"),
        "nccl_version": version("nvidia-nccl-cu12") or version("nvidia-nccl-cu13") or version("nvidia-nccl"),
        "runtime_source": "package metadata" if torch_v else None,
    }


def _runtime_from_torch(torch: Any) -> dict[str, str | None]:
    def safe(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - CPU builds raise on cuda/nccl queries
            return None

    cudnn = safe(lambda: torch.backends.cudnn.version())
    nccl = safe(lambda: torch.cuda.nccl.version()) if safe(lambda: torch.cuda.is_available()) else None
    return {
        "torch_version": safe(lambda: str(torch.__version__)),
        "cuda_runtime_version": safe(lambda: torch.version.cuda),
        "cudnn_version": None if not cudnn else _cudnn_text(int(cudnn)),
        "nccl_version": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else (str(nccl) if nccl else None),
        "runtime_source": "torch",
    }


def _cudnn_text(v: int) -> str:
    """cuDNN 9 encodes 9.1.0 as 90100; cuDNN 8 encodes 8.9.2 as 8902."""
    if v >= 10000:
        return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
    return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------- host


def probe_host(runner: Runner) -> HostFacts:
    cpuinfo = runner.read_text("/proc/cpuinfo") or ""
    cpus = len(re.findall(r"^processor\s*:", cpuinfo, flags=re.M)) or None
    meminfo = runner.read_text("/proc/meminfo") or ""
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, flags=re.M)
    nodes = runner.listdir("/sys/devices/system/node")
    numa = len([n for n in nodes if re.fullmatch(r"node\d+", n)]) if nodes is not None else None
    return HostFacts(
        cpus=cpus,
        ram_total_bytes=int(m.group(1)) * 1024 if m else None,
        numa_nodes=numa or None,
        rdma_devices=probe_rdma(runner),
        mounts=tuple(probe_mounts(runner)),
    )


def probe_rdma(runner: Runner) -> tuple[str, ...] | None:
    """RDMA devices from ``/sys/class/infiniband`` (``erdma_0`` for Alibaba eRDMA, ``mlx5_0`` for
    RoCE/IB); falls back to ``ibv_devices``. Empty tuple: none; None: cannot tell."""
    names = runner.listdir("/sys/class/infiniband")
    if names is not None:
        return tuple(names)
    res = runner.run(["ibv_devices"])
    if not res.ok:
        return () if res.rc == 127 and runner.listdir("/sys/class") is not None else None
    found = re.findall(r"^\s+(\S+)\s+[0-9a-f]{16}\s*$", res.stdout, flags=re.M)
    return tuple(found)


def probe_mounts(runner: Runner) -> list[Mount]:
    text = runner.read_text("/proc/mounts") or ""
    seen: set[str] = set()
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        device, path, fstype = parts[0], parts[1].replace("\\040", " "), parts[2]
        if fstype not in DATA_FSTYPES or path in seen or path.startswith(("/proc", "/sys", "/dev", "/run", "/boot")):
            continue
        if fstype == "overlay" and path != "/":
            continue
        seen.add(path)
        usage = runner.disk_usage(path)
        mounts.append(Mount(path, device, fstype,
                            usage.total_bytes if usage else None, usage.free_bytes if usage else None))
    return mounts


def fetch_instance_type(timeout_s: float = 1.0) -> str | None:
    """Alibaba ECS metadata service (only with --instance-metadata; never in tests).
    https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata"""
    import urllib.request  # noqa: PLC0415

    try:
        with urllib.request.urlopen(METADATA_URL, timeout=timeout_s) as resp:  # noqa: S310
            return resp.read().decode().strip() or None
    except OSError:
        return None


# --------------------------------------------------------------------------- all


def collect_facts(runner: Runner, nvml: Any | None, *, import_torch: bool = False,
                  metadata_fetcher: Callable[[], str | None] | None = None,
                  metadata_version: Callable[[str], str | None] | None = None,
                  torch_module: Any | None = None) -> Facts:
    head, gpus, source, notes = probe_gpus(runner, nvml)
    topology = probe_topology(runner) if gpus else None
    if topology is not None:
        gpus = [_numa_from_topology(g, topology) for g in gpus]
    runtime = probe_runtime(import_torch, metadata_version, torch_module)
    driver = DriverFacts(driver_version=head.get("driver_version"),
                         cuda_driver_version=head.get("cuda_driver_version"), **runtime)
    host = probe_host(runner)
    if metadata_fetcher is not None:
        host = dataclasses.replace(host, instance_type=metadata_fetcher())
    return Facts(driver, tuple(gpus), topology, host, source, tuple(notes))


def _numa_from_topology(g: GpuFacts, topo: Topology) -> GpuFacts:
    if g.numa_node is not None:
        return g
    value = topo.numa_affinity.get(f"GPU{g.index}", "")
    return dataclasses.replace(g, numa_node=int(value)) if value.isdigit() else g
