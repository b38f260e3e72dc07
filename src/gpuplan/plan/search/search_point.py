"""One point of the search space: the workload variant it was estimated for (quantization, optimizer, serving
configuration) and the feasible candidate with its estimate, plus the choice of the best point per machine
group. The types every search module shares (search, search_group, search_explain, serving_config,
costing, drafts), kept apart so that none of them imports another in a circle."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuplan.catalog.hardware.instances import InstanceType
from gpuplan.estimate.core import Estimate
from gpuplan.estimate.system import Layout
from gpuplan.plan.search.candidates import Knobs
from gpuplan.plan.search.recipe import BatchOption, Recipe
from gpuplan.workload import Workload


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class Candidate:
    """One feasible point of the space, with its estimate."""

    inst: InstanceType
    nodes: int
    tp: int
    pp: int
    dp: int
    knobs: Knobs
    variant: "Variant"
    est: Estimate
    layout: Layout
    why: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    batch: BatchOption | None = None          # the split of the global batch the search chose (training)
    largest_fit: int | None = None            # the largest micro-batch this knob setting fits
    next_need: tuple[int, float | None] | None = None   # the next micro-batch and its GiB per GPU
    recipe: Recipe | None = None              # the plan's recipe block (training)
    explain: Callable[["Candidate"], None] | None = field(default=None, repr=False)   # writes why and recipe

    def finish(self) -> "Candidate":
        """Write the reasons and the recipe (the search does it only for the candidates that win a group)."""
        if self.explain is not None:
            explain, self.explain = self.explain, None
            explain(self)
        return self

    @property
    def gpus(self) -> int:
        return self.est.system.total_gpus

    def speed(self, training: bool) -> float:
        """Bigger is better: tokens/s (or samples/s) for training, requests/s of the group for serving."""
        p = self.est.performance
        if training:
            return float(p.get("tokens_per_s") or p.get("samples_per_s") or 0.0)
        return float(p.get("max_requests_per_s") or 0.0) * self.dp

    def latency_s(self) -> float | None:
        p = self.est.performance
        if p.get("ttft_s") is None:
            return None
        return float(p["ttft_s"]) + float(p.get("tpot_s") or 0.0) * max(0, (self.variant.w.output_tokens or 1) - 1)


@dataclass(frozen=True)
class Variant:
    """The workload with one quantization/optimizer choice filled in."""

    quantization: str
    optimizer: str | None
    w: Workload
    config: Any = None    # serving: the engine / weight / KV / DP-attention point (plan/serving/serving_config.py)


def best_per_group(cands: list[Candidate], training: bool) -> list[Candidate]:
    """Keep the fastest layout per (instance type, nodes): the price per hour is the same, so the
    fastest is also the cheapest for every billing mode (ties: fewer GPUs of memory pressure). Training splits
    the model over GPUs (TP/PP/CP) only where nothing else fits or it is at least the margin faster
    (plan/search/model_parallel.py), and says so."""
    from gpuplan.plan.search.model_parallel import pick_in_group, split

    best: dict[tuple, list[Candidate | None]] = {}
    for c in cands:
        slot = best.setdefault((c.inst.instance_type, c.nodes), [None, None])
        i = 1 if training and split(c.layout.tp, c.layout.pp, c.layout.cp) else 0
        cur = slot[i]
        if cur is None or _better(c, cur, training):
            slot[i] = c
    out = []
    for plain, splitting in best.values():
        chosen, why = pick_in_group(plain, splitting, lambda c: c.speed(training))
        chosen.finish()
        if why:
            chosen.why.append(why)
        out.append(chosen)
    return out


def _better(a: Candidate, b: Candidate, training: bool) -> bool:
    sa, sb = a.speed(training), b.speed(training)
    if not math.isclose(sa, sb, rel_tol=1e-9):
        return sa > sb
    return a.est.memory.per_gpu_bytes < b.est.memory.per_gpu_bytes
