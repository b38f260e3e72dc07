"""GPU facts through NVML (``nvidia-ml-py``, imported as ``pynvml``; extra ``gpuplan[doctor]``).

The module object is injected, so tests pass an NVML-shaped fake. Every call is guarded: a GPU
that does not support a query (NVML_ERROR_NOT_SUPPORTED) gives ``None`` for that field only.
API reference: https://docs.nvidia.com/deploy/nvml-api/ (device queries).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from gpuplan.i18n import _
from gpuplan.doctor.facts import GpuFacts

T = TypeVar("T")

# pynvml constants, with their documented values as fallbacks for fakes that omit them.
_CONST = {
    "NVML_CLOCK_SM": 1,
    "NVML_CLOCK_MEM": 2,
    "NVML_MEMORY_ERROR_TYPE_CORRECTED": 0,
    "NVML_MEMORY_ERROR_TYPE_UNCORRECTED": 1,
    "NVML_VOLATILE_ECC": 0,
    "NVML_AGGREGATE_ECC": 1,
    "NVML_FEATURE_ENABLED": 1,
    "NVML_NVLINK_MAX_LINKS": 18,
}


def load_nvml() -> Any | None:
    """The real ``pynvml`` module, or ``None`` when nvidia-ml-py is not installed."""
    try:
        import pynvml  # noqa: PLC0415 - optional extra, imported on demand
    except ImportError:
        return None
    return pynvml


def _c(nvml: Any, name: str) -> int:
    return getattr(nvml, name, _CONST[name])


def _try(fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - NVMLError subclasses, or a fake's errors
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return str(value).strip() or None


def cuda_version_from_int(v: int | None) -> str | None:
    """NVML encodes CUDA 12.4 as 12040 (1000·major + 10·minor)."""
    if not v:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


class NvmlSession:
    """An initialised NVML. ``open`` returns ``(session, None)`` or ``(None, reason)``."""

    def __init__(self, nvml: Any):
        self.nvml = nvml

    @classmethod
    def open(cls, nvml: Any | None) -> tuple[NvmlSession | None, str | None]:
        if nvml is None:
            return None, _("nvidia-ml-py is not installed (pip install 'gpuplan[doctor]')")
        try:
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return None, _("NVML could not start: {error}").format(error=exc)
        return cls(nvml), None

    def close(self) -> None:
        _try(self.nvml.nvmlShutdown)

    def driver_version(self) -> str | None:
        return _text(_try(self.nvml.nvmlSystemGetDriverVersion))

    def cuda_driver_version(self) -> str | None:
        return cuda_version_from_int(_try(self.nvml.nvmlSystemGetCudaDriverVersion))

    def gpu_count(self) -> int:
        return _try(self.nvml.nvmlDeviceGetCount) or 0

    def gpu(self, index: int) -> GpuFacts:
        n = self.nvml
        h = _try(lambda: n.nvmlDeviceGetHandleByIndex(index))
        if h is None:
            return GpuFacts(index=index)
        mem = _try(lambda: n.nvmlDeviceGetMemoryInfo(h))
        pci = _try(lambda: n.nvmlDeviceGetPciInfo(h))
        ecc = _try(lambda: n.nvmlDeviceGetEccMode(h))
        mig = _try(lambda: n.nvmlDeviceGetMigMode(h))
        remap = _try(lambda: n.nvmlDeviceGetRemappedRows(h))
        enabled = _c(n, "NVML_FEATURE_ENABLED")

        def ecc_count(err: str, counter: str) -> int | None:
            return _try(lambda: int(n.nvmlDeviceGetTotalEccErrors(h, _c(n, err), _c(n, counter))))

        def mw_to_w(value: Any) -> float | None:
            return None if value is None else round(value / 1000.0, 2)

        pstate = _try(lambda: n.nvmlDeviceGetPerformanceState(h))
        total, active = self._nvlinks(h)
        return GpuFacts(
            index=index,
            name=_text(_try(lambda: n.nvmlDeviceGetName(h))),
            uuid=_text(_try(lambda: n.nvmlDeviceGetUUID(h))),
            bus_id=_text(getattr(pci, "busId", None)),
            memory_total_bytes=getattr(mem, "total", None),
            ecc_enabled=None if ecc is None else ecc[0] == enabled,
            ecc_uncorrected_volatile=ecc_count("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC"),
            ecc_uncorrected_aggregate=ecc_count("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC"),
            ecc_corrected_volatile=ecc_count("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"),
            remapped_rows_pending=None if remap is None else bool(remap[2]),
            remapping_failed=None if remap is None else bool(remap[3]),
            sm_clock_mhz=_try(lambda: n.nvmlDeviceGetClockInfo(h, _c(n, "NVML_CLOCK_SM"))),
            sm_clock_max_mhz=_try(lambda: n.nvmlDeviceGetMaxClockInfo(h, _c(n, "NVML_CLOCK_SM"))),
            mem_clock_max_mhz=_try(lambda: n.nvmlDeviceGetMaxClockInfo(h, _c(n, "NVML_CLOCK_MEM"))),
            power_limit_w=mw_to_w(_try(lambda: n.nvmlDeviceGetPowerManagementLimit(h))),
            power_default_limit_w=mw_to_w(_try(lambda: n.nvmlDeviceGetPowerManagementDefaultLimit(h))),
            persistence_mode=_flag(_try(lambda: n.nvmlDeviceGetPersistenceMode(h)), enabled),
            mig_enabled=None if mig is None else mig[0] == enabled,
            performance_state=None if pstate is None else f"P{pstate}",
            pcie_gen_current=_try(lambda: n.nvmlDeviceGetCurrPcieLinkGeneration(h)),
            pcie_gen_max=_try(lambda: n.nvmlDeviceGetMaxPcieLinkGeneration(h)),
            pcie_width_current=_try(lambda: n.nvmlDeviceGetCurrPcieLinkWidth(h)),
            pcie_width_max=_try(lambda: n.nvmlDeviceGetMaxPcieLinkWidth(h)),
            nvlink_links_total=total,
            nvlink_links_active=active,
            numa_node=_try(lambda: n.nvmlDeviceGetNumaNodeId(h)),
        )

    def _nvlinks(self, h: Any) -> tuple[int | None, int | None]:
        """Count links that exist and those that are up. A link that does not exist answers
        NOT_SUPPORTED / INVALID_ARGUMENT; a GPU without NVLink has none (0, 0)."""
        n = self.nvml
        total = active = 0
        enabled = _c(n, "NVML_FEATURE_ENABLED")
        for link in range(_c(n, "NVML_NVLINK_MAX_LINKS")):
            state = _try(functools.partial(n.nvmlDeviceGetNvLinkState, h, link))
            if state is None:
                continue
            total += 1
            active += int(state == enabled)
        return total, active


def _flag(value: Any, enabled: int) -> bool | None:
    return None if value is None else value == enabled


def nvml_gpus(session: NvmlSession) -> list[GpuFacts]:
    return [session.gpu(i) for i in range(session.gpu_count())]
