"""Rendering, kept apart from the facts: a rich terminal report (en/zh) and the JSON document."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from gpuplan.doctor.verdict import FAIL, PASS, SKIP, WARN, Check
from gpuplan.doctor.facts import Facts, GpuFacts
from gpuplan.doctor.i18n import t
from gpuplan.i18n import N_, tr
from gpuplan.units import GIB

if TYPE_CHECKING:  # rich is imported only to draw the text report; --json needs nothing
    from rich.table import Table

SCHEMA_VERSION = 1
_STYLE = {PASS: "green", WARN: "yellow", FAIL: "bold red", SKIP: "dim"}


def to_json(facts: Facts, checks: list[Check], bench: dict[str, Any] | None, code: int) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "facts": facts.to_dict(),
        "checks": [c.to_dict() for c in checks],
        "benchmarks": bench,
        "exit_code": code,
    }


def write_json(doc: dict[str, Any], out: TextIO) -> None:
    out.write(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n")


def _u(value: Any, lang: str, fmt: str = "{}") -> str:
    return t("unknown", lang) if value is None else fmt.format(value)


def _onoff(value: bool | None, lang: str) -> str:
    return t("unknown", lang) if value is None else (tr("on", lang) if value else tr("off", lang))


def _pcie(g: GpuFacts, lang: str) -> str:
    if g.pcie_width_max is None and g.pcie_gen_max is None:
        return t("unknown", lang)
    return f"Gen{_u(g.pcie_gen_current, lang)}/{_u(g.pcie_gen_max, lang)} x{_u(g.pcie_width_current, lang)}/{_u(g.pcie_width_max, lang)}"


def _gpu_table(facts: Facts, lang: str) -> Table:
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=t("gpus", lang), show_lines=False)
    for col in ("#", "GPU", N_("Mem"), "ECC", "PM", "MIG", "PCIe", "NVLink", N_("Power"), "NUMA"):
        table.add_column(tr(col, lang))
    for g in facts.gpus:
        mem = _u(None if g.memory_total_bytes is None else g.memory_total_bytes / GIB, lang, "{:.1f} GiB")
        ecc = _onoff(g.ecc_enabled, lang)
        if g.ecc_uncorrected_volatile:
            ecc += tr(" ({count} err)", lang).format(count=g.ecc_uncorrected_volatile)
        nvl = t("unknown", lang) if g.nvlink_links_total is None else (
            "-" if g.nvlink_links_total == 0 else f"{g.nvlink_links_active}/{g.nvlink_links_total}")
        power = _u(g.power_limit_w, lang, "{:.0f} W")
        table.add_row(str(g.index), g.name or t("unknown", lang), mem, ecc, _onoff(g.persistence_mode, lang),
                      _onoff(g.mig_enabled, lang), _pcie(g, lang), nvl, power, _u(g.numa_node, lang))
    return table


def _facts_lines(facts: Facts, lang: str) -> list[str]:
    d, h = facts.driver, facts.host
    ram = None if h.ram_total_bytes is None else h.ram_total_bytes / GIB
    rdma = None if h.rdma_devices is None else (", ".join(h.rdma_devices) or tr("none", lang))
    lines = [
        tr("driver {driver} · CUDA (driver) {cuda_driver} · CUDA (torch) {cuda_torch} · cuDNN {cudnn} · NCCL {nccl} · "
           "torch {torch}", lang).format(
            driver=_u(d.driver_version, lang), cuda_driver=_u(d.cuda_driver_version, lang),
            cuda_torch=_u(d.cuda_runtime_version, lang), cudnn=_u(d.cudnn_version, lang),
            nccl=_u(d.nccl_version, lang), torch=_u(d.torch_version, lang)),
        tr("host: {cpus} CPUs · {ram} RAM · NUMA nodes {numa} · RDMA {rdma}", lang).format(
            cpus=_u(h.cpus, lang), ram=_u(ram, lang, "{:.0f} GiB"), numa=_u(h.numa_nodes, lang), rdma=_u(rdma, lang)),
    ]
    if h.instance_type:
        lines.append(tr("instance type (metadata): {instance_type}", lang).format(instance_type=h.instance_type))
    for m in h.mounts:
        size = "?" if m.total_bytes is None else f"{m.total_bytes / GIB:.0f} GiB"
        free = "?" if m.free_bytes is None else tr("{size:.0f} GiB free", lang).format(size=m.free_bytes / GIB)
        lines.append(tr("mount {path} ({fstype}) {size}, {free}", lang).format(path=m.path, fstype=m.fstype,
                                                                                size=size, free=free))
    return lines


def _bench_table(bench: dict[str, Any], lang: str) -> Table:
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=t("benchmarks", lang))
    for col in (N_("name"), N_("value"), N_("reference"), N_("ratio")):
        table.add_column(tr(col, lang))
    for name, r in bench.items():
        if not isinstance(r, dict):
            continue
        value = r.get("value")
        text = (r.get("error") or t("unknown", lang)) if value is None else f"{value:.2f} {r.get('unit', '')}"
        ref = r.get("reference")
        table.add_row(name, text, "-" if ref is None else f"{ref:.1f}",
                      "-" if r.get("ratio") is None else f"{r['ratio']:.0%}")
    return table


def render_text(facts: Facts, checks: list[Check], bench: dict[str, Any] | None, code: int,
                out: TextIO, lang: str = "en") -> None:
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    console = Console(file=out, width=120, soft_wrap=False, highlight=False)
    console.print(f"[bold]{t('title', lang)}[/bold]")
    if not facts.has_gpu:
        console.print(f"[bold red]{t('no_gpu_banner', lang)}[/bold red]")
    for line in _facts_lines(facts, lang):
        console.print(line, markup=False)
    if facts.gpus:
        console.print(_gpu_table(facts, lang))
    if bench and not bench.get("error"):
        console.print(_bench_table(bench, lang))
    table = Table(title=t("checks", lang), show_lines=True)
    for col in ("status", "check", "message", "fix"):
        table.add_column(t(col, lang), overflow="fold")
    for c in checks:
        table.add_row(f"[{_STYLE[c.status]}]{t(c.status, lang)}[/]", c.id, c.message(lang), c.fix(lang) or "")
    console.print(table)
    counts = {s: sum(c.status == s for c in checks) for s in (PASS, WARN, FAIL, SKIP)}
    console.print(t("summary", lang, passed=counts[PASS], warned=counts[WARN], failed=counts[FAIL],
                    skipped=counts[SKIP], code=code))
