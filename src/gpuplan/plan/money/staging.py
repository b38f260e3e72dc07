"""Where a job's GPU nodes get the weights: from the hub, each node over its public bandwidth (the platform's default,
data/ops.yaml ``node_start.weights_from``), or from a copy staged once in OSS by a cheap machine in the region before
the GPUs start (the bundle's stage-weights.sh), each node then copying it over the VPC.

Staging wins when the GPU idle time it saves across the plan's instances costs more than the staging machine, and
saves at least ``weights_staging.min_saved_instance_s`` of instance-time (data/ops.yaml): large weights, or several
instances. The decision's node start (:func:`gpuplan.plan.money.transfer.node_start` with ``staged_in_oss``) is the
one the plan's fixed costs count and the bundle's PLAN.md, fetch-model.sh and auto-release use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplan.plan.money.transfer import MB, MBIT, NodeStart, node_start, transfer_s
from gpuplan.units import HOUR_S


@dataclass(frozen=True)
class WeightsStaging:
    """The weights' source for one plan and the figures that chose it. ``staging_s``: wall time before the GPUs start
    (the staging machine's hub download and OSS upload; no GPU is billed for it); ``staging_cost``: that machine's
    price for it, in ``currency``; ``hub_idle_cost`` / ``oss_idle_cost``: the plan's instances idle while each pulls
    the weights from the hub / from OSS (None without a price)."""

    weights_from: str           # hub | oss
    start: NodeStart            # what each GPU node's fixed costs count
    weight_bytes: float
    instances: int
    hub_download_s: float
    oss_download_s: float
    staging_s: float
    staging_cost: float | None
    hub_idle_cost: float | None
    oss_idle_cost: float | None
    currency: str | None
    min_saved_instance_s: float

    @property
    def staged(self) -> bool:
        return self.weights_from == "oss"

    @property
    def saved_instance_s(self) -> float:
        return self.instances * (self.hub_download_s - self.oss_download_s)

    def as_dict(self) -> dict[str, Any]:
        """The plan's ``weights_staging`` field (plan.json)."""
        def r(v: float | None, nd: int = 2) -> float | None:
            return None if v is None else round(v, nd)

        return {"weights_from": self.weights_from, "weight_bytes": round(self.weight_bytes),
                "instances": self.instances, "hub_download_s": r(self.hub_download_s, 1),
                "oss_download_s": r(self.oss_download_s, 1), "staging_s": r(self.staging_s, 1),
                "staging_cost": r(self.staging_cost), "hub_idle_cost": r(self.hub_idle_cost),
                "oss_idle_cost": r(self.oss_idle_cost), "currency": self.currency,
                "saved_instance_s": r(self.saved_instance_s, 1),
                "min_saved_instance_s": self.min_saved_instance_s}


def staging_price_per_hour(ops: Mapping[str, Any]) -> float:
    """The staging machine's hourly price (data/ops.yaml ``weights_staging``: vCPUs and GiB at their hourly rates)."""
    cfg = ops["weights_staging"]
    return (float(cfg["staging_vcpus"]) * float(cfg["vcpu_per_hour"])
            + float(cfg["staging_memory_gib"]) * float(cfg["memory_gib_per_hour"]))


def decide(ops: Mapping[str, Any], weight_bytes: float | None, instances: int, *,
           instance_price_per_hour: float | None = None, currency: str | None = None,
           platform: str | None = "ecs", convert=None) -> WeightsStaging | None:
    """Hub or OSS for a plan of ``instances`` GPU instances at ``instance_price_per_hour`` each (in ``currency``;
    ``convert(amount, src, dst)`` turns the staging machine's price into it). None where there are no weights to move
    or the platform already loads a staged copy (PAI-EAS, Function Compute)."""
    hub = node_start(ops, platform)
    if not weight_bytes or weight_bytes <= 0 or hub.weights_from != "hub":
        return None
    oss = node_start(ops, platform, staged_in_oss=True)
    net, cfg = ops["bundle_network"], ops["weights_staging"]
    hub_s = hub.download_s(weight_bytes) or 0.0
    oss_s = oss.download_s(weight_bytes) or 0.0
    # the staging machine: the hub download over its own public bandwidth, then the upload over the VPC
    staging_s = (transfer_s(weight_bytes, float(net["public_bandwidth_mbit"]) * MBIT)
                 + transfer_s(weight_bytes, float(net["oss_intranet_mb_s"]) * MB))
    n = max(1, int(instances))
    cost = hub_cost = oss_cost = None
    if instance_price_per_hour is not None and currency:
        machine = staging_s / HOUR_S * staging_price_per_hour(ops)
        src = str(cfg["currency"])
        cost = convert(machine, src, currency) if convert and src != currency else machine
        hub_cost = n * hub_s / HOUR_S * instance_price_per_hour
        oss_cost = n * oss_s / HOUR_S * instance_price_per_hour
    min_saved = float(cfg["min_saved_instance_s"])
    pays = hub_cost is None or cost is None or oss_cost is None or cost + oss_cost < hub_cost
    stage = pays and n * (hub_s - oss_s) >= min_saved
    return WeightsStaging("oss" if stage else "hub", oss if stage else hub, float(weight_bytes), n, hub_s, oss_s,
                          staging_s, cost, hub_cost, oss_cost, currency if cost is not None else None, min_saved)


def for_plan(weight_bytes: float | None, instances: int, price: Any = None, fx: Any = None,
             platform: str | None = "ecs") -> WeightsStaging | None:
    """:func:`decide` with data/ops.yaml, for a draft priced at ``price`` (a cost.Price: per instance-hour, its
    currency) with the price book's ``fx`` (a cost.Fx) to convert the staging machine's price."""
    from gpuplan.plan.advice.ops import load_ops

    return decide(load_ops(), weight_bytes, instances,
                  instance_price_per_hour=price.per_hour if price is not None else None,
                  currency=price.currency if price is not None else None, platform=platform,
                  convert=fx.convert if fx is not None else None)
