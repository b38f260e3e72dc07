"""The check matrix's bundles, written once per session, and their preflight reports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuplan.check import Report, check_bundle

from .matrix import expanded, workload_for

os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")


def write(case, region: str, out: Path) -> Path:
    """What `gpuplan plan` writes for the case: the recommender's best plan, re-estimated on its hardware."""
    from gpuplan.plan import recommend
    from gpuplan.plan.bundle import bundle_inputs
    from gpuplan.render.bundle import build_bundle
    from gpuplan.workload import Workload

    rec = recommend(Workload.model_validate(workload_for(case, region)), top=1)
    assert rec.plans, f"{case.id}@{region}: no plan"
    data = rec.to_dict()
    resolved, est = bundle_inputs(rec.plans[0], rec.workload)
    return build_bundle(data["plans"][0], resolved, est, out, rejected=data.get("rejected"))


@pytest.fixture(scope="session")
def matrix(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("check-matrix")
    return {bid: write(case, region, root / bid.replace("@", "_")) for bid, case, region in expanded()}


@pytest.fixture(scope="session")
def reports(matrix) -> dict[str, Report]:
    return {bid: check_bundle(path) for bid, path in matrix.items()}
