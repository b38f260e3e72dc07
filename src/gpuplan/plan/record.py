"""The plan record: one (platform, instance type, instance count, layout, billing mode, region).

Every deployment kind fills the same frozen record: plain ECS instances, Function Compute GPU
functions, PAI-EAS services and ACK GPU node pools. The deployment is the ``platform`` field; the
memory, performance, cost and advice parts are the same for all of them, and what only one platform
has (cold starts, traffic, autoscaling, the serverless costing, the ACK fee) sits in ``details``.
Renderers (terminal table, JSON, web API, PLAN.md and the bundle) take this one type.

``to_dict()`` is one entry of ``plans`` in the ``gpuplan recommend --json`` contract.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

PLATFORMS = ("ecs", "function-compute", "pai-eas", "ack")
# Platform-only blocks: every plan's JSON carries these keys (null where the platform has none).
DETAIL_KEYS = ("cold_start", "traffic", "autoscaling", "availability")
# Platform-only blocks that appear only on the platform that has them.
OPTIONAL_DETAIL_KEYS = ("gpu_memory_gib", "function", "serverless", "management_fee")
PRICE_MARKS = {"estimated": "~"}   # only guesses are marked: most bundled prices are third-party quotes


def price_mark(kind: str | None) -> str:
    """The mark tables put after a price of this kind: ``~`` estimated, none for any other kind.
    Every table marks prices through this one function."""
    return PRICE_MARKS.get(kind or "official", "")


def rnd(x: float | None, nd: int = 6) -> float | None:
    """A finite float rounded for JSON, else None."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return round(float(x), nd)


def high(ranges: Mapping[str, Any] | None, key: str, point: float | None) -> float | None:
    """The high end of a plan figure from its ``intervals`` (the point figure when it has no range): what the
    deadline (time) and the budget (cost) are checked at, and what an auto-release waits for."""
    pair = (ranges or {}).get(key)
    return float(pair[1]) if pair else point


@dataclass(frozen=True)
class PlanMemory:
    """GPU memory of the busiest GPU (nvidia-smi view) and the capacity the plan was checked against."""

    per_gpu_bytes: int | None
    capacity_per_gpu_bytes: int | None
    components: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, est) -> PlanMemory:
        """From an Estimate (None: unknown)."""
        if est is None:
            return cls(None, None, {})
        m = est.memory
        return cls(int(m.per_gpu_bytes), int(m.capacity_bytes), {k: int(v) for k, v in m.components.items()})


@dataclass(frozen=True)
class PlanCost:
    """Prices and what they add up to. Training fills ``time_s``/``total_cost`` (with a dataset) or the
    per-1B-token pair; serving fills ``replicas``/``monthly_cost``/``cost_per_million_output_tokens``."""

    currency: str
    billing: str | None = None
    region: str | None = None
    price_region: str | None = None
    instance_price_per_hour: float | None = None
    price_per_hour: float | None = None
    price_estimated: bool = False
    price_kind: str | None = None          # official | third-party | inferred | estimated | user | live
    price_rule: str | None = None          # how an estimated price was computed
    price_as_of: str | None = None
    price_source: str | None = None
    time_s: float | None = None
    total_cost: float | None = None
    time_per_billion_tokens_s: float | None = None
    cost_per_billion_tokens: float | None = None
    replicas: int | None = None
    monthly_cost: float | None = None
    cost_per_million_output_tokens: float | None = None
    spot: Mapping[str, Any] | None = None
    # training: the save interval the launcher runs, one save's write seconds and their share of the run time (in
    # ``time_s``): {interval_s, write_s, overhead_fraction}
    checkpoint_saves: Mapping[str, Any] | None = None
    # how far the charged price may lie above ``price_per_hour`` (fraction, by price kind; ranking)
    price_margin: float | None = None
    # once-per-job costs of every instance (start-up, image pull, model download, idle tail), in
    # seconds by part; included in ``time_s`` and ``total_cost`` (jobs only)
    fixed: Mapping[str, float] | None = None
    fixed_cost: float | None = None
    # jobs: where the nodes get the weights (hub, or a copy staged once in OSS) and the figures that chose it
    weights_staging: Mapping[str, Any] | None = None
    # serving: demand / capacity at the stated peak (and how the replicas were sized)
    utilization: float | None = None
    # batch inference job over a dataset: items, unit, cost per item (and per audio hour / image)
    job: Mapping[str, Any] | None = None
    # non-LLM serving: cost per image / clip / request at the served rate ({unit, cost, basis})
    unit_cost: Mapping[str, Any] | None = None
    # how the price was obtained (quoted | derived | guessed) and how old it is (this plan's own price
    # row, never the newest row of the catalog); filled by plan.billing.annotate
    price_basis: str | None = None
    price_age_days: int | None = None
    price_stale: bool | None = None
    # the same hardware under each billing mode at the workload's duration, with the break-even in words
    billing_options: Mapping[str, Any] | None = None
    # serving: how the replicas were sized (colocated or prefill/decode pools, the batch limit, the replicas
    # at the peak the autoscaler's maximum uses); plan/serving/serving_costs.py, read by plan/serving/serving_report.py
    sizing: Mapping[str, Any] | None = None

    @property
    def price_quality(self) -> str:
        """The price's kind (official | third-party | inferred | estimated | user): the single accessor
        renderers use to mark a price.
        ``price_estimated`` (a spot price from the fraction-of-pay-as-you-go rule, a converted list
        price) always reads as estimated."""
        if self.price_estimated:
            return "estimated"
        return self.price_kind or "official"

    @property
    def price_is_guess(self) -> bool:
        """True when the price shown is an estimate rather than a quote (marked ``~`` in every table)."""
        return self.price_quality == "estimated"

    @property
    def price_mark(self) -> str:
        """The mark a table puts after a price: ``~`` estimated, none otherwise."""
        return price_mark(self.price_quality)

    @property
    def headline(self) -> tuple[float | None, str]:
        """(the one cost figure that sums the plan up, its unit): total, per month, or per 1B tokens."""
        if self.total_cost is not None:
            return self.total_cost, ""
        if self.monthly_cost is not None:
            return self.monthly_cost, "/month"
        if self.cost_per_billion_tokens is not None:
            return self.cost_per_billion_tokens, " per 1B tokens"
        return None, ""


@dataclass(frozen=True)
class PlanAdvice:
    """Storage, network and host advice, the reasons for the plan and its warnings."""

    storage: Mapping[str, Any] = field(default_factory=dict)
    network: Mapping[str, Any] = field(default_factory=dict)
    host: Mapping[str, Any] = field(default_factory=dict)
    why: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """One ranked plan on one deployment platform (see the module docstring)."""

    platform: str
    instance_type: str
    instance_count: int
    gpu: str | None
    gpus_total: int
    parallel: Mapping[str, Any]
    layout: str                                # the parallel layout in words, for tables
    memory: PlanMemory
    performance: Mapping[str, Any]
    cost: PlanCost
    advice: PlanAdvice = field(default_factory=PlanAdvice)
    details: Mapping[str, Any] = field(default_factory=dict)
    cost_key: float | None = None              # ranking: total / monthly / per-1B cost (None = no price)
    time_key: float | None = None              # ranking: job time / time per 1B tokens / request latency
    rank: int = 0
    pareto: bool = False
    # LLM serving: engine, parallelism, formats and what the user gets (TTFT p50/p90, TPOT, load, SLA);
    # None for training, batch jobs and non-LLM models (plan/serving/serving_report.py)
    serving: Mapping[str, Any] | None = None
    # other instance types that are the same machine at the same price (shown once: plan/aliases.py)
    aliases: tuple[str, ...] = ()
    # (deadline - time) / deadline for jobs with a deadline, else None
    deadline_slack: float | None = None
    # Training: the recipe the search chose (plan/search/recipe.py Recipe: micro-batch, accumulation, global batch,
    # checkpointing, parallel sizes, bubble, MFU, chosen/pinned fields and why); None for serving.
    recipe: Any = None
    # 80 % ranges of the plan's figures ({key: [low, high]}: memory_per_gpu_bytes, time_s, total_cost,
    # monthly_cost, cost_per_million_output_tokens; plan/money/ranges.py); empty: read from the estimate.
    intervals: Mapping[str, Any] = field(default_factory=dict)
    # The estimate the memory and performance come from (the exact ECS hardware and layout, or one
    # Function Compute GPU slice); the bundle renders its launch files from it. Not part of the JSON.
    estimate: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.platform not in PLATFORMS:
            raise ValueError(f"unknown platform {self.platform!r}")

    # -------------------------------------------------------------------------------- views
    @property
    def is_ecs(self) -> bool:
        return self.platform == "ecs"

    @property
    def short_name(self) -> str:
        """The instance type without the ``ecs.`` prefix (what tables show)."""
        return self.instance_type.removeprefix("ecs.")

    @property
    def replicas(self) -> int | None:
        return self.cost.replicas

    @property
    def gpus_per_replica(self) -> int:
        return max(1, self.gpus_total // max(1, self.cost.replicas or 1))

    @property
    def nodes_per_replica(self) -> int:
        return int(self.parallel.get("nodes_per_replica") or 1)

    @property
    def cost_margin(self) -> float:
        """The price margin the ranking applies (0 for a sourced price; see data/plan_costs.yaml)."""
        c = self.cost
        if c.price_margin is not None:
            return c.price_margin
        from gpuplan.plan.money.cost import kind_margin

        return kind_margin(c.price_kind, c.price_estimated)

    def with_advice(self, **changes: Any) -> Plan:
        return replace(self, advice=replace(self.advice, **changes))

    # -------------------------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """One entry of ``plans`` in the recommend contract (every platform has every common key)."""
        c, m, a = self.cost, self.memory, self.advice
        d: dict[str, Any] = {
            "platform": self.platform,
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
            "gpu": self.gpu,
            "gpus_total": self.gpus_total,
            "parallel": dict(self.parallel),
            "memory_per_gpu_bytes": m.per_gpu_bytes,
            "capacity_per_gpu_bytes": m.capacity_per_gpu_bytes,
            "memory_components": dict(m.components),
            "billing": c.billing,
            "region": c.region,
            "price_region": c.price_region,
            "instance_price_per_hour": rnd(c.instance_price_per_hour),
            "price_per_hour": rnd(c.price_per_hour),
            "price_estimated": c.price_estimated,
            "price_kind": c.price_kind,
            "price_rule": c.price_rule,
            "price_basis": c.price_basis,
            "currency": c.currency,
            "price_as_of": c.price_as_of,
            "price_age_days": c.price_age_days,
            "price_stale": c.price_stale,
            "price_source": c.price_source,
            "time_s": rnd(c.time_s),
            "total_cost": rnd(c.total_cost),
            "time_per_billion_tokens_s": rnd(c.time_per_billion_tokens_s),
            "cost_per_billion_tokens": rnd(c.cost_per_billion_tokens),
            "replicas": c.replicas,
            "monthly_cost": rnd(c.monthly_cost),
            "cost_per_million_output_tokens": rnd(c.cost_per_million_output_tokens),
            "performance": dict(self.performance),
            "spot": None if c.spot is None else dict(c.spot),
            "checkpoint_saves": None if c.checkpoint_saves is None else dict(c.checkpoint_saves),
            "price_margin": rnd(c.price_margin),
            "fixed_costs": None if c.fixed is None else {**{k: rnd(v, 1) for k, v in c.fixed.items()},
                                                         "cost": rnd(c.fixed_cost)},
            "weights_staging": None if c.weights_staging is None else dict(c.weights_staging),
            "utilization": rnd(c.utilization, 4),
            "job": None if c.job is None else dict(c.job),
            "unit_cost": None if c.unit_cost is None else dict(c.unit_cost),
            "billing_options": None if c.billing_options is None else dict(c.billing_options),
            "storage": dict(a.storage),
            "network": dict(a.network),
            "host": dict(a.host),
            "pareto": self.pareto,
            "rank": self.rank,
            "serving": None if self.serving is None else dict(self.serving),
            "aliases": list(self.aliases),
            "deadline_slack": rnd(self.deadline_slack, 4),
            "why": list(a.why),
            "warnings": list(a.warnings),
            "recipe": self.recipe.to_dict() if self.recipe is not None else None,
            "intervals": {k: list(v) for k, v in self.intervals.items()} or self._estimate_ranges(),
            "fit_confidence": self._fit_confidence(),
        }
        for k in DETAIL_KEYS:
            d[k] = self.details.get(k)
        for k in OPTIONAL_DETAIL_KEYS:
            if k in self.details:
                d[k] = self.details[k]
        return d

    def _estimate_ranges(self) -> dict[str, Any]:
        """Ranges of a plan built without them (Function Compute, PAI-EAS, ACK): its memory, from its estimate."""
        est = self.estimate
        if est is None or getattr(est, "memory", None) is None:
            return {}
        from gpuplan.estimate.intervals import memory_bounds

        lo, hi = memory_bounds(est, est.memory.per_gpu_bytes)
        return {"memory_per_gpu_bytes": [int(lo), int(hi)]}

    def _fit_confidence(self) -> float | None:
        """The chance that the job's real peak memory fits the card (>= 0.9: plans are sized at the high end)."""
        est = self.estimate
        if est is None or getattr(est, "memory", None) is None:
            return None
        from gpuplan.estimate.intervals import fit_confidence

        return round(fit_confidence(est), 3)

    def brief(self) -> dict[str, Any]:
        """The plan as one point of the Pareto front (``pareto`` in the recommend contract)."""
        return {"instance_type": self.instance_type, "instance_count": self.instance_count, "billing": self.cost.billing,
                "region": self.cost.region, "cost": rnd(self.cost_key), "time_s": rnd(self.time_key),
                "platform": self.platform}
