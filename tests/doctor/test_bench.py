"""Benchmark code paths on the CPU: matmul on CPU tensors, copies, and a 2-process gloo
all-reduce on 127.0.0.1. Skipped cleanly where torch is not installed."""

import io
import json
import types

import pytest

from gpuplan.doctor import bench, run_doctor

from .fakes import a10_node

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_matmul_tflops_on_cpu(dtype):
    tflops = bench.matmul_tflops(torch, "cpu", getattr(torch, dtype), n=128, min_time_s=0.05, max_iters=20)
    assert 1e-5 < tflops < 50  # a CPU, not a GPU: positive and far below any data-center GPU


def test_memory_and_host_copies_on_cpu():
    assert bench.memory_bandwidth_gb_s(torch, "cpu", 4 * 1024 * 1024, min_time_s=0.05) > 0.01
    assert bench.host_device_gb_s(torch, "cpu", 4 * 1024 * 1024, min_time_s=0.05) > 0.01


def test_gloo_allreduce_two_local_processes():
    r = bench.allreduce_bus_bandwidth(2, 1024 * 1024, "gloo", iters=3, timeout_s=60)
    assert r["error"] is None, r["error"]
    assert r["world"] == 2 and r["busbw_gb_s"] > 0
    # nccl-tests: busbw = algbw * 2(n-1)/n, which is algbw itself for n = 2
    assert r["busbw_gb_s"] == pytest.approx(r["algbw_gb_s"])
    assert r["algbw_gb_s"] == pytest.approx(1024 * 1024 / r["seconds_per_op"] / 1e9)


def test_allreduce_failure_is_reported_not_raised():
    r = bench.allreduce_bus_bandwidth(2, 1024, "no-such-backend", iters=1, timeout_s=30)
    assert r["busbw_gb_s"] is None and r["error"]


def test_disk_throughput(tmp_path):
    r = bench.disk_throughput_mb_s(str(tmp_path), nbytes=8 * 1024 * 1024, block=1024 * 1024)
    assert r["error"] is None and r["write_mb_s"] > 0
    assert list(tmp_path.iterdir()) == []  # scratch file removed


def test_doctor_bench_cpu_path_end_to_end():
    runner, nvml = a10_node()
    out = io.StringIO()
    code = run_doctor(bench=True, as_json=True, runner=runner, nvml=nvml, out=out, torch_module=torch,
                      bench_options={"device_kind": "cpu", "dtypes": ("bf16",), "allreduce_timeout_s": 60})
    doc = json.loads(out.getvalue())
    b = doc["benchmarks"]
    assert b["device"] == "cpu"
    assert b["matmul_bf16_tflops"]["value"] > 0 and b["memory_bandwidth_gb_s"]["value"] > 0
    assert b["allreduce_busbw_gb_s"]["value"] > 0, b["allreduce_busbw_gb_s"]["error"]
    statuses = {c["id"]: c["status"] for c in doc["checks"]}
    assert statuses["bench.matmul_bf16_tflops"] == "skip"  # CPU numbers are never compared
    assert statuses["bench.allreduce_busbw_gb_s"] == "skip"
    assert doc["facts"]["driver"]["runtime_source"] == "torch"
    # The fake node's driver (CUDA 12.4) may be older than this torch's CUDA: only that may fail.
    assert {k for k, s in statuses.items() if s == "fail"} <= {"driver.runtime"}
    assert code == doc["exit_code"]


def test_doctor_bench_when_torch_cannot_see_the_gpu():
    runner, nvml = a10_node()
    out = io.StringIO()
    cpu_only = types.SimpleNamespace(__version__="2.13.0+cpu", version=types.SimpleNamespace(cuda=None),
                                     cuda=types.SimpleNamespace(is_available=lambda: False))
    code = run_doctor(bench=True, as_json=True, runner=runner, nvml=nvml, out=out, torch_module=cpu_only)
    doc = json.loads(out.getvalue())
    assert "torch cannot use the GPU" in doc["benchmarks"]["error"]
    assert code == 1
