"""The bundled model library: load it, look names up, resolve a workload's ``model:`` reference.

A workload's ``model:`` is one of (see docs/models.md):

* a bundled id, alias or ModelScope id (``Qwen/Qwen2.5-7B-Instruct``, ``qwen2.5-7b``);
* a path to a Hugging Face ``config.json`` or to a folder that holds one;
* an inline mapping with config.json keys, or ``{params_b: 7}``;
* a Hugging Face / ModelScope id outside the library (gpuplan.catalog.configs.hub).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any


from gpuplan.catalog.bundled import CURATED_FILE, generated_raw, read_bundled
from gpuplan.catalog.model_spec import LinearAttentionSpec, MLASpec, ModelSpec, MoESpec, NonLLMProfile
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

if TYPE_CHECKING:
    from gpuplan.catalog.quantized import QuantizedId

# hub, hf_config, quantized, synth and vision are imported where used: a bundled name (the common case)
# needs none of them, and their imports (regexes, tables, records) are a tenth of a cold `estimate`.

_SUB_RECORDS = {"moe": MoESpec, "mla": MLASpec, "linear_attention": LinearAttentionSpec}
PARAMS_B_EXAMPLE = "{params_b: N}"   # how the unknown-model hint spells the synthesized shape (synth.py)


def spec_from_entry(entry: Mapping[str, Any]) -> ModelSpec:
    """Build a ModelSpec from one library entry (unknown keys are an error: typos)."""
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
    return validate_spec(ModelSpec(**data))


def _entries(name: str) -> list[Mapping[str, Any]]:
    raw = read_bundled(name)
    return list(raw["models"] if isinstance(raw, dict) else raw)


def _spec(entry: Mapping[str, Any]) -> ModelSpec:
    try:
        return spec_from_entry(entry)
    except TypeError as exc:  # pragma: no cover - shipped data is tested
        raise GpuplanError(_("models.yaml entry {entry!r}: {exc}").format(entry=entry.get('id'), exc=exc),
                           hint=_("The bundled models.yaml is damaged: reinstall gpuplan.")) from exc


@functools.cache
def _curated_entries() -> tuple[Mapping[str, Any], ...]:
    return tuple(_entries(CURATED_FILE))


@functools.cache
def _curated_spec(position: int) -> ModelSpec:
    """One curated model, built and validated when first asked for (a name lookup builds one, not all)."""
    return _spec(_curated_entries()[position])


@functools.cache
def load_curated() -> tuple[ModelSpec, ...]:
    """The hand-curated models (data/models.yaml), validated; loaded once, on first use."""
    return tuple(_curated_spec(i) for i in range(len(_curated_entries())))


@functools.cache
def load_generated() -> tuple[ModelSpec, ...]:
    """The generated library (data/model_library.json), read only when a name is not curated."""
    curated = _curated_index()
    return tuple(_generated_spec(e["id"]) for e in generated_raw()["models"] if e["id"].lower() not in curated)


@functools.cache
def load_timm() -> tuple[ModelSpec, ...]:
    """Every timm architecture of the generated library's timm table (catalog/nonllm/vision.py), as ModelSpecs."""
    from gpuplan.catalog.nonllm.vision import timm_spec_from_row

    table = generated_raw().get("timm") or {}
    cols = list(table.get("columns") or ())
    taken = {**_curated_index(), **_generated_names()}
    specs = (timm_spec_from_row(r, cols) for r in table.get("rows") or ())
    return tuple(replace(m, aliases=tuple(a for a in m.aliases if a.lower() not in taken)) for m in specs
                 if m.id.lower() not in taken)


@functools.cache
def load_segment_anything() -> tuple[ModelSpec, ...]:
    """The Segment Anything models (catalog/nonllm/segment_anything.py): timm's encoders with SAM's heads."""
    from gpuplan.catalog.nonllm.segment_anything import sam_specs

    return sam_specs(generated_raw().get("timm"))


@functools.cache
def load_models() -> tuple[ModelSpec, ...]:
    """Every bundled model: the curated ones in file order, then the generated library, Segment Anything, then
    timm's table."""
    return load_curated() + load_generated() + load_segment_anything() + load_timm()


def _names(spec: ModelSpec) -> list[str]:
    return [spec.id, *spec.aliases, *([spec.modelscope_id] if spec.modelscope_id else [])]


def _index(specs: tuple[ModelSpec, ...], base: Mapping[str, object] | None = None) -> dict[str, ModelSpec]:
    """Lower-cased name -> spec. Names already in ``base`` keep their model (curated names win)."""
    index: dict[str, ModelSpec] = {}
    for spec in specs:
        for name in _names(spec):
            key = name.lower()
            if base is not None and key in base:
                continue
            other = index.get(key)
            assert other is None or other.id == spec.id, f"name {name!r} used by {other.id} and {spec.id}"
            index[key] = spec
    return index


@functools.cache
def _curated_index() -> dict[str, int]:
    """Lower-cased name of a curated model -> its position in models.yaml (read from the entries, so a
    lookup builds only the model it finds)."""
    index: dict[str, int] = {}
    for position, entry in enumerate(_curated_entries()):
        names = [entry.get("id"), *(entry.get("aliases") or ()), entry.get("modelscope_id")]
        for name in (str(n) for n in names if n):
            other = index.get(name.lower())
            assert other is None or _curated_entries()[other].get("id") == entry.get("id"), \
                f"name {name!r} used by two curated models"
            index[name.lower()] = position
    return index


@functools.cache
def _generated_names() -> dict[str, str]:
    """Lower-cased name -> id of the generated library's entries (names the curated file uses excluded),
    read from the raw JSON without building a single ModelSpec."""
    curated = _curated_index()
    index: dict[str, str] = {}
    for entry in generated_raw()["models"]:
        for name in (entry["id"], *(entry.get("aliases") or ()), *([entry["modelscope_id"]] if entry.get("modelscope_id") else [])):
            key = str(name).lower()
            if key not in curated:
                index.setdefault(key, entry["id"])
    return index


@functools.cache
def _generated_by_id() -> dict[str, Mapping[str, Any]]:
    return {e["id"]: e for e in generated_raw()["models"]}


@functools.cache
def _generated_spec(model_id: str) -> ModelSpec:
    """One generated entry as a ModelSpec (built on first use)."""
    return spec_from_entry(_generated_by_id()[model_id])


def _lookup_names(name: str) -> list[str]:
    """The spellings one name is tried under: as given, without a ``.pt`` weights suffix (``yolov8m.pt``)."""
    key = str(name).strip().lower()
    return [key, key.removesuffix(".pt")] if key.endswith(".pt") else [key]


def lookup(name: str) -> ModelSpec | None:
    """A bundled model by id, alias or ModelScope id (case-insensitive), or a timm architecture name
    (catalog/nonllm/vision.py); the generated library is read only when the curated one lacks the name."""
    for key in _lookup_names(name):
        position = _curated_index().get(key)
        if position is not None:
            return _curated_spec(position)
        model_id = _generated_names().get(key)
        if model_id is not None:
            return _generated_spec(model_id)
    from gpuplan.catalog.nonllm.segment_anything import sam_spec
    from gpuplan.catalog.nonllm.vision import timm_spec

    table = generated_raw().get("timm")
    return sam_spec(str(name), table) or timm_spec(str(name), table)


def list_models(kind: str | None = None) -> list[ModelSpec]:
    """Bundled models, optionally only one kind: the curated ones in file order, then the generated ones."""
    return [m for m in load_models() if kind is None or m.kind == kind]


def get_model(name: str) -> ModelSpec:
    """A bundled model by id, alias or ModelScope id (case-insensitive), or the bundled base of a published
    quantized checkpoint (``...-GPTQ-Int4``). Never reads a file or the network (the web API relies on it)."""
    spec = lookup(name)
    if spec is None:
        quantized = quantized_base(str(name))
        spec = quantized[1] if quantized is not None else None
    if spec is None:
        raise get_model_error(str(name))
    return spec


@functools.cache
def _part_index() -> dict[str, ModelSpec]:
    """Repo name without its org (and without a trailing "-hf") -> model, curated models first:
    TheBloke/Llama-2-7B-Chat-GPTQ names its base as "Llama-2-7B-Chat"."""
    index: dict[str, ModelSpec] = {}
    for spec in load_curated() + load_generated():
        for name in _names(spec):
            part = name.lower().rsplit("/", 1)[-1]
            for key in (part, part.removesuffix("-hf")):
                index.setdefault(key, spec)
    return index


def quantized_base(name: str) -> tuple[QuantizedId, ModelSpec | None] | None:
    """(what a quantized checkpoint id says, its bundled base model or None), or None when ``name`` is a
    bundled model or names no quantization."""
    if lookup(name) is not None:
        return None
    from gpuplan.catalog.quantized import parse_quantized_id

    parsed = parse_quantized_id(name)
    if parsed is None:
        return None
    for base in parsed.base_names:
        spec = lookup(base) or _part_index().get(base.lower().rsplit("/", 1)[-1].removesuffix("-hf"))
        if spec is not None:
            return parsed, spec
    return parsed, None


# --------------------------------------------------------------------------------------------
# Closest known models (the unknown-model error)
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z]+|\d+(?:\.\d+)?[bmk]?")


def _tokens(name: str) -> set[str]:
    return set(_TOKEN.findall(name.lower()))


def _closeness(name: str, spec: ModelSpec) -> float:
    """0..1: how alike two model names are (the repo name part, its words and numbers, the org)."""
    org, _sep, part = name.lower().rpartition("/")
    c_org, _sep2, c_part = spec.id.lower().rpartition("/")
    ratio = max(difflib.SequenceMatcher(None, part, c_part).ratio(),
                max((difflib.SequenceMatcher(None, part, a).ratio() for a in spec.aliases), default=0.0))
    mine, theirs = _tokens(part), _tokens(c_part)
    overlap = len(mine & theirs) / len(mine | theirs) if mine | theirs else 0.0
    return 0.6 * ratio + 0.4 * overlap + (0.1 if org and org == c_org else 0.0)


def closest_models(name: str, n: int = 3, floor: float = 0.35) -> list[str]:
    """The ids of the ``n`` bundled models whose names are closest to ``name`` (none below ``floor``)."""
    scored = sorted(((_closeness(name, m), m.id) for m in load_models()), key=lambda x: (-x[0], x[1]))
    return [model_id for score, model_id in scored[:n] if score >= floor]


def get_model_error(name: str) -> GpuplanError:
    """'Unknown model' whose hint names the closest bundled models (``closest_models``) and the three ways to
    give a model gpuplan does not know: its config folder, an inline mapping of config.json keys, {params_b: N}."""
    close = closest_models(name)
    listed = ", ".join(repr(c) for c in close)
    if close:
        hint = _("Did you mean {names}? See `{command}`. Or describe it: model: ./its-folder (with config.json, or a "
                 "diffusers model_index.json), an inline mapping of its config.json keys, or {example} for a "
                 "Llama-style decoder of N billion parameters.").format(names=listed, command="gpuplan models",
                                                                        example=PARAMS_B_EXAMPLE)
        web_hint = _("Did you mean {names}? Pick one from the list on the page, or describe it: a mapping of its "
                     "config.json keys, or {example}.").format(names=listed, example=PARAMS_B_EXAMPLE)
    else:
        hint = _("See `{command}` for the known names. Or describe it: model: ./its-folder (with config.json, or a "
                 "diffusers model_index.json), an inline mapping of its config.json keys, or {example} for a "
                 "Llama-style decoder of N billion parameters.").format(command="gpuplan models", example=PARAMS_B_EXAMPLE)
        web_hint = _("Pick a known name from the list on the page, or describe it: a mapping of its config.json keys, "
                     "or {example}.").format(example=PARAMS_B_EXAMPLE)
    return GpuplanError(_("Unknown model {name!r}.").format(name=name), hint=hint, web_hint=web_hint, kind="model")


# --------------------------------------------------------------------------------------------
# Resolution of a workload's model reference
# --------------------------------------------------------------------------------------------


def workload_region(w) -> str | None:
    """The region a workload plans for (its first constraints.regions), which orders the hubs
    (catalog/configs/hub.py); None if unset."""
    cons = getattr(w, "constraints", None)
    regions = getattr(cons, "regions", None) if cons is not None else None
    return str(regions[0]) if regions else None


def resolve_model(ref: Any, *, region: str | None = None) -> ModelSpec:
    """Turn a workload's ``model:`` value into a ModelSpec.

    ``ref``: a bundled id/alias/ModelScope id or a timm architecture name; a path to config.json, to a folder
    holding one or to a diffusers pipeline folder (model_index.json); a Hugging Face / ModelScope id outside
    the library (its cached config, or fetched where the network allows: see gpuplan.catalog.configs.hub; ``region``
    orders the hubs); a mapping ``{params_b: N}``; a mapping of config.json keys; or a ModelSpec.
    Anything unusable raises GpuplanError (never another exception).
    """
    if isinstance(ref, ModelSpec):
        return ref
    if isinstance(ref, Mapping):
        if "params_b" in ref:
            from gpuplan.catalog.synth import synthesize_from_params_b

            return synthesize_from_params_b(ref)
        from gpuplan.catalog.configs.hf_config import from_hf_config

        name = ref.get("_name_or_path") or ref.get("name") or "inline-config"
        return from_hf_config(ref, name=str(name)[:200])
    if isinstance(ref, os.PathLike):
        from gpuplan.catalog.configs.hf_config import load_config_file

        return load_config_file(ref)
    if not isinstance(ref, str) or not ref.strip():
        raise GpuplanError(
            _("model must be a name, a config.json path or a mapping, not {name} {ref!r}.").format(name=type(ref).__name__, ref=ref),
            hint=_("E.g. model: Qwen/Qwen2.5-7B-Instruct, model: ./config.json or model: {params_b: 7}."),
            field="model",
        )
    name = ref.strip()
    spec = lookup(name)
    if spec is not None:
        return spec
    if _looks_like_path(name):
        from gpuplan.catalog.configs.hf_config import load_config_file

        return load_config_file(name)
    quantized = quantized_base(name)
    if quantized is not None and quantized[1] is not None:
        return quantized[1]  # a published quantized checkpoint: its base model's shape
    from gpuplan.catalog.configs import hub

    if hub.parse_repo_id(name) is not None:
        # A Hugging Face / ModelScope id the library lacks: its cached config, or a download where the
        # network allows; otherwise the unknown-model error, saying why the hub gave nothing.
        failures: list[str] = []
        remote = hub.resolve_remote(name, region=region, failures=failures)
        if remote is not None:
            return remote
        err = get_model_error(name)
        err.hint = hub.offline_hint(name, failures, err.hint or "")
        raise err
    raise get_model_error(name)


def _looks_like_path(name: str) -> bool:
    if len(name) > 4096 or "\x00" in name:
        return False
    try:
        if os.path.exists(name):
            return True
    except (OSError, ValueError):
        return False
    return name.endswith(".json") or name.startswith((".", "~", os.sep)) or (os.sep == "\\" and ":" in name)
