"""Queries over the catalog that need more than one of its modules: instance types filtered by family, GPU,
GPU memory, status and the regions where they have a price (instances + gpus + prices; none of those
imports this module)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from gpuplan.catalog.hardware.gpus import resolve_gpu
from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD, STATUSES, InstanceType, check_choice, find_family, load_instances
from gpuplan.catalog.hardware.regions import check_regions
from gpuplan.catalog.prices.prices import load_offers

__all__ = ["filter_instances"]


def filter_instances(
    cloud: str = DEFAULT_CLOUD,
    family: str | None = None,
    gpu: str | None = None,
    min_gpu_memory_gib: float | None = None,
    region: str | None = None,
    include_status: Iterable[str] | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> list[InstanceType]:
    """Instance types matching every given filter, in catalog order. None = no filter.

    ``gpu`` is a user string resolved by :func:`gpuplan.catalog.hardware.gpus.resolve_gpu` ("A10",
    "a100 80g", ...) and compared by canonical id. ``region`` keeps the types that have a price
    in that region (per-region availability is not in the catalog).
    """
    insts = list(load_instances(cloud, cache_dir).values())
    if family is not None:
        fam = find_family(family, cloud, cache_dir).family
        insts = [i for i in insts if i.family == fam]
    if gpu is not None:
        spec, _note = resolve_gpu(gpu)
        insts = [i for i in insts if i.gpu == spec.id]
    if min_gpu_memory_gib is not None:
        insts = [i for i in insts if i.gpu_memory_gib is not None and i.gpu_memory_gib >= min_gpu_memory_gib]
    if include_status is not None:
        statuses = {check_choice(s, "status", STATUSES, "include_status", empty_ok=False) for s in include_status}
        insts = [i for i in insts if i.status in statuses]
    if region is not None:
        region = check_regions([region], [cloud])[0]   # an unknown region is an error (did-you-mean)
        priced = {o.instance_type.lower() for o in load_offers(cloud, cache_dir) if o.region == region}
        insts = [i for i in insts if i.instance_type.lower() in priced]
    return insts
