"""Training and inference time against published figures and physical bounds."""

import pytest

from gpuplan.estimate.core import estimate


def test_mfu_never_exceeds_one_and_tokens_per_s_is_consistent():
    est = estimate({"model": "llama-3.1-8b", "task": "full", "framework": "fsdp", "seq_len": 4096, "batch_size": 2,
                    "parallel": {"fsdp": "full_shard"}, "hardware": {"gpu": "H100", "count": 8},
                    "dataset": {"tokens": 1e9}})
    p = est.performance
    assert 0.2 < p["mfu"] < 0.7
    assert p["tokens_per_s"] == pytest.approx(p["tokens_per_s_per_gpu"] * 8)
    assert p["total_time_s"] == pytest.approx(1e9 / p["tokens_per_s"])
    assert p["gpu_hours"] == pytest.approx(p["total_time_s"] * 8 / 3600)


def test_llm_foundry_mpt7b_on_8xa100_is_within_15_percent():
    # llm-foundry benchmarking table: mpt-7b, 8 x A100 80GB, seq 2048, mb 6 -> 4641 tokens/s/GPU (MFU 48%)
    est = estimate({"model": "llm-foundry:mpt-7b", "task": "pretrain", "framework": "llm-foundry", "seq_len": 2048,
                    "batch_size": 6, "grad_checkpointing": False, "parallel": {"fsdp": "full_shard"},
                    "hardware": {"gpu": "A100-SXM4-80GB", "count": 8}})
    assert est.performance["tokens_per_s_per_gpu"] == pytest.approx(4641, rel=0.15)


def test_hf_generate_decode_is_far_slower_than_the_bandwidth_roofline():
    # Qwen2.5 speed benchmark: 7B bf16 on A100, transformers: 40.4 tokens/s; vLLM 84.3 tokens/s.
    # A pure bandwidth roofline (15.2 GB / 2.04 TB/s) would say ~134 tokens/s.
    common = {"model": "qwen2.5-7b", "task": "inference", "prompt_tokens": 1, "output_tokens": 2048,
              "hardware": {"gpu": "A100-SXM4-80GB"}}
    hf = estimate({**common, "framework": "transformers"}).performance["output_tokens_per_s"]
    vllm = estimate({**common, "framework": "vllm"}).performance["output_tokens_per_s"]
    assert hf == pytest.approx(40.4, rel=0.15)
    assert vllm == pytest.approx(84.3, rel=0.15)


def test_tensor_parallel_serving_of_72b():
    # Qwen2.5 speed benchmark: 72B bf16, vLLM, TP 4 on A100 80GB: 31.4 tokens/s
    est = estimate({"model": "qwen2.5-72b", "task": "inference", "framework": "vllm", "prompt_tokens": 1,
                    "output_tokens": 2048, "parallel": {"tp": 4}, "hardware": {"gpu": "A100-SXM4-80GB", "count": 4}})
    assert est.memory.fits
    assert est.performance["output_tokens_per_s"] == pytest.approx(31.4, rel=0.2)


def test_serving_capacity_grows_with_concurrency_until_memory_binds():
    est = estimate({"model": "qwen2.5-7b", "task": "inference", "framework": "vllm", "prompt_tokens": 1024,
                    "output_tokens": 256, "hardware": {"gpu": "A10"}, "serving": {"tpot_ms": 200}})
    p = est.performance
    assert p["max_concurrency"] > 1
    assert p["max_requests_per_s"] > 0


def test_non_llm_profiles():
    sdxl = estimate({"model": "sdxl", "task": "inference", "input": {"image_size": 1024, "steps": 30},
                     "hardware": {"gpu": "A10"}})
    assert sdxl.memory.fits
    assert 2 < sdxl.performance["ttft_s"] < 60  # seconds per image on an A10
    resnet = estimate({"model": "resnet-50", "task": "pretrain", "batch_size": 256, "hardware": {"gpu": "A100-80GB"}})
    assert resnet.memory.fits and resnet.performance["samples_per_s"] > 500
