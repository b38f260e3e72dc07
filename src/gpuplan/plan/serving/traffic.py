"""A day of serving traffic and the replica arithmetic every serving platform shares.

Traffic (:class:`Traffic`) is a day of segments ``(hours, requests/s)`` built from the workload's
``serving`` block: a steady ``requests_per_s``; or ``peak_requests_per_s`` for ``peak_hours_per_day``
hours and ``requests_per_s`` the rest of the day; or ``requests_per_day`` spread over
``peak_hours_per_day`` (default 24) hours. A month is 730 h (``units.HOURS_PER_MONTH``), i.e.
730 / 24 = 30.42 days.

- **Always-on** (ECS, EAS): replicas = ceil(peak rate / (one replica's max requests/s x 1/1.15)); monthly =
  replicas x hourly price x 730 h.
- **Following traffic** (ACK node pool with HPA + cluster autoscaler, or an ESS scaling group):
  for each segment, ceil(rate / per-replica rate) replicas (at least ``min_replicas``) x hours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.i18n import _
from gpuplan.plan.record import rnd
from gpuplan.units import HOUR_S, HOURS_PER_MONTH

DAYS_PER_MONTH = HOURS_PER_MONTH / 24.0
STATED_TRAFFIC = "on the stated traffic"   # a unit cost's basis: the workload's serving rates


@dataclass(frozen=True)
class Segment:
    hours_per_day: float
    rate_rps: float


@dataclass(frozen=True)
class Traffic:
    """One day of request traffic as (hours, requests/s) segments covering 24 h."""

    segments: tuple[Segment, ...]
    basis: str
    target_utilization: float | None = None   # serving.target_utilization (None: 1/1.15, plan/serving/queueing.py)
    stated_peak_rps: float | None = None      # serving.peak_requests_per_s: the burst every platform is sized for

    @property
    def daily_requests(self) -> float:
        return sum(s.hours_per_day * HOUR_S * s.rate_rps for s in self.segments)

    @property
    def peak_rps(self) -> float:
        """The rate the replicas are sized for: the stated peak (a burst inside the busy hours may exceed their
        average), else the busiest segment's rate."""
        return max(max((s.rate_rps for s in self.segments), default=0.0), self.stated_peak_rps or 0.0)

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
    """The day's traffic from a ``ServingSpec`` (or None when no rate is given); the stated peak rides along
    (``Traffic.peak_rps``) even where the day's segments average it away (requests_per_day over busy hours)."""
    from dataclasses import replace

    got = _segments(serving)
    if got is not None and serving.peak_requests_per_s:
        got = replace(got, stated_peak_rps=float(serving.peak_requests_per_s))
    return got


def _segments(serving) -> Traffic | None:
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



def replicas_for(rate_rps: float, per_replica_rps: float, minimum: int = 1,
                 target_utilization: float | None = None) -> int:
    """Replicas that serve ``rate_rps`` with headroom: ceil(rate / (capacity x target utilisation)), at
    least ``minimum``. The target defaults to 1/1.15 (capacity 15 % above demand, plan/serving/queueing.py)."""
    from gpuplan.plan.serving.queueing import DEFAULT_TARGET_UTILIZATION

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



def peak_utilization(traffic: Traffic, replicas: int, per_replica_rps: float) -> float | None:
    """Peak demand / capacity of ``replicas`` (the plan's utilisation at the peak)."""
    if replicas <= 0 or per_replica_rps <= 0:
        return None
    return traffic.peak_rps / (replicas * per_replica_rps)


def cost_per_million_output_tokens(monthly: float | None, traffic: Traffic, output_tokens: int) -> float | None:
    """The month's cost over the output tokens of the month's requests (the stated average traffic, never the
    peak around the clock): one function for ECS, ACK, PAI-EAS and Function Compute."""
    tokens = traffic.monthly_requests * output_tokens
    if monthly is None or tokens <= 0:
        return None
    return monthly / tokens * 1e6


def service_unit_costs(monthly: float | None, traffic: Traffic, priced: str, tokens: int,
                       basis: str) -> tuple[float | None, dict | None]:
    """(cost per 1M output tokens, unit cost) of a service's month over ``traffic``: one rule for ECS, ACK, PAI-EAS
    and Function Compute. ``priced`` (:func:`priced_unit`): "output" prices an LLM's output tokens (``tokens`` per
    request); "input" a prefill-only LLM's prompt tokens (embeddings, reranking); an item ("image", "video",
    "clip", "request") each request. ``basis``: what the traffic is ("on the stated traffic", ...)."""
    if priced == "output":
        return cost_per_million_output_tokens(monthly, traffic, tokens or 1), None
    if priced == "input":
        cost = cost_per_million_output_tokens(monthly, traffic, tokens or 1)
        return None, {"unit": "1M input tokens", "cost": rnd(cost), "basis": basis}
    return None, {"unit": priced, "cost": rnd(cost_per_request(monthly, traffic)), "basis": basis}


def priced_unit(model, llm: bool, output_tokens: int | None) -> str:
    """What a service of ``model`` is priced per: an LLM's output tokens ("output"), a prefill-only LLM's input
    tokens ("input", no output tokens), else its item (an image or video of a diffusion model, a clip of a speech
    model, a request)."""
    if llm:
        return "input" if output_tokens == 0 else "output"
    kind = getattr(model, "kind", "")
    if kind == "diffusion" and ((getattr(getattr(model, "profile", None), "pipeline", None) or {}).get("video")):
        return "video"
    return "image" if kind == "diffusion" else "clip" if kind in ("speech", "asr", "whisper", "audio") else "request"


def cost_per_request(monthly: float | None, traffic: Traffic) -> float | None:
    """The month's cost over the month's requests (per item: an image, a clip, a scored document)."""
    if monthly is None or traffic.monthly_requests <= 0:
        return None
    return monthly / traffic.monthly_requests


def full_capacity(rate_rps: float) -> Traffic:
    """A steady stream at ``rate_rps`` (the unit costs of a plan with no stated traffic: what its replicas
    serve at capacity around the clock)."""
    return Traffic((Segment(24.0, rate_rps),), "full capacity")
