"""Explanations of the ranked plans: storage/network/host advice and the memory and throughput
reasons of the plans shown, the top plan's headline, and why cheaper families were rejected
("why not", with what would make them fit)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from gpuplan.catalog.hardware.instances import InstanceType
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.plan.money.ranges import memory_need
from gpuplan.plan.search import feasibility as fz
from gpuplan.plan.context import PlanContext, ckpt_bytes, final_export_bytes, node_weights_bytes, stated_dataset_bytes
from gpuplan.plan.advice.network import network_advice
from gpuplan.plan.money.price_check import held_back_check, held_back_reason
from gpuplan.plan.rank import thin_margin
from gpuplan.plan.record import Plan
from gpuplan.plan.search.model_parallel import is_split, min_saving
from gpuplan.plan.search.search import Searcher
from gpuplan.plan.search.search_point import Variant
from gpuplan.plan.advice.job_data import job_data
from gpuplan.plan.advice.storage import data_read_bytes_s, storage_advice
from gpuplan.units import GIB, fmt_duration


def advise(ctx: PlanContext, p: Plan) -> Plan:
    """The plan with its storage, network and host advice and the memory/throughput reasons."""
    est = p.estimate
    inst = next(i for i in ctx.insts if i.instance_type == p.instance_type)
    nodes = p.nodes_per_replica
    perf = p.performance
    ds = ctx.w.dataset
    optimizer = p.parallel.get("optimizer") or ctx.w.optimizer or "adamw"
    ckpt = ckpt_bytes(ctx, optimizer) if ctx.training else 0.0
    read = data_read_bytes_s(llm=ctx.llm, tokens_per_s=perf.get("tokens_per_s"), samples_per_s=perf.get("samples_per_s"),
                             bytes_per_sample=ds.bytes_per_sample if ds else None) if ctx.training else 0.0
    ds_bytes, out_bytes = None, 0.0
    data = job_data(ctx)
    share = max(1, p.replicas or 1)   # each replica's nodes hold the share of the job they process
    if data is not None:
        ds_bytes, out_bytes = data.input_bytes / share, data.output_bytes / share
    else:
        ds_bytes = stated_dataset_bytes(ctx)
    weights = node_weights_bytes(ctx, float(p.memory.components.get("weights", 0.0)), p.parallel["tp"], p.parallel["pp"])
    storage = storage_advice(training=ctx.training, nodes=nodes, read_bytes_s=read, checkpoint_bytes=ckpt,
                             model_bytes=weights, dataset_bytes=ds_bytes,
                             instance_disk_mb_s=inst.disk_bandwidth_mb_s,
                             final_bytes=final_export_bytes(ctx, weights), output_bytes=out_bytes)
    if data is not None:
        args = {"basis": data.basis, "input": f"{data.input_bytes / share / 1e9:,.1f}",
                "output": f"{out_bytes / 1e9:,.1f}", "n": share}
        storage["notes"].append(
            _("the data disk holds the batch job's input ({basis}): {input} GB, and its output: {output} GB").format(
                **args) if share == 1 else
            _("each replica's data disk holds its share (1/{n}) of the batch job's input ({basis}): {input} GB, and "
              "of its output: {output} GB").format(**args))
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


LABELS = {  # (objective, superlative true on the figures shown): label; {where} is "" or " on the {platform} platform"
    ("cost", True): N_("cheapest feasible plan{where}: {n} x {instance} ({gpus} per {copy}), {billing}, {cost}"),
    ("cost", False): N_("lowest expected cost{where} (estimated prices at their upper bound): {n} x {instance} "
                        "({gpus} per {copy}), {billing}, {cost}"),
    ("time", True): N_("fastest feasible plan{where}: {n} x {instance} ({gpus} per {copy}), {billing}, {cost}"),
    ("time", False): N_("fastest within 0.5 %, then lowest expected cost{where}: {n} x {instance} ({gpus} per "
                        "{copy}), {billing}, {cost}"),
    ("balanced", True): N_("best cost x time feasible plan{where}: {n} x {instance} ({gpus} per {copy}), {billing}, "
                           "{cost}"),
}


UNPRICED_LABEL = N_("feasible plan{where}, no price known (so not ranked by cost): {n} x {instance} ({gpus} per "
                    "{copy}), {billing}")


def headline(ctx: PlanContext, ranked: list[Plan], objective: str, shown: int | None = None) -> tuple[str, ...]:
    """The top plan's label, true on the figures the tables show: "cheapest" only when no lower-ranked plan
    shows a lower cost, "fastest" only when none shows a shorter time; otherwise the ranking basis in short,
    and which plan shows less and why it ranks lower. A plan is named by its rank only when it is among the
    ``shown`` plans (the table has a row for it); one further down is named by its instance type."""
    p = ranked[0]
    cost, unit = p.cost.headline
    lower = _shows_less(p, ranked[1:], objective)
    tmpl = LABELS[(objective, True)] if objective == "balanced" else LABELS[(objective, lower is None)]
    if cost is None and objective in ("cost", "balanced"):
        tmpl = UNPRICED_LABEL   # not "cheapest": no price ranks it (every plan shown is unpriced or ranks after it)
    where = (" " + _("on the {platform} platform").format(platform=_(PLATFORM_NAMES.get(p.platform, p.platform)))
             if not p.is_ecs else "")
    copy, gpus = (N_("model copy"), p.serving["tp"] * p.serving["pp"]) if p.serving else (N_("replica"),
                                                                                          p.gpus_per_replica)
    args = {"n": p.instance_count, "instance": p.short_name, "gpus": f"{gpus} x {p.gpu}", "copy": _(copy),
            "billing": _(p.cost.billing or "unpriced"), "cost": _money(p.cost.currency, cost, unit), "where": where}
    out = [_(tmpl).format(**args)]
    if lower is not None:
        visible = _shows_less(p, ranked[1:shown], objective) if shown is not None else lower
        out.append(_why_lower(p, visible or lower, objective, named=visible is not None))
        if _held_back(p, visible or lower, objective):   # its own line: the commands that check that price
            held = visible or lower
            cloud = next((i.cloud for i in ctx.insts if i.instance_type == held.instance_type), "")
            out.append(held_back_check(held, cloud, named=visible is not None))
    return tuple(out)


def _money(cur: str, amount: float | None, unit: str) -> str:
    units = {"/month": _("{cur} {amount}/month"), " per 1B tokens": _("{cur} {amount} per 1B tokens")}
    return (units.get(unit, "{cur} {amount}" + unit).format(cur=cur, amount=f"{amount:,.2f}")
            if amount is not None else _("no price known"))


def _shows_less(p: Plan, rest: list[Plan], objective: str) -> Plan | None:
    """The first lower-ranked plan whose shown cost (cost objective) or time (time objective) is lower."""
    if objective == "cost":
        mine = p.cost.headline[0]
        return next((q for q in rest if mine is not None and q.cost.headline[0] is not None
                     and q.cost.headline[0] < mine * (1 - 1e-9)), None)
    if objective == "time":
        return next((q for q in rest if p.time_key is not None and q.time_key is not None
                     and q.time_key < p.time_key * (1 - 1e-9)), None)
    return None


def _held_back(p: Plan, q: Plan, objective: str) -> bool:
    """A plan that shows less ranks lower because of its price's margin (not the spot deadline margin)."""
    return not (thin_margin(q) and not thin_margin(p)) and objective == "cost" and q.cost_margin > p.cost_margin + 1e-9


def _why_lower(p: Plan, q: Plan, objective: str, named: bool = True) -> str:
    """Why a plan that shows less ranks lower (one sentence); ``named``: by its rank (it is shown)."""
    if thin_margin(q) and not thin_margin(p):
        reason = _("it would finish with only {share} of the deadline to spare on spot").format(
            share=f"{max(0.0, q.deadline_slack or 0.0):.1%}")
    elif _held_back(p, q, objective):
        reason = held_back_reason(q)
    elif is_split(q) and not is_split(p):
        reason = _("it splits the model over GPUs (tensor or pipeline parallel) and saves less than the {margin} a "
                   "split must save (data/recipes.yaml)").format(margin=f"{min_saving():.0%}")
    else:
        reason = _("within the 0.5 % tie the plan with fewer instances ranks first")
    if objective == "time":
        shown = fmt_duration(q.time_key or 0.0)
    else:
        amount, unit = q.cost.headline
        shown = _money(q.cost.currency, amount, unit)
    # the type and its billing: a plan that shows less is often the same type on spot
    instance = _("{instance}, {billing}").format(instance=q.short_name, billing=_(q.cost.billing or "unpriced"))
    if not named:
        return _("a plan further down the ranking ({instance}, not shown) shows less, {shown}, but ranks lower: "
                 "{reason}").format(instance=instance, shown=shown, reason=reason)
    return _("plan {rank} ({instance}) shows less, {shown}, but ranks lower: {reason}").format(
        rank=q.rank, instance=instance, shown=shown, reason=reason)


def why_not(ctx: PlanContext, top: Plan | None, res, searcher: Searcher, shown: Sequence[Plan] = ()) -> list[str]:
    """Notes for instance families cheaper per hour than the top plan that were rejected. A family that a shown
    plan runs (``shown``: the ECS plans of the answer, best first) is pointed at that plan, not at another family."""
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
            hint = relaxation_hint(ctx, inst, res, searcher)
            alt = None
            same = next((p for p in ([top] if top else []) + list(shown)
                         if ctx.family(p.instance_type) == inst.family), None)
            if same is not None and same is top:
                # the top plan is this family with more GPUs: "fits on gn7" under a gn7 line reads as a contradiction
                per_copy = top.gpus_total // max(1, top.cost.replicas or 1)
                alt = _("with {gpus} GPUs per model copy, as in the top plan").format(gpus=per_copy)
            elif same is not None:
                per_copy = same.gpus_total // max(1, same.cost.replicas or 1)
                alt = _("with {gpus} GPUs per model copy, as in plan {rank}").format(
                    gpus=per_copy, rank=same.rank)
            elif top:
                alt = _("on {family}").format(family=ctx.family(top.instance_type))
            fixes = [h for h in (hint, alt) if h]
            if len(fixes) == 2:
                text = _("{reason}; fits {fix} or {alt}").format(reason=text, fix=fixes[0], alt=fixes[1])
            elif fixes:
                text = _("{reason}; fits {fix}").format(reason=text, fix=fixes[0])
        out.append(text)
    return out[:8]


def relaxation_hint(ctx: PlanContext, inst: InstanceType, res, searcher: Searcher) -> str | None:
    """What a fixed setting costs: would checkpointing, or quantization (serving), make it fit?"""
    got = res.best_memory.get(inst.instance_type)
    if not got:
        return None
    e, r, nodes, lay = got
    system = searcher.system(inst, nodes)
    v = Variant(ctx.w.quantization or "none", ctx.w.optimizer, ctx.w)
    if ctx.training and lay.checkpointing != "full":
        e2 = searcher.estimate(v, system, replace(lay, checkpointing="full"))
        if e2 and fz.check_memory(memory_need(e2), e2.memory.capacity_bytes, searcher.headroom):
            return _("with full gradient checkpointing ({gib} GiB)").format(gib=f"{e2.memory.per_gpu_bytes / GIB:.1f}")
    if ctx.training and ctx.task in ("full", "pretrain"):
        try:
            v2 = Variant("none", ctx.w.optimizer, ctx.w.with_updates(task="lora"))
            e2 = searcher.estimate(v2, system, replace(lay, zero=0, offload="none", checkpointing="full"))
        except GpuplanError:
            e2 = None
        if e2 and fz.check_memory(memory_need(e2), e2.memory.capacity_bytes, searcher.headroom):
            return _("with LoRA instead of full fine-tuning ({gib} GiB)").format(
                gib=f"{e2.memory.per_gpu_bytes / GIB:.1f}")
    if not ctx.training and (ctx.w.quantization or "none") == "none" and ctx.llm:
        for q in ("int8", "awq"):
            try:
                w2 = ctx.w.with_updates(quantization=q, precision="fp16" if q == "awq" else ctx.w.precision)
            except GpuplanError:
                continue
            e2 = searcher.estimate(Variant(q, None, w2), system, lay)
            if e2 and fz.check_memory(memory_need(e2), e2.memory.capacity_bytes, searcher.headroom):
                return _("with {q} weights ({gib} GiB; allow it in constraints.quantization)").format(
                    q=q, gib=f"{e2.memory.per_gpu_bytes / GIB:.1f}")
    return None


