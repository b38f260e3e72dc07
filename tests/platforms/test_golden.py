"""Golden cases: Function Compute (per-second serverless) against an always-on gn7i fleet.

Model Qwen2.5-7B-Instruct, 1024 prompt + 256 output tokens. The gn7i figures come from the
recommender (ecs.gn7i-c8g1.2xlarge, A10 24 GB: 2.427 req/s per replica at the 2 s TTFT / 100 ms TPOT SLA, the
p90 TTFT under load binding, issue 29's load model: 66 batch slots, about 56 sequences running; CNY 9.74/h
pay-as-you-go cn-shanghai, quote dated 2026-09-24 in prices.csv). Function Compute uses the
international list price (USD 0.000020/CU, Ada factor 1.5 CU/GB-s, as of 2024-08-27) converted at the
bundled rate (6.6529 CNY/USD, ECB 2026-10-30; the figures below were
7.0197/6.6529 = 5.5 % higher at the earlier 2026-01-08 rate). A month is 730 h.
"""

from __future__ import annotations

import pytest

from gpuplan.plan.platforms import compare, platform_plans
from gpuplan.plan.traffic import always_on_monthly

GN7I = "ecs.gn7i-c8g1.2xlarge"
GN7I_PRICE = 9.74


def _ecs(rec):
    """The ECS plans of a recommendation, ranked (it also ranks serverless/managed plans beside them, and an
    ACK pool that follows the traffic can push its own always-on ECS plan off the shown list)."""
    return [p for p in rec.all_plans if p.platform == "ecs"]


def _gn7i(rec) -> dict:
    return next(p.to_dict() for p in _ecs(rec) if p.instance_type == GN7I)


def _fc(plans, gpu_type="fc.gpu.ada.1"):
    """The Function Compute plan record of that GPU type."""
    return next(p for p in plans if p.platform == "function-compute" and p.instance_type == gpu_type)


def test_bursty_300_requests_a_day_function_compute_beats_always_on_gn7i(gn7i_recommend):
    # 300 requests/day inside a 10-hour working day; batch-tolerant TTFT (60 s) so scale-to-zero is allowed.
    rec = gn7i_recommend(requests_per_day=300, peak_hours_per_day=10, ttft_ms=60000)
    ecs = _gn7i(rec)
    assert ecs["replicas"] == 1
    assert ecs["monthly_cost"] == pytest.approx(always_on_monthly(GN7I_PRICE, 1)) == pytest.approx(7110.20)
    fc_plan = _fc(platform_plans(rec.workload, ecs_plans=_ecs(rec)))
    fc = fc_plan.to_dict()
    assert fc["serverless"]["primary_policy"] == "scale-to-zero"
    zero = fc["serverless"]["policies"][0]
    # 300/day x 30.42 days: ~16 h of request time + ~750 cold starts x 45 s (assumed) = 25.6 active h/month.
    assert zero["active_hours_per_month"] == pytest.approx(25.58, rel=0.02)
    # 25.58 h x 3,600 s x 84.8 CU/s (48 GB x 1.5 + 8 vCPU + 32 GB x 0.15; 32 GB is the API's memory limit)
    assert zero["cu_per_month"] == pytest.approx(7.81e6, rel=0.02)
    assert fc["monthly_cost"] == pytest.approx(1039.2, rel=0.02)    # 7.81e6 CU x USD 0.00002 x 6.6529 CNY/USD
    verdict = compare(fc_plan, ecs["monthly_cost"])
    assert verdict["winner"] == "function-compute", verdict
    assert verdict["ratio"] < 0.2                          # FC costs about 16 % of the always-on A10
    assert fc["cold_start"]["probability_scale_to_zero"] == pytest.approx(0.082, abs=0.005)
    assert "cold start" in fc["cold_start"]["note"]


def test_bursty_with_a_2s_ttft_sla_needs_keep_warm_and_then_barely_wins(gn7i_recommend):
    # Same volume spread over 24 h with a 2 s TTFT SLA: a 45 s cold start would break the SLA for ~35 %
    # of requests, so the plan keeps one instance warm in idle mode. With the 32 GB of memory the API allows
    # (not 64 GB) that costs about 90 % of an always-on gn7i: close, and the idle-mode rate is what decides it.
    rec = gn7i_recommend(requests_per_day=300, ttft_ms=2000, tpot_ms=100)
    ecs = _gn7i(rec)
    fc_plan = _fc(platform_plans(rec.workload, ecs_plans=_ecs(rec)))
    fc = fc_plan.to_dict()
    assert fc["serverless"]["primary_policy"] == "keep-warm"
    assert fc["cold_start"]["probability_scale_to_zero"] == pytest.approx(0.353, abs=0.01)
    assert fc["monthly_cost"] == pytest.approx(6409.7, rel=0.02)   # 32 GB of function memory (the API's limit)
    verdict = compare(fc_plan, ecs["monthly_cost"])
    assert verdict["winner"] == "function-compute" and 0.85 < verdict["ratio"] < 0.95, verdict   # 6.4k vs 7.1k
    scale_to_zero = fc["serverless"]["policies"][0]["monthly_cost"]
    assert scale_to_zero == pytest.approx(2310.7, rel=0.02)    # cheaper, but misses the SLA on cold requests


def test_steady_20_requests_per_s_function_compute_does_not_beat_gn7i(gn7i_recommend):
    rec = gn7i_recommend(requests_per_s=20, ttft_ms=2000, tpot_ms=100)
    ecs = _gn7i(rec)
    rate = ecs["performance"]["max_requests_per_s"]
    assert rate == pytest.approx(2.427, rel=0.01)
    assert ecs["replicas"] == 10                           # ceil(20 / (2.427 / 1.15)): 15 % headroom
    assert ecs["utilization"] == pytest.approx(20 / (10 * rate), rel=1e-3) and ecs["utilization"] <= 1 / 1.15
    assert ecs["monthly_cost"] == pytest.approx(10 * GN7I_PRICE * 730) == pytest.approx(71102.0, rel=1e-4)
    assert ecs["serving"]["replicas_at_peak"] == 10 and ecs["serving"]["sla_met"] is True
    plans = platform_plans(rec.workload, ecs_plans=_ecs(rec))
    fc_plan = _fc(plans)
    fc = fc_plan.to_dict()
    assert fc["replicas"] == 11                            # ceil(20 / (2.24 / 1.15)) Ada instances at peak
    assert fc["serverless"]["policies"][0]["active_hours_per_month"] == pytest.approx(6532, rel=0.02)
    assert fc["monthly_cost"] == pytest.approx(197743, rel=0.02)   # 32 GB of function memory (the API's limit)
    verdict = compare(fc_plan, ecs["monthly_cost"])
    assert verdict["winner"] == "always-on" and verdict["ratio"] > 1.2, verdict   # 198k vs 22 x gn7i 156k
    ack = next(p.to_dict() for p in plans if p.platform == "ack" and p.instance_type == GN7I)
    assert ack["replicas"] == 10 and ack["autoscaling"]["min_replicas"] == 10
    # 10 nodes x 730 h x 9.74 + USD 0.09/h x 730 h x 6.6529
    assert ack["monthly_cost"] == pytest.approx(10 * 9.74 * 730 + 0.09 * 730 * 6.6529, rel=1e-4)


def test_peak_off_peak_ack_node_pool_follows_traffic(gn7i_recommend):
    rec = gn7i_recommend(requests_per_s=2, peak_requests_per_s=20, peak_hours_per_day=8, ttft_ms=2000)
    ecs = _gn7i(rec)
    assert ecs["replicas"] == 10                           # sized at the peak with 15 % headroom, always on
    ack = next(p.to_dict() for p in platform_plans(rec.workload, ecs_plans=_ecs(rec), platforms=["ack"])
               if p.instance_type == GN7I)
    a = ack["autoscaling"]
    assert (a["min_replicas"], a["max_replicas"]) == (1, 10)   # 2/s off-peak fits one replica of 2.43/s x 1/1.15
    assert a["node_hours_per_month"] == pytest.approx((8 * 10 + 16 * 1) * 730 / 24)
    assert ack["monthly_cost"] < 0.5 * ecs["monthly_cost"]


def test_cost_per_token_is_on_the_stated_traffic_on_every_platform(gn7i_recommend):
    """Issue 29: the peak sizes, the average pays. 2 req/s for 16 h and 20 req/s for 8 h is 8 req/s on average:
    every platform's cost per 1M output tokens is its monthly cost over the month's requests x 256 tokens."""
    rec = gn7i_recommend(requests_per_s=2, peak_requests_per_s=20, peak_hours_per_day=8, ttft_ms=2000)
    tokens = (2 * 16 + 20 * 8) * 3600 * 730 / 24 * 256
    plans = [p.to_dict() for p in rec.all_plans] + [p.to_dict() for p in platform_plans(rec.workload,
                                                                                          ecs_plans=_ecs(rec))]
    priced = [p for p in plans if p["monthly_cost"] is not None and p["cost_per_million_output_tokens"] is not None]
    assert {p["platform"] for p in priced} >= {"ecs", "ack", "function-compute"}
    for p in priced:
        assert p["cost_per_million_output_tokens"] == pytest.approx(p["monthly_cost"] / tokens * 1e6, rel=1e-4), p
    ecs = _gn7i(rec)
    # the always-on fleet bought for the peak costs 2.5 times what it would at peak traffic all day
    assert ecs["cost_per_million_output_tokens"] == pytest.approx(
        ecs["monthly_cost"] / (8 * 3600 * 730 * 256) * 1e6, rel=1e-4)


def test_unknown_prices_stay_unknown(gn7i_recommend):
    rec = gn7i_recommend(requests_per_day=300, peak_hours_per_day=10, ttft_ms=60000)
    plans = platform_plans(rec.workload, ecs_plans=_ecs(rec))
    eas = [p.to_dict() for p in plans if p.platform == "pai-eas"]
    assert eas and all(p["monthly_cost"] is None and p["replicas"] == 1 for p in eas)
    assert all(any("unknown" in w for w in p["warnings"]) for p in eas)
    ampere = _fc(plans, "fc.gpu.ampere.1")                 # A10 slice fits, but its CU factor is unpublished
    assert ampere.cost.monthly_cost is None and ampere.cost_key is None
    assert any("price unknown" in w for w in ampere.advice.warnings)
    assert not any(p.instance_type == "fc.gpu.tesla.1" for p in plans)   # 7B bf16 does not fit 16 GB


def test_training_and_no_rate_give_no_platform_plans():
    assert platform_plans({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"}) == []
    assert platform_plans({"model": "Qwen/Qwen2.5-7B-Instruct"}) == []
