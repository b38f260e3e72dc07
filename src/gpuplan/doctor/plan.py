"""What the machine should be: the plan bundle's ``plan.json`` and the catalog records it names.

Tolerant by design: a key the plan lacks turns the matching check into "skip (not in plan)".
The catalog is reached through two functions (``gpuplan.catalog.hardware.gpus.resolve_gpu`` and
``gpuplan.catalog.hardware.instances.get_instance``); tests replace :class:`Expectations` wholesale.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


@dataclass(frozen=True)
class Expectations:
    """Everything the checks compare against; every field may be None (unknown / not planned)."""

    instance_type: str | None = None
    instance_count: int | None = None
    gpu_id: str | None = None
    gpus_per_node: int | None = None
    interconnect: str | None = None  # nvswitch | nvlink | pcie | pcie-switch
    rdma: str | None = None  # erdma | roce | efa | ib
    disk_bandwidth_mb_s: float | None = None  # the instance's cap
    data_disk_gib: float | None = None
    required_read_mb_s: float | None = None
    min_driver_version: str | None = None
    cuda_version: str | None = None
    precision: str | None = None
    vcpus: int | None = None
    memory_gib: float | None = None
    gpu_spec: Any | None = None  # catalog GpuSpec of the planned GPU
    has_plan: bool = False


def load_plan(plan_dir: pathlib.Path) -> dict[str, Any]:
    path = pathlib.Path(plan_dir)
    if path.is_dir():
        path = path / "plan.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GpuplanError(_("No plan.json in {plan_dir}.").format(plan_dir=plan_dir),
                           hint=_("Pass the folder written by `gpuplan plan ... --out DIR`.")) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GpuplanError(_("Cannot read {path}: {exc}.").format(path=path, exc=exc), hint=_("Regenerate the plan bundle.")) from None
    if not isinstance(doc, dict):
        raise GpuplanError(_("{path} is not a JSON object.").format(path=path), hint=_("Regenerate the plan bundle."))
    return doc


def resolve_gpu_spec(name: str | None) -> Any | None:
    """Catalog GpuSpec for an id or an nvidia-smi product name, or None when unknown."""
    if not name:
        return None
    try:
        from gpuplan.catalog.hardware.gpus import resolve_gpu  # noqa: PLC0415 - catalog loads lazily
        spec, _note = resolve_gpu(name)
    except Exception:  # noqa: BLE001 - unknown name, or catalog not available
        return None
    return spec


def lookup_instance(name: str | None) -> Any | None:
    if not name:
        return None
    try:
        from gpuplan.catalog.hardware.instances import get_instance  # noqa: PLC0415
        return get_instance(name)
    except Exception:  # noqa: BLE001
        return None


def _num(value: Any) -> float | None:
    try:
        return None if value is None or value == "" else float(value)
    except (TypeError, ValueError):
        return None


def expectations(doc: dict[str, Any] | None) -> Expectations:
    """Flatten plan.json (+ catalog) into what the checks need."""
    if not doc:
        return Expectations()
    plan = doc.get("plan") or {}
    workload = doc.get("workload") or {}
    storage = plan.get("storage") or {}
    ops = plan.get("ops") or {}
    itype = plan.get("instance_type")
    inst = lookup_instance(itype)
    count = _num(plan.get("instance_count"))
    gpu_id = plan.get("gpu") or getattr(inst, "gpu", None)
    per_node = _num(getattr(inst, "gpu_count", None))
    total = _num(plan.get("gpus_total"))
    if per_node is None and total and count:
        per_node = total / count
    return Expectations(
        instance_type=itype,
        instance_count=int(count) if count else None,
        gpu_id=gpu_id,
        gpus_per_node=int(per_node) if per_node and per_node >= 1 else None,
        interconnect=getattr(inst, "interconnect", None) or (plan.get("network") or {}).get("interconnect"),
        rdma=getattr(inst, "rdma", None) or (plan.get("network") or {}).get("rdma"),
        disk_bandwidth_mb_s=_num(getattr(inst, "disk_bandwidth_mb_s", None)),
        # the recommender writes storage.disk.size_gib and storage.read_mb_s; older plans used flat keys
        data_disk_gib=_num(storage.get("data_disk_gib", (storage.get("disk") or {}).get("size_gib")
                                        if isinstance(storage.get("disk"), dict) else None)),
        required_read_mb_s=_num(storage.get("required_read_mb_s", storage.get("read_mb_s"))),
        min_driver_version=str(ops["min_driver_version"]) if ops.get("min_driver_version") else None,
        cuda_version=str(ops["cuda_version"]) if ops.get("cuda_version") else None,
        precision=workload.get("precision"),
        vcpus=int(v) if (v := _num(getattr(inst, "vcpus", None))) else None,
        memory_gib=_num(getattr(inst, "memory_gib", None)),
        gpu_spec=resolve_gpu_spec(gpu_id),
        has_plan=True,
    )
