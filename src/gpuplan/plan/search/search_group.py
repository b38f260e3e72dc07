"""The search of one layout group: one instance type and node count, one (TP, PP, DP, CP) shape, one
variant and one lattice of memory-saving knobs. It probes memory (plan/search/recipe_search.py walks the knobs and
the splits of the global batch), times the points that can be fastest, and leaves the reasons for later:
only the candidates that win their group are explained (:meth:`GroupSearch.explain`)."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from gpuplan.estimate.core import Estimate
from gpuplan.estimate.intervals import interval_class
from gpuplan.estimate.system import NAIVE_PP_FRAMEWORKS, Layout
from gpuplan.i18n import _
from gpuplan.plan.money.ranges import memory_need
from gpuplan.plan.search import feasibility as fz
from gpuplan.plan.search.candidates import Knobs, _structure, lattice
from gpuplan.plan.search.model_parallel import split
from gpuplan.plan.search.recipe_search import walk_recipes
from gpuplan.plan.search.search_explain import knob_why, recipe_of
from gpuplan.plan.search.search_point import Candidate, Variant
from gpuplan.units import GIB

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.plan.search.search import Searcher


class GroupSearch:
    """Searches one group and appends its candidates (see the module docstring)."""

    def __init__(self, s: "Searcher", inst, nodes: int, system, shape: tuple[int, int, int, int], v: "Variant",
                 cands: list["Candidate"], reject, best_mem):
        self.s, self.inst, self.nodes, self.system, self.shape, self.v = s, inst, nodes, system, shape, v
        self.cands, self.reject, self.best_mem = cands, reject, best_mem
        tp, pp, dp, cp = shape
        self.opts = s.batch_options(dp, pp)
        self.naive = pp > 1 and (s.w.framework or "auto") in NAIVE_PP_FRAMEWORKS
        self.pipelined = pp > 1 and not self.naive and s.target is not None
        # the memory-only pass of a knob setting is the same for every type with this GPU, node shape and
        # variant: looked up by small keys (no Layout to build or hash again)
        self.group = (v.quantization, v.optimizer, v.config, s._key(system, memory=True), shape)
        self.evaluated: dict[tuple[Knobs, int], tuple[Estimate | None, Layout, fz.Reject | None]] = {}
        self.timed: dict[tuple[Knobs, int], Candidate | None] = {}

    # ------------------------------------------------------------------ memory probes
    def evaluate(self, k: Knobs, i: int) -> tuple[Estimate | None, Layout, fz.Reject | None]:
        got = self.evaluated.get((k, i))
        if got is not None:
            return got
        s = self.s
        mkey = (self.group, k, i)
        mem = s._mem_eval.get(mkey)
        if mem is None:
            vk = s.variant_for(self.v, k, self.shape)
            tp, pp, dp, cp = self.shape
            lay = s.layout(vk, tp, pp, dp, k, self.opts[i], cp=cp)
            # a quiet time estimate of this point (a speed bound) holds its memory too; a climbing pipeline
            # times every split that fits, so those are probed with the (quiet) time model at once
            e = s._est.get((vk.quantization, vk.optimizer, s._key(self.system), lay, "quiet")) or \
                s.estimate(vk, self.system, lay, full=self.pipelined and i > 0, explain=False)
            mem = s._mem_eval[mkey] = (e, lay)
        e, lay = mem
        r = s._check(self.inst, e, lay, self.v, self.system, self.nodes, self.best_mem if i == 0 else None)
        self.evaluated[(k, i)] = (e, lay, r)
        if r is not None and i == 0:
            self.reject(self.inst, r)    # larger micro-batches are choices, not the type's reason
        return self.evaluated[(k, i)]

    def known(self, k: Knobs, i: int) -> bool:
        """True when the memory at this point is at hand without a new estimate."""
        if (k, i) in self.evaluated or (self.group, k, i) in self.s._mem_eval:
            return True
        s = self.s
        vk = s.variant_for(self.v, k, self.shape)
        tp, pp, dp, cp = self.shape
        lay = s.layout(vk, tp, pp, dp, k, self.opts[i], cp=cp)
        return (vk.quantization, vk.optimizer, s._key(self.system), lay, "quiet") in s._est

    def gpu_fits(self, k: Knobs, i: int) -> bool:
        e, _lay, r = self.evaluate(k, i)
        return e is not None and (r is None or r.code != "memory")

    def fits(self, k: Knobs, i: int) -> bool:
        return self.evaluate(k, i)[2] is None

    def guess(self, k: Knobs, i: int) -> int | None:
        """The largest option predicted to fit from the estimate at option i: its activations and logits scaled
        by the micro-batch (only where to probe next; the estimator decides)."""
        e = self.evaluated[(k, i)][0]
        if e is None:
            return None
        comp = e.memory.components
        scale = memory_need(e) / max(1.0, e.memory.per_gpu_bytes)   # sized at the high end of the interval
        var = (float(comp.get("activations", 0.0)) + float(comp.get("logits", 0.0))) * scale
        rest = e.memory.per_gpu_bytes * scale - var
        limit = e.memory.capacity_bytes * (1 - self.s.headroom)
        per_mb = var / self.opts[i].micro_batch
        return max((j for j, o in enumerate(self.opts) if rest + per_mb * o.micro_batch <= limit), default=-1)

    # ------------------------------------------------------------------ speed
    def prune(self, k: Knobs) -> bool:
        """k's speed bound holds for k and every config above it: below the group's best, skip them. With a
        pipeline the bound (the largest micro-batch without its bubble) rarely prunes: only used where its
        estimate is at hand."""
        s = self.s
        if s.best <= 0 or (self.pipelined and not self.known(k, len(self.opts) - 1)):
            return False
        return knob_bound(s, self.system, self.shape, s.variant_for(self.v, k, self.shape), k) < \
            s.bar(self.shape) * (1 - 1e-9)

    def faster(self, k: Knobs, i: int) -> bool:
        """With a pipeline: did option i beat option i - 1?"""
        a, b = self.timed.get((k, i)), self.timed.get((k, i - 1))
        tr = self.s.training
        return a is not None and (b is None or a.speed(tr) > b.speed(tr))

    def time(self, k: Knobs, i: int, vp: int | None) -> "Candidate | None":
        """The time model for one feasible (knobs, option, virtual stages): a candidate (appended), or None."""
        s = self.s
        tp, pp, dp, cp = self.shape
        vk = s.variant_for(self.v, k, self.shape)
        known = self.evaluated.get((k, i))     # options between two probes fit too (monotone): not estimated
        base = known[1] if known else s.layout(vk, tp, pp, dp, k, self.opts[i], cp=cp)
        lay = base if vp in (None, 1) else replace(base, vp=vp, schedule="interleaved")
        # quietly with a recipe: only the winners are explained
        e = s.estimate(vk, self.system, lay, explain=s.target is None)
        if e is None or ((lay is not base or not known) and
                         s._check(self.inst, e, lay, self.v, self.system, self.nodes, None)):
            return None
        c = Candidate(self.inst, self.nodes, tp, pp, dp, k, vk, e, lay, batch=self.opts[i] if s.target else None)
        if not s._post_checks(c, self.reject):
            return None
        c.explain = functools.partial(self.explain, k=k, i=i)
        s.best = max(s.best, c.speed(s.training))
        if not split(tp, pp, cp):
            s.best_plain = max(s.best_plain, c.speed(s.training))
        self.cands.append(c)
        return c

    # ------------------------------------------------------------------ the walk
    def run(self, configs: tuple[Knobs, ...]) -> bool:
        """Walk the knobs and splits, time what can win; True when anything fits."""
        s = self.s
        climbed: list[Knobs] = []
        for part in self.bands(configs):
            for k, i, largest in walk_recipes(part, len(self.opts), self.fits, self.gpu_fits, pipelined=self.pipelined,
                                              prune=self.prune if s.target is not None else None, faster=self.faster,
                                              guess=self.guess, known=self.known):
                self.timed[(k, i)] = c = self.time(k, i, None)
                if c is not None:
                    c.largest_fit = self.opts[largest].micro_batch
                if self.pipelined and k not in climbed:
                    climbed.append(k)
        for k in climbed:     # then the virtual stages at each config's best micro-batch, upward while faster
            self._virtual_stages(k)
        return bool(self.timed)

    def bands(self, configs: tuple[Knobs, ...]) -> list[tuple[Knobs, ...]]:
        """The knobs split where the class of the memory interval changes (estimate/intervals.py: ZeRO-3 and FSDP
        sharding, train/sharded, have a wider band than ZeRO 0-2, train/full). A fit is decided at the high end of the
        band, which shrinks up the lattice only within one class: each part is walked on its own, so a ZeRO-3 miss
        at its wider band says nothing about ZeRO-1."""
        parts: dict[str, list[Knobs]] = {}
        for k in configs:
            parts.setdefault(self._band(k), []).append(k)
        return [tuple(p) for p in parts.values()]

    def _band(self, k: Knobs) -> str:
        s = self.s
        if not s.training:
            return ""
        tp, pp, _dp, _cp = self.shape
        par = s.w.parallel
        fsdp = par.fsdp if (par and par.fsdp and par.fsdp != "none" and k.zero >= 2) else "none"
        return interval_class(s.task, None, getattr(s.model, "kind", "decoder"),
                              profile=getattr(s.model, "profile", None) is not None, tp=tp, pp=pp, zero=k.zero,
                              fsdp=fsdp, moe=getattr(s.model, "moe", None) is not None)

    def _virtual_stages(self, k: Knobs) -> None:
        tr = self.s.training
        mine = [(c.speed(tr), i, c) for (j, i), c in self.timed.items() if j == k and c is not None]
        if not mine:
            return
        speed, i, best = max(mine, key=lambda t: (t[0], -t[1]))
        best.largest_fit = self.opts[max(j for _s, j, _c in mine)].micro_batch
        if bubble_free_speed(best.est.performance) < self.s.bar(self.shape) * (1 - 1e-9):
            return             # even without its bubble (any number of virtual stages) it is slower than the best
        for vp in self.s.vp_options(self.shape[1], self.opts[i], self.naive)[1:]:
            c = self.time(k, i, vp)
            if c is None:
                continue       # (fewer in-flight micro-batches with more virtual stages: the next may fit)
            c.largest_fit = best.largest_fit
            if c.speed(tr) < speed:
                break          # more virtual stages only get slower (bubble / v against v x the p2p traffic)
            speed = c.speed(tr)

    # ------------------------------------------------------------------ reasons (winners only)
    def explain(self, c: "Candidate", *, k: Knobs, i: int) -> None:
        s = self.s
        if s.target is not None:      # the search's estimates were quiet: the warnings of this GPU and system
            c.warnings.extend(s.warnings_for(c.variant, c.est.system, c.layout))
        c.why.extend(knob_why(k, {d: r for (d, j), (_e, _l, r) in self.evaluated.items() if j == i}))
        if k.optimizer:
            c.why.append(_("8-bit AdamW needed: with AdamW's fp32 states no layout of this group fits in GPU memory and host RAM"))
        if s.training:
            c.next_need = self.next_need(k, i)
            c.recipe = recipe_of(c, s.w, s.target, llm=s.target is not None)

    def next_need(self, k: Knobs, i: int) -> tuple[int, float | None] | None:
        """(the next micro-batch, its GiB per GPU at the high end of the memory range (what rejected it), or None
        when only the host RAM stops it); None when the chosen one is the largest the global batch allows."""
        t = self.s.target
        if t is None or t.micro_batch is not None or i + 1 >= len(self.opts):
            return None
        e, _lay, r = self.evaluate(k, i + 1)
        if e is None or r is None:
            return None
        return (self.opts[i + 1].micro_batch, memory_need(e) / GIB if r.code == "memory" else None)


def shape_bound(s: "Searcher", system, shape: tuple[int, int, int, int], v: "Variant") -> float:
    """The speed no recipe of this layout beats, memory ignored: the least memory-saving knobs (speed never
    improves up the lattice) at the largest micro-batch (:func:`knob_bound`). Infinity where no recipe is
    searched."""
    tp, pp, dp, cp = shape
    if not s.training or s.target is None:
        return math.inf
    configs = lattice(s.task, dp, s.fixed, 0 if s._levels() != (None,) else None, tp * pp * cp > 1)
    return max([0.0] + [knob_bound(s, system, shape, s.variant_for(v, k, shape), k) for k in _structure(configs)[0]])


def knob_bound(s: "Searcher", system, shape: tuple[int, int, int, int], vk: "Variant", k: Knobs) -> float:
    """The speed no recipe with knobs ``k`` (or more saving ones) beats: its speed at the largest micro-batch
    (without a pipeline a smaller one is never faster). With a pipeline, that step without its bubble: the
    estimator stretches the pipelined part of the step's compute by 1 + b (b = (p-1)/(v m), Narayanan et al.
    2021 section 2.2; reported as ``pipeline_bubble``, the stretched compute as ``compute_s``), so at most
    compute_s x b / (1 + b) of the step is bubble; more virtual stages or micro-batches only remove bubble
    while adding point-to-point traffic and exposing more communication, and a smaller micro-batch is never
    faster without the bubble (more per-micro-batch costs, less efficient GEMMs)."""
    tp, pp, dp, cp = shape
    e = s.estimate(vk, system, s.layout(vk, tp, pp, dp, k, s.batch_options(dp, pp)[-1], cp=cp), explain=False)
    if e is None:
        return 0.0
    return bubble_free_speed(e.performance)


def bubble_free_speed(perf) -> float:
    """Tokens/s of a step with its pipeline bubble taken out (an upper bound: see :func:`knob_bound`)."""
    speed = float(perf.get("tokens_per_s") or 0.0)
    b = float(perf.get("pipeline_bubble") or 0.0)
    step = float(perf.get("step_time_s") or 0.0)
    if b <= 0 or step <= 0:
        return speed
    free = step - float(perf.get("compute_s") or 0.0) * b / (1.0 + b)
    return speed * step / free if free > 0 else math.inf
