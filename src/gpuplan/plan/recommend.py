"""`recommend()`: search the catalog for the instances, layout and billing that run a workload,
cost them, rank them, and explain the choice (the `gpuplan recommend --json` contract)."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.catalog.instances import DEFAULT_CLOUD, InstanceType, load_instances
from gpuplan.catalog.prices import load_offers
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _, localize
from gpuplan.plan import cost as costm
from gpuplan.plan import feasibility as fz
from gpuplan.plan.candidates import DEFAULT_MAX_GPUS, TRAIN_TASKS, Fixed, is_llm, launcher_for
from gpuplan.plan.network import network_advice
from gpuplan.plan.rank import pareto_front, rank
from gpuplan.plan.record import PLATFORMS, Plan, PlanAdvice, PlanCost, PlanMemory, rnd
from gpuplan.plan.search import Candidate, Searcher, Variant, best_per_group
from gpuplan.plan.storage import checkpoint_bytes, data_read_bytes_s, storage_advice
from gpuplan.units import GIB, HOUR_S, HOURS_PER_MONTH
from gpuplan.workload import Workload, load_workload, resolve_defaults

SCHEMA_VERSION = 1
SEARCHED_FIELDS = ("parallel", "hardware", "grad_checkpointing", "optimizer")
RECIPE_FIELDS = ("batch_size", "gradient_accumulation")   # training: searched too (plan/recipe.py)
DEFAULT_TOP = 5
SERVING_DEFAULT_BILLING = ("payg", "subscription")   # spot for online serving only when asked
TRAINING_DEFAULT_BILLING = ("payg", "spot", "subscription")


@dataclass
class _Draft:
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
    utilization: float | None = None
    job: dict | None = None
    unit_cost: dict | None = None

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
                    "global_batch": c.recipe.global_batch_sequences if c.recipe else None,
                    "nodes_per_replica": c.nodes,
                    "launcher": launcher_for(lay.tp, lay.pp, lay.zero, lay.fsdp, lay.offload, lay.cp)
                    if c.variant.w.task in TRAIN_TASKS else None}
        cost = PlanCost(currency=self.currency, billing=self.billing, region=self.region,
                        price_region=self.price_region, instance_price_per_hour=self.instance_price_per_hour,
                        price_per_hour=self.price_per_hour, price_estimated=self.price_estimated,
                        price_kind=self.price_kind, price_rule=self.price_rule, price_as_of=self.price_as_of,
                        price_source=self.price_source, time_s=self.time_s,
                        total_cost=self.total_cost, time_per_billion_tokens_s=self.time_per_billion_tokens_s,
                        cost_per_billion_tokens=self.cost_per_billion_tokens, replicas=self.replicas,
                        monthly_cost=self.monthly_cost,
                        cost_per_million_output_tokens=self.cost_per_million_output_tokens, spot=self.spot,
                        price_margin=self.price_margin, fixed=self.fixed, fixed_cost=self.fixed_cost,
                        utilization=self.utilization, job=self.job, unit_cost=self.unit_cost)
        return Plan(platform="ecs", instance_type=c.inst.instance_type, instance_count=self.instance_count,
                    gpu=c.inst.gpu, gpus_total=self.gpus_total, parallel=parallel,
                    layout=re.sub(r", mb \d+ x ga \d+$", "", lay.describe()) if c.recipe else
                    re.sub(r", mb 1 x ga 1$", "", lay.describe()), memory=PlanMemory.of(c.est),
                    performance={k: v for k, v in c.est.performance.items() if v is not None}, cost=cost,
                    advice=PlanAdvice(why=tuple(self.why), warnings=tuple(self.warnings)),
                    cost_key=self.cost_key, time_key=self.time_key, estimate=c.est, recipe=c.recipe)



@dataclass
class Recommendation:
    """The answer of `recommend()`: ranked plans, rejections with reasons, and what binds."""

    workload: Workload
    objective: str
    currency: str
    plans: list[Plan]
    rejected: list[dict]
    binding_constraints: list[dict]
    why_not: list[str]
    assumptions: list[str]
    warnings: list[str]
    all_plans: list[Plan] = field(default_factory=list, repr=False)
    stats: dict = field(default_factory=dict)
    unpriced: list[dict] = field(default_factory=list)   # feasible types with no known price (see _unpriced)

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans else None

    @property
    def ok(self) -> bool:
        return bool(self.plans)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "workload": self.workload.model_dump(mode="json"),
            "objective": self.objective,
            "currency": self.currency,
            "plans": [_with_ops(p.to_dict(), self.workload) for p in self.plans],
            "pareto": [p.brief() for p in self.all_plans if p.pareto],
            "rejected": self.rejected,
            "binding_constraints": self.binding_constraints,
            "why_not": self.why_not,
            "assumptions": self.assumptions,
            "warnings": self.warnings,
            "search": self.stats,
            "unpriced": self.unpriced,
        }


def _with_ops(d: dict, workload: Workload) -> dict:
    """Attach the operational advice (image, driver/CUDA, auto-release, logs, compliance) to a plan."""
    from gpuplan.plan.ops import ops_advice

    d["ops"] = ops_advice(d, workload)
    return d


# ================================================================================ entry point

def recommend(workload: Workload | dict | str, *, top: int = DEFAULT_TOP, cache_dir: str | os.PathLike | None = None,
              price_files: Iterable[str | os.PathLike] = (), instances: Iterable[InstanceType] | None = None,
              today: dt.date | None = None, spot_model: costm.SpotModel = costm.DEFAULT_SPOT,
              fx: costm.Fx | None = None, memory_headroom: float = fz.MEMORY_HEADROOM,
              **overrides: Any) -> Recommendation:
    """Recommend plans for a workload (file path, mapping or Workload; ``overrides`` are CLI-style flags).

    Unset ``parallel``, ``hardware``, ``grad_checkpointing`` and ``optimizer`` are searched; set ones
    are fixed. Raises GpuplanError only for unusable input; an unsatisfiable workload returns a
    Recommendation with no plans and its ``binding_constraints``.
    """
    from gpuplan.catalog.models import resolve_model
    from gpuplan.estimate.shapes import shape_of

    t0 = time.perf_counter()
    w = load_workload(workload, **overrides) if overrides or not isinstance(workload, Workload) else workload
    searched = frozenset(f for f in SEARCHED_FIELDS + (RECIPE_FIELDS if w.is_training else ()) if getattr(w, f) is None)
    resolved, notes = resolve_defaults(w, searched=searched)
    model = resolve_model(resolved.model)
    shape = shape_of(model) if is_llm(model) else None
    task = resolved.task or "inference"
    training = task in TRAIN_TASKS
    cons = resolved.constraints
    objective = resolved.objective or "cost"
    currency = cons.currency if cons else "CNY"
    fixed = Fixed.from_workload(resolved)
    max_gpus = (cons.max_gpus if cons and cons.max_gpus else None)
    search_gpus = max(max_gpus or DEFAULT_MAX_GPUS, fixed.gpus or 0)
    allowed_status = frozenset(cons.include_status if cons and cons.include_status else ("ga",))
    assumptions = list(notes) + list(getattr(model, "assumptions", ()) or ())
    warnings: list[str] = []

    variants = _variants(resolved, cons)
    insts = _instances(resolved, instances, cache_dir)
    searcher = Searcher(resolved, model, shape, fixed, variants, max_gpus=search_gpus,
                        allowed_status=allowed_status, headroom=memory_headroom)
    res = searcher.run(insts)
    groups = best_per_group(res.candidates, training)

    clouds = sorted({i.cloud for i in insts}) or [DEFAULT_CLOUD]
    offers = [o for cloud in clouds for o in load_offers(cloud, cache_dir, price_files)]
    book = costm.PriceBook(offers, currency, fx, spot_model)
    regions = [r.strip().lower() for r in cons.regions] if cons and cons.regions else _default_regions(clouds, book)
    billings = tuple(cons.billing) if cons and cons.billing else (TRAINING_DEFAULT_BILLING if training
                                                                  else SERVING_DEFAULT_BILLING)
    ctx = _Ctx(resolved, model, task, training, book, regions, billings, max_gpus, spot_model, today, insts)
    if _is_job(ctx) and not (cons and cons.billing):
        ctx.billings = TRAINING_DEFAULT_BILLING   # a batch job can run on spot like a training job
    drafts: list[_Draft] = []
    rejected_plans: list[tuple[_Draft, fz.Reject]] = []
    for c in groups:
        for d in _plans_for(ctx, c):
            r = _check_constraints(ctx, d)
            if r is None:
                drafts.append(d)
            else:
                rejected_plans.append((d, r))
                cur = res.rejects.get(c.inst.instance_type)
                if cur is None or (fz.CODE_RANK[r.code], r.shortfall) < (fz.CODE_RANK[cur.code], cur.shortfall):
                    res.rejects[c.inst.instance_type] = r
    for d in drafts:   # a type with a plan is not "rejected"
        res.rejects.pop(d.cand.inst.instance_type, None)
    plans: list[Plan] = [d.record() for d in drafts]

    wanted = _platforms_wanted(cons)
    if not training and not _is_job(ctx) and plans and (cons is None or not cons.clouds or "alibaba" in cons.clouds) \
            and plans[0].instance_type in {i.instance_type for i in insts if i.cloud == DEFAULT_CLOUD} \
            and wanted - {"ecs"}:
        # serverless and managed serving (Function Compute, PAI-EAS, ACK) beside plain ECS replicas
        from gpuplan.plan.platforms import platform_plans

        ecs_ranked = rank(plans, objective)
        # ACK node pools run pay-as-you-go nodes: give them the best pay-as-you-go plans too, not only
        # the top plans (which may all be subscriptions)
        # (at least DEFAULT_TOP of each, so that --top 1 sees the same managed plans as the default)
        k = max(top, DEFAULT_TOP)
        ecs_in = ecs_ranked[:k] + [p for p in ecs_ranked if p.cost.billing == "payg"][:k]
        try:
            plans += platform_plans(resolved, ecs_plans=ecs_in, currency=currency,
                                    region=regions[0] if regions else None, fx=book.fx,
                                    platforms=[p for p in PLATFORMS if p in wanted and p != "ecs"])
        except GpuplanError as err:
            warnings.append(_("serverless/managed platforms not compared: {error}").format(error=err.message))
    feasible = plans
    ecs_all = [p for p in plans if p.is_ecs]
    plans = [p for p in plans if p.platform in wanted]
    ranked = rank(plans, objective)
    front = {id(p) for p in pareto_front(ranked)}
    ranked = [replace(p, rank=i, pareto=id(p) in front) for i, p in enumerate(ranked, 1)]
    shown = ranked[:top]   # the top N only; the whole Pareto front is the `pareto` list
    shown = [_advise(ctx, p) if p.is_ecs else p for p in shown]
    if shown:
        shown[0] = shown[0].with_advice(why=(_headline(ctx, shown[0], objective),) + shown[0].advice.why)
    final = {p.rank: p for p in shown}
    ranked = [final.get(p.rank, p) for p in ranked]
    ecs_ranked = rank(ecs_all, objective)
    why_not = _why_not(ctx, ecs_ranked[0] if ecs_ranked else None, res, searcher)
    binding = [] if ranked else _binding(ctx, rejected_plans, res, feasible, wanted)

    warnings.extend(_global_warnings(ctx, shown, book))
    unpriced = _unpriced(drafts)
    if unpriced:
        warnings.append(_("feasible, price unknown: {types}: refresh (`gpuplan catalog refresh`) or pass --prices")
                        .format(types=", ".join(u["instance_type"] for u in unpriced)))
    assumptions.extend(_assumptions(ctx, book, memory_headroom, spot_model))
    rejected = [{"instance_type": t, "code": r.code, "reason": r.reason}
                for t, r in sorted(res.rejects.items(), key=lambda kv: (fz.CODE_RANK[kv[1].code], kv[0]))]
    stats = {"instance_types": len(insts), "candidates": len(res.candidates), "estimates": res.estimates,
             "plans": len(drafts), "elapsed_s": round(time.perf_counter() - t0, 4)}
    return Recommendation(resolved, objective, currency, shown, rejected, binding, why_not, assumptions,
                          _dedupe(warnings), ranked, stats, unpriced)


def _default_regions(clouds: list[str], book: costm.PriceBook) -> list[str]:
    """One region per cloud when the user names none: the cloud's default (regions.yaml)."""
    from gpuplan.catalog.instances import default_region

    out = [r for r in (default_region(c) for c in clouds) if r]
    return list(dict.fromkeys(out)) or list(book.regions) or ["cn-shanghai"]


def _unpriced(plans: list[_Draft]) -> list[dict]:
    """Feasible instance types without any price (no row in any region, no estimate): listed apart,
    "feasible, price unknown: refresh or pass --prices", rather than ranked among priced plans."""
    out: dict[str, dict] = {}
    for p in plans:
        t = p.cand.inst.instance_type
        if p.price_per_hour is None and p.billing is None and t not in out:
            out[t] = {"instance_type": t, "cloud": p.cand.inst.cloud, "gpu": p.cand.inst.gpu,
                      "gpus_total": p.gpus_total, "instance_count": p.instance_count,
                      "reason": _("feasible, price unknown: refresh or pass --prices")}
    return list(out.values())


# ================================================================================ helpers

@dataclass
class _Ctx:
    w: Workload
    model: Any
    task: str
    training: bool
    book: costm.PriceBook
    regions: list[str]
    billings: tuple[str, ...]
    max_gpus: int | None
    spot: costm.SpotModel
    today: dt.date | None
    insts: list[InstanceType]
    fixed: costm.FixedCosts = field(default_factory=costm.load_fixed_costs)

    @property
    def llm(self) -> bool:
        return bool(is_llm(self.model))

    def dataset_tokens(self) -> float | None:
        ds = self.w.dataset
        return ds.total_tokens(self.w.seq_len or 2048) if ds else None

    def dataset_samples(self) -> float | None:
        ds = self.w.dataset
        if ds and ds.samples:
            return ds.samples * ds.epochs
        return None

    def request_rate(self) -> float | None:
        s = self.w.serving
        if not s:
            return None
        if s.peak_requests_per_s:
            return s.peak_requests_per_s
        if s.requests_per_s:
            return s.requests_per_s
        if s.requests_per_day:
            avg = s.requests_per_day / 86400.0
            return avg * (24.0 / s.peak_hours_per_day) if s.peak_hours_per_day else avg
        return None


def _platforms_wanted(cons) -> frozenset[str]:
    """constraints.platforms, else every platform."""
    return frozenset(cons.platforms) if cons is not None and getattr(cons, "platforms", None) else frozenset(PLATFORMS)


def _variants(w: Workload, cons) -> list[Variant]:
    """Quantization options: constraints.quantization, else exactly the workload's."""
    qs = list(cons.quantization) if cons and cons.quantization else [w.quantization or "none"]
    out = []
    for q in dict.fromkeys(qs):
        if q == (w.quantization or "none"):
            out.append(Variant(q, w.optimizer, w))
            continue
        changes: dict[str, Any] = {"quantization": q}
        if q in ("gptq-int4", "gptq-int8", "awq") and w.precision == "bf16":
            changes["precision"] = "fp16"
        try:
            out.append(Variant(q, w.optimizer, w.with_updates(**changes)))
        except GpuplanError:
            continue
    if not out:
        raise GpuplanError(_("None of the allowed quantizations {qs} works with task {task}.").format(qs=qs, task=w.task),
                           hint=_("QLoRA needs a 4-bit or 8-bit base: allow bnb-nf4 (or int4/awq/gptq) in "
                                  "constraints.quantization."), field="constraints.quantization")
    return out


def _instances(w: Workload, given, cache_dir) -> list[InstanceType]:
    """The instance types in play: the catalog, narrowed by hardware and constraints.families."""
    cons = w.constraints
    if given is not None:
        insts = list(given)
    else:
        clouds = [c.lower() for c in cons.clouds] if cons and cons.clouds else [DEFAULT_CLOUD]
        insts = [i for c in dict.fromkeys(clouds) for i in load_instances(c, cache_dir).values()]
    hw = w.hardware
    if hw and hw.instance_type:
        want = hw.instance_type.lower().removeprefix("ecs.")
        insts = [i for i in insts if i.short_name.lower() == want]
        if not insts:
            raise GpuplanError(_("Unknown instance type {name!r}.").format(name=hw.instance_type),
                               hint=_("See `gpuplan instances`."))
    if hw and hw.gpu:
        from gpuplan.catalog.gpus import resolve_gpu

        spec, _unused = resolve_gpu(hw.gpu)
        insts = [i for i in insts if i.gpu == spec.id]
    cons = w.constraints
    if cons and cons.families:
        fams = {f.lower().removeprefix("ecs.") for f in cons.families}
        insts = [i for i in insts if i.family.lower() in fams]
    return insts


def _plans_for(ctx: _Ctx, c: Candidate) -> list[_Draft]:
    from gpuplan.catalog.instances import load_regions

    out = []
    priced = False
    own = load_regions(c.inst.cloud)
    for region in [r for r in ctx.regions if r in own] or ctx.regions:   # a region of the type's own cloud
        for billing in ctx.billings:
            price = ctx.book.price_with_proxy(c.inst.instance_type, region, billing)
            if price is None:
                continue
            priced = True
            out.append(_plan(ctx, c, price, region))
    if not priced:
        out.append(_plan(ctx, c, None, ctx.regions[0] if ctx.regions else None))
    return out


def _plan(ctx: _Ctx, c: Candidate, price: costm.Price | None, region: str | None) -> _Draft:
    inst_per_h = price.per_hour if price else None
    p = _Draft(cand=c, billing=price.billing if price else None, region=region,
             price_region=price.region if price else None, instance_price_per_hour=inst_per_h, price_per_hour=None,
             currency=ctx.book.currency, price_as_of=price.as_of if price else None,
             price_source=price.source if price else None, replicas=None, instance_count=c.nodes,
             gpus_total=c.gpus, time_s=None, total_cost=None, monthly_cost=None,
             cost_per_million_output_tokens=None, price_estimated=bool(price and price.estimated),
             price_kind=(price.kind or None) if price else None, price_rule=(price.rule or None) if price else None,
             price_margin=price.margin if price else None)
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
        _training_costs(ctx, c, p, price)
    else:
        _serving_costs(ctx, c, p, price)
    return p


def _checkpoint_write_s(ctx: _Ctx, c: Candidate) -> float:
    ck = _ckpt_bytes(ctx, c.variant.w.optimizer or "adamw")
    mb_s = 350e6  # one PL1 ESSD at its cap (storage.yaml); the advice may provision more
    return ck / mb_s


def _family(ctx: _Ctx, instance_type: str) -> str:
    return next((i.family for i in ctx.insts if i.instance_type == instance_type), instance_type)


def _ckpt_bytes(ctx: _Ctx, optimizer: str) -> float:
    from gpuplan.estimate.memory import lora_param_count

    params = float(ctx.model.params_total)
    trainable = params
    if ctx.task in ("lora", "qlora") and ctx.llm:
        lo = ctx.w.lora
        trainable, _unused = lora_param_count(ctx.model, lo.targets if lo else "all-linear", lo.rank if lo else 8)
    return checkpoint_bytes(params, trainable, ctx.task, optimizer or "adamw")


_QUANT_BYTES = {"none": 2.0, "int8": 1.0, "fp8": 1.0, "gptq-int8": 1.0, "int4": 0.5, "awq": 0.5, "gptq-int4": 0.5,
                "bnb-nf4": 0.5}


def _model_bytes(ctx: _Ctx) -> float:
    """Bytes of the model checkpoint each node downloads (16-bit, or the quantized size)."""
    params = float(getattr(ctx.model, "params_total", 0.0) or 0.0)
    return params * _QUANT_BYTES.get(ctx.w.quantization or "none", 2.0)


_FIXED_PARTS = {"boot_s": N_("boot"), "image_pull_s": N_("image pull"), "model_download_s": N_("model download"),
                "idle_tail_s": N_("idle tail")}


def _fixed_why(fixed: dict, nodes: int) -> str:
    mins = sum(fixed.values()) / 60.0
    parts = _(", ").join(_("{part} {min} min").format(part=_(_FIXED_PARTS.get(k, k)), min=f"{v / 60:.0f}")
                         for k, v in fixed.items())
    if nodes > 1:
        return _("fixed: {min} min per instance ({parts}; assumed, data/plan_costs.yaml), paid by each of {nodes} "
                 "instances").format(min=f"{mins:.0f}", parts=parts, nodes=nodes)
    return _("fixed: {min} min per instance ({parts}; assumed, data/plan_costs.yaml)").format(
        min=f"{mins:.0f}", parts=parts)


def _training_costs(ctx: _Ctx, c: Candidate, p: _Draft, price: costm.Price | None) -> None:
    perf = c.est.performance
    tps = float(perf.get("tokens_per_s") or 0.0)
    sps = float(perf.get("samples_per_s") or 0.0)
    base_time = None
    if ctx.llm:
        tokens = ctx.dataset_tokens()
        if tokens and tps > 0:
            base_time = tokens / tps
        if tps > 0:
            p.time_per_billion_tokens_s = 1e9 / tps
    else:
        samples = ctx.dataset_samples()
        if samples and sps > 0:
            base_time = samples / sps
    factor = 1.0
    if p.billing == "spot":
        run = costm.spot_run(base_time or 3600.0 * 24, _checkpoint_write_s(ctx, c), ctx.spot)
        factor = 1.0 + run.overhead_fraction
        p.spot = {"overhead_fraction": round(run.overhead_fraction, 4),
                  "checkpoint_interval_s": round(run.checkpoint_interval_s, 1),
                  "checkpoint_write_s": round(run.checkpoint_write_s, 1),
                  "expected_interruptions": round(run.expected_interruptions, 2) if base_time else None,
                  "interruptions_per_hour": ctx.spot.interruptions_per_hour}
        p.why.append(_("spot: checkpoint every {min} min; interruptions add {share} to the run time (Young's "
                       "interval, assumed {rate} interruptions/h)").format(
            min=f"{run.checkpoint_interval_s / 60:.0f}", share=f"{run.overhead_fraction:.1%}",
            rate=f"{ctx.spot.interruptions_per_hour:g}"))
        if base_time and base_time * factor / HOUR_S > ctx.spot.long_job_warning_h:
            p.warnings.append(_("long job on spot: expect about {n} interruptions over {hours} h; resume from "
                                "checkpoints automatically").format(n=f"{run.expected_interruptions:.1f}",
                                                                    hours=f"{base_time * factor / HOUR_S:.0f}"))
    fixed_s = 0.0
    if base_time is not None:
        fixed = ctx.fixed.breakdown(_model_bytes(ctx))
        fixed_s = sum(fixed.values())
        p.fixed = fixed
        p.time_s = base_time * factor + fixed_s
        p.why.append(_fixed_why(fixed, c.nodes))
    if price is not None:
        hourly = price.per_hour * c.nodes
        p.price_per_hour = hourly
        if p.time_s is not None:
            p.total_cost = costm.training_cost(price, c.nodes, ctx.fixed.billed_s(price.billing, p.time_s))
            if price.billing != "subscription":
                p.fixed_cost = fixed_s / HOUR_S * hourly
            if price.billing == "subscription":
                months = costm.months_needed(p.time_s)
                p.why.append(_("subscription: {months} month(s) x {monthly} x {nodes} instance(s)").format(
                    months=months, monthly=f"{price.per_month:,.0f}", nodes=c.nodes))
        if p.time_per_billion_tokens_s is not None:
            p.cost_per_billion_tokens = p.time_per_billion_tokens_s * factor / HOUR_S * hourly
    p.cost_key = p.total_cost if p.time_s is not None else p.cost_per_billion_tokens
    p.time_key = p.time_s if p.time_s is not None else (
        p.time_per_billion_tokens_s * factor if p.time_per_billion_tokens_s else None)


def _is_job(ctx: _Ctx) -> bool:
    """An inference workload with a dataset is a batch job (time, total cost, cost per item), not a service."""
    return not ctx.training and _job_items(ctx) is not None


def _job_items(ctx: _Ctx) -> tuple[float, str] | None:
    """(items to process, unit) of a batch inference job, or None (a service)."""
    ds = ctx.w.dataset
    if ds is None:
        return None
    if ds.audio_hours:
        clip = (ctx.w.input.audio_seconds if ctx.w.input and ctx.w.input.audio_seconds else None) or 30.0
        return ds.audio_hours * HOUR_S / clip * ds.epochs, "clip"
    unit = _item_unit(ctx)
    if ds.items:
        return ds.items * ds.epochs, unit
    if ds.samples:
        return ds.samples * ds.epochs, unit
    if ds.tokens and ctx.llm:
        per = (ctx.w.prompt_tokens or 0) + (ctx.w.output_tokens or 0)
        return (ds.tokens * ds.epochs / per, "request") if per > 0 else None
    return None


def _item_unit(ctx: _Ctx) -> str:
    kind = getattr(ctx.model, "kind", "")
    return "image" if kind == "diffusion" else "clip" if kind in ("speech", "asr", "whisper", "audio") else "request"


def _target_util(ctx: _Ctx) -> float:
    from gpuplan.plan.queueing import DEFAULT_TARGET_UTILIZATION

    s = ctx.w.serving
    return s.target_utilization if s and s.target_utilization else DEFAULT_TARGET_UTILIZATION


def _slots(c: Candidate) -> int:
    """Requests in flight in one replica group: its serving batch (LLM) or concurrency, per DP group."""
    perf = c.est.performance
    per = perf.get("serving_batch") or perf.get("max_concurrency") or 1
    return max(1, int(per)) * max(1, c.dp)


def _job_costs(ctx: _Ctx, c: Candidate, p: _Draft, price: costm.Price | None) -> None:
    """A batch inference job: replicas to meet the deadline, time, total cost and cost per item."""
    job_items = _job_items(ctx)
    assert job_items is not None  # called only when _is_job(ctx)
    items, unit = job_items
    group_rate = c.speed(False)
    cons = ctx.w.constraints
    fixed = ctx.fixed.breakdown(_model_bytes(ctx))
    fixed_s = sum(fixed.values())
    replicas = 1
    if group_rate > 0 and cons and cons.deadline_hours:
        room = cons.deadline_hours * HOUR_S - fixed_s
        replicas = max(1, math.ceil(items / (group_rate * room) - 1e-9)) if room > 0 else 1
        cap = max(1, (ctx.max_gpus or 10 ** 6) // max(1, c.gpus))
        replicas = min(replicas, cap, 10_000)
    p.replicas = replicas
    p.instance_count = c.nodes * replicas
    p.gpus_total = c.gpus * replicas
    p.fixed = fixed
    if group_rate <= 0:
        return
    base = items / (group_rate * replicas)
    factor = 1.0
    if p.billing == "spot":
        run = costm.spot_run(base, 1.0, ctx.spot)   # in-flight items are redone; nothing to checkpoint
        factor = 1.0 + run.overhead_fraction
        p.spot = {"overhead_fraction": round(run.overhead_fraction, 4), "checkpoint_interval_s": None,
                  "checkpoint_write_s": None, "expected_interruptions": round(run.expected_interruptions, 2),
                  "interruptions_per_hour": ctx.spot.interruptions_per_hour}
    p.time_s = base * factor + fixed_s
    job: dict[str, Any] = {"items": rnd(items, 1), "unit": unit, "items_per_s": rnd(group_rate * replicas),
                           "replicas": replicas}
    ds = ctx.w.dataset
    if ds and ds.audio_hours:
        job["audio_hours"] = ds.audio_hours * ds.epochs
    if price is not None:
        p.price_per_hour = price.per_hour * p.instance_count
        p.total_cost = costm.training_cost(price, p.instance_count, ctx.fixed.billed_s(price.billing, p.time_s))
        if price.billing != "subscription":
            p.fixed_cost = fixed_s / HOUR_S * p.price_per_hour
        job[f"cost_per_{unit}"] = rnd(p.total_cost / items)
        job["cost_per_item"] = rnd(p.total_cost / items)
        if "audio_hours" in job:
            job["cost_per_audio_hour"] = rnd(p.total_cost / job["audio_hours"])
    p.job = job
    args = {"items": f"{items:,.0f}", "unit": _(_ITEM_UNITS.get(unit, unit)), "rate": f"{group_rate:.2f}",
            "replicas": replicas, "hours": f"{base / HOUR_S:,.1f}", "share": f"{factor - 1:.1%}"}
    if factor > 1:
        p.why.append(_("batch job: {items} {unit} at {rate}/s per replica x {replicas} replica(s) = {hours} h "
                       "(+{share} spot interruptions)").format(**args))
    else:
        p.why.append(_("batch job: {items} {unit} at {rate}/s per replica x {replicas} replica(s) = {hours} h")
                     .format(**args))
    p.why.append(_fixed_why(fixed, p.instance_count))
    p.cost_key = p.total_cost
    p.time_key = p.time_s


_ITEM_UNITS = {"image": N_("images"), "clip": N_("clips"), "request": N_("requests")}


def _serving_costs(ctx: _Ctx, c: Candidate, p: _Draft, price: costm.Price | None) -> None:
    from gpuplan.plan.queueing import size_replicas

    if _is_job(ctx):
        _job_costs(ctx, c, p, price)
        return
    group_rate = c.speed(False)
    rate = ctx.request_rate()
    s = ctx.w.serving
    target = _target_util(ctx)
    sizing = None
    if rate and group_rate > 0:
        slack = None
        if s and s.ttft_ms and c.est.performance.get("ttft_s") is not None:
            slack = s.ttft_ms / 1000.0 - float(c.est.performance["ttft_s"])
        sizing = size_replicas(rate, group_rate, _slots(c), target, slack)
        replicas = sizing.replicas
        p.utilization = sizing.utilization
    else:
        replicas = 1
    p.replicas = replicas
    p.instance_count = c.nodes * replicas
    p.gpus_total = c.gpus * replicas
    served = rate if rate else group_rate * replicas
    if price is not None:
        p.price_per_hour = price.per_hour * p.instance_count
        p.monthly_cost = costm.serving_monthly_cost(price, p.instance_count)
        if ctx.llm and served:
            out_tps = served * (c.variant.w.output_tokens or 1)
            hourly = p.monthly_cost / HOURS_PER_MONTH
            p.cost_per_million_output_tokens = costm.cost_per_million_tokens(hourly, out_tps)
        if not ctx.llm and served:
            unit = _item_unit(ctx)
            p.unit_cost = {"unit": unit, "cost": rnd(p.monthly_cost / HOURS_PER_MONTH / (served * HOUR_S)),
                           "basis": "at the request rate" if rate else "at full capacity (no request rate given)"}
    if group_rate > 0:
        unit = "req/s" if ctx.llm else "images/s" if getattr(ctx.model, "kind", "") == "diffusion" else "req/s"
        args = {"gpus": c.gpus, "gpu": c.inst.gpu, "layout": localize(c.layout.describe().split(", ckpt")[0]),
                "rate": f"{group_rate:.2f}", "unit": unit}
        if sizing is None:
            text = _("one replica ({gpus} x {gpu}, {layout}) sustains {rate} {unit} (no request rate given: "
                     "1 replica)").format(**args)
        else:
            args.update(replicas=replicas, req=f"{rate:g}", util=f"{sizing.utilization:.0%}",
                        target=f"{target:.0%}", wait=f"{sizing.wait_p95_s * 1000:.0f}")
            if sizing.binding == "ttft":
                text = _("one replica ({gpus} x {gpu}, {layout}) sustains {rate} {unit}; {replicas} replica(s) for "
                         "{req} req/s: {util} utilised (target <= {target}), p95 queueing wait {wait} ms "
                         "(Erlang C); the TTFT target sets the count").format(**args)
            else:
                text = _("one replica ({gpus} x {gpu}, {layout}) sustains {rate} {unit}; {replicas} replica(s) for "
                         "{req} req/s: {util} utilised (target <= {target}), p95 queueing wait {wait} ms "
                         "(Erlang C)").format(**args)
        p.why.append(text)
    p.cost_key = p.monthly_cost
    p.time_key = c.latency_s()


def _check_constraints(ctx: _Ctx, p: _Draft) -> fz.Reject | None:
    cons = ctx.w.constraints
    label = fz.gpu_label(p.cand.inst)
    if ctx.max_gpus and p.gpus_total > ctx.max_gpus:
        return fz.Reject("layout", _("{label}: needs {n} GPUs > max_gpus {max}").format(
                             label=label, n=p.gpus_total, max=ctx.max_gpus),
                         p.gpus_total - ctx.max_gpus)
    if not cons:
        return None
    if cons.deadline_hours and p.time_s is not None and p.time_s > cons.deadline_hours * HOUR_S:
        return fz.Reject("deadline", _("{label} x {n} ({billing}): takes {hours} h > deadline {deadline} h").format(
                             label=label, n=p.instance_count, billing=_(p.billing or "unpriced"),
                             hours=f"{p.time_s / HOUR_S:,.1f}", deadline=f"{cons.deadline_hours:g}"),
                         p.time_s - cons.deadline_hours * HOUR_S)
    if cons.budget:
        spend = p.total_cost if ctx.training or _is_job(ctx) else p.monthly_cost
        if spend is None:
            if p.price_per_hour is None:
                return fz.Reject("no_price", _("{label}: no price known, cannot check the budget").format(label=label))
            return None
        if spend > cons.budget:
            tmpl = (_("{label} x {n} ({billing}): costs {cur} {spend} > budget {budget}") if ctx.training or _is_job(ctx)
                    else _("{label} x {n} ({billing}): costs {cur} {spend}/month > budget {budget}"))
            return fz.Reject("budget", tmpl.format(label=label, n=p.instance_count, billing=_(p.billing or "unpriced"),
                                                   cur=ctx.book.currency, spend=f"{spend:,.0f}",
                                                   budget=f"{cons.budget:,.0f}"), spend - cons.budget)
    return None


def _advise(ctx: _Ctx, p: Plan) -> Plan:
    """The plan with its storage, network and host advice and the memory/throughput reasons."""
    est = p.estimate
    inst = next(i for i in ctx.insts if i.instance_type == p.instance_type)
    nodes = p.nodes_per_replica
    perf = p.performance
    ds = ctx.w.dataset
    optimizer = p.parallel.get("optimizer") or ctx.w.optimizer or "adamw"
    ckpt = _ckpt_bytes(ctx, optimizer) if ctx.training else 0.0
    read = data_read_bytes_s(llm=ctx.llm, tokens_per_s=perf.get("tokens_per_s"), samples_per_s=perf.get("samples_per_s"),
                             bytes_per_sample=ds.bytes_per_sample if ds else None) if ctx.training else 0.0
    ds_bytes = None
    if ds and ds.size_gib:
        ds_bytes = ds.size_gib * GIB
    elif ds and ctx.llm:
        toks = ds.tokens or ((ds.samples or 0) * (ds.tokens_per_sample or ctx.w.seq_len or 2048))
        ds_bytes = toks * 4.0 if toks else None
    model_bytes = float(p.memory.components.get("weights", 0.0)) * max(1, p.parallel["tp"] * p.parallel["pp"])
    storage = storage_advice(training=ctx.training, nodes=nodes, read_bytes_s=read, checkpoint_bytes=ckpt,
                             model_bytes=model_bytes, dataset_bytes=ds_bytes,
                             instance_disk_mb_s=inst.disk_bandwidth_mb_s)
    alts = []
    if nodes > 1:
        alts = sorted({i.instance_type for i in ctx.insts if i.gpu == inst.gpu and i.rdma and i.status == "ga"})
    network = network_advice(inst, nodes, perf.get("comm_fraction"), alts)
    host_need = est.memory.host_bytes
    host = {"vcpus_per_node": inst.vcpus, "memory_gib_per_node": inst.memory_gib,
            "host_bytes_needed_per_node": int(host_need),
            "vcpus_per_gpu": round(inst.vcpus / inst.gpus, 2) if inst.vcpus and inst.gpus else None,
            "ok": True,
            "text": _("{vcpus} vCPU, {ram} GiB RAM per node; the job needs about {need} GiB").format(
                vcpus=inst.vcpus, ram=f"{inst.memory_gib:g}", need=f"{host_need / GIB:.0f}")
            if inst.memory_gib else _("host RAM not published")}
    used, cap = p.memory.per_gpu_bytes or 0, p.memory.capacity_per_gpu_bytes or 1   # always set on ECS plans
    why = [_("memory: {used} of {cap} GiB per GPU ({share})").format(
        used=f"{used / GIB:.1f}", cap=f"{cap / GIB:.1f}", share=f"{used / cap:.0%}")]
    if ctx.training and perf.get("tokens_per_s"):
        why.append(_("throughput: {tps} tokens/s, MFU {mfu}, communication {comm} of a step").format(
            tps=f"{perf['tokens_per_s']:,.0f}", mfu=f"{perf.get('mfu') or 0:.0%}",
            comm=f"{perf.get('comm_fraction') or 0:.0%}"))
    return p.with_advice(storage=storage, network=network, host=host, why=p.advice.why + tuple(why))


PLATFORM_NAMES = {"ecs": "ECS", "function-compute": "Function Compute", "pai-eas": "PAI-EAS", "ack": "ACK"}


def _headline(ctx: _Ctx, p: Plan, objective: str) -> str:
    cost, unit = p.cost.headline
    units = {"/month": _("{cur} {amount}/month"), " per 1B tokens": _("{cur} {amount} per 1B tokens")}
    money = (units.get(unit, "{cur} {amount}" + unit).format(cur=p.cost.currency, amount=f"{cost:,.2f}")
             if cost is not None else _("no price known"))
    args = {"n": p.instance_count, "instance": p.short_name, "gpus": f"{p.gpus_per_replica} x {p.gpu}",
            "billing": _(p.cost.billing or "unpriced"), "cost": money,
            "platform": _(PLATFORM_NAMES.get(p.platform, p.platform))}
    if p.is_ecs:
        tmpl = {"cost": _("cheapest feasible plan: {n} x {instance} ({gpus} per replica), {billing}, {cost}"),
                "time": _("fastest feasible plan: {n} x {instance} ({gpus} per replica), {billing}, {cost}"),
                "balanced": _("best cost x time feasible plan: {n} x {instance} ({gpus} per replica), {billing}, "
                              "{cost}")}[objective]
    else:
        tmpl = {"cost": _("cheapest feasible plan on {platform}: {n} x {instance} ({gpus} per replica), {billing}, "
                          "{cost}"),
                "time": _("fastest feasible plan on {platform}: {n} x {instance} ({gpus} per replica), {billing}, "
                          "{cost}"),
                "balanced": _("best cost x time feasible plan on {platform}: {n} x {instance} ({gpus} per replica), "
                              "{billing}, {cost}")}[objective]
    return tmpl.format(**args)


def _why_not(ctx: _Ctx, top: Plan | None, res, searcher: Searcher) -> list[str]:
    """Notes for instance families cheaper per hour than the top plan that were rejected."""
    out: list[str] = []
    top_h = top.cost.price_per_hour if top and top.cost.price_per_hour else None
    items = []
    for t, r in res.rejects.items():
        if r.code not in ("memory", "host_memory", "network", "sla", "deadline", "budget"):
            continue
        inst = next((i for i in ctx.insts if i.instance_type == t), None)
        if inst is None:
            continue
        price = ctx.book.price_with_proxy(t, ctx.regions[0] if ctx.regions else "cn-shanghai", "payg")
        if top_h is not None and (price is None or price.per_hour >= top_h):
            continue
        items.append((price.per_hour if price else math.inf, inst, r))
    # closest misses first: a limit the family nearly meets (SLA, deadline, budget, network, host RAM) before
    # GPU memory, and among memory misses the largest GPUs first; then the cheaper (a 2 GB vGPU slice that
    # misses a 40 GB model by 95 % says less than the L20 that misses its TTFT by 10 %); one line per family
    # and reason, its closest type (a deadline missed by 150 h on the 8-GPU type says more than the 900 h of
    # the 1-GPU type)
    closest: dict[str, tuple] = {}
    for item in items:
        key = f"{item[1].family}:{item[2].code}"
        if key not in closest or (item[2].shortfall, item[0]) < (closest[key][2].shortfall, closest[key][0]):
            closest[key] = item
    items = sorted(closest.values(), key=lambda x: (
        x[2].code == "memory", -(x[1].gpu_memory_gib or 0) if x[2].code == "memory" else 0, x[0]))
    for _h, inst, r in items:
        text = r.reason
        if r.code == "memory":
            hint = _relaxation_hint(ctx, inst, res, searcher)
            alt = None
            if top and _family(ctx, top.instance_type) == inst.family:
                # the top plan is this family with more GPUs: "fits on gn7" under a gn7 line reads as a contradiction
                per_copy = top.gpus_total // max(1, top.cost.replicas or 1)
                alt = _("with {gpus} GPUs per model copy, as in the top plan").format(gpus=per_copy)
            elif top:
                alt = _("on {family}").format(family=_family(ctx, top.instance_type))
            fixes = [h for h in (hint, alt) if h]
            if len(fixes) == 2:
                text = _("{reason}; fits {fix} or {alt}").format(reason=text, fix=fixes[0], alt=fixes[1])
            elif fixes:
                text = _("{reason}; fits {fix}").format(reason=text, fix=fixes[0])
        out.append(text)
    return out[:8]


def _relaxation_hint(ctx: _Ctx, inst: InstanceType, res, searcher: Searcher) -> str | None:
    """What a fixed setting costs: would checkpointing, or quantization (serving), make it fit?"""
    got = res.best_memory.get(inst.instance_type)
    if not got:
        return None
    e, r, nodes, lay = got
    from dataclasses import replace

    system = searcher.system(inst, nodes)
    v = Variant(ctx.w.quantization or "none", ctx.w.optimizer, ctx.w)
    if ctx.training and lay.checkpointing != "full":
        e2 = searcher.estimate(v, system, replace(lay, checkpointing="full"))
        if e2 and fz.check_memory(e2.memory.per_gpu_bytes, e2.memory.capacity_bytes, searcher.headroom):
            return _("with full gradient checkpointing ({gib} GiB)").format(gib=f"{e2.memory.per_gpu_bytes / GIB:.1f}")
    if ctx.training and ctx.task in ("full", "pretrain"):
        try:
            v2 = Variant("none", ctx.w.optimizer, ctx.w.with_updates(task="lora"))
            e2 = searcher.estimate(v2, system, replace(lay, zero=0, offload="none", checkpointing="full"))
        except GpuplanError:
            e2 = None
        if e2 and fz.check_memory(e2.memory.per_gpu_bytes, e2.memory.capacity_bytes, searcher.headroom):
            return _("with LoRA instead of full fine-tuning ({gib} GiB)").format(
                gib=f"{e2.memory.per_gpu_bytes / GIB:.1f}")
    if not ctx.training and (ctx.w.quantization or "none") == "none" and ctx.llm:
        for q in ("int8", "awq"):
            try:
                w2 = ctx.w.with_updates(quantization=q, precision="fp16" if q == "awq" else ctx.w.precision)
            except GpuplanError:
                continue
            e2 = searcher.estimate(Variant(q, None, w2), system, lay)
            if e2 and fz.check_memory(e2.memory.per_gpu_bytes, e2.memory.capacity_bytes, searcher.headroom):
                return _("with {q} weights ({gib} GiB; allow it in constraints.quantization)").format(
                    q=q, gib=f"{e2.memory.per_gpu_bytes / GIB:.1f}")
    return None


def _binding(ctx: _Ctx, rejected_plans: list[tuple[_Draft, fz.Reject]], res,
             feasible: list[Plan], wanted: frozenset[str]) -> list[dict]:
    """Which constraint binds, and by how much, when nothing is feasible."""
    if feasible:   # feasible plans exist, but none on the platforms the workload allows
        have = sorted({p.platform for p in feasible})
        return [{"constraint": "platforms", "limit": sorted(wanted), "needed": have, "short_by": None, "unit": None,
                 "text": (_("constraints.platforms allows {allowed}, but only {have} can run this workload (training "
                            "runs on ECS instances)") if ctx.training else
                          _("constraints.platforms allows {allowed}, but only {have} can run this workload")).format(
                     allowed=", ".join(sorted(wanted)), have=", ".join(have))}]
    cons = ctx.w.constraints
    out: list[dict] = []
    cur = ctx.book.currency
    by_code: dict[str, list[tuple[_Draft, fz.Reject]]] = {}
    for p, r in rejected_plans:
        by_code.setdefault(r.code, []).append((p, r))
    if "budget" in by_code or "deadline" in by_code:
        spend = (lambda p: p.total_cost) if ctx.training or _is_job(ctx) else (lambda p: p.monthly_cost)
        priced = [p for p, _r in rejected_plans if spend(p) is not None]
        if cons and cons.budget and priced:
            meets_deadline = [p for p in priced if not (cons.deadline_hours and p.time_s is not None
                                                        and p.time_s > cons.deadline_hours * HOUR_S)]
            pool = meets_deadline or priced
            cheapest = min(pool, key=spend)
            need = spend(cheapest)
            if need > cons.budget:
                out.append({"constraint": "budget", "limit": cons.budget, "needed": round(need, 2),
                            "short_by": round(need - cons.budget, 2), "unit": cur,
                            "text": (_("budget {cur} {budget} is {cur} {short} short of the cheapest plan that meets "
                                       "the deadline ({n} x {instance}, {billing}: {cur} {need})")
                                     if meets_deadline and cons.deadline_hours else
                                     _("budget {cur} {budget} is {cur} {short} short of the cheapest plan ({n} x "
                                       "{instance}, {billing}: {cur} {need})")).format(
                                cur=cur, budget=f"{cons.budget:,.0f}", short=f"{need - cons.budget:,.0f}",
                                n=cheapest.instance_count, instance=cheapest.cand.inst.short_name,
                                billing=_(cheapest.billing or "unpriced"), need=f"{need:,.0f}")})
        timed = [p for p, _r in rejected_plans if p.time_s is not None]
        if cons and cons.deadline_hours and timed:
            within = [p for p in timed if cons.budget and spend(p) is not None and spend(p) <= cons.budget]
            pool = within or timed
            fastest = min(pool, key=lambda p: p.time_s or 0.0)        # timed: time_s is set
            hours = (fastest.time_s or 0.0) / HOUR_S
            if hours > cons.deadline_hours:
                out.append({"constraint": "deadline_hours", "limit": cons.deadline_hours, "needed": round(hours, 2),
                            "short_by": round(hours - cons.deadline_hours, 2), "unit": "h",
                            "text": (_("deadline {deadline} h is {short} h short of the fastest plan within budget "
                                       "({n} x {instance}: {hours} h)") if within and cons.budget else
                                     _("deadline {deadline} h is {short} h short of the fastest plan ({n} x "
                                       "{instance}: {hours} h)")).format(
                                deadline=f"{cons.deadline_hours:g}", short=f"{hours - cons.deadline_hours:,.1f}",
                                n=fastest.instance_count, instance=fastest.cand.inst.short_name,
                                hours=f"{hours:,.1f}")})
    if "layout" in by_code and ctx.max_gpus:
        need = min(p.gpus_total for p, r in by_code["layout"])
        out.append({"constraint": "max_gpus", "limit": ctx.max_gpus, "needed": need, "short_by": need - ctx.max_gpus,
                    "unit": "GPUs", "text": _("max_gpus {max} is {short} short: the smallest feasible plan needs {need} GPUs")
                    .format(max=ctx.max_gpus, short=need - ctx.max_gpus, need=need)})
    if "no_price" in by_code and not out:
        out.append({"constraint": "budget", "limit": cons.budget if cons else None, "needed": None, "short_by": None,
                    "unit": cur, "text": _("the only feasible types have no known price, so the budget cannot be checked; pass "
                                           "--prices with your quotes")})
    if not out:
        mem = [r for r in res.rejects.values() if r.code == "memory"]
        sla = [r for r in res.rejects.values() if r.code == "sla"]
        status = [r for r in res.rejects.values() if r.code == "status"]
        if sla:
            s = ctx.w.serving
            out.append({"constraint": "sla", "limit": {"ttft_ms": s.ttft_ms if s else None, "tpot_ms": s.tpot_ms if s else None},
                        "needed": None, "short_by": None, "unit": "ms",
                        "text": _("no configuration meets the latency SLA; {reason}").format(reason=sla[0].reason)})
        if mem:
            best = min(mem, key=lambda r: r.shortfall)
            out.append({"constraint": "memory", "limit": None, "needed": None,
                        "short_by": round(best.shortfall / GIB, 2), "unit": "GiB",
                        "text": (_("no searched configuration fits in GPU memory (up to {n} GPUs); closest: {reason}; "
                                   "preview/by-ticket types were not searched (constraints.include_status)") if status
                                 else _("no searched configuration fits in GPU memory (up to {n} GPUs); closest: "
                                        "{reason}")).format(n=max(ctx.max_gpus or 0, 64), reason=best.reason)})
        if not out and getattr(res, "batch_reason", None):
            out.append({"constraint": "global_batch", "limit": None, "needed": None, "short_by": None, "unit": None,
                        "text": _("no searched layout runs the global batch: {reason}").format(reason=res.batch_reason)})
        if not out:
            out.append({"constraint": "catalog", "limit": None, "needed": None, "short_by": None, "unit": None,
                        "text": _("no instance type matches the hardware/family/status constraints")})
    return out


def _global_warnings(ctx: _Ctx, shown: list[Plan], book: costm.PriceBook) -> list[str]:
    out: list[str] = []
    today = ctx.today or dt.date.today()
    for p in shown:
        out.extend(p.advice.warnings)
        as_of = p.cost.price_as_of
        if as_of:
            age = (today - dt.date.fromisoformat(as_of)).days
            if age > 180:
                out.append(_("prices date from {date} ({age} days old): refresh them (`gpuplan catalog refresh`) "
                             "or pass --prices with your quotes").format(date=as_of, age=age))
    if ctx.training and not ctx.w.dataset:
        out.append(_("no dataset size given: plans show time and cost per 1B tokens; total_cost is null"))
    if ctx.training and ctx.w.constraints and ctx.w.constraints.budget and not ctx.w.dataset:
        out.append(_("the budget cannot be checked without a dataset size"))
    if book.converted:
        out.append(_("prices converted to {cur} at {rate} CNY/USD ({date})").format(
            cur=book.currency, rate=book.fx.usd_cny, date=book.fx.as_of))
        stale = book.fx.staleness_warning(today)
        if stale:
            out.append(stale)
    return out


def _assumptions(ctx: _Ctx, book: costm.PriceBook, headroom: float, spot: costm.SpotModel) -> list[str]:
    out = [_("a plan must leave {share} of each GPU's usable memory free").format(share=f"{headroom:.0%}"),
           _("host RAM: {share} of each instance's memory is kept for the OS").format(share=f"{fz.HOST_RESERVE:.0%}")]
    if "spot" in ctx.billings and (ctx.training or _is_job(ctx)):
        fractions = sorted({f"{f:.0%}" for f, _r, _s in (book.spot_fraction(c) for c in {i.cloud for i in ctx.insts})
                            if f})
        out.append(_("spot: {fraction} of pay-as-you-go when no spot price is known (estimated from one observed "
                     "level; range {low}-{high}), {rate} interruptions per hour, {min} min to restart (assumptions)")
                   .format(fraction="/".join(fractions) or _("no estimate"), low=f"{spot.fraction_range[0]:.0%}",
                           high=f"{spot.fraction_range[1]:.0%}", rate=f"{spot.interruptions_per_hour:g}",
                           min=f"{spot.restart_s / 60:.0f}"))
    fx = ctx.fixed
    if (ctx.training and ctx.w.dataset) or _is_job(ctx):   # per-1B-token figures carry no fixed costs
        out.append(_("fixed costs per instance and job: {boot} min start-up, a {image} GiB image at {pull} MB/s, the "
                     "model at {download} MB/s, {tail} min idle tail (assumed); per-second billing (Alibaba)").format(
            boot=f"{fx.boot_s / 60:.0f}", image=f"{fx.image_gib:g}", pull=f"{fx.image_pull_mb_s:g}",
            download=f"{fx.model_download_mb_s:g}", tail=f"{fx.idle_tail_s / 60:.0f}"))
    out.append(_("ranking: by pessimistic cost, cost x (1 + the price's margin: 0 official/user, {third} third-party/"
                 "inferred, {rule} rule-based estimates, spot estimates at the top of the spot range); costs within "
                 "{tie} tie and go to fewer instances and GPUs").format(third="10 %", rule="50 %", tie="0.5 %"))
    if not ctx.training and not _is_job(ctx):
        out.append(_("serving: replicas sized so utilisation at the peak stays <= {target} and the Erlang-C queueing "
                     "wait (p95) fits within the TTFT target; a month is 730 h; the budget is read as per month")
                   .format(target=f"{_target_util(ctx):.0%}"))
    out.append(_("subscription: monthly price x whole months; 1- and 3-year discounts are not bundled"))
    from gpuplan.providers import freshness

    for cloud in sorted({i.cloud for i in ctx.insts}):
        try:
            out.append(freshness(cloud))   # which price data (bundled snapshot or refreshed cache) and its date
        except GpuplanError:
            pass
    if book.currency != "CNY" or book.converted:
        out.append(_("exchange rate {rate} CNY/USD as of {date} ({source})").format(
            rate=book.fx.usd_cny, date=book.fx.as_of, source=book.fx.source))
    return out


def _dedupe(xs: list[str]) -> list[str]:
    return list(dict.fromkeys(xs))
