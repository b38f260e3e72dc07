"""A closed-loop benchmark that asks for more concurrent requests than the KV cache holds: the engine runs as many as
fit and queues the rest, so its output rate stays at the saturated one (Little's law over the running sequences), and
the queue shows in the TTFT. Before 2026-12-06 the queue's wait sat in the throughput's divisor: SGLang 0.5.16's
Gemma 4 E4B on one H200 at 8,192 + 1,024 tokens, 2,403 tokens/s at 1,024 concurrent requests and 2,397 at 4,096,
read 389 and 97 (held-out set 17, read after its first scoring)."""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate

BASE = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "framework": "vllm", "prompt_tokens": 8192,
        "output_tokens": 1024, "hardware": {"gpu": "A100-80GB", "count": 1}}


def _perf(batch: int) -> dict:
    return estimate({**BASE, "batch_size": batch}).to_dict()["performance"]


def test_past_the_kv_slots_the_rate_is_the_saturated_one_and_the_wait_is_in_the_ttft():
    slots = _perf(8)["max_concurrency"]
    assert 8 < slots < 256
    at_2x, at_8x = _perf(2 * slots), _perf(8 * slots)
    assert at_2x["output_tokens_per_s"] == pytest.approx(at_8x["output_tokens_per_s"], rel=0.02)
    assert at_8x["output_tokens_per_s"] >= 0.9 * _perf(slots)["output_tokens_per_s"]
    assert at_8x["ttft_s"] > 3 * at_2x["ttft_s"]          # the queue's wait is the requests', not the engine's


def test_below_the_slots_the_rate_grows_with_the_batch():
    assert _perf(16)["output_tokens_per_s"] > 1.5 * _perf(4)["output_tokens_per_s"]
