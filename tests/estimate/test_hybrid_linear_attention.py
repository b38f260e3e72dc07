"""Hybrid models (issue 30, "any model a user names"): Qwen3-Next keeps softmax attention in one layer of four and
Gated DeltaNet in the other three, whose per-sequence state does not grow with the context.

Shapes from Qwen3-Next-80B-A3B-Instruct's config.json (scripts/model-configs/Qwen/...), confirmed by transformers'
printed module tree: in_proj_qkvz 2048 -> 12288, in_proj_ba 2048 -> 64, conv1d over 8192 channels with 4 taps,
out_proj 4096 -> 2048; the full-attention q_proj 2048 -> 8192 (queries and their output gate)."""

from __future__ import annotations

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.memory import state_bytes_per_sequence
from gpuplan.estimate.shapes import shape_of
from gpuplan.estimate.system import Layout
from gpuplan.estimate.training.costs import attention_flops_fwd_per_token

NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"


def test_the_parameter_count_is_the_published_80b_with_3b_active():
    m = resolve_model(NEXT)
    assert m.params_total == pytest.approx(80e9, rel=0.01)            # model card: 80B in total
    assert m.params_active - m.embedding_params() - m.lm_head_params() == pytest.approx(3.0e9, rel=0.1)  # 3B activated
    assert m.full_attention_layers == 12 and m.linear_attention.layers == 36


def test_only_the_full_attention_layers_keep_a_kv_cache_and_the_rest_a_fixed_state():
    m = resolve_model(NEXT)
    assert m.kv_cache_bytes_per_token(2.0) == 2 * 12 * 2 * 256 * 2            # K and V, 12 layers, 2 heads of 256
    # 36 layers x (32 value heads x 128 x 128 state + 3 x 8192 convolution inputs) x 2 bytes
    assert m.recurrent_state_bytes(2.0) == 36 * (32 * 128 * 128 + 3 * 8192) * 2
    s = shape_of(m)
    assert state_bytes_per_sequence(s, Layout(tp=4)) == pytest.approx(m.recurrent_state_bytes(2.0) / 4)


def test_attention_over_the_context_is_counted_in_the_full_attention_layers_only():
    s = shape_of(resolve_model(NEXT))
    assert attention_flops_fwd_per_token(s, 4096) == pytest.approx(4.0 * 12 * 16 * 256 * 4096)


def test_a_long_context_costs_a_hybrid_a_quarter_of_the_kv_a_full_attention_model_of_its_shape_would():
    """The serving estimate's cache per sequence: 12 layers' KV at 32k tokens plus the fixed state, which stays 16-bit
    under an FP8 KV cache (vLLM's mamba_ssm_cache_dtype "auto")."""
    est = estimate({"model": NEXT, "task": "inference", "framework": "vllm", "batch_size": 8, "prompt_tokens": 32000,
                    "output_tokens": 512, "kv_cache_dtype": "fp8", "hardware": {"gpu": "H100-80GB", "count": 4},
                    "parallel": {"tp": 4}})
    m = resolve_model(NEXT)
    per_seq = est.memory.kv_bytes_per_sequence
    assert any("36 of 48 layers are Gated DeltaNet" in a and "37.7 MiB" in a for a in est.assumptions)
    kv = m.kv_cache_bytes_per_token(1.0) * 32512 / 2      # 2 KV heads over TP 4: one head per rank
    assert per_seq == pytest.approx(kv + m.recurrent_state_bytes(2.0) / 4, rel=0.01)


def test_lora_adapts_the_linear_attention_projections_too():
    m = resolve_model(NEXT)
    names = {n for n, *_ in m.linear_shapes_per_layer("all-linear")}
    assert {"linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.out_proj", "q_proj"} <= names
    q = [(i, o, c) for n, i, o, c in m.linear_shapes_per_layer("q_proj") if n == "q_proj"]
    assert q == [(2048, 8192, pytest.approx(12 / 48))]


def test_the_coder_and_thinking_variants_and_moonlight_resolve_offline():
    for name in ("Qwen/Qwen3-Coder-Next", "Qwen/Qwen3-Next-80B-A3B-Thinking"):
        assert resolve_model(name).linear_attention is not None
    moon = resolve_model("moonshotai/Moonlight-16B-A3B")
    assert moon.mla is not None and moon.params_total == pytest.approx(16e9, rel=0.05)


def test_a_qwen3_next_config_with_every_layer_full_attention_is_an_ordinary_decoder():
    import json
    from pathlib import Path

    from gpuplan.catalog.configs.hf_config import from_hf_config

    path = Path(__file__).resolve().parents[2] / "scripts" / "model-configs" / "Qwen" / "Qwen3-Next-80B-A3B-Instruct"
    cfg = {**json.loads((path / "config.json").read_text()), "full_attention_interval": 1}
    spec = from_hf_config(cfg, "all-full")
    assert spec.linear_attention is None and spec.kv_cache_bytes_per_token(2.0) == 2 * 48 * 2 * 256 * 2


def test_a_pre_ampere_gpu_says_its_linear_attention_kernels_are_unconfirmed():
    """Qwen3-Next's Gated DeltaNet kernels are Triton code written for Ampere and later (fla, vLLM and SGLang's
    copies); whether they run on a V100 or T4 is not confirmed, and the estimate says so instead of staying silent."""
    from gpuplan.estimate.core import estimate

    w = {"model": "Qwen/Qwen3-Next-80B-A3B-Instruct", "task": "inference", "precision": "fp16",
         "prompt_tokens": 1000, "output_tokens": 200}
    v100 = estimate({**w, "hardware": {"gpu": "V100-32GB", "count": 8}})
    assert any("linear-attention layers run on Triton kernels" in x and "unconfirmed" in x for x in v100.warnings)
    a100 = estimate({**w, "hardware": {"gpu": "A100-80GB", "count": 2}})
    assert not any("linear-attention layers" in x for x in a100.warnings)
    dense = estimate({**w, "model": "Qwen/Qwen2.5-7B-Instruct", "hardware": {"gpu": "V100-32GB"}})
    assert not any("linear-attention layers" in x for x in dense.warnings)
