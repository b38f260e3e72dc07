"""Rich rendering of a Recommendation and of a quick-mode result (en / zh). JSON is to_dict()."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from gpuplan.i18n import N_, localize, tr
from gpuplan.plan.advice.storage import shared_fs_label
from gpuplan.plan.record import Plan
from gpuplan.render.fit import Column, fitted_table, price_legend, print_fitted, said_once
from gpuplan.estimate.intervals import COVERAGE_TEXT
from gpuplan.render import ranges as rng
from gpuplan.units import GIB, fmt_duration

# Labels chosen at run time (t(col)): msgids for the message catalog.
_LABELS = (
    N_("Recommended plans"), N_("Rank"), N_("Instances"), N_("Billing"), N_("Region"), N_("Per hour"), N_("Time"),
    N_("Total cost"), N_("Monthly"), N_("Replicas"), N_("per 1M output tokens"), N_("Why"), N_("Why not"),
    N_("Rejected"), N_("Reason"), N_("Code"), N_("No plan satisfies the workload"), N_("Binding constraints"),
    N_("Storage"), N_("Network"), N_("Pareto"), N_("payg"), N_("spot"), N_("subscription"), N_("Quick answer"),
    N_("Folklore"), N_("Verdict"), N_("holds"), N_("wrong"), N_("overkill"), N_("works but slow"),
    N_("works but expensive"), N_("per 1B tokens"), N_("per image"), N_("per video"), N_("per audio hour"), N_("per clip"),
    N_("per request"), N_("per 1M input tokens"), N_("Parameters (B)"), N_("Task"), N_("Plan"), N_("Memory/GPU"), N_("Layout"),
    N_("unpriced"), N_("Platform"), N_("(and {n} more like it)"), N_("TTFT p50/p90"), N_("Load"), N_("SLA"),
    N_("tokens/s per replica"), N_("met"), N_("missed"), N_("Ranked by"),
    N_("{instance} (plan {ranks}) is also sold as {aliases}: the same machine at the same price"),
    N_("{value} ms"), N_("{value} s"), N_("TPOT"),
    N_("Micro-batch"), N_("Accum."), N_("Global batch"), N_("Bubble"), N_("MFU"), N_("Price as of"),
    N_("{date} ({days} d), {basis}"), N_("{region} (price of {price_region})"),
)


PLATFORM_LABELS = {"ecs": "ECS", "function-compute": "Function Compute", "pai-eas": "PAI-EAS", "ack": "ACK"}


def plans_table(rec, lang: str, width: int, wide: bool = False):
    """The ranked plans as a fitted table (see render.fit): the instance type and the headline cost
    always, secondary columns by priority, the rest on a detail line under each plan."""
    t = lambda s: tr(s, lang)  # noqa: E731
    cur = rec.currency
    training = rec.workload.task not in (None, "inference")
    platforms = {p.platform for p in rec.plans}
    cols: list[tuple[Column, Callable[[Plan], str]]] = [(Column("#", 0, "right"), lambda p: str(p.rank))]
    if platforms != {"ecs"}:
        cols.append((Column(t("Platform"), 1), lambda p: t(PLATFORM_LABELS[p.platform])))
    cols += [
        (Column(t("Instance type"), 0), lambda p: p.short_name),
        (Column(t("Instances"), 2, "right"), lambda p: str(p.instance_count)),
        (Column("GPU", 2), lambda p: f"{p.gpus_total} x {p.gpu}"),
        (Column(t("Layout"), 5), lambda p: localize(p.layout, lang)),
        (Column(t("Memory/GPU"), 4, "right"), _memory),
        (Column(t("Billing"), 1), lambda p: t(p.cost.billing) if p.cost.billing else t("unpriced")),
    ]
    if len({p.cost.region for p in rec.plans}) > 1:    # plans that differ only by region must not look identical
        cols.append((Column(t("Region"), 1), lambda p: region_text(p, t)))
    cols.append((Column(t("Per hour"), 3, "right"), lambda p: _price(p, p.cost.price_per_hour, cur)))
    job = not training and any(p.cost.job for p in rec.plans)      # batch inference: time and total cost
    per_unit = _per_unit_label(rec.plans)                           # non-LLM plans: no token labels
    if training or job:
        per_b = not any(p.cost.total_cost is not None for p in rec.plans)
        cols += [
            (Column(t("Time"), 1, "right"),
             lambda p: rng.duration(p.cost.time_s, p.intervals, "time_s") if p.cost.time_s is not None else
             (fmt_duration(p.cost.time_per_billion_tokens_s) + "/1B" if p.cost.time_per_billion_tokens_s else "-")),
            (Column(t("per 1B tokens") if per_b else t("Total cost"), 0, "right"),
             lambda p: rng.money(_price(p, p.cost.total_cost if p.cost.total_cost is not None
                                        else p.cost.cost_per_billion_tokens, cur), p.intervals, "total_cost")),
        ]
        if job:
            cols.append((Column(t(per_unit or "per request"), 3, "right"),
                         lambda p: _small_money(_unit_cost(p.cost), cur)))
        if training and any(p.recipe is not None for p in rec.plans):
            cols += _recipe_columns(t)
    else:
        cols += [
            (Column(t("Replicas"), 3, "right"), _replicas),
            (Column(t("Monthly"), 0, "right"),
             lambda p: rng.money(_price(p, p.cost.monthly_cost, cur), p.intervals, "monthly_cost")),
            (Column(t(per_unit or "per 1M output tokens"), 4, "right"),
             lambda p: _small_money(_unit_cost(p.cost), cur) if per_unit else
             _price(p, p.cost.cost_per_million_output_tokens, cur)),
        ]
        if any(p.serving for p in rec.plans):
            cols += serving_columns(t)
    # every plan's own price date, age and basis (a narrow terminal folds it into the plan's detail line,
    # never drops it): plan 2's price may be years older than plan 1's
    cols.append((Column(t("Price as of"), 3), lambda p: price_age(p, t)))
    cols.append((Column(t("Pareto"), 2), lambda p: "*" if p.pareto else ""))
    rows = [[fn(p) for _, fn in cols] for p in rec.plans]
    marks = [p.cost.price_mark for p in rec.plans]
    title = t("Recommended plans") + ("" if platforms != {"ecs"} else f" ({PLATFORM_LABELS['ecs']})")
    return fitted_table(title, [c for c, _ in cols], rows, width=width, wide=wide,
                        legend=price_legend(marks, lang))


# How a plan's price was obtained, in a word for the table (the JSON keeps price_basis and price_kind).
PRICE_BASIS_WORDS = {"yours": N_("yours"), "official": N_("quoted"), "third-party": N_("third-party"),
                     "derived": N_("derived"), "guessed": N_("guessed")}


def price_basis_word(p: Plan) -> str | None:
    """"yours", "official", "third-party", "derived" or "guessed" (a key of PRICE_BASIS_WORDS), None unpriced."""
    c = p.cost
    if not c.price_as_of:
        return None
    basis = c.price_basis or ("derived" if c.price_estimated else "quoted")
    if basis != "quoted":
        return basis
    return {"user": "yours", "third-party": "third-party"}.get(c.price_kind or "", "official")


def price_age(p: Plan, t) -> str:
    """"2023-06-01 (1281 d), third-party": the plan's own price date, age in days and basis."""
    word = price_basis_word(p)
    if word is None:
        return "-"
    c = p.cost
    return t("{date} ({days} d), {basis}").format(date=c.price_as_of, days=c.price_age_days if c.price_age_days
                                                 is not None else "?", basis=t(PRICE_BASIS_WORDS[word]))


def region_text(p: Plan, t) -> str:
    """The plan's region, and the region whose price it carries when that is another ("cn-wulanchabu (price of
    cn-beijing)")."""
    c = p.cost
    if c.price_region and c.price_region != c.region:
        return t("{region} (price of {price_region})").format(region=c.region, price_region=c.price_region)
    return c.region or "-"


def serving_columns(t) -> list[tuple[Column, Callable[[Plan], str]]]:
    """What an LLM serving plan gives: TTFT p50/p90 under the planned load, TPOT, output tokens/s per
    model copy, load, and whether the SLA is met (plan.serving, plan/serving/serving_report.py)."""
    return [
        (Column(t("TTFT p50/p90"), 1, "right"), lambda p: _ttft(p.serving, t)),
        (Column(t("TPOT"), 1, "right"), lambda p: _ms(p.serving.get("tpot_s"), t) if p.serving else "-"),
        (Column(t("Load"), 2, "right"), lambda p: _share(p.serving.get("utilization")) if p.serving else "-"),
        (Column(t("SLA"), 2), lambda p: _sla(p.serving, t)),
        (Column(t("tokens/s per replica"), 4, "right"),
         lambda p: f"{p.serving['output_tokens_per_s_per_replica']:,.0f}"
         if p.serving and p.serving.get("output_tokens_per_s_per_replica") is not None else "-"),
    ]


def _aliases(plans) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """(instance type, its other names) -> the ranks of the plans shown under that name."""
    out: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for p in plans:
        if p.aliases:
            key = (p.short_name, tuple(a.removeprefix("ecs.") for a in p.aliases))
            out.setdefault(key, []).append(str(p.rank))
    return out


def _replicas(p) -> str:
    """Engine copies (model copies) for LLM serving plans, with the instances in their own column."""
    if p.serving:
        return str(p.serving["engine_copies"])
    return str(p.cost.replicas) if p.cost.replicas else "-"


def _ms(x, t) -> str:
    if x is None:
        return "-"
    return t("{value} ms").format(value=f"{x * 1000:,.0f}") if x < 10 else t("{value} s").format(value=f"{x:,.1f}")


def _ttft(sv, t) -> str:
    if not sv:
        return "-"
    a, b = sv.get("ttft_p50_s"), sv.get("ttft_p90_s")
    if a is None or b is None:
        return "∞"
    return t("{value} s").format(value=f"{a:.2f}/{b:.2f}")


def _share(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def _sla(sv, t) -> str:
    if not sv or sv.get("sla_met") is None:
        return "-"
    return t("met") if sv["sla_met"] else t("missed")


def _recipe_columns(t) -> list[tuple[Column, Callable[[Plan], str]]]:
    """Training plans: the recipe the search chose (micro-batch, accumulation, global batch in sequences,
    the idle share of a pipelined step, MFU)."""
    def get(fmt: Callable[..., str]) -> Callable[[Plan], str]:
        return lambda p: fmt(p.recipe) if p.recipe is not None else "-"

    return [
        (Column(t("Micro-batch"), 3, "right"), get(lambda r: str(r.micro_batch))),
        (Column(t("Accum."), 3, "right"), get(lambda r: str(r.gradient_accumulation))),
        (Column(t("Global batch"), 2, "right"), get(lambda r: str(r.global_batch_sequences))),
        (Column(t("Bubble"), 4, "right"), get(lambda r: f"{r.pipeline_bubble:.0%}" if r.pp > 1 else "-")),
        (Column(t("MFU"), 2, "right"), get(lambda r: f"{r.mfu:.0%}" if r.mfu is not None else "-")),
    ]


def _memory(p) -> str:
    m = p.memory
    if m.per_gpu_bytes is None or not m.capacity_per_gpu_bytes:
        return "-"
    return f"{m.per_gpu_bytes / GIB:.1f}/{m.capacity_per_gpu_bytes / GIB:.1f} GiB"


def _price(p, x, cur: str) -> str:
    """Money with the plan's price mark (``~`` estimated, ``*`` third-party) when it has a price."""
    return "-" if x is None else f"{cur} {x:,.2f}{p.cost.price_mark}"


def render_recommendation(rec, console: Console | None = None, lang: str = "en", wide: bool = False) -> None:
    """Print the plans table, advice for the top plan, why-not notes, rejections and binding constraints."""
    console = console or Console()
    t = lambda s: tr(s, lang)  # noqa: E731
    colon = "：" if lang == "zh" else ": "
    if not rec.plans:
        console.print(f"[bold red]{t('No plan satisfies the workload')}[/]")
        console.print(f"[bold]{t('Binding constraints')}[/]")
        for b in rec.binding_constraints:
            console.print(f"  - {localize(b['text'], lang)}")
        _rejected(rec, console, t, limit=8)
        return
    print_fitted(console, plans_table(rec, lang, console.width, wide), wide)
    if getattr(rec, "ranking_basis", ""):
        console.print(f"[bold]{t('Ranked by')}[/]{colon}{localize(rec.ranking_basis, lang)}")
    for (name, aliases), ranks in _aliases(rec.plans).items():
        console.print(t("{instance} (plan {ranks}) is also sold as {aliases}: the same machine at the same price")
                      .format(instance=name, ranks=", ".join(ranks), aliases=", ".join(aliases)))
    best = rec.plans[0]
    high = (best.intervals.get("memory_per_gpu_bytes") or [None, None])[1]
    if best.memory.per_gpu_bytes and high:
        console.print(f"[bold]{t('Memory per GPU')}[/]{colon}" + tr(
            "{range}; the plan is sized at the high end of its {coverage} range, {high} GiB", lang).format(
            coverage=COVERAGE_TEXT,
            range=rng.gib(best.memory.per_gpu_bytes, best.intervals, "memory_per_gpu_bytes"), high=f"{high / GIB:.1f}"))
    console.print(f"[bold]{t('Why')}[/]")
    for line in best.advice.why:
        console.print(f"  - {localize(line, lang)}")
    st = best.advice.storage or {}
    if st:
        disk = st.get("disk") or {}
        shared = st.get("shared")
        line = (f"{disk.get('level')} {disk.get('size_gib')} GiB ({disk.get('throughput_mb_s')} MB/s, "
                f"{disk.get('iops')} IOPS)" if disk else "-")
        if shared:
            line += "; " + shared_fs_text(shared, lang)
        if st.get("checkpoint_bytes"):
            tail = tr("{disk}; read {read} MB/s, checkpoint {ckpt} GiB", lang).format(
                disk=line, read=st.get("read_mb_s"), ckpt=f"{st['checkpoint_bytes'] / GIB:.1f}")
        else:   # a service writes no checkpoints
            tail = tr("{disk}; read {read} MB/s", lang).format(disk=line, read=st.get("read_mb_s"))
        console.print(f"[bold]{t('Storage')}[/]{colon}{tail}")
    net = best.advice.network
    if net:
        console.print(f"[bold]{t('Network')}[/]{colon}{localize(str(net.get('text')), lang)}")
        env = net.get("nccl_env") or {}
        if env:
            console.print("  " + " ".join(f"{k}={v}" for k, v in env.items()))
    if rec.why_not:
        console.print(f"[bold]{t('Why not')}[/]")
        for line in rec.why_not:
            console.print(f"  - {localize(line, lang)}")
    names = [n for p in rec.all_plans for n in (p.short_name, p.instance_type)]
    warnings = said_once([localize(w, lang) for w in rec.warnings], names,
                         lambda n: t("(and {n} more like it)").format(n=n))
    for head, items in (("Warnings", warnings), ("Assumptions", [localize(a, lang) for a in rec.assumptions])):
        if items:
            console.print(f"[bold]{t(head)}[/]")
            for line in items:
                console.print(f"  - {line}")


def _per_unit_label(plans) -> str | None:
    """"per image" / "per audio hour" / ... for jobs and non-LLM services; None for LLM services."""
    for p in plans:
        c = p.cost
        if c.job:
            return "per audio hour" if c.job.get("audio_hours") else f"per {c.job.get('unit', 'request')}"
        if c.unit_cost:
            return f"per {c.unit_cost.get('unit', 'request')}"
    return None


def _small_money(x, cur: str) -> str:
    """Per-item costs are often fractions of a cent: four significant digits."""
    return "-" if x is None else f"{cur} {x:.4g}" if abs(x) < 1 else f"{cur} {x:,.2f}"


def _unit_cost(c):
    if c.job:
        return c.job.get("cost_per_audio_hour") if c.job.get("audio_hours") else c.job.get("cost_per_item")
    return (c.unit_cost or {}).get("cost")


def _rejected(rec, console: Console, t, limit: int) -> None:
    if not rec.rejected:
        return
    table = Table(title=t("Rejected"))
    shown = rec.rejected[:limit]
    table.add_column(t("Instance type"), no_wrap=True,
                     min_width=max(len(r["instance_type"]) for r in shown))   # never cut the type
    table.add_column(t("Code"), no_wrap=True)
    table.add_column(t("Reason"))
    for r in shown:
        table.add_row(r["instance_type"], r["code"], r["reason"])
    console.print(table)


def render_quick(result, console: Console | None = None, lang: str = "en", wide: bool = False) -> None:
    """Print the quick-mode answer: the folklore, the verdict and the estimator's pick."""
    console = console or Console()
    t = lambda s: tr(s, lang)  # noqa: E731
    from gpuplan.fieldnames import value_text

    task = value_text(result.task, lang, key="task")
    console.print(f"[bold]{t('Quick answer')}[/]: {result.params_b:g}B, {task} ({result.bucket})")
    console.print(f"  {t('Folklore')}: {result.folklore}")
    color = {"holds": "green", "wrong": "red", "overkill": "yellow", "works but slow": "yellow",
             "works but expensive": "yellow"}.get(result.verdict, "white")
    console.print(f"  {t('Verdict')}: [{color}]{t(result.verdict)}[/]")
    for n in result.notes:
        console.print(f"  - {n}")
    if result.recommendation is not None and result.recommendation.plans:
        render_recommendation(result.recommendation, console, lang, wide=wide)


def shared_fs_text(shared: dict, lang: str) -> str:
    """'Extreme NAS 2,100 GiB, 600 MB/s (why)': the shared file system of a plan's storage advice."""
    kind = str(shared.get("kind") or "")
    label = shared_fs_label(kind, lang)
    size = (f"{int(shared['capacity_gib']):,} GiB" if shared.get("capacity_gib") else
            f"{shared.get('capacity_tib')} TiB")
    speed = f", {float(shared['read_mb_s']):,.0f} MB/s" if shared.get("read_mb_s") else ""
    return f"{label} {size}{speed} ({localize(str(shared.get('why') or ''), lang)})"
