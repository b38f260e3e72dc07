"""`gpuplan compare` as text: one row per cloud and billing mode, the cheapest of each mode, the price basis,
the exchange rate and the assumptions (the document comes from :func:`gpuplan.plan.compare.compare_clouds`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from gpuplan.catalog.prices.prices import STALE_AFTER_DAYS
from gpuplan.i18n import N_, tr
from gpuplan.plan.compare import BILLING_WORDS
from gpuplan.render.fit import Column, fitted_table, print_fitted
from gpuplan.units import fmt_duration

# Labels chosen at run time (t(col)): msgids for the message catalog.
_LABELS = (
    N_("Cloud"), N_("Best plan"), N_("Time"), N_("Cost"), N_("Cost per 1M training tokens"),
    N_("Cost per 1M output tokens"), N_("Price date"), N_("Cross-cloud comparison"), N_("no feasible priced plan"),
    N_("Billing"), N_("Hardware"), N_("Job cost"), N_("Monthly cost"), N_("Cost per 1B tokens"), N_("Price basis"),
)


def _basis_text(r: dict[str, Any], lang: str) -> str:
    basis = tr(r["price_basis"], lang) if r.get("price_basis") else "-"
    if r.get("price_basis") == "quoted" and r.get("price_kind") == "third-party":
        basis = tr("quoted, third-party copy", lang)
    region = r.get("price_region") or r.get("region") or "-"
    if r.get("proxy"):
        region = tr("{region} (proxy for {wanted})", lang).format(region=region, wanted=r.get("region"))
    date = r.get("price_as_of") or "-"
    if (r.get("price_age_days") or 0) > STALE_AFTER_DAYS:
        date = tr("{date} ({days} days old)", lang).format(date=date, days=r["price_age_days"])
    return f"{basis}, {date}, {region}"


def _cost_text(r: dict[str, Any], cur: str, lang: str) -> str:
    if r.get("cost") is None:
        return tr("no price known", lang)
    suffix = {"job": "", "month": tr("/month", lang), "1B tokens": tr(" per 1B tokens", lang)}[r["cost_unit"]]
    mark = "~" if r.get("price_basis") in ("derived", "guessed") else ""
    return f"{cur} {r['cost']:,.0f}{mark}{suffix}"


def render_comparison(result: dict[str, Any], console: Console, lang: str, wide: bool = False) -> None:
    spec = [("Billing", 0, "left"), ("Cloud", 0, "left"), ("Best plan", 0, "left"), ("Hardware", 1, "left"),
            ("Time", 1, "right"), ("Cost", 0, "right"), ("Price basis", 2, "left")]
    cols = [Column(tr(name, lang), prio, just) for name, prio, just in spec]
    cur = result["currency"]
    rows = []
    for r in result.get("rows", []):
        mem = f" ({r['gpu_memory_gib']:,.0f} GiB)" if r.get("gpu_memory_gib") else ""
        rows.append([tr(BILLING_WORDS.get(r["billing"], r["billing"]), lang), r["cloud"],
                     f"{r['instance_count']} x {r['instance_type']}", f"{r['gpus_total']} x {r['gpu']}{mem}",
                     fmt_duration(r["time_s"]) if r.get("time_s") else "-", _cost_text(r, cur, lang),
                     _basis_text(r, lang)])
    for c in result["clouds"]:
        if not c.get("by_billing"):
            rows.append(["-", c["cloud"], tr("no feasible priced plan", lang), "-", "-", "-", "-"])
    print_fitted(console, fitted_table(tr("Cross-cloud comparison", lang), cols, rows, width=console.width, wide=wide),
                 wide)
    if any(r.get("price_basis") in ("derived", "guessed") for r in result.get("rows", [])):
        legend = tr("derived or guessed price: check a quote", lang)
        console.print(f"[dim]~ {legend}[/dim]")
    for billing, best in result.get("cheapest_by_billing", {}).items():
        console.print(tr("cheapest {billing}: {cloud} ({instance})", lang).format(
            billing=tr(BILLING_WORDS.get(billing, billing), lang), cloud=best["cloud"], instance=best["instance_type"]))
    for note in result.get("notes", []):
        console.print(f"[dim]- {note}[/dim]")
    for wmsg in result.get("warnings", []):
        console.print(f"[yellow]! {wmsg}[/yellow]")
    fx = result.get("fx")
    if fx:
        line = tr("exchange rate {rate} CNY/USD as of {date} ({source})", lang).format(
            rate=fx["usd_cny"], date=fx["as_of"], source=fx["source"])
        console.print(f"[dim]- {line}[/dim]")
    for a in result.get("assumptions", []):
        console.print(f"[dim]- {a}[/dim]")
