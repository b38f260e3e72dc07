"""Context parallelism in the Megatron launch (issue 12, acc-mem): the plan's parallel.cp reaches ms-swift's
`megatron sft --context_parallel_size`, and the data-parallel size (hence the global batch) is
gpus / (tp x pp x cp)."""

from __future__ import annotations

import dataclasses

from gpuplan.plan.search.candidates import launcher_for
from gpuplan.render.bundle.context_build import build_context
from gpuplan.render.bundle.training import megatron_args
from gpuplan.render.bundle.training_layout import batch_layout

from .scenarios import inputs
import pytest

from .test_smoke_launch import MS_SWIFT, arg, parse_megatron


def test_context_parallel_needs_megatron():
    assert launcher_for(1, 1, cp=2) == "megatron"
    assert launcher_for(1, 1, cp=1) == "torchrun"


def test_megatron_args_carry_context_parallel_size():
    plan, workload, est = inputs("two_node")
    c = dataclasses.replace(build_context(plan, workload, est), tp=2, pp=1, cp=2, grad_accum=2, launcher="megatron")
    words = megatron_args(c)
    assert arg(words, "--context_parallel_size") == "2"
    assert "--context_parallel_size" not in megatron_args(dataclasses.replace(c, cp=1))
    dp = c.gpus_total // (2 * 1 * 2)
    assert batch_layout(c).dp == dp
    assert arg(words, "--global_batch_size") == str(c.micro_batch * 2 * dp)
    if MS_SWIFT.is_dir():   # ms-swift 4.5.2's own parser accepts the flag and its value
        proc = parse_megatron(words + ["--dataset", "d.jsonl", "--output_dir", "/x"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
    else:
        pytest.skip("ms-swift 4.5.2 not in ~/.cache/gpuplan (scripts/install-test-tools.sh)")


def test_recommend_keeps_a_set_context_parallel_size():
    """A pinned CP 2 reaches every plan. TP 2 is pinned too: at TP 1 the 8B model's bf16 weights, fp32 gradients and
    ZeRO-1 optimizer share plus seq-8192 activations need ~79 GiB per GPU, ~116 GiB at the high end of the
    training memory interval the plans are sized at (issue 30), over every card in the catalog; TP 2 halves the
    weights, gradients and activations (~82 GiB at the high end on one 8-GPU node, less as ZeRO-1 spreads the
    optimizer over more nodes), so A100-80GB nodes fit."""
    from gpuplan.plan import recommend

    d = recommend({"model": "meta-llama/Llama-3.1-8B", "task": "pretrain", "framework": "nemo", "seq_len": 8192,
                   "grad_checkpointing": False, "parallel": {"cp": 2, "tp": 2}, "dataset": {"tokens": 1e9}}).to_dict()
    assert d["plans"]
    for p in d["plans"]:
        par = p["parallel"]
        assert par["cp"] == 2 and par["tp"] == 2 and par["launcher"] == "megatron"
        assert par["tp"] * par["pp"] * par["cp"] * par["dp"] == p["gpus_total"]
