"""The model catalog's public names, kept importable from here (callers import ``gpuplan.catalog.models``).

The code lives in four modules (see docs/models.md):

* :mod:`gpuplan.catalog.model_spec` - the record (``ModelSpec``, ``MoESpec``, ``MLASpec``,
  ``NonLLMProfile``) and parameter counts from the shape; :mod:`~gpuplan.catalog.model_validate`
  checks it, :mod:`~gpuplan.catalog.model_linears` lists its linear layers (LoRA targets);
* :mod:`gpuplan.catalog.configs.hf_config` - Hugging Face ``config.json`` parsing (``hf_archs``: per
  model_type defaults);
* :mod:`gpuplan.catalog.library` - the bundled library (models.yaml, then the generated
  model_library.json), name lookup, did-you-mean and ``resolve_model``;
* :mod:`gpuplan.catalog.synth` - ``{params_b: N}`` shapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuplan.catalog.library import (
    _looks_like_path,
    get_model,
    get_model_error,
    list_models,
    load_models,
    resolve_model,
    workload_region,
)
from gpuplan.catalog.model_spec import (
    ATTENTIONS,
    KINDS,
    LIMITS,
    LLM_KINDS,
    MAX_PARAMS,
    MAX_PARAMS_B,
    MLPS,
    NORMS,
    POSITIONS,
    MLASpec,
    ModelSpec,
    MoESpec,
    NonLLMProfile,
    active_param_count,
    param_count_from_shape,
)
from gpuplan.catalog.model_validate import validate_spec

if TYPE_CHECKING:
    from gpuplan.catalog.configs.hf_config import from_hf_config, load_config_file
    from gpuplan.catalog.synth import MIN_PARAMS_B, synthesize_from_params_b

# Imported on first use (a bundled name needs neither config.json parsing nor synthesized shapes).
_LAZY = {"from_hf_config": "gpuplan.catalog.configs.hf_config", "load_config_file": "gpuplan.catalog.configs.hf_config",
         "MIN_PARAMS_B": "gpuplan.catalog.synth", "synthesize_from_params_b": "gpuplan.catalog.synth"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

__all__ = [
    "MoESpec", "MLASpec", "NonLLMProfile", "ModelSpec", "param_count_from_shape", "active_param_count",
    "load_models", "list_models", "workload_region", "get_model", "get_model_error", "resolve_model", "from_hf_config",
    "synthesize_from_params_b", "load_config_file", "validate_spec", "_looks_like_path",
    "KINDS", "LLM_KINDS", "ATTENTIONS", "MLPS", "NORMS", "POSITIONS", "LIMITS", "MAX_PARAMS", "MAX_PARAMS_B",
    "MIN_PARAMS_B",
]
