"""Prefill without a fused attention kernel moves each head's prompt x prompt scores through HBM (Dao et al. 2022,
Algorithm 0: S written and read, P written and read: 8 bytes per score in 16-bit), the forward share of the training
step's rule for the same thing. Before, training charged it and prefill did not (two rules for one effect)."""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate

BERT = {"model": "google-bert/bert-base-uncased", "task": "inference", "framework": "transformers",
        "prompt_tokens": 1024, "batch_size": 16, "hardware": {"gpu": "A100-SXM4-40GB", "count": 1}}


def test_unfused_attention_adds_the_score_traffic_to_an_encoder_forward():
    fused = estimate({**BERT, "flash_attention": True}).performance["latency_s"]
    unfused = estimate({**BERT, "flash_attention": False}).performance["latency_s"]
    # 16 x 12 layers x 12 heads x 1024^2 scores x 8 bytes over 1,555 GB/s x 0.78 (weight_stream_efficiency)
    scores_s = 16 * 12 * 12 * 1024 ** 2 * 8 / (1555e9 * 0.78)
    assert unfused - fused == pytest.approx(scores_s, rel=0.05)


def test_short_prompts_barely_notice():
    short = {**BERT, "prompt_tokens": 64, "batch_size": 256}
    fused = estimate({**short, "flash_attention": True}).performance["latency_s"]
    unfused = estimate({**short, "flash_attention": False}).performance["latency_s"]
    assert 1.0 < unfused / fused < 1.15
