"""Models and GPUs held-out set 17 named that the catalog lacked (read from their published configs and datasheets;
scripts/model-configs/*/source.json and data/gpus.yaml say where each came from and what is unconfirmed)."""

from __future__ import annotations

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.catalog.models import resolve_model


@pytest.mark.parametrize("model,published,rel", [
    ("google/gemma-4-31B-it", 31_273_088_876, 0.03),           # safetensors total (the 512-wide global heads: -2 %)
    ("Qwen/Qwen3-VL-8B-Instruct", 8_767_123_696, 0.03),        # safetensors total
    ("Qwen/Qwen3-VL-30B-A3B-Instruct", 31_070_754_032, 0.01),  # safetensors total
    ("ibm/PowerLM-3b", 3.5e9, 0.01),                           # Power Scheduler paper, Table 4
])
def test_parameter_counts_meet_the_published_ones(model, published, rel):
    assert resolve_model(model).params_total == pytest.approx(published, rel=rel)


def test_qwen3_vl_is_read_as_a_qwen3_language_model_with_its_vision_tower():
    spec = resolve_model("Qwen/Qwen3-VL-30B-A3B-Instruct")
    assert spec.arch == "qwen3moe" and spec.moe is not None and spec.moe.experts_per_token == 8
    assert 0.3e9 < spec.vision_params < 0.6e9
    assert not any("is not one gpuplan knows" in a for a in spec.assumptions)


def test_gemma4_moe_keeps_its_dense_mlp_and_says_what_is_not_modelled():
    spec = resolve_model("google/gemma-4-26B-A4B-it")
    assert spec.moe.num_experts == 128 and spec.moe.experts_per_token == 8      # top_k_experts
    assert spec.moe.shared_experts == 1 and spec.moe.shared_expert_intermediate_size == 2112
    assert any("KV-shared layers" in a for a in spec.assumptions)
    assert any("KV-shared layers" in a for a in resolve_model("google/gemma-4-E4B-it").assumptions)


def test_the_two_gpus():
    h = get_gpu("H100-SXM-96GB")
    assert (h.id, h.memory_gib, h.peak_tflops("bf16")) == ("H100-96GB", 96, 989.4)
    g = get_gpu("GB10")
    assert g.id == "GB10-128GB" and g.mem_bandwidth_gb_s == 273
    assert "bf16_dense_tflops" in g.unconfirmed                 # derived from a sparse FP4 figure
