"""The logits term follows the loop that runs: the bundle's chunked fused loss (workload fused_loss, set by recommend
for the plans whose bundle launches train.py) is sized from its algorithm (one 512-token chunk's logits at 6 bytes per
vocabulary entry, the LM head's gradient, the hidden states' gradient); every published measurement row ran its
framework's own loss and keeps 12 bytes per vocabulary entry per token; the time is the same; Megatron layouts,
remote-code models and the families that rewrite their logits keep the whole logits."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.params import table

ROOT = Path(__file__).resolve().parents[2]
LLAMA_1B = {"model": "meta-llama/Llama-3.2-1B-Instruct", "task": "pretrain", "seq_len": 2048, "framework": "deepspeed",
            "dataset": {"tokens": 2.0e10}, "hardware": {"instance_type": "ecs.gn7i-c8g1.2xlarge", "nodes": 4},
            "parallel": {"zero": 1}, "batch_size": 1, "gradient_accumulation": 256, "grad_checkpointing": False}
VOCAB, HIDDEN, TOKENS = 128256, 2048, 2048      # Llama-3.2-1B config.json


def test_the_pretrain_plans_logits_are_the_chunked_loss_derived_from_its_algorithm():
    whole = estimate(LLAMA_1B)
    chunked = estimate({**LLAMA_1B, "fused_loss": True})
    assert whole.memory.loss == "model" and chunked.memory.loss == "chunked"
    assert whole.memory.components["logits"] == pytest.approx(12 * TOKENS * VOCAB)       # 3.15 GB
    chunk = table("memory", "chunked_loss")["chunk_tokens"]
    derived = chunk * VOCAB * (2 + 4) + VOCAB * HIDDEN * 2 + TOKENS * HIDDEN * 4          # 0.92 GB
    assert chunked.memory.components["logits"] == pytest.approx(derived)
    # everything else is the same run: 2.2 GB less at the peak, plus the allocator's reserve on it
    saved = whole.memory.per_gpu_bytes - chunked.memory.per_gpu_bytes
    assert 12 * TOKENS * VOCAB - derived <= saved <= 1.1 * (12 * TOKENS * VOCAB - derived)
    # same three LM-head matmuls per token, no recomputation: the time does not move
    assert chunked.performance["step_time_s"] == pytest.approx(whole.performance["step_time_s"], rel=1e-12)


def test_a_lora_head_is_frozen_so_no_head_gradient_is_accumulated():
    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 4096, "hardware": {"gpu": "A10", "count": 1},
         "batch_size": 1, "grad_checkpointing": False}
    whole, chunked = estimate(w), estimate({**w, "fused_loss": True})
    vocab, hidden = 152064, 3584
    assert chunked.memory.components["logits"] == pytest.approx(512 * vocab * 6 + 4096 * hidden * 4)
    assert whole.memory.components["logits"] == pytest.approx(12 * 4096 * vocab)


@pytest.mark.parametrize("change", [
    {"parallel": {"tp": 2}, "hardware": {"gpu": "A100-80GB", "count": 2}},   # Megatron: the whole (vocab-parallel) logits
    {"model": "google/gemma-2-2b-it"},                                        # soft-capped logits
    {"model": "Qwen/Qwen-1_8B-Chat"},                                         # remote code
])
def test_where_train_py_does_not_run_it_the_whole_logits_stay(change):
    w = {**LLAMA_1B, "hardware": {"gpu": "A100-80GB", "count": 1}, "parallel": {"zero": 0}, "fused_loss": True, **change}
    w.pop("dataset")
    assert estimate(w).memory.loss == "model"


def test_published_training_rows_keep_their_frameworks_loss(acc):
    """Every training memory row of the bench (HF Trainer, DeepSpeed, ms-swift, ... runs) ran its framework's own loss:
    the estimate the accuracy bench scores keeps the whole logits (12 bytes for transformers/DeepSpeed)."""
    from gpuplan.calibrate.measurements import row_workload

    rows = [r for r in acc.load(sorted((ROOT / "bench" / "data").glob("*.csv")))
            if r["task"] in ("pretrain", "full", "lora", "qlora") and r["metric"] == "peak_mem_gib_per_gpu"]
    assert len(rows) > 50
    seen, checked = set(), 0
    for r in rows:
        try:
            _pred, _fits, _note, est = acc.predict_with_estimate(r)
        except Exception:   # noqa: BLE001 - rows the bench itself skips (unknown models)
            continue
        if est is None:
            continue
        assert est.memory.loss == "model", r["id"]
        assert "fused_loss" not in row_workload(r), r["id"]   # the calibration loader's workload: unset = false
        seen.add(est.workload.framework)
        checked += 1
    assert checked > 50
    assert {"deepspeed", "transformers"} <= seen or "auto" in seen
