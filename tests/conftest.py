"""Test-wide setup: this folder is importable, so helpers such as `clirun` are shared by every test."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_config_dir(tmp_path_factory):
    """A calibration overlay in the developer's config folder (`gpuplan calibrate`) must never change test
    results: the whole run uses an empty config folder of its own."""
    patch = pytest.MonkeyPatch()
    patch.setenv("GPUPLAN_CONFIG_DIR", str(tmp_path_factory.mktemp("gpuplan-config")))
    # An unknown model id must never reach a real hub from a test: the hub tests inject a fake fetcher.
    patch.setenv("GPUPLAN_OFFLINE", "1")
    # Tables are as wide as COLUMNS says (160 on a pipe without it). pytest-xdist's workers start with COLUMNS=80
    # in their environment, which a single-process run does not have: every test sees the same width unless it
    # sets COLUMNS itself (monkeypatch), however the tests are run.
    patch.delenv("COLUMNS", raising=False)
    patch.delenv("LINES", raising=False)
    yield
    patch.undo()


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache_dir(tmp_path_factory):
    """The developer's price cache (a live refresh, imported prices: `gpuplan catalog import`) must never
    change test results: the whole run starts from an empty cache folder of its own. Tests that need a
    cache set GPUPLAN_CACHE_DIR themselves."""
    patch = pytest.MonkeyPatch()
    patch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path_factory.mktemp("gpuplan-cache")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def acc():
    """bench/accuracy.py loaded once as a module (the bench is a script, not a package); registered in sys.modules
    because its dataclasses look their module up there."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "accuracy.py"
    spec = importlib.util.spec_from_file_location("bench_accuracy", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_accuracy"] = mod
    spec.loader.exec_module(mod)
    return mod
