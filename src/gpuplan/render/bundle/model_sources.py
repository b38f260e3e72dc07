"""Where a model's weights and code come from (data/model_sources.yaml): its ModelScope id, and whether its code is
outside transformers (trust_remote_code). No guessing: a model the table cannot place has no ModelScope id, and the
bundle asks for MODELSCOPE_ID or MODEL_OSS instead of asking ModelScope for the Hugging Face name."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib.resources import files as _pkg_files
from typing import Any

import yaml


@functools.cache
def model_sources() -> dict[str, Any]:
    """data/model_sources.yaml, loaded once."""
    return yaml.safe_load((_pkg_files("gpuplan") / "data" / "model_sources.yaml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class ModelScopeId:
    """The ModelScope id of a Hugging Face id, and how it was found (``rule``: ms-swift | other | org | None)."""

    id: str | None
    rule: str | None
    source: str | None


def _hf_variants(hf_id: str) -> list[str]:
    """The id and the names Hugging Face renamed it from or to (ms-swift may list either)."""
    table = model_sources()["modelscope"]
    out = [hf_id]
    org, _sep, name = hf_id.partition("/")
    for old, new in (table.get("renamed_hf_orgs") or {}).items():
        if org.lower() == old.lower():
            out.append(f"{new}/{name}")
    m = re.fullmatch(r"meta-llama/(Llama-3\.1-.+)", hf_id, flags=re.IGNORECASE)
    if m:
        out.append(f"meta-llama/Meta-{m.group(1)}")
    return out


@functools.cache
def _lower_table() -> tuple[dict[str, str], dict[str, dict], dict[str, str]]:
    t = model_sources()["modelscope"]
    return ({k.lower(): v for k, v in (t.get("ids") or {}).items()},
            {k.lower(): v for k, v in (t.get("other") or {}).items()},
            {k.lower(): v for k, v in (t.get("org_rules") or {}).items()})


def modelscope_id(hf_id: str) -> ModelScopeId:
    """ModelScope id of ``hf_id`` by the table's rule (ms-swift's pairs, other sourced ids, organisation rules), or
    ``ModelScopeId(None, ...)`` when unknown. A local path has none."""
    if "/" not in hf_id or hf_id.startswith(("/", ".")):
        return ModelScopeId(None, None, None)
    ids, other, orgs = _lower_table()
    source = model_sources()["modelscope"]["source"]
    for v in _hf_variants(hf_id):
        if v.lower() in ids:
            return ModelScopeId(ids[v.lower()], "ms-swift", source)
        if v.lower() in other:
            row = other[v.lower()]
            return ModelScopeId(row["id"], "other", row.get("source"))
    for v in _hf_variants(hf_id):
        org, _sep, name = v.partition("/")
        if org.lower() in orgs:
            return ModelScopeId(f"{orgs[org.lower()]}/{name}", "org", source)
    return ModelScopeId(None, None, None)


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
