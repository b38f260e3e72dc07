"""`gpuplan show NAME`: find a GPU, an instance type, a family or a model by any of its names."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError, did_you_mean
from gpuplan.i18n import _


def _with_gpu_facts(inst) -> dict[str, Any]:
    from gpuplan.catalog.hardware.gpus import get_gpu
    from gpuplan.catalog.prices.prices import load_offers, price_note

    d = inst.to_dict()
    gpu = get_gpu(inst.gpu)
    d["gpu_name"] = gpu.name
    d["gpu_summary"] = (f"{inst.gpu_count:g} x {gpu.id} ({gpu.memory_gib:g} GB {gpu.memory_type or ''}, "
                        f"{gpu.bf16_dense_tflops or gpu.fp16_dense_tflops} dense 16-bit TFLOPS)")
    import datetime

    today = datetime.date.today()
    offers = [o for o in load_offers(cloud=inst.cloud) if o.instance_type == inst.instance_type]
    d["prices"] = [price_note(o, today) + f" [{_(o.billing)}]" for o in offers] or [_("no price known")]
    return d


def find_any(name: str) -> tuple[str, dict[str, Any]]:
    """(kind, record) for the first kind whose catalog knows ``name``; else a did-you-mean error."""
    from gpuplan.catalog.hardware.gpus import load_gpus, resolve_gpu
    from gpuplan.catalog.hardware.instances import available_clouds, find_family, get_instance, load_families, load_instances
    from gpuplan.catalog.models import get_model, list_models

    name = (name or "").strip()
    if not name or len(name) > 300:
        raise GpuplanError(_("Give a GPU, instance type, family or model name."), hint=_("e.g. `gpuplan show A10`."))
    errors: list[GpuplanError] = []
    for attempt in ("instance", "family", "gpu", "model"):
        try:
            if attempt == "instance":
                return "instance", _with_gpu_facts(get_instance(name))
            if attempt == "family":
                return "family", find_family(name).to_dict()
            if attempt == "gpu":
                gpu, note = resolve_gpu(name)
                d = gpu.to_dict()
                if note:
                    d["resolved_note"] = note
                return "gpu", d
            if attempt == "model":
                return "model", get_model(name).to_dict()
        except GpuplanError as err:
            errors.append(err)
    names: list[str] = list(load_gpus())
    for cloud in available_clouds():
        names += list(load_instances(cloud))
        names += list(load_families(cloud))
    names += [m.id for m in list_models()]
    close = did_you_mean(name, names)
    if close:
        listed = ", ".join(repr(c) for c in close)
        hint = _("Did you mean {names}?").format(names=listed)
        web_hint = _("Did you mean {names}? Pick one from the list on the page.").format(names=listed)
    else:
        hint = _("See `gpuplan gpus`, `gpuplan instances` and `gpuplan models`.")
        web_hint = _("Pick a known name from the list on the page.")
    raise GpuplanError(_("No GPU, instance type, family or model is called {name!r}.").format(name=name), hint=hint,
                       web_hint=web_hint)
