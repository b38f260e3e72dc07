"""A GPU the catalog lacks, described inline (hardware.gpu mapping, --gpu-spec): estimate runs on it with the
missing figures stated as assumptions; recommend searches catalog instances only and says so."""

from __future__ import annotations

import json

import pytest

from clirun import run_cli
from gpuplan.catalog.hardware.gpu_inline import GpuInlineSpec, inline_gpu, parse_gpu_spec_arg
from gpuplan.catalog.hardware.gpus import get_gpu, resolve_gpu
from gpuplan.errors import GpuplanError
from gpuplan.estimate.clocks import sustained_tensor_fraction
from gpuplan.estimate.core import estimate
from gpuplan.plan import recommend
from gpuplan.workload import parse_workload

# The A10 as its datasheet gives it (data/gpus.yaml), with the share of it the card sustains under load
# (data/efficiency.yaml sustained_tensor, 0.59): an inline copy must estimate exactly like the catalog card.
A10_SUSTAINED = sustained_tensor_fraction(get_gpu("A10-24GB"))
A10 = {"name": "my-A10", "memory_gib": 24, "driver_memory_mib": 23028, "mem_bandwidth_gb_s": 600, "bf16_dense_tflops": 125,
       "fp16_dense_tflops": 125, "fp32_tflops": 31.2, "tf32_dense_tflops": 62.5, "int8_dense_tops": 250,
       "pcie_gen": 4, "architecture": "Ampere", "sustained_tensor_fraction": A10_SUSTAINED}
LORA = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "batch_size": 1}


def test_an_inline_copy_of_a_catalog_card_estimates_like_the_card():
    a10 = get_gpu("A10-24GB")
    assert (a10.mem_bandwidth_gb_s, a10.bf16_dense_tflops, a10.driver_memory_mib) == (600, 125, 23028)
    assert A10_SUSTAINED == pytest.approx((56 / 125) / (237 / 312))    # measured shares, A10 over A100
    catalog = estimate({**LORA, "hardware": {"gpu": "A10"}})
    inline = estimate({**LORA, "hardware": {"gpu": A10}})
    assert inline.system.gpu.id == "my-A10"
    assert inline.memory.per_gpu_bytes == pytest.approx(catalog.memory.per_gpu_bytes, rel=1e-9)
    assert inline.memory.capacity_bytes == catalog.memory.capacity_bytes
    assert inline.to_dict()["performance"]["step_time_s"] == pytest.approx(
        catalog.to_dict()["performance"]["step_time_s"], rel=1e-6)
    assert any("sustains 59% of its datasheet tensor rate" in a for a in inline.assumptions)


def test_an_inline_card_without_a_sustained_fraction_holds_its_datasheet_rate_and_says_so():
    # the sustained table is keyed by catalog id: an inline name never matches it, so the assumption is stated
    plain = estimate({**LORA, "hardware": {"gpu": {k: v for k, v in A10.items() if k != "sustained_tensor_fraction"}}})
    sustained = estimate({**LORA, "hardware": {"gpu": A10}})
    assert any("sustained_tensor_fraction not given, assumed 1" in a for a in plain.assumptions)
    assert not any("sustained_tensor_fraction not given" in a for a in sustained.assumptions)
    # LoRA on one A10 is compute-bound: the sustained card takes longer, by at most 1 / 0.59
    ratio = sustained.performance["step_time_s"] / plain.performance["step_time_s"]
    assert 1.0 < ratio <= 1 / A10_SUSTAINED + 1e-9


def test_missing_dtypes_are_assumed_and_said():
    gpu, notes = inline_gpu(GpuInlineSpec(name="X", memory_gib=24, fp16_dense_tflops=130, mem_bandwidth_gb_s=672))
    assert gpu.bf16_dense_tflops == 130 and gpu.fp32_tflops == pytest.approx(32.5)
    assert gpu.fp8_dense_tflops is None and gpu.tf32_dense_tflops is None
    assert gpu.capacity_bytes == int(24 * 2**30 * 15 / 16)
    text = " ".join(notes)
    for needle in ("bf16_dense_tflops not given", "fp32_tflops not given", "fp8_dense_tflops", "driver_memory_mib"):
        assert needle in text
    # 0 = no such path: a Turing card without BF16 is timed at its FP16 rate, and the estimate says so
    no_bf16, _ = inline_gpu(GpuInlineSpec(name="T", memory_gib=24, fp16_dense_tflops=130, bf16_dense_tflops=0,
                                          mem_bandwidth_gb_s=672))
    assert no_bf16.bf16_dense_tflops is None
    est = estimate({**LORA, "model": "Qwen/Qwen2.5-0.5B-Instruct",
                    "hardware": {"gpu": {"name": "T", "memory_gib": 24, "fp16_dense_tflops": 130, "bf16_dense_tflops": 0,
                                         "mem_bandwidth_gb_s": 672}}})
    assert any("no BF16" in w for w in est.to_dict()["warnings"] + est.assumptions)
    assert any("usable memory assumed" in a for a in est.assumptions)


@pytest.mark.parametrize(("spec", "needle"), [
    ({"name": "X", "memory_gib": 24, "mem_bandwidth_gb_s": 600}, "at least one compute rate"),
    ({"name": "X", "memory_gib": -1, "fp16_dense_tflops": 1, "mem_bandwidth_gb_s": 600}, "memory_gib"),
    ({"name": "X", "memory_gib": 24, "fp16_dense_tflops": 1}, "mem_bandwidth_gb_s"),
    ({"name": "X", "memory_gib": 24, "fp16_dense_tflops": 1, "mem_bandwidth_gb_s": 600, "tflops": 3}, "tflops"),
])
def test_a_bad_inline_spec_is_one_clear_error(spec, needle):
    with pytest.raises(GpuplanError) as err:
        parse_workload({**LORA, "hardware": {"gpu": spec}})
    assert needle in err.value.message + " " + (err.value.hint or "")


def test_recommend_searches_catalog_instances_only_and_says_so():
    with pytest.raises(GpuplanError) as err:
        recommend({**LORA, "hardware": {"gpu": {"name": "Imaginary-9000", "memory_gib": 24, "fp16_dense_tflops": 100,
                                                "mem_bandwidth_gb_s": 700}}})
    assert "catalog" in err.value.message and "gpuplan estimate" in err.value.hint


def test_gpu_spec_flag_reads_key_values_and_files(tmp_path):
    assert parse_gpu_spec_arg("name=TITAN X,memory_gib=12,fp16_dense_tflops=22,mem_bandwidth_gb_s=480,bf16_dense_tflops=0") == {
        "name": "TITAN X", "memory_gib": 12.0, "fp16_dense_tflops": 22.0, "mem_bandwidth_gb_s": 480.0,
        "bf16_dense_tflops": 0.0}
    path = tmp_path / "gpu.yaml"
    path.write_text("hardware:\n  gpu:\n    name: Mine\n    memory_gib: 32\n    bf16_dense_tflops: 200\n"
                    "    mem_bandwidth_gb_s: 1000\n", encoding="utf-8")
    assert parse_gpu_spec_arg(str(path))["name"] == "Mine"
    with pytest.raises(GpuplanError):
        parse_gpu_spec_arg("name=x,memory_gib")
    code, out, err = run_cli("estimate", "--model", "gpt2", "--task", "inference", "--gpu-spec", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["hardware"]["gpu"] == "Mine"
    code, out, err = run_cli("estimate", "--model", "gpt2", "--task", "inference", "--gpu-spec", "name=Mine,memory_gib=32")
    assert code != 0 and "mem_bandwidth_gb_s" in out + err and "Traceback" not in out + err


def test_titan_rtx_is_in_the_catalog():
    gpu, note = resolve_gpu("TITAN RTX")
    # NVIDIA launch specifications: 24 GB GDDR6, 672 GB/s, 16.3 TFLOPS FP32, 130 tensor TFLOPS, no BF16 (Turing)
    assert (gpu.id, gpu.memory_gib, gpu.mem_bandwidth_gb_s, gpu.fp32_tflops) == ("TITAN-RTX-24GB", 24, 672, 16.3)
    assert gpu.fp16_dense_tflops == pytest.approx(130, rel=0.01) and gpu.bf16_dense_tflops is None
    assert note is None or note == ""
