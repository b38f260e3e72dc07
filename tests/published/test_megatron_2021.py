"""Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters"."""

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import shape_of
from gpuplan.estimate.training.costs import flops_per_token
from gpuplan.catalog.models import resolve_model

DAY = 86400


def test_eq4_gpt3_175b_on_1024_a100_at_140_tflops_takes_about_34_days():
    # eq. 4: end-to-end time ~ 8*T*P / (n*X), T = 300e9 tokens, X = 140 TFLOP/s per GPU
    model = resolve_model("megatron-lm:gpt-175b")
    _, hw = flops_per_token(shape_of(model), 2048, "pretrain", "full")
    # our hardware FLOPs per token with full recomputation ~ 8P (plus attention and LM head)
    assert hw == pytest.approx(8 * model.params_total, rel=0.06)
    days = 300e9 * hw / (1024 * 140e12) / DAY
    assert days == pytest.approx(34, rel=0.06)


def test_estimator_reproduces_table1_175b_row():
    # Table 1: 175B, t=8, p=16, 1024 GPUs, batch 1536 -> 140 TFLOP/s per GPU, ~34 days for 300B tokens
    est = estimate({
        "model": "megatron-lm:gpt-175b", "task": "pretrain", "precision": "fp16", "framework": "megatron",
        "seq_len": 2048, "batch_size": 1, "gradient_accumulation": 1536 // 8, "flash_attention": False,
        "grad_checkpointing": True, "parallel": {"tp": 8, "pp": 16, "dp": 8},
        "hardware": {"gpu": "A100-SXM4-80GB", "count": 1024}, "dataset": {"tokens": 300e9},
    })
    perf = est.performance
    assert perf["tflops_per_gpu"] == pytest.approx(140, rel=0.15)
    assert perf["total_time_s"] / DAY == pytest.approx(34, rel=0.15)
    assert est.memory.fits  # the paper ran it on 80 GB A100s
