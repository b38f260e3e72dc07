"""Costing of online serving drafts: the replicas a request rate (or a concurrency) needs, sized by the same
latency model that reports the plan's TTFT and TPOT, prefill/decode pools where they cost less, the monthly
cost, and the unit costs on the stated traffic.

- **Replicas** (plan/serving/queueing.py): one engine copy's capacity at the SLA is ``max_requests_per_s`` of its
  estimate (estimate/serving/replica.py: the largest rate whose TPOT under load and p90 TTFT meet the targets with
  its batch limit ``max_num_seqs``); replicas = ceil(peak / (copies per replica x capacity x target
  utilisation)). A concurrency without a rate (``batch_size`` users) needs copies holding batch_size / copies
  sequences each within the batch limit.
- **Prefill/decode pools** (plan/serving/disaggregation.py) replace the colocated replicas when they serve the same
  SLA with at least 10 % fewer copies.
- **Money on the stated traffic** (plan/serving/traffic.py): cost per 1M output tokens (per 1M input tokens for
  prefill-only work, per item for images and clips) is the month's cost over the month's requests of the
  stated traffic, the same function for ECS, ACK, PAI-EAS and Function Compute; the peak only sizes. With no
  traffic stated: at what the replicas serve at capacity, said so.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gpuplan.i18n import _, localize
from gpuplan.plan.money import cost as costm
from gpuplan.plan.context import PlanContext, target_util
from gpuplan.plan.context import model_bytes
from gpuplan.plan.money import staging
from gpuplan.plan.money.costing import job_costs, staging_why
from gpuplan.plan.serving.disaggregation import PD_ENGINES, better_than_colocated, pd_sizing
from gpuplan.plan.serving.queueing import copies_for_concurrency, size_replicas
from gpuplan.plan.search.search_point import Candidate
from gpuplan.plan.serving.serving_config import describe
from gpuplan.plan.serving.traffic import (STATED_TRAFFIC, Traffic, full_capacity, priced_unit, service_unit_costs,
                                          traffic_profile)

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.drafts import Draft

# A service needing more GPUs than this is flagged: an assumption (a large GPU cluster is a few thousand GPUs;
# ECS on-demand stock per region and zone is far smaller), not a published limit.
FLEET_WARN_GPUS = 4096


def stated_traffic(ctx: PlanContext) -> Traffic | None:
    """The day's traffic the workload states (with its utilisation target), or None."""
    t = traffic_profile(ctx.w.serving)
    if t is None or t.daily_requests <= 0:
        return None
    s = ctx.w.serving
    if s is not None and s.target_utilization:
        from dataclasses import replace

        t = replace(t, target_utilization=s.target_utilization)
    return t


def concurrency_demand(ctx: PlanContext) -> int:
    """Users always in flight when the workload states a concurrency (batch_size > 1) and no request rate."""
    if ctx.request_rate():
        return 0
    n = int(ctx.w.batch_size or 1)
    return n if n > 1 and ctx.llm else 0


def _targets(ctx: PlanContext) -> tuple[float | None, float | None]:
    s = ctx.w.serving
    return (s.ttft_ms / 1000.0 if s and s.ttft_ms else None, s.tpot_ms / 1000.0 if s and s.tpot_ms else None)


def serving_costs(ctx: PlanContext, c: Candidate, p: Draft, price: costm.Price | None) -> None:
    if ctx.job:
        job_costs(ctx, c, p, price)
        return
    perf = c.est.performance
    group_rate = c.speed(False)
    limit = max(1, int(perf.get("serving_batch") or perf.get("max_concurrency") or 1))
    rate = ctx.request_rate()
    users = concurrency_demand(ctx)
    u = target_util(ctx)
    engine = c.variant.config.engine if c.variant.config is not None else (c.variant.w.framework or "")
    sizing: dict = {"mode": "colocated", "max_num_seqs": limit, "binding": "minimum"}
    served: float | None = None           # requests/s the replicas serve (the unit-cost basis without traffic)
    if rate and group_rate > 0:
        s = size_replicas(rate, group_rate, target_utilization=u)
        replicas, p.utilization = s.replicas, s.utilization
        sizing["binding"] = s.binding
        ttft_t, tpot_t = _targets(ctx)
        pd = pd_sizing(c.est, rate, c.dp, ttft_t, tpot_t, u) if engine in PD_ENGINES else None
        if pd is not None and better_than_colocated(pd, replicas, engine):
            p.why.append(_("prefill/decode disaggregation: {x} prefill + {y} decode replica(s) serve the SLA where "
                           "colocated serving needs {r} (SGLang --disaggregation-mode, KV cache sent in {kv} ms)")
                         .format(x=pd.prefill_replicas, y=pd.decode_replicas, r=replicas,
                                 kv=f"{pd.kv_transfer_s * 1000:.0f}"))
            replicas = pd.replicas
            sizing.update(pd.to_dict())
            p.utilization = max(pd.decode_utilization, pd.prefill_utilization)
    elif users and group_rate > 0:
        copies = copies_for_concurrency(users, limit)
        replicas = max(1, math.ceil(copies / max(1, c.dp)))
        sizing.update(binding="concurrency", users=users)
        model = c.est.serving_model
        if model is not None:
            point, _extra = model.closed_loop(math.ceil(users / (replicas * max(1, c.dp))))
            served = point.rate * replicas * max(1, c.dp)
    else:
        replicas = 1
    sizing["replicas_at_peak"] = replicas
    copies = replicas * max(1, c.dp)
    stated = int(ctx.w.batch_size or 1) if ctx.llm else 1     # users in flight, with or without a request rate
    if stated > 1 and stated > limit * copies:   # a stated concurrency the copies sized by the request rate cannot hold
        if copies == 1 and c.est.concurrency_warnings:
            p.warnings.extend(c.est.concurrency_warnings)   # the estimate's own sentence (estimate says the same)
        else:
            p.warnings.append(_("the {copies} model copies hold {held} of the {users} concurrent sequences asked for "
                                "(batch limit {limit} each); the others wait for a free slot: more replicas, more "
                                "GPUs per model copy or an FP8 KV cache would serve them all").format(
                copies=copies, held=limit * copies, users=stated, limit=limit))
    p.replicas = replicas
    p.serving_sizing = sizing
    p.instance_count = c.nodes * replicas
    p.gpus_total = c.gpus * replicas
    if p.gpus_total > FLEET_WARN_GPUS:
        p.warnings.append(_("{instances} instances ({gpus} GPUs) for {rate} req/s: a fleet this size is beyond what "
                            "one region sells on demand; check the request rate, or plan several regions and ask "
                            "Alibaba Cloud for reserved capacity").format(
            instances=f"{p.instance_count:,}", gpus=f"{p.gpus_total:,}",
            rate=(f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}") if rate else "-"))
    # the weights' source for the service's nodes, by the same rule as a job's: a large model's hub download leaves
    # every GPU idle for hours at the first start and at each restart or scale-out (DeepSeek-V3's 673 GB: 15 h at
    # 100 Mbit/s on two H20 nodes, about CNY 8,100); staged once in OSS, the bundle's stage-weights.sh and
    # fetch-model.sh copy it over the VPC
    ws = staging.for_plan(model_bytes(ctx), p.instance_count, price, ctx.book.fx)
    p.weights_staging = ws.as_dict() if ws else None
    if ws is not None and ws.staged:
        p.why.append(staging_why(ws))
    if price is not None:
        p.price_per_hour = price.per_hour * p.instance_count
        p.monthly_cost = costm.serving_monthly_cost(price, p.instance_count)
        _unit_costs(ctx, c, p, served if served is not None else group_rate * replicas)
    if group_rate > 0:
        p.why.append(_sizing_why(ctx, c, p, rate, users, group_rate, limit, u))
    p.cost_key = p.monthly_cost
    p.time_key = c.latency_s()


def _unit_costs(ctx: PlanContext, c: Candidate, p: Draft, capacity_rps: float) -> None:
    """Cost per 1M output tokens (LLM), per 1M input tokens (prefill-only) or per item, on the stated traffic
    (the month's requests), else at the replicas' capacity around the clock."""
    traffic = stated_traffic(ctx)
    basis_text = STATED_TRAFFIC if traffic is not None else "at full capacity (no request rate given)"
    basis = traffic if traffic is not None else (full_capacity(capacity_rps) if capacity_rps > 0 else None)
    if basis is None:
        return
    w = c.variant.w
    priced = priced_unit(ctx.model, ctx.llm, w.output_tokens)
    per_output, unit = service_unit_costs(p.monthly_cost, basis, priced,
                                          (w.prompt_tokens if priced == "input" else w.output_tokens) or 1, basis_text)
    if per_output is not None:
        p.cost_per_million_output_tokens = per_output
    if unit is not None:
        p.unit_cost = unit


def _sizing_why(ctx: PlanContext, c: Candidate, p: Draft, rate: float | None, users: int, group_rate: float,
                limit: int, u: float) -> str:
    unit = _("images/s") if not ctx.llm and getattr(ctx.model, "kind", "") == "diffusion" else _("req/s")
    layout = describe(c) if c.variant.config is not None else c.layout.describe().split(", ckpt")[0]
    args = {"gpus": c.gpus, "gpu": c.inst.gpu, "layout": localize(layout), "rate": f"{group_rate:.3g}", "unit": unit,
            "replicas": p.replicas, "limit": limit}
    if rate:
        args.update(req=f"{rate:g}", util=f"{(p.utilization or 0):.0%}", target=f"{u:.0%}")
        return _("one replica ({gpus} x {gpu}, {layout}) sustains {rate} {unit} within the SLA under load (batch limit "
                 "{limit} sequences per model copy); {replicas} replica(s) for a peak of {req} req/s: {util} "
                 "utilised (target <= {target})").format(**args)
    if users:
        args.update(users=users)
        return _("one replica ({gpus} x {gpu}, {layout}) runs up to {limit} sequences per model copy: {replicas} "
                 "replica(s) hold the {users} concurrent requests asked for").format(**args)
    return _("one replica ({gpus} x {gpu}, {layout}) sustains {rate} {unit} (no request rate given: 1 replica)").format(
        **args)
