"""Loading a workload: from a file path, a mapping or a Workload, with CLI-style flags merged in (flags win)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.workload import Workload, parse_workload
from gpuplan.files.workload_files import read_workload_documents

def load_workload(source: str | Path | dict[str, Any] | Workload, **overrides: Any) -> Workload:
    """Load a workload from a file path, a mapping, or a Workload; flags in ``overrides`` win.

    Overrides use the flat CLI names (``tp``, ``pp``, ``zero``, ``gpu``, ``gpus``, ``budget``,
    ``deadline_hours``, ``region``...) or workload keys.
    """
    if isinstance(source, Workload):
        data = source.model_dump(exclude_unset=True)
    elif isinstance(source, dict):
        data = dict(source)
    else:
        doc = read_workload_documents(source)
        if isinstance(doc, list):
            raise GpuplanError(_("{source!r} holds {doc} workloads.").format(source=str(source), doc=len(doc)),
                               hint=_("`gpuplan estimate FILE` handles a list (JSON Lines output); other commands take one."))
        if not isinstance(doc, dict):
            raise GpuplanError(_("{source!r} must hold one workload mapping.").format(source=str(source)), hint=_("See `gpuplan schema`."))
        data = doc
    if overrides:
        data = apply_overrides(data, overrides)
    return parse_workload(data)


_NESTED_FLAGS = {
    "tp": ("parallel", "tp"), "pp": ("parallel", "pp"), "dp": ("parallel", "dp"), "ep": ("parallel", "ep"),
    "zero": ("parallel", "zero"), "fsdp": ("parallel", "fsdp"), "offload": ("parallel", "offload"),
    "sp": ("parallel", "sp"), "cp": ("parallel", "cp"),
    "gpu": ("hardware", "gpu"), "gpus": ("hardware", "count"), "instance_type": ("hardware", "instance_type"),
    "nodes": ("hardware", "nodes"),
    "budget": ("constraints", "budget"), "deadline_hours": ("constraints", "deadline_hours"),
    "currency": ("constraints", "currency"), "max_gpus": ("constraints", "max_gpus"),
    "region": ("constraints", "regions"), "regions": ("constraints", "regions"),
    "billing": ("constraints", "billing"), "family": ("constraints", "families"),
    "families": ("constraints", "families"), "allow_quantization": ("constraints", "quantization"),
    "include_status": ("constraints", "include_status"), "cloud": ("constraints", "clouds"),
    "lora_rank": ("lora", "rank"), "lora_targets": ("lora", "targets"),
    "dataset_tokens": ("dataset", "tokens"), "dataset_samples": ("dataset", "samples"), "epochs": ("dataset", "epochs"),
    "requests_per_s": ("serving", "requests_per_s"), "ttft_ms": ("serving", "ttft_ms"), "tpot_ms": ("serving", "tpot_ms"),
    "requests_per_day": ("serving", "requests_per_day"),
    "image_size": ("input", "image_size"), "steps": ("input", "steps"), "audio_seconds": ("input", "audio_seconds"),
    "tokens_per_window": ("input", "tokens_per_window"),
    "frames": ("input", "frames"), "height": ("input", "height"), "width": ("input", "width"),
}


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Merge CLI-style flags (None = not given) into a workload mapping; flags win."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for key, value in overrides.items():
        if value is None or value == [] or value == ():
            continue
        if key in _NESTED_FLAGS:
            section, sub = _NESTED_FLAGS[key]
            block = out.get(section)
            block = dict(block) if isinstance(block, dict) else {}
            if isinstance(value, tuple):
                value = list(value)
            block[sub] = value
            out[section] = block
        else:
            out[key] = value
    return out
