"""The LoRA adapters' element-wise work (issue 30): PEFT's unfused adapter path (cast x to the adapters' dtype, dropout,
lora_A, lora_B, scaling, add, cast back) moves every adapted linear's input and output through HBM several times per
step. With fp32 adapters (PEFT's autocast_adapter_dtype, the default since PEFT 0.12) the casts double it. The time
model counts it (training/costs.adapter_traffic_s); the memory and the time read the adapters' dtype from one rule
(memory/common.adapter_param_bytes), which the workload can set (lora.adapter_dtype) and the launchers pin."""

from __future__ import annotations

import json

import pytest
import yaml

from gpuplan.estimate.core import estimate
from gpuplan.estimate.memory.common import adapter_param_bytes
from gpuplan.estimate.training.costs import adapter_bytes_per_element
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

LORA = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "batch_size": 1,
        "gradient_accumulation": 16, "dataset": {"tokens": 1e8}, "hardware": {"gpu": "A100-SXM4-80GB", "count": 1}}


def test_bytes_per_element_follow_the_peft_forward_and_backward():
    # fp32 adapters under bf16 autocast, dropout on: forward in = casts 12 + dropout 9 + lora_A read 2 = 23, backward
    # in = 4 + 12 + 9 + 6 = 31; out: forward 2 + 4 + 6 = 12, backward 8
    assert adapter_bytes_per_element(4.0, 2.0, True) == (54.0, 20.0, 23.0, 12.0)
    # adapters in the model's dtype, no dropout: no casts, no mask
    assert adapter_bytes_per_element(2.0, 2.0, False) == (12.0, 20.0, 2.0, 12.0)


def test_adapter_dtype_one_rule_for_memory_and_time():
    assert adapter_param_bytes("transformers", "bf16") == 4.0
    assert adapter_param_bytes("transformers", "bf16", "model") == 2.0
    assert adapter_param_bytes("torchtune", "bf16") == 2.0
    assert adapter_param_bytes("torchtune", "bf16", "float32") == 4.0
    assert adapter_param_bytes("transformers", "fp32", "model") == 4.0
    fp32 = estimate(LORA)
    model = estimate({**LORA, "lora": {"adapter_dtype": "model"}})
    assert model.performance["step_time_s"] < fp32.performance["step_time_s"]
    assert model.memory.peak_allocated_bytes < fp32.memory.peak_allocated_bytes
    assert any("4-byte adapters" in a for a in fp32.assumptions)
    assert any("2-byte adapters" in a for a in model.assumptions)


def test_the_traffic_grows_with_the_adapted_widths_and_is_absent_for_untimed_stacks():
    qv = estimate({**LORA, "lora": {"targets": "qv"}}).performance["step_time_s"]
    every = estimate(LORA).performance["step_time_s"]
    assert every > qv
    for framework in ("torchtune", "nemo"):
        e = estimate({**LORA, "framework": framework})
        assert not any("element-wise work" in a for a in e.assumptions), framework
    compiled = estimate({**LORA, "compile": True})
    assert not any("element-wise work" in a for a in compiled.assumptions)


def test_a_bandwidth_poor_card_pays_more_of_it():
    """The work is memory-bound: the share it adds follows the card's FLOP/s per byte of bandwidth, larger on an L40S
    (864 GB/s for 319 sustained TFLOP/s) than on an A100 (2,039 GB/s for 312)."""
    def share(gpu: str) -> float:
        e = estimate({**LORA, "hardware": {"gpu": gpu, "count": 1}})
        note = next(a for a in e.assumptions if "element-wise work" in a)
        return float(note.rsplit("+", 1)[1].split("%")[0])
    assert share("L40S-48GB") > 1.5 * share("A100-SXM4-80GB")


@pytest.mark.parametrize("dtype, swift, pure", [(None, "float32", None), ("model", "bfloat16", True)])
def test_the_launchers_pin_the_adapter_dtype_the_plan_sized(tmp_path, dtype, swift, pure):
    w = {"name": "lora-dtype", "model": "Qwen/Qwen2.5-0.5B-Instruct", "task": "lora", "seq_len": 1024,
         "dataset": {"tokens": 1.0e7}, "constraints": {"regions": ["cn-hangzhou"], "billing": ["payg"]},
         "lora": {"adapter_dtype": dtype} if dtype else {}}
    path, _info = write_plan_bundle(Workload.model_validate(w), tmp_path / "b")
    want = "model" if dtype == "model" else "float32"
    assert f"--adapter_dtype {want}" in (path / "launch.sh").read_text()
    assert "autocast_adapter_dtype=args.adapter_dtype == \"float32\"" in (path / "train.py").read_text()
    assert f"--lora_dtype {swift}" in (path / "swift-sft.sh").read_text()
    assert yaml.safe_load((path / "llamafactory.yaml").read_text()).get("pure_bf16") is pure
    assert json.loads((path / "plan.json").read_text())["workload"]["lora"].get("adapter_dtype") == dtype
