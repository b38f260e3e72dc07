"""Alibaba API answers as catalog rows: GPUSpec strings mapped to canonical GPUs (:data:`GPU_SPEC_TABLE`, the
bundled snapshot for internal names), instance rows merged over the bundled instances.csv, price rows."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from gpuplan.providers import base
from gpuplan.providers.alibaba_api import CLOUD, HOME_REGION, _Ctx, source_url
from gpuplan.providers.base import LIVE_PRICE, Row, fmt_num

IN_STOCK = ("WithStock", "ClosedWithStock")  # StatusCategory values that mean "can be bought now"


@dataclass(frozen=True)
class GpuMatch:
    gpu: str
    basis: str  # named | inferred
    note: str = ""


# GPUSpec (upper-cased, "NVIDIA " and any "*1/4"-style slice suffix removed) -> choices by per-GPU memory.
# Each choice: (min GiB, max GiB, canonical id, basis, note). Sources: Alibaba's GPU family pages
# (https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1)
# name the parts; "NVIDIA A100 80G" is the console GPUSpec of gn7e (shared/facts S13); the A100 form
# factor is inferred from NVLink/NVSwitch in the family pages, as in the bundled snapshot.
GPU_SPEC_TABLE: dict[str, tuple[tuple[float, float, str, str, str], ...]] = {
    "A10": ((0, 1e9, "A10-24GB", "named", ""),),
    "A30": ((0, 1e9, "A30-24GB", "named", ""),),
    "A16": ((0, 1e9, "A16-16GB", "named", "one GA107 of an A16 board"),),
    "GA107": ((0, 1e9, "A16-16GB", "named", "GA107 = one GPU of an A16 board"),),
    "A100": ((0, 48, "A100-SXM4-40GB", "inferred", "form factor inferred (NVSwitch per family page)"),
             (48, 1e9, "A100-SXM4-80GB", "inferred", "form factor inferred (NVLink per family page)")),
    "A100 80G": ((0, 1e9, "A100-SXM4-80GB", "inferred", "form factor inferred (NVLink per family page)"),),
    "A100 80GB": ((0, 1e9, "A100-SXM4-80GB", "inferred", "form factor inferred (NVLink per family page)"),),
    "A800": ((0, 48, "A800-PCIe-40GB", "inferred", "form factor not stated"),
             (48, 1e9, "A800-SXM4-80GB", "inferred", "form factor not stated")),
    "H20": ((0, 1e9, "H20-96GB", "named", ""),),
    "H800": ((0, 1e9, "H800-SXM-80GB", "inferred", "form factor not stated"),),
    "L20": ((0, 1e9, "L20-48GB", "named", ""),),
    "L40S": ((0, 1e9, "L40S-48GB", "named", ""),),
    "T4": ((0, 1e9, "T4-16GB", "named", ""),),
    "V100": ((0, 24, "V100-SXM2-16GB", "named", "16 GB V100 = SXM2 (gn6v family page)"),
             (24, 1e9, "V100-SXM2-32GB", "named", "32 GB V100 = SXM2 (gn6e family page)")),
    "P100": ((0, 1e9, "P100-PCIe-16GB", "inferred", "form factor not stated"),),
    "P4": ((0, 1e9, "P4-8GB", "named", ""),),
    "M40": ((0, 1e9, "M40-12GB", "named", ""),),
}


def normalize_spec(spec: str) -> str:
    """'NVIDIA A100 80G' -> 'A100 80G'; 'NVIDIA A10*1/6' -> 'A10'; 'Nvidia  T4 ' -> 'T4'."""
    s = re.sub(r"\s+", " ", (spec or "").strip()).upper()
    s = re.sub(r"^(NVIDIA|TESLA)\s+", "", s)
    s = re.sub(r"^TESLA\s+", "", s)
    s = re.sub(r"\s*[*xX]\s*\d+\s*/\s*\d+$", "", s)
    return s.strip()


def _resolve_with_catalog(spec: str) -> str | None:
    """Fallback: the project's GPU alias resolver, if present. Returns a canonical id or None."""
    try:
        from gpuplan.catalog.hardware.gpus import resolve_gpu  # written by another module; optional here
    except ImportError:
        return None
    try:
        found = resolve_gpu(spec)
    except Exception:  # noqa: BLE001 - unknown names are 'not mapped', never an error here
        return None
    gpu_id = getattr(found, "id", found)
    return gpu_id if isinstance(gpu_id, str) and gpu_id else None


def map_gpu_spec(spec: str, gpu_memory_gib: float | None) -> GpuMatch | None:
    """The canonical GPU for an API ``GPUSpec`` (+ per-GPU memory to split 16/32 GB V100 etc.), or None."""
    key = normalize_spec(spec)
    if not key:
        return None
    mem = float(gpu_memory_gib or 0)
    for lo, hi, gpu, basis, note in GPU_SPEC_TABLE.get(key, ()):
        if mem <= 0 or lo <= mem < hi:
            return GpuMatch(gpu, basis, note)
    resolved = _resolve_with_catalog(spec)
    if resolved:
        return GpuMatch(resolved, "inferred", f"resolved by gpuplan's GPU aliases from {spec!r}")
    return None


# --------------------------------------------------------------------------- bundled snapshot


@functools.cache
def bundled_rows() -> dict[str, Row]:
    """The bundled Alibaba instances.csv by instance type (fields the API does not return come from here)."""
    import csv
    import io

    path = files("gpuplan") / "data" / "clouds" / CLOUD / "instances.csv"
    if not path.is_file():
        return {}
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
    return {r["instance_type"]: dict(r) for r in reader if r.get("instance_type")}


def bundled_family_gpu(family: str) -> Row | None:
    for row in bundled_rows().values():
        if row.get("family") == family:
            return row
    return None


def _map_types(types: dict[str, dict[str, Any]]) -> tuple[dict[str, GpuMatch], set[str]]:
    mapped: dict[str, GpuMatch] = {}
    unmapped: set[str] = set()
    for name, it in types.items():
        spec = str(it.get("GPUSpec") or "")
        match = map_gpu_spec(spec, it.get("GPUMemorySize"))
        if match is None:
            row = bundled_rows().get(name) or bundled_family_gpu(_family(it, name))
            if row and row.get("gpu"):
                how = "this type" if name in bundled_rows() else f"family {row['family']}"
                match = GpuMatch(row["gpu"], "inferred" if row.get("gpu_basis") != "unconfirmed" else "unconfirmed",
                                 f"API GPUSpec {spec!r} is an internal name; GPU taken from the bundled "
                                 f"snapshot's entry for {how}")
        if match is None:
            unmapped.add(name)
        else:
            mapped[name] = match
    return mapped, unmapped


def _price_row(ctx: _Ctx, p: dict[str, Any], as_of: str) -> Row:
    notes = []
    if p["billing"] != "spot" and p["list"] and abs(p["list"] - p["price"]) > 1e-9:
        notes.append(f"list price {p['list']:g}; price is the account's TradePrice")
    if p["note"]:
        notes.append(p["note"])
    notes.append("Linux; live refresh")
    return {"instance_type": p["instance_type"], "region": p["region"], "billing": p["billing"],
            "price": fmt_num(p["price"], 6), "unit": p["unit"], "currency": p["currency"], "as_of": as_of,
            "source": source_url(ctx.clients[p["region"]], p["region"], p["action"]),
            "confidence": "confirmed", "notes": "; ".join(notes), **LIVE_PRICE}


def _instance_row(it: dict[str, Any], match: GpuMatch, by_region: dict[str, Any], clients: dict[str, Any],
                  as_of: str) -> Row:
    name = str(it["InstanceTypeId"])
    old = bundled_rows().get(name)
    row = dict(old) if old else base.blank_instance_row()
    family = _family(it, name)
    kind = row.get("kind") or _kind(family)
    in_stock = sorted(r for r, modes in by_region.items()
                      if any(z.get("category") in IN_STOCK
                             for m in modes.values() for z in m.get(name, {}).values()))
    listed = sorted(r for r, modes in by_region.items() if any(name in m for m in modes.values()))
    api = {
        "instance_type": name, "family": family, "kind": kind, "gpu": match.gpu,
        "vcpus": fmt_num(it.get("CpuCoreCount")), "memory_gib": fmt_num(it.get("MemorySize")),
        "gpu_basis": match.basis,
    }
    if kind != "vgpu" or not old:  # vGPU slices: the API's whole-number GPUAmount says less than the bundle
        api["gpu_count"] = fmt_num(it.get("GPUAmount"))
        api["gpu_memory_gib"] = fmt_num(it.get("GPUMemorySize"))
    bw_kbit = it.get("InstanceBandwidthRx")
    if bw_kbit:
        # Kbit/s -> Gbit/s with 1024 Kbit per Mbit, as Alibaba's tables round (16 Gbit/s = 16384000).
        api["network_gbit_s"] = fmt_num(float(bw_kbit) / 1024 / 1000, 2)
    if it.get("InstancePpsRx"):
        api["pps"] = fmt_num(it.get("InstancePpsRx"))
    if it.get("PhysicalProcessorModel"):
        api["cpu"] = str(it["PhysicalProcessorModel"])
    if it.get("LocalStorageAmount") and it.get("LocalStorageCapacity"):
        api["local_disk_gib"] = fmt_num(float(it["LocalStorageAmount"]) * float(it["LocalStorageCapacity"]))
    elif not old:
        api["local_disk_gib"] = "0"
    if (it.get("EriQuantity") or 0) and not row.get("rdma"):
        api["rdma"] = "erdma"
    row.update({k: v for k, v in api.items() if v != ""})
    status = row.get("status") or ""
    # stock proves the type is sold, not which GPU it has: a type whose GPU is unconfirmed (a stand-in id for
    # an internal GPUSpec such as 'G49') stays unconfirmed, ranked only when asked
    if in_stock and status in ("", "unconfirmed", "retired") and not (status == "unconfirmed"
                                                                      and match.basis == "unconfirmed"):
        status = "ga"
    row["status"] = status or "unconfirmed"
    if row.get("gpu") == "" or not row.get("gpu_count"):
        row["gpu_count"] = row.get("gpu_count") or "1"
    unconf = [u for u in (row.get("unconfirmed") or "").split(";") if u and u not in api]
    if match.basis == "unconfirmed" and "gpu" not in unconf:
        unconf.append("gpu")
    row["unconfirmed"] = ";".join(unconf)
    api_sources = [source_url(clients[HOME_REGION], HOME_REGION, "DescribeInstanceTypes")]
    row["sources"] = ";".join(dict.fromkeys(api_sources + [s for s in (row.get("sources") or "").split(";") if s]))
    region_text = (f"in stock ({as_of}): {', '.join(in_stock)}" if in_stock else f"no stock found ({as_of})")
    if listed and listed != in_stock:
        region_text += f"; listed: {', '.join(listed)}"
    row["region_notes"] = region_text
    note_bits = [b for b in (match.note, (old or {}).get("notes", "")) if b]
    note_bits.append(f"live refresh {as_of}: API GPUSpec {str(it.get('GPUSpec') or '')!r}"
                     + ("" if old else "; type not in the bundled snapshot (fields the API lacks are empty)"))
    row["notes"] = "; ".join(note_bits)
    return {c: row.get(c, "") for c in base.INSTANCE_COLUMNS}


def _family(it: dict[str, Any], name: str) -> str:
    fam = str(it.get("InstanceTypeFamily") or "")
    if not fam:
        m = re.match(r"^ecs\.([a-z0-9-]+?)(?:-c\d+g\d+|-\d+x)?\.", name)
        fam = m.group(1) if m else name
    return fam[4:] if fam.startswith("ecs.") else fam


def _kind(family: str) -> str:
    """vm | bare-metal | vgpu | scc from Alibaba's family naming (EGS instance naming conventions)."""
    if family.startswith("ebm"):
        return "bare-metal"
    if family.startswith("scc"):
        return "scc"
    if family.startswith(("vgn", "sgn")):
        return "vgpu"
    return "vm"
