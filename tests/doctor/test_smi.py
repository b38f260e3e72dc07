"""Parsers against recorded nvidia-smi outputs (tests/fixtures/doctor/README.md says where each is from)."""

from gpuplan.doctor import smi
from gpuplan.units import MIB

from .fakes import fixture


def test_q_l20_recorded_output():
    head, gpus = smi.parse_q(fixture("l20-1x/nvidia-smi-q.txt"))
    assert head == {"driver_version": "535.161.08", "cuda_driver_version": "12.2"}
    (g,) = gpus
    assert g.name == "NVIDIA L20"
    assert g.bus_id == "00000000:12:00.0"
    assert g.memory_total_bytes == 46068 * MIB
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (1, 4, 16, 16)
    assert g.persistence_mode is True and g.mig_enabled is None  # "N/A" on a GPU without MIG
    assert g.ecc_enabled is True
    assert (g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate, g.ecc_corrected_volatile) == (0, 0, 0)
    assert g.remapped_rows_pending is False
    assert (g.power_limit_w, g.power_default_limit_w) == (350.0, 350.0)
    assert (g.sm_clock_mhz, g.sm_clock_max_mhz, g.mem_clock_max_mhz) == (210, 2520, 9001)
    assert g.performance_state == "P8"


def test_q_a10_recorded_output():
    head, (g,) = smi.parse_q(fixture("a10-1x/nvidia-smi-q.txt"))
    assert head["driver_version"] == "550.127.05" and head["cuda_driver_version"] == "12.4"
    assert g.name == "NVIDIA A10" and g.memory_total_bytes == 23028 * MIB
    assert g.power_limit_w == 150.0 and g.sm_clock_max_mhz == 1695


def test_q_faulty_variant_x8_and_persistence_off():
    _, (g,) = smi.parse_q(fixture("l20-1x/nvidia-smi-q-x8.txt"))
    assert (g.pcie_width_current, g.pcie_width_max) == (8, 16)
    assert g.persistence_mode is False


def test_q_ecc_counters_sum_dram_and_sram():
    text = fixture("a10-1x/nvidia-smi-q.txt").replace(
        "            DRAM Uncorrectable            : 0\n        Aggregate",
        "            DRAM Uncorrectable            : 3\n        Aggregate", 1)
    _, (g,) = smi.parse_q(text)
    assert g.ecc_uncorrected_volatile == 3 and g.ecc_uncorrected_aggregate == 0


def test_query_csv_a100():
    gpus = smi.parse_query_csv(fixture("a100-8x-nvswitch/query-gpu.csv"))
    assert len(gpus) == 8
    assert {g.name for g in gpus} == {"NVIDIA A100-SXM4-80GB"}
    assert gpus[7].bus_id == "00000000:BD:00.0"
    assert gpus[0].memory_total_bytes == 81920 * MIB
    assert gpus[0].mig_enabled is False and gpus[0].power_limit_w == 400.0
    assert smi.driver_from_query_csv(fixture("a100-8x-nvswitch/query-gpu.csv")) == "535.161.08"


def test_query_csv_na_values_are_unknown():
    row = "0, NVIDIA A10, [N/A], 00000000:00:07.0, 23028, [N/A], [N/A], [N/A], [N/A], 210, 1695, 6251, " \
          "[Not Supported], 150.00, Enabled, [N/A], P8, 1, 4, 16, 16, 550.127.05\n"
    (g,) = smi.parse_query_csv(row)
    assert g.uuid is None and g.ecc_enabled is None and g.power_limit_w is None and g.mig_enabled is None
    assert g.power_default_limit_w == 150.0


def test_topo_a100_recorded_matrix():
    topo = smi.parse_topo(fixture("a100-8x-nvswitch/topo-m.txt"))
    assert topo.gpus == [f"GPU{i}" for i in range(8)]
    assert topo.link("GPU0", "GPU7") == "NV12" and smi.nv_link_count(topo.link("GPU3", "GPU4")) == 12
    assert topo.link("GPU0", "NIC0") == "PXB"
    assert topo.cpu_affinity["GPU4"] == "32-63,96-127" and topo.numa_affinity["GPU4"] == "1"
    assert topo.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}


def test_topo_space_separated_older_format():
    # Older drivers separate columns with spaces and put NIC names in the header (NVIDIA/nccl#707).
    text = ("        GPU0    GPU1    mlx5_0  CPU Affinity    NUMA Affinity\n"
            "GPU0     X      NV12    PXB     0-47,96-143     0\n"
            "GPU1    NV12     X      PXB     0-47,96-143     0\n"
            "mlx5_0  PXB     PXB      X\n\nLegend:\n")
    topo = smi.parse_topo(text)
    assert topo.devices == ("GPU0", "GPU1", "mlx5_0")
    assert topo.link("GPU1", "GPU0") == "NV12" and topo.cpu_affinity["GPU1"] == "0-47,96-143"


def test_topo_nvlink_down_variant():
    topo = smi.parse_topo(fixture("a100-8x-nvswitch/topo-m-nvlink-down.txt"))
    assert topo.link("GPU3", "GPU0") == "NODE" and topo.link("GPU3", "GPU5") == "SYS"
    assert topo.link("GPU2", "GPU1") == "NV12"


def test_topo_garbage_is_none():
    assert smi.parse_topo("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.") is None


def test_nvlink_status():
    ok = smi.parse_nvlink_status(fixture("a100-8x-nvswitch/nvlink-status.txt"))
    assert ok == {i: (12, 12) for i in range(8)}
    down = smi.parse_nvlink_status(fixture("a100-8x-nvswitch/nvlink-status-gpu3-down.txt"))
    assert down[3] == (12, 0) and down[2] == (12, 12)


def test_h200_recorded_in_this_project():
    # Recorded on an H200 (driver 580.159.04) during development; see the fixtures README.
    head, (g,) = smi.parse_q(fixture("h200-1x/nvidia-smi-q.txt"))
    assert head == {"driver_version": "580.159.04", "cuda_driver_version": "13.0"}
    assert g.name == "NVIDIA H200" and g.memory_total_bytes == 143771 * MIB
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)
    assert g.power_limit_w == 700.0 and g.performance_state == "P0" and g.mig_enabled is False
    (c,) = smi.parse_query_csv(fixture("h200-1x/query-gpu.csv"))
    assert (c.name, c.memory_total_bytes, c.sm_clock_max_mhz, c.pcie_gen_max) == (g.name, g.memory_total_bytes, 1980, 5)
    assert smi.parse_nvlink_status(fixture("h200-1x/nvlink-status.txt")) == {}


def test_topo_header_with_ansi_underline_driver_580():
    raw = fixture("h200-1x/topo-m.txt")
    assert "\x1b[4m" in raw  # as recorded, even through a pipe
    topo = smi.parse_topo(raw)
    assert topo.devices == ("GPU0",) and topo.cpu_affinity == {"GPU0": "0-15"} and topo.numa_affinity == {"GPU0": "0"}
