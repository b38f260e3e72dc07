"""gpuplan: which cloud GPU instances, how many, configured how, for how long and at what cost.

Public API (lazy: importing gpuplan loads no catalog and never imports torch):

- ``load_workload(path_or_mapping, **flags)`` -> Workload
- ``estimate(workload, **flags)`` -> Estimate (``.memory``, ``.performance``, ``.to_dict()``)
- ``max_fit(workload, "batch_size" | "seq_len" | "prompt_tokens" | "concurrency")`` -> (value, Estimate)
- ``recommend(workload, **flags)`` -> Recommendation (``.plans``, ``.to_dict()``)
- ``quick(params_b, task)`` -> the decision-tree answer
- ``build_plan(workload, out_dir, pick=1)`` -> the plan bundle folder
- ``GpuplanError`` — every user-facing error (message + hint)
"""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError

__version__ = "0.1.0"
__all__ = ["GpuplanError", "__version__", "build_plan", "estimate", "load_workload", "max_fit", "quick", "recommend"]


def load_workload(source: Any, **flags: Any):
    from gpuplan.workload import load_workload as _load

    return _load(source, **flags)


def estimate(workload: Any, **flags: Any):
    from gpuplan.estimate.core import estimate as _estimate

    return _estimate(workload, **flags)


def max_fit(workload: Any, field: str, **flags: Any):
    from gpuplan.estimate.core import max_fit as _max_fit

    return _max_fit(workload, field, **flags)


def recommend(workload: Any, **kwargs: Any):
    from gpuplan.plan import recommend as _recommend

    return _recommend(workload, **kwargs)


def quick(params_b: Any, task: str = "lora", **kwargs: Any):
    from gpuplan.plan import quick as _quick

    return _quick(params_b, task, **kwargs)


def build_plan(workload: Any, out_dir: Any, *, pick: int = 1, force: bool = False, lang: str = "en"):
    from pathlib import Path

    from gpuplan.plan.bundle import write_plan_bundle

    path, _ = write_plan_bundle(load_workload(workload), Path(out_dir), pick=pick, force=force, lang=lang)
    return path
