"""data/clouds/alibaba/platforms.yaml read into typed records: Function Compute GPU types, CU pricing and the
cold-start assumptions (the ACK fee and PAI-EAS resources are read as plain mappings by plan/deploy/managed.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from gpuplan.files.datafiles import load_data


@functools.cache
def load_platforms() -> dict[str, Any]:
    """data/clouds/alibaba/platforms.yaml (read once, on first use)."""
    path = files("gpuplan") / "data" / "clouds" / "alibaba" / "platforms.yaml"
    return load_data(path)


@dataclass(frozen=True)
class FcGpuType:
    """One Function Compute GPU type (``gpuConfig.gpuType``)."""

    gpu_type: str
    series: str
    gpu: str
    card_memory_gib: float
    slice_step_gib: float
    min_slice_gib: float
    vcpu: float | None
    memory_gib: float | None
    max_vcpu_per_gib: float | None
    max_memory_gib_per_gpu_gib: float | None
    as_of: str
    source: str
    unconfirmed: tuple[str, ...]

    def slices(self) -> list[float]:
        """Allowed GPU memory sizes (GiB), smallest first."""
        out, s = [], self.min_slice_gib
        while s <= self.card_memory_gib + 1e-9:
            out.append(s)
            s += self.slice_step_gib
        return out

    def function_size(self, slice_gib: float) -> tuple[float, float]:
        """(vCPU, memory GB) assumed for a function with this slice: the largest the docs allow, within what the
        CreateFunction API accepts (``function_limits``: at most 16 vCPU, 32 GB and 4 GB per vCPU)."""
        lim = fc_function_limits()
        vcpu = self.vcpu if self.vcpu is not None else (self.max_vcpu_per_gib or 0.5) * slice_gib
        vcpu = min(float(vcpu), float(lim["vcpu_max"]))
        mem = self.memory_gib if self.memory_gib is not None else (self.max_memory_gib_per_gpu_gib or 2) * slice_gib
        mem = min(float(mem), lim["memory_mb_max"] / 1024.0, vcpu * float(lim["memory_gb_per_vcpu_max"]))
        return vcpu, mem


def fc_function_limits() -> dict[str, Any]:
    """``function_compute.function_limits`` of platforms.yaml: what the CreateFunction API accepts."""
    return load_platforms()["function_compute"]["function_limits"]


def fc_gpu_types() -> list[FcGpuType]:
    out = []
    for e in load_platforms()["function_compute"]["gpu_types"]:
        out.append(FcGpuType(e["gpu_type"], e["series"], e["gpu"], float(e["card_memory_gib"]),
                             float(e["slice_step_gib"]), float(e["min_slice_gib"]), e.get("vcpu"), e.get("memory_gib"),
                             e.get("max_vcpu_per_gib"), e.get("max_memory_gib_per_gpu_gib"), str(e["as_of"]),
                             e["source"], tuple(e.get("unconfirmed") or ())))
    return out


@dataclass(frozen=True)
class FcPricing:
    """CU tiers (USD) and conversion factors; ``None`` factors mean the price is unknown."""

    tiers: tuple[tuple[float | None, float], ...]
    currency: str
    gpu_factors: dict
    vcpu_active: float
    memory_gb_s: float
    invocations_per_10k: float
    as_of: str
    source: str

    def factors(self, series: str) -> tuple[float | None, float | None]:
        f = self.gpu_factors.get(series) or {}
        return f.get("active"), f.get("idle")

    def cost(self, cu: float) -> float:
        """Tiered monthly cost of ``cu`` compute units, in ``currency``."""
        total, lower = 0.0, 0.0
        for upper, price in self.tiers:
            top = cu if upper is None else min(cu, upper)
            if top > lower:
                total += (top - lower) * price
            if upper is None or cu <= upper:
                break
            lower = upper
        return total


def fc_pricing() -> FcPricing:
    p = load_platforms()["function_compute"]["pricing"]
    conv = p["conversion"]
    return FcPricing(tuple((t["up_to_cu"], float(t["price_per_cu"])) for t in p["tiers"]), p["currency"],
                     conv["gpu_gb_s"], float(conv["active_vcpu_s"]), float(conv["memory_gb_s"]),
                     float(conv["invocations_per_10k"]), str(p["as_of"]), p["source"])


@dataclass(frozen=True)
class ColdStart:
    container_start_s: float
    weight_load_gb_s: float
    keep_alive_s: float
    source: str

    def seconds(self, weight_bytes: float) -> float:
        return self.container_start_s + weight_bytes / (self.weight_load_gb_s * 1e9)


def cold_start_model() -> ColdStart:
    c = load_platforms()["function_compute"]["cold_start"]
    return ColdStart(float(c["container_start_s"]), float(c["weight_load_gb_s"]), float(c["keep_alive_s"]), c["source"])



def fx_rate(currency: str, src: str, fx) -> float:
    """Units of ``currency`` per unit of ``src`` (1 when they are the same)."""
    if currency == src:
        return 1.0
    return fx.convert(1.0, src, currency)
