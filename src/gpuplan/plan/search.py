"""The candidate search: instance types x node counts x layouts x knobs x quantization, each
estimated once (cached by system and layout) and checked for feasibility. Pure apart from the
lazily loaded catalog; no prices here (see cost.py)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

from gpuplan.catalog.instances import InstanceType
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import Estimate, estimate_resolved
from gpuplan.estimate.system import (
    NAIVE_PP_FRAMEWORKS,
    TP_OVERLAP_FRAMEWORKS,
    Layout,
    System,
    pipeline_schedule,
    sequence_parallel,
    system_for_instance,
)
from gpuplan.i18n import _, localize
from gpuplan.plan import feasibility as fz
from gpuplan.plan.candidates import (
    OFFLOAD_ORDER,
    OPTIMIZER_ORDER,
    TRAIN_TASKS,
    Fixed,
    Knobs,
    is_llm,
    lattice,
    node_options,
    parallel_shapes,
    walk_lattice,
)
from gpuplan.workload import Workload


@dataclass
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
    config: Any = None    # serving: the engine / weight / KV / DP-attention point (plan/serving_config.py)


@dataclass
class SearchResult:
    candidates: list[Candidate]
    rejects: dict[str, fz.Reject]          # best rejection per instance type (by CODE_RANK, then shortfall)
    best_memory: dict[str, tuple[Candidate | None, Any]]  # per type: smallest-shortfall estimate (for why-not)
    estimates: int
    warnings: list[str]


class Searcher:
    """Runs the search for one resolved workload."""

    def __init__(self, w: Workload, model, shape, fixed: Fixed, variants: list[Variant], *,
                 max_gpus: int, allowed_status: frozenset[str], headroom: float = fz.MEMORY_HEADROOM,
                 serving=None):
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
        self._est: dict[tuple, Estimate | None] = {}  # None: the estimate failed (cached too)
        self._sys: dict[tuple, System] = {}
        self._mem_eval: dict[tuple, tuple[Estimate | None, Layout]] = {}
        self.calls = 0

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
        return (s.gpu.id, s.gpus_per_node, s.nodes, s.intra_link, inter, s.gpu_fraction, s.capacity_override_bytes)

    @staticmethod
    def memory_sys_key(s: System) -> tuple:
        """What memory depends on: the GPU and its usable share, GPUs per node and nodes (sharding groups,
        NCCL buffers, host RAM per node). The links only change time, so types that differ only in their
        network share one memory-only estimate."""
        return (s.gpu.id, s.gpus_per_node, s.nodes, s.gpu_fraction, s.capacity_override_bytes)

    def layout(self, v: Variant, tp: int, pp: int, dp: int, k: Knobs) -> Layout:
        w = v.w
        ga = w.gradient_accumulation or 1
        offload = self.fixed.offload if self.fixed.offload not in (None, *OFFLOAD_ORDER) else k.offload_name
        framework = w.framework or "auto"
        par = w.parallel
        # the user's FSDP strategy and serving DP-attention travel into the layout (memory: FSDP's root
        # unit and HSDP groups; the MLA cache split by DP-attention); the framework's own pipeline schedule
        # and TP overlap (NeMo interleaves and overlaps by default; Megatron-LM and the Trainer stacks only
        # when the workload says so), as layout_from_workload does
        fsdp = par.fsdp if (par and self.training and par.fsdp and par.fsdp != "none" and k.zero >= 2) else "none"
        vp, schedule = pipeline_schedule(w, pp, framework, self.shape.layers) if self.training else (1, "1f1b")
        overlap = par.tp_comm_overlap if par and par.tp_comm_overlap is not None else framework in TP_OVERLAP_FRAMEWORKS
        cp = par.cp if (par and self.training) else 1
        return Layout(tp=tp, pp=pp, dp=dp, sp=sequence_parallel(par, framework, tp) if self.training else False,
                      cp=cp, zero=k.zero if self.training else 0, fsdp=fsdp, offload=offload,
                      checkpointing=k.ckpt_name if self.training else "none", micro_batch=w.batch_size or 1,
                      grad_accum=ga, microbatches=ga if pp > 1 else 1,
                      naive_pipeline=pp > 1 and framework in NAIVE_PP_FRAMEWORKS, vp=vp, schedule=schedule,
                      tp_comm_overlap=bool(overlap and tp > 1 and self.training),
                      dp_attention=(v.config.dp_attention if v.config is not None
                                    else bool(par and par.dp_attention) and not self.training),
                      ep=v.config.ep if v.config is not None else 1)

    def estimate(self, v: Variant, system: System, layout: Layout, *, full: bool = True) -> Estimate | None:
        """Cached estimate; ``full=False`` is the memory-only feasibility pass (no time model)."""
        key = (v.quantization, v.optimizer, v.config, self.sys_key(system), layout, full)
        if key in self._est:
            return self._est[key]
        self.calls += 1
        try:
            e = estimate_resolved(v.w, self.model, system, layout, shape=self.shape, with_suggestions=False,
                                  memory_only=not full)
        except GpuplanError:
            e = None
        self._est[key] = e
        return e

    def variant_for(self, v: Variant, k: Knobs) -> Variant:
        """The optimizer knob changes the workload (the estimator reads w.optimizer)."""
        if not self.training or self.task in ("lora", "qlora") or self.fixed.optimizer is not None:
            return v
        name = OPTIMIZER_ORDER[k.optimizer]
        if v.optimizer == name:
            return v
        cache = self.__dict__.setdefault("_opt_variants", {})
        key = (v.quantization, name)
        if key not in cache:
            cache[key] = Variant(v.quantization, name, v.w.with_updates(optimizer=name))
        return cache[key]

    # ------------------------------------------------------------------ the search
    def run(self, instances: list[InstanceType]) -> SearchResult:
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
                cp = (self.w.parallel.cp if self.training and self.w.parallel else 1)
                shapes = parallel_shapes(self.model, system.total_gpus // cp, system.gpus_per_node, self.task,
                                         self.fixed) if system.total_gpus % cp == 0 else []
                if not shapes:
                    reject(inst, fz.Reject("layout", _(
                        "{label} x {nodes}: no TP/PP split of {gpus} GPUs fits the model's heads and layers (or your "
                        "parallel settings)").format(label=fz.gpu_label(inst), nodes=nodes, gpus=system.total_gpus)))
                    continue
                for tp, pp, dp in shapes:
                    for v in (self.serving.variants(self.variants, system, tp) if self.serving else self.variants):
                        self._search_layout(inst, nodes, system, tp, pp, dp, v, cands, reject, best_mem)
        return SearchResult(cands, rejects, best_mem, self.calls, warnings)

    def _search_layout(self, inst, nodes, system, tp, pp, dp, v, cands, reject, best_mem) -> None:
        levels = (0, 1) if (self.training and self.task not in ("lora", "qlora") and self.fixed.optimizer is None) \
            else (None,)
        for level in levels:
            if self._search_lattice(inst, nodes, system, tp, pp, dp, v, cands, reject, best_mem,
                                    lattice(self.task, dp, self.fixed, level, tp * pp > 1)):
                return

    def _search_lattice(self, inst, nodes, system, tp, pp, dp, v, cands, reject, best_mem, configs) -> bool:
        evaluated: dict[Knobs, tuple[Estimate | None, Layout, fz.Reject | None]] = {}
        # the memory-only pass of a knob setting is the same for every type with this GPU, node shape and
        # variant: look it up by small keys (no Layout to build or hash again)
        group = (v.quantization, v.optimizer, v.config, self.memory_sys_key(system), tp, pp, dp)

        def evaluate(k: Knobs):
            if k in evaluated:
                return evaluated[k]
            mkey = (group, k)
            got = self._mem_eval.get(mkey)
            if got is None:
                vk = self.variant_for(v, k)
                lay = self.layout(vk, tp, pp, dp, k)
                got = self._mem_eval[mkey] = (self.estimate(vk, system, lay, full=False), lay)
            e, lay = got
            r = None
            if e is None:
                r = fz.Reject("layout", _("{label}: layout {layout} is not supported").format(
                    label=fz.gpu_label(inst), layout=localize(lay.describe())))
            elif not fz.check_memory(e.memory.per_gpu_bytes, e.memory.capacity_bytes, self.headroom):
                r = fz.memory_reject(inst, e.memory.per_gpu_bytes, e.memory.capacity_bytes,
                                     functools.partial(self._what, lay, v, system), self.headroom)
                cur = best_mem.get(inst.instance_type)
                if cur is None or r.shortfall < cur[1].shortfall:
                    best_mem[inst.instance_type] = (e, r, nodes, lay)
            else:
                r = fz.check_host(inst, e.memory.host_bytes)
            evaluated[k] = (e, lay, r)
            if r is not None:
                reject(inst, r)
            return evaluated[k]

        def gpu_fits(k: Knobs) -> bool:
            e, _lay, r = evaluate(k)
            return e is not None and (r is None or r.code != "memory")

        def fits(k: Knobs) -> bool:
            return evaluate(k)[2] is None

        found = walk_lattice(configs, fits, gpu_fits)
        for k in found:
            _e, lay, _r = evaluated[k]
            vk = self.variant_for(v, k)
            e = self.estimate(vk, system, lay, full=True)   # the time model only for feasible layouts
            if e is None:
                continue
            c = Candidate(inst, nodes, tp, pp, dp, k, vk, e, lay)
            if not self._post_checks(c, reject):
                continue
            c.why.extend(self._knob_why(k, evaluated))
            if k.optimizer:
                c.why.append(_("8-bit AdamW needed: AdamW's fp32 states fit in no layout of this group"))
            cands.append(c)
        return bool(found)

    def evaluate(self, inst: InstanceType, nodes: int, tp: int, pp: int, dp: int, v: Variant) -> Candidate | None:
        """One serving point on one layout (no memory-saving knobs): the candidate when it fits and passes
        the network and SLA checks, else None (used to try another engine on a chosen layout)."""
        system = self.system(inst, nodes)
        lay = self.layout(v, tp, pp, dp, Knobs())
        e = self.estimate(v, system, lay, full=True)
        if e is None or not fz.check_memory(e.memory.per_gpu_bytes, e.memory.capacity_bytes, self.headroom) \
                or fz.check_host(inst, e.memory.host_bytes) is not None:
            return None
        c = Candidate(inst, nodes, tp, pp, dp, Knobs(), v, e, lay)
        return c if self._post_checks(c, lambda *_args: None) else None

    def _what(self, lay: Layout, v: Variant, system: System) -> str:
        bits = []
        if self.training:
            bits.append(_("at seq {n}").format(n=v.w.seq_len))
            bits.append(_("ckpt {mode}").format(mode=_(lay.checkpointing)))
            if lay.zero:
                bits.append(f"ZeRO-{lay.zero}")
            if lay.offload != "none":
                bits.append(_("offload {target}").format(target=lay.offload))
        else:
            if is_llm(self.model):
                bits.append(_("at {prompt}+{output} tokens").format(prompt=v.w.prompt_tokens, output=v.w.output_tokens))
            if v.quantization != "none":
                bits.append(v.quantization)
        if lay.tp > 1 or lay.pp > 1:
            bits.append(f"TP{lay.tp} PP{lay.pp}")
        n = system.total_gpus
        bits.append(_("{n} GPUs").format(n=n) if n > 1 else _("1 GPU") if n == 1 else _("{n} GPU").format(n=n))
        return _("({items})").format(items=_(", ").join(bits))

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

    @staticmethod
    def _knob_why(k: Knobs, evaluated) -> list[str]:
        out = []
        for feature, down in k.steps_down():
            got = evaluated.get(down)
            if got and got[2] is not None and got[2].code in ("memory", "host_memory"):
                if feature.endswith(" checkpointing"):
                    feature = _("{mode} checkpointing").format(mode=_(feature.removesuffix(" checkpointing")))
                elif feature == "CPU offload":
                    feature = _("CPU offload")
                reason = re.split(r": |：", got[2].reason, maxsplit=1)[-1]
                out.append(_("{feature} needed: without it {reason}").format(feature=feature, reason=reason))
        return out


def best_per_group(cands: list[Candidate], training: bool) -> list[Candidate]:
    """Keep the fastest layout per (instance type, nodes): the price per hour is the same, so the
    fastest is also the cheapest for every billing mode (ties: fewer GPUs of memory pressure)."""
    best: dict[tuple, Candidate] = {}
    for c in cands:
        key = (c.inst.instance_type, c.nodes)
        cur = best.get(key)
        if cur is None or _better(c, cur, training):
            best[key] = c
    return list(best.values())


def _better(a: Candidate, b: Candidate, training: bool) -> bool:
    sa, sb = a.speed(training), b.speed(training)
    if not math.isclose(sa, sb, rel_tol=1e-9):
        return sa > sb
    return a.est.memory.per_gpu_bytes < b.est.memory.per_gpu_bytes
