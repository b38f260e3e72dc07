"""The check matrix's bundles, written once per test run (shared by the xdist workers), and their preflight reports,
made on demand for the bundles a worker's tests read."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from gpuplan.check import Report, check_bundle

from .matrix import expanded, workload_for

os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")

CASES = {bid: (case, region) for bid, case, region in expanded()}


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


class Matrix(Mapping[str, Path]):
    """bundle id -> the bundle's folder, written on first use by whichever worker gets there first (a lock per
    bundle in the folder every xdist worker shares): the workers split the writing instead of each writing all."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: dict[str, Path] = {}

    def _build(self, bid: str, wait: bool) -> Path | None:
        if bid in self.paths:
            return self.paths[bid]
        out = self.root / bid.replace("@", "_")
        done = self.root / f"{out.name}.done"
        try:
            with FileLock(str(out) + ".lock", timeout=-1 if wait else 0):
                if not done.exists():
                    shutil.rmtree(out, ignore_errors=True)
                    case, region = CASES[bid]
                    path = write(case, region, out)
                    done.write_text(str(path))
        except Timeout:
            return None   # another worker is writing it
        self.paths[bid] = Path(done.read_text())
        return self.paths[bid]

    def __getitem__(self, bid: str) -> Path:
        if bid not in CASES:
            raise KeyError(bid)
        path = self._build(bid, wait=True)
        assert path is not None
        return path

    def __iter__(self) -> Iterator[str]:
        # a test that reads every bundle first writes those no other worker is writing, then waits for the rest
        pending = [bid for bid in CASES if self._build(bid, wait=False) is None]
        for bid in pending:
            self[bid]
        return iter(CASES)

    def __len__(self) -> int:
        return len(CASES)


class Reports(Mapping[str, Report]):
    """bundle id -> `gpuplan check`'s report on it, made when a test asks for it."""

    def __init__(self, matrix: Matrix) -> None:
        self.matrix = matrix
        self.done: dict[str, Report] = {}

    def __getitem__(self, bid: str) -> Report:
        if bid not in self.done:
            self.done[bid] = check_bundle(self.matrix[bid])
        return self.done[bid]

    def __iter__(self) -> Iterator[str]:
        return iter(CASES)

    def __len__(self) -> int:
        return len(CASES)


@pytest.fixture(scope="session")
def matrix(tmp_path_factory, worker_id) -> Matrix:
    # the parent of a worker's base temp folder is the run's, shared by every worker (pytest-xdist's own recipe)
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if worker_id != "master" else base) / "check-matrix"
    root.mkdir(exist_ok=True)
    return Matrix(root)


@pytest.fixture(scope="session")
def reports(matrix) -> Reports:
    return Reports(matrix)
