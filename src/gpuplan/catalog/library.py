"""The bundled model library: load it, look names up, resolve a workload's ``model:`` reference.

A workload's ``model:`` is one of (see docs/models.md):

* a bundled id, alias or ModelScope id (``Qwen/Qwen2.5-7B-Instruct``, ``qwen2.5-7b``);
* a path to a Hugging Face ``config.json`` or to a folder that holds one;
* an inline mapping with config.json keys, or ``{params_b: 7}``;
* a Hugging Face / ModelScope id outside the library (gpuplan.catalog.hub).
"""

from __future__ import annotations

import functools
import importlib.resources
import os
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import yaml

from gpuplan.catalog import hub
from gpuplan.catalog.hf_config import from_hf_config, load_config_file
from gpuplan.catalog.model_spec import MLASpec, ModelSpec, MoESpec, NonLLMProfile
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.catalog.synth import synthesize_from_params_b
from gpuplan.errors import GpuplanError, unknown_name_error
from gpuplan.i18n import _

_SUB_RECORDS = {"moe": MoESpec, "mla": MLASpec}


def _spec_from_entry(entry: Mapping[str, Any]) -> ModelSpec:
    """Build a ModelSpec from one models.yaml entry (unknown keys are an error: typos)."""
    known = {f.name for f in fields(ModelSpec)}
    data = dict(entry)
    unknown = set(data) - known
    if unknown:
        raise GpuplanError(
            _("models.yaml entry {entry!r} has unknown keys: {unknown}.").format(entry=data.get('id'), unknown=', '.join(sorted(unknown))),
            hint=_("Fix the bundled data file (see docs/models.md for the schema)."),
        )
    for key, cls in _SUB_RECORDS.items():
        if data.get(key) is not None:
            data[key] = cls(**data[key])
    if data.get("profile") is not None:
        prof = dict(data["profile"])
        prof["sources"] = tuple(prof.get("sources", ()))
        data["profile"] = NonLLMProfile(**prof)
    for key in ("unconfirmed", "aliases", "assumptions"):
        data[key] = tuple(data.get(key) or ())
    for key in ("params_total", "params_active"):
        if data.get(key) is not None:
            data[key] = float(data[key])
    return ModelSpec(**data)


@functools.cache
def load_models() -> tuple[ModelSpec, ...]:
    """All bundled models (data/models.yaml), validated; loaded once, on first use."""
    path = importlib.resources.files("gpuplan") / "data" / "models.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:  # pragma: no cover - shipped data is tested
        raise GpuplanError(_("Bundled models.yaml is malformed: {exc}").format(exc=exc), hint=_("Reinstall gpuplan.")) from exc
    entries = raw["models"] if isinstance(raw, dict) else raw
    specs = []
    for entry in entries:
        try:
            specs.append(validate_spec(_spec_from_entry(entry)))
        except TypeError as exc:  # pragma: no cover - shipped data is tested
            raise GpuplanError(_("models.yaml entry {entry!r}: {exc}").format(entry=entry.get('id'), exc=exc),
                               hint=_("The bundled models.yaml is damaged: reinstall gpuplan.")) from exc
    return tuple(specs)


@functools.cache
def _name_index() -> dict[str, ModelSpec]:
    index: dict[str, ModelSpec] = {}
    for spec in load_models():
        names = [spec.id, *spec.aliases]
        if spec.modelscope_id:
            names.append(spec.modelscope_id)
        for name in names:
            key = name.lower()
            other = index.get(key)
            assert other is None or other.id == spec.id, f"name {name!r} used by {other.id} and {spec.id}"
            index[key] = spec
    return index


def list_models(kind: str | None = None) -> list[ModelSpec]:
    """Bundled models, optionally only one kind, in file order."""
    return [m for m in load_models() if kind is None or m.kind == kind]


def get_model(name: str) -> ModelSpec:
    """A bundled model by id, alias or ModelScope id (case-insensitive)."""
    spec = _name_index().get(str(name).strip().lower())
    if spec is None:
        choices = [m.id for m in load_models()] + [a for m in load_models() for a in m.aliases]
        raise unknown_name_error("model", name, choices, "gpuplan models")
    return spec


# --------------------------------------------------------------------------------------------
# Resolution of a workload's model reference
# --------------------------------------------------------------------------------------------


def resolve_model(ref: Any) -> ModelSpec:
    """Turn a workload's ``model:`` value into a ModelSpec.

    ``ref``: a bundled id/alias/ModelScope id; a path to config.json or to a folder holding one;
    a Hugging Face / ModelScope id outside the library (cached config.json, or fetched when
    ``GPUPLAN_ONLINE=1``: see gpuplan.catalog.hub);
    a mapping ``{params_b: N}``; a mapping of config.json keys; or a ModelSpec.
    Anything unusable raises GpuplanError (never another exception).
    """
    if isinstance(ref, ModelSpec):
        return ref
    if isinstance(ref, Mapping):
        if "params_b" in ref:
            return synthesize_from_params_b(ref)
        name = ref.get("_name_or_path") or ref.get("name") or "inline-config"
        return from_hf_config(ref, name=str(name)[:200])
    if isinstance(ref, os.PathLike):
        return load_config_file(ref)
    if not isinstance(ref, str) or not ref.strip():
        raise GpuplanError(
            _("model must be a name, a config.json path or a mapping, not {name} {ref!r}.").format(name=type(ref).__name__, ref=ref),
            hint=_("E.g. model: Qwen/Qwen2.5-7B-Instruct, model: ./config.json or model: {params_b: 7}."),
            field="model",
        )
    name = ref.strip()
    spec = _name_index().get(name.lower())
    if spec is not None:
        return spec
    if _looks_like_path(name):
        return load_config_file(name)
    if hub.parse_repo_id(name) is not None:
        # A Hugging Face / ModelScope id the library lacks: its cached config.json, or (only with
        # GPUPLAN_ONLINE=1) a download; offline the error says how to switch online resolution on.
        remote = hub.resolve_remote(name)
        if remote is not None:
            return remote
        err = get_model_error(name)
        err.hint = ((err.hint + " ") if err.hint else "") + hub.offline_hint(name)
        raise err
    raise get_model_error(name)


def get_model_error(name: str) -> GpuplanError:
    choices = [m.id for m in load_models()] + [a for m in load_models() for a in m.aliases]
    return unknown_name_error("model", name, choices, "gpuplan models")


def _looks_like_path(name: str) -> bool:
    if len(name) > 4096 or "\x00" in name:
        return False
    try:
        if os.path.exists(name):
            return True
    except (OSError, ValueError):
        return False
    return name.endswith(".json") or name.startswith((".", "~", os.sep)) or (os.sep == "\\" and ":" in name)
