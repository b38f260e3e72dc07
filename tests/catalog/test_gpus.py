"""The GPU catalog: every entry sourced, dense figures pinned to NVIDIA datasheets, names resolve."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.catalog.hardware import gpus as catalog
from gpuplan.catalog.hardware.gpus import GpuSpec, get_gpu, load_gpus, parse_gpu_catalog, resolve_gpu
from gpuplan.errors import GpuplanError
from gpuplan.units import GIB, MIB

# the canonical GPU ids every catalog refers to (docs/catalog-schema.md).
CANONICAL_IDS = [
    "A10-24GB", "A10G-24GB", "A30-24GB", "A100-PCIe-40GB", "A100-SXM4-40GB", "A100-PCIe-80GB",
    "A100-SXM4-80GB", "A800-PCIe-40GB", "A800-PCIe-80GB", "A800-SXM4-80GB", "H100-SXM-80GB",
    "H100-PCIe-80GB", "H100-NVL-94GB", "H800-SXM-80GB", "H800-PCIe-80GB", "H20-96GB",
    "H200-SXM-141GB", "H200-NVL-141GB", "B200-SXM-180GB", "L20-48GB", "L40S-48GB", "L40-48GB",
    "L4-24GB", "T4-16GB", "V100-SXM2-16GB", "V100-SXM2-32GB", "V100-PCIe-16GB", "V100-PCIe-32GB",
    "P100-PCIe-16GB", "P100-SXM2-16GB", "P4-8GB", "A16-16GB", "M40-12GB", "RTX4090-24GB",
    "RTX3090Ti-24GB", "RTX3090-24GB", "RTXA6000-48GB", "RTX6000Ada-48GB", "TITAN-RTX-24GB", "Blackwell-Pro-72GB",
    "Blackwell-Pro-48GB", "GB200-186GB", "GB300-288GB", "B300-SXM-288GB",
    # consumer and workstation cards users name (docs/hardware-facts.md, "Consumer and workstation cards")
    "RTX5090-32GB", "RTX4080-16GB", "RTX4070Ti-12GB", "RTX4060Ti-16GB", "RTX3080Ti-12GB", "RTX3080-10GB",
    "RTX3070Ti-8GB", "RTX3060-12GB", "RTX2080Ti-11GB", "RTXA5000-24GB", "A40-48GB",
    "RTX4090D-24GB",
    # parts held-out set 17 named (data/gpus.yaml: the 96 GB H100 of Meta's fleet and GH200; DGX Spark's GB10)
    "H100-96GB", "GB10-128GB",
]

GPUS = load_gpus()


def _raw_catalog() -> dict:
    text = (catalog.resources.files("gpuplan") / "data" / "gpus.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


# ----------------------------------------------------------------------------- catalog shape


def test_ids_are_exactly_the_canonical_list():
    assert sorted(GPUS) == sorted(CANONICAL_IDS)


@pytest.mark.parametrize("gpu_id", CANONICAL_IDS)
def test_every_entry_has_a_source_url(gpu_id):
    spec = GPUS[gpu_id]
    assert spec.sources
    assert all(s.startswith("https://") or s.startswith("http://") for s in spec.sources)


@pytest.mark.parametrize("gpu_id", CANONICAL_IDS)
def test_to_dict_is_json_ready_and_complete(gpu_id):
    d = GPUS[gpu_id].to_dict()
    json.dumps(d)
    for key in (
        "id", "name", "architecture", "memory_gib", "memory_type", "mem_bandwidth_gb_s", "fp32_tflops",
        "tf32_dense_tflops", "fp16_dense_tflops", "bf16_dense_tflops", "fp8_dense_tflops",
        "int8_dense_tops", "nvlink_gb_s", "pcie_gen", "tdp_w", "mig", "mig_instances",
        "capacity_bytes", "sources", "unconfirmed",
    ):
        assert key in d, key
    assert d["id"] == gpu_id
    assert isinstance(d["capacity_bytes"], int) and d["capacity_bytes"] > 0


def test_gpuspec_is_frozen():
    with pytest.raises(AttributeError):
        GPUS["A10-24GB"].memory_gib = 28  # type: ignore[misc]


@pytest.mark.parametrize("gpu_id", CANONICAL_IDS)
def test_driver_memory_never_exceeds_nominal_by_much(gpu_id):
    # nvidia-smi reports at most the physical memory; B200 (180 GB usable of 192 GB HBM) and H200
    # (141 GB) report slightly more MiB than nominal "GB" x 1024.
    spec = GPUS[gpu_id]
    assert spec.capacity_bytes <= spec.memory_gib * GIB * 1.02


# ----------------------------------------------------------------------------- pinned values


def test_a10_datasheet_values_are_dense():
    # https://www.nvidia.com/en-us/data-center/products/a10-gpu/ : BF16 125 | 250* (sparse)
    a10 = get_gpu("A10")
    assert a10.id == "A10-24GB"
    assert a10.bf16_dense_tflops == 125
    assert a10.peak_tflops("bf16") == 125
    assert a10.bf16_dense_tflops != 250  # never the sparse figure
    assert a10.mem_bandwidth_gb_s == 600
    assert a10.peak_tflops("fp8") is None
    assert a10.fp8_dense_tflops is None
    assert a10.mig is False and a10.mig_instances == 0
    assert a10.memory_gib == 24
    assert a10.capacity_bytes == 23028 * MIB


def test_a100_sxm4_80gb():
    # A100 datasheet: BF16 312 | 624*, 2,039 GB/s, MIG up to 7.
    a100 = GPUS["A100-SXM4-80GB"]
    assert a100.bf16_dense_tflops == 312
    assert a100.mem_bandwidth_gb_s == 2039
    assert a100.mig is True and a100.mig_instances == 7
    assert a100.fp8_dense_tflops is None
    assert a100.capacity_bytes == 81920 * MIB


def test_h100_sxm_bf16_is_dense():
    # H100 datasheet: BF16 1,979* with sparsity -> 989.4 dense.
    h100 = GPUS["H100-SXM-80GB"]
    assert h100.bf16_dense_tflops == pytest.approx(989.4, abs=0.5)
    assert h100.peak_tflops("fp8") == pytest.approx(1978.9, abs=1)
    assert h100.capacity_bytes == 81559 * MIB


@pytest.mark.parametrize(
    ("gpu_id", "sparse_bf16"),
    [("A10-24GB", 250), ("A100-SXM4-80GB", 624), ("H100-SXM-80GB", 1979), ("L4-24GB", 242),
     ("L40S-48GB", 733), ("H200-SXM-141GB", 1979), ("A30-24GB", 330)],
)
def test_sparse_figures_are_never_stored(gpu_id, sparse_bf16):
    assert GPUS[gpu_id].bf16_dense_tflops < sparse_bf16 * 0.75


@pytest.mark.parametrize("gpu_id", ["V100-SXM2-16GB", "V100-SXM2-32GB", "V100-PCIe-32GB", "T4-16GB", "P100-PCIe-16GB"])
def test_pre_ampere_gpus_have_no_bf16_tf32_or_fp8(gpu_id):
    spec = GPUS[gpu_id]
    assert spec.peak_tflops("bf16") is None
    assert spec.peak_tflops("tf32") is None
    assert spec.peak_tflops("fp8") is None


@pytest.mark.parametrize("gpu_id", [g for g in CANONICAL_IDS if GPUS[g].architecture == "Ampere"])
def test_ampere_has_no_fp8(gpu_id):
    assert GPUS[gpu_id].fp8_dense_tflops is None


def test_rtx4090_uses_fp32_accumulate_rate():
    # Ada whitepaper: FP16 tensor with FP32 accumulate 165.2 dense (330.3 with FP16 accumulate).
    assert GPUS["RTX4090-24GB"].fp16_dense_tflops == pytest.approx(165.2)


def test_peak_tflops_fp32_and_int4():
    a10 = GPUS["A10-24GB"]
    assert a10.peak_tflops("fp32") == 31.2
    assert a10.peak_tflops("int4") == 500  # A10 datasheet INT4 500 dense
    assert GPUS["T4-16GB"].peak_tflops("int4") == 260  # T4 datasheet INT4 260
    assert GPUS["H100-SXM-80GB"].peak_tflops("int4") is None  # no INT4 tensor rate on Hopper
    with pytest.raises(GpuplanError):
        a10.peak_tflops("fp64")


def test_capacity_falls_back_to_documented_factor():
    spec = GPUS["A800-PCIe-40GB"]
    assert spec.driver_memory_mib is None
    assert "driver_memory_mib" in spec.unconfirmed
    assert spec.capacity_bytes == int(40 * GIB * catalog.UNKNOWN_DRIVER_MEMORY_FACTOR)


def test_mig_matches_nvidia_mig_guide_for_data_center_parts():
    mig = {g for g, s in GPUS.items() if s.mig}
    assert {"A100-SXM4-80GB", "A100-PCIe-40GB", "A30-24GB", "H100-SXM-80GB", "H20-96GB", "H200-SXM-141GB",
            "B200-SXM-180GB"} <= mig
    assert not mig & {"A10-24GB", "A10G-24GB", "L20-48GB", "L40S-48GB", "L4-24GB", "T4-16GB", "V100-SXM2-32GB"}
    assert GPUS["A30-24GB"].mig_instances == 4


# ----------------------------------------------------------------------------- name resolution


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("A10", "A10-24GB"),
        ("a10", "A10-24GB"),
        ("NVIDIA A10", "A10-24GB"),
        ("A10-24GB", "A10-24GB"),
        ("a10_24gb", "A10-24GB"),
        ("A10G", "A10G-24GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("NVIDIA L20", "L20-48GB"),
        ("Tesla T4", "T4-16GB"),
        ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB"),
        ("Tesla V100-PCIE-32GB", "V100-PCIe-32GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
        ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
        ("NVIDIA H100 NVL", "H100-NVL-94GB"),
        ("NVIDIA H20", "H20-96GB"),
        ("NVIDIA H200", "H200-SXM-141GB"),
        ("NVIDIA H200 NVL", "H200-NVL-141GB"),
        ("NVIDIA H800", "H800-SXM-80GB"),
        ("NVIDIA B200", "B200-SXM-180GB"),
        ("NVIDIA GeForce RTX 4090", "RTX4090-24GB"),
        ("NVIDIA GeForce RTX 3090 Ti", "RTX3090Ti-24GB"),
        ("NVIDIA RTX A6000", "RTXA6000-48GB"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX6000Ada-48GB"),
        ("NVIDIA A800-SXM4-80GB", "A800-SXM4-80GB"),
        ("NVIDIA A800 80GB PCIe", "A800-PCIe-80GB"),
        ("Tesla P4", "P4-8GB"),
        ("  l40s  ", "L40S-48GB"),
        ("L40", "L40-48GB"),
        ("L4", "L4-24GB"),
    ],
)
def test_exact_names_resolve_without_assumption(name, gpu_id):
    spec, assumed = resolve_gpu(name)
    assert spec.id == gpu_id
    assert assumed is None


@pytest.mark.parametrize(
    ("name", "gpu_id", "assumed_part"),
    [
        ("A100-80GB", "A100-SXM4-80GB", "SXM4 assumed"),
        ("a100 80g", "A100-SXM4-80GB", "SXM4 assumed"),
        ("A100 80G", "A100-SXM4-80GB", "SXM4 assumed"),
        ("NVIDIA A100 80GB", "A100-SXM4-80GB", "SXM4 assumed"),
        ("A100", "A100-SXM4-80GB", "SXM4 80GB assumed"),
        ("a100-40gb", "A100-SXM4-40GB", "SXM4 assumed"),
        ("H100", "H100-SXM-80GB", "SXM5 assumed"),
        ("V100", "V100-SXM2-16GB", "SXM2 16GB assumed"),
        ("H200", "H200-SXM-141GB", "SXM5 assumed"),
    ],
)
def test_partial_names_say_what_was_assumed(name, gpu_id, assumed_part):
    spec, assumed = resolve_gpu(name)
    assert spec.id == gpu_id
    assert assumed is not None
    assert assumed.startswith(f"{name.strip()!r} resolved to {gpu_id} (")
    assert assumed_part in assumed


def test_a10_never_resolves_to_a100_or_a10g():
    for name in ("A10", "a10", "NVIDIA A10", "a-10", "A 10"):
        assert get_gpu(name).id == "A10-24GB"


def test_every_alias_and_id_resolves_to_its_own_gpu():
    for gpu_id, spec in GPUS.items():
        for name in (gpu_id, *spec.aliases):
            assert get_gpu(name).id == gpu_id, name


def test_unknown_name_has_did_you_mean_hint():
    with pytest.raises(GpuplanError) as info:
        resolve_gpu("A1OO 80GB")
    assert "Unknown GPU" in info.value.message
    assert "Did you mean" in info.value.hint
    assert "gpuplan gpus" in info.value.hint


def test_non_text_name_is_a_user_error():
    with pytest.raises(GpuplanError):
        resolve_gpu(None)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_random_strings_resolve_or_raise_gpuplan_error(name):
    try:
        spec, assumed = resolve_gpu(name)
    except GpuplanError:
        return
    assert isinstance(spec, GpuSpec)
    assert assumed is None or isinstance(assumed, str)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(GPUS)), st.sampled_from([str.lower, str.upper, lambda s: s.replace("-", " "),
                                                       lambda s: s.replace("-", "_"), lambda s: f"NVIDIA {s}"]))
def test_id_spelling_variants_resolve(gpu_id, variant):
    assert get_gpu(variant(gpu_id)).id == gpu_id


# ----------------------------------------------------------------------------- validation


def test_malformed_catalogs_raise_gpuplan_error():
    good = _raw_catalog()
    parse_gpu_catalog(copy.deepcopy(good))  # the shipped file passes

    def broken(mutate):
        data = copy.deepcopy(good)
        mutate(data)
        with pytest.raises(GpuplanError):
            parse_gpu_catalog(data)

    broken(lambda d: d["gpus"][0].update(sources=[]))
    broken(lambda d: d["gpus"][0].update(sources=["not a url"]))
    broken(lambda d: d["gpus"][0].pop("memory_gib"))
    broken(lambda d: d["gpus"][0].update(memory_gib="24"))
    broken(lambda d: d["gpus"][0].update(mem_bandwidth_gb_s=None))  # every estimate divides by it
    broken(lambda d: d["gpus"][0].update(bf16_dense_tflops=-1))
    broken(lambda d: d["gpus"][0].update(surprise=1))
    broken(lambda d: d["gpus"][0].update(unconfirmed=["not_a_field"]))
    broken(lambda d: d["gpus"][0].update(compute_capability=8.6))
    broken(lambda d: d["gpus"][1].update(aliases=["A10"]))  # alias of another GPU
    broken(lambda d: d["gpus"].append(copy.deepcopy(d["gpus"][0])))  # duplicate id
    broken(lambda d: d["partial_names"].append({"name": "X1", "gpu": "NOPE", "assumed": "x"}))
    broken(lambda d: d.pop("gpus"))
    with pytest.raises(GpuplanError):
        parse_gpu_catalog(["not", "a", "mapping"])


def test_blackwell_rack_and_ultra_parts_are_dense_datasheet_figures():
    # GB200 NVL72: 360 PFLOPS sparse BF16 over 72 GPUs; HGX B300: 36 PFLOPS sparse BF16 over 8 GPUs.
    assert GPUS["GB200-186GB"].bf16_dense_tflops == 360_000 / 72 / 2
    assert GPUS["GB300-288GB"].fp4_dense_tflops == 1_080_000 / 72
    assert GPUS["B300-SXM-288GB"].bf16_dense_tflops == 36_000 / 8 / 2
    assert GPUS["B300-SXM-288GB"].memory_gib == 288 and GPUS["B300-SXM-288GB"].mem_bandwidth_gb_s == 8000
