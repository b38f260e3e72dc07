"""Catalog tests never see a real user cache: GPUPLAN_CACHE_DIR points at an empty folder."""

from __future__ import annotations

import pytest

from gpuplan.catalog.hardware import instances as cat


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "empty-cache"))
    cat.clear_cache()
    yield
    cat.clear_cache()
