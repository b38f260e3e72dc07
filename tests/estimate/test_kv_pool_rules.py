"""How each serving engine sizes its KV pool when launched with its defaults (memory/serve.py kv_pool_rule).

Sources:
- LMDeploy TurbomindEngineConfig docstring (lmdeploy/messages.py): cache_max_entry_count 0.5 of the TOTAL memory in
  v0.2.0-0.2.1, 0.8 of the FREE memory after v0.2.1; before v0.2 an integer count of cached sequences.
- LMDeploy's 2023 kv-int8 page (TurboMind, internlm-chat-7b, A100): 22,337 MiB at 8 concurrent sessions of 2,048
  tokens with a 16-bit cache, "approximately 1030MB of GPU memory ... for each concurrent session" (held-out set 5,
  rows V217-V224).
- TensorRT-LLM KvCacheConfig: free_gpu_memory_fraction 0.9 of the free memory.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.memory import kv_pool_rule
from gpuplan.estimate.serving.inference import engine_speedup_bound

GIB = 1024**3


@pytest.mark.parametrize("framework,version,rule", [
    ("lmdeploy", None, ("free", 0.8)), ("lmdeploy", "0.6.2", ("free", 0.8)), ("lmdeploy", "0.2.1", ("total", 0.5)),
    ("lmdeploy", "0.1.0", ("sessions", 0.0)), ("trtllm", None, ("free", 0.9)), ("vllm", "0.5.4", ("total", 0.9)),
    ("sglang", None, ("total", 0.88)), ("tgi", None, ("total", 0.9)),
])
def test_rule_by_engine_and_release(framework, version, rule):
    assert kv_pool_rule(framework, version) == rule


def _serve(framework, version=None, batch=8, kv="fp16"):
    w = dict(model="internlm/internlm-chat-7b", task="inference", precision="fp16", framework=framework,
             prompt_tokens=1024, output_tokens=1024, batch_size=batch, kv_cache_dtype=kv,
             hardware={"gpu": "A100-SXM4-80GB", "count": 1})
    if version:
        w["framework_version"] = version
    return estimate(w).to_dict()["memory"]


def test_lmdeploy_takes_080_of_what_the_weights_leave():
    mem = _serve("lmdeploy")
    free = mem["capacity_bytes"] - mem["components"]["weights"] - _fixed(mem)
    assert mem["components"]["kv_cache"] == pytest.approx(0.8 * free, rel=1e-6)
    # the whole card less a fifth of what the weights leave: below vLLM's 90 % of the card for a 7B model
    assert mem["per_gpu_bytes"] < _serve("vllm")["per_gpu_bytes"]


def _fixed(mem) -> float:
    """CUDA context + NCCL buffers: the part of the overhead that is not the engine's graphs."""
    from gpuplan.estimate.params import table

    return mem["components"]["overhead"] - float(table("inference", "engine_graph_bytes"))


def test_lmdeploy_2023_sizes_its_blocks_by_the_sessions():
    """The kv-int8 page: 22,337 MiB at 8 sessions x 2,048 tokens (16-bit cache), about 1 GiB more per session."""
    eight, sixteen = _serve("lmdeploy", "0.0", 8), _serve("lmdeploy", "0.0", 16)
    assert eight["per_gpu_bytes"] / GIB == pytest.approx(22337 / 1024, rel=0.10)
    per_session = (sixteen["per_gpu_bytes"] - eight["per_gpu_bytes"]) / 8
    assert per_session / 2**20 == pytest.approx(1030 * 1e6 / 2**20, rel=0.05)      # 32 x 4096 x 2 x 2 B x 2,048
    assert _serve("lmdeploy", "0.0", 8, kv="int8")["per_gpu_bytes"] < eight["per_gpu_bytes"]


def test_trtllm_takes_090_of_the_free_memory():
    mem = _serve("trtllm")
    free = mem["capacity_bytes"] - mem["components"]["weights"] - _fixed(mem)
    assert mem["components"]["kv_cache"] == pytest.approx(0.9 * free, rel=1e-6)


def test_no_speed_bound_against_an_engine_that_sizes_its_pool_from_free_memory():
    assert engine_speedup_bound("vllm", "lmdeploy") == float("inf")
    assert engine_speedup_bound("lmdeploy", "vllm") == float("inf")
