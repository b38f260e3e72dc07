"""Memory breakdown: components, hand-computed KV cache, phases, monotonicity."""

import pytest
from hypothesis import given, settings, strategies as st

from gpuplan.estimate.core import estimate
from gpuplan.units import GIB


def test_components_add_up_to_per_gpu_bytes():
    for wl in (
        {"model": "qwen2.5-7b", "task": "lora", "hardware": {"gpu": "A10", "count": 1}},
        {"model": "qwen2.5-7b", "task": "inference", "hardware": {"gpu": "A100-80GB"}},
        {"model": "llama-3.1-8b", "task": "full", "parallel": {"zero": 3}, "hardware": {"gpu": "A100-80GB", "count": 8}},
        {"model": "qwen2.5-7b", "task": "inference", "framework": "transformers", "hardware": {"gpu": "L20"}},
    ):
        mem = estimate(wl).to_dict()["memory"]
        assert sum(mem["components"].values()) == pytest.approx(mem["per_gpu_bytes"], abs=8)
        assert mem["peak_allocated_bytes"] <= mem["peak_reserved_bytes"] <= mem["per_gpu_bytes"]


def test_gqa_kv_cache_matches_hand_computation():
    # Llama-3.1-8B: 32 layers, 8 KV heads of 128 dims -> 2*32*8*128*2 bytes = 128 KiB per token (bf16)
    per_token = 2 * 32 * 8 * 128 * 2
    est = estimate({"model": "llama-3.1-8b", "task": "inference", "framework": "transformers", "batch_size": 8,
                    "prompt_tokens": 3584, "output_tokens": 512, "hardware": {"gpu": "H100", "count": 1}})
    assert est.memory.components["kv_cache"] == per_token * 8 * 4096 == 4 * GIB


def test_fp8_kv_cache_halves_it():
    base = {"model": "llama-3.1-8b", "task": "inference", "framework": "transformers", "batch_size": 4,
            "prompt_tokens": 2048, "output_tokens": 2048, "hardware": {"gpu": "H100"}}
    kv16 = estimate(base).memory.components["kv_cache"]
    kv8 = estimate({**base, "kv_cache_dtype": "fp8"}).memory.components["kv_cache"]
    assert kv8 == kv16 / 2


def test_mla_caches_the_latent_not_the_heads():
    # DeepSeek-V3: 61 layers x (512 + 64) latent values x 2 bytes per token. The latent has no heads to
    # split, so each of the 8 TP ranks keeps all of it (vLLM/SGLang MLA backends), not 1/8.
    est = estimate({"model": "deepseek-ai/DeepSeek-V3", "task": "inference", "framework": "transformers",
                    "quantization": "fp8", "prompt_tokens": 1000, "output_tokens": 24, "hardware": {"gpu": "H200", "count": 8},
                    "parallel": {"tp": 8}})
    assert est.memory.components["kv_cache"] == pytest.approx(61 * 576 * 2 * 1024)


def test_full_finetune_7b_pure_bf16_vs_mixed_precision():
    # ZeRO paper: mixed-precision Adam keeps 16 bytes/param; pure bf16 (HF Trainer with a bf16 model) 8
    common = {"model": "qwen2.5-7b", "task": "full", "seq_len": 512, "hardware": {"gpu": "H200"}}
    pure = estimate({**common, "framework": "llama-factory"}).memory.components
    mixed = estimate({**common, "framework": "deepspeed"}).memory.components
    n = 7.615616512e9
    assert pure["optimizer"] == pytest.approx(4 * n, rel=0.01)
    assert mixed["optimizer"] == pytest.approx(12 * n, rel=0.01)


def test_zero_stages_shard_what_the_paper_says():
    n = 8.030261248e9  # Llama-3.1-8B
    def comp(stage):
        return estimate({"model": "llama-3.1-8b", "task": "full", "framework": "deepspeed", "seq_len": 1024,
                         "parallel": {"zero": stage}, "hardware": {"gpu": "A100-80GB", "count": 8}}).memory.components
    z1, z2, z3 = comp(1), comp(2), comp(3)
    assert z1["optimizer"] == pytest.approx(12 * n / 8, rel=0.01)
    assert z1["weights"] == pytest.approx(2 * n, rel=0.01)
    assert z2["gradients"] <= 2 * n / 8 * 1.01
    # ZeRO-3: the 1/8 shard plus the unsharded parameters in flight (two gathered bf16 layers prefetched,
    # one fp32 reduce-scatter bucket: 8 bytes per parameter of one layer, and DeepSpeed gathering the
    # 525M-parameter embedding or head in bf16, less the 1/8 already held)
    layer = 218_112_000  # Llama-3.1-8B parameters per decoder layer
    head = 128_256 * 4096
    assert z3["weights"] == pytest.approx(2 * n / 8 + 8 * layer + 2 * head * 7 / 8, rel=0.01)


def test_gptq_int4_weights_include_group_scales():
    est = estimate({"model": "qwen2.5-7b", "task": "inference", "quantization": "gptq-int4", "precision": "fp16",
                    "framework": "transformers", "prompt_tokens": 1, "output_tokens": 1, "hardware": {"gpu": "A10"}})
    w = est.memory.components["weights"] / GIB
    # 6.5B block weights at 4 + 20/128 bits + 1.09B embedding/head params in fp16 (Qwen2.5 benchmark: 5.52 GiB peak)
    assert 5.0 < w < 5.4


def test_impossible_workload_is_not_an_error_and_says_what_fits():
    est = estimate({"model": "llama-2-70b", "task": "inference", "hardware": {"gpu": "A10", "count": 1}})
    assert not est.memory.fits
    assert est.memory.shortfall_bytes > 100 * GIB
    text = " ".join(est.suggestions)
    assert "more than" in text and ("quantize" in text or "x A10-24GB" in text)


@settings(max_examples=25, deadline=None)
@given(seq=st.integers(128, 8192), extra=st.integers(1, 4096), batch=st.integers(1, 8))
def test_longer_sequence_or_bigger_batch_never_needs_less_memory(seq, extra, batch):
    base = {"model": "qwen2.5-7b", "task": "lora", "batch_size": batch, "hardware": {"gpu": "H200"}}
    a = estimate({**base, "seq_len": seq}).memory.per_gpu_bytes
    b = estimate({**base, "seq_len": seq + extra}).memory.per_gpu_bytes
    c = estimate({**base, "seq_len": seq, "batch_size": batch + 1}).memory.per_gpu_bytes
    assert b >= a and c >= a


def test_bigger_model_never_needs_less_memory():
    sizes = ["qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b"]
    for task in ("inference", "lora", "full"):
        mems = [estimate({"model": m, "task": task, "hardware": {"gpu": "B200"}}).memory.per_gpu_bytes for m in sizes]
        assert mems == sorted(mems), task


def test_max_fit_is_the_boundary_of_estimates_own_verdict():
    """--max answers with the largest value `estimate` calls "fits" at that value (the allocator's whole reserve
    on the card); the larger values that run only by freeing its cache are a second, looser boundary."""
    from gpuplan.estimate.max_fit import fits_cleanly, max_fit

    wl = {"model": "qwen2.5-7b", "task": "lora", "hardware": {"gpu": "A10"}}
    value, est = max_fit(wl, "seq_len")
    assert value > 1000 and fits_cleanly(est)
    assert fits_cleanly(estimate({**wl, "seq_len": value}))
    assert not fits_cleanly(estimate({**wl, "seq_len": value + 1}))
    loose, est2 = max_fit(wl, "seq_len", clean=False)
    assert loose > value and est2.memory.fits and not fits_cleanly(est2)
    assert not estimate({**wl, "seq_len": loose + 1}).memory.fits
