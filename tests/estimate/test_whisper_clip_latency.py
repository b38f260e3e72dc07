"""A long clip's latency is all of its windows: faster-whisper runs a clip's 30 s windows in batches of
``batch_size``, one batch after another, so a 13.8-minute file at batch 1 takes 28 batches (it had been reported as one
window's time: held-out set 10, podcast-rag's benchmark on an RTX 4090)."""

from __future__ import annotations

import math

import pytest

from gpuplan.estimate.core import estimate


def _perf(seconds: float, batch: int) -> dict:
    return estimate({"model": "openai/whisper-large-v3", "task": "inference", "precision": "fp16", "batch_size": batch,
                     "input": {"audio_seconds": seconds}, "hardware": {"gpu": "RTX4090"}}).performance


@pytest.mark.parametrize("batch", [1, 8])
def test_a_long_clip_takes_one_batch_after_another(batch):
    window = _perf(30, batch)
    clip = _perf(828, batch)
    windows = 828 / 30
    assert clip["ttft_s"] == pytest.approx(window["latency_s"])          # the first batch's answer
    assert clip["latency_s"] == pytest.approx(window["latency_s"] * math.ceil(windows / batch))
    # throughput counts clips: batch windows per batch time, windows per clip
    assert clip["samples_per_s"] == pytest.approx(batch / windows / window["latency_s"])


def test_a_short_clip_is_one_batch():
    one = _perf(30, 8)
    assert one["latency_s"] == one["ttft_s"]
