"""Fakes for the doctor: a machine (runner) built from recorded outputs, an NVML-shaped module,
and catalog records. GPU figures are the published ones (see /work/shared/facts/gpu-specs.csv)."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.doctor.runner import NOT_FOUND, DiskUsage, RunResult
from gpuplan.units import GIB, MIB

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "doctor"


def fixture(rel: str) -> str:
    return (FIXTURES / rel).read_text(encoding="utf-8")


class FakeRunner:
    """Answers commands from a table (anything else: command not found) and files from dicts."""

    def __init__(self, commands=None, files=None, dirs=None, disks=None):
        self.commands = {tuple(k): (RunResult(0, v) if isinstance(v, str) else v) for k, v in (commands or {}).items()}
        self.files = files or {}
        self.dirs = dirs or {}
        self.disks = disks or {}
        self.calls: list[list[str]] = []

    def run(self, argv, timeout_s=20.0):
        self.calls.append(list(argv))
        return self.commands.get(tuple(argv), NOT_FOUND)

    def read_text(self, path):
        return self.files.get(path)

    def listdir(self, path):
        return self.dirs.get(path)

    def disk_usage(self, path):
        d = self.disks.get(path)
        return None if d is None else DiskUsage(*d)


def host_files(cpus: int, ram_gib: float, numa: int, rdma: list[str] | None,
               mounts: dict[str, tuple[str, str, float, float]]) -> dict[str, Any]:
    """Files, dirs and disks of a host: mounts = {path: (device, fstype, total GiB, free GiB)}."""
    files = {
        "/proc/cpuinfo": "".join(f"processor\t: {i}\nmodel name\t: Intel(R) Xeon(R)\n\n" for i in range(cpus)),
        "/proc/meminfo": f"MemTotal:       {int(ram_gib * 1024 * 1024)} kB\nMemFree:        1024 kB\n",
        "/proc/mounts": "proc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\ntmpfs /run tmpfs rw 0 0\n" + "".join(
            f"{dev} {path} {fs} rw,relatime 0 0\n" for path, (dev, fs, _t, _f) in mounts.items()),
    }
    dirs = {"/sys/devices/system/node": [f"node{i}" for i in range(numa)] + ["possible", "online"],
            "/sys/class": ["net", "block"]}
    if rdma is not None:
        dirs["/sys/class/infiniband"] = rdma
    disks = {path: (int(t * GIB), int(f * GIB)) for path, (_d, _fs, t, f) in mounts.items()}
    return {"files": files, "dirs": dirs, "disks": disks}


# --------------------------------------------------------------------------- NVML-shaped fake


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's spelling
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    pass


@dataclass
class FakeGpu:
    name: str
    bus_id: str
    memory_mib: int
    power_w: float
    max_sm_mhz: int
    max_mem_mhz: int
    nvlinks: int = 0
    nvlinks_up: int = 0
    ecc_on: bool = True
    ecc_unc_volatile: int = 0
    ecc_unc_aggregate: int = 0
    ecc_corr_volatile: int = 0
    remap_pending: bool = False
    persistence: bool = True
    mig: bool | None = False
    gen: tuple[int, int] = (4, 4)
    width: tuple[int, int] = (16, 16)
    power_limit_w: float | None = None
    pstate: int = 0
    numa: int | None = None


class FakeNvml:
    """The subset of pynvml the doctor calls, with pynvml's names, constants and error style."""

    NVMLError = NVMLError
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
    NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = 0, 1
    NVML_FEATURE_DISABLED, NVML_FEATURE_ENABLED = 0, 1
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, gpus: list[FakeGpu], driver="535.161.08", cuda=12020, init_error: Exception | None = None):
        self.gpus, self.driver, self.cuda, self.init_error = gpus, driver, cuda, init_error
        self.initialised = False

    # system
    def nvmlInit(self):
        if self.init_error:
            raise self.init_error
        self.initialised = True

    def nvmlShutdown(self):
        self.initialised = False

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):
        return self.cuda

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.gpus[i]

    # device
    def nvmlDeviceGetName(self, h):
        return h.name

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-fake-{self.gpus.index(h)}"

    def nvmlDeviceGetPciInfo(self, h):
        return type("PciInfo", (), {"busId": h.bus_id.encode()})()

    def nvmlDeviceGetMemoryInfo(self, h):
        return type("Memory", (), {"total": h.memory_mib * MIB, "free": h.memory_mib * MIB, "used": 0})()

    def nvmlDeviceGetEccMode(self, h):
        return (int(h.ecc_on), int(h.ecc_on))

    def nvmlDeviceGetTotalEccErrors(self, h, err, counter):
        if err == self.NVML_MEMORY_ERROR_TYPE_UNCORRECTED:
            return h.ecc_unc_volatile if counter == self.NVML_VOLATILE_ECC else h.ecc_unc_aggregate
        return h.ecc_corr_volatile if counter == self.NVML_VOLATILE_ECC else h.ecc_corr_volatile

    def nvmlDeviceGetRemappedRows(self, h):
        return (0, h.ecc_unc_aggregate, int(h.remap_pending), 0)

    def nvmlDeviceGetClockInfo(self, h, clock):
        return 1410 if clock == self.NVML_CLOCK_SM else 1593

    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        return h.max_sm_mhz if clock == self.NVML_CLOCK_SM else h.max_mem_mhz

    def nvmlDeviceGetPowerManagementLimit(self, h):
        return int((h.power_limit_w or h.power_w) * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h):
        return int(h.power_w * 1000)

    def nvmlDeviceGetPersistenceMode(self, h):
        return int(h.persistence)

    def nvmlDeviceGetMigMode(self, h):
        if h.mig is None:
            raise NVMLError_NotSupported("Not Supported")
        return (int(h.mig), int(h.mig))

    def nvmlDeviceGetPerformanceState(self, h):
        return h.pstate

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return h.gen[0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return h.gen[1]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return h.width[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return h.width[1]

    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= h.nvlinks:
            raise NVMLError_NotSupported("Not Supported")
        return self.NVML_FEATURE_ENABLED if link < h.nvlinks_up else self.NVML_FEATURE_DISABLED

    def nvmlDeviceGetNumaNodeId(self, h):
        if h.numa is None:
            raise NVMLError_NotSupported("Not Supported")
        return h.numa


# --------------------------------------------------------------------------- machines

A100_BUSES = ["00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
              "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0"]


def a100_node(*, nvlink_down: int | None = None, ecc_gpu: int | None = None, x8_gpu: int | None = None,
              rdma: list[str] | None = None, data_gib: float = 2000.0, driver="535.161.08", cuda=12020):
    """8 × A100-SXM4-80GB with NVSwitch (DGX A100 / ebmgn7ex-like)."""
    gpus = [FakeGpu("NVIDIA A100-SXM4-80GB", b, 81920, 400.0, 1410, 1593, nvlinks=12, nvlinks_up=12)
            for b in A100_BUSES]
    topo = "a100-8x-nvswitch/topo-m.txt"
    status = "a100-8x-nvswitch/nvlink-status.txt"
    if nvlink_down is not None:
        gpus[nvlink_down] = replace(gpus[nvlink_down], nvlinks_up=0)
        topo, status = "a100-8x-nvswitch/topo-m-nvlink-down.txt", "a100-8x-nvswitch/nvlink-status-gpu3-down.txt"
    if ecc_gpu is not None:
        gpus[ecc_gpu] = replace(gpus[ecc_gpu], ecc_unc_volatile=2, ecc_unc_aggregate=2, remap_pending=True)
    if x8_gpu is not None:
        gpus[x8_gpu] = replace(gpus[x8_gpu], width=(8, 16))
    host = host_files(128, 1000, 2, rdma if rdma is not None else ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
                      {"/": ("/dev/vda1", "ext4", 100, 60), "/data": ("/dev/nvme0n1", "ext4", data_gib, data_gib)})
    runner = FakeRunner({("nvidia-smi", "topo", "-m"): fixture(topo),
                         ("nvidia-smi", "nvlink", "--status"): fixture(status)}, **host)
    return runner, FakeNvml(gpus, driver=driver, cuda=cuda)


def a10_node(*, x8_gpu: int | None = None, persistence_off: int | None = None):
    """4 × A10 on PCIe (ebmgn7i-like), idle: Gen1 of Gen4, P8."""
    buses = ["00000000:00:07.0", "00000000:00:08.0", "00000000:00:09.0", "00000000:00:0A.0"]
    gpus = [FakeGpu("NVIDIA A10", b, 23028, 150.0, 1695, 6251, gen=(1, 4), pstate=8) for b in buses]
    if x8_gpu is not None:
        gpus[x8_gpu] = replace(gpus[x8_gpu], width=(8, 16))
    if persistence_off is not None:
        gpus[persistence_off] = replace(gpus[persistence_off], persistence=False)
    host = host_files(128, 752, 1, [], {"/": ("/dev/vda1", "ext4", 200, 150)})
    runner = FakeRunner({("nvidia-smi", "topo", "-m"): fixture("a10-4x-pcie/topo-m.txt")}, **host)
    return runner, FakeNvml(gpus, driver="550.127.05", cuda=12040)


def l20_node(q_fixture: str = "l20-1x/nvidia-smi-q.txt"):
    """1 × L20 (gn8is.2xlarge-like) seen through nvidia-smi only (NVML not installed)."""
    host = host_files(8, 64, 1, None, {"/": ("/dev/vda1", "ext4", 100, 80),
                                       "/mnt/data": ("/dev/vdb", "xfs", 500, 500)})
    runner = FakeRunner({("nvidia-smi", "-q"): fixture(q_fixture),
                         ("nvidia-smi", "topo", "-m"): "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                                                       "GPU0\t X \t0-7\t0\t\tN/A\n",
                         ("nvidia-smi", "nvlink", "--status"): ""}, **host)
    return runner


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True)
class GpuSpec:
    id: str
    memory_gib: float
    driver_memory_mib: int
    mem_bandwidth_gb_s: float
    bf16_dense_tflops: float
    fp16_dense_tflops: float
    nvlink_gb_s: float | None
    pcie_gen: int
    mig_instances: int


@dataclass(frozen=True)
class InstanceType:
    instance_type: str
    gpu: str
    gpu_count: float
    interconnect: str
    rdma: str | None
    disk_bandwidth_mb_s: float | None
    vcpus: int
    memory_gib: float


# Published figures: NVIDIA A100 / A10 datasheets, Alibaba's L20 figures (gpu-specs.csv).
GPU_SPECS = {
    "A100-SXM4-80GB": GpuSpec("A100-SXM4-80GB", 80, 81920, 2039, 312, 312, 600, 4, 7),
    "A10-24GB": GpuSpec("A10-24GB", 24, 23028, 600, 125, 125, None, 4, 0),
    "L20-48GB": GpuSpec("L20-48GB", 48, 46068, 864, 119, 119, None, 4, 0),
}
GPU_ALIASES = {"NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB", "NVIDIA A10": "A10-24GB", "NVIDIA L20": "L20-48GB"}

INSTANCES = {
    "ecs.ebmgn7ex.32xlarge": InstanceType("ecs.ebmgn7ex.32xlarge", "A100-SXM4-80GB", 8, "nvswitch", "erdma", 6000, 128, 1024),
    "ecs.gn7e-c16g1.32xlarge": InstanceType("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB", 8, "nvswitch", None, 4000, 128, 1000),
    "ecs.ebmgn7i.32xlarge": InstanceType("ecs.ebmgn7i.32xlarge", "A10-24GB", 4, "pcie", None, 3000, 128, 768),
    "ecs.gn8is.2xlarge": InstanceType("ecs.gn8is.2xlarge", "L20-48GB", 1, "pcie", "erdma", 750, 8, 64),
}


def fake_resolve_gpu_spec(name):
    key = GPU_ALIASES.get(name, name)
    return GPU_SPECS.get(key)


def fake_lookup_instance(name):
    return INSTANCES.get(name)
