"""The GPU catalog: ``data/gpus.yaml`` loaded lazily into frozen :class:`GpuSpec` records.

Every tensor figure is dense (no 2:4 sparsity); the YAML header and ``docs/hardware-facts.md``
give the conventions and sources. Names resolve through :func:`resolve_gpu`, which accepts
canonical ids, aliases (including the exact ``nvidia-smi`` / ``torch.cuda.get_device_name()``
product strings) and partial names such as ``"A100"`` or ``"a100 80g"``; for a partial name it picks
the documented default part and says what it assumed.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.errors import GpuplanError, unknown_name_error
from gpuplan.units import GIB, MIB
from gpuplan.i18n import N_, _

# When nvidia-smi's memory.total is unknown, usable capacity = nominal GiB x this factor.
# 15/16 is the conservative end of what drivers report: GDDR6 parts with ECC expose ~93.7 %
# (A10 23028/24576, L40S 46068/49152, T4 15360/16384) while HBM parts expose 99.5-100 %
# (H100 81559/81920, A100 81920/81920).
# The 'assumed' notes of partial GPU names in data/gpus.yaml (msgids: shown translated under --lang zh).
_ASSUMED_NOTES = (
    N_("form factor and memory not given; SXM2 16GB assumed (the smaller part, so a plan never overestimates memory)"),
    N_("form factor and memory not given; SXM4 80GB assumed"), N_("form factor not given; PCIe assumed"),
    N_("form factor not given; SXM2 assumed"), N_("form factor not given; SXM4 assumed"),
    N_("form factor not given; SXM5 assumed"), N_("generation not given; RTX 6000 Ada Generation assumed"),
    N_("memory not given; 16GB assumed (the smaller part)"), N_("memory not given; 80GB assumed"),
    N_("memory not given; Alibaba's 72GB Blackwell part assumed"),
)
UNKNOWN_DRIVER_MEMORY_FACTOR = 15 / 16

# dtype -> GpuSpec field holding its dense peak (TFLOPS, or TOPS for integers).
DTYPE_FIELDS: dict[str, str] = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_dense_tflops",
    "fp16": "fp16_dense_tflops",
    "bf16": "bf16_dense_tflops",
    "fp8": "fp8_dense_tflops",
    "int8": "int8_dense_tops",
    "fp4": "fp4_dense_tflops",
}

# INT4 tensor rate / INT8 tensor rate, per architecture with an INT4 tensor path. NVIDIA datasheets:
# T4 260/130, A10 500/250, A100 1248/624, L40 724/362, RTX 4090 1321.2/660.6. Hopper and Blackwell
# datasheets list no INT4 tensor rate (absent here -> None).
INT4_PER_INT8: dict[str, float] = {"Turing": 2.0, "Ampere": 2.0, "Ada Lovelace": 2.0}

PEAK_DTYPES: tuple[str, ...] = (*DTYPE_FIELDS, "int4")

_LIST_FIELDS = ("aliases", "sources", "unconfirmed")
_TEXT_FIELDS = ("id", "name", "vendor", "architecture", "form_factor", "memory_type", "notes")
_NUMBER_FIELDS = (
    "memory_gib",
    "mem_bandwidth_gb_s",
    "fp32_tflops",
    "tf32_dense_tflops",
    "fp16_dense_tflops",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "int8_dense_tops",
    "fp4_dense_tflops",
    "nvlink_gb_s",
    "tdp_w",
)
_INT_FIELDS = ("driver_memory_mib", "pcie_gen", "mig_instances")
_NOT_IN_YAML = ("sustained_tensor_fraction",)   # inline GPUs only (GpuSpec)
# Every estimate reads the memory bandwidth (decode, optimizer step, weight streaming): never null.
_REQUIRED_NOT_NULL = ("id", "name", "vendor", "architecture", "form_factor", "memory_gib", "mem_bandwidth_gb_s",
                      "mig_instances")
_FIX_HINT = N_("Fix src/gpuplan/data/gpus.yaml (see docs/hardware-facts.md for the schema).")


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class GpuSpec:
    """One GPU part. Tensor figures are dense peaks; ``None`` means the GPU has no such path."""

    id: str
    name: str
    vendor: str
    architecture: str
    compute_capability: str | None
    form_factor: str
    memory_gib: float  # nominal datasheet "GB"
    memory_type: str | None
    driver_memory_mib: int | None  # nvidia-smi memory.total
    mem_bandwidth_gb_s: float
    fp32_tflops: float | None  # non-tensor
    tf32_dense_tflops: float | None
    fp16_dense_tflops: float | None
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    int8_dense_tops: float | None
    fp4_dense_tflops: float | None
    nvlink_gb_s: float | None  # total bidirectional per GPU
    pcie_gen: int | None
    tdp_w: float | None
    mig_instances: int  # 0 = no MIG
    aliases: tuple[str, ...]
    sources: tuple[str, ...]
    unconfirmed: tuple[str, ...]
    notes: str
    # A card described inline (catalog/hardware/gpu_inline.py) may declare the share of its datasheet tensor rate it
    # sustains under a long GEMM load; a catalog card's comes from data/efficiency.yaml sustained_tensor
    # (estimate/clocks.py). Not a gpus.yaml field.
    sustained_tensor_fraction: float | None = None

    @property
    def mig(self) -> bool:
        """True when the GPU supports Multi-Instance GPU (NVIDIA MIG user guide)."""
        return self.mig_instances > 0

    @property
    def capacity_bytes(self) -> int:
        """Usable memory as the driver reports it (nvidia-smi memory.total).

        Falls back to ``memory_gib * GiB * UNKNOWN_DRIVER_MEMORY_FACTOR`` when no reading is known.
        """
        if self.driver_memory_mib is not None:
            return int(self.driver_memory_mib * MIB)
        return int(self.memory_gib * GIB * UNKNOWN_DRIVER_MEMORY_FACTOR)

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for ``dtype`` (fp32 = non-tensor FP32); None if the GPU has no such path.

        int4 is derived as ``int8 x INT4_PER_INT8[architecture]`` (see the table's sources).
        """
        key = str(dtype).strip().lower()
        if key == "int4":
            ratio = INT4_PER_INT8.get(self.architecture)
            if ratio is None or self.int8_dense_tops is None:
                return None
            return self.int8_dense_tops * ratio
        field_name = DTYPE_FIELDS.get(key)
        if field_name is None:
            raise GpuplanError(
                _("Unknown dtype {dtype!r} for peak throughput.").format(dtype=dtype),
                hint=_("Use one of: {PEAK_DTYPES}.").format(PEAK_DTYPES=', '.join(PEAK_DTYPES)),
            )
        return getattr(self, field_name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: every field (lists for tuples) plus ``mig`` and ``capacity_bytes``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        out["mig"] = self.mig
        out["capacity_bytes"] = self.capacity_bytes
        return out


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class PartialName:
    """A name that leaves the part open (form factor or memory) and the documented default."""

    name: str
    gpu: str
    assumed: str


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class _Catalog:
    """The GPU catalog and its name indexes."""

    gpus: dict[str, GpuSpec]
    partial: dict[str, PartialName]  # stripped key -> default
    exact: dict[str, str]  # full key -> gpu id
    stripped: dict[str, str]  # key without vendor prefixes -> gpu id


# ------------------------------------------------------------------------------------ name keys

_PREFIXES = ("nvidia", "tesla", "geforce")


@functools.lru_cache(maxsize=4096)
def _name_key(name: str) -> str:
    """Case-, space-, dash- and underscore-insensitive key; a bare "80G"/"80GiB" token means "80GB"."""
    tokens = [t for t in re.split(r"[\s_\-/]+", name.strip().lower()) if t]
    out = []
    for tok in tokens:
        m = re.fullmatch(r"(\d+)(?:g|gib)", tok)
        out.append(f"{m.group(1)}gb" if m else tok)
    return "".join(out)


def _strip_prefixes(key: str) -> str:
    """Drop leading vendor/brand words ("nvidia", "tesla", "geforce") from a name key."""
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if key.startswith(prefix) and len(key) > len(prefix):
                key = key[len(prefix) :]
                changed = True
    return key


# ------------------------------------------------------------------------------------ parsing


def _fail(entry_id: object, problem: str) -> GpuplanError:
    return GpuplanError(_("Malformed GPU catalog entry {entry_id!r}: {problem}.").format(entry_id=entry_id, problem=problem), hint=_(_FIX_HINT))


def _is_number(value: object) -> bool:
    """A finite int or float (an int too large for a float, 10**400, is not a usable figure either)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _parse_entry(raw: object) -> GpuSpec:
    if not isinstance(raw, dict):
        raise _fail(None, "each entry must be a mapping")
    entry_id = raw.get("id")
    names = [f.name for f in fields(GpuSpec) if f.name not in _NOT_IN_YAML]
    missing = [n for n in names if n not in raw]
    extra = [k for k in raw if k not in names]
    if missing:
        raise _fail(entry_id, f"missing fields {missing}")
    if extra:
        raise _fail(entry_id, f"unknown fields {extra}")
    for n in _REQUIRED_NOT_NULL:
        if raw[n] is None:
            raise _fail(entry_id, f"{n} must not be empty")
    for n in _TEXT_FIELDS:
        if raw[n] is not None and not isinstance(raw[n], str):
            raise _fail(entry_id, f"{n} must be text")
    for n in _NUMBER_FIELDS:
        if raw[n] is not None and (not _is_number(raw[n]) or raw[n] < 0):
            raise _fail(entry_id, f"{n} must be a non-negative number or null")
    for n in _INT_FIELDS:
        v = raw[n]
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise _fail(entry_id, f"{n} must be a non-negative integer or null")
    cc = raw["compute_capability"]
    if cc is not None and not (isinstance(cc, str) and re.fullmatch(r"\d+\.\d+", cc)):
        raise _fail(entry_id, 'compute_capability must be a string like "8.0" or null')
    for n in _LIST_FIELDS:
        if not isinstance(raw[n], list) or not all(isinstance(x, str) and x.strip() for x in raw[n]):
            raise _fail(entry_id, f"{n} must be a list of non-empty strings")
    if not raw["sources"]:
        raise _fail(entry_id, "every entry needs at least one source URL")
    if not all(s.startswith(("https://", "http://")) for s in raw["sources"]):
        raise _fail(entry_id, "sources must be URLs")
    bad = [u for u in raw["unconfirmed"] if u not in names]
    if bad:
        raise _fail(entry_id, f"unconfirmed names unknown fields {bad}")
    values: dict[str, Any] = {n: tuple(raw[n]) if n in _LIST_FIELDS else raw[n] for n in names}
    for n in _NUMBER_FIELDS:
        if values[n] is not None:
            values[n] = float(values[n])
    values["notes"] = values["notes"] or ""
    return GpuSpec(**values)


def _add_key(index: dict[str, str], key: str, gpu_id: str, label: str) -> None:
    if not key:
        raise _fail(gpu_id, f"name {label!r} is empty after normalisation")
    owner = index.setdefault(key, gpu_id)
    if owner != gpu_id:
        raise _fail(gpu_id, f"name {label!r} is also a name of {owner}")


def parse_gpu_catalog(data: object) -> _Catalog:
    """Validate the parsed YAML document and build the lookup indexes (raises GpuplanError)."""
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
        raise GpuplanError(_("The GPU catalog must be a mapping with a 'gpus' list."), hint=_(_FIX_HINT))
    gpus: dict[str, GpuSpec] = {}
    for raw in data["gpus"]:
        spec = _parse_entry(raw)
        if spec.id in gpus:
            raise _fail(spec.id, "duplicate id")
        gpus[spec.id] = spec
    exact: dict[str, str] = {}
    stripped: dict[str, str] = {}
    for spec in gpus.values():
        for label in (spec.id, *spec.aliases):
            key = _name_key(label)
            _add_key(exact, key, spec.id, label)
            _add_key(stripped, _strip_prefixes(key), spec.id, label)
    partial: dict[str, PartialName] = {}
    for raw in data.get("partial_names") or []:
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("name", "gpu", "assumed")):
            raise GpuplanError(_("Malformed partial_names entry {raw!r}.").format(raw=raw), hint=_(_FIX_HINT))
        if raw["gpu"] not in gpus:
            raise GpuplanError(_("partial_names entry {raw!r} names unknown GPU {raw2!r}.").format(raw=raw['name'], raw2=raw['gpu']), hint=_(_FIX_HINT))
        key = _strip_prefixes(_name_key(raw["name"]))
        if key in partial or key in exact:
            raise GpuplanError(_("partial_names entry {raw!r} duplicates another name.").format(raw=raw['name']), hint=_(_FIX_HINT))
        partial[key] = PartialName(raw["name"], raw["gpu"], raw["assumed"])
    return _Catalog(gpus=gpus, partial=partial, exact=exact, stripped=stripped)


@functools.cache
def _catalog() -> _Catalog:
    path = resources.files("gpuplan") / "data" / "gpus.yaml"
    try:
        data = load_data(path)
    except (OSError, ValueError) as exc:
        raise GpuplanError(_("Cannot read the GPU catalog: {exc}").format(exc=exc), hint=_("Reinstall gpuplan.")) from exc
    return parse_gpu_catalog(data)


# ------------------------------------------------------------------------------------ public API


def load_gpus() -> dict[str, GpuSpec]:
    """All GPUs by canonical id, in catalog order (loaded once, on first use)."""
    return dict(_catalog().gpus)


def gpu_names() -> list[str]:
    """Canonical ids followed by every alias: the names `gpuplan gpus` lists."""
    specs = _catalog().gpus.values()
    return [s.id for s in specs] + [a for s in specs for a in s.aliases]


def resolve_gpu(name: str) -> tuple[GpuSpec, str | None]:
    """Resolve a GPU name to its spec and, for a partial name, a sentence saying what was assumed.

    Order: exact id/alias (case, spacing, dashes, "80G" vs "80GB" ignored); then the documented
    partial names of ``gpus.yaml`` (``"A100"`` -> A100-SXM4-80GB, ``"H100"`` -> H100-SXM-80GB,
    ``"V100"`` -> V100-SXM2-32GB ...); then ids/aliases without a leading "NVIDIA"/"Tesla"/"GeForce".
    """
    if not isinstance(name, str):
        raise GpuplanError(_("GPU name must be text, got {name!r}.").format(name=name), hint=_("See `gpuplan gpus`."))
    cat = _catalog()
    key = _name_key(name)
    if key in cat.exact:
        return cat.gpus[cat.exact[key]], None
    short = _strip_prefixes(key)
    if short in cat.partial:
        default = cat.partial[short]
        return cat.gpus[default.gpu], _("{name!r} resolved to {gpu} ({assumed})").format(
            name=name.strip(), gpu=default.gpu, assumed=_(default.assumed))
    if short in cat.stripped:
        return cat.gpus[cat.stripped[short]], None
    raise unknown_name_error("GPU", name, gpu_names(), "gpuplan gpus")


def get_gpu(name: str) -> GpuSpec:
    """The spec for a GPU name (see :func:`resolve_gpu`)."""
    return resolve_gpu(name)[0]
