"""PyTorch FSDP in mixed precision: the fp32 shard is the master weight (no 16-bit shard beside it).

FSDP2's MixedPrecisionPolicy (and FSDP1's MixedPrecision) keeps each sharded parameter in fp32 and casts it to bf16 only
to all-gather it; the optimizer steps that shard. Per parameter a rank holds 4 (fp32 shard = master) + 4 (fp32
gradient shard) + 8 (Adam moments) bytes / n, not 2 + 4 + 12. The bundle's train.py runs FSDP2 that way.
"""

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import shape_of


def _comp(framework, n, task="full"):
    return estimate({"model": "llama-3.1-8b", "task": task, "framework": framework, "seq_len": 2048,
                     "parallel": {"fsdp": "full_shard"} if framework == "fsdp" else {"zero": 3},
                     "hardware": {"gpu": "H100-80GB", "count": n}}).memory.components


def test_doubling_an_fsdp_group_leaves_no_16_bit_shard_to_halve():
    s = shape_of(resolve_model("llama-3.1-8b"))
    w8, w16 = _comp("fsdp", 8)["weights"], _comp("fsdp", 16)["weights"]
    # only the root unit's (embedding, head) unsharded remainder changes, growing with n; a 16-bit shard would have
    # made the weights 2P(1/8 - 1/16) = 0.93 GiB lighter at 16
    root = 2 * (s.embed_params + s.lm_head_params)
    assert w8 - w16 == pytest.approx(root * (1 / 16 - 1 / 8), rel=0.05)


def test_fsdp_holds_sixteen_bytes_per_parameter_deepspeed_eighteen():
    s = shape_of(resolve_model("llama-3.1-8b"))
    fsdp, ds = _comp("fsdp", 8), _comp("deepspeed", 8)
    # FSDP: 4 (fp32 gradient shard) + 12 (fp32 master = the shard, Adam moments); DeepSpeed ZeRO-3 keeps its bf16
    # partition beside the fp32 one
    assert fsdp["gradients"] + fsdp["optimizer"] == pytest.approx(16 * s.params_total / 8, rel=0.01)
    assert ds["weights"] > 2 * s.params_total / 8
    assert ds["gradients"] + ds["optimizer"] == pytest.approx(14 * s.params_total / 8, rel=0.01)


def test_a_frozen_lora_base_keeps_its_16_bit_shard():
    s = shape_of(resolve_model("llama-3.1-8b"))
    assert _comp("fsdp", 8, task="lora")["weights"] > 2 * s.params_total / 8
