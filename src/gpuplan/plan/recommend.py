"""`recommend()`: search the catalog for the instances, layout and billing that run a workload,
cost them, rank them, and explain the choice (the `gpuplan recommend --json` contract).

This module only orchestrates: scope.py says what is searched, search.py finds the feasible
candidates, drafts.py prices them (costing.py), constraints.py checks them, rank.py orders them,
explain.py and notes.py write the reasons, warnings and assumptions."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD, InstanceType
from gpuplan.catalog.prices.prices import load_offers
from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import calibration_notes
from gpuplan.i18n import _
from gpuplan.plan.money.ranges import notes as range_notes
from gpuplan.plan.money import cost as costm
from gpuplan.plan.search import feasibility as fz
from gpuplan.plan.search.candidates import DEFAULT_MAX_GPUS, TRAIN_TASKS, Fixed, is_llm
from gpuplan.plan.constraints import binding, check_constraints
from gpuplan.plan.aliases import merge_aliases
from gpuplan.plan.money.billing import annotate
from gpuplan.plan.context import PlanContext
from gpuplan.plan.drafts import Draft, plans_for, unpriced
from gpuplan.plan.explain import advise, headline, why_not
from gpuplan.plan.search.model_parallel import optimizer_fallback, prefer_plain
from gpuplan.plan.notes import assumptions as stated_assumptions
from gpuplan.plan.notes import applicable, dedupe, global_warnings, unlaunched_quantization
from gpuplan.plan.rank import pareto_front, rank, ranking_basis, thin_margin
from gpuplan.plan.record import PLATFORMS, Plan
from gpuplan.plan.search.scope import default_regions, instances as scoped_instances, platforms_wanted, variants as scoped_variants
from gpuplan.plan.search.search import Searcher, SearchResult
from gpuplan.plan.search.search_point import Candidate, best_per_group
from gpuplan.workload import Workload
from gpuplan.estimate.calibration import pinned as pinned_calibration
from gpuplan.plan.money.transfer import download_bytes
from gpuplan.workload_defaults import resolve_defaults
from gpuplan.workload_loading import load_workload

SCHEMA_VERSION = 1
SEARCHED_FIELDS = ("parallel", "hardware", "grad_checkpointing", "optimizer")
RECIPE_FIELDS = ("batch_size", "gradient_accumulation")   # training: searched too (plan/search/recipe.py)
SERVING_SEARCHED_FIELDS = ("quantization", "framework", "kv_cache_dtype")   # LLM serving (plan/serving/serving_config.py)
DEFAULT_TOP = 5
SERVING_DEFAULT_BILLING = ("payg", "subscription")   # spot for online serving only when asked
TRAINING_DEFAULT_BILLING = ("payg", "spot", "subscription")


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
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
    unpriced: list[dict] = field(default_factory=list)   # feasible types with no known price (see drafts.unpriced)
    ranking_basis: str = ""                               # what "best" means (rank.ranking_basis), stated once

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
            "ranking_basis": self.ranking_basis,
            "currency": self.currency,
            "plans": [_with_ops(p, self.workload) for p in self.plans],
            "pareto": [p.brief() for p in self.all_plans if p.pareto],
            "rejected": self.rejected,
            "binding_constraints": self.binding_constraints,
            "why_not": self.why_not,
            "assumptions": self.assumptions,
            "warnings": self.warnings,
            "search": self.stats,
            "unpriced": self.unpriced,
        }


def _with_ops(p: Plan, workload: Workload) -> dict:
    """A plan's contract dict with its operational advice (image, driver/CUDA, auto-release, logs, compliance)."""
    from gpuplan.plan.advice.ops import TRAIN_TASKS, ops_advice

    d = p.to_dict()
    spec = getattr(p.estimate, "model", None)
    params = getattr(spec, "params_total", None)
    training = (workload.task or "inference") in TRAIN_TASKS
    # the weights each node downloads: the bundle's figure (render/bundle/context_serving.py), for the auto-release
    d["ops"] = ops_advice(d, workload, model_bytes=download_bytes(params, workload.quantization, training=training,
                                                                     model=spec))
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
    from gpuplan.catalog.models import resolve_model, workload_region
    from gpuplan.estimate.engine_defaults import batched_job, encoder_defaults, refuse_unread_head
    from gpuplan.estimate.shapes import shape_of

    t0 = time.perf_counter()
    w = load_workload(workload, **overrides) if overrides or not isinstance(workload, Workload) else workload
    first_model = resolve_model(w.model, region=workload_region(w))
    llm = is_llm(first_model)
    # an offline job that runs fixed batches per forward searches its batch (plan/search/search_job.py): non-LLM
    # models, and encoder-only models on embed.py (estimate/engine_defaults.py, the rule `estimate` applies too)
    job_batch = ("batch_size",) if not w.is_training and w.dataset is not None and \
        batched_job(first_model, w.framework if w.framework != "auto" else None) else ()
    searched = frozenset(f for f in SEARCHED_FIELDS + (RECIPE_FIELDS if w.is_training else job_batch)
                         if getattr(w, f) is None)
    # LLM serving: weight format, engine and KV-cache dtype are chosen per plan (plan/serving/serving_config.py), so
    # their defaults are where the search starts, not assumptions of the answer
    serving_llm = llm and getattr(first_model, "kind", "decoder") != "encoder"    # encoders: engine_defaults
    start = frozenset(SERVING_SEARCHED_FIELDS) if not w.is_training and serving_llm else frozenset()
    # training: each plan is sized by the framework its launcher runs (plan/search/candidates.py sizing_framework), so an
    # unset framework is not one assumption of the whole answer
    per_plan_framework = w.is_training and w.framework in (None, "auto")
    resolved, notes = resolve_defaults(w, searched=searched,
                                       start_points=start | ({"framework"} if per_plan_framework else frozenset()))
    if start - {f for f in start if getattr(w, f) is not None}:
        notes.append(_("serving: the engine (vLLM or SGLang), the weight format and the KV-cache dtype are chosen "
                       "per plan unless the workload sets them (each plan's layout names them)"))
    if per_plan_framework:
        notes.append(_("framework: each plan is sized by the rules of the stack its bundle launches (parallel.framework "
                       "and parallel.launcher): {default} for train.py under torchrun or DeepSpeed, Megatron-Core for "
                       "tensor- or pipeline-parallel layouts (ms-swift Megatron mode: fp32 main gradients)").format(
                           default=resolved.framework))
    model = resolve_model(resolved.model, region=workload_region(resolved))
    if getattr(model, "kind", None) == "encoder":   # output_tokens 0 and the stack the bundle launches, as `estimate`
        resolved, notes = encoder_defaults(w, resolved, model, notes)
    shape = shape_of(model) if is_llm(model) else None
    task = resolved.task or "inference"
    from gpuplan.estimate.serving.serving_choice import refuse_foreign_mxfp4

    refuse_foreign_mxfp4(model, task, resolved.quantization,   # the estimate's own error, before the search
                         resolved.constraints.quantization if resolved.constraints else None)
    from gpuplan.estimate.nonllm.input_keys import refuse_unread_input

    refuse_unread_input(model, resolved.input)   # the estimate's own error for an input key the model ignores
    refuse_unread_head(model, resolved)
    if shape is None:   # what the estimator cannot size: the estimate's one error, not every layout rejected
        from gpuplan.estimate.nonllm.nonllm import refuse_unmodelled_quantization
        from gpuplan.estimate.nonllm.trained_weights import adapter_params_per_rank

        adapter_params_per_rank(model, task)
        refuse_unmodelled_quantization(model, task, resolved.quantization, resolved.precision or "bf16")
    training = task in TRAIN_TASKS
    unlaunched_quant = unlaunched_quantization(model, resolved)
    if unlaunched_quant:   # planned as the bundle loads it (plan/notes.py)
        resolved = resolved.with_updates(quantization="none")
    cons = resolved.constraints
    objective = resolved.objective or "cost"
    currency = cons.currency if cons else "CNY"
    fixed = Fixed.from_workload(resolved, framework=w.framework)
    max_gpus = (cons.max_gpus if cons and cons.max_gpus else None)
    search_gpus = max(max_gpus or DEFAULT_MAX_GPUS, fixed.gpus or 0)
    allowed_status = frozenset(cons.include_status if cons and cons.include_status else ("ga",))
    assumptions = applicable(notes, resolved, model) + list(getattr(model, "assumptions", ()) or ())
    warnings: list[str] = []
    if unlaunched_quant:
        warnings.append(unlaunched_quant)

    variants = scoped_variants(resolved, cons)
    insts = scoped_instances(resolved, instances, cache_dir)
    space = None
    if (resolved.task or "inference") == "inference":   # the serving planner is imported by serving workloads only
        from gpuplan.plan.serving.serving_config import ServingSpace

        space = ServingSpace.for_workload(w, resolved, model)
    searcher = Searcher(resolved, model, shape, fixed, variants, max_gpus=search_gpus,
                        allowed_status=allowed_status, headroom=memory_headroom, serving=space,
                        named_framework=w.framework)
    with pinned_calibration():      # the overlay is read once, not once per estimate
        res = searcher.run(insts)
    groups = [c.finish() for c in space.pick(res.candidates, searcher)] if space else \
        best_per_group(res.candidates, training)

    clouds = sorted({i.cloud for i in insts}) or [DEFAULT_CLOUD]
    offers = [o for cloud in clouds for o in load_offers(cloud, cache_dir, price_files)]
    book = costm.PriceBook(offers, currency, fx, spot_model, today)
    regions = [r.strip().lower() for r in cons.regions] if cons and cons.regions else default_regions(clouds, book)
    billings = tuple(cons.billing) if cons and cons.billing else (TRAINING_DEFAULT_BILLING if training
                                                                  else SERVING_DEFAULT_BILLING)
    ctx = PlanContext(resolved, model, task, training, book, regions, billings, max_gpus, spot_model, today, insts)
    ctx.framework = fixed.framework
    if ctx.job and not (cons and cons.billing):
        ctx.billings = TRAINING_DEFAULT_BILLING   # a batch job can run on spot like a training job
    drafts, rejected_plans = _costed_drafts(ctx, groups, res)
    plans: list[Plan] = [d.record() for d in drafts]
    wanted = platforms_wanted(cons)
    if ctx.service and plans and wanted - {"ecs"}:
        plans += _platform_plans(ctx, plans, objective, top, wanted, warnings)
    feasible = plans
    ecs_all = [p for p in plans if p.is_ecs]
    plans = [p for p in plans if p.platform in wanted]
    if ctx.service and space is not None:      # LLM serving (decoder / encoder-decoder models)
        from gpuplan.plan.serving.serving_costs import concurrency_demand
        from gpuplan.plan.serving.serving_report import serving_block

        rate = ctx.request_rate()
        users = concurrency_demand(ctx)
        plans = [replace(p, serving=serving_block(p, resolved, rate, users)) for p in plans]
        plans = _drop_sla_misses(plans, warnings)
    ranked = merge_aliases(rank(plans, objective))
    mp_why = None
    if training:    # tensor / pipeline parallelism only where it pays against the best plan without it
        ranked, mp_why = prefer_plain(ranked, objective, fallback=optimizer_fallback(w))
        # the ranking basis holds after that move too: a spot plan with a thin deadline margin ranks after the others
        # (a stable sort keeps every other order)
        ranked = sorted(ranked, key=thin_margin)
    # price basis and age, the other billing modes at this duration, availability in the region
    ranked = annotate(ranked, book, today, frozenset(i.instance_type for i in insts if i.cloud == DEFAULT_CLOUD),
                      options_top=max(top, DEFAULT_TOP))
    front = {id(p) for p in pareto_front(ranked)}
    ranked = [replace(p, rank=i, pareto=id(p) in front) for i, p in enumerate(ranked, 1)]
    shown = ranked[:top]   # the top N only; the whole Pareto front is the `pareto` list
    shown = [advise(ctx, p) if p.is_ecs else p for p in shown]
    if shown:
        shown[0] = shown[0].with_advice(why=headline(ctx, ranked, objective, len(shown)) + ((mp_why,) if mp_why else ())
                                        + shown[0].advice.why)
    final = {p.rank: p for p in shown}
    ranked = [final.get(p.rank, p) for p in ranked]
    # the why-not notes compare with the best ECS plan the answer shows (after the SLA check: a plan left out for
    # missing its TTFT/TPOT is no "fits on ..."); the unfiltered ECS plans only where the answer shows none
    ecs_top = next((p for p in ranked if p.is_ecs), None)
    if ecs_top is None:
        ecs_ranked = rank(ecs_all, objective)
        ecs_top = ecs_ranked[0] if ecs_ranked else None
    not_chosen = why_not(ctx, ecs_top, res, searcher, shown=[p for p in shown if p.is_ecs])
    binds = [] if ranked else binding(ctx, rejected_plans, res, feasible, wanted)

    warnings.extend(global_warnings(ctx, shown, book))
    no_price = unpriced(drafts)
    if no_price:
        warnings.append(_("feasible, price unknown: {types}: refresh (`gpuplan catalog refresh`) or import your "
                          "quote (`gpuplan catalog import FILE`)")
                        .format(types=", ".join(u["instance_type"] for u in no_price)))
    assumptions.extend(stated_assumptions(ctx, book, memory_headroom, spot_model))
    assumptions.extend(range_notes(ctx.w, ctx.training, ctx.job))   # which end of each 80 % range was checked
    assumptions.extend(calibration_notes(p.estimate.assumptions for p in shown if p.estimate is not None))
    rejected = [{"instance_type": t, "code": r.code, "reason": r.reason}
                for t, r in sorted(res.rejects.items(), key=lambda kv: (fz.CODE_RANK[kv[1].code], kv[0]))]
    stats = {"instance_types": len(insts), "candidates": len(res.candidates), "estimates": searcher.calls,
             "plans": len(drafts), "elapsed_s": round(time.perf_counter() - t0, 4)}
    basis = ranking_basis(objective, spot="spot" in ctx.billings and not ctx.service,
                          deadline=bool(cons and cons.deadline_hours))
    return Recommendation(resolved, objective, currency, shown, rejected, binds, not_chosen, assumptions,
                          dedupe(warnings), ranked, stats, no_price, basis)


def _costed_drafts(ctx: PlanContext, groups: list[Candidate], res: SearchResult
                   ) -> tuple[list[Draft], list[tuple[Draft, fz.Reject]]]:
    """Price every candidate in each region and billing mode and check the constraints; a rejected
    draft becomes its type's rejection when it is closer to feasible than the search's."""
    drafts: list[Draft] = []
    rejected_plans: list[tuple[Draft, fz.Reject]] = []
    for c in groups:
        for d in plans_for(ctx, c):
            r = check_constraints(ctx, d)
            if r is None:
                drafts.append(d)
                continue
            rejected_plans.append((d, r))
            cur = res.rejects.get(c.inst.instance_type)
            if cur is None or (fz.CODE_RANK[r.code], r.shortfall) < (fz.CODE_RANK[cur.code], cur.shortfall):
                res.rejects[c.inst.instance_type] = r
    for d in drafts:   # a type with a plan is not "rejected"
        res.rejects.pop(d.cand.inst.instance_type, None)
    return drafts, rejected_plans


def _drop_sla_misses(plans: list[Plan], warnings: list[str]) -> list[Plan]:
    """A plan that misses its SLA at the stated peak (``serving.sla_met`` false: an autoscaled pool whose
    count rounds below what the latency needs, a serverless function whose cold starts push the p90 TTFT past
    the target) is not feasible: left out, with a warning naming it."""
    kept = []
    for p in plans:
        if p.serving is not None and p.serving.get("sla_met") is False:
            s = p.serving
            warnings.append(_("{platform} {instance} x {n} left out: at the stated peak its p90 TTFT {ttft} s and "
                              "TPOT {tpot} s miss the SLA").format(
                platform=p.platform, instance=p.short_name, n=p.instance_count,
                ttft="-" if s.get("ttft_p90_s") is None else f"{s['ttft_p90_s']:.2f}",
                tpot="-" if s.get("tpot_s") is None else f"{s['tpot_s']:.3f}"))
            continue
        kept.append(p)
    return kept


def _platform_plans(ctx: PlanContext, plans: list[Plan], objective: str, top: int, wanted: frozenset[str],
                    warnings: list[str]) -> list[Plan]:
    """Serverless and managed serving (Function Compute, PAI-EAS, ACK) beside plain ECS replicas
    (Alibaba only)."""
    cons = ctx.w.constraints
    if (cons is not None and cons.clouds and "alibaba" not in cons.clouds) or plans[0].instance_type not in {
            i.instance_type for i in ctx.insts if i.cloud == DEFAULT_CLOUD}:
        return []
    from gpuplan.plan.deploy.platforms import platform_plans

    ecs_ranked = rank(plans, objective)
    # every ECS plan, best first (ACK and PAI-EAS keep one plan per instance type): the managed plans, and so the
    # ranking, must not depend on how many plans are shown (`gpuplan plan --pick N` re-runs with top = N)
    ecs_in = ecs_ranked
    try:
        return platform_plans(ctx.w, ecs_plans=ecs_in, currency=ctx.book.currency,
                              region=ctx.regions[0] if ctx.regions else None, fx=ctx.book.fx,
                              platforms=[p for p in PLATFORMS if p in wanted and p != "ecs"], with_ecs="ecs" in wanted)
    except GpuplanError as err:
        warnings.append(_("serverless/managed platforms not compared: {error}").format(error=err.message))
        return []

