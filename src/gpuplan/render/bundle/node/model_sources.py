"""Where a model's weights and code come from (data/model_sources.yaml): its ModelScope id, and whether its code is
outside transformers (trust_remote_code). No guessing: a model the table cannot place has no ModelScope id, and the
bundle asks for MODELSCOPE_ID or MODEL_OSS instead of asking ModelScope for the Hugging Face name."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gpuplan.catalog.configs.remote_code import model_sources, needs_remote_code

__all__ = ["ModelScopeId", "model_sources", "modelscope_id", "needs_remote_code"]


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
