"""Checked by mypy (listed in pyproject's [tool.mypy] files), never run: the public API's types.

`gpuplan.estimate` and `gpuplan.quick` share their names with a subpackage and a module; these lines
fail type checking if either name ever resolves to the module instead of the function.
"""

from __future__ import annotations

from pathlib import Path

from typing_extensions import assert_type

import gpuplan
import gpuplan.estimate
import gpuplan.plan.quick
from gpuplan.estimate.core import Estimate
from gpuplan.plan.quick import QuickResult
from gpuplan.plan.recommend import Recommendation
from gpuplan.workload import Workload


def _uses(w: Workload) -> None:
    assert_type(gpuplan.load_workload("examples/qwen2.5-7b-lora.yaml"), Workload)
    assert_type(gpuplan.estimate(w), Estimate)
    assert_type(gpuplan.estimate({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"}), Estimate)
    assert_type(gpuplan.recommend(w, top=3), Recommendation)
    assert_type(gpuplan.quick("7B"), QuickResult)
    assert_type(gpuplan.quick(7, "infer"), QuickResult)
    assert_type(gpuplan.build_plan(w, Path("out")), Path)
    value, est = gpuplan.max_fit(w, "batch_size")
    assert_type(value, int)
    assert_type(est, Estimate | None)
