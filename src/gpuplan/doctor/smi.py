"""Parsers for ``nvidia-smi`` text: ``-q``, ``--query-gpu ... --format=csv``, ``topo -m`` and
``nvlink --status``. Pure functions of the text; unknown or "N/A" values become ``None``.

Formats as documented in ``nvidia-smi --help-query-gpu`` and ``man nvidia-smi``
(https://docs.nvidia.com/deploy/nvidia-smi/), checked against recorded outputs in
tests/fixtures/doctor/.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from gpuplan.doctor.facts import GpuFacts, Topology
from gpuplan.units import MIB

# Fields asked of `nvidia-smi --query-gpu`, in order (all exist since driver 450).
QUERY_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "pci.bus_id", "memory.total", "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.aggregate.total",
    "ecc.errors.corrected.volatile.total", "clocks.sm", "clocks.max.sm", "clocks.max.memory",
    "power.limit", "power.default_limit", "persistence_mode", "mig.mode.current", "pstate",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
    "pcie.link.width.max", "driver_version",
)
QUERY_ARGV = ["nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader,nounits"]

_UNKNOWN = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "unknown",
            "[insufficient permissions]", "[gpu is lost]", "not found"}


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in _UNKNOWN else value


def _int(value: str | None) -> int | None:
    value = _clean(value)
    if value is None:
        return None
    m = re.match(r"-?\d+", value)
    return int(m.group()) if m else None


def _float(value: str | None) -> float | None:
    value = _clean(value)
    if value is None:
        return None
    m = re.match(r"-?\d+(\.\d+)?", value)
    return float(m.group()) if m else None


def _enabled(value: str | None) -> bool | None:
    value = _clean(value)
    if value is None:
        return None
    return value.lower() in {"enabled", "on", "1", "yes"}


def _mib(value: str | None) -> int | None:
    v = _int(value)
    return None if v is None else v * MIB


# --------------------------------------------------------------------------- nvidia-smi -q


def parse_q_tree(text: str) -> dict[str, Any]:
    """Turn the indented ``Key : Value`` report into nested dicts (4 spaces per level).

    A line without a colon opens a section (``GPU 00000000:06:00.0``, ``PCI``, ``ECC Errors``).
    """
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("=="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if " : " in line or line.endswith(" :"):
            key, _sep, value = line.partition(":")
            parent[key.strip()] = value.strip()
        else:
            section: dict[str, Any] = {}
            parent[line] = section
            stack.append((indent, section))
    return root


def _get(tree: dict[str, Any], *path: str) -> str | None:
    node: Any = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, str) else None


def parse_q(text: str) -> tuple[dict[str, str | None], list[GpuFacts]]:
    """``nvidia-smi -q`` → ({driver_version, cuda_driver_version}, GPUs in listed order)."""
    tree = parse_q_tree(text)
    head = {
        "driver_version": _clean(_get(tree, "Driver Version")),
        "cuda_driver_version": _clean(_get(tree, "CUDA Version")),
    }
    gpus = []
    sections = [(k, v) for k, v in tree.items() if k.startswith("GPU ") and isinstance(v, dict)]
    for index, (key, g) in enumerate(sections):
        link = ("PCI", "GPU Link Info")
        gpus.append(GpuFacts(
            index=index,
            name=_clean(_get(g, "Product Name")),
            uuid=_clean(_get(g, "GPU UUID")),
            bus_id=_clean(_get(g, "PCI", "Bus Id")) or key.split(" ", 1)[1],
            memory_total_bytes=_mib(_get(g, "FB Memory Usage", "Total")),
            ecc_enabled=_enabled(_get(g, "ECC Mode", "Current")),
            ecc_uncorrected_volatile=_ecc_sum(g, "Volatile", uncorrectable=True),
            ecc_uncorrected_aggregate=_ecc_sum(g, "Aggregate", uncorrectable=True),
            ecc_corrected_volatile=_ecc_sum(g, "Volatile", uncorrectable=False),
            remapped_rows_pending=_enabled(_get(g, "Remapped Rows", "Pending")),
            remapping_failed=_enabled(_get(g, "Remapped Rows", "Remapping Failure Occurred")),
            sm_clock_mhz=_int(_get(g, "Clocks", "SM")),
            sm_clock_max_mhz=_int(_get(g, "Max Clocks", "SM")),
            mem_clock_max_mhz=_int(_get(g, "Max Clocks", "Memory")),
            power_limit_w=_float(_get(g, "GPU Power Readings", "Current Power Limit")
                                 or _get(g, "Power Readings", "Power Limit")),
            power_default_limit_w=_float(_get(g, "GPU Power Readings", "Default Power Limit")
                                         or _get(g, "Power Readings", "Default Power Limit")),
            persistence_mode=_enabled(_get(g, "Persistence Mode")),
            mig_enabled=_enabled(_get(g, "MIG Mode", "Current")),
            performance_state=_clean(_get(g, "Performance State")),
            pcie_gen_current=_int(_get(g, *link, "PCIe Generation", "Current")),
            pcie_gen_max=_int(_get(g, *link, "PCIe Generation", "Max")),
            pcie_width_current=_int(_get(g, *link, "Link Width", "Current")),
            pcie_width_max=_int(_get(g, *link, "Link Width", "Max")),
        ))
    return head, gpus


def _ecc_sum(g: dict[str, Any], counter: str, *, uncorrectable: bool) -> int | None:
    """Sum the DRAM/SRAM (or older Device/Register File...) counters of one kind.

    Newer drivers list ``SRAM Correctable``, ``SRAM Uncorrectable Parity``, ``DRAM Uncorrectable``;
    older ones ``Single Bit`` / ``Double Bit`` sections with a ``Total`` line.
    """
    node = g.get("ECC Errors", {}).get(counter)
    if not isinstance(node, dict):
        return None
    older = node.get("Double Bit" if uncorrectable else "Single Bit")
    if isinstance(older, dict):
        return _int(older.get("Total"))
    values = [
        _int(v) for k, v in node.items()
        if isinstance(v, str) and ("Uncorrectable" in k) == uncorrectable
        and ("Correctable" in k or "Uncorrectable" in k)
    ]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


# --------------------------------------------------------------------------- --query-gpu CSV


def parse_query_csv(text: str, fields: tuple[str, ...] = QUERY_FIELDS) -> list[GpuFacts]:
    """``--query-gpu=<fields> --format=csv,noheader,nounits`` → GPUs (a header line is skipped)."""
    gpus = []
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not row or row[0].strip() in {"index", ""} or len(row) < len(fields):
            continue
        r = dict(zip(fields, (c.strip() for c in row), strict=False))  # extra trailing cells are ignored
        gpus.append(GpuFacts(
            index=_int(r.get("index")) or 0,
            name=_clean(r.get("name")),
            uuid=_clean(r.get("uuid")),
            bus_id=_clean(r.get("pci.bus_id")),
            memory_total_bytes=_mib(r.get("memory.total")),
            ecc_enabled=_enabled(r.get("ecc.mode.current")),
            ecc_uncorrected_volatile=_int(r.get("ecc.errors.uncorrected.volatile.total")),
            ecc_uncorrected_aggregate=_int(r.get("ecc.errors.uncorrected.aggregate.total")),
            ecc_corrected_volatile=_int(r.get("ecc.errors.corrected.volatile.total")),
            sm_clock_mhz=_int(r.get("clocks.sm")),
            sm_clock_max_mhz=_int(r.get("clocks.max.sm")),
            mem_clock_max_mhz=_int(r.get("clocks.max.memory")),
            power_limit_w=_float(r.get("power.limit")),
            power_default_limit_w=_float(r.get("power.default_limit")),
            persistence_mode=_enabled(r.get("persistence_mode")),
            mig_enabled=_enabled(r.get("mig.mode.current")),
            performance_state=_clean(r.get("pstate")),
            pcie_gen_current=_int(r.get("pcie.link.gen.current")),
            pcie_gen_max=_int(r.get("pcie.link.gen.max")),
            pcie_width_current=_int(r.get("pcie.link.width.current")),
            pcie_width_max=_int(r.get("pcie.link.width.max")),
        ))
    return gpus


def driver_from_query_csv(text: str, fields: tuple[str, ...] = QUERY_FIELDS) -> str | None:
    if "driver_version" not in fields:
        return None
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(row) >= len(fields) and row[0].strip() != "index":
            return _clean(row[fields.index("driver_version")])
    return None


# --------------------------------------------------------------------------- topo -m

_MULTI_WORD = (("CPU", "Affinity"), ("NUMA", "Affinity"), ("GPU", "NUMA", "ID"))


def _header_tokens(line: str) -> list[str]:
    tokens = line.split()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        for words in _MULTI_WORD:
            if tuple(tokens[i:i + len(words)]) == words:
                out.append(" ".join(words))
                i += len(words)
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_topo(text: str) -> Topology | None:
    """``nvidia-smi topo -m`` → link matrix (``X``, ``NV12``, ``PIX``, ``PXB``, ``PHB``, ``NODE``,
    ``SYS``), CPU/NUMA affinity per GPU and the NIC legend (``NIC0: mlx5_0``).

    Driver 580 underlines the header with ANSI escapes even when writing to a pipe (recorded on
    an H200, tests/fixtures/doctor/h200-1x/topo-m.txt); they are stripped first.
    """
    text = _ANSI.sub("", text)
    lines = [ln.rstrip() for ln in text.splitlines()]
    header_i = next((i for i, ln in enumerate(lines) if re.match(r"^\s+GPU0\b", ln)), None)
    if header_i is None:
        return None
    header = _header_tokens(lines[header_i])
    extra = [h for h in header if h in {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"}]
    devices = [h for h in header if h not in extra]
    matrix: dict[str, dict[str, str]] = {}
    cpu: dict[str, str] = {}
    numa: dict[str, str] = {}
    for ln in lines[header_i + 1:]:
        if not ln.strip() or ln.strip().startswith("Legend"):
            break
        cells = ln.split()
        name, values = cells[0], cells[1:]
        if name not in devices:
            continue
        matrix[name] = dict(zip(devices, values[: len(devices)], strict=False))
        rest = values[len(devices):]
        if name.startswith("GPU"):
            if "CPU Affinity" in extra and rest:
                cpu[name] = rest[0]
            if "NUMA Affinity" in extra and len(rest) > 1:
                numa[name] = rest[1]
    nics = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", text, flags=re.M))
    return Topology(tuple(devices), matrix, cpu, numa, nics)


def nv_link_count(cell: str | None) -> int:
    """``NV12`` → 12 bonded NVLinks; anything else → 0."""
    m = re.fullmatch(r"NV(\d+)", cell or "")
    return int(m.group(1)) if m else 0


# --------------------------------------------------------------------------- nvlink --status


def parse_nvlink_status(text: str) -> dict[int, tuple[int, int]]:
    """``nvidia-smi nvlink --status`` → {gpu index: (links listed, links up)}.

    An up link prints its speed (``Link 0: 25 GB/s``); a down one ``Link 0: <inactive>``.
    """
    out: dict[int, list[int]] = {}
    gpu: int | None = None
    for ln in text.splitlines():
        m = re.match(r"^GPU (\d+):", ln)
        if m:
            gpu = int(m.group(1))
            out[gpu] = [0, 0]
            continue
        m = re.match(r"^\s+Link (\d+): (.*)$", ln)
        if m and gpu is not None:
            out[gpu][0] += 1
            if re.search(r"\d+(\.\d+)? GB/s", m.group(2)):
                out[gpu][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}
