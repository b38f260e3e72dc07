"""Samples shorter than max_length (gpuplan.estimate.lengths): unpacked micro-batches are padded to their
longest sample, and ms-swift drops the samples that do not fit."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.estimate.lengths import sample_lengths


def test_padded_rows_are_the_longest_of_the_batch_and_stay_below_max_length():
    one, four, sixteen = (sample_lengths(600.0, 480.0, 2048, b, "truncate") for b in (1, 4, 16))
    assert one.padded_tokens == pytest.approx(one.mean_tokens)           # batch 1: no padding
    assert one.mean_tokens < four.padded_tokens < sixteen.padded_tokens < 2048
    assert one.mean_tokens < 600.0            # truncation at 2048 trims the tail a little
    assert one.kept_share == 1.0


def test_dropping_long_samples_keeps_the_short_ones_only():
    # ms-swift benchmark dataset: 3234 +- 2548 tokens; at max_length 2048 most samples are dropped
    cut = sample_lengths(3234.4, 2547.5, 2048, 1, "truncate")
    drop = sample_lengths(3234.4, 2547.5, 2048, 1, "delete")
    assert drop.kept_share < 0.5
    assert drop.mean_tokens < cut.mean_tokens < 2048
    # without a limit nothing is dropped and the mean is the dataset's
    assert sample_lengths(3234.4, 2547.5, 1 << 18, 1, "delete").mean_tokens == pytest.approx(3234.4, rel=0.02)


def _lora(tokens_per_sample: float, **extra):
    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "batch_size": 4,
         "dataset": {"samples": 50_000, "tokens_per_sample": tokens_per_sample, **extra},
         "hardware": {"gpu": "A100-SXM4-80GB", "count": 1}}
    return estimate(w)


def test_short_unpacked_samples_run_more_sequences_per_second_but_fewer_than_packing_would():
    full, short = _lora(2048), _lora(400)
    assert short.performance["samples_per_s"] > full.performance["samples_per_s"]
    # packing would fit 2048 / 400 samples in a row; padding to the batch's longest gives fewer
    assert short.performance["samples_per_s"] < full.performance["samples_per_s"] * 2048 / 400
    assert any("padded to its longest" in a for a in short.assumptions)
    # memory is still sized at max_length (the longest batch reaches it)
    assert short.memory.per_gpu_bytes == pytest.approx(full.memory.per_gpu_bytes, rel=1e-6)


def test_job_time_is_the_samples_over_the_sample_rate():
    e = _lora(400, tokens_per_sample_sd=100, epochs=2)
    p = e.performance
    assert p["total_time_s"] == pytest.approx(50_000 * 2 / p["samples_per_s"], rel=1e-6)
    # tokens/s counts the dataset's tokens, so dataset tokens / tokens_per_s is the same time
    assert p["total_time_s"] == pytest.approx(50_000 * 2 * 400 / p["tokens_per_s"], rel=1e-6)


def test_packed_data_runs_full_rows():
    e = _lora(400)
    packed = estimate({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "batch_size": 4,
                       "packed": True, "dataset": {"samples": 50_000, "tokens_per_sample": 400},
                       "hardware": {"gpu": "A100-SXM4-80GB", "count": 1}})
    assert not any("padded to its longest" in a for a in packed.assumptions)
    assert packed.performance["samples_per_s"] > e.performance["samples_per_s"]


def test_the_datasets_longest_sample_sizes_memory_below_max_length():
    """ms-swift example scripts set max_length 2048-4096 on datasets whose longest sample is far shorter: the
    peak is the longest batch the run sees."""
    base = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 4096, "batch_size": 2,
            "framework": "swift", "hardware": {"gpu": "A10-24GB", "count": 1}}
    at_max = estimate({**base, "dataset": {"samples": 20_000, "tokens_per_sample": 300}})
    short = estimate({**base, "dataset": {"samples": 20_000, "tokens_per_sample": 300, "max_tokens_per_sample": 1100}})
    assert short.memory.per_gpu_bytes < at_max.memory.per_gpu_bytes
    # the same job at seq_len 1100 holds the same activations
    same = estimate({**base, "seq_len": 1100, "dataset": {"samples": 20_000, "tokens_per_sample": 300}})
    assert short.memory.per_gpu_bytes == pytest.approx(same.memory.per_gpu_bytes, rel=1e-6)
    assert not any("dropped" in a for a in short.assumptions)
