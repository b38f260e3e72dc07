"""vLLM before 0.6.0 processed every running sequence's output in Python in series with the GPU step
(inference.engine_seq_overhead_s; vLLM blog 2024-09-05, "vLLM v0.6.0: 2.7x Throughput Improvement": on v0.5.3, Llama 3
8B on one H100, scheduling and input preparation took 29 % of the time against 38 % of GPU execution). The cost
grows with the batch: invisible at one sequence, a large share of an offline-throughput step."""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.serving.decode import engine_seq_overhead_s


def test_only_old_vllm_releases_pay_it():
    assert engine_seq_overhead_s("vllm", "0.5.4") == pytest.approx(50e-6)
    assert engine_seq_overhead_s("vllm", "0.6.0") == 0.0
    assert engine_seq_overhead_s("vllm", None) == 0.0          # unstated: a current release
    assert engine_seq_overhead_s("sglang", "0.1.0") == 0.0


def _perf(version, batch=None):
    w = dict(model="mistralai/Mistral-7B-Instruct-v0.3", task="inference", framework="vllm", precision="bf16",
             prompt_tokens=230, output_tokens=224, hardware={"gpu": "H100-SXM-80GB", "count": 1},
             framework_version=version)
    if batch:
        w["batch_size"] = batch
    return estimate(w).performance


def test_the_cost_grows_with_the_batch():
    one_old, one_new = _perf("0.5.4", 1)["tpot_s"], _perf("0.6.0", 1)["tpot_s"]
    assert one_old == pytest.approx(one_new, rel=0.02)                 # 50 us against a ~7 ms step
    old, new = _perf("0.5.4"), _perf("0.6.0")
    assert 1.15 < new["max_output_tokens_per_s"] / old["max_output_tokens_per_s"] < 2.7   # the blog's 2.7x has the API
