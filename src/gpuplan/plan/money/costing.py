"""Costing of plan drafts: training (time, spot interruptions, fixed costs) and batch inference jobs
(replicas to meet the deadline, cost per item). Online serving is costed in plan/serving/serving_costs.py."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gpuplan.estimate.engine_defaults import batched_job
from gpuplan.i18n import N_, _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.money import fixed_costs as fixedm
from gpuplan.plan.money import staging
from gpuplan.plan.context import ITEM_UNITS, PlanContext, ckpt_bytes, job_items, model_bytes, node_weights_bytes, \
    training_shared_fs
from gpuplan.plan.advice.storage import shared_fs_label
from gpuplan.plan.money.ranges import time_high
from gpuplan.plan.record import rnd
from gpuplan.plan.rank import SLACK_MIN
from gpuplan.plan.search.search_point import Candidate
from gpuplan.units import HOUR_S, fmt_rate

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.drafts import Draft


# How often a training run on pay-as-you-go or subscription capacity saves (assumed: an hour of work at risk at
# most); a spot run saves at Young's interval instead (plan/money/spot.py)
CHECKPOINT_INTERVAL_S = 3600.0
CHECKPOINT_DISK_B_S = 350e6   # one PL1 ESSD at its cap (storage.yaml); the advice may provision more


def checkpoint_target(ctx: PlanContext, c: Candidate) -> tuple[float, dict | None]:
    """(seconds to write one checkpoint, the shared file system it goes to or None for the nodes' data disks).
    A multi-node run saves to its shared file system (the bundle's checkpoint folder is there), at that file
    system's write rate for the whole checkpoint; a single node saves to its data disk."""
    optimizer = c.variant.w.optimizer or "adamw"
    ck = ckpt_bytes(ctx, optimizer)
    weights = node_weights_bytes(ctx, float(c.est.memory.components.get("weights", 0.0)), c.layout.tp, c.layout.pp)
    shared = training_shared_fs(ctx, c.nodes, c.est.performance, optimizer, weights)
    if shared is not None:
        return ck / (float(shared["write_mb_s"]) * 1e6), shared
    return costm.checkpoint_write_s(ck, CHECKPOINT_DISK_B_S, c.nodes, c.layout), None


_FIXED_PARTS = {"boot_s": N_("boot"), "driver_install_s": N_("driver install"), "image_pull_s": N_("image pull"),
                "model_download_s": N_("model download"), "idle_tail_s": N_("idle tail")}


def fixed_why(fixed: dict, nodes: int) -> str:
    mins = sum(fixed.values()) / 60.0
    parts = _(", ").join(_("{part} {min} min").format(part=_(_FIXED_PARTS.get(k, k)), min=f"{v / 60:.0f}")
                         for k, v in fixed.items())
    if nodes > 1:
        return _("fixed: {min} min per instance ({parts}; data/plan_costs.yaml and data/ops.yaml, each figure's "
                 "source or assumption there), paid by each of {nodes} instances").format(min=f"{mins:.0f}", parts=parts, nodes=nodes)
    return _("fixed: {min} min per instance ({parts}; data/plan_costs.yaml and data/ops.yaml, each figure's source or "
             "assumption there)").format(
        min=f"{mins:.0f}", parts=parts)


def staging_why(ws: staging.WeightsStaging) -> str:
    """Why the plan's nodes copy the weights from OSS: the idle GPU time the hub download would cost."""
    args = {"gb": f"{ws.weight_bytes / 1e9:,.0f}", "stage": f"{ws.staging_s / HOUR_S:.1f}",
            "hub": f"{ws.hub_download_s / 60:.0f}", "oss": f"{ws.oss_download_s / 60:.0f}", "n": ws.instances}
    if ws.staging_cost is not None and ws.hub_idle_cost is not None and ws.oss_idle_cost is not None:
        return _("weights staged once in OSS before the GPUs start ({gb} GB, about {stage} h on a small machine in the "
                 "region for {cost}: stage-weights.sh): each of {n} instance(s) copies them in {oss} min instead of "
                 "{hub} min from the hub, idle GPUs {oss_cost} instead of {hub_cost}").format(
            cost=f"{ws.currency} {ws.staging_cost:,.2f}", oss_cost=f"{ws.currency} {ws.oss_idle_cost:,.0f}",
            hub_cost=f"{ws.currency} {ws.hub_idle_cost:,.0f}", **args)
    return _("weights staged once in OSS before the GPUs start ({gb} GB, about {stage} h on a small machine in the "
             "region: stage-weights.sh): each of {n} instance(s) copies them in {oss} min instead of {hub} min from "
             "the hub").format(**args)


def training_costs(ctx: PlanContext, c: Candidate, p: Draft, price: costm.Price | None) -> None:
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
    write_s, shared = checkpoint_target(ctx, c)
    if p.billing == "spot":
        run = costm.spot_run(base_time or 3600.0 * 24, write_s, ctx.spot, instances=c.nodes)
        factor = 1.0 + run.overhead_fraction
        p.spot = costm.spot_summary(run, ctx.spot, bool(base_time))
        p.why.append(costm.spot_why(run, ctx.spot))
        interval_s, write_s = run.checkpoint_interval_s, run.checkpoint_write_s   # (Young's C is at least 1 s)
        if base_time and base_time * factor / HOUR_S > ctx.spot.long_job_warning_h:
            p.warnings.append(_("long job on spot: expect about {n} interruptions over {hours} h; resume from "
                                "checkpoints automatically").format(n=f"{run.expected_interruptions:.1f}",
                                                                    hours=f"{base_time * factor / HOUR_S:.0f}"))
    else:
        # a save every CHECKPOINT_INTERVAL_S stalls the run for its write (the trainers save synchronously): the
        # launcher's SAVE_STEPS is this interval (render/bundle/context_build.py), the time counts its writes
        interval_s = CHECKPOINT_INTERVAL_S
        factor = 1.0 + write_s / interval_s
        if base_time and write_s / interval_s >= 0.005:
            args = {"min": f"{interval_s / 60:.0f}", "write": f"{write_s:,.0f}", "share": f"{write_s / interval_s:.1%}"}
            p.why.append(
                _("checkpoints: one every {min} min, {write} s each to the shared {fs} file system (at {rate} MB/s), "
                  "{share} of the run time").format(fs=shared_fs_label(shared["kind"]),
                                                    rate=f"{float(shared['write_mb_s']):,.0f}", **args)
                if shared else
                _("checkpoints: one every {min} min, {write} s each to the data disk (at {rate} MB/s per node), "
                  "{share} of the run time").format(rate=f"{CHECKPOINT_DISK_B_S / 1e6:.0f}", **args))
    # overhead_fraction: the run time the saves add (on spot, Young's whole overhead: saves and lost work)
    p.checkpoint_saves = {"interval_s": rnd(interval_s, 1) if math.isfinite(interval_s) else None,
                          "write_s": rnd(write_s, 1), "overhead_fraction": rnd(factor - 1.0, 4)}
    fixed_s = 0.0
    if base_time is not None:
        ws = staging.for_plan(model_bytes(ctx), c.nodes, price, ctx.book.fx)
        fixed = ctx.fixed.breakdown(model_bytes(ctx), fixedm.image_pull(ctx.fixed, p.region, training=True),
                                    ws.start if ws else fixedm.node_start())
        fixed_s = sum(fixed.values())
        p.fixed = fixed
        p.weights_staging = ws.as_dict() if ws else None
        p.time_s = base_time * factor + fixed_s
        p.why.append(fixed_why(fixed, c.nodes))
        if ws and ws.staged:
            p.why.append(staging_why(ws))
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


# Replicas added one at a time beyond the steady rate's count while a finite job's drain misses the deadline.
JOB_REPLICA_STEPS = 64


def job_costs(ctx: PlanContext, c: Candidate, p: Draft, price: costm.Price | None) -> None:
    """A batch inference job: replicas to meet the deadline, time, total cost and cost per item."""
    got = job_items(ctx)
    assert got is not None  # called only when ctx.job
    from gpuplan.estimate.serving.inference import job_time_s   # the serving models load for jobs only

    items, unit = got
    group_rate = c.speed(False)
    cons = ctx.w.constraints
    pull = fixedm.image_pull(ctx.fixed, p.region, training=False)
    perf = c.est.performance

    def run_s(replicas: int) -> float:
        """The job's time on ``replicas`` replicas of this candidate: its items split over every model copy, each
        copy's share timed by the estimate's own job function (a finite batch drains to its longest request)."""
        copies = max(1, c.dp) * replicas
        got = job_time_s(c.est.serving_model, int(perf.get("serving_batch") or 1), perf.get("max_requests_per_s"),
                         items / copies, ctx.w.max_output_tokens)
        return got if got is not None else items / (group_rate * replicas)

    def sized(ws: staging.WeightsStaging | None) -> tuple[dict, float, int]:
        fixed = ctx.fixed.breakdown(model_bytes(ctx), pull, ws.start if ws else fixedm.node_start())
        fixed_s = sum(fixed.values())
        replicas = 1
        if group_rate > 0 and cons and cons.deadline_hours:
            room = cons.deadline_hours * HOUR_S - fixed_s
            replicas = max(1, math.ceil(items / (group_rate * room) - 1e-9)) if room > 0 else 1
            cap = max(1, (ctx.max_gpus or 10 ** 6) // max(1, c.gpus))
            replicas = min(replicas, cap, 10_000)
            # the steady rate's count, then more while the drain of each replica's last requests misses the
            # deadline (bounded: at most JOB_REPLICA_STEPS more)
            for _step in range(JOB_REPLICA_STEPS):
                if room <= 0 or replicas >= min(cap, 10_000) or run_s(replicas) <= room:
                    break
                replicas += 1
        return fixed, fixed_s, replicas

    # the weights' source by the instances the job needs: sized with the hub first, then with the copy in OSS when
    # staging pays for that many instances (fewer fixed seconds can only need as many replicas or fewer)
    ws = staging.for_plan(model_bytes(ctx), c.nodes, price, ctx.book.fx)
    fixed, fixed_s, replicas = sized(ws)
    if ws and not ws.staged and replicas > 1:
        more = staging.for_plan(model_bytes(ctx), c.nodes * replicas, price, ctx.book.fx)
        if more and more.staged:
            fixed, fixed_s, replicas = sized(more)
            ws = staging.for_plan(model_bytes(ctx), c.nodes * replicas, price, ctx.book.fx)
            if ws and not ws.staged:      # fewer replicas no longer pay for it: keep the hub's sizing
                fixed, fixed_s, replicas = sized(ws)
    p.weights_staging = ws.as_dict() if ws else None
    p.replicas = replicas
    p.instance_count = c.nodes * replicas
    p.gpus_total = c.gpus * replicas
    p.fixed = fixed
    if group_rate <= 0:
        return
    base = run_s(replicas)
    factor = 1.0
    if p.billing == "spot":
        # in-flight items are redone; nothing to checkpoint; replicas are interrupted independently
        run = costm.spot_run(base, 1.0, ctx.spot, instances=c.nodes)
        factor = 1.0 + run.overhead_fraction
        p.spot = {**costm.spot_summary(run, ctx.spot, True), "checkpoint_interval_s": None,
                  "checkpoint_write_s": None,
                  "expected_interruptions": round(run.expected_interruptions * replicas, 2)}
    p.time_s = base * factor + fixed_s
    # the batch each forward (or engine step) runs: the job search's (plan/search/search_job.py), the LLM serving batch
    batch = c.layout.micro_batch if batched_job(ctx.model, ctx.w.framework) else c.est.performance.get("serving_batch")
    job: dict[str, Any] = {"items": rnd(items, 1), "unit": unit, "items_per_s": rnd(group_rate * replicas),
                           "replicas": replicas, "batch": int(batch) if batch else None}
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
    args = {"items": f"{items:,.0f}", "unit": _(ITEM_UNITS.get(unit, unit)), "rate": fmt_rate(group_rate),
            "replicas": replicas, "hours": f"{base / HOUR_S:,.1f}", "share": f"{factor - 1:.1%}"}
    if factor > 1:
        p.why.append(_("batch job: {items} {unit} at {rate}/s per replica x {replicas} replica(s) = {hours} h "
                       "(+{share} spot interruptions)").format(**args))
    else:
        p.why.append(_("batch job: {items} {unit} at {rate}/s per replica x {replicas} replica(s) = {hours} h")
                     .format(**args))
    steady = items / (group_rate * replicas)
    if base > steady * 1.005:
        p.why.append(_("the batch is finite: each model copy's last requests finish one by one, {extra} h more than "
                       "at the steady rate (the estimate's job time)").format(extra=f"{(base - steady) / HOUR_S:,.2f}"))
    p.why.append(fixed_why(fixed, p.instance_count))
    if ws and ws.staged:
        p.why.append(staging_why(ws))
    p.cost_key = p.total_cost
    p.time_key = p.time_s


def deadline_margin(ctx: PlanContext, p: Draft) -> None:
    """``deadline_slack`` = (deadline - time) / deadline for a job with a deadline; a spot plan that keeps
    less than SLACK_MIN of it gets a warning (and ranks after the plans that keep it: rank.thin_margin)."""
    cons = ctx.w.constraints
    if not (cons and cons.deadline_hours) or p.time_s is None:
        return
    deadline_s = cons.deadline_hours * HOUR_S
    # at the high end of the job's 80 % time range, where the deadline is checked (plan/money/ranges.py)
    time_s = time_high(p) or p.time_s   # (time_s is set: checked above)
    p.deadline_slack = (deadline_s - time_s) / deadline_s
    if p.billing == "spot" and 0.0 <= p.deadline_slack < SLACK_MIN:
        p.warnings.append(_("{instance} x {n} on spot is expected to finish with only {share} of the {deadline} h "
                            "deadline to spare; interruptions are random, so it may miss it: ranked after the plans "
                            "that keep {min}").format(instance=p.cand.inst.short_name, n=p.instance_count,
                                                      share=f"{p.deadline_slack:.1%}",
                                                      deadline=f"{cons.deadline_hours:g}", min=f"{SLACK_MIN:.0%}"))

