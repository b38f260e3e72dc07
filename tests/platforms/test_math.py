"""The costing primitives, checked against hand arithmetic and the published FC price table."""

from __future__ import annotations

import math

import pytest

from gpuplan.plan.deploy.function_compute import active_fraction
from gpuplan.plan.deploy.platform_data import fc_gpu_types, fc_pricing
from gpuplan.plan.serving.traffic import always_on_monthly, replicas_for, scaled_node_hours, traffic_profile
from gpuplan.workload import ServingSpec


def test_traffic_profiles():
    t = traffic_profile(ServingSpec(requests_per_day=300, peak_hours_per_day=10))
    assert [(s.hours_per_day, round(s.rate_rps, 6)) for s in t.segments] == [(10, round(300 / 36000, 6)), (14, 0.0)]
    assert t.daily_requests == pytest.approx(300)
    t = traffic_profile(ServingSpec(requests_per_s=2, peak_requests_per_s=20, peak_hours_per_day=8))
    assert t.daily_requests == pytest.approx(20 * 8 * 3600 + 2 * 16 * 3600)
    assert (t.peak_rps, t.offpeak_rps) == (20, 2)
    assert traffic_profile(ServingSpec(requests_per_s=20)).daily_requests == pytest.approx(20 * 86400)
    assert traffic_profile(ServingSpec(ttft_ms=100)) is None


def test_active_fraction_limits():
    # sparse: each request is billed for its own latency (lambda x L); dense: lambda / mu instances
    assert active_fraction(1e-4, 2.0, 6.0) == pytest.approx(1 - math.exp(-6e-4))
    assert active_fraction(20, 2.0, 6.0) == pytest.approx(10.0)
    assert active_fraction(0, 2.0, 6.0) == 0.0


def test_replicas_and_always_on():
    # 15 % headroom: 20 / (1.8967 / 1.15) = 12.13 -> 13 (11 would run at 96 %)
    assert replicas_for(20, 1.8967) == 13
    assert replicas_for(20, 1.8967, target_utilization=1.0) == 11
    assert replicas_for(0, 1.8967) == 1
    assert always_on_monthly(9.74, 11) == pytest.approx(78212.2)
    t = traffic_profile(ServingSpec(requests_per_s=2, peak_requests_per_s=20, peak_hours_per_day=8))
    assert scaled_node_hours(t, 1.8967) == pytest.approx((8 * 13 + 16 * 2) * 730 / 24)


def test_cu_tiers_match_the_published_table():
    p = fc_pricing()
    assert p.currency == "USD" and p.as_of == "2024-08-27" and p.source.startswith("https://")
    assert p.cost(100e6) == pytest.approx(2000.0)                      # 1e8 CU x USD 0.000020
    assert p.cost(150e6) == pytest.approx(2000.0 + 50e6 * 0.000017)
    assert p.cost(600e6) == pytest.approx(2000.0 + 400e6 * 0.000017 + 100e6 * 0.000014)
    assert p.factors("tesla") == (2.1, 0.5) and p.factors("ada") == (1.5, 0.25)
    assert p.factors("ampere") == (None, None)                          # not published: unknown


def test_fc_gpu_types_and_slices():
    types = {g.gpu_type: g for g in fc_gpu_types()}
    assert set(types) == {"fc.gpu.tesla.1", "fc.gpu.ampere.1", "fc.gpu.ada.1"}
    tesla = types["fc.gpu.tesla.1"]
    assert tesla.slices() == [float(i) for i in range(1, 17)]          # 1024 MB steps up to 16 GB
    assert tesla.function_size(16) == (8.0, 32.0)
    ada = types["fc.gpu.ada.1"]
    # 8 vCPU and 32 GB: CreateFunction accepts at most 32 GB and 4 GB per vCPU (platforms.yaml function_limits)
    assert ada.slices() == [48.0] and ada.function_size(48) == (8.0, 32.0)
    # one active Ada second: 48 GB x 1.5 + 8 vCPU x 1 + 32 GB x 0.15 = 84.8 CU
    p = fc_pricing()
    assert 48 * p.factors("ada")[0] + 8 * p.vcpu_active + 32 * p.memory_gb_s == pytest.approx(84.8)
