"""A finite batch of requests queued at once ends with its longest request (estimate/serving/burst.py).

Published serving throughput is mostly `vllm bench serve` at request rate inf over a few hundred ShareGPT prompts:
a job of N requests whose queue empties and whose last sequences finish one by one while each step still reads
every weight. The estimate ran the replica's steady rate to the end: GPUStack's 1,000-prompt bursts on the H100
(held-out sets 2 and 4, exposed) were estimated 1.6-2x too fast, Lambda's 320-prompt runs 2.4-3.5x."""

from __future__ import annotations

import math

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.memory.engine_limits import default_max_num_seqs
from gpuplan.estimate.serving.burst import burst_s, drain_steps
from gpuplan.estimate.serving.inference import job_time_s

JOB = {"model": "mistralai/Mistral-7B-Instruct-v0.3", "task": "inference", "framework": "vllm",
       "prompt_tokens": 230, "output_tokens": 224, "hardware": {"gpu": "H100-SXM-80GB", "count": 1}}


def _est(items: int, **more):
    return estimate({**JOB, "dataset": {"items": items}, **more})


def test_fixed_lengths_beyond_the_batch_run_at_the_steady_rate():
    e = _est(20000)
    p, model = e.performance, e.serving_model
    b = p["serving_batch"]
    assert p["job_time_s"] == pytest.approx(20000 / model.rate(b), rel=1e-9)
    assert p["job_time_s"] == pytest.approx(20000 / p["max_requests_per_s"], rel=1e-6)
    low, high = e.to_dict()["intervals"]["performance.job_time_s"]     # a time figure: its 80 % range
    assert low < p["job_time_s"] < high


def test_a_batch_smaller_than_the_slots_runs_only_its_own_sequences():
    e = _est(100)
    model, b = e.serving_model, e.performance["serving_batch"]
    assert b > 100
    # its prompts, then 224 steps of a batch of 100: slower per request than a full batch of b
    assert e.performance["job_time_s"] == pytest.approx(100 / model.rate(100), rel=1e-9)
    assert e.performance["job_time_s"] > 100 / model.rate(b)


def test_varying_lengths_drain_to_the_longest_and_the_drain_fades_with_the_job():
    fixed = {n: _est(n).performance["job_time_s"] for n in (320, 1000, 100000)}
    varying = {n: _est(n, max_output_tokens=1800).performance["job_time_s"] for n in (320, 1000, 100000)}
    for n in fixed:
        assert varying[n] > fixed[n]
    extra = {n: varying[n] / fixed[n] - 1 for n in fixed}
    assert extra[320] > 1.0                  # 320 ShareGPT-like prompts: the tail doubles the time at least
    assert extra[320] > extra[1000] > extra[100000]
    assert extra[100000] < 0.02              # a real job: the tail is noise


def test_the_drain_lasts_until_the_expected_longest_of_k_exponential_lengths():
    # H_K = ln K + gamma + 1/(2K): K = 1000, mean 200 -> ~1497 steps; cut at the cap; fixed lengths: the mean
    assert drain_steps(1000, 200, 4000) == pytest.approx(200 * (math.log(1000) + 0.5772156649 + 0.0005), rel=1e-6)
    assert drain_steps(1000, 200, 1200) == 1200
    assert drain_steps(1000, 200, None) == 200
    assert drain_steps(1, 200, 4000) == pytest.approx(200 * (0.5772156649 + 0.5), rel=1e-6)
    assert drain_steps(1, 200, 150) == 200   # never shorter than the mean


def test_burst_is_zero_for_nothing_to_do():
    e = _est(1000)
    assert burst_s(e.serving_model, 0, e.performance["serving_batch"]) == 0.0
    assert job_time_s(None, 1, 4.0, 100, None) == pytest.approx(25.0)   # static batches: the steady rate


def test_a_stated_batch_limit_caps_the_replica():
    capped = _est(1000, serving={"max_num_seqs": 64})
    free = _est(1000)
    assert capped.performance["serving_batch"] == 64 < free.performance["serving_batch"]
    assert capped.performance["job_time_s"] > free.performance["job_time_s"]


def test_max_output_tokens_below_the_mean_is_one_clear_error():
    from gpuplan.errors import GpuplanError

    with pytest.raises(GpuplanError, match="max_output_tokens"):
        _est(10, max_output_tokens=100)
    no_mean = {k: v for k, v in JOB.items() if k != "output_tokens"}
    with pytest.raises(GpuplanError, match="max_output_tokens needs output_tokens"):
        estimate({**no_mean, "dataset": {"items": 10}, "max_output_tokens": 100})


@pytest.mark.parametrize("version, gpu, memory, want", [
    (None, "H100-SXM-80GB", 80, 1024), ("0.11.0", "H200-141GB", 141, 1024), ("0.9.2", "A100-SXM4-80GB", 80, 256),
    ("0.9.2", "L40S-48GB", 48, 256), ("0.5.4", "H100-SXM-80GB", 80, 256)])
def test_vllm_default_batch_limit_by_release_and_gpu(version, gpu, memory, want):
    assert default_max_num_seqs("vllm", version, gpu, memory) == want


def test_engines_without_a_fixed_default_have_none():
    assert default_max_num_seqs("sglang", None, "H100-SXM-80GB", 80) is None


def test_a_job_plan_takes_the_estimates_job_time():
    """recommend times an LLM job with the estimate's own function: the plan's run time is the estimate's job_time_s
    on the plan's machine (one function for one figure)."""
    from gpuplan.plan import recommend

    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 230, "output_tokens": 224,
         "max_output_tokens": 1800, "dataset": {"items": 2000},
         "constraints": {"regions": ["cn-beijing"], "billing": ["payg"]}}
    p = recommend(w).best
    e = estimate({**w, "hardware": {"instance_type": p.instance_type}, "framework": p.parallel["framework"]})
    run = p.cost.time_s - sum(p.cost.fixed.values())
    assert p.cost.job["replicas"] == 1
    assert run == pytest.approx(e.performance["job_time_s"], rel=1e-6)
    assert any("last requests finish one by one" in line for line in p.advice.why)


def test_the_launch_admits_the_longest_output(tmp_path):
    """With varying lengths the server must accept a prompt plus the longest output, not the mean: serve.sh's
    --max-model-len is prompt + max_output_tokens."""
    from gpuplan import build_plan

    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 230, "output_tokens": 224,
         "max_output_tokens": 1800, "dataset": {"items": 2000}, "framework": "vllm",
         "constraints": {"regions": ["cn-beijing"], "billing": ["payg"]}}
    build_plan(w, tmp_path / "b")
    serve = (tmp_path / "b" / "serve.sh").read_text()
    assert "--max-model-len 2030" in serve
