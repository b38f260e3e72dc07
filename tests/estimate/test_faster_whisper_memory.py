"""faster-whisper (CTranslate2) transcription memory, pinned to the published figures.

SYSTRAN/faster-whisper README.md @97a4785fa13d (2024-11-21, "Bump version to 1.1.0 and update benchmarks"),
"Large-v2 model on GPU": 13 minutes of audio, beam 5, CUDA 12.4 on an RTX 3070 Ti 8GB; "VRAM Usage" is the
peak of nvidia-smi's used memory in MiB (benchmark/memory_benchmark.py: nvmlDeviceGetMemoryInfo(...).used >> 20):

    faster-whisper (batch_size=8)  fp16  17 s  6090 MiB
    faster-whisper (batch_size=8)  int8  16 s  4500 MiB
    faster-whisper                 fp16  1m03s 4525 MiB   (sequential WhisperModel.transcribe)
    faster-whisper                 int8  59 s  2926 MiB

The batched rows are the pipeline the bundle runs (BatchedInferencePipeline): the estimate must land within
TOLERANCE of them. The sequential rows run another pipeline (one window at a time, conditioned on the previous
text, with timestamps): the batched estimate at batch 1 must stay below them.
"""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.nonllm.speech import ct2_weight_bytes, window_bytes

MIB = 2**20
TOLERANCE = 0.05          # 5 % of the published peak

# openai/whisper-large-v2 config.json (the README's model)
LARGE_V2 = {"model_type": "whisper", "d_model": 1280, "encoder_layers": 32, "decoder_layers": 32,
            "encoder_ffn_dim": 5120, "decoder_ffn_dim": 5120, "num_mel_bins": 80, "vocab_size": 51865,
            "max_source_positions": 1500, "max_target_positions": 448, "encoder_attention_heads": 20,
            "decoder_attention_heads": 20}
# RTX 3070 Ti: 8 GB GDDR6X at 608 GB/s (NVIDIA product page); 48 SMs x 512 FP16 FLOP per clock (FP16
# accumulation, CTranslate2's default true-FP16 GEMM) x 1.77 GHz boost = 43.5 TFLOPS (derived; unconfirmed)
RTX_3070_TI = {"name": "RTX 3070 Ti", "memory_gib": 8, "mem_bandwidth_gb_s": 608, "fp16_dense_tflops": 43.5}


def _est(batch: int):
    return estimate({"model": LARGE_V2, "task": "inference", "batch_size": batch, "precision": "fp16",
                     "hardware": {"gpu": RTX_3070_TI, "count": 1}})


def test_large_v2_is_the_readme_checkpoint():
    assert resolve_model(LARGE_V2).params_total == 1_543_304_960


def test_fp16_batch_8_within_tolerance_of_the_readme():
    got = _est(8).memory.per_gpu_bytes / MIB
    assert got == pytest.approx(6090, rel=TOLERANCE)


def test_int8_batch_8_within_tolerance_of_the_readme():
    """The int8 row: the same windows, the linear and embedding weights in one byte (int8_float16)."""
    est = _est(8)
    model = resolve_model(LARGE_V2)
    mem = est.memory
    saved = ct2_weight_bytes(model, "float16") - ct2_weight_bytes(model, "int8_float16")
    assert (mem.per_gpu_bytes - saved) / MIB == pytest.approx(4500, rel=TOLERANCE)
    # the published fp16 - int8 gap at batch 8 (1590 MiB) is the weights' difference
    assert saved / MIB == pytest.approx(6090 - 4500, rel=0.10)


def test_a_window_costs_what_the_readme_batch_adds():
    """Batch 8 over the sequential batch 1 adds (6090 - 4525) / 7 = 224 MiB per window at fp16 and
    (4500 - 2926) / 7 = 225 MiB at int8: one copy of the cross-attention K/V (246 MB = 234 MiB), not one per
    beam (5 x 234 MiB would not fit 8 windows on the 8 GB card at all). The sequential window holds more than a
    batched one (its prompt of previous text), so 224 MiB is a floor of the batched window, not its size."""
    model = resolve_model(LARGE_V2)
    win = window_bytes(model, "float16", beams=5, tokens=100)
    assert win.cross_kv == 32 * 2 * 1500 * 1280 * 2
    assert 224 <= win.peak / MIB <= 1.5 * 224
    assert 8 * 5 * win.cross_kv / MIB > 8192          # per-beam copies: over the card
    assert _est(8).memory.per_gpu_bytes < 8 * 2**30


def test_batch_1_stays_below_the_sequential_pipeline():
    assert _est(1).memory.per_gpu_bytes / MIB < 4525


def test_memory_grows_by_one_window_per_batch_element():
    a, b = _est(16).memory, _est(32).memory
    model = resolve_model(LARGE_V2)
    win = window_bytes(model, "float16", beams=5, tokens=100)
    assert b.per_gpu_bytes - a.per_gpu_bytes == pytest.approx(16 * win.peak, rel=1e-6)
    assert a.components["weights"] == b.components["weights"] == pytest.approx(2 * 1_543_304_960)


def test_transformers_keeps_a_cross_attention_copy_per_beam():
    """Eager transformers (asked for by name) expands the encoder output per beam: five copies per window."""
    fw = _est(8).memory.per_gpu_bytes
    hf = estimate({"model": LARGE_V2, "task": "inference", "batch_size": 8, "precision": "fp16",
                   "framework": "transformers", "hardware": {"gpu": "A10", "count": 1}}).memory.per_gpu_bytes
    assert hf > fw + 8 * 4 * 32 * 2 * 1500 * 1280 * 2 * 0.9


def test_readme_batch_8_time():
    """17 s for 13 min (26 windows of 30 s) at fp16 batch 8: the host share per window is fitted on this row
    (data/efficiency.yaml nonllm.faster_whisper.host_s_per_window), so the whole must reproduce it."""
    rate = _est(8).performance["samples_per_s"]
    assert 26 / rate == pytest.approx(17, rel=0.05)
    # the sequential pipeline (63 s) does more per window than the batched one at batch 1
    assert 26 / _est(1).performance["samples_per_s"] < 63
