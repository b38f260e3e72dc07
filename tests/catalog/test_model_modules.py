"""The model catalog's modules (record, config parsing, library, hub) import each other without a cycle,
and every public name stays importable from gpuplan.catalog.models."""

from __future__ import annotations

import ast
from pathlib import Path

import gpuplan.catalog.models as facade

CATALOG = Path(facade.__file__).parent
MODEL_MODULES = ("model_spec", "model_validate", "model_linears", "hf_archs", "hf_config", "synth", "library", "hub",
                 "models", "quantized")
# where each lives under gpuplan/catalog/ (config.json parsing and the hub are the configs/ sub-package)
PATHS = {m: f"configs/{m}" if m in ("hf_archs", "hf_config", "hub") else m for m in MODEL_MODULES}


def _imports(module: str) -> set[str]:
    """gpuplan.catalog modules that ``module`` imports at run time (top level or inside functions; imports
    under ``if TYPE_CHECKING:`` are for the type checker only)."""
    tree = ast.parse((CATALOG / f"{PATHS[module]}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "gpuplan.catalog":
                out.update(alias.name for alias in node.names)
            elif node.module.startswith("gpuplan.catalog."):
                out.add(node.module.split(".")[-1])
                out.update(alias.name for alias in node.names)   # from gpuplan.catalog.configs import hub
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[-1] for a in node.names if a.name.startswith("gpuplan.catalog."))
    return out & set(MODEL_MODULES)


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    stack = [(start, [start])]
    while stack:
        node, path = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt == start:
                return [*path, nxt]
            if nxt not in path:
                stack.append((nxt, [*path, nxt]))
    return None


def test_no_import_cycle_among_the_model_modules():
    present = [m for m in MODEL_MODULES if (CATALOG / f"{PATHS[m]}.py").is_file()]
    assert len(present) == len(MODEL_MODULES), present
    graph = {m: _imports(m) for m in present}
    for module in present:
        assert _cycle_from(module, graph) is None, _cycle_from(module, graph)


def test_hub_does_not_import_the_library():
    assert not _imports("hub") & {"library", "models"}


def test_public_names_stay_importable_from_catalog_models():
    for name in ("ModelSpec", "MoESpec", "MLASpec", "NonLLMProfile", "param_count_from_shape", "active_param_count",
                 "load_models", "list_models", "get_model", "get_model_error", "resolve_model", "from_hf_config",
                 "synthesize_from_params_b", "load_config_file", "validate_spec", "_looks_like_path"):
        assert getattr(facade, name) is not None
