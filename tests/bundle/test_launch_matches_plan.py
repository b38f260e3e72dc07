"""The launch files run the plan they were written from (issue 29/32 review: "one model for one figure"; "the node is
not this machine"). Each test plans a real workload, writes its bundle and reads the launcher the way the node will."""

from __future__ import annotations

import json
import re

import pytest

from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle


def _flag(script: str, flag: str) -> str:
    m = re.search(rf"{re.escape(flag)}[ =]([0-9.]+)", script)
    assert m, f"{flag} not in the script"
    return m.group(1)


def test_engine_memory_fraction_is_the_one_the_plan_needs(tmp_path):
    """DeepSeek-R1 (FP8 weights, 671B) on 8 x H20: the weights take 78 of 95.6 GiB per GPU and the planned batch's
    KV cache needs 8.6 GiB more, above vLLM's default 90 % reservation. The estimate says so ("needs
    gpu_memory_utilization 0.94"); the bundle must launch vLLM and SGLang with that fraction, or the KV pool holds
    fewer sequences than the plan's max_num_seqs and the plan's throughput is never reached."""
    w = Workload.model_validate({"name": "r1-h20", "model": "deepseek-ai/DeepSeek-R1", "task": "inference",
                                 "prompt_tokens": 30000, "output_tokens": 2700, "batch_size": 8,
                                 "serving": {"requests_per_s": 0.05}, "hardware": {"gpu": "H20"},
                                 "constraints": {"regions": ["cn-beijing"], "billing": ["payg"],
                                                 "platforms": ["ecs"]}})
    path, _ = write_plan_bundle(w, tmp_path / "b")
    doc = json.loads((path / "plan.json").read_text())
    mem = doc["estimate"]["memory"]
    assert mem["per_gpu_bytes"] > mem["engine_reserved_bytes"]     # the case: more than the default reservation
    util = float(_flag((path / "serve.sh").read_text(), "--gpu-memory-utilization"))
    assert util * mem["capacity_bytes"] >= mem["per_gpu_bytes"]
    assert float(_flag((path / "serve-sglang.sh").read_text(), "--mem-fraction-static")) == util
    # the same figure as the note the plan shows
    notes = " ".join(doc["estimate"]["assumptions"] + doc["estimate"]["warnings"])
    assert f"needs gpu_memory_utilization {util:.2f}" in notes
    deployment = (path / "k8s/deployment.yaml").read_text()
    assert f"- --gpu-memory-utilization\n        - '{util}'" in deployment
