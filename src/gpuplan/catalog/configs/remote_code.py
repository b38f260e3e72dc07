"""Whether a model's code is outside transformers (loaded with trust_remote_code), from data/model_sources.yaml: the
bundle's loaders pass trust_remote_code for it, and the training estimate keeps the model's own loss for it (the
bundle's chunked loss needs transformers' model code: estimate/memory/loss.py)."""

from __future__ import annotations

import functools
from importlib.resources import files as _pkg_files
from typing import Any

from gpuplan.files.datafiles import load_data


@functools.cache
def model_sources() -> dict[str, Any]:
    """data/model_sources.yaml, loaded once (its compiled copy where one matches: gpuplan.files.datafiles)."""
    return load_data(_pkg_files("gpuplan") / "data" / "model_sources.yaml")


def needs_remote_code(model: str, arch: str | None) -> bool:
    """True when the model's code is not in transformers (loaded with trust_remote_code)."""
    t = model_sources()["trust_remote_code"]
    if arch and arch in (t.get("arches") or ()):
        return True
    if not arch and "/" in model and not model.startswith(("/", ".")):
        try:
            from gpuplan.catalog.models import resolve_model

            if resolve_model(model).arch in (t.get("arches") or ()):
                return True
        except Exception:  # noqa: BLE001 - a model the catalog does not know: by id prefix only
            pass
    low = model.lower()
    return any(low.startswith(p.lower()) for p in t.get("id_prefixes") or ())
