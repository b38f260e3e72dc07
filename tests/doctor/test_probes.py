"""Probes with an injected runner and NVML-shaped fakes."""

from gpuplan.doctor import probes
from gpuplan.doctor.nvml import cuda_version_from_int
from gpuplan.doctor.runner import RunResult, SystemRunner
from gpuplan.units import GIB, MIB

from .fakes import FakeNvml, FakeRunner, NVMLError_LibraryNotFound, a10_node, a100_node, fixture, l20_node


def test_nvml_a100_node_facts(no_torch_runtime):
    runner, nvml = a100_node()
    f = probes.collect_facts(runner, nvml, metadata_version=no_torch_runtime)
    assert f.gpu_source == "nvml"
    assert f.driver.driver_version == "535.161.08" and f.driver.cuda_driver_version == "12.2"
    assert len(f.gpus) == 8
    g = f.gpus[4]
    assert g.name == "NVIDIA A100-SXM4-80GB" and g.bus_id == "00000000:87:00.0"
    assert g.memory_total_bytes == 81920 * MIB
    assert (g.nvlink_links_total, g.nvlink_links_active) == (12, 12)
    assert g.power_limit_w == 400.0 and g.persistence_mode is True and g.mig_enabled is False
    assert g.numa_node == 1  # NVML has none here: taken from topo -m's NUMA Affinity column
    assert f.topology.link("GPU0", "GPU1") == "NV12"
    assert f.host.cpus == 128 and f.host.ram_total_bytes == 1000 * GIB and f.host.numa_nodes == 2
    assert f.host.rdma_devices == ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")
    assert [m.path for m in f.host.mounts] == ["/", "/data"]
    assert not nvml.initialised  # shut down again


def test_nvml_unavailable_falls_back_to_nvidia_smi_q(no_torch_runtime):
    f = probes.collect_facts(l20_node(), None, metadata_version=no_torch_runtime)
    assert f.gpu_source == "nvidia-smi"
    assert f.driver.driver_version == "535.161.08" and f.driver.cuda_driver_version == "12.2"
    (g,) = f.gpus
    assert g.name == "NVIDIA L20" and g.nvlink_links_total == 0 and g.numa_node == 0
    assert any("nvidia-ml-py is not installed" in n for n in f.notes)
    assert f.host.rdma_devices == ()  # no /sys/class/infiniband, no ibv_devices


def test_nvml_library_missing_then_csv_fallback(no_torch_runtime):
    runner = FakeRunner({("nvidia-smi", "-q"): RunResult(0, "garbage\n"),
                         ("nvidia-smi", *probes.smi.QUERY_ARGV[1:]): fixture("a100-8x-nvswitch/query-gpu.csv"),
                         ("nvidia-smi", "nvlink", "--status"): fixture("a100-8x-nvswitch/nvlink-status.txt")})
    nvml = FakeNvml([], init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    f = probes.collect_facts(runner, nvml, metadata_version=no_torch_runtime)
    assert f.gpu_source == "nvidia-smi" and len(f.gpus) == 8
    assert f.driver.driver_version == "535.161.08"
    assert f.gpus[3].nvlink_links_active == 12
    assert "NVML could not start: NVML Shared Library Not Found" in f.notes


def test_no_gpu_no_driver(no_torch_runtime):
    nvml = FakeNvml([], init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    f = probes.collect_facts(FakeRunner(), nvml, metadata_version=no_torch_runtime)
    assert not f.has_gpu and f.gpu_source is None and f.topology is None
    assert "nvidia-smi not found" in f.notes


def test_driver_loaded_but_failing_nvidia_smi(no_torch_runtime):
    msg = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    runner = FakeRunner({("nvidia-smi", "-q"): RunResult(9, msg), tuple(probes.smi.QUERY_ARGV): RunResult(9, msg)})
    f = probes.collect_facts(runner, None, metadata_version=no_torch_runtime)
    assert not f.gpus and any("couldn't communicate" in n for n in f.notes)


def test_runtime_versions_from_package_metadata_without_importing_torch():
    versions = {"torch": "2.5.1+cu124", "nvidia-cudnn-cu12": "9.1.0.70", "nvidia-nccl-cu12": "2.21.5"}
    rt = probes.probe_runtime(metadata_version=versions.get)
    assert rt == {"torch_version": "2.5.1+cu124", "cuda_runtime_version": "12.4", "cudnn_version": "9.1.0.70",
                  "nccl_version": "2.21.5", "runtime_source": "package metadata"}
    # Default PyPI wheels carry no +cuXXX suffix: the runtime wheel's version tells.
    rt = probe_plain = probes.probe_runtime(metadata_version={"torch": "2.6.0",
                                                              "nvidia-cuda-runtime-cu12": "12.4.127"}.get)
    assert probe_plain["cuda_runtime_version"] == "12.4" and rt["cudnn_version"] is None
    assert probes.probe_runtime(metadata_version={"torch": "2.13.0+cpu"}.get)["cuda_runtime_version"] is None


def test_cuda_version_encoding():
    assert cuda_version_from_int(12040) == "12.4" and cuda_version_from_int(11080) == "11.8"
    assert cuda_version_from_int(None) is None


def test_sysfs_pci_address():
    assert probes.sysfs_pci("00000000:4E:00.0") == "0000:4e:00.0"
    assert probes.sysfs_pci("garbage") is None


def test_numa_from_sysfs_when_nvml_cannot_tell(no_torch_runtime):
    runner, nvml = a10_node()
    runner.files["/sys/bus/pci/devices/0000:00:09.0/numa_node"] = "0\n"
    runner.files["/sys/bus/pci/devices/0000:00:07.0/numa_node"] = "-1\n"  # VM without NUMA info
    f = probes.collect_facts(runner, nvml, metadata_version=no_torch_runtime)
    assert f.gpus[2].numa_node == 0
    assert f.gpus[0].numa_node == 0  # sysfs says -1, topo -m's NUMA Affinity says 0


def test_rdma_from_ibv_devices():
    out = ("    device          \t   node GUID\n    ------          \t----------------\n"
           "    erdma_0         \t02163efffe0e0e22\n")
    runner = FakeRunner({("ibv_devices",): out}, dirs={"/sys/class": ["net"]})
    assert probes.probe_rdma(runner) == ("erdma_0",)


def test_metadata_only_through_injected_fetcher(no_torch_runtime):
    calls = []
    runner, nvml = a10_node()
    fetch = lambda: calls.append(1) or "ecs.ebmgn7i.32xlarge"  # noqa: E731
    f = probes.collect_facts(runner, nvml, metadata_fetcher=fetch, metadata_version=no_torch_runtime)
    assert f.host.instance_type == "ecs.ebmgn7i.32xlarge" and calls == [1]
    f = probes.collect_facts(runner, nvml, metadata_version=no_torch_runtime)
    assert f.host.instance_type is None


def test_system_runner_missing_command_and_file():
    r = SystemRunner()
    assert r.run(["definitely-not-a-command-gpuplan"]).rc == 127
    assert r.read_text("/nonexistent/gpuplan") is None and r.listdir("/nonexistent/gpuplan") is None
    assert r.run(["sleep", "5"], timeout_s=0.2).rc == 124


def test_runtime_cuda13_wheels_are_unsuffixed():
    # As installed on the H200 box: torch 2.11.0 with nvidia-cuda-runtime 13.0.96 (no -cu13 suffix).
    versions = {"torch": "2.11.0", "nvidia-cuda-runtime": "13.0.96", "nvidia-cudnn-cu13": "9.19.0.56",
                "nvidia-nccl-cu13": "2.28.9"}
    rt = probes.probe_runtime(metadata_version=versions.get)
    assert (rt["cuda_runtime_version"], rt["cudnn_version"], rt["nccl_version"]) == ("13.0", "9.19.0.56", "2.28.9")
