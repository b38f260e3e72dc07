"""Checks against the plan and the catalog, on healthy and faulty machines."""

import dataclasses

import pytest

from gpuplan.doctor import checks as ck
from gpuplan.doctor import probes
from gpuplan.doctor.verdict import Check, exit_code
from gpuplan.doctor.plan import expectations, load_plan

from .fakes import a10_node, a100_node, l20_node


def run(runner, nvml, plan_dir=None, bench=None, meta=None):
    facts = probes.collect_facts(runner, nvml, metadata_version=lambda n: None,
                                 metadata_fetcher=(lambda: meta) if meta else None)
    exp = expectations(load_plan(plan_dir)) if plan_dir else expectations(None)
    results = ck.run_checks(facts, exp, bench)
    return {c.id: c for c in results}, exit_code(results), facts


def statuses(by_id):
    return {k: c.status for k, c in by_id.items()}


def test_a100_node_healthy_against_its_plan(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB",
                     storage={"data_disk_gib": 2000, "required_read_mb_s": 500},
                     ops={"min_driver_version": "535", "cuda_version": "12.2"})
    by_id, code, _ = run(*a100_node(), plan_dir=plan)
    s = statuses(by_id)
    assert s["gpu.model"] == "pass" and s["driver.version"] == "pass" and s["nvlink"] == "pass"
    assert s["pcie.width"] == "pass" and s["ecc.errors"] == "pass" and s["gpu.persistence"] == "pass"
    assert s["disk.size"] == "pass" and s["rdma"] == "skip"
    assert "every pair NV12" in by_id["nvlink"].message()
    # no --bench: disk speed unmeasured, catalog cap (4000 MB/s) is above the need
    assert s["disk.speed"] == "skip"
    assert code == 0


def test_a100_nvlink_down_fails_with_fix(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB")
    by_id, code, _ = run(*a100_node(nvlink_down=3), plan_dir=plan)
    c = by_id["nvlink"]
    assert c.status == "fail" and code == 2
    assert "GPU3: 0 of 12 NVLinks active" in c.message()
    assert "GPU0↔GPU3 NODE" in c.message()
    assert "nvidia-fabricmanager" in c.fix()


def test_a100_nvlink_down_without_plan_still_fails():
    by_id, code, _ = run(*a100_node(nvlink_down=3))
    assert by_id["nvlink"].status == "fail" and code == 2


def test_a100_ecc_errors_and_pending_remap_fail():
    by_id, code, _ = run(*a100_node(ecc_gpu=5))
    c = by_id["ecc.errors"]
    assert c.status == "fail" and code == 2
    assert "GPU5: 2 uncorrected ECC errors since boot" in c.message()
    assert "row remapping pending" in c.message()
    assert "nvidia-smi -r" in c.fix()


def test_a100_x8_link_fails():
    by_id, code, _ = run(*a100_node(x8_gpu=6))
    assert by_id["pcie.width"].status == "fail"
    assert "GPU6 x8/x16" in by_id["pcie.width"].message()


def test_a10_pcie_node_idle_gen1_is_not_a_fault(make_plan):
    plan = make_plan("ecs.ebmgn7i.32xlarge", "A10-24GB")
    by_id, code, _ = run(*a10_node(), plan_dir=plan)
    s = statuses(by_id)
    assert s["pcie.width"] == "pass" and "idle" in by_id["pcie.width"].message()
    assert s["nvlink"] == "pass" and by_id["nvlink"].key == "nvlink.not_expected"
    assert code == 0


def test_a10_faulty_x8_and_persistence_off(make_plan):
    plan = make_plan("ecs.ebmgn7i.32xlarge", "A10-24GB")
    by_id, code, _ = run(*a10_node(x8_gpu=2, persistence_off=3), plan_dir=plan)
    assert by_id["pcie.width"].status == "fail" and "GPU2 x8/x16" in by_id["pcie.width"].message()
    assert by_id["gpu.persistence"].status == "warn" and "GPU3" in by_id["gpu.persistence"].message()
    assert "nvidia-smi -pm 1" in by_id["gpu.persistence"].fix()
    assert code == 2


def test_a10_gen_below_max_while_busy_warns():
    runner, nvml = a10_node()
    nvml.gpus[1] = dataclasses.replace(nvml.gpus[1], pstate=0, gen=(3, 4))
    by_id, code, _ = run(runner, nvml)
    assert by_id["pcie.gen"].status == "warn" and "GPU1 Gen3/Gen4" in by_id["pcie.gen"].message()
    assert code == 1


def test_l20_through_nvidia_smi_healthy(make_plan):
    plan = make_plan("ecs.gn8is.2xlarge", "L20-48GB", storage={"data_disk_gib": 500})
    by_id, code, facts = run(l20_node(), None, plan_dir=plan)
    assert facts.gpu_source == "nvidia-smi"
    assert by_id["gpu.model"].status == "pass" and by_id["disk.size"].status == "pass"
    assert by_id["nvlink"].status == "skip" and code == 0


def test_l20_recorded_faulty_variant(make_plan):
    by_id, code, _ = run(l20_node("l20-1x/nvidia-smi-q-x8.txt"), None)
    assert by_id["pcie.width"].status == "fail" and by_id["gpu.persistence"].status == "warn"
    assert code == 2


def test_wrong_gpu_model_fails(make_plan):
    plan = make_plan("ecs.gn8is.2xlarge", "L20-48GB")
    by_id, code, _ = run(*a10_node(), plan_dir=plan)
    assert by_id["gpu.model"].status == "fail" and "A10-24GB" in by_id["gpu.model"].message()


def test_too_few_gpus_fails(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB")
    runner, nvml = a100_node()
    nvml.gpus = nvml.gpus[:7]
    by_id, _, _ = run(runner, nvml, plan_dir=plan)
    assert by_id["gpu.count"].status == "fail"


@pytest.mark.parametrize("ops, cid", [({"min_driver_version": "550"}, "driver.version"),
                                      ({"cuda_version": "12.4"}, "driver.version")])
def test_driver_too_old_for_plan(make_plan, ops, cid):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB", ops=ops)
    by_id, code, _ = run(*a100_node(driver="535.161.08", cuda=12020), plan_dir=plan)
    assert by_id[cid].status == "fail" and code == 2
    assert "550" in by_id[cid].fix()  # CUDA 12.4 needs >= 550.54.14 (CUDA release notes, Table 3)


def test_torch_built_for_newer_cuda_than_driver_warns():
    runner, nvml = a100_node(cuda=12020)
    facts = probes.collect_facts(runner, nvml, metadata_version={"torch": "2.6.0+cu124"}.get)
    by_id = {c.id: c for c in ck.run_checks(facts, expectations(None))}
    assert by_id["driver.runtime"].status == "warn"
    facts = probes.collect_facts(runner, nvml, metadata_version={"torch": "2.9.0+cu130"}.get)
    by_id = {c.id: c for c in ck.run_checks(facts, expectations(None))}
    assert by_id["driver.runtime"].status == "fail"


def test_erdma_missing_on_multi_node_plan(make_plan):
    plan = make_plan("ecs.ebmgn7ex.32xlarge", "A100-SXM4-80GB", count=2)
    by_id, code, _ = run(*a100_node(rdma=[]), plan_dir=plan)
    c = by_id["rdma"]
    assert c.status == "fail" and "eRDMA" in c.message() and "2-node" in c.message()
    assert "erdma" in c.fix().lower()
    by_id, _, _ = run(*a100_node(rdma=["erdma_0"]), plan_dir=plan)
    assert by_id["rdma"].status == "pass"


def test_data_disk_too_small(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB", storage={"data_disk_gib": 4000})
    by_id, _, _ = run(*a100_node(data_gib=2000), plan_dir=plan)
    assert by_id["disk.size"].status == "fail" and "/data" in by_id["disk.size"].message()


def test_disk_speed_measured_vs_need(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB", storage={"required_read_mb_s": 1000})
    slow = {"device": "cuda", "disk_read_mb_s": {"value": 300.0, "unit": "MB/s"}}
    by_id, _, _ = run(*a100_node(), plan_dir=plan, bench=slow)
    assert by_id["disk.speed"].status == "fail"


def test_instance_cap_below_need_warns(make_plan):
    plan = make_plan("ecs.gn8is.2xlarge", "L20-48GB", storage={"required_read_mb_s": 1000})
    by_id, _, _ = run(l20_node(), None, plan_dir=plan)
    assert by_id["disk.speed"].status == "warn" and "750" in by_id["disk.speed"].message()


def test_instance_type_from_metadata_mismatch(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB")
    by_id, code, _ = run(*a100_node(), plan_dir=plan, meta="ecs.gn7e-c16g1.16xlarge")
    assert by_id["instance.type"].status == "fail" and code == 2


def test_missing_plan_keys_skip():
    by_id, code, _ = run(*a10_node())
    assert by_id["gpu.model"].status == "skip" and by_id["disk.size"].status == "skip"
    assert by_id["gpu.model"].message() == "no plan given (--plan DIR)"


def test_mig_on_and_power_capped_warn():
    runner, nvml = a100_node()
    nvml.gpus[0] = dataclasses.replace(nvml.gpus[0], mig=True, power_limit_w=250.0)
    by_id, code, _ = run(runner, nvml)
    assert by_id["gpu.mig"].status == "warn" and by_id["gpu.power"].status == "warn"
    assert "GPU0 250/400 W" in by_id["gpu.power"].message() and code == 1


BENCH_A100 = {"device": "cuda",
              "matmul_bf16_tflops": {"value": 265.0, "unit": "TFLOPS"},
              "matmul_fp16_tflops": {"value": 270.0, "unit": "TFLOPS"},
              "memory_bandwidth_gb_s": {"value": 1700.0, "unit": "GB/s"},
              "host_to_device_gb_s": {"value": 24.0, "unit": "GB/s"},
              "allreduce_busbw_gb_s": {"value": 230.0, "unit": "GB/s"}}


def test_bench_compared_with_catalog(make_plan):
    # Typical DGX A100 figures: ~265 of 312 TFLOPS, ~1.7 of 2.04 TB/s, nccl-tests busbw ~230 GB/s.
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB")
    bench = {k: dict(v) if isinstance(v, dict) else v for k, v in BENCH_A100.items()}
    by_id, code, _ = run(*a100_node(), plan_dir=plan, bench=bench)
    assert all(by_id[f"bench.{k}"].status == "pass" for k in BENCH_A100 if k != "device")
    assert bench["allreduce_busbw_gb_s"]["reference"] == 300.0  # 600 GB/s bidirectional / 2
    assert bench["matmul_bf16_tflops"]["ratio"] == pytest.approx(265 / 312, abs=1e-3)
    assert code == 0


def test_bench_far_below_catalog_fails(make_plan):
    plan = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB")
    bench = {k: dict(v) if isinstance(v, dict) else v for k, v in BENCH_A100.items()}
    bench["matmul_bf16_tflops"]["value"] = 80.0     # 26 % of 312: fail
    bench["allreduce_busbw_gb_s"]["value"] = 20.0   # PCIe-like: NVLink not used
    bench["memory_bandwidth_gb_s"]["value"] = 1100.0  # 54 %: warn
    by_id, code, _ = run(*a100_node(), plan_dir=plan, bench=bench)
    assert by_id["bench.matmul_bf16_tflops"].status == "fail"
    assert by_id["bench.allreduce_busbw_gb_s"].status == "fail"
    assert by_id["bench.memory_bandwidth_gb_s"].status == "warn"
    assert code == 2


def test_bench_errors_and_cpu_runs_are_not_compared():
    by_id, _, _ = run(*a10_node(), bench={"error": "PyTorch is not installed"})
    assert by_id["bench"].status == "warn"
    cpu = {"device": "cpu", "matmul_bf16_tflops": {"value": 0.3, "unit": "TFLOPS"},
           "allreduce_busbw_gb_s": {"value": None, "unit": "GB/s", "error": "timed out"}}
    by_id, _, _ = run(*a10_node(), bench=cpu)
    assert by_id["bench.matmul_bf16_tflops"].status == "skip"
    assert by_id["bench.allreduce_busbw_gb_s"].status == "warn"


def test_exit_codes():
    mk = lambda s: Check("x", s, "mig.ok")  # noqa: E731
    assert exit_code([mk("pass"), mk("skip")]) == 0
    assert exit_code([mk("pass"), mk("warn")]) == 1
    assert exit_code([mk("warn"), mk("fail")]) == 2


def test_plan_with_non_numeric_gpus_total_is_not_a_crash():
    # mypy found `_num(plan["gpus_total"]) / count` dividing None when gpus_total is not a number.
    plan = {"plan": {"instance_type": "ecs.not-in-any-catalog", "instance_count": 2, "gpus_total": 16}}
    assert expectations(plan).gpus_per_node == 8
    plan["plan"]["gpus_total"] = "many"
    exp = expectations(plan)
    assert exp.gpus_per_node is None and exp.instance_count == 2
