"""Cloud GPU instance types: the bundled catalog, overlaid by the live-refresh cache.

Data: ``data/clouds/<cloud>/instances.csv`` and ``families.yaml`` (schema in docs/catalog-schema.md).
The Alibaba snapshot is transcribed from Alibaba Cloud's GPU instance-family pages, e.g.
https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1
(each row carries its own ``sources``). Files are read lazily, once, never at import time.

Overlay: the bundled CSV first, then the cached ``instances.csv`` when there is one (the live
refresh's snapshot, see :func:`cache_file`; the same schema); a later row with the same ``instance_type`` replaces
an earlier one. Per-region availability is *not* captured here: ``gpuplan.catalog.hardware.query.filter_instances(region=...)``
keeps the types that have a price in that region, nothing more.
"""

from __future__ import annotations

import csv
import functools
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.errors import GpuplanError, unknown_name_error
from gpuplan.i18n import N_, _

DEFAULT_CLOUD = "alibaba"
CACHE_ENV = "GPUPLAN_CACHE_DIR"
LIST_COMMAND = "gpuplan instances"

INSTANCE_COLUMNS: tuple[str, ...] = (
    "instance_type", "family", "kind", "gpu", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib",
    "network_gbit_s", "network_burst_gbit_s", "pps", "rdma", "rdma_gbit_s", "interconnect",
    "nvlink_gb_s", "disk_iops", "disk_bandwidth_mb_s", "local_disk_gib", "status", "gpu_basis",
    "cpu", "region_notes", "unconfirmed", "sources", "notes",
)
KINDS = ("vm", "bare-metal", "vgpu", "scc")
STATUSES = ("ga", "preview", "ticket", "not-recommended", "retired", "unconfirmed")
# the statuses and GPU bases as text output names them (msgids; JSON keeps the codes)
STATUS_NAMES = {"ga": N_("ga"), "preview": N_("preview"), "ticket": N_("ticket"),
                "not-recommended": N_("not-recommended"), "retired": N_("retired"), "unconfirmed": N_("unconfirmed"),
                "inferred": N_("inferred"), "named": N_("named")}
GPU_BASES = ("named", "inferred", "unconfirmed")
RDMA_KINDS = ("erdma", "roce", "efa", "ib")
INTERCONNECTS = ("nvswitch", "nvlink", "pcie", "pcie-switch")

# Numeric columns: name -> integer?  Empty cell = unknown (None).
_FLOAT_COLUMNS = ("gpu_count", "gpu_memory_gib", "memory_gib", "network_gbit_s", "network_burst_gbit_s",
                  "rdma_gbit_s", "nvlink_gb_s", "local_disk_gib")
_INT_COLUMNS = ("vcpus", "pps", "disk_iops", "disk_bandwidth_mb_s")
# Columns a row may not leave empty.
_REQUIRED_VALUES = ("instance_type", "family", "kind", "gpu", "gpu_count", "status", "gpu_basis", "sources")


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class InstanceType:
    """One purchasable instance type. Units are in the field names; None = not published/unknown.

    ``gpu_memory_gib`` is per GPU (per slice for vGPU) as the cloud publishes it (Alibaba's nominal
    "GB"); ``gpu_count`` is fractional for vGPU slices (1/12 of an A10 -> 0.0833).
    """

    cloud: str
    instance_type: str
    family: str
    kind: str
    gpu: str
    gpu_count: float
    gpu_memory_gib: float | None
    vcpus: int | None
    memory_gib: float | None
    network_gbit_s: float | None
    network_burst_gbit_s: float | None
    pps: int | None
    rdma: str
    rdma_gbit_s: float | None
    interconnect: str
    nvlink_gb_s: float | None
    disk_iops: int | None
    disk_bandwidth_mb_s: int | None
    local_disk_gib: float | None
    status: str
    gpu_basis: str
    cpu: str
    region_notes: str
    unconfirmed: tuple[str, ...]
    sources: tuple[str, ...]
    notes: str

    @property
    def is_vgpu(self) -> bool:
        """A slice of a GPU (or any type of the vGPU kind, which runs a GRID vGPU stack)."""
        return self.gpu_count < 1 or self.kind == "vgpu"

    @property
    def gpus(self) -> int:
        """Whole GPUs usable for training/serving: 0 for a fractional slice."""
        if self.gpu_count < 1 or not float(self.gpu_count).is_integer():
            return 0
        return int(self.gpu_count)

    @property
    def short_name(self) -> str:
        """The name without the ``ecs.`` prefix (``gn7i-c8g1.2xlarge``)."""
        return _strip_prefix(self.instance_type)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        out["is_vgpu"] = self.is_vgpu
        out["gpus"] = self.gpus
        return out


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class Family:
    """One instance family from ``families.yaml``."""

    cloud: str
    family: str
    kind: str
    gpu: str
    gpu_basis: str
    description: str
    cpu: str
    status: str
    notes: str
    unconfirmed: tuple[str, ...]
    sources: tuple[str, ...]
    # Elastic RDMA Interfaces a node needs for the family's full eRDMA rate (on different NIC indexes; 1 = one ERI)
    rdma_interfaces: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


# --------------------------------------------------------------------------- paths and cache


def data_root():
    return files("gpuplan") / "data"


def default_cache_dir() -> Path:
    """``$GPUPLAN_CACHE_DIR``, else the platform cache folder; the live refresh writes there too."""
    from gpuplan.providers.cache import default_cache_dir as refresh_cache_dir  # one definition, shared

    return refresh_cache_dir()


def cache_file(cloud: str, name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """The cached overlay ``name``: the live refresh's snapshot in use, checked against its manifest
    (gpuplan.providers.cache.overlay_file), else ``<cache_dir>/clouds/<cloud>/<name>`` (may not exist)."""
    from gpuplan.providers.cache import overlay_file

    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return overlay_file(root, cloud, name) or root / "clouds" / cloud / name


def _stamp(path: Path) -> int | None:
    """mtime of an overlay file (part of the load cache key, so a refresh is picked up)."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def clear_cache() -> None:
    """Forget loaded catalogs (after a live refresh, or in tests)."""
    _load_cloud.cache_clear()
    load_families.cache_clear()
    available_clouds.cache_clear()
    load_sources.cache_clear()   # (regions.yaml is bundled only: catalog/hardware/regions.py caches it for good)


# --------------------------------------------------------------------------- parsing helpers


def _strip_prefix(name: str) -> str:
    name = name.strip()
    return name[4:] if name.lower().startswith("ecs.") else name


def _split(cell: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in (cell or "").split(";") if p.strip())


def parse_number(raw: str | None, column: str, where: str, *, integer: bool = False) -> float | int | None:
    """A non-negative number from a CSV cell; empty -> None; anything else -> GpuplanError."""
    text = (raw or "").strip().replace("_", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise GpuplanError(_("{where}: column {column!r} is not a number: {raw!r}.").format(where=where, column=column, raw=raw),
                           hint=_("Use plain digits (e.g. 16 or 0.0833); leave the cell empty when unknown.")) from None
    if not math.isfinite(value) or value < 0:
        raise GpuplanError(_("{where}: column {column!r} must be a finite number >= 0, got {raw!r}.").format(where=where, column=column, raw=raw),
                           hint=_("Leave the cell empty when the value is unknown."))
    if integer:
        if not value.is_integer():
            raise GpuplanError(_("{where}: column {column!r} must be a whole number, got {raw!r}.").format(where=where, column=column, raw=raw), hint="")
        return int(value)
    return value


def check_choice(raw: str | None, column: str, allowed: Iterable[str], where: str, *, empty_ok: bool) -> str:
    value = (raw or "").strip()
    allowed = tuple(allowed)
    if (empty_ok and not value) or value in allowed:
        return value
    raise GpuplanError(_("{where}: column {column!r} has unknown value {value!r}.").format(where=where, column=column, value=value),
                       hint=(_("Allowed: {values} or empty.") if empty_ok else _("Allowed: {values}.")).format(
                           values=", ".join(allowed)))


def read_csv_rows(text: str, source: str, required_columns: Iterable[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV file as (line number, row by header name); checks that required columns exist."""
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    reader.fieldnames = header
    missing = [c for c in required_columns if c not in header]
    if missing:
        raise GpuplanError(_("{source}: missing column(s) {missing}.").format(source=source, missing=', '.join(missing)),
                           hint=_("See docs/catalog-schema.md for the columns of this file."))
    rows = []
    for row in reader:
        if None in row:
            raise GpuplanError(_("{source}, line {line_num}: more cells than header columns.").format(source=source, line_num=reader.line_num),
                               hint=_("Quote cells that contain commas."))
        if not any((v or "").strip() for v in row.values()):
            continue
        rows.append((reader.line_num, {k: (v or "").strip() for k, v in row.items()}))
    return rows


def _parse_instance(row: dict[str, str], cloud: str, where: str) -> InstanceType:
    for col in _REQUIRED_VALUES:
        if not row.get(col):
            raise GpuplanError(_("{where}: column {col!r} is empty.").format(where=where, col=col),
                               hint=_("Every instance row needs instance_type, family, kind, gpu, gpu_count, status, gpu_basis and at least one source URL."))
    values: dict[str, Any] = {c: parse_number(row.get(c), c, where) for c in _FLOAT_COLUMNS}
    values.update({c: parse_number(row.get(c), c, where, integer=True) for c in _INT_COLUMNS})
    if values["gpu_count"] <= 0:
        raise GpuplanError(_("{where}: gpu_count must be > 0.").format(where=where), hint=_("Use 0.25 for a 1/4 vGPU slice."))
    unconfirmed = _split(row.get("unconfirmed", ""))
    bad = [u for u in unconfirmed if u not in INSTANCE_COLUMNS]
    if bad:
        raise GpuplanError(_("{where}: 'unconfirmed' names unknown column(s) {bad}.").format(where=where, bad=', '.join(bad)),
                           hint=_("List column names separated by ';'."))
    return InstanceType(
        cloud=cloud,
        instance_type=row["instance_type"],
        family=_strip_prefix(row["family"]),
        kind=check_choice(row["kind"], "kind", KINDS, where, empty_ok=False),
        gpu=row["gpu"],
        rdma=check_choice(row.get("rdma"), "rdma", RDMA_KINDS, where, empty_ok=True),
        interconnect=check_choice(row.get("interconnect"), "interconnect", INTERCONNECTS, where, empty_ok=True),
        status=check_choice(row["status"], "status", STATUSES, where, empty_ok=False),
        gpu_basis=check_choice(row["gpu_basis"], "gpu_basis", GPU_BASES, where, empty_ok=False),
        cpu=row.get("cpu", ""),
        region_notes=row.get("region_notes", ""),
        unconfirmed=unconfirmed,
        sources=_split(row["sources"]),
        notes=row.get("notes", ""),
        **values,
    )


def parse_instances_csv(text: str, cloud: str, source: str) -> list[InstanceType]:
    """Parse an instances.csv (bundled, cache or hand-written); malformed -> GpuplanError naming file and line."""
    return [_parse_instance(row, cloud, f"{source}, line {line}")
            for line, row in read_csv_rows(text, source, INSTANCE_COLUMNS)]


# --------------------------------------------------------------------------- loaders


@functools.cache
def available_clouds() -> tuple[str, ...]:
    """Clouds with a bundled catalog (the folders under ``data/clouds/``; the package's own files, listed once)."""
    root = data_root() / "clouds"
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "instances.csv").is_file()))


def check_cloud(cloud: str) -> str:
    name = (cloud or "").strip().lower()
    if name not in available_clouds():
        raise unknown_name_error("cloud", cloud, available_clouds(), LIST_COMMAND)
    return name


@functools.cache
def _load_cloud(cloud: str, overlay: str | None, _stamp_ns: int | None) -> tuple[InstanceType, ...]:
    bundled = data_root() / "clouds" / cloud / "instances.csv"
    merged: dict[str, InstanceType] = {}
    layers = [(bundled.read_text(encoding="utf-8"), f"bundled data/clouds/{cloud}/instances.csv")]
    if overlay is not None:
        try:
            layers.append((Path(overlay).read_text(encoding="utf-8"), overlay))
        except (OSError, UnicodeDecodeError) as exc:
            raise GpuplanError(_("Cannot read the cached catalog {overlay}: {exc}.").format(overlay=overlay, exc=exc),
                               hint=_("Delete the file or run the live refresh again.")) from None
    for text, source in layers:
        for inst in parse_instances_csv(text, cloud, source):
            merged[inst.instance_type.lower()] = inst
    return tuple(merged.values())


def load_instances(cloud: str = DEFAULT_CLOUD, cache_dir: str | os.PathLike | None = None) -> dict[str, InstanceType]:
    """All instance types of a cloud by name (``ecs.gn7i-c8g1.2xlarge``), cache overlay applied.

    ``cache_dir`` None means ``GPUPLAN_CACHE_DIR`` or the platform cache folder.
    """
    cloud = check_cloud(cloud)
    path = cache_file(cloud, "instances.csv", cache_dir)
    stamp = _stamp(path)
    overlay = str(path) if stamp is not None else None
    return {inst.instance_type: inst for inst in _load_cloud(cloud, overlay, stamp)}


@functools.cache
def load_families(cloud: str = DEFAULT_CLOUD) -> dict[str, Family]:
    """The families of a cloud (from ``families.yaml``) by family name (``gn7i``)."""
    cloud = check_cloud(cloud)
    source = f"bundled data/clouds/{cloud}/families.yaml"
    path = data_root() / "clouds" / cloud / "families.yaml"
    if not path.is_file():
        return {}
    entries = load_data(path) or []
    out: dict[str, Family] = {}
    for i, e in enumerate(entries, start=1):
        where = f"{source}, entry {i}"
        if not isinstance(e, dict) or not all(e.get(k) for k in ("family", "kind", "gpu", "status", "sources")):
            raise GpuplanError(_("{where}: needs family, kind, gpu, status and sources.").format(where=where), hint="")
        fam = Family(
            cloud=cloud, family=_strip_prefix(str(e["family"])),
            kind=check_choice(e["kind"], "kind", KINDS, where, empty_ok=False), gpu=str(e["gpu"]),
            gpu_basis=check_choice(e.get("gpu_basis"), "gpu_basis", GPU_BASES, where, empty_ok=False),
            description=str(e.get("description") or ""), cpu=str(e.get("cpu") or ""),
            status=check_choice(e["status"], "status", STATUSES, where, empty_ok=False),
            notes=str(e.get("notes") or ""), unconfirmed=tuple(e.get("unconfirmed") or ()),
            sources=tuple(e["sources"]), rdma_interfaces=int(e.get("rdma_interfaces") or 1),
        )
        out[fam.family] = fam
    return out


@functools.cache
def load_sources() -> dict[str, dict[str, Any]]:
    """Short source ids (S1, S2, ...) -> {title, url, official, label?} from ``data/sources.yaml``."""
    path = data_root() / "sources.yaml"
    return dict(load_data(path) or {}) if path.is_file() else {}


# --------------------------------------------------------------------------- lookups


def _clouds(cloud: str | None) -> tuple[str, ...]:
    return (check_cloud(cloud),) if cloud else available_clouds()


def get_instance(name: str, cloud: str | None = None, cache_dir: str | os.PathLike | None = None) -> InstanceType:
    """Look an instance type up by name: case-insensitive, with or without the ``ecs.`` prefix."""
    wanted = _strip_prefix(str(name)).lower()
    choices: list[str] = []
    for c in _clouds(cloud):
        for inst in load_instances(c, cache_dir).values():
            if _strip_prefix(inst.instance_type).lower() == wanted:
                return inst
            choices.append(inst.instance_type)
    raise unknown_name_error("instance type", name, choices, LIST_COMMAND)


def find_family(name: str, cloud: str | None = None, cache_dir: str | os.PathLike | None = None) -> Family:
    """Look a family up by name (``gn7i`` or ``ecs.gn7i``), case-insensitive."""
    wanted = _strip_prefix(str(name)).lower()
    choices: list[str] = []
    for c in _clouds(cloud):
        families = dict(load_families(c))
        # A family that only appears in a refreshed cache still resolves, described by its first type.
        for inst in load_instances(c, cache_dir).values():
            if inst.family not in families:
                families[inst.family] = Family(c, inst.family, inst.kind, inst.gpu, inst.gpu_basis, "", inst.cpu,
                                               inst.status, "", (), inst.sources)
        for fam in families.values():
            if fam.family.lower() == wanted:
                return fam
            choices.append(fam.family)
    raise unknown_name_error("instance family", name, choices, LIST_COMMAND)
