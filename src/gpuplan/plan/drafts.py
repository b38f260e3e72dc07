"""Plan drafts: an ECS candidate priced in one region and billing mode, costed (costing.py), then
checked (constraints.py) and frozen into a ``Plan`` record (record.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuplan.i18n import _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.search.candidates import TRAIN_TASKS, launcher_for
from gpuplan.plan.context import PlanContext
from gpuplan.plan.money.costing import deadline_margin, training_costs
from gpuplan.plan.money.ranges import draft_ranges
from gpuplan.plan.record import Plan, PlanAdvice, PlanCost, PlanMemory
from gpuplan.plan.search.search_point import Candidate


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class Draft:
    """An ECS plan while it is being costed and checked (internal; frozen into a ``Plan`` record)."""

    cand: Candidate
    billing: str | None
    region: str | None
    price_region: str | None
    instance_price_per_hour: float | None
    price_per_hour: float | None
    currency: str
    price_as_of: str | None
    price_source: str | None
    replicas: int | None
    instance_count: int
    gpus_total: int
    time_s: float | None
    total_cost: float | None
    monthly_cost: float | None
    cost_per_million_output_tokens: float | None
    time_per_billion_tokens_s: float | None = None
    cost_per_billion_tokens: float | None = None
    spot: dict | None = None
    checkpoint_saves: dict | None = None   # training: how often the run saves and what the saves cost (costing.py)
    why: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    price_estimated: bool = False
    price_kind: str | None = None
    price_rule: str | None = None
    cost_key: float | None = None
    time_key: float | None = None
    price_margin: float | None = None
    fixed: dict | None = None
    fixed_cost: float | None = None
    weights_staging: dict | None = None   # hub or OSS for the weights and its figures (plan/money/staging.py)
    utilization: float | None = None
    job: dict | None = None
    unit_cost: dict | None = None
    deadline_slack: float | None = None
    framework: str | None = None    # the framework the workload names (its launcher wins)
    serving_sizing: dict | None = None   # LLM serving: how the replicas were sized (plan/serving/serving_costs.py)
    intervals: dict | None = None   # 80 % ranges of memory, time and cost (plan/money/ranges.py)

    def record(self) -> Plan:
        """The frozen plan record (advice is added later, for the plans that are shown)."""
        c = self.cand
        lay = c.layout
        parallel = {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, **({"cp": lay.cp} if lay.cp > 1 else {}),
                    "zero": lay.zero, "fsdp": lay.fsdp,
                    "offload": lay.offload, "checkpointing": lay.checkpointing,
                    "optimizer": c.variant.w.optimizer if c.variant.w.task in TRAIN_TASKS else None,
                    "precision": c.variant.w.precision, "quantization": c.variant.quantization,
                    "micro_batch": lay.micro_batch, "gradient_accumulation": lay.grad_accum,
                    "vp": lay.vp if c.recipe else None,
                    **({"sp": lay.sp} if lay.tp > 1 and c.variant.w.task in TRAIN_TASKS else {}),
                    "global_batch": c.recipe.global_batch_sequences if c.recipe else None,
                    "nodes_per_replica": c.nodes,
                    "launcher": launcher_for(lay.tp, lay.pp, lay.zero, lay.fsdp, lay.offload, lay.cp, self.framework)
                    if c.variant.w.task in TRAIN_TASKS else None,
                    # the framework whose memory and time rules sized this plan (plan/search/candidates.py sizing_framework;
                    # an encoder-only model's embed.py or vLLM pooling server: estimate/engine_defaults.py)
                    "framework": c.variant.w.framework if c.variant.w.task in TRAIN_TASKS
                    or getattr(c.est.model, "kind", None) == "encoder" else None,
                    # the loss the plan was sized with and train.py runs (--loss; estimate/memory/loss.py)
                    "loss": c.est.memory.loss if c.variant.w.task in TRAIN_TASKS else None,
                    # the rows the plan was sized for and the launch trains (samples packed into seq_len rows or not)
                    "packed": c.variant.w.packed if c.variant.w.task in TRAIN_TASKS else None}
        layout = re.sub(r", mb \d+ x ga \d+$" if c.recipe else r", mb 1 x ga 1$", "", lay.describe())
        if c.variant.w.task not in TRAIN_TASKS:
            layout = layout.split(", ckpt")[0]     # serving: no training fields
        cfg = c.variant.config
        if cfg is not None:     # LLM serving: the engine's settings, not training fields, in words
            parallel.update(engine=cfg.engine, ep=cfg.ep, dp_attention=cfg.dp_attention,
                            kv_cache_dtype=cfg.kv_cache_dtype, weight_format=cfg.weight_format,
                            max_num_seqs=c.est.performance.get("serving_batch"))
            from gpuplan.plan.serving.serving_config import describe   # serving plans only

            layout = describe(c)
        cost = PlanCost(currency=self.currency, billing=self.billing, region=self.region,
                        price_region=self.price_region, instance_price_per_hour=self.instance_price_per_hour,
                        price_per_hour=self.price_per_hour, price_estimated=self.price_estimated,
                        price_kind=self.price_kind, price_rule=self.price_rule, price_as_of=self.price_as_of,
                        price_source=self.price_source, time_s=self.time_s,
                        total_cost=self.total_cost, time_per_billion_tokens_s=self.time_per_billion_tokens_s,
                        cost_per_billion_tokens=self.cost_per_billion_tokens, replicas=self.replicas,
                        monthly_cost=self.monthly_cost,
                        cost_per_million_output_tokens=self.cost_per_million_output_tokens, spot=self.spot,
                        checkpoint_saves=self.checkpoint_saves, price_margin=self.price_margin, fixed=self.fixed, fixed_cost=self.fixed_cost,
                        weights_staging=self.weights_staging,
                        utilization=self.utilization, job=self.job, unit_cost=self.unit_cost,
                        sizing=self.serving_sizing)
        return Plan(platform="ecs", instance_type=c.inst.instance_type, instance_count=self.instance_count,
                    gpu=c.inst.gpu, gpus_total=self.gpus_total, parallel=parallel,
                    layout=layout, memory=PlanMemory.of(c.est),
                    performance={k: v for k, v in c.est.performance.items() if v is not None}, cost=cost,
                    advice=PlanAdvice(why=tuple(self.why), warnings=tuple(self.warnings)),
                    cost_key=self.cost_key, time_key=self.time_key, estimate=c.est, deadline_slack=self.deadline_slack,
                    recipe=c.recipe, intervals=self.intervals or {})



def plans_for(ctx: PlanContext, c: Candidate) -> list[Draft]:
    from gpuplan.catalog.hardware.regions import load_regions

    out = []
    priced = False
    own = load_regions(c.inst.cloud)
    for region in [r for r in ctx.regions if r in own] or ctx.regions:   # a region of the type's own cloud
        for billing in ctx.billings:
            price = ctx.book.price_with_proxy(c.inst.instance_type, region, billing)
            if price is None:
                continue
            priced = True
            out.append(draft(ctx, c, price, region))
    if not priced:
        out.append(draft(ctx, c, None, ctx.regions[0] if ctx.regions else None))
    return out


def draft(ctx: PlanContext, c: Candidate, price: costm.Price | None, region: str | None) -> Draft:
    inst_per_h = price.per_hour if price else None
    p = Draft(cand=c, billing=price.billing if price else None, region=region,
             price_region=price.region if price else None, instance_price_per_hour=inst_per_h, price_per_hour=None,
             currency=ctx.book.currency, price_as_of=price.as_of if price else None,
             price_source=price.source if price else None, replicas=None, instance_count=c.nodes,
             gpus_total=c.gpus, time_s=None, total_cost=None, monthly_cost=None,
             cost_per_million_output_tokens=None, price_estimated=bool(price and price.estimated),
             price_kind=(price.kind or None) if price else None, price_rule=(price.rule or None) if price else None,
             price_margin=price.margin if price else None, framework=ctx.framework)
    p.warnings.extend(c.warnings)
    p.why.extend(c.why)
    p.why.extend(c.recipe.why if c.recipe else ())
    if price and price.note:
        cur = ctx.book.currency
        if price.per_month:
            p.why.append(_("price: {cur} {hourly}/h per instance ({cur} {monthly}/month), {region}, as of {date} "
                           "({note})").format(cur=cur, hourly=f"{price.per_hour:,.2f}",
                                              monthly=f"{price.per_month:,.0f}", region=price.region,
                                              date=price.as_of, note=price.note))
        else:
            p.why.append(_("price: {cur} {hourly}/h per instance, {region}, as of {date} ({note})").format(
                cur=cur, hourly=f"{price.per_hour:,.2f}", region=price.region, date=price.as_of, note=price.note))
    if price and price.region != region:
        p.warnings.append(_("no {billing} price for {instance} in {region}: using the {proxy} price as a proxy")
                          .format(billing=_(price.billing), instance=c.inst.short_name, region=region,
                                  proxy=price.region))
    if ctx.training:
        training_costs(ctx, c, p, price)
    else:
        from gpuplan.plan.serving.serving_costs import serving_costs   # serving plans only

        serving_costs(ctx, c, p, price)
    p.intervals = draft_ranges(ctx, c, p, price)
    deadline_margin(ctx, p)
    return p




def unpriced(plans: list[Draft]) -> list[dict]:
    """Feasible instance types without any price (no row in any region, no estimate): listed apart,
    "feasible, price unknown: refresh or import your quote", rather than ranked among priced plans."""
    out: dict[str, dict] = {}
    for p in plans:
        t = p.cand.inst.instance_type
        if p.price_per_hour is None and p.billing is None and t not in out:
            out[t] = {"instance_type": t, "cloud": p.cand.inst.cloud, "gpu": p.cand.inst.gpu,
                      "gpus_total": p.gpus_total, "instance_count": p.instance_count,
                      "reason": _("feasible, price unknown: refresh or import your quote (`gpuplan catalog import "
                                  "FILE`)")}
    return list(out.values())


