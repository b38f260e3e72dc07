"""Managed platforms on ECS instance types: ACK GPU node pools (nodes follow traffic) and PAI-EAS (always on).

- **ACK** (managed Pro cluster, HPA + cluster autoscaler): for each traffic segment, ceil(rate / per-replica
  rate) replicas (at least 1) x hours at the ECS pay-as-you-go price per node-hour, plus the ACK Pro
  management fee for 730 h.
- **PAI-EAS** (public resources): replicas for the peak rate, always on, at the EAS price per hour when
  platforms.yaml has one (unknown otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuplan.i18n import _
from gpuplan.plan.deploy.platform_data import fx_rate, load_platforms
from gpuplan.plan.record import Plan, PlanAdvice, PlanCost, rnd
from gpuplan.plan.serving.traffic import (STATED_TRAFFIC, Traffic, always_on_monthly, peak_utilization, service_unit_costs,
                                  replicas_for, scaled_node_hours)
from gpuplan.units import HOURS_PER_MONTH

_r = rnd


def _ecs_rate(plan: Plan) -> float:
    """Requests/s one replica of an ECS plan serves (all its data-parallel groups)."""
    dp = plan.parallel.get("dp") or 1
    return float(plan.performance.get("max_requests_per_s") or 0.0) * dp


def _on_ecs(e: Plan, platform: str, region: str | None, currency: str, *, replicas: int, instance_count: int,
            gpus_total: int, cost: dict, details: dict, why: str, warnings: list[str], cost_key, time_key) -> Plan:
    """A managed plan on the instance type, layout and estimate of an ECS plan: colocated replicas of the same
    engine copies (batch limit and capacity at the SLA), ``replicas`` of them at the peak."""
    base = dict(e.cost.sizing or {})
    sizing = {"mode": "colocated", "max_num_seqs": base.get("max_num_seqs") or e.performance.get("serving_batch"),
              "binding": "utilization", "replicas_at_peak": replicas}
    return Plan(platform=platform, instance_type=e.instance_type, instance_count=instance_count, gpu=e.gpu,
                gpus_total=gpus_total, parallel=e.parallel, layout=e.layout, memory=e.memory,
                performance=e.performance,
                cost=PlanCost(currency=currency, billing="payg", region=region, replicas=replicas, sizing=sizing,
                              **cost),
                advice=PlanAdvice(why=(why,), warnings=tuple(warnings)),
                details={"cold_start": None, "traffic": None, "autoscaling": None, **details},
                cost_key=cost_key, time_key=time_key, estimate=e.estimate)


def _unit_costs(monthly: float | None, traffic: Traffic, priced: tuple[str, int]) -> dict:
    """The plan's cost per 1M output tokens or per item on the stated traffic (serving.traffic.service_unit_costs,
    the ECS plans' rule). ``priced``: (what the month is priced per, tokens per request)."""
    per_output, unit = service_unit_costs(monthly, traffic, priced[0], priced[1], STATED_TRAFFIC)
    return {"cost_per_million_output_tokens": per_output, "unit_cost": unit}


def ack_plans(ecs_plans: Sequence[Plan], traffic: Traffic, *, currency: str, fx,
              priced: tuple[str, int] = ("output", 1), scaling_only: bool = False) -> list[Plan]:
    """ACK managed Pro cluster + GPU node pool per ECS instance type (pay-as-you-go nodes follow traffic).
    ``scaling_only`` (ECS plans are shown too): a node pool that never scales (as many replicas off-peak as at
    the peak) is its ECS plan plus the management fee, the same machine listed twice: left out."""
    fee = load_platforms()["ack"]["management_fee"]
    fee_rate = fx_rate(currency, fee["currency"], fx)
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
                  "price_as_of": e.cost.price_as_of, "utilization": peak_utilization(traffic, max_r, mu),
                  "price_source": e.cost.price_source, "monthly_cost": monthly,
                  **_unit_costs(monthly, traffic, priced)},
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


def pai_eas_plans(ecs_plans: Sequence[Plan], traffic: Traffic, *, currency: str,
                  priced: tuple[str, int] = ("output", 1)) -> list[Plan]:
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
        monthly = always_on_monthly(price, replicas, e.nodes_per_replica) if price is not None else None
        warnings = []
        if price is None:
            warnings.append(_("PAI-EAS price for {instance} is not bundled: monthly cost unknown (check the EAS "
                              "console or pass your quote)").format(instance=it))
        out.append(_on_ecs(
            e, "pai-eas", e.cost.region, currency, replicas=replicas, instance_count=replicas * e.nodes_per_replica,
            gpus_total=replicas * e.gpus_per_replica,
            cost={"price_region": e.cost.region, "instance_price_per_hour": price,
                  "price_per_hour": _r(price * replicas * e.nodes_per_replica) if price is not None else None,
                  "price_as_of": row.get("as_of"), "price_source": row.get("source") or eas["source"],
                  "monthly_cost": monthly, "utilization": peak_utilization(traffic, replicas, mu),
                  **_unit_costs(monthly, traffic, priced)},
            details={"traffic": traffic.to_dict()},
            why=_("PAI-EAS public resources, {replicas} x {instance}: billed per running minute of each instance "
                  "({source})").format(replicas=replicas, instance=it, source=eas["source"]),
            warnings=warnings, cost_key=monthly, time_key=e.time_key))
    return out


