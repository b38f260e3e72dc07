"""What a recommendation searches: the instance types in play, the quantization variants, the
regions and the deployment platforms (from the workload's hardware and constraints)."""

from __future__ import annotations

from typing import Any

from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD, InstanceType, load_instances
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.plan.money import cost as costm
from gpuplan.plan.record import PLATFORMS
from gpuplan.plan.search.search_point import Variant
from gpuplan.workload import Workload


def default_regions(clouds: list[str], book: costm.PriceBook) -> list[str]:
    """One region per cloud when the user names none: the cloud's default (regions.yaml)."""
    from gpuplan.catalog.hardware.regions import default_region

    out = [r for r in (default_region(c) for c in clouds) if r]
    return list(dict.fromkeys(out)) or list(book.regions) or ["cn-shanghai"]


def platforms_wanted(cons) -> frozenset[str]:
    """constraints.platforms, else every platform."""
    return frozenset(cons.platforms) if cons is not None and getattr(cons, "platforms", None) else frozenset(PLATFORMS)


def variants(w: Workload, cons) -> list[Variant]:
    """Quantization options: constraints.quantization, else exactly the workload's."""
    qs = list(cons.quantization) if cons and cons.quantization else [w.quantization or "none"]
    out = []
    for q in dict.fromkeys(qs):
        if q == (w.quantization or "none"):
            out.append(Variant(q, w.optimizer, w))
            continue
        changes: dict[str, Any] = {"quantization": q}
        if q in ("gptq-int4", "gptq-int8", "awq") and w.precision == "bf16":
            changes["precision"] = "fp16"
        try:
            out.append(Variant(q, w.optimizer, w.with_updates(**changes)))
        except GpuplanError:
            continue
    if not out:
        raise GpuplanError(_("None of the allowed quantizations {qs} works with task {task}.").format(qs=qs, task=w.task),
                           hint=_("QLoRA needs a 4-bit or 8-bit base: allow bnb-nf4 (or int4/awq/gptq) in "
                                  "constraints.quantization."), field="constraints.quantization")
    return out


def _catalog_name(gpu) -> str:
    """The catalog card an inline GPU spec names; the search covers catalog instances only, so an inline
    card the catalog lacks is one error that says so (estimate runs on it)."""
    from gpuplan.catalog.hardware.gpus import resolve_gpu

    try:
        resolve_gpu(gpu.name)
    except GpuplanError:
        raise GpuplanError(
            _("hardware.gpu describes {name!r}, a GPU no catalog instance carries: recommend searches the catalog's "
              "instances only.").format(name=gpu.name),
            hint=_("Use `gpuplan estimate` for this GPU (it runs on the figures you gave), or drop hardware.gpu to "
                   "search every catalog GPU (see `gpuplan gpus`)."), field="hardware.gpu") from None
    return gpu.name


def instances(w: Workload, given, cache_dir) -> list[InstanceType]:
    """The instance types in play: the catalog, narrowed by hardware and constraints.families."""
    cons = w.constraints
    if given is not None:
        insts = list(given)
    else:
        clouds = [c.lower() for c in cons.clouds] if cons and cons.clouds else [DEFAULT_CLOUD]
        insts = [i for c in dict.fromkeys(clouds) for i in load_instances(c, cache_dir).values()]
    hw = w.hardware
    if hw and hw.instance_type:
        want = hw.instance_type.lower().removeprefix("ecs.")
        insts = [i for i in insts if i.short_name.lower() == want]
        if not insts:
            raise GpuplanError(_("Unknown instance type {name!r}.").format(name=hw.instance_type),
                               hint=_("See `gpuplan instances`."))
    if hw and hw.gpu:
        from gpuplan.catalog.hardware.gpus import resolve_gpu

        spec, _unused = resolve_gpu(hw.gpu if isinstance(hw.gpu, str) else _catalog_name(hw.gpu))
        insts = [i for i in insts if i.gpu == spec.id]
    cons = w.constraints
    if cons and cons.families:
        fams = {f.lower().removeprefix("ecs.") for f in cons.families}
        insts = [i for i in insts if i.family.lower() in fams]
    return insts


