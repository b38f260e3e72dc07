"""Function Compute GPU (serverless) plans: per-second billing of active instances and the cost of cold starts.

- **Function Compute** (elastic GPU instances, billed on active time): in a segment of rate
  ``lambda``, the expected number of *active* instances is ``max(lambda / mu, 1 - exp(-lambda L))``
  where ``mu`` is one instance's max requests/s at the SLA and ``L`` one request's latency: with
  sparse traffic each request keeps an instance busy for its own latency (``1 - exp(-lambda L)`` is
  the chance that at least one request is in flight, M/G/inf), with dense traffic instances run
  batched at capacity (``lambda / mu``). Each active second costs ``slice GB x GPU factor + vCPU x 1
  + memory GB x 0.15`` compute units (CU); invocations cost 75 CU per 10,000; CU are priced by the
  monthly tier (platforms.yaml, with sources).
- **Cold starts** (FC, minimum instances 0): an instance idle for longer than the keep-alive window
  ``K`` is released; with Poisson arrivals a request finds no warm instance with probability
  ``exp(-lambda K)``. A cold start costs ``container start + weight bytes / load rate`` seconds
  (assumptions, platforms.yaml) of billed time and adds the same to that request's TTFT.
  **Keep-warm** (minimum instances 1 with idle mode): no cold starts; the idle time of the warm
  instance is billed at the idle GPU factor (idle vCPU is free).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuplan.i18n import N_, _
from gpuplan.plan.deploy.platform_data import ColdStart, FcGpuType, FcPricing, cold_start_model, fc_gpu_types, fc_pricing, fx_rate
from gpuplan.plan.record import Plan, PlanAdvice, PlanCost, PlanMemory, rnd
from gpuplan.plan.serving.traffic import (DAYS_PER_MONTH, STATED_TRAFFIC, Traffic, peak_utilization, service_unit_costs,
                                  replicas_for)
from gpuplan.units import HOUR_S

DAY_S = 86400.0
COLD_PROB_FOR_SLA = 0.01        # a policy that misses the TTFT SLA for > 1 % of requests is not primary

EstimateForGpu = Callable[[str, float, float], Any]
_r = rnd


def active_fraction(rate_rps: float, per_instance_rps: float, latency_s: float) -> float:
    """Expected active serverless instances at ``rate_rps``: max(lambda/mu, 1 - exp(-lambda L))."""
    if rate_rps <= 0:
        return 0.0
    fluid = rate_rps / per_instance_rps if per_instance_rps > 0 else math.inf
    sparse = 1.0 - math.exp(-rate_rps * latency_s)
    return max(fluid, sparse)


@dataclass
class ServerlessCost:
    """One month of a Function Compute GPU function under one instance policy."""

    policy: str                   # scale-to-zero | keep-warm
    active_s: float
    idle_s: float
    cold_starts: float
    cold_fraction: float
    cu: float
    cost_usd: float | None
    breakdown_cu: dict = field(default_factory=dict)

    def to_dict(self, fx: float, currency: str) -> dict:
        conv = None if self.cost_usd is None else round(self.cost_usd * fx, 2)
        return {"policy": self.policy, "active_hours_per_month": round(self.active_s / HOUR_S, 3),
                "idle_hours_per_month": round(self.idle_s / HOUR_S, 3),
                "cold_starts_per_month": round(self.cold_starts, 1),
                "cold_request_fraction": round(self.cold_fraction, 6),
                "cu_per_month": round(self.cu, 1), "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 2),
                "monthly_cost": conv, "currency": currency,
                "cu_breakdown": {k: round(v, 1) for k, v in self.breakdown_cu.items()}}


def serverless_month(traffic: Traffic, *, per_instance_rps: float, latency_s: float, slice_gib: float,
                     vcpu: float, memory_gib: float, gpu_active: float | None, gpu_idle: float | None,
                     pricing: FcPricing, cold: ColdStart, cold_start_s: float, policy: str) -> ServerlessCost:
    """Active/idle seconds, cold starts and CU of one month (see the module docstring)."""
    active_day = cold_day = cold_req_day = 0.0
    for s in traffic.segments:
        seg_s = s.hours_per_day * HOUR_S
        active_day += seg_s * active_fraction(s.rate_rps, per_instance_rps, latency_s)
        if policy == "scale-to-zero" and s.rate_rps > 0:
            p_cold = math.exp(-s.rate_rps * cold.keep_alive_s)
            n = s.rate_rps * seg_s * p_cold
            cold_req_day += n
            cold_day += n
    reqs_day = traffic.daily_requests
    active_day += cold_day * cold_start_s                     # cold starts are billed (assumption)
    idle_day = max(0.0, DAY_S - active_day) if policy == "keep-warm" else 0.0
    m = DAYS_PER_MONTH
    active_s, idle_s = active_day * m, idle_day * m
    unknown = gpu_active is None or (policy == "keep-warm" and gpu_idle is None)
    gpu_cu = 0.0 if unknown or gpu_active is None else active_s * slice_gib * gpu_active + idle_s * slice_gib * (gpu_idle or 0.0)
    bd = {"gpu": gpu_cu, "vcpu": active_s * vcpu * pricing.vcpu_active,
          "memory": (active_s + idle_s) * memory_gib * pricing.memory_gb_s,
          "invocations": reqs_day * m / 10_000 * pricing.invocations_per_10k}
    cu = sum(bd.values())
    return ServerlessCost(policy, active_s, idle_s, cold_day * m, (cold_req_day / reqs_day) if reqs_day else 0.0,
                          cu, None if unknown else pricing.cost(cu), bd)


def _fits(est, headroom: float) -> bool:
    from gpuplan.plan.money.ranges import memory_need

    return memory_need(est) <= est.memory.capacity_bytes * (1.0 - headroom)


def _latency_s(perf: dict, output_tokens: int) -> float:
    return float(perf.get("ttft_s") or 0.0) + float(perf.get("tpot_s") or 0.0) * max(0, output_tokens - 1)



def function_compute_plans(w, estimate_for_gpu: EstimateForGpu, traffic: Traffic, *, region: str | None,
                           currency: str, fx, headroom: float = 0.02, priced: tuple[str, int] = ("output", 1)
                           ) -> list[Plan]:
    """One plan per FC GPU type whose smallest fitting slice holds the model. ``priced``: what the month is priced
    per and the tokens per request (serving.traffic.priced_unit, service_unit_costs)."""
    pricing, cold = fc_pricing(), cold_start_model()
    rate = fx_rate(currency, pricing.currency, fx)
    out_tokens = w.output_tokens or 1
    sla_ttft = w.serving.ttft_ms / 1000.0 if w.serving and w.serving.ttft_ms else None
    plans = []
    for g in fc_gpu_types():
        options = []
        for size in g.slices():
            e = estimate_for_gpu(g.gpu, size, min(1.0, size / g.card_memory_gib))
            if e is None or not _fits(e, headroom) or not (e.performance.get("max_requests_per_s") or 0) > 0:
                continue
            options.append(_fc_plan(w, g, size, e, traffic, region=region, currency=currency, rate=rate,
                                    pricing=pricing, cold=cold, out_tokens=out_tokens, sla_ttft=sla_ttft,
                                    priced=priced))
        if options:
            # cheapest known monthly cost; with no price, the smallest slice that serves
            plans.append(min(options, key=lambda p: (p.cost_key is None, p.cost_key or 0.0,
                                                     p.details["gpu_memory_gib"])))
    return plans


def _fc_plan(w, g: FcGpuType, slice_gib: float, est, traffic: Traffic, *, region, currency, rate, pricing,
             cold, out_tokens, sla_ttft, priced: tuple[str, int]) -> Plan:
    """The plan of one FC GPU type and memory slice (both instance policies costed)."""
    perf = {k: v for k, v in est.performance.items() if v is not None}
    mu = float(perf.get("max_requests_per_s") or 0.0)
    latency = _latency_s(perf, out_tokens)
    weights = float(est.memory.components.get("weights", 0.0))
    cold_s = cold.seconds(weights)
    vcpu, mem_gib = g.function_size(slice_gib)
    gpu_active, gpu_idle = pricing.factors(g.series)
    kw = dict(per_instance_rps=mu, latency_s=latency, slice_gib=slice_gib, vcpu=vcpu, memory_gib=mem_gib,
              gpu_active=gpu_active, gpu_idle=gpu_idle, pricing=pricing, cold=cold, cold_start_s=cold_s)
    zero = serverless_month(traffic, policy="scale-to-zero", **kw)
    warm = serverless_month(traffic, policy="keep-warm", **kw)
    ttft = float(perf.get("ttft_s") or 0.0)
    cold_ttft = ttft + cold_s
    zero_misses = sla_ttft is not None and cold_ttft > sla_ttft and zero.cold_fraction > COLD_PROB_FOR_SLA
    primary = warm if zero_misses else zero
    if not zero_misses and zero.cost_usd is not None and warm.cost_usd is not None and warm.cost_usd < zero.cost_usd:
        primary = warm
    active_cu_s = (slice_gib * gpu_active + vcpu * pricing.vcpu_active + mem_gib * pricing.memory_gb_s
                   if gpu_active is not None else None)
    hourly = active_cu_s * HOUR_S * pricing.tiers[0][1] * rate if active_cu_s is not None else None
    replicas = replicas_for(traffic.peak_rps, mu, target_utilization=traffic.target_utilization)
    monthly = primary.cost_usd * rate if primary.cost_usd is not None else None
    warnings = []
    if gpu_active is None:
        warnings.append(_("Function Compute {gpu_type} ({series}) has no published CU factor: price unknown").format(
            gpu_type=g.gpu_type, series=g.series))
    if currency != pricing.currency:
        warnings.append(_("Function Compute prices are the international USD list price (tier 1 USD {price}/CU, "
                          "{date}) converted at {rate} {cur}/USD; the China-site CNY price is not bundled").format(
            price=pricing.tiers[0][1], date=pricing.as_of, rate=f"{rate:g}", cur=currency))
    if g.unconfirmed:
        warnings.append(_("{gpu_type}: unconfirmed {fields} (platforms.yaml)").format(
            gpu_type=g.gpu_type, fields=", ".join(g.unconfirmed)))
    money = (_("{cur} {amount}/month").format(cur=currency, amount=f"{monthly:,.0f}") if monthly is not None
             else _("price unknown"))
    why = (
        _("Function Compute {gpu_type} with {gib} GB GPU memory ({gpu} modelled): one instance serves {rate} req/s; "
          "a request takes {latency} s").format(gpu_type=g.gpu_type, gib=f"{slice_gib:g}", gpu=g.gpu,
                                                rate=f"{mu:.2f}", latency=f"{latency:.1f}"),
        (_("{basis}: {active} active instance-hours/month + {idle} idle (kept warm) = {cu} CU -> {money} ({policy})")
         if primary.idle_s else
         _("{basis}: {active} active instance-hours/month = {cu} CU -> {money} ({policy})")).format(
            basis=traffic.basis, active=f"{primary.active_s / HOUR_S:,.1f}", idle=f"{primary.idle_s / HOUR_S:,.0f}",
            cu=f"{primary.cu:,.0f}", money=money, policy=primary.policy),
    )
    per_output, unit = service_unit_costs(monthly, traffic, priced[0], priced[1], STATED_TRAFFIC)
    cost = PlanCost(currency=currency, billing="payg", region=region, price_region="international",
                    instance_price_per_hour=_r(hourly), price_per_hour=_r(hourly * replicas) if hourly is not None else None,
                    price_estimated=currency != pricing.currency, price_as_of=pricing.as_of, price_source=pricing.source,
                    replicas=replicas, monthly_cost=monthly, utilization=peak_utilization(traffic, replicas, mu),
                    cost_per_million_output_tokens=per_output, unit_cost=unit)
    details = {
        "cold_start": {"seconds": _r(cold_s, 2), "ttft_cold_s": _r(cold_ttft, 3), "ttft_warm_s": _r(ttft, 4),
                       "probability_scale_to_zero": _r(zero.cold_fraction), "keep_alive_s": cold.keep_alive_s,
                       "assumptions": "container start + weights / load rate; keep-alive window (platforms.yaml, unconfirmed)",
                       "note": _cold_note(cold_s, ttft, zero.cold_fraction, sla_ttft, primary.policy)},
        "traffic": traffic.to_dict(), "autoscaling": None,
        "gpu_memory_gib": slice_gib,
        "function": {"gpu_type": g.gpu_type, "gpu_memory_mb": int(slice_gib * 1024), "vcpu": vcpu,
                     "memory_mb": int(mem_gib * 1024), "min_instances": 1 if primary.policy == "keep-warm" else 0,
                     "idle_mode": primary.policy == "keep-warm"},
        "serverless": {"primary_policy": primary.policy,
                       "policies": [zero.to_dict(rate, currency), warm.to_dict(rate, currency)],
                       "per_instance_requests_per_s": _r(mu), "request_latency_s": _r(latency),
                       "cu_per_active_second": _r(active_cu_s), "usd_per_cu_tier1": pricing.tiers[0][1],
                       "fx_to_currency": _r(rate)},
    }
    return Plan(platform="function-compute", instance_type=g.gpu_type, instance_count=replicas, gpu=g.gpu,
                gpus_total=replicas, parallel={"tp": 1, "pp": 1, "dp": 1},
                layout=N_("{gib} GB slice of one {gpu}").format(gib=f"{slice_gib:g}", gpu=g.gpu), memory=PlanMemory.of(est), performance=perf,
                cost=cost, advice=PlanAdvice(why=why, warnings=tuple(warnings)), details=details,
                cost_key=monthly, time_key=latency, estimate=est)


def _cold_note(cold_s: float, ttft: float, p_cold: float, sla: float | None, policy: str) -> str:
    args = {"cold": f"{cold_s:.0f}", "wait": f"{cold_s + ttft:.1f}", "ttft": f"{ttft:.2f}", "share": f"{p_cold:.1%}",
            "sla": f"{(sla or 0) * 1000:.0f}"}
    if policy == "keep-warm":
        return _("cold start about {cold} s (assumed): a request that finds no warm instance waits {wait} s for its "
                 "first token instead of {ttft} s; with minimum instances 0 {share} of requests are cold; plan keeps 1 "
                 "instance warm in idle mode (no cold starts below one instance's capacity)").format(**args)
    if sla is not None and cold_s + ttft > sla and p_cold > 0:
        return _("cold start about {cold} s (assumed): a request that finds no warm instance waits {wait} s for its "
                 "first token instead of {ttft} s; with minimum instances 0 {share} of requests are cold; those miss "
                 "the {sla} ms TTFT SLA").format(**args)
    return _("cold start about {cold} s (assumed): a request that finds no warm instance waits {wait} s for its first "
             "token instead of {ttft} s; with minimum instances 0 {share} of requests are cold").format(**args)


