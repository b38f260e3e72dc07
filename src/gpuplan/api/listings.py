"""The catalog listings the page and API clients read (``GET /api/options``, ``/api/instances``, ``/api/models``):
plain dicts built from the workload model and the catalog, each loaded on first use. The routes are in
:mod:`gpuplan.api.app`.
"""


from gpuplan import __version__
from gpuplan.errors import GpuplanError


def options() -> dict:
    """Values the page offers in its pickers, taken from the workload model and the catalog."""
    from typing import get_args

    from gpuplan.catalog.prices.prices import load_offers
    from gpuplan.workload_parts import Billing, Framework, Objective, Precision, Quantization, Task

    from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD, available_clouds

    clouds = list(available_clouds())
    # Each cloud's priced regions: the page offers those of the chosen cloud only (the search plans on one cloud).
    by_cloud = {c: sorted({o.region for o in load_offers(cloud=c)}) for c in clouds}
    return {"schema_version": 1, "tasks": list(get_args(Task)), "precisions": list(get_args(Precision)),
            "quantizations": list(get_args(Quantization)), "billing": list(get_args(Billing)),
            "objectives": list(get_args(Objective)), "frameworks": list(get_args(Framework)),
            "currencies": ["CNY", "USD"], "clouds": clouds, "default_cloud": DEFAULT_CLOUD,
            "regions": by_cloud.get(DEFAULT_CLOUD, []), "regions_by_cloud": by_cloud, "version": __version__}


def instances(family, gpu, min_gpu_memory, region, cloud) -> dict:
    from gpuplan.catalog.hardware.query import filter_instances
    from gpuplan.catalog.prices.prices import load_offers

    try:
        items = filter_instances(cloud=cloud, family=family, gpu=gpu, min_gpu_memory_gib=min_gpu_memory, region=region)
    except GpuplanError as err:
        field = {"instance family": "family", "GPU": "gpu", "cloud": "cloud"}.get(err.kind or "")
        raise err.with_field(field) from None
    offers = [o for o in load_offers(cloud=cloud) if o.billing == "payg" and (region is None or o.region == region)]
    price: dict[str, dict] = {}
    for o in sorted(offers, key=lambda o: o.as_of):
        price[o.instance_type] = {"price_per_hour": o.price_per_hour, "currency": o.currency, "region": o.region,
                                  "as_of": o.as_of.isoformat()}
    recs = []
    for i in items:
        d = i.to_dict()
        d["price_payg"] = price.get(i.instance_type)
        recs.append(d)
    return {"schema_version": 1, "instances": recs}


_BRIEF_KEYS = ("id", "family", "kind", "aliases", "params_total", "params_active", "max_position_embeddings",
               "modelscope_id")


def models(kind: str | None, q: str | None, brief: bool) -> dict:
    from gpuplan.catalog.models import list_models

    items = list_models(kind) if kind else list_models()
    if q:
        needle = q.strip().lower()
        items = [m for m in items if needle in m.id.lower() or any(needle in a.lower() for a in m.aliases)
                 or needle in (m.modelscope_id or "").lower()]
    out = []
    for m in items:
        d = m.to_dict()
        out.append({k: d.get(k) for k in _BRIEF_KEYS} if brief else d)
    return {"schema_version": 1, "models": out}
