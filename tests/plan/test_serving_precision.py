"""A V100 has no BF16: a serving plan there runs FP16, and says so in its record, its estimate and its launch flag
(plan review of examples/guide-needs/n2-serve-14b-50users.yaml: gn6v plans said "BF16 weights" while serve.sh ran
--dtype float16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.plan import recommend
from gpuplan.workload_loading import load_workload

N2 = Path(__file__).resolve().parents[2] / "examples/guide-needs/n2-serve-14b-50users.yaml"


@pytest.mark.parametrize("gpu,dtype,flag", [("V100-SXM2-16GB", "fp16", "float16"),
                                             ("A100-SXM4-40GB", "bf16", "bfloat16")])
def test_the_plan_records_estimates_and_launches_the_dtype_the_gpu_runs(gpu, dtype, flag):
    from gpuplan.plan.bundle import bundle_inputs
    from gpuplan.render.bundle import render_bundle

    w = load_workload(str(N2)).with_updates(hardware={"gpu": gpu})
    rec = recommend(w)
    p = rec.best
    assert p.gpu == gpu
    assert p.parallel["precision"] == dtype and p.serving["weight_format"] == dtype
    assert f"{dtype.upper()} weights" in p.layout
    # estimate of the plan's machine and layout runs the same type
    e = estimate(w.with_updates(hardware={"instance_type": p.instance_type},
                                parallel={"tp": p.parallel["tp"], "pp": p.parallel["pp"]}))
    assert e.workload.precision == dtype
    resolved, est = bundle_inputs(p, rec.workload)
    assert resolved.precision == dtype
    serve = render_bundle(p.to_dict(), resolved, est)["serve.sh"]
    assert f"--dtype {flag}\n" in serve
