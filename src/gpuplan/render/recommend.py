"""Rich rendering of a Recommendation and of a quick-mode result (en / zh). JSON is to_dict()."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpuplan.i18n import N_, tr
from gpuplan.units import GIB, fmt_duration

# Labels chosen at run time (t(col)): msgids for the message catalog.
_LABELS = (
    N_("Recommended plans"), N_("Rank"), N_("Instances"), N_("Billing"), N_("Region"), N_("Per hour"), N_("Time"),
    N_("Total cost"), N_("Monthly"), N_("Replicas"), N_("per 1M output tokens"), N_("Why"), N_("Why not"),
    N_("Rejected"), N_("Reason"), N_("Code"), N_("No plan satisfies the workload"), N_("Binding constraints"),
    N_("Storage"), N_("Network"), N_("Pareto"), N_("payg"), N_("spot"), N_("subscription"), N_("Quick answer"),
    N_("Folklore"), N_("Verdict"), N_("holds"), N_("wrong"), N_("overkill"), N_("per 1B tokens"),
    N_("Parameters (B)"), N_("Task"), N_("Plan"), N_("Memory/GPU"), N_("Layout"), N_("unpriced"), N_("Platform"),
)


PLATFORM_LABELS = {"ecs": "ECS", "function-compute": "Function Compute", "pai-eas": "PAI-EAS", "ack": "ACK"}


def _money(x, cur: str) -> str:
    return "-" if x is None else f"{cur} {x:,.2f}"


def render_recommendation(rec, console: Console | None = None, lang: str = "en") -> None:
    """Print the plans table, advice for the top plan, why-not notes, rejections and binding constraints."""
    console = console or Console()
    t = lambda s: tr(s, lang)  # noqa: E731
    cur = rec.currency
    if not rec.plans:
        console.print(f"[bold red]{t('No plan satisfies the workload')}[/]")
        console.print(f"[bold]{t('Binding constraints')}[/]")
        for b in rec.binding_constraints:
            console.print(f"  - {b['text']}")
        _rejected(rec, console, t, limit=8)
        return
    training = rec.workload.task not in (None, "inference")
    table = Table(title=t("Recommended plans"), show_lines=False)
    for col in ("Rank", "Platform", "Instance type", "Instances", "GPU", "Layout", "Memory/GPU", "Billing", "Per hour"):
        table.add_column(t(col))
    if training:
        table.add_column(t("Time"))
        table.add_column(t("Total cost") if any(p.cost.total_cost is not None for p in rec.plans) else t("per 1B tokens"))
    else:
        table.add_column(t("Replicas"))
        table.add_column(t("Monthly"))
        table.add_column(t("per 1M output tokens"))
    table.add_column(t("Pareto"))
    for p in rec.plans:
        c = p.cost
        mem = p.memory
        row = [str(p.rank), PLATFORM_LABELS[p.platform], p.short_name, str(p.instance_count),
               f"{p.gpus_total} x {p.gpu}", p.layout,
               f"{mem.per_gpu_bytes / GIB:.1f}/{mem.capacity_per_gpu_bytes / GIB:.1f} GiB"
               if mem.per_gpu_bytes is not None and mem.capacity_per_gpu_bytes else "-",
               t(c.billing) if c.billing else t("unpriced"), _money(c.price_per_hour, cur)]
        if training:
            row.append(fmt_duration(c.time_s) if c.time_s is not None else
                       (fmt_duration(c.time_per_billion_tokens_s) + "/1B" if c.time_per_billion_tokens_s else "-"))
            row.append(_money(c.total_cost if c.total_cost is not None else c.cost_per_billion_tokens, cur))
        else:
            row += [str(c.replicas), _money(c.monthly_cost, cur), _money(c.cost_per_million_output_tokens, cur)]
        row.append("*" if p.pareto else "")
        table.add_row(*row)
    console.print(table)
    best = rec.plans[0]
    console.print(f"[bold]{t('Why')}[/]")
    for line in best.advice.why:
        console.print(f"  - {line}")
    st = best.advice.storage or {}
    if st:
        disk = st.get("disk") or {}
        shared = st.get("shared")
        line = (f"{disk.get('level')} {disk.get('size_gib')} GiB ({disk.get('throughput_mb_s')} MB/s, "
                f"{disk.get('iops')} IOPS)" if disk else "-")
        if shared:
            line += f"; {shared['kind'].upper()} {shared['capacity_tib']} TiB ({shared['why']})"
        console.print(f"[bold]{t('Storage')}[/]: {line}; read {st.get('read_mb_s')} MB/s, checkpoint "
                      f"{(st.get('checkpoint_bytes') or 0) / GIB:.1f} GiB")
    net = best.advice.network
    if net:
        console.print(f"[bold]{t('Network')}[/]: {net.get('text')}")
        env = net.get("nccl_env") or {}
        if env:
            console.print("  " + " ".join(f"{k}={v}" for k, v in env.items()))
    if rec.why_not:
        console.print(f"[bold]{t('Why not')}[/]")
        for line in rec.why_not:
            console.print(f"  - {line}")
    for head, items in (("Warnings", rec.warnings), ("Assumptions", rec.assumptions)):
        if items:
            console.print(f"[bold]{t(head)}[/]")
            for line in items:
                console.print(f"  - {line}")


def _rejected(rec, console: Console, t, limit: int) -> None:
    if not rec.rejected:
        return
    table = Table(title=t("Rejected"))
    for col in ("Instance type", "Code", "Reason"):
        table.add_column(t(col))
    for r in rec.rejected[:limit]:
        table.add_row(r["instance_type"], r["code"], r["reason"])
    console.print(table)


def render_quick(result, console: Console | None = None, lang: str = "en") -> None:
    """Print the quick-mode answer: the folklore, the verdict and the estimator's pick."""
    console = console or Console()
    t = lambda s: tr(s, lang)  # noqa: E731
    console.print(f"[bold]{t('Quick answer')}[/]: {result.params_b:g}B, {result.task} ({result.bucket})")
    console.print(f"  {t('Folklore')}: {result.folklore}")
    color = {"holds": "green", "wrong": "red", "overkill": "yellow"}.get(result.verdict, "white")
    console.print(f"  {t('Verdict')}: [{color}]{t(result.verdict)}[/]")
    for n in result.notes:
        console.print(f"  - {n}")
    if result.recommendation is not None and result.recommendation.plans:
        render_recommendation(result.recommendation, console, lang)
