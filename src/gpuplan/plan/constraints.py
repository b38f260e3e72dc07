"""The workload's constraints on costed drafts (max GPUs, deadline, budget), and, when no plan is
left, which constraint binds and by how much (``binding_constraints`` in the JSON)."""

from __future__ import annotations

from gpuplan.i18n import _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.search import feasibility as fz
from gpuplan.plan.context import PlanContext
from gpuplan.plan.drafts import Draft
from gpuplan.estimate.intervals import COVERAGE_TEXT
from gpuplan.plan.money.ranges import cost_high, time_high
from gpuplan.plan.record import Plan
from gpuplan.units import GIB, HOUR_S


def check_constraints(ctx: PlanContext, p: Draft) -> fz.Reject | None:
    cons = ctx.w.constraints
    label = fz.gpu_label(p.cand.inst)
    if ctx.max_gpus and p.gpus_total > ctx.max_gpus:
        return fz.Reject("layout", _("{label}: needs {n} GPUs > max_gpus {max}").format(
                             label=label, n=p.gpus_total, max=ctx.max_gpus),
                         p.gpus_total - ctx.max_gpus)
    if not cons:
        return None
    t_high = time_high(p)   # the deadline is checked at the high end of the 80 % time interval
    if cons.deadline_hours and t_high is not None and t_high > cons.deadline_hours * HOUR_S:
        return fz.Reject("deadline", _("{label} x {n} ({billing}): takes up to {hours} h (high end of its {coverage} "
                                       "range) > deadline {deadline} h").format(coverage=COVERAGE_TEXT,
                             label=label, n=p.instance_count, billing=_(p.billing or "unpriced"),
                             hours=f"{t_high / HOUR_S:,.1f}", deadline=f"{cons.deadline_hours:g}"),
                         t_high - cons.deadline_hours * HOUR_S)
    if cons.budget:
        spend = p.total_cost if ctx.training or ctx.job else p.monthly_cost
        if spend is None:
            if p.price_per_hour is None:
                return fz.Reject("no_price", _("{label}: no price known, cannot check the budget").format(label=label))
            return None
        # checked against the upper bound the ranking uses (cost x (1 + the price's margin))
        over = costm.budget_reason(label, p.instance_count, p.billing or "unpriced", ctx.book.currency, spend,
                                   p.price_margin, cons.budget, monthly=not (ctx.training or ctx.job),
                                   spend_high=cost_high(p, ctx.training or ctx.job))   # high end of the 80 % range
        if over is not None:
            return fz.Reject("budget", *over)
    return None


def binding(ctx: PlanContext, rejected_plans: list[tuple[Draft, fz.Reject]], res,
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
    by_code: dict[str, list[tuple[Draft, fz.Reject]]] = {}
    for p, r in rejected_plans:
        by_code.setdefault(r.code, []).append((p, r))
    if "budget" in by_code or "deadline" in by_code:
        def point(p):   # the high end of the 80 % cost interval, as check_constraints reads it
            return cost_high(p, ctx.training or ctx.job)

        def spend(p):   # the upper bound the budget is checked against (and the ranking compares)
            x = point(p)
            return None if x is None else costm.upper_bound(x, p.price_margin)
        priced = [p for p, _r in rejected_plans if spend(p) is not None]
        if cons and cons.budget and priced:
            meets_deadline = [p for p in priced if not (cons.deadline_hours and time_high(p) is not None
                                                        and (time_high(p) or 0.0) > cons.deadline_hours * HOUR_S)]
            pool = meets_deadline or priced
            cheapest = min(pool, key=spend)
            need = spend(cheapest)
            if need > cons.budget:
                out.append({"constraint": "budget", "limit": cons.budget, "needed": round(need, 2),
                            "short_by": round(need - cons.budget, 2), "unit": cur, "end": "high",
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
            fastest = min(pool, key=lambda p: time_high(p) or 0.0)        # timed: time_s is set
            hours = (time_high(fastest) or 0.0) / HOUR_S
            if hours > cons.deadline_hours:
                out.append({"constraint": "deadline_hours", "limit": cons.deadline_hours, "needed": round(hours, 2),
                            "short_by": round(hours - cons.deadline_hours, 2), "unit": "h", "end": "high",
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
                    "unit": cur, "text": _("the only feasible types have no known price, so the budget cannot be checked; import "
                                           "your quotes (`gpuplan catalog import FILE`)")})
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
                        "short_by": round(best.shortfall / GIB, 2), "unit": "GiB", "end": "high",
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


