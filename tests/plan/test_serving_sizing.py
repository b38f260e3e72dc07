"""Issue 29 (serving): one latency model sizes and reports; `estimate` = `recommend` on the same machine and layout;
concurrency served or said; prefill/decode pools where they pay; plans that miss the SLA are not feasible."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan import estimate
from gpuplan.plan import recommend
from gpuplan.plan.bundle import workload_for_plan
from gpuplan.plan.recommend import _drop_sla_misses

SERVING = [
    {"model": "deepseek-ai/DeepSeek-R1", "task": "inference", "prompt_tokens": 2048, "output_tokens": 1024,
     "serving": {"requests_per_s": 2, "ttft_ms": 3000, "tpot_ms": 100}},
    {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 1024, "output_tokens": 256,
     "serving": {"requests_per_s": 20, "ttft_ms": 2000, "tpot_ms": 100}},
    {"model": "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "task": "inference", "prompt_tokens": 1000, "output_tokens": 300,
     "serving": {"requests_per_s": 20, "ttft_ms": 2000}, "hardware": {"gpu": "L20-48GB"}},
    {"model": "meta-llama/Llama-3.1-70B-Instruct", "task": "inference", "prompt_tokens": 2000, "output_tokens": 500,
     "serving": {"requests_per_s": 5, "ttft_ms": 3000, "tpot_ms": 60}},
]
FIGURES = ("max_requests_per_s", "serving_batch", "ttft_s", "ttft_p90_s", "tpot_s", "serving_tpot_s",
           "max_concurrency", "prefill_s")
QWEN72_L20 = SERVING[2]
R1_8_USERS = {"model": "deepseek-ai/DeepSeek-R1", "task": "inference", "prompt_tokens": 30000, "output_tokens": 2700,
              "batch_size": 8}


@pytest.fixture(scope="module")
def recs():
    return [recommend(w, top=3) for w in SERVING]


def _estimate_of(rec, plan) -> dict:
    """`gpuplan estimate` of the plan's machine and layout, with the weight format, engine and KV dtype left
    unset as the user left them (estimate chooses them by the recommender's rules)."""
    w = workload_for_plan(rec.workload, plan.to_dict()).model_dump(exclude_none=True)
    for key in ("quantization", "framework", "kv_cache_dtype"):
        w.pop(key, None)
    return estimate(w)


@pytest.mark.parametrize("i", range(len(SERVING)))
def test_estimate_of_the_top_plans_machine_and_layout_gives_its_figures(recs, i):
    rec = recs[i]
    plan = rec.plans[0]
    e = _estimate_of(rec, plan)
    cfg = plan.parallel
    assert (e.workload.framework, e.workload.kv_cache_dtype) == (cfg["engine"], cfg["kv_cache_dtype"])
    for key in FIGURES:
        assert e.performance.get(key) == pytest.approx(plan.performance.get(key), rel=1e-9), key


def test_deepseek_r1_estimate_runs_fp8_as_published():
    e = estimate({"model": "deepseek-ai/DeepSeek-R1", "task": "inference", "hardware": {"gpu": "H20-96GB", "count": 8},
                  "parallel": {"tp": 8}})
    assert e.workload.quantization == "fp8" and e.fits
    assert any("as published" in a for a in e.assumptions)
    assert not any(a == "assumed quantization none" for a in e.assumptions)


def test_the_launch_flag_is_the_batch_limit_the_plan_was_sized_with(recs):
    for rec in recs:
        for p in rec.plans:
            assert p.parallel["max_num_seqs"] == p.serving["max_num_seqs"] == p.performance["serving_batch"]


def test_qwen72b_gptq_on_l20_is_sized_by_its_prefill_not_a_batch_cap(recs):
    """20 req/s of 1,000-token prompts: 2.9 PFLOP/s of prefill, 46 L20s at 55 % of their 119.5 TFLOP/s even
    with no queue; the p90-TTFT queue keeps each copy's prompt lane near half full. The old batch cap (8
    sequences) bought 208-212 L20s."""
    p = recs[2].plans[0]
    flops = 20 * 1000 * 2 * 72.7e9
    assert p.gpus_total >= flops / (119.5e12 * 0.55)
    assert p.gpus_total <= 160
    assert p.serving["max_num_seqs"] > 8
    s = p.serving
    assert s["ttft_p50_s"] < s["ttft_p90_s"] <= 2.0 and s["sla_met"] is True
    assert s["utilization"] > 0.8          # 86 % load: the queue shows in p90, not in p50


def test_a_stated_concurrency_is_served_with_one_requests_ttft():
    rec = recommend(R1_8_USERS, top=3)
    for p in rec.plans:
        s = p.serving
        assert s["engine_copies"] * s["max_num_seqs"] >= 8
        assert s["ttft_p50_s"] < 2.5 * p.performance["prefill_s"]
    assert not any("concurrent sequences asked for" in w for w in rec.warnings)


def test_replicas_at_peak_is_the_count_that_serves_the_peak(recs):
    for rec in recs:
        for p in rec.plans:
            assert p.serving["replicas_at_peak"] == p.replicas


def test_a_plan_that_misses_its_sla_at_the_peak_is_not_feasible(recs):
    p = recs[1].plans[0]
    missed = replace(p, serving={**p.serving, "sla_met": False})
    warnings: list[str] = []
    assert _drop_sla_misses([p, missed], warnings) == [p]
    assert len(warnings) == 1 and "miss the SLA" in warnings[0]


def test_prefill_decode_pools_where_they_cost_less_and_are_launched_as_such():
    w = {"model": "Qwen/Qwen2.5-72B-Instruct", "task": "inference", "prompt_tokens": 8000, "output_tokens": 500,
         "serving": {"requests_per_s": 20, "ttft_ms": 2000, "tpot_ms": 40}}
    rec = recommend(w, top=10)
    pd = [p for p in rec.all_plans if p.serving and p.serving["disaggregation"]]
    assert pd, "long prompts with a tight TPOT: the split pools win somewhere"
    for p in pd:
        d = p.serving["disaggregation"]
        assert p.replicas == d["prefill_replicas"] + d["decode_replicas"]
        assert p.serving["engine"] == "sglang" and p.serving["sla_met"] is True
        assert d["tpot_s"] <= 0.04 and d["ttft_p90_s"] <= 2.0
    # the colocated replicas of the same layout are at least 10 % more
    from gpuplan.plan.serving.disaggregation import SWITCH_GAIN
    p = pd[0]
    colocated = p.estimate.performance["max_requests_per_s"] * int(p.parallel.get("dp") or 1)
    import math
    need = math.ceil(20 / (colocated / 1.15) - 1e-9)
    assert p.replicas <= need * (1 - SWITCH_GAIN)
