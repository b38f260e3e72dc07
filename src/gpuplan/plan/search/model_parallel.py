"""Tensor and pipeline parallelism only where they pay: a training plan splits the model over GPUs (TP, PP, or
context parallelism, all launched with ms-swift's Megatron mode) only where no layout without a split fits, or
where the split saves at least ``model_parallel_min_saving`` (data/recipes.yaml, with its reason) against the
best plan without one. Applied twice: within one machine group (same GPUs, same price per hour: the split
layout must be that much faster, :func:`pick_in_group`) and across the ranked plans (the same objective value,
:func:`prefer_plain`). Each choice is said in the plan's ``why``.

Across the ranked plans the same margin holds for the 8-bit AdamW fallback: the search takes 8-bit AdamW only in
a machine group where AdamW fits in no layout (it changes the optimizer's numerics and, with CPU offload, steps
through bitsandbytes' CPU kernels inside DeepSpeed), so a plan that needs it is no plainer than a split one. The
plan the margin protects is the best one with neither a split nor the fallback; where there is none, the best
without a split, as before."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from gpuplan.i18n import _
from gpuplan.plan.rank import pessimistic_cost

T = TypeVar("T")


def min_saving() -> float:
    """The least saving a model-parallel plan must show (data/recipes.yaml ``search.model_parallel_min_saving``)."""
    from gpuplan.plan.search.recipe import search_setting

    return float(search_setting("model_parallel_min_saving"))


def split(tp: int, pp: int, cp: int = 1) -> bool:
    """True when a layout splits the model over GPUs (tensor, pipeline or context parallel)."""
    return tp * pp * cp > 1


def split_words(tp: int, pp: int, cp: int = 1) -> str:
    """"TP 2", "TP 8 x PP 2", "TP 8 x CP 2": the split of a layout in words."""
    parts = [f"TP {tp}"] if tp > 1 else []
    parts += [f"PP {pp}"] if pp > 1 else []
    parts += [f"CP {cp}"] if cp > 1 else []
    return " x ".join(parts) or "DP"


def pick_in_group(plain: Any | None, splitting: Any | None, speed: Callable[[Any], float]) -> tuple[Any, str | None]:
    """The candidate one machine group keeps, and why (None: nothing to say): the split layout only where no
    plain layout fits or it is at least the margin faster (same GPUs and price: the same saving in cost)."""
    m = min_saving()
    if splitting is None:
        return plain, None
    lay = splitting.layout
    words = split_words(lay.tp, lay.pp, lay.cp)
    gpus = f"{splitting.gpus} x {splitting.inst.gpu}"
    if plain is None:
        return splitting, _("{split}: no layout without tensor or pipeline parallelism is feasible on {gpus} (GPU "
                                 "memory, host RAM or network)").format(
            split=words, gpus=gpus)
    fast, slow = speed(splitting), speed(plain)
    gain = 1.0 - slow / fast if fast > 0 else 0.0
    if gain >= m:
        return splitting, _("{split}: {gain} faster than the best layout without tensor or pipeline parallelism on "
                            "{gpus}; model parallelism is taken only for a saving of at least {margin}").format(
            split=words, gain=f"{gain:.0%}", gpus=gpus, margin=f"{m:.0%}")
    if gain <= 0:
        return plain, None
    return plain, _("data parallel without splitting the model: {split} would be {gain} faster on {gpus}, under the "
                    "{margin} margin for tensor or pipeline parallelism (data/recipes.yaml)").format(
        split=words, gain=f"{gain:.0%}", gpus=gpus, margin=f"{m:.0%}")


def is_split(p: Any) -> bool:
    par = getattr(p, "parallel", None) or {}
    return bool(par.get("launcher")) and split(int(par.get("tp") or 1), int(par.get("pp") or 1), int(par.get("cp") or 1))


def _value(p: Any, objective: str, cmin: float, tmin: float) -> float:
    """The objective's value of a plan (smaller is better), as the ranking reads it."""
    c, t = pessimistic_cost(p), p.time_key
    c = math.inf if c is None else c
    t = math.inf if t is None else t
    if objective == "time":
        return t
    if objective == "balanced":
        return math.sqrt((c / cmin if cmin > 0 else c) * (t / tmin if tmin > 0 else t))
    return c


def prefer_plain(ranked: Sequence[T], objective: str,
                 fallback: Callable[[T], bool] = lambda _p: False) -> tuple[list[T], str | None]:
    """The ranked training plans with every split plan (or, given ``fallback``, every plan that needs the 8-bit
    AdamW fallback) that ranks above the best plain plan, but saves less than the margin against it, moved to
    just after that plan; and the sentence for the top plan. Plain: no split and no fallback, else (none such)
    no split."""
    plans = list(ranked)
    best = next((p for p in plans if not is_split(p) and not fallback(p)), None) or \
        next((p for p in plans if not is_split(p)), None)
    if best is None or not plans or plans[0] is best:
        return plans, None
    m = min_saving()
    costs = [c for c in (pessimistic_cost(p) for p in plans) if c]
    times = [p.time_key for p in plans if p.time_key]   # type: ignore[attr-defined]
    cmin, tmin = min(costs, default=1.0), min(times, default=1.0)
    ref = _value(best, objective, cmin, tmin)
    head: list[T] = []
    held: list[T] = []
    for p in plans[:plans.index(best)]:
        v = _value(p, objective, cmin, tmin)
        saving = 1.0 - v / ref if ref > 0 and math.isfinite(ref) else 0.0
        (held if saving < m else head).append(p)
    out = head + [best] + held + plans[plans.index(best) + 1:]
    top = out[0]
    par = top.parallel   # type: ignore[attr-defined]
    if top is best:
        first = held[0]
        fp = first.parallel   # type: ignore[attr-defined]
        saving = 1.0 - _value(first, objective, cmin, tmin) / ref
        if not is_split(first):
            return out, _("with AdamW: {inst} with the 8-bit AdamW fallback shows {saving} less, under the {margin} "
                          "margin for a plan that changes the optimizer's numerics (data/recipes.yaml)").format(
                inst=first.instance_type, saving=f"{saving:.0%}", margin=f"{m:.0%}")   # type: ignore[attr-defined]
        return out, _("without splitting the model: {inst} with {split} shows {saving} less, under the {margin} margin "
                      "for tensor or pipeline parallelism (data/recipes.yaml)").format(
            inst=first.instance_type, split=split_words(int(fp.get("tp") or 1), int(fp.get("pp") or 1),   # type: ignore[attr-defined]
                                                        int(fp.get("cp") or 1)),
            saving=f"{saving:.0%}", margin=f"{m:.0%}")
    saving = 1.0 - _value(top, objective, cmin, tmin) / ref
    if not is_split(top):
        return out, _("8-bit AdamW: {saving} better than the best plan with AdamW ({inst}); a plan that changes the "
                      "optimizer's numerics is taken only for a saving of at least {margin}").format(
            saving=f"{saving:.0%}", inst=best.instance_type, margin=f"{m:.0%}")   # type: ignore[attr-defined]
    if any(not is_split(p) for p in head):   # the reference skipped a plan without a split: it needs 8-bit AdamW
        return out, _("{split}: {saving} better than the best plan with neither tensor or pipeline parallelism nor the "
                      "8-bit AdamW fallback ({inst}); either is taken only for a saving of at least {margin}").format(
            split=split_words(int(par.get("tp") or 1), int(par.get("pp") or 1), int(par.get("cp") or 1)),
            saving=f"{saving:.0%}", inst=best.instance_type, margin=f"{m:.0%}")   # type: ignore[attr-defined]
    return out, _("{split}: {saving} better than the best plan without tensor or pipeline parallelism ({inst}); model "
                  "parallelism is taken only for a saving of at least {margin}").format(
        split=split_words(int(par.get("tp") or 1), int(par.get("pp") or 1), int(par.get("cp") or 1)),
        saving=f"{saving:.0%}", inst=best.instance_type, margin=f"{m:.0%}")   # type: ignore[attr-defined]


def optimizer_fallback(w: Any) -> Callable[[Any], bool]:
    """Whether a ranked plan needs the search's 8-bit AdamW fallback (plan/search/candidates.py OPTIMIZER_ORDER):
    never when the workload names its optimizer (then it is the user's choice, not a fallback)."""
    from gpuplan.plan.search.candidates import OPTIMIZER_ORDER

    if getattr(w, "optimizer", None) is not None:
        return lambda _p: False
    return lambda p: (getattr(p, "parallel", None) or {}).get("optimizer") == OPTIMIZER_ORDER[-1]
