"""PLAN.md's tables: summary, performance (or what a serving plan gives), memory, whole cost and training recipe."""

from __future__ import annotations

import math
from typing import Any

from gpuplan import i18n
from gpuplan.i18n import N_
from gpuplan.render import ranges as rng
from gpuplan.render import svg
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.planmd.report_text import billing_label, component_name, gib_text, money_text, say, tr
from gpuplan.render.bundle.safe import Safe, md
from gpuplan.units import fmt_duration, fmt_rate


# A non-LLM service's unit cost (plan unit_cost.unit: plan/context.item_unit), as PLAN.md's summary names it.
UNIT_COST_LABEL = {"image": N_("Cost per image"), "video": N_("Cost per video"), "clip": N_("Cost per clip"),
                   "request": N_("Cost per request")}


def summary_rows(c: Ctx, plan: dict, estimate: dict, breakdown: dict | None = None) -> list[tuple[Safe, Safe]]:
    """The summary table; ``breakdown`` (plan/money/cost_breakdown.py) adds the whole cost beside the instances' own:
    disks, shared storage and traffic, which the monthly or total cost does not hold."""
    lang = c.lang
    cur = c.currency
    mem = estimate.get("memory") or {}
    ranges = plan.get("intervals") or {}   # 80 % ranges (gpuplan.plan.money.ranges)
    if c.training:
        layout = tr("TP {tp}, PP {pp}, DP {dp}, ZeRO {zero}, FSDP {fsdp}, offload {offload}, micro-batch {micro}, "
                    "accumulation {accum}", lang).format(tp=c.tp, pp=c.pp, dp=c.dp, zero=c.zero,
                                                         fsdp=tr("none", lang) if c.fsdp == "none" else c.fsdp,
                                                         offload=tr("none", lang) if c.offload == "none" else c.offload,
                                                         micro=c.micro_batch, accum=c.grad_accum)
    elif c.model_kind in ("diffusion", "speech", "vision") or c.embed_job:   # batched forwards, not token streams
        layout = tr("TP {tp}, PP {pp}, batch {batch} per forward", lang).format(tp=c.tp, pp=c.pp, batch=c.max_num_seqs)
    else:
        layout = tr("TP {tp}, PP {pp}, {seqs} concurrent sequences, {tokens} tokens per sequence", lang).format(
            tp=c.tp, pp=c.pp, seqs=c.max_num_seqs, tokens=c.max_model_len)
    rows: list[tuple[str, str]] = [
        (N_("Platform"), str(plan.get("platform") or "ecs")),
        (N_("Instances"), f"{c.nodes} x {c.instance_type}"),
        (N_("GPUs"), f"{c.gpus_total} x {c.gpu}"),
        (N_("Parallel layout"), layout),
        (N_("Memory per GPU"), f"{gib_text(plan.get('memory_per_gpu_bytes') or mem.get('per_gpu_bytes'))} GiB"
                               f"{_span(ranges, 'memory_per_gpu_bytes', lambda x: f'{x / 2**30:.1f}')} / "
                               f"{gib_text(plan.get('capacity_per_gpu_bytes') or mem.get('capacity_bytes'))} GiB"),
    ]
    region = c.region
    if plan.get("price_region") and plan.get("price_region") != plan.get("region"):
        region = tr("{region} (price of region {price_region})", lang).format(
            region=c.region, price_region=plan.get("price_region"))
    rows.append((N_("Billing and region"), ("，" if lang == "zh" else ", ").join((billing_label(c.billing, lang), region))))
    inst_price = money_text(plan.get("instance_price_per_hour"), cur)
    total_price = money_text(plan.get("price_per_hour"), cur)
    if inst_price or total_price:
        rows.append((N_("Price"), tr("{instance}/h per instance, {total}/h total", lang).format(
            instance=inst_price or "-", total=total_price or "-")))
    else:
        rows.append((N_("Price"), str(tr("no price known", lang))))
    if plan.get("price_as_of"):
        age = plan.get("price_age_days")
        # (a Safe value: its commands are code spans, the date and count escaped)
        rows.append((N_("Price as of"), Safe(tr("{date} ({days} days old: check the current price before you buy: "
                                                "{refresh}, or a console quote with {import_})", lang).format(
            date=md(plan["price_as_of"]), days=md(f"{age:,}"), refresh="`gpuplan catalog refresh`",
            import_="`gpuplan catalog import`")) if plan.get("price_stale") and isinstance(age, int) else
            str(plan["price_as_of"])))
    if plan.get("price_source"):
        rows.append((N_("Price source"), i18n.localize(str(plan["price_source"]), lang)))
    job = plan.get("job")   # a batch inference job runs once, as training does: its time and total, not a month
    if c.training or job:
        rows.append((N_("Job time"),
                     rng.duration(plan.get("time_s") or (estimate.get("performance") or {}).get("total_time_s"),
                                  ranges if plan.get("time_s") else {}, "time_s")))
        rows.append((N_("Total cost"), rng.money(money_text(plan.get("total_cost"), cur) or "-", ranges, "total_cost")))
        rows += _whole_cost_row(breakdown, cur, lang)
        if job:
            rows.append((N_("Replicas"), str(job.get("replicas") or c.replicas)))
    elif plan.get("serving"):
        sv = plan["serving"]
        rows.append((N_("Replicas"), tr("engine copies {copies}, instances {instances}", lang).format(
            copies=sv.get("engine_copies"), instances=sv.get("instances"))))
    else:
        rows.append((N_("Replicas"), str(c.replicas)))
    if job and plan.get("cost_per_million_output_tokens"):   # an offline LLM job: its tokens' price
        rows.append((N_("Cost per million output tokens"), money_text(plan["cost_per_million_output_tokens"], cur) or "-"))
    if not c.training and not job:
        rows.append((N_("Monthly cost"), rng.money(money_text(plan.get("monthly_cost"), cur) or "-", ranges,
                                                   "monthly_cost")))
        rows += _whole_cost_row(breakdown, cur, lang)
        unit = plan.get("unit_cost") or {}
        if unit.get("unit") == "1M input tokens":    # prefill-only work: no output tokens to price
            rows.append((N_("Cost per million input tokens"), money_text(unit.get("cost"), cur) or "-"))
        elif unit.get("unit") in UNIT_COST_LABEL:    # a non-LLM service: its item's price, as `recommend` shows it
            cost = unit.get("cost")
            rows.append((UNIT_COST_LABEL[unit["unit"]],
                         f"{cost:.4g} {cur}" if isinstance(cost, (int, float)) and 0 < abs(cost) < 1
                         else money_text(cost, cur) or "-"))
        else:
            rows.append((N_("Cost per million output tokens"),
                         money_text(plan.get("cost_per_million_output_tokens"), cur) or "-"))
    if plan.get("aliases"):
        rows.append((N_("Also sold as"), ", ".join(str(a) for a in plan["aliases"])))
    if plan.get("ranking_basis"):
        rows.append((N_("Ranked by"), i18n.localize(str(plan["ranking_basis"]), lang)))
    return [(tr(k, lang), v if isinstance(v, Safe) else md(v)) for k, v in rows]


def _span(ranges: dict, key: str, fmt) -> str:
    """' (low-high)' of an 80 % range, or nothing."""
    pair = ranges.get(key)
    return f" ({fmt(pair[0])}-{fmt(pair[1])})" if pair else ""


SLA_WORDS = {True: N_("met ({targets})"), False: N_("missed ({targets})")}


def serving_items(sv: dict, lang: str) -> list[tuple[str, str | None]]:
    """What an LLM serving plan gives under its planned load (plan["serving"], plan/serving/serving_report.py)."""
    def sec(x: Any) -> str | None:
        return tr("{value} s", lang).format(value=f"{x:.2f}") if isinstance(x, (int, float)) else None

    def ms(x: float) -> str:
        return tr("{value} ms", lang).format(value=f"{x * 1000:g}")

    ttft = (tr("{p50} (p50), {p90} (p90) under the planned load", lang).format(p50=sec(sv.get("ttft_p50_s")),
                                                                             p90=sec(sv.get("ttft_p90_s")))
            if sv.get("ttft_p90_s") is not None else None)
    target = [f"{tr('TTFT', lang)} {ms(sv['ttft_target_s'])}" if sv.get("ttft_target_s") else "",
              f"{tr('TPOT', lang)} {ms(sv['tpot_target_s'])}" if sv.get("tpot_target_s") else ""]
    sla = None
    if sv.get("sla_met") is not None:
        sla = tr(SLA_WORDS[bool(sv["sla_met"])], lang).format(
            targets=("，" if lang == "zh" else ", ").join(x for x in target if x))
    tpot = sv.get("tpot_s")
    return [(N_("TTFT"), ttft),
            # plan.serving.tpot_s: at the planned load (the running sequences the traffic keeps per copy), not at the
            # batch limit
            (N_("TPOT"), (tr("{ms} ms at the planned load ({running} sequences running per copy)", lang).format(
                ms=f"{tpot * 1000:.0f}", running=f"{sv['running_sequences_per_copy']:.0f}")
                if sv.get("running_sequences_per_copy") is not None else
                tr("{ms} ms at the planned load", lang).format(ms=f"{tpot * 1000:.0f}")) if tpot else None),
            (N_("Output tokens/s per replica"), f"{sv['output_tokens_per_s_per_replica']:,.0f}"
             if sv.get("output_tokens_per_s_per_replica") is not None else None),
            (N_("Load"), f"{sv['utilization']:.0%}" if sv.get("utilization") is not None else None),
            (N_("SLA"), sla),
            (N_("Engine"), tr("{engine}, {weights} weights, KV cache {kv}, batch limit {seqs}", lang).format(
                engine=sv.get("engine"), weights=str(sv.get("weight_format", "")).upper(),
                kv=sv.get("kv_cache_dtype"), seqs=sv.get("max_num_seqs")))]


def perf_rows(c: Ctx, estimate: dict, plan: dict | None = None) -> list[tuple[Safe, Safe]]:
    p = estimate.get("performance") or {}
    sv = (plan or {}).get("serving")

    def num(key: str, fmt: str, shape=lambda v: v) -> str | None:
        v = p.get(key)
        return fmt.format(shape(v)) if isinstance(v, (int, float)) and math.isfinite(v) else None

    if c.training:
        items = [(N_("Step time"), fmt_duration(p.get("step_time_s")) if p.get("step_time_s") else None),
                 (N_("Tokens/s"), num("tokens_per_s", "{:,.0f}")), (N_("MFU"), num("mfu", "{:.1%}")),
                 (N_("Communication share"), num("comm_fraction", "{:.0%}")),
                 (N_("Total time"), fmt_duration(p.get("total_time_s")) if p.get("total_time_s") else None),
                 (N_("GPU-hours"), num("gpu_hours", "{:,.1f}")),
                 (N_("Checkpoints"), tr("every {steps} steps (~{minutes} min) to {path}", c.lang).format(
                     steps=c.save_steps, minutes=c.checkpoint_minutes, path=c.checkpoint_dir))]
    elif sv:
        items = serving_items(sv, c.lang)
    elif (plan or {}).get("job"):
        # a batch job: the batch and the rate that sized it (plan.job; plan/search/search_job.py), as the script runs
        job = plan["job"]   # type: ignore[index]
        items = [(N_("Batch per forward"), f"{job['batch']:,}" if job.get("batch") else None),
                 (N_("Time per batch"), fmt_duration(p.get("latency_s")) if p.get("latency_s") else None),
                 (N_("Items/s per model copy"), num("max_requests_per_s", "{}", fmt_rate)),
                 (N_("Items/s of the job"), fmt_rate(job["items_per_s"]) if job.get("items_per_s") else None)]
    else:
        items = [(N_("TTFT"), fmt_duration(p.get("ttft_s")) if p.get("ttft_s") else None),
                 (N_("TPOT"), fmt_duration(p.get("tpot_s")) if p.get("tpot_s") else None),
                 (N_("Output tokens/s"), num("output_tokens_per_s", "{:,.0f}")),
                 (N_("Max concurrency"), num("max_concurrency", "{:,.0f}")),
                 (N_("Max requests/s"), num("max_requests_per_s", "{:,.2f}"))]
    return [(tr(k, c.lang), md(v)) for k, v in items if v is not None]


def memory_rows(c: Ctx, estimate: dict) -> list[tuple[Safe, Safe]]:
    mem = estimate.get("memory") or {}
    comps = mem.get("components") or {}
    order = list(svg.COMPONENT_COLOURS)
    keys = sorted(comps, key=lambda k: (order.index(k) if k in order else len(order), k))
    rows = [(component_name(k, c.lang), md(gib_text(comps[k]))) for k in keys
            if isinstance(comps[k], (int, float)) and comps[k] > 0]
    rows.append((tr("Total", c.lang), md(gib_text(mem.get("per_gpu_bytes")))))
    if mem.get("capacity_bytes"):
        rows.append((tr("capacity", c.lang), md(gib_text(mem.get("capacity_bytes")))))
    return rows


def _whole_cost_row(breakdown: dict | None, cur: str, lang: str) -> list[tuple[str, str]]:
    """The whole cost's total (the table below) as a summary row; its unknown items named."""
    if not breakdown or money_text(breakdown.get("total"), cur) is None:
        return []
    text = tr("{total} with disks, shared storage and traffic (Whole cost below)", lang).format(
        total=money_text(breakdown["total"], cur))
    unknown = [i18n.localize(str(u), lang) for u in breakdown.get("unknown") or []]
    if unknown:
        text = tr("{text}; not counted, no price known: {items}", lang).format(text=text, items=", ".join(unknown))
    return [(N_("Whole cost"), str(text))]


def cost_rows(c: Ctx, breakdown: dict | None) -> tuple[list[dict], Safe | None]:
    """Whole-cost table rows (item, quantity, amount, source, as_of) and the total."""
    from gpuplan.plan.money.cost_breakdown import item_text

    if not breakdown:
        return [], None
    lang = c.lang
    rows = []
    for ln in breakdown["lines"]:
        money = money_text(ln["amount"], c.currency)   # None: no price, or not a finite number
        if money is None:
            amount = str(tr("unknown", lang))
        elif ln.get("estimated"):
            amount = tr("{amount} (estimated)", lang).format(amount=money)
        else:
            amount = money
        if ln.get("note"):
            amount = tr("{amount} ({note})", lang).format(amount=amount, note=i18n.localize(str(ln["note"]), lang))
        item, quantity = item_text(ln, lang)
        source = ln.get("source")
        rows.append({"item": md(item), "quantity": md(quantity), "amount": md(amount),
                     "source": say(source, lang) if source and source != "not found" else md(tr("not found", lang)),
                     "as_of": md(ln.get("as_of") or "-")})
    total = money_text(breakdown["total"], c.currency) or "-"
    per = N_("{total} per job") if breakdown["basis"] == "job" else N_("{total} per month")
    return rows, md(tr(per, lang).format(total=total))


def recipe_rows(c: Ctx, plan: dict) -> list[tuple[Safe, Safe]]:
    """PLAN.md's training recipe (the plan's ``recipe`` block): what runs per step, and which fields the search
    chose; empty for serving plans and plans written before the recipe search."""
    r = plan.get("recipe") or {}
    if not r:
        return []
    bubble = f"{r['pipeline_bubble']:.1%}" if (r.get("pp") or 1) > 1 else "-"
    mfu = f"{r['mfu']:.0%}" if r.get("mfu") is not None else "-"
    rows = [(N_("Micro-batch x accumulation x DP"), f"{r['micro_batch']} x {r['gradient_accumulation']} x {r['dp']}"),
            (N_("Global batch"), tr("{seqs} sequences, {tokens} tokens per optimizer step", c.lang).format(
                seqs=r["global_batch_sequences"], tokens=f"{r['global_batch_tokens']:,}")
             if r.get("global_batch_tokens") else tr("{seqs} samples per optimizer step", c.lang).format(
                seqs=r["global_batch_sequences"])),
            (N_("Optimizer steps"), str(r["optimizer_steps"]) if r.get("optimizer_steps") else "-"),
            (N_("Pipeline bubble (idle share of a step)"), bubble), ("MFU", mfu),
            (N_("Chosen by the search"), ", ".join(f"`{f}`" for f in r.get("chosen") or []) or "-"),
            (N_("Set by you"), ", ".join(f"`{f}`" for f in r.get("pinned") or []) or "-")]
    return [(tr(k, c.lang), Safe(v)) for k, v in rows]

