"""The efficiency-table seam bench/accuracy.py fits through (gpuplan.estimate.params.overrides)."""

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate_resolved
from gpuplan.estimate.params import has_key, overrides, table, value_at
from gpuplan.estimate.system import Layout, System
from gpuplan.workload import parse_workload
from gpuplan.workload_defaults import resolve_defaults


def _lora_7b():
    w, _ = resolve_defaults(parse_workload({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048,
                                            "batch_size": 1, "framework": "transformers"}))
    system = System(gpu=get_gpu("A100-80GB"), gpus_per_node=1, nodes=1, intra_link="none")
    layout = Layout(tp=1, pp=1, dp=1, micro_batch=1, grad_accum=1, checkpointing="full")
    return estimate_resolved(w, resolve_model(w.model), system, layout, with_suggestions=False)


def test_override_changes_the_estimate_and_is_undone_on_exit():
    shipped = _lora_7b()
    key = "training.hfu_by_arch.Ampere"
    base = value_at(key)
    with overrides({key: base / 2}):
        assert value_at(key) == pytest.approx(base / 2)
        assert table("training", "hfu_by_arch")["Ampere"] == pytest.approx(base / 2)
        slow = _lora_7b()
    after = _lora_7b()
    assert value_at(key) == base
    # half the utilisation ceiling: the compute part of the step takes longer, memory is untouched
    assert slow.performance["tokens_per_s_per_gpu"] < 0.8 * shipped.performance["tokens_per_s_per_gpu"]
    assert slow.memory.peak_allocated_bytes == shipped.memory.peak_allocated_bytes
    assert after.performance == shipped.performance


def test_memory_override_moves_memory():
    shipped = _lora_7b()
    key = "memory.cuda_context_bytes"
    with overrides({key: value_at(key) + 2**30}):
        more = _lora_7b()
    assert more.memory.per_gpu_bytes - shipped.memory.per_gpu_bytes == pytest.approx(2**30, rel=1e-6)


def test_unknown_or_non_numeric_key_is_an_error_not_a_no_op():
    with pytest.raises(KeyError), overrides({"training.hfu_by_arch.NoSuchArch": 1.0}):
        pass
    with pytest.raises(KeyError), overrides({"training.hfu_by_arch": 1.0}):
        pass
    assert not has_key("training.hfu_by_arch")
    assert has_key("inference.prefill_efficiency")
