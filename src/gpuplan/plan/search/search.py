"""The candidate search: instance types x node counts x layouts x knobs x quantization, each
estimated once (cached by system and layout) and checked for feasibility. Pure apart from the
lazily loaded catalog; no prices here (see cost.py)."""

from __future__ import annotations

import functools
import gc
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.catalog.hardware.instances import InstanceType
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import Estimate, estimate_resolved
from gpuplan.estimate.system import (
    NAIVE_PP_FRAMEWORKS,
    TP_OVERLAP_FRAMEWORKS,
    Layout,
    System,
    ep_dispatcher,
    loss_parallel,
    pipeline_schedule,
    sequence_parallel,
    system_for_instance,
)
from gpuplan.i18n import _, localize
from gpuplan.plan.search import feasibility as fz
from gpuplan.plan.money.ranges import memory_need
from gpuplan.plan.search.candidates import (
    OFFLOAD_ORDER,
    TRAIN_TASKS,
    Fixed,
    Knobs,
    is_llm,
    lattice,
    launcher_for,
    node_options,
    parallel_shapes,
)
from gpuplan.plan.search.model_parallel import min_saving, split
from gpuplan.plan.search.recipe import BatchOption, BatchTarget, batch_target, no_batch_reason
from gpuplan.plan.search.search_explain import what
from gpuplan.plan.search.search_job import job_batches, search_job_batch
from gpuplan.plan.search.search_point import Candidate, Variant
from gpuplan.plan.search.search_space import SearchSpace
from gpuplan.plan.search.search_group import GroupSearch, shape_bound
from gpuplan.workload import Workload


@dataclass
class SearchResult:
    """What the search found (and rejected)."""

    candidates: list[Candidate]
    rejects: dict[str, fz.Reject]          # best rejection per instance type (by CODE_RANK, then shortfall)
    best_memory: dict[str, tuple[Candidate | None, Any]]  # per type: smallest-shortfall estimate (for why-not)
    estimates: int
    warnings: list[str]
    batch_reason: str | None = None        # a layout whose DP cannot run the global batch (training recipes)


class Searcher(SearchSpace):
    """Runs the search for one resolved workload."""

    def __init__(self, w: Workload, model, shape, fixed: Fixed, variants: list[Variant], *,
                 max_gpus: int, allowed_status: frozenset[str], headroom: float = fz.MEMORY_HEADROOM,
                 serving=None, named_framework: str | None = None):
        self.w = w
        self.model = model
        self.shape = shape
        self.fixed = fixed
        self.variants = variants
        self.task = w.task or "inference"
        self.training = self.task in TRAIN_TASKS
        self.max_gpus = max_gpus
        self.allowed_status = allowed_status
        self.headroom = headroom
        self.serving = serving     # serving_config.ServingSpace for LLM serving, else None
        self.named_framework = named_framework   # the framework the user set (None: unset; resolved = task default)
        self._est: dict[tuple, Estimate | None] = {}  # None: the estimate failed (cached too)
        self._memory: dict[tuple, object] = {}   # training memory by its inputs (estimate_resolved's memo)
        self._sys: dict[tuple, System] = {}
        self._mem_eval: dict[tuple, tuple[Estimate | None, Layout]] = {}
        self.calls = 0
        # the global batch of a training recipe (transformer models; others keep their batch_size)
        self.target: BatchTarget | None = batch_target(w, model) if self.training and shape is not None else None
        self.batch_reason: str | None = None
        self.job_batches = job_batches(self)   # an offline non-LLM job's batches to try (plan/search/search_job.py)
        self.best = 0.0        # the fastest candidate of the (instance, nodes) being searched (pruning bound)
        self.best_plain = 0.0  # ... of those without tensor, pipeline or context parallelism
        self._layouts: dict[tuple, Layout] = {}
        self._keys: dict[int, tuple[System, tuple, tuple]] = {}
        self._warnings: dict[tuple, list[str]] = {}
        self._opts: dict[tuple[int, int], tuple[BatchOption, ...]] = {}
        self._shared: dict[tuple, tuple[list[Candidate], float]] = {}   # sys_key -> (candidates, host RAM they need)
        self._host_need, self._host_failed = 0.0, False

    # ------------------------------------------------------------------ systems, layouts, estimates
    def system(self, inst: InstanceType, nodes: int) -> System:
        key = (inst.instance_type, nodes)
        s = self._sys.get(key)
        if s is None:
            s = self._sys[key] = system_for_instance(inst, nodes)
        return s

    @staticmethod
    def sys_key(s: System) -> tuple:
        inter = (s.inter_node_gbit_s, s.rdma) if s.nodes > 1 else None
        return (s.gpu.id, s.gpus_per_node, s.nodes, s.intra_link, s.gpu_p2p, inter, s.gpu_fraction,
                s.capacity_override_bytes)

    @staticmethod
    def memory_sys_key(s: System) -> tuple:
        """What memory depends on: the GPU and its usable share, GPUs per node and nodes (sharding groups,
        NCCL buffers, host RAM per node). The links only change time, so types that differ only in their
        network share one memory-only estimate."""
        return (s.gpu.id, s.gpus_per_node, s.nodes, s.gpu_fraction, s.capacity_override_bytes)

    def _key(self, s: System, memory: bool = False) -> tuple:
        """sys_key (or memory_sys_key) of a system, computed once per system object."""
        got = self._keys.get(id(s))
        if got is None or got[0] is not s:
            got = self._keys[id(s)] = (s, self.sys_key(s), self.memory_sys_key(s))
        return got[2] if memory else got[1]

    def layout(self, v: Variant, tp: int, pp: int, dp: int, k: Knobs, batch: BatchOption | None = None, *,
               cp: int | None = None) -> Layout:
        """The layout of one search point; ``batch`` is the split of the global batch (default: the workload's).
        Built once per point (the search asks for the same points on every instance type)."""
        w = v.w
        mb, ga = batch if batch is not None else (w.batch_size or 1, w.gradient_accumulation or 1)
        key = (v.quantization, v.optimizer, v.config, tp, pp, dp, k, mb, ga, cp)
        got = self._layouts.get(key)
        if got is None:
            got = self._layouts[key] = self._layout(w, tp, pp, dp, k, mb, ga, cp, v.config)
        return got

    def _layout(self, w: Workload, tp: int, pp: int, dp: int, k: Knobs, mb: int, ga: int, cp: int | None,
                config: Any = None) -> Layout:
        offload = self.fixed.offload if self.fixed.offload not in (None, *OFFLOAD_ORDER) else k.offload_name
        framework = w.framework or "auto"
        par = w.parallel
        # the user's FSDP strategy and serving DP-attention travel into the layout (memory: FSDP's root
        # unit and HSDP groups; the MLA cache split by DP-attention); the framework's own pipeline schedule
        # and TP overlap (NeMo interleaves and overlaps by default; Megatron-LM and the Trainer stacks only
        # when the workload says so), as layout_from_workload does; a searched layout starts at 1F1B
        # (the search times the virtual stages: vp_options)
        fsdp = par.fsdp if (par and self.training and par.fsdp and par.fsdp != "none" and k.zero >= 2) else "none"
        if cp is None:
            cp = par.cp if (par and self.training) else 1
        if self.training and launcher_for(tp, pp, k.zero, fsdp, offload, cp, framework=w.framework) == "megatron":
            # the bundle launches this layout with Megatron (ms-swift): its sequence parallelism and 1F1B
            # schedule, whatever the workload's default framework (render/bundle/training.py megatron_args)
            framework = "megatron"
        layers = int(self.shape.layers) if self.shape is not None else 0    # (no shape: a non-transformer model)
        vp, schedule = pipeline_schedule(w, pp, framework, layers) if self.training else (1, "1f1b")
        if self.training and par is None and self.target is not None and pp > 1:
            vp, schedule = 1, "1f1b"
        overlap = par.tp_comm_overlap if par and par.tp_comm_overlap is not None else framework in TP_OVERLAP_FRAMEWORKS
        return Layout(tp=tp, pp=pp, dp=dp, sp=sequence_parallel(par, framework, tp) if self.training else False,
                      cp=cp, zero=k.zero if self.training else 0, fsdp=fsdp, offload=offload,
                      checkpointing=k.ckpt_name if self.training else "none", micro_batch=mb,
                      grad_accum=ga, microbatches=ga if pp > 1 else 1,
                      naive_pipeline=pp > 1 and framework in NAIVE_PP_FRAMEWORKS, vp=vp, schedule=schedule,
                      tp_comm_overlap=bool(overlap and tp > 1 and self.training),
                      loss_parallel=loss_parallel(par, framework, tp), ep_dispatcher=ep_dispatcher(par),
                      dp_attention=(config.dp_attention if config is not None
                                    else bool(par and par.dp_attention) and not self.training),
                      ep=config.ep if config is not None else 1)

    def estimate(self, v: Variant, system: System, layout: Layout, *, full: bool = True,
                 explain: bool = True) -> Estimate | None:
        """Cached estimate; ``full=False`` is the memory-only feasibility pass (no time model); ``explain=False``
        the same numbers without warnings and notes (the recipe search; winners are explained later)."""
        key = (v.quantization, v.optimizer, v.config, self._key(system), layout, full and (explain or "quiet"))
        if key in self._est:
            return self._est[key]
        self.calls += 1
        try:
            e = estimate_resolved(v.w, self.model, system, layout, shape=self.shape, with_suggestions=False,
                                  memory_only=not full, explain=explain, memo=self._memory)
        except GpuplanError:
            e = None
        self._est[key] = e
        return e

    def warnings_for(self, v: Variant, system: System, layout: Layout) -> list[str]:
        """The estimator's warnings for this workload on this system (they do not depend on the layout; of the
        system only the GPU, a vGPU slice and more than one GPU matter): one explained estimate per variant
        and such system."""
        key = (v.quantization, v.optimizer, v.w.framework, system.gpu.id, system.gpu_fraction, system.total_gpus > 1)
        got = self._warnings.get(key)
        if got is None:
            e = self.estimate(v, system, layout)
            got = self._warnings[key] = list(e.warnings) if e is not None else []
        return got

    # ------------------------------------------------------------------ the search
    def run(self, instances: list[InstanceType]) -> SearchResult:
        """Search every instance type (the cyclic garbage collector paused: the search allocates thousands of
        estimates it keeps in its caches, and full collections over them cost a quarter of its time)."""
        was = gc.isenabled()
        gc.disable()
        try:
            return self._run(instances)
        finally:
            if was:
                gc.enable()

    def _run(self, instances: list[InstanceType]) -> SearchResult:
        cands: list[Candidate] = []
        rejects: dict[str, fz.Reject] = {}
        best_mem: dict[str, tuple] = {}
        warnings: list[str] = []

        def reject(inst: InstanceType, r: fz.Reject) -> None:
            cur = rejects.get(inst.instance_type)
            if cur is None or (fz.CODE_RANK[r.code], r.shortfall) < (fz.CODE_RANK[cur.code], cur.shortfall):
                rejects[inst.instance_type] = r

        largest: dict[str, float] = {}
        for inst in instances:
            largest[inst.family] = max(largest.get(inst.family, 0.0), inst.gpu_count)
        for inst in instances:
            r = fz.check_status(inst, self.allowed_status)
            if r:
                reject(inst, r)
                continue
            multi = inst.gpus >= 1 and inst.gpu_count >= largest[inst.family]
            for nodes in node_options(self.task, max(1, inst.gpus or 1), self.max_gpus, self.fixed, multi_node=multi):
                r = fz.check_kind(inst, self.training, nodes)
                if r:
                    reject(inst, r)
                    continue
                system = self.system(inst, nodes)
                if self._reuse(inst, system, cands, reject):
                    continue
                before = len(cands)
                self.best = self.best_plain = 0.0   # the fastest candidate of this (instance, nodes) so far (plain:
                #                                     without splitting the model)
                self._host_need, self._host_failed = 0.0, False
                for cp in self.cp_options():
                    if cp > 1 and len(cands) > before:
                        break          # context parallelism only where nothing without it fits
                    self._search_shapes(inst, nodes, system, cp, cands, reject, best_mem)
                if len(cands) > before and not self._host_failed:
                    self._shared[self._key(system)] = (cands[before:], self._host_need)
        return SearchResult(cands, rejects, best_mem, self.calls, warnings, self.batch_reason)

    def _reuse(self, inst: InstanceType, system: System, cands: list[Candidate], reject) -> bool:
        """Types that differ only in vCPUs and host RAM run the same search on the GPUs: when an earlier one
        found plans without any host-RAM limit and this one has the RAM they need, take its candidates."""
        got = self._shared.get(self._key(system))
        if got is None or fz.check_host(inst, got[1]) is not None:
            return False
        for c0 in got[0]:
            c = replace(c0, inst=inst, why=[], warnings=[])
            if self._post_checks(c, reject):
                cands.append(c)
        return True

    def _search_shapes(self, inst, nodes, system, cp, cands, reject, best_mem) -> None:
        shapes = parallel_shapes(self.model, system.total_gpus // cp, system.gpus_per_node, self.task,
                                 self.fixed) if system.total_gpus % cp == 0 else []
        if not shapes:
            if cp == 1 or self.w.parallel is not None:
                reject(inst, fz.Reject("layout", _(
                    "{label} x {nodes}: no TP/PP split of {gpus} GPUs fits the model's heads and layers (or your "
                    "parallel settings)").format(label=fz.gpu_label(inst), nodes=nodes, gpus=system.total_gpus)))
            return
        todo = []
        for tp, pp, dp in shapes:
            if not self.batch_options(dp):
                assert self.target is not None
                self.batch_reason = self.batch_reason or no_batch_reason(self.target, dp)
                reject(inst, fz.Reject("layout", no_batch_reason(self.target, dp), shortfall=float(dp)))
                continue
            for v in (self.serving.variants(self.variants, system, tp) if self.serving else self.variants):
                todo.append(((tp, pp, dp, cp), v))
        # Only the fastest layout of an (instance, nodes) pair is kept (best_per_group): once one layout is
        # feasible, a layout whose fastest conceivable recipe is slower cannot win; skip its search. Plain data
        # parallelism first (usually the fastest where it fits), pipelines last, until one fits; then the rest
        # by their bound, fastest first, until the bound falls below the best found.
        todo.sort(key=lambda t: (t[0][1] > 1, t[0][0]))
        while todo and self.best <= 0:
            shape, v = todo.pop(0)
            self._search_layout(inst, nodes, system, shape, v, cands, reject, best_mem)
        for bound, shape, v in sorted(((shape_bound(self, system, sh, vv), sh, vv) for sh, vv in todo),
                                      key=lambda t: -t[0]):
            if bound < self.best * (1 - 1e-9):
                break
            if bound < self.bar(shape) * (1 - 1e-9):
                continue       # a split of the model that cannot save the margin over the plain layout
            self._search_layout(inst, nodes, system, shape, v, cands, reject, best_mem)

    def bar(self, shape: tuple[int, int, int, int]) -> float:
        """The speed a candidate of ``shape`` must beat to be kept: the group's fastest so far; a layout that splits
        the model (TP/PP/CP) must also beat the fastest plain one by the margin (plan/search/model_parallel.py)."""
        tp, pp, _dp, cp = shape
        if self.training and split(tp, pp, cp) and self.best_plain > 0:
            return max(self.best, self.best_plain / (1.0 - min_saving()))
        return self.best

    def _search_layout(self, inst, nodes, system, shape, v, cands, reject, best_mem) -> None:
        if self.job_batches:    # an offline job of a non-LLM model: its batch per forward (plan/search/search_job.py)
            search_job_batch(self, inst, nodes, system, shape, v, cands, reject, best_mem)
            return
        tp, pp, dp, cp = shape
        for level in self._levels():
            group = GroupSearch(self, inst, nodes, system, shape, v, cands, reject, best_mem)
            if group.run(lattice(self.task, dp, self.fixed, level, tp * pp * cp > 1)):
                return

    def _unlaunchable(self, lay, v, system) -> bool:
        """Serving data-parallel attention the bundle cannot start: the engines run it inside one pipeline stage
        (SGLang --enable-dp-attention, vLLM -dp with --enable-expert-parallel), and vLLM's within one node."""
        if self.training or not lay.dp_attention:
            return False
        engine = getattr(v.config, "engine", None)
        return lay.pp > 1 or (engine == "vllm" and lay.tp * lay.pp > system.gpus_per_node)

    def _check(self, inst, e, lay, v, system, nodes, best_mem) -> fz.Reject | None:
        """The rejection of one estimate (None: it fits); GPU misses feed the why-not notes."""
        if e is None or self._unlaunchable(lay, v, system):
            return fz.Reject("layout", _("{label}: layout {layout} is not supported").format(
                label=fz.gpu_label(inst), layout=localize(lay.describe())))
        need = memory_need(e)   # the high end of the 80 % memory interval
        if not fz.check_memory(need, e.memory.capacity_bytes, self.headroom):
            r = fz.memory_reject(inst, need, e.memory.capacity_bytes, functools.partial(
                what, lay, v.w, self.model, self.training, v.quantization, system), self.headroom)
            if best_mem is not None:
                cur = best_mem.get(inst.instance_type)
                if cur is None or r.shortfall < cur[1].shortfall:
                    best_mem[inst.instance_type] = (e, r, nodes, lay)
            return r
        self._host_need = max(self._host_need, e.memory.host_bytes)
        host = fz.check_host(inst, e.memory.host_bytes)
        self._host_failed = self._host_failed or host is not None
        return host

    def evaluate(self, inst: InstanceType, nodes: int, tp: int, pp: int, dp: int, v: Variant) -> Candidate | None:
        """One serving point on one layout (no memory-saving knobs): the candidate when it fits and passes
        the network and SLA checks, else None (used to try another engine on a chosen layout)."""
        system = self.system(inst, nodes)
        lay = self.layout(v, tp, pp, dp, Knobs())
        if self._unlaunchable(lay, v, system):
            return None
        e = self.estimate(v, system, lay, full=True)
        if e is None or not fz.check_memory(memory_need(e), e.memory.capacity_bytes, self.headroom) \
                or fz.check_host(inst, e.memory.host_bytes) is not None:
            return None
        c = Candidate(inst, nodes, tp, pp, dp, Knobs(), v, e, lay)
        return c if self._post_checks(c, lambda *_args: None) else None

    def _post_checks(self, c: Candidate, reject) -> bool:
        p = c.est.performance
        r, warn = fz.check_network(c.inst, c.nodes, p.get("comm_fraction"))
        if r:
            reject(c.inst, r)
            return False
        if warn:
            c.warnings.append(warn)
        if not self.training and is_llm(self.model) and not (p.get("max_requests_per_s") or 0) > 0:
            reject(c.inst, fz.sla_reject(c.inst, c.gpus, p, c.est.memory, self.w.serving))
            return False
        vw = fz.vcpu_warning(c.inst, self.training)
        if vw:
            c.warnings.append(vw)
        if c.est.warnings:
            c.warnings.extend(c.est.warnings)
        return True
