"""Serving platforms beside raw ECS: Function Compute GPU (serverless), PAI-EAS and ACK GPU node pools.

The question: for the user's request pattern, does an always-on replica or per-second serverless
billing cost less, and what do cold starts do to the time to first token?

Traffic (:class:`Traffic`) is a day of segments ``(hours, requests/s)`` built from the workload's
``serving`` block: a steady ``requests_per_s``; or ``peak_requests_per_s`` for ``peak_hours_per_day``
hours and ``requests_per_s`` the rest of the day; or ``requests_per_day`` spread over
``peak_hours_per_day`` (default 24) hours. A month is 730 h (``units.HOURS_PER_MONTH``), i.e.
730 / 24 = 30.42 days.

Costs:

- **Always-on** (ECS, EAS): replicas = ceil(peak rate / (one replica's max requests/s x 1/1.15)); monthly =
  replicas x hourly price x 730 h.
- **Following traffic** (ACK node pool with HPA + cluster autoscaler, or an ESS scaling group):
  for each segment, ceil(rate / per-replica rate) replicas (at least ``min_replicas``) x hours; the
  ECS pay-as-you-go price per node-hour, plus the ACK Pro management fee for 730 h.
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

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

import yaml

from gpuplan.i18n import N_, _
from gpuplan.plan.record import Plan, PlanAdvice, PlanCost, PlanMemory, rnd
from gpuplan.units import GIB, HOUR_S, HOURS_PER_MONTH

DAYS_PER_MONTH = HOURS_PER_MONTH / 24.0
DAY_S = 86400.0
PLATFORMS = ("function-compute", "pai-eas", "ack")
COLD_PROB_FOR_SLA = 0.01        # a policy that misses the TTFT SLA for > 1 % of requests is not primary


# ================================================================================ data

@functools.cache
def load_platforms() -> dict[str, Any]:
    """data/clouds/alibaba/platforms.yaml (read once, on first use)."""
    path = files("gpuplan") / "data" / "clouds" / "alibaba" / "platforms.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class FcGpuType:
    """One Function Compute GPU type (``gpuConfig.gpuType``)."""

    gpu_type: str
    series: str
    gpu: str
    card_memory_gib: float
    slice_step_gib: float
    min_slice_gib: float
    vcpu: float | None
    memory_gib: float | None
    max_vcpu_per_gib: float | None
    max_memory_gib_per_gpu_gib: float | None
    as_of: str
    source: str
    unconfirmed: tuple[str, ...]

    def slices(self) -> list[float]:
        """Allowed GPU memory sizes (GiB), smallest first."""
        out, s = [], self.min_slice_gib
        while s <= self.card_memory_gib + 1e-9:
            out.append(s)
            s += self.slice_step_gib
        return out

    def function_size(self, slice_gib: float) -> tuple[float, float]:
        """(vCPU, memory GB) assumed for a function with this slice: the largest the docs allow."""
        vcpu = self.vcpu if self.vcpu is not None else (self.max_vcpu_per_gib or 0.5) * slice_gib
        mem = self.memory_gib if self.memory_gib is not None else (self.max_memory_gib_per_gpu_gib or 2) * slice_gib
        return float(vcpu), float(mem)


def fc_gpu_types() -> list[FcGpuType]:
    out = []
    for e in load_platforms()["function_compute"]["gpu_types"]:
        out.append(FcGpuType(e["gpu_type"], e["series"], e["gpu"], float(e["card_memory_gib"]),
                             float(e["slice_step_gib"]), float(e["min_slice_gib"]), e.get("vcpu"), e.get("memory_gib"),
                             e.get("max_vcpu_per_gib"), e.get("max_memory_gib_per_gpu_gib"), str(e["as_of"]),
                             e["source"], tuple(e.get("unconfirmed") or ())))
    return out


@dataclass(frozen=True)
class FcPricing:
    """CU tiers (USD) and conversion factors; ``None`` factors mean the price is unknown."""

    tiers: tuple[tuple[float | None, float], ...]
    currency: str
    gpu_factors: dict
    vcpu_active: float
    memory_gb_s: float
    invocations_per_10k: float
    as_of: str
    source: str

    def factors(self, series: str) -> tuple[float | None, float | None]:
        f = self.gpu_factors.get(series) or {}
        return f.get("active"), f.get("idle")

    def cost(self, cu: float) -> float:
        """Tiered monthly cost of ``cu`` compute units, in ``currency``."""
        total, lower = 0.0, 0.0
        for upper, price in self.tiers:
            top = cu if upper is None else min(cu, upper)
            if top > lower:
                total += (top - lower) * price
            if upper is None or cu <= upper:
                break
            lower = upper
        return total


def fc_pricing() -> FcPricing:
    p = load_platforms()["function_compute"]["pricing"]
    conv = p["conversion"]
    return FcPricing(tuple((t["up_to_cu"], float(t["price_per_cu"])) for t in p["tiers"]), p["currency"],
                     conv["gpu_gb_s"], float(conv["active_vcpu_s"]), float(conv["memory_gb_s"]),
                     float(conv["invocations_per_10k"]), str(p["as_of"]), p["source"])


@dataclass(frozen=True)
class ColdStart:
    container_start_s: float
    weight_load_gb_s: float
    keep_alive_s: float
    source: str

    def seconds(self, weight_bytes: float) -> float:
        return self.container_start_s + weight_bytes / (self.weight_load_gb_s * 1e9)


def cold_start_model() -> ColdStart:
    c = load_platforms()["function_compute"]["cold_start"]
    return ColdStart(float(c["container_start_s"]), float(c["weight_load_gb_s"]), float(c["keep_alive_s"]), c["source"])


# ================================================================================ traffic

@dataclass(frozen=True)
class Segment:
    hours_per_day: float
    rate_rps: float


@dataclass(frozen=True)
class Traffic:
    """One day of request traffic as (hours, requests/s) segments covering 24 h."""

    segments: tuple[Segment, ...]
    basis: str
    target_utilization: float | None = None   # serving.target_utilization (None: 1/1.15, plan/queueing.py)

    @property
    def daily_requests(self) -> float:
        return sum(s.hours_per_day * HOUR_S * s.rate_rps for s in self.segments)

    @property
    def peak_rps(self) -> float:
        return max((s.rate_rps for s in self.segments), default=0.0)

    @property
    def offpeak_rps(self) -> float:
        return min((s.rate_rps for s in self.segments), default=0.0)

    @property
    def monthly_requests(self) -> float:
        return self.daily_requests * DAYS_PER_MONTH

    def to_dict(self) -> dict:
        return {"basis": self.basis, "requests_per_day": round(self.daily_requests, 3),
                "peak_requests_per_s": round(self.peak_rps, 6),
                "segments": [{"hours_per_day": s.hours_per_day, "requests_per_s": round(s.rate_rps, 6)}
                             for s in self.segments]}


def traffic_profile(serving) -> Traffic | None:
    """The day's traffic from a ``ServingSpec`` (or None when no rate is given)."""
    if serving is None:
        return None
    rps, peak, per_day = serving.requests_per_s, serving.peak_requests_per_s, serving.requests_per_day
    hours = serving.peak_hours_per_day
    if per_day:
        h = hours or 24.0
        if peak:
            busy = min(per_day, peak * h * HOUR_S)
            rest = per_day - busy
            segs = [Segment(h, busy / (h * HOUR_S))]
            if h < 24:
                segs.append(Segment(24.0 - h, rest / ((24.0 - h) * HOUR_S)))
            return Traffic(tuple(segs), _("{per_day} requests/day, peak {peak}/s for {h} h").format(
                per_day=f"{per_day:g}", peak=f"{peak:g}", h=f"{h:g}"))
        segs = [Segment(h, per_day / (h * HOUR_S))]
        if h < 24:
            segs.append(Segment(24.0 - h, 0.0))
        return Traffic(tuple(segs), _("{per_day} requests/day over {h} h").format(per_day=f"{per_day:g}", h=f"{h:g}"))
    if rps and peak and hours and hours < 24:
        return Traffic((Segment(hours, peak), Segment(24.0 - hours, rps)),
                       _("{peak} requests/s for {h} h, {rps} requests/s otherwise").format(
                           peak=f"{peak:g}", h=f"{hours:g}", rps=f"{rps:g}"))
    if rps:
        return Traffic((Segment(24.0, rps),), _("steady {rps} requests/s").format(rps=f"{rps:g}"))
    if peak:
        h = hours or 24.0
        segs = [Segment(h, peak)] + ([Segment(24.0 - h, 0.0)] if h < 24 else [])
        return Traffic(tuple(segs), _("{peak} requests/s for {h} h").format(peak=f"{peak:g}", h=f"{h:g}"))
    return None


# ================================================================================ costing primitives

def replicas_for(rate_rps: float, per_replica_rps: float, minimum: int = 1,
                 target_utilization: float | None = None) -> int:
    """Replicas that serve ``rate_rps`` with headroom: ceil(rate / (capacity x target utilisation)), at
    least ``minimum``. The target defaults to 1/1.15 (capacity 15 % above demand, plan/queueing.py)."""
    from gpuplan.plan.queueing import DEFAULT_TARGET_UTILIZATION

    if per_replica_rps <= 0:
        return max(minimum, 1)
    u = target_utilization or DEFAULT_TARGET_UTILIZATION
    return max(minimum, math.ceil(rate_rps / (per_replica_rps * u) - 1e-9))


def always_on_monthly(price_per_hour: float, replicas: int, nodes_per_replica: int = 1) -> float:
    """Always-on replicas: price x 730 h x replicas x nodes."""
    return price_per_hour * HOURS_PER_MONTH * replicas * nodes_per_replica


def scaled_node_hours(traffic: Traffic, per_replica_rps: float, min_replicas: int = 1,
                      nodes_per_replica: int = 1) -> float:
    """Node-hours per month when the replica count follows the traffic segments."""
    day = sum(s.hours_per_day * replicas_for(s.rate_rps, per_replica_rps, min_replicas, traffic.target_utilization)
              for s in traffic.segments)
    return day * DAYS_PER_MONTH * nodes_per_replica


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


# ================================================================================ estimates

EstimateForGpu = Callable[[str, float, float], Any]


def gpu_estimator(workload, model=None) -> EstimateForGpu:
    """``estimate_for_gpu(gpu_id, memory_gib, fraction)``: the workload on one GPU, or a slice of one
    (``fraction`` of its compute and bandwidth, ``memory_gib`` of memory). Cached per argument."""
    from gpuplan.catalog.gpus import get_gpu
    from gpuplan.catalog.models import resolve_model
    from gpuplan.errors import GpuplanError
    from gpuplan.estimate.core import estimate_resolved
    from gpuplan.estimate.system import Layout, System
    w = _resolved(workload)
    m = model or resolve_model(w.model)

    @functools.cache
    def run(gpu_id: str, memory_gib: float, fraction: float):
        try:
            gpu = get_gpu(gpu_id)
        except GpuplanError:
            return None
        cap = memory_gib * GIB if fraction < 1 else None
        system = System(gpu=gpu, gpus_per_node=1, nodes=1, intra_link="none", gpu_fraction=fraction,
                        capacity_override_bytes=cap)
        layout = Layout(tp=1, pp=1, dp=1, zero=0, fsdp="none", offload="none", checkpointing="none",
                        micro_batch=w.batch_size or 1, grad_accum=1, microbatches=1)
        try:
            return estimate_resolved(w, m, system, layout, with_suggestions=False)
        except GpuplanError:
            return None

    return run


def _resolved(workload):
    """A Workload with defaults filled, from a Workload, a mapping or a file path."""
    from gpuplan.workload import Workload
    from gpuplan.workload_defaults import resolve_defaults
    from gpuplan.workload_loading import load_workload

    w = workload if isinstance(workload, Workload) else load_workload(workload)
    return resolve_defaults(w)[0]


def _fits(est, headroom: float) -> bool:
    mem = est.memory
    return mem.per_gpu_bytes <= mem.capacity_bytes * (1.0 - headroom)


def _latency_s(perf: dict, output_tokens: int) -> float:
    return float(perf.get("ttft_s") or 0.0) + float(perf.get("tpot_s") or 0.0) * max(0, output_tokens - 1)


# ================================================================================ plans

_r = rnd


def _fx_rate(currency: str, src: str, fx) -> float:
    if currency == src:
        return 1.0
    return fx.convert(1.0, src, currency)


def _util(traffic: Traffic, replicas: int, per_replica_rps: float) -> float | None:
    """Peak demand / capacity of ``replicas`` (the plan's utilisation at the peak)."""
    if replicas <= 0 or per_replica_rps <= 0:
        return None
    return traffic.peak_rps / (replicas * per_replica_rps)


def _per_million(monthly: float | None, traffic: Traffic, output_tokens: int) -> float | None:
    tokens = traffic.monthly_requests * output_tokens
    if monthly is None or tokens <= 0:
        return None
    return monthly / tokens * 1e6


def function_compute_plans(w, estimate_for_gpu: EstimateForGpu, traffic: Traffic, *, region: str | None,
                           currency: str, fx, headroom: float = 0.02) -> list[Plan]:
    """One plan per FC GPU type whose smallest fitting slice holds the model."""
    pricing, cold = fc_pricing(), cold_start_model()
    rate = _fx_rate(currency, pricing.currency, fx)
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
                                    pricing=pricing, cold=cold, out_tokens=out_tokens, sla_ttft=sla_ttft))
        if options:
            # cheapest known monthly cost; with no price, the smallest slice that serves
            plans.append(min(options, key=lambda p: (p.cost_key is None, p.cost_key or 0.0,
                                                     p.details["gpu_memory_gib"])))
    return plans


def _fc_plan(w, g: FcGpuType, slice_gib: float, est, traffic: Traffic, *, region, currency, rate, pricing,
             cold, out_tokens, sla_ttft) -> Plan:
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
    cost = PlanCost(currency=currency, billing="payg", region=region, price_region="international",
                    instance_price_per_hour=_r(hourly), price_per_hour=_r(hourly * replicas) if hourly is not None else None,
                    price_estimated=currency != pricing.currency, price_as_of=pricing.as_of, price_source=pricing.source,
                    replicas=replicas, monthly_cost=monthly, utilization=_util(traffic, replicas, mu),
                    cost_per_million_output_tokens=_per_million(monthly, traffic, out_tokens))
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


def _ecs_rate(plan: Plan) -> float:
    """Requests/s one replica of an ECS plan serves (all its data-parallel groups)."""
    dp = plan.parallel.get("dp") or 1
    return float(plan.performance.get("max_requests_per_s") or 0.0) * dp


def _on_ecs(e: Plan, platform: str, region: str | None, currency: str, *, replicas: int, instance_count: int,
            gpus_total: int, cost: dict, details: dict, why: str, warnings: list[str], cost_key, time_key) -> Plan:
    """A managed plan on the instance type, layout and estimate of an ECS plan."""
    return Plan(platform=platform, instance_type=e.instance_type, instance_count=instance_count, gpu=e.gpu,
                gpus_total=gpus_total, parallel=e.parallel, layout=e.layout, memory=e.memory,
                performance=e.performance,
                cost=PlanCost(currency=currency, billing="payg", region=region, replicas=replicas, **cost),
                advice=PlanAdvice(why=(why,), warnings=tuple(warnings)),
                details={"cold_start": None, "traffic": None, "autoscaling": None, **details},
                cost_key=cost_key, time_key=time_key, estimate=e.estimate)


def ack_plans(ecs_plans: Sequence[Plan], traffic: Traffic, *, currency: str, fx, output_tokens: int = 1,
              scaling_only: bool = False) -> list[Plan]:
    """ACK managed Pro cluster + GPU node pool per ECS instance type (pay-as-you-go nodes follow traffic).
    ``scaling_only`` (ECS plans are shown too): a node pool that never scales (as many replicas off-peak as at
    the peak) is its ECS plan plus the management fee, the same machine listed twice: left out."""
    fee = load_platforms()["ack"]["management_fee"]
    fee_rate = _fx_rate(currency, fee["currency"], fx)
    fee_month = float(fee["pro_per_hour"]) * fee_rate * HOURS_PER_MONTH
    out, seen = [], set()
    for e in ecs_plans:
        if not e.is_ecs or e.cost.billing != "payg" or e.instance_type in seen:
            continue
        mu = _ecs_rate(e)
        if mu <= 0:
            continue
        seen.add(e.instance_type)
        nodes = e.nodes_per_replica
        price = e.cost.instance_price_per_hour
        node_hours = scaled_node_hours(traffic, mu, 1, nodes)
        u = traffic.target_utilization
        min_r, max_r = replicas_for(traffic.offpeak_rps, mu, 1, u), replicas_for(traffic.peak_rps, mu, 1, u)
        if scaling_only and min_r == max_r:
            continue
        monthly = node_hours * price + fee_month if price is not None else None
        warnings = []
        if fee_rate != 1.0:
            warnings.append(_("ACK management fee is USD {fee}/h ({date}) converted at {rate} {cur}/USD").format(
                fee=fee["pro_per_hour"], date=fee["as_of"], rate=f"{fee_rate:g}", cur=currency))
        out.append(_on_ecs(
            e, "ack", e.cost.region, currency, replicas=max_r, instance_count=max_r * nodes,
            gpus_total=max_r * e.gpus_per_replica,
            cost={"price_region": e.cost.price_region, "instance_price_per_hour": price,
                  "price_per_hour": _r(price * max_r * nodes) if price is not None else None,
                  "price_estimated": e.cost.price_estimated, "price_kind": e.cost.price_kind,
                  "price_rule": e.cost.price_rule, "price_margin": e.cost.price_margin,
                  "price_as_of": e.cost.price_as_of, "utilization": _util(traffic, max_r, mu),
                  "price_source": e.cost.price_source, "monthly_cost": monthly,
                  "cost_per_million_output_tokens": _per_million(monthly, traffic, output_tokens)},
            details={"traffic": traffic.to_dict(),
                     "management_fee": {"per_hour": fee["pro_per_hour"], "currency": fee["currency"],
                                        "monthly": _r(fee_month, 2), "as_of": str(fee["as_of"]), "source": fee["source"]},
                     "autoscaling": {"min_replicas": min_r, "max_replicas": max_r,
                                     "node_hours_per_month": _r(node_hours, 2), "per_replica_requests_per_s": _r(mu)},
                     "cold_start": {"note": "HPA adds pods on warm nodes in seconds; a new GPU node takes minutes to "
                                            "join (node start + image pull + model load): keep min_replicas for the "
                                            "off-peak rate"}},
            why=_("ACK Pro node pool of {instance}: {min}-{max} replicas follow {basis}; {hours} node-hours/month + "
                  "management fee {cur} {fee}/month").format(instance=e.instance_type, min=min_r, max=max_r,
                                                            basis=traffic.basis, hours=f"{node_hours:,.0f}",
                                                            cur=currency, fee=f"{fee_month:,.0f}"),
            warnings=warnings, cost_key=monthly, time_key=e.time_key))
    return out


def pai_eas_plans(ecs_plans: Sequence[Plan], traffic: Traffic, *, currency: str, output_tokens: int = 1) -> list[Plan]:
    """PAI-EAS public resources on the same instance specs; prices unknown unless platforms.yaml has one."""
    eas = load_platforms()["pai_eas"]
    prices = {r["instance_type"]: r for r in eas.get("resources") or ()}
    out, seen = [], set()
    for e in ecs_plans:
        it = e.instance_type
        if not e.is_ecs or it in seen or it not in prices:
            continue
        mu = _ecs_rate(e)
        if mu <= 0:
            continue
        seen.add(it)
        row = prices[it]
        price = row.get("price_per_hour") if row.get("currency") == currency else None
        replicas = replicas_for(traffic.peak_rps, mu, target_utilization=traffic.target_utilization)
        monthly = always_on_monthly(price, replicas) if price is not None else None
        warnings = []
        if price is None:
            warnings.append(_("PAI-EAS price for {instance} is not bundled: monthly cost unknown (check the EAS "
                              "console or pass your quote)").format(instance=it))
        out.append(_on_ecs(
            e, "pai-eas", e.cost.region, currency, replicas=replicas, instance_count=replicas,
            gpus_total=e.gpus_total,
            cost={"price_region": e.cost.region, "instance_price_per_hour": price,
                  "price_per_hour": _r(price * replicas) if price is not None else None,
                  "price_as_of": row.get("as_of"), "price_source": row.get("source") or eas["source"],
                  "monthly_cost": monthly, "utilization": _util(traffic, replicas, mu),
                  "cost_per_million_output_tokens": _per_million(monthly, traffic, output_tokens)},
            details={"traffic": traffic.to_dict()},
            why=_("PAI-EAS public resources, {replicas} x {instance}: billed per running minute of each instance "
                  "({source})").format(replicas=replicas, instance=it, source=eas["source"]),
            warnings=warnings, cost_key=monthly, time_key=e.time_key))
    return out


def platform_plans(workload, estimate_for_gpu: EstimateForGpu | None = None, *, ecs_plans: Iterable[Plan] = (),
                   currency: str | None = None, region: str | None = None, fx=None,
                   platforms: Iterable[str] = PLATFORMS, headroom: float = 0.02, with_ecs: bool = False) -> list[Plan]:
    """Serving plans on Function Compute, PAI-EAS and ACK for an inference workload with a request rate.
    ``with_ecs``: the ECS plans are shown beside these (an ACK pool that never scales is then left out).

    ``estimate_for_gpu(gpu_id, memory_gib, fraction)`` estimates the workload on one GPU or slice
    (default: :func:`gpu_estimator`). ``ecs_plans``: the recommender's ECS plans (ACK and EAS reuse
    their instance types, layouts, estimates, per-replica rates and prices). Returns plan records
    (``platform`` set; ``details`` holds ``traffic``, ``cold_start``, ``serverless``/``autoscaling``) and the
    ranking keys ``cost_key`` (monthly cost, None = unknown) and ``time_key`` (request latency).
    Training workloads and workloads without a request rate get no platform plans.
    """
    w = _resolved(workload)
    if (w.task or "inference") != "inference":
        return []
    traffic = traffic_profile(w.serving)
    if traffic is None or traffic.daily_requests <= 0:
        return []
    if w.serving.target_utilization:
        from dataclasses import replace as _replace

        traffic = _replace(traffic, target_utilization=w.serving.target_utilization)
    if fx is None:
        from gpuplan.plan.cost import load_fx

        fx = load_fx()
    cons = w.constraints
    currency = currency or (cons.currency if cons else "CNY")
    if region is None:
        region = (cons.regions[0].strip().lower() if cons and cons.regions else "cn-shanghai")
    wanted = set(platforms)
    ecs = list(ecs_plans)
    tokens = w.output_tokens or 1
    out: list[Plan] = []
    if "function-compute" in wanted:
        est = estimate_for_gpu or gpu_estimator(w)
        out += function_compute_plans(w, est, traffic, region=region, currency=currency, fx=fx, headroom=headroom)
    if "ack" in wanted:
        out += ack_plans(ecs, traffic, currency=currency, fx=fx, output_tokens=tokens, scaling_only=with_ecs)
    if "pai-eas" in wanted:
        out += pai_eas_plans(ecs, traffic, currency=currency, output_tokens=tokens)
    return out


def compare(fc_plan: Plan, ecs_monthly: float) -> dict:
    """Serverless versus an always-on ECS fleet: both monthly costs, the winner and the ratio."""
    fc = rnd(fc_plan.cost.monthly_cost)
    if fc is None:
        return {"function_compute": None, "always_on": ecs_monthly, "winner": "unknown", "ratio": None}
    return {"function_compute": fc, "always_on": round(ecs_monthly, 2),
            "winner": "function-compute" if fc < ecs_monthly else "always-on", "ratio": round(fc / ecs_monthly, 4)}
