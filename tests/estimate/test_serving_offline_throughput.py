"""Offline maximum serving throughput (large continuous batches) pinned to published figures, and the
physics behind it.

Source of every pin: TensorRT-LLM docs/source/performance/perf-overview.md, v0.14.0 edition ("All data in
the table below was generated using version 0.14.0"): `trtllm-bench throughput`, every request queued at
once, fixed input/output lengths, Total Output Throughput (tokens/s). FP8 engines (`--quantization FP8`)
keep the KV cache in FP8. Cells pinned here are not among the 60 kept as bench group trt014.

Two mechanisms are pinned:
- the GEMMs and the attention kernels of a decode step run one after the other, each on its own roofline
  (at a compute-bound batch the KV reads add to the GEMMs' time instead of hiding under it);
- PCIe cards' NVLink bridges join pairs only: a TP group of 4 or 8 A100-PCIe reduces over PCIe.
"""

from __future__ import annotations

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.estimate.core import estimate
from gpuplan.estimate.serving.decode import ServingCase, decode_step_time
from gpuplan.estimate.shapes import shape_of
from gpuplan.estimate.system import Layout, System, intra_node_link, system_from_workload
from gpuplan.workload import parse_workload


def _offline(model: str, gpu: str, fp8: bool, tp: int, isl: int, osl: int) -> float:
    w = dict(model=model, task="inference", framework="trtllm", prompt_tokens=isl, output_tokens=osl,
             parallel={"tp": tp}, hardware={"gpu": gpu, "count": tp})
    w.update(precision="bf16", quantization="fp8") if fp8 else w.update(precision="fp16")
    return estimate(w).performance["max_output_tokens_per_s"]


@pytest.mark.parametrize("model,gpu,fp8,tp,isl,osl,ref", [
    # before the kernels were summed these read +59 %, +41 % and +37 %
    ("mistralai/Mistral-7B-Instruct-v0.3", "H200-SXM-141GB", True, 1, 128, 2048, 24671.5),
    ("meta-llama/Llama-3.1-70B-Instruct", "H100-SXM-80GB", True, 8, 1000, 1000, 10730.2),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "A100-SXM4-80GB", False, 8, 2048, 2048, 10553.0),
    # an 8 x A100-PCIe TP8 engine read as an NVSwitch box: +228 %
    ("meta-llama/Llama-3.1-70B-Instruct", "A100-PCIe-80GB", False, 8, 128, 128, 1212.1),
])
def test_trtllm_014_offline_throughput(model, gpu, fp8, tp, isl, osl, ref):
    got = _offline(model, gpu, fp8, tp, isl, osl)
    assert abs(got - ref) / ref < 0.25, (got, ref)


def test_pcie_tp8_does_not_scale_like_nvswitch():
    """TRT-LLM 0.14, Llama-3.1-70B FP16 128/128: A100-PCIe TP4 1,272.7 -> TP8 1,212.1 tok/s (the PCIe
    all-reduce bounds it), A100-SXM4 TP4 2,420.9 -> TP8 4,572.3 (NVSwitch)."""
    m = "meta-llama/Llama-3.1-70B-Instruct"
    pcie = _offline(m, "A100-PCIe-80GB", False, 8, 128, 128) / _offline(m, "A100-PCIe-80GB", False, 4, 128, 128)
    sxm = _offline(m, "A100-SXM4-80GB", False, 8, 128, 128) / _offline(m, "A100-SXM4-80GB", False, 4, 128, 128)
    assert pcie < 1.3 < sxm, (pcie, sxm)


@pytest.mark.parametrize("gpu,count,link", [
    ("A100-PCIe-80GB", 2, "nvlink"),   # one bridged pair
    ("A100-PCIe-80GB", 4, "pcie"),
    ("H100-NVL-94GB", 8, "pcie"),
    ("L40S-48GB", 4, "pcie"),          # no NVLink at all
    ("H100-SXM-80GB", 8, "nvswitch"),
    ("H100-SXM-80GB", 1, "none"),
])
def test_intra_node_link_without_instance_type(gpu, count, link):
    assert intra_node_link(get_gpu(gpu), count) == link
    w = parse_workload(dict(model="meta-llama/Llama-3.1-8B-Instruct", task="inference",
                            hardware={"gpu": gpu, "count": count}))
    system, _notes = system_from_workload(w)
    assert system.intra_link == link


def test_kv_reads_are_not_hidden_under_compute_bound_gemms():
    """At a batch where the decode GEMMs are compute-bound, more context still costs its KV reads: the
    step grows by at least the bytes of the extra cache at full bandwidth (the attention kernel runs after
    the GEMMs, not under them)."""
    from gpuplan.catalog.models import resolve_model

    s = shape_of(resolve_model("meta-llama/Llama-3.1-8B-Instruct"))
    case = ServingCase(precision="bf16", quantization="none", kv_dtype_bytes=2.0, framework="trtllm",
                       prompt_tokens=128, output_tokens=128)
    system = System(gpu=get_gpu("H100-SXM-80GB"), gpus_per_node=1, nodes=1, intra_link="none")
    layout = Layout()
    # 2 x 8e9 x 1024 FLOP take ~30 ms at 55 % of 989 TFLOP/s; weights + the whole cache at 192 tokens of
    # context (1024 x 192 x 128 KiB) read in ~15 ms: one maximum over the totals would hide the cache
    batch = 1024
    short = decode_step_time(s, case, layout, system, batch, 64, [])
    long = decode_step_time(s, case, layout, system, batch, 192, [])
    extra_kv_bytes = s.kv_bytes_per_token_16bit * 128 * batch
    floor = extra_kv_bytes / (system.gpu.mem_bandwidth_gb_s * 1e9)
    assert long - short >= floor, (long - short, floor)


def test_decode_gemms_have_their_own_efficiency():
    """A compute-bound decode step (large batch) moves with inference.decode_gemm_efficiency, not with the
    prefill's share of peak (M = batch rows vs thousands of prompt rows)."""
    from gpuplan.catalog.models import resolve_model
    from gpuplan.estimate.params import overrides

    s = shape_of(resolve_model("meta-llama/Llama-3.1-8B-Instruct"))
    case = ServingCase(precision="bf16", quantization="none", kv_dtype_bytes=2.0, framework="trtllm",
                       prompt_tokens=128, output_tokens=128)
    system = System(gpu=get_gpu("H100-SXM-80GB"), gpus_per_node=1, nodes=1, intra_link="none")

    def step() -> float:
        return decode_step_time(s, case, Layout(), system, 1024, 64, [])

    base = step()
    with overrides({"inference.prefill_efficiency": 0.8}):
        assert step() == base
    with overrides({"inference.decode_gemm_efficiency": 0.8}):
        assert step() < 0.85 * base
