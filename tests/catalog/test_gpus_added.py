"""The consumer / workstation GPUs added to data/gpus.yaml: names resolve, sourced figures are pinned.

Pinned values and where they come from (see each entry's `sources` and `notes`):
- RTX 2080 Ti: NVIDIA "Turing Architecture In-Depth" (the Turing whitepaper's Table 1), reference-clock column:
  616 GB/s, FP32 13.4, FP16 tensor 107.6 with FP16 accumulate / 53.8 with FP32 accumulate, INT8 215.2, 250 W,
  NVLink 100 GB/s bidirectional.
- RTX 5090: RTX Blackwell whitepaper Table 3: BF16/FP16 with FP32 accumulate 209.5/419, FP8 with FP32 accumulate
  419 (838 with FP16 accumulate), FP4 1676/3352; 1,792 GB/s, 575 W.
- A40: NVIDIA A40 datasheet: 696 GB/s, FP32 37.4, TF32 74.8 | 149.6*, BF16 (FP32 accumulate) 149.7 | 299.4*,
  INT8 299.3 | 598.6*, NVLink 112.5 GB/s, 300 W (* = with sparsity).
"""

from __future__ import annotations

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu, load_gpus, resolve_gpu

GPUS = load_gpus()

# id -> two names users type for it (one short, one as nvidia-smi / torch.cuda.get_device_name() prints it).
ADDED = {
    "RTX2080Ti-11GB": ("2080Ti", "NVIDIA GeForce RTX 2080 Ti"),
    "RTX3060-12GB": ("RTX3060-12GB", "NVIDIA GeForce RTX 3060"),
    "RTX3070Ti-8GB": ("RTX 3070 Ti", "NVIDIA GeForce RTX 3070 Ti"),
    "RTX3080-10GB": ("RTX 3080", "NVIDIA GeForce RTX 3080"),
    "RTX3080Ti-12GB": ("3080 Ti", "NVIDIA GeForce RTX 3080 Ti"),
    "RTX4080-16GB": ("RTX 4080", "NVIDIA GeForce RTX 4080"),
    "RTX4070Ti-12GB": ("rtx 4070 ti", "NVIDIA GeForce RTX 4070 Ti"),
    "RTX4060Ti-16GB": ("RTX 4060 Ti 16GB", "GeForce RTX 4060 Ti 16GB"),
    "RTX5090-32GB": ("5090", "NVIDIA GeForce RTX 5090"),
    "RTX4090D-24GB": ("4090D", "NVIDIA GeForce RTX 4090 D"),
    "A40-48GB": ("A40", "NVIDIA A40"),
    "RTXA5000-24GB": ("A5000", "NVIDIA RTX A5000"),
}

GEFORCE = [g for g in ADDED if GPUS[g].name.startswith("NVIDIA GeForce")]


@pytest.mark.parametrize("gpu_id", sorted(ADDED))
def test_added_gpu_resolves_from_two_aliases_without_assumption(gpu_id):
    for name in ADDED[gpu_id]:
        spec, assumed = resolve_gpu(name)
        assert spec.id == gpu_id, name
        assert assumed is None, name
    assert get_gpu(gpu_id).id == gpu_id


def test_added_names_do_not_steal_existing_cards():
    assert get_gpu("RTX 3090").id == "RTX3090-24GB"
    assert get_gpu("RTX 3090 Ti").id == "RTX3090Ti-24GB"
    assert get_gpu("RTX 4090").id == "RTX4090-24GB"
    assert get_gpu("NVIDIA GeForce RTX 4090").id == "RTX4090-24GB"
    assert get_gpu("4090").id == "RTX4090-24GB"
    assert get_gpu("RTX A6000").id == "RTXA6000-48GB"
    assert get_gpu("L40").id == "L40-48GB"
    assert resolve_gpu("RTX 6000")[0].id == "RTX6000Ada-48GB"


def test_rtx_4060_ti_without_memory_is_not_guessed():
    # nvidia-smi prints the same name for the 8 GB and 16 GB cards; only the 16 GB one is catalogued.
    assert "RTX 4060 Ti" not in GPUS["RTX4060Ti-16GB"].aliases
    assert "NVIDIA GeForce RTX 4060 Ti" not in GPUS["RTX4060Ti-16GB"].aliases


@pytest.mark.parametrize("gpu_id", sorted(ADDED))
def test_added_entries_are_sourced_and_dense(gpu_id):
    spec = GPUS[gpu_id]
    assert spec.sources and all(s.startswith("https://") for s in spec.sources)
    assert spec.notes
    assert spec.mig_instances == 0
    assert spec.capacity_bytes > 0
    # every tensor figure present is dense: FP16 never above INT8/2 (a sparse FP16 figure would equal dense INT8);
    # 1 % for the datasheets' rounding (A40: 149.7 vs 299.3 / 2)
    if spec.int8_dense_tops is not None and spec.fp16_dense_tflops is not None:
        assert spec.fp16_dense_tflops <= spec.int8_dense_tops / 2 * 1.01


def test_rtx_2080_ti_turing_table_values():
    spec = GPUS["RTX2080Ti-11GB"]
    assert spec.architecture == "Turing" and spec.compute_capability == "7.5"
    assert spec.memory_gib == 11                # 11264 MB GDDR6
    assert spec.mem_bandwidth_gb_s == 616
    assert spec.fp32_tflops == pytest.approx(13.4)
    assert spec.fp16_dense_tflops == pytest.approx(53.8)   # FP32 accumulate, reference clock
    assert spec.int8_dense_tops == pytest.approx(215.2)
    assert spec.peak_tflops("int4") == pytest.approx(430.4)  # whitepaper 430.3 (rounding of 2 x 215.15)
    assert spec.nvlink_gb_s == 100
    assert spec.tdp_w == 250
    assert spec.pcie_gen == 3
    assert spec.unconfirmed == ()              # every figure printed by NVIDIA


def test_turing_has_no_bf16_tf32_or_fp8():
    spec = GPUS["RTX2080Ti-11GB"]
    for dtype in ("bf16", "tf32", "fp8", "fp4"):
        assert spec.peak_tflops(dtype) is None, dtype


def test_rtx_5090_blackwell_table_values():
    spec = GPUS["RTX5090-32GB"]
    assert spec.architecture == "Blackwell" and spec.compute_capability == "12.0"
    assert spec.memory_gib == 32 and spec.memory_type == "GDDR7"
    assert spec.mem_bandwidth_gb_s == 1792
    assert spec.bf16_dense_tflops == pytest.approx(209.5)   # 209.5/419 dense/sparse, FP32 accumulate
    assert spec.fp16_dense_tflops == pytest.approx(209.5)
    assert spec.fp8_dense_tflops == pytest.approx(419)      # FP32 accumulate (838 with FP16 accumulate)
    assert spec.fp4_dense_tflops == pytest.approx(1676)     # 3352 "AI TOPS" is the sparse figure
    assert spec.fp4_dense_tflops != 3352
    assert spec.tdp_w == 575 and spec.pcie_gen == 5


def test_rtx_4090_d_is_the_4090_cut_to_114_sms():
    # China-market AD102-250: 114 of the 4090's 128 SMs at the same 2,520 MHz boost, the same 24 GB GDDR6X at
    # 1,008 GB/s, 425 W. Throughputs are the 4090's scaled by 114/128 (no NVIDIA table read: unconfirmed).
    d, full = GPUS["RTX4090D-24GB"], GPUS["RTX4090-24GB"]
    assert d.architecture == full.architecture == "Ada Lovelace" and d.compute_capability == "8.9"
    assert (d.memory_gib, d.memory_type, d.mem_bandwidth_gb_s) == (24, "GDDR6X", 1008)
    assert d.tdp_w == 425 and d.pcie_gen == 4 and d.nvlink_gb_s is None
    for field in ("fp32_tflops", "tf32_dense_tflops", "fp16_dense_tflops", "bf16_dense_tflops", "fp8_dense_tflops",
                  "int8_dense_tops"):
        assert getattr(d, field) == pytest.approx(getattr(full, field) * 114 / 128, rel=0.002), field
        assert field in d.unconfirmed
    assert d.fp16_dense_tflops == pytest.approx(147.1)      # FP32 accumulate (294.2 with FP16 accumulate)
    assert d.fp8_dense_tflops * 2 * 8 < 4800 < full.fp8_dense_tflops * 2 * 8   # export TPP limit (FP16-acc FP8 x 8 bits)


def test_a40_datasheet_values_and_full_rate_fp32_accumulate():
    spec = GPUS["A40-48GB"]
    assert spec.mem_bandwidth_gb_s == 696
    assert spec.fp32_tflops == pytest.approx(37.4)
    assert spec.tf32_dense_tflops == pytest.approx(74.8)
    assert spec.bf16_dense_tflops == pytest.approx(149.7)   # BF16 with FP32 accumulate, dense
    assert spec.bf16_dense_tflops < 299.4 * 0.75           # never the sparse figure
    assert spec.int8_dense_tops == pytest.approx(299.3)
    assert spec.nvlink_gb_s == 112.5 and spec.tdp_w == 300
    assert spec.unconfirmed == ()
    # data-center card: FP16 with FP32 accumulate is not halved, so FP16 == BF16 == 2 x TF32
    assert spec.fp16_dense_tflops == spec.bf16_dense_tflops == pytest.approx(2 * spec.tf32_dense_tflops, rel=1e-3)


# FP16 tensor rate with FP16 accumulate (dense) from the same sources; GeForce stores the FP32-accumulate rate,
# which is half of it.
FP16_ACCUMULATE = {
    "RTX2080Ti-11GB": 107.6,   # Turing Table 1, reference clock
    "RTX3080-10GB": 119.0,     # 272 TC x 256 FLOP/clk x 1.71 GHz
    "RTX3080Ti-12GB": 136.4,   # 320 TC x 256 x 1.665 GHz
    "RTX3070Ti-8GB": 87.0,     # 192 TC x 256 x 1.77 GHz
    "RTX3060-12GB": 51.0,      # 112 TC x 256 x 1.777 GHz (the launch report's 101 sparse / 2)
    "RTX4080-16GB": 194.9,     # "FP16 TFLOPS with sparsity 390" / 2
    "RTX4070Ti-12GB": 160.4,   # 240 TC x 256 x 2.61 GHz
    "RTX4060Ti-16GB": 88.3,    # 136 TC x 256 x 2.535 GHz
    "RTX5090-32GB": 419.0,     # Blackwell whitepaper Table 3
    "RTX4090D-24GB": 294.2,    # 456 TC x 256 x 2.52 GHz (the RTX 4090's 330.3 x 114/128 SMs)
}


def test_every_added_geforce_card_has_an_fp16_accumulate_reference():
    assert sorted(FP16_ACCUMULATE) == sorted(GEFORCE)


@pytest.mark.parametrize("gpu_id", sorted(FP16_ACCUMULATE))
def test_geforce_fp16_is_stored_at_the_fp32_accumulate_rate(gpu_id):
    spec = GPUS[gpu_id]
    fp16_acc = FP16_ACCUMULATE[gpu_id]
    assert spec.fp16_dense_tflops < fp16_acc
    assert spec.fp16_dense_tflops == pytest.approx(fp16_acc / 2, rel=0.01)
    if spec.bf16_dense_tflops is not None:      # BF16 only exists with FP32 accumulate
        assert spec.bf16_dense_tflops == spec.fp16_dense_tflops
    assert "accumulate" in spec.notes.lower()


@pytest.mark.parametrize("gpu_id", sorted(ADDED))
def test_datatypes_follow_the_architecture(gpu_id):
    spec = GPUS[gpu_id]
    arch = spec.architecture
    if arch == "Turing":
        assert spec.bf16_dense_tflops is None and spec.tf32_dense_tflops is None and spec.fp8_dense_tflops is None
    elif arch == "Ampere":
        assert spec.fp8_dense_tflops is None and spec.fp4_dense_tflops is None
        assert spec.bf16_dense_tflops is not None and spec.tf32_dense_tflops is not None
    elif arch == "Ada Lovelace":
        assert spec.fp8_dense_tflops is not None and spec.fp4_dense_tflops is None
        assert spec.fp8_dense_tflops == pytest.approx(2 * spec.fp16_dense_tflops, rel=0.01)
    elif arch == "Blackwell":
        assert spec.fp8_dense_tflops is not None and spec.fp4_dense_tflops is not None
    else:  # pragma: no cover - a new architecture needs a rule here
        pytest.fail(arch)


def test_workstation_cards_run_fp32_accumulate_at_full_rate():
    # RTX A5000 datasheet: "Tensor Performance 222.2 TFLOPS" (FP16, with sparsity) -> 111.1 dense,
    # stored as the FP16/BF16 rate because professional GA102 cards do not halve FP32 accumulate.
    a5000 = GPUS["RTXA5000-24GB"]
    assert a5000.fp16_dense_tflops == pytest.approx(222.2 / 2, abs=0.05)
    assert a5000.bf16_dense_tflops == a5000.fp16_dense_tflops
    assert a5000.mem_bandwidth_gb_s == 768 and a5000.tdp_w == 230
    assert {"fp16_dense_tflops", "bf16_dense_tflops"} <= set(a5000.unconfirmed)
