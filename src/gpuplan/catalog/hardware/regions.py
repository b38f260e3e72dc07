"""Cloud names and regions: the public region ids of each cloud (``data/clouds/<cloud>/regions.yaml``), the
default region, and the checks that refuse an unknown cloud or region with the closest names."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib.resources import files
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD, available_clouds, check_cloud, data_root
from gpuplan.errors import GpuplanError, did_you_mean
from gpuplan.i18n import N_, _


@functools.cache
def load_regions(cloud: str = DEFAULT_CLOUD) -> dict[str, str]:
    """The public region ids of a cloud (``data/clouds/<cloud>/regions.yaml``) -> display name."""
    cloud = check_cloud(cloud)
    path = data_root() / "clouds" / cloud / "regions.yaml"
    if not path.is_file():
        return {}
    doc = load_data(path) or {}
    return {str(k).lower(): str(v) for k, v in (doc.get("regions") or {}).items()}


@functools.cache
def default_region(cloud: str = DEFAULT_CLOUD) -> str | None:
    """The region priced when the user names none (``default`` in regions.yaml)."""
    cloud = check_cloud(cloud)
    path = data_root() / "clouds" / cloud / "regions.yaml"
    if not path.is_file():
        return None
    doc = load_data(path) or {}
    return str(doc["default"]).lower() if doc.get("default") else None


def check_clouds(clouds: Iterable[str] | None) -> list[str]:
    """Lower-cased cloud names; an unknown one -> GpuplanError with a did-you-mean."""
    return [check_cloud(c) for c in (clouds or ())]


# Display names of the clouds (the folders under data/clouds/).
CLOUD_NAMES = {"alibaba": N_("Alibaba Cloud"), "aws": N_("AWS"), "tencent": N_("Tencent Cloud")}


def cloud_name(cloud: str) -> str:
    return _(CLOUD_NAMES.get(cloud, cloud))


def check_regions(regions: Iterable[str] | None, clouds: Iterable[str] | None = None) -> list[str]:
    """Lower-cased region ids, each known to one of ``clouds`` (all clouds when None or empty);
    an unknown id -> GpuplanError with a did-you-mean (``cn-hangzou`` -> ``cn-hangzhou``). A region of
    another cloud is named as such ("'ap-guangzhou' is a Tencent Cloud region") with the closest names
    of the chosen cloud."""
    names = check_clouds(clouds) or list(available_clouds())
    known: dict[str, str] = {}
    for c in names:
        for r in load_regions(c):
            known.setdefault(r, c)
    out = []
    for raw in regions or ():
        r = str(raw).strip().lower()
        if known and r not in known:
            close = did_you_mean(r, known) or did_you_mean(r, known, cutoff=0.3)
            other = next((c for c in available_clouds() if c not in names and r in load_regions(c)), None)
            hint = (_("Did you mean {names}?").format(names=", ".join(repr(c) for c in close)) if close
                    else _("Known regions: {regions}.").format(regions=", ".join(sorted(known))))
            if other:
                message = _("{raw!r} is a region of {owner}, not of {cloud}.").format(
                    raw=raw, owner=cloud_name(other), cloud=_(", ").join(cloud_name(c) for c in names))
                hint = _("{hint} To plan on {owner}, choose that cloud (constraints.clouds: [{other}]).").format(
                    hint=hint, owner=cloud_name(other), other=other)
            else:
                message = (_("Unknown {cloud} region {raw!r}.").format(raw=raw, cloud=cloud_name(names[0])) if len(names) == 1
                           else _("Unknown region {raw!r}.").format(raw=raw))
            raise GpuplanError(message, hint=hint, field="constraints.regions", kind="region")
        out.append(r)
    return out


@functools.cache
def load_compliance() -> dict[str, Any]:
    """data/compliance.yaml: the mainland-China region ids and the notes for serving from them."""
    return load_data(files("gpuplan") / "data" / "compliance.yaml")


def is_mainland(region: str | None) -> bool:
    """Alibaba region ids in the Chinese mainland (compliance.yaml; any ``cn-`` id but cn-hongkong). One rule
    for the compliance notes (plan/advice/ops.py) and the model hub a config is fetched from (catalog/configs/hub.py)."""
    if not region:
        return False
    doc = load_compliance()
    r = region.strip().lower()
    if r in doc.get("not_mainland", ()):
        return False
    return r in doc["mainland_regions"] or r.startswith("cn-")
