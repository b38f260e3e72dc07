"""An encoder service's batch limit (vLLM ``--runner pooling``) is chosen by the latency model that sizes its replicas
(estimate/serving/inference.py prefill_only_perf; plan review of bge-m3 at 50 req/s in cn-shanghai). Before, the
prefill-only model counted no per-step cost, so batch 1 looked as fast as any and serve.sh launched
``--max-num-seqs 1``: one request per forward, while the plan sized for the stated traffic."""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.params import table
from gpuplan.estimate.serving.inference import pooling_batched_tokens
from gpuplan.plan import recommend
from gpuplan.workload_loading import load_workload


def _bge(ttft_ms: int | None = None):
    serving: dict = {"requests_per_s": 50}
    if ttft_ms:
        serving["ttft_ms"] = ttft_ms
    return load_workload({"name": "bge-svc", "model": "BAAI/bge-m3", "task": "inference", "prompt_tokens": 512,
                          "serving": serving, "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}})


def _rate(w, gpu: str, batch: int) -> float:
    """Prompts/s of one forward of ``batch`` prompts on ``gpu``, the engine's step cost included."""
    e = estimate(w.with_updates(hardware={"gpu": gpu, "count": 1}, batch_size=batch))
    return batch / e.performance["latency_s"]


@pytest.mark.parametrize("gpu", ["T4-16GB", "A10"])
def test_the_batch_limit_is_the_rate_the_replica_is_sized_with(gpu):
    w = _bge()
    perf = estimate(w.with_updates(hardware={"gpu": gpu, "count": 1})).performance
    limit = perf["serving_batch"]
    # the engine's per-step cost makes one request per forward the slowest way to serve the traffic
    assert limit > 1
    assert float(table("inference", "engine_step_overhead_s")["vllm"]) > 0
    assert perf["max_requests_per_s"] == pytest.approx(_rate(w, gpu, limit), rel=1e-6)
    assert perf["max_requests_per_s"] > 1.05 * _rate(w, gpu, 1)
    # a larger limit would not pay: twice the batch gains at most the 1 % the model requires
    assert _rate(w, gpu, 2 * limit) <= 1.01 * perf["max_requests_per_s"]


def test_a_tight_ttft_target_caps_the_batch_limit():
    """A request arriving during one forward waits for it and then its own: two forwards within the TTFT target."""
    loose = estimate(_bge().with_updates(hardware={"gpu": "T4-16GB", "count": 1})).performance
    ttft_s = 0.1
    tight = estimate(_bge(int(ttft_s * 1000)).with_updates(hardware={"gpu": "T4-16GB", "count": 1})).performance
    w = _bge()
    assert 1 < tight["serving_batch"] < loose["serving_batch"]
    forward_s = tight["serving_batch"] / _rate(w, "T4-16GB", tight["serving_batch"])
    assert 2 * forward_s <= ttft_s
    nxt = 2 * tight["serving_batch"]
    assert 2 * nxt / _rate(w, "T4-16GB", nxt) > ttft_s


def test_recommend_sizes_and_launches_the_same_limit():
    rec = recommend(_bge())
    p = rec.best
    limit = p.performance["serving_batch"]
    at = estimate(_bge().with_updates(hardware={"instance_type": p.instance_type})).performance
    assert at["serving_batch"] == limit
    assert at["max_requests_per_s"] == pytest.approx(p.performance["max_requests_per_s"])


def test_the_token_budget_meets_vllms_rules_without_chunked_prefill():
    # vllm/config/scheduler.py verify_max_model_len: >= max_model_len and >= max_num_seqs
    assert pooling_batched_tokens(32, 512, 1024) == 32 * 512
    assert pooling_batched_tokens(1, 512, 1024) == 1024
    assert pooling_batched_tokens(4096, 0, 8) == 4096
