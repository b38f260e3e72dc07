"""Quick mode: `gpuplan quick --params 7B --task pretrain|full|lora|qlora|inference`.

The popular guides answer "which GPU?" with a decision tree by parameter count (guide A,
../shared/guides/guide-A-training-instance-selection.txt, section 四 "快速决策树"). Quick mode
asks the estimators the same question for a synthetic model of that size ({params_b: N}) and
checks the tree's answer on its own hardware: where the folklore is wrong, it says so and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _, localize
from gpuplan.units import GIB
from gpuplan.workload import read_task

# The guide's tree (upper bound in billions of parameters -> what it recommends). H100/"gn8" does
# not exist on Alibaba ECS (facts file, guide error #11): the nearest is gn8v (H20 96 GB).
FOLKLORE_TREE: tuple[tuple[float, str, str, int, str], ...] = (
    (1.0, "<1B", "A10-24GB", 1, "single A10 (g8i)"),
    (10.0, "1B-10B", "A100-SXM4-80GB", 1, "single A100 (gn7e) or 2 x A10"),
    (70.0, "10B-70B", "A100-SXM4-80GB", 4, "4 x A100 (gn7e) + NVLink + RoCE"),
    (float("inf"), ">70B", "H20-96GB", 16, "H100 (gn8) + multi-node RDMA + DeepSpeed/FSDP"),
)
FOLKLORE_ERRATA = {
    "<1B": "g8i is a CPU family (no GPU); the A10 families are gn7i / ebmgn7i",
    ">70B": "there is no gn8 / H100 family on Alibaba ECS; checked on gn8v (H20 96 GB) x 16 instead",
}
_PARAMS = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmbt]?)\s*$", re.I)


def parse_params(text: str | float | int) -> float:
    """'7B' / '70b' / '350M' / 1.5 -> billions of parameters."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _PARAMS.match(str(text))
        if not m:
            raise GpuplanError(_("Cannot read parameter count {text!r}.").format(text=text),
                               hint=_("Write it like 7B, 70B, 350M or 1.5."))
        value = float(m.group(1)) * {"": 1.0, "b": 1.0, "m": 1e-3, "k": 1e-6, "t": 1e3}[m.group(2).lower()]
    if not 0.001 <= value <= 10_000:
        raise GpuplanError(_("Parameter count {value}B is out of range.").format(value=f"{value:g}"),
                           hint=_("Give between 1M and 10T parameters."))
    return value


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class QuickResult:
    """The one-line answer of `gpuplan quick`."""

    params_b: float
    task: str
    bucket: str
    folklore: str
    folklore_gpu: str
    folklore_gpus: int
    folklore_fits: bool | None
    folklore_memory_per_gpu_bytes: float | None
    folklore_capacity_bytes: float | None
    verdict: str                      # holds | works but slow | works but expensive | wrong
    notes: list[str] = field(default_factory=list)
    recommendation: Any = None        # the Recommendation for the free search
    folklore_plan: Any = None         # the best plan on the tree's hardware (None when it does not fit)
    alternative: Any = None           # the cheaper / faster plan the verdict points to

    def to_dict(self) -> dict[str, Any]:
        best = self.recommendation.best if self.recommendation else None
        return {
            "schema_version": 1, "params_b": self.params_b, "task": self.task, "bucket": self.bucket,
            "folklore": {"says": self.folklore, "gpu": self.folklore_gpu, "gpus": self.folklore_gpus,
                         "fits": self.folklore_fits,
                         "memory_per_gpu_bytes": None if self.folklore_memory_per_gpu_bytes is None
                         else int(self.folklore_memory_per_gpu_bytes),
                         "capacity_per_gpu_bytes": None if self.folklore_capacity_bytes is None
                         else int(self.folklore_capacity_bytes)},
            "verdict": self.verdict, "notes": self.notes,
            "folklore_plan": self.folklore_plan.brief() if self.folklore_plan is not None else None,
            "alternative": self.alternative.brief() if self.alternative is not None else None,
            "best_plan": best.to_dict() if best else None,
            "binding_constraints": self.recommendation.binding_constraints if self.recommendation else [],
        }


def _gpu_gib(plan) -> float | None:
    """Nominal GPU memory (GiB per GPU) of a plan's instance type, as the catalog publishes it."""
    from gpuplan.catalog.hardware.instances import load_instances

    inst = load_instances().get(plan.instance_type)
    return inst.gpu_memory_gib if inst else None


def quick(params_b: float | str, task: str = "lora", *, seq_len: int | None = None, **kw: Any) -> QuickResult:
    """Answer the decision-tree question for a model of ``params_b`` billion parameters."""
    from gpuplan.plan.recommend import recommend

    pb = parse_params(params_b)
    t = read_task(task)    # the workload's task words: `train` or `finetune` (two meanings each) are refused
    bucket_max, bucket, gpu, count, says = next(row for row in FOLKLORE_TREE if pb <= row[0])
    base: dict[str, Any] = {"model": {"params_b": pb}, "task": t}
    if seq_len:
        base["seq_len" if t != "inference" else "prompt_tokens"] = seq_len
    free = recommend(base, top=3, **kw)
    nodes = max(1, count // 8)
    pinned = dict(base, hardware={"gpu": gpu, "count": count, **({"nodes": nodes} if nodes > 1 else {})},
                  constraints={"include_status": ["ga", "preview", "ticket", "unconfirmed"]})
    notes: list[str] = []
    if bucket in FOLKLORE_ERRATA:
        notes.append(FOLKLORE_ERRATA[bucket])
    try:
        folk = recommend(pinned, top=1, **kw)
    except GpuplanError as exc:  # pragma: no cover - defensive
        folk = None
        notes.append(_("could not check the folklore hardware: {error}").format(error=exc.message))
    fits = mem = cap = None
    if folk is not None:
        fits = folk.ok
        if folk.ok:
            p = folk.best
            assert p is not None  # ok: at least one plan
            mem, cap = p.memory.per_gpu_bytes, p.memory.capacity_per_gpu_bytes
        else:
            r = [x for x in folk.rejected if x["code"] == "memory"]
            if r:
                notes.append(_("folklore hardware: {reason}").format(reason=r[0]["reason"]))
    best = free.best
    verdict, alt = "holds", None
    fp = folk.best if folk is not None and folk.ok else None
    if fits is False:
        verdict = "wrong"
        notes.append(_("the tree's {count} x {gpu} does not hold a {params}B {task} job").format(
            count=count, gpu=gpu, params=f"{pb:g}", task=t))
        alt = best
    elif fp is not None and best is not None and mem is not None and cap is not None:
        verdict, alt, why = judge(fp, best, free.all_plans)
        notes.append(_("fits in {used} of {cap} GiB per GPU on the tree's hardware").format(
            used=f"{mem / GIB:.1f}", cap=f"{cap / GIB:.1f}"))
        notes.extend(why)
    if best is not None:
        notes.append(_("estimator's pick: {n} x {instance} ({gpus} x {gpu}), {layout}").format(
            n=best.instance_count, instance=best.short_name, gpus=best.gpus_total, gpu=best.gpu, layout=localize(best.layout)))
    return QuickResult(pb, t, bucket, says, gpu, count, fits, mem, cap, verdict, notes, free, fp, alt)


SLOW_FACTOR = 2.0       # "works but slow": the tree's plan takes over 2x the time of the estimator's pick,
LOW_MFU = 0.10          # or runs below 10 % MFU, or offloads to the CPU
EXPENSIVE_FACTOR = 1.5  # "works but expensive": over 1.5x the cost of the estimator's pick (pessimistic cost)


def _cost(p) -> float | None:
    from gpuplan.plan.rank import pessimistic_cost

    return pessimistic_cost(p)


def judge(folk, best, plans) -> tuple[str, Any, list[str]]:
    """(verdict, the alternative plan, reasons) for the tree's plan ``folk`` against the free search."""
    why: list[str] = []
    perf = folk.performance or {}
    mfu = perf.get("mfu")
    offload = (folk.parallel or {}).get("offload") not in (None, "none")
    fastest = min((p for p in plans if p.time_key), key=lambda p: p.time_key, default=None)
    slow_by = folk.time_key / best.time_key if folk.time_key and best.time_key else None
    if offload or (mfu is not None and mfu < LOW_MFU) or (slow_by is not None and slow_by > SLOW_FACTOR):
        bits = [b for b in (_("CPU offload") if offload else "",
                            f"MFU {mfu:.0%}" if mfu is not None and mfu < LOW_MFU else "",
                            _("{factor} x the time of {gpus} x {gpu}").format(
                                factor=f"{slow_by:.1f}", gpus=best.gpus_total, gpu=best.gpu)
                            if slow_by is not None and slow_by > SLOW_FACTOR else "") if b]
        why.append(_("works but slow: {reasons}").format(reasons=_(", ").join(bits)))
        return "works but slow", best if slow_by and slow_by > 1 else fastest, why
    fc, bc = _cost(folk), _cost(best)
    if fc is not None and bc is not None and fc > EXPENSIVE_FACTOR * bc:
        why.append(_("works but expensive: {factor} x the cost of {n} x {instance} ({gpus} x {gpu}, {billing})").format(
            factor=f"{fc / bc:.1f}", n=best.instance_count, instance=best.short_name, gpus=best.gpus_total,
            gpu=best.gpu, billing=_(best.cost.billing or "unpriced")))
        return "works but expensive", best, why
    return "holds", None, why
