"""Whisper in eager transformers holds one 30 s window per batch element, however long the audio: every input is
padded to a window and long-form generate transcribes the windows one after another.

Pinned to faster-whisper's README benchmark (SYSTRAN/faster-whisper @65882ee, 'Large-v2 model on GPU'): the
transformers (SDPA) row transcribes a 13-minute file (780 s) in fp16 with beam 5 on an RTX 3070 Ti 8GB and peaks at
4,960 MiB of device memory (nvmlDeviceGetMemoryInfo used, CUDA context included). Scaling the activations and the
beams' caches with the 26 windows estimated 19.2 GiB and declared that run impossible on its 8 GB card."""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate


def _whisper(seconds: float, batch: int = 1):
    return estimate({"model": "openai/whisper-large-v2", "task": "inference", "precision": "fp16",
                     "framework": "transformers", "batch_size": batch, "input": {"audio_seconds": seconds},
                     "hardware": {"gpu": "RTX 3070 Ti", "count": 1}})


def test_thirteen_minutes_fit_an_8_gb_card_as_measured():
    est = _whisper(780)
    assert est.fits
    assert est.memory.per_gpu_bytes / 2**30 == pytest.approx(4960 / 1024, rel=0.25)


def test_memory_does_not_grow_with_the_audio_but_time_does():
    short, long_ = _whisper(30), _whisper(780)
    assert long_.memory.per_gpu_bytes == pytest.approx(short.memory.per_gpu_bytes, rel=1e-6)
    assert long_.performance["latency_s"] > 20 * short.performance["latency_s"]
    assert _whisper(30, batch=4).memory.per_gpu_bytes > 1.5 * short.memory.per_gpu_bytes   # windows side by side
