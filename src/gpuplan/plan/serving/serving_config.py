"""The serving configuration search: for each hardware candidate of an LLM serving workload, the
engine, the weight format, the KV-cache dtype, data-parallel attention and expert parallelism.

The space is small and declared (tables, not if-chains); the estimator times each point:

- **Weight format.** A model published in FP8 (``ModelSpec.native_dtype``: DeepSeek-V3/R1,
  block-wise e4m3) is served as published where the GPU runs it: FP8 GEMMs (W8A8) on Ada/Hopper/
  Blackwell (compute capability >= 8.9); weight-only FP8 through vLLM's FP8 Marlin kernels (W8A16) on
  compute capability >= 7.5 for dense models; otherwise upcast to BF16 (DeepSeek's
  ``inference/fp8_cast_bf16.py``; SGLang's DeepSeek guide lists "BF16 upcast 4 x 8 x A100"), because
  FP8 MoE kernels below SM89 are unconfirmed (vLLM issue #13885) and SGLang cannot load FP8 checkpoints
  on Ampere (sgl-project/sglang #7715). Other quantizations come only from ``constraints.quantization``.
- **KV cache.** With ``kv_cache_dtype`` unset: 16-bit, and FP8 where engine and GPU run it (vLLM
  ``--kv-cache-dtype fp8``, SGLang ``fp8_e4m3``; compute capability >= 8.9: vLLM's Triton and
  FlashAttention paths reject FP8 KV on Ampere, PRs #43914/#42569; /work/shared/facts/serving-deploy-
  notes.md section 1).
- **Data-parallel attention** for MLA models (DeepSeek-V2/V3/R1) inside one node: SGLang
  ``--enable-dp-attention``, or vLLM's DP + EP for MoE (``-tp 1 -dp N --enable-expert-parallel``).
- **Expert parallelism** for MoE models with data-parallel attention: the routed experts spread over
  the GPUs of the group (each GPU holds 1/EP of them; the same bytes as TP-sharded experts).
- **Engine.** vLLM by default; SGLang where it changes the answer. It is estimated on the chosen layout
  only where the estimator's engine constants allow the gain asked for
  (``estimate.serving.inference.engine_speedup_bound``: per-step overhead, reserved memory, batch cap).
  TensorRT-LLM, LMDeploy and TGI run when the workload names them (``framework``), then fixed: the
  bundle launches vLLM and SGLang.
- **Batch limit** (``max_num_seqs``): the estimator's serving batch (estimate/serving/replica.py): as many sequences as
  the KV cache holds, fewer only where a decode step of more would miss the TPOT target; the launch flags
  (vLLM ``--max-num-seqs``, SGLang ``--max-running-requests``) are this number.

The weight format, KV-cache and engine rules live in estimate/serving/serving_choice.py, which ``gpuplan estimate``
applies to the machine and layout it is given: the same choice on both entry points.

Choices that change numerics or the engine (an FP8 KV cache, a non-default engine) are taken only
when they serve at least ``SWITCH_GAIN`` (10 %) more requests/s than the plain configuration of the
same hardware, or when the plain one does not fit: about the estimator's speed error (README).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuplan.errors import GpuplanError
from gpuplan.estimate.serving.inference import engine_speedup_bound
from gpuplan.i18n import N_, _
from gpuplan.plan.search.search_point import Candidate, Variant

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.estimate.system import System
    from gpuplan.plan.search.search import Searcher
    from gpuplan.workload import Workload

from gpuplan.estimate.serving.serving_choice import (DEFAULT_ENGINE, FP8_KV_ENGINES, SEARCHED_ENGINES, SWITCH_GAIN, choose,
                                                     kv_options, runtime_precision, switch_engine, weight_format)

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "lmdeploy": "LMDeploy",
                "tgi": "TGI", "transformers": "transformers", "torch-compile": "torch.compile"}
# data-parallel attention: SGLang for any MLA model, vLLM only as DP + EP (MoE models)
DP_ATTENTION_ENGINES = {"sglang": lambda moe: True, "vllm": lambda moe: moe}
LLM_SERVING_KINDS = ("decoder", "encoder-decoder")


@dataclass(frozen=True)
class ServingConfig:
    """One point of the serving space (what the estimate of a candidate was run with)."""

    engine: str
    weight_format: str       # bf16 | fp16 | fp8 | int8 | awq | gptq-int4 | ...
    weight_path: str         # native (W8A8) | marlin (W8A16) | upcast | quantized | 16-bit
    kv_cache_dtype: str      # the workload value: auto (16-bit) | fp8 | ...
    dp_attention: bool = False
    ep: int = 1
    extras: tuple[str, ...] = ()   # choices that must earn SWITCH_GAIN: "engine", "kv"


class ServingSpace:
    """The serving choices left free by the workload, and the rules that pick among them."""

    def __init__(self, given: Workload, resolved: Workload, model):
        self.model = model
        self.resolved = resolved
        self.engine = given.framework if given.framework not in (None, "auto") else None   # None: searched
        self.kv = given.kv_cache_dtype                                                     # None: searched
        par = given.parallel
        self.dp_attention = par.dp_attention if par is not None else None                 # None: searched
        self.fixed_ep = par.ep if par is not None else None
        self.moe = getattr(model, "moe", None) is not None
        self.mla = getattr(model, "mla", None) is not None
        self._cache: dict[tuple, Variant | None] = {}
        self._base_of: dict[int, Variant] = {}     # id(variant) -> the workload variant it was made from

    @classmethod
    def for_workload(cls, given: Workload, resolved: Workload, model) -> ServingSpace | None:
        """The space of an LLM serving (or batch generation) workload; None for anything else."""
        from gpuplan.plan.search.candidates import is_llm

        if (resolved.task or "inference") != "inference" or not is_llm(model):
            return None
        if getattr(model, "kind", "decoder") not in LLM_SERVING_KINDS:
            return None
        return cls(given, resolved, model)

    # ------------------------------------------------------------------ the points
    def variants(self, base: list[Variant], system: System, tp: int) -> list[Variant]:
        """Every configuration to estimate for one (GPU, TP) with the default engine; other engines are
        tried on the chosen layout only (:meth:`pick`)."""
        engine = self.engine or DEFAULT_ENGINE
        out = []
        for v in base:
            for dpa in self._dp_attention_options(system, tp, engine):
                eng = engine if self.engine or not dpa or DP_ATTENTION_ENGINES[engine](self.moe) else "sglang"
                for kv in self._kv_options(system.gpu, eng):
                    got = self.variant(v, system.gpu, eng, kv, dpa, tp)
                    if got is not None:
                        out.append(got)
        return out

    def _dp_attention_options(self, system: System, tp: int, engine: str) -> tuple[bool, ...]:
        if self.dp_attention is not None:
            return (bool(self.dp_attention),)
        if not self.mla or tp <= 1 or tp > system.gpus_per_node:
            return (False,)
        if self.engine and not DP_ATTENTION_ENGINES.get(self.engine, lambda moe: False)(self.moe):
            return (False,)
        return (False, True)

    def _kv_options(self, gpu, engine: str) -> tuple[str, ...]:
        return kv_options(gpu, engine, self.kv)

    def variant(self, base: Variant, gpu, engine: str, kv: str, dp_attention: bool, tp: int) -> Variant | None:
        """The workload variant of one configuration (None when the workload rejects it: cached too)."""
        precision = base.w.precision or "bf16"
        q, shown, path = weight_format(self.model, gpu, base.quantization, precision, engine)
        ep = self.fixed_ep if self.fixed_ep and self.fixed_ep > 1 else (tp if dp_attention and self.moe else 1)
        extras = tuple(x for x, on in (("engine", self.engine is None and engine != DEFAULT_ENGINE),
                                       ("kv", self.kv is None and kv != "auto")) if on)
        config = ServingConfig(engine, shown, path, kv, dp_attention, ep, extras)
        key = (base.quantization, base.optimizer, config)
        if key in self._cache:
            return self._cache[key]
        w = base.w
        run = runtime_precision(gpu, precision)    # fp16 where the GPU has no BF16: the record, estimate and flag
        try:
            if (q, engine, kv, run) != (w.quantization, w.framework, w.kv_cache_dtype, w.precision):
                w = w.with_updates(quantization=q, framework=engine, kv_cache_dtype=kv, precision=run)
        except GpuplanError:
            self._cache[key] = None
            return None
        got = self._cache[key] = Variant(q, base.optimizer, w, config)
        self._base_of[id(got)] = base
        return got

    # ------------------------------------------------------------------ the choice
    def pick(self, cands: list[Candidate], searcher: Searcher) -> list[Candidate]:
        """One candidate per (instance type, nodes): the fastest plain configuration unless another
        serves SWITCH_GAIN more requests/s (or the plain one does not fit), then another engine on
        that layout on the same rule."""
        groups: dict[tuple[str, int], list[Candidate]] = {}
        for c in cands:
            groups.setdefault((c.inst.instance_type, c.nodes), []).append(c)
        out = []
        for cs in groups.values():
            best = self._choose(cs)
            if self.engine is None:
                best = self._other_engines(best, searcher)
            best.why[:0] = config_why(best, self.model, searcher.shape)
            out.append(best)
        return out

    @staticmethod
    def _choose(cs: list[Candidate]) -> Candidate:
        """estimate.serving.serving_choice.choose: the rule `gpuplan estimate` applies on one layout too."""
        best, why = choose(cs, _speed, lambda c: not c.variant.config.extras,
                           lambda c: float(c.est.memory.per_gpu_bytes))
        if why == "needed":
            best.why.extend(_needed_why(best))
        elif why == "gain":
            plain = max((c for c in cs if not c.variant.config.extras), key=_rank_key)
            best.why.extend(_gain_why(best, plain))
        return best

    def _other_engines(self, c: Candidate, searcher: Searcher) -> Candidate:
        cfg = c.variant.config
        base = self._base_of[id(c.variant)]
        best = c
        for engine in SEARCHED_ENGINES:
            if engine == cfg.engine or (cfg.dp_attention and not DP_ATTENTION_ENGINES[engine](self.moe)):
                continue
            if cfg.kv_cache_dtype != "auto" and engine not in FP8_KV_ENGINES:
                continue
            if engine_speedup_bound(cfg.engine, engine) < 1.0 + SWITCH_GAIN:
                continue        # the engines' constants cannot give the gain asked for: nothing to estimate
            v = self.variant(base, c.est.system.gpu, engine, cfg.kv_cache_dtype, cfg.dp_attention, c.tp)
            other = searcher.evaluate(c.inst, c.nodes, c.tp, c.pp, c.dp, v) if v is not None else None
            if other is not None and switch_engine(_speed(best), _speed(other)):
                other.why.extend(c.why)
                other.why.append(_engine_why(other, best))
                best = other
        return best


def _speed(c: Candidate) -> float:
    return c.speed(False)


def _rank_key(c: Candidate) -> tuple[float, float]:
    return (_speed(c), -c.est.memory.per_gpu_bytes)


# ------------------------------------------------------------------ sentences
ENGINE_FLAGS = {"vllm": "vLLM --kv-cache-dtype fp8", "sglang": "SGLang --kv-cache-dtype fp8_e4m3",
                "trtllm": "TensorRT-LLM --kv_cache_dtype fp8"}     # command-line flags: not translated


def _gain(a: Candidate, b: Candidate) -> str:
    sb = _speed(b)
    return f"{_speed(a) / sb - 1:.0%}" if sb > 0 else "-"


def _gain_why(best: Candidate, plain: Candidate) -> list[str]:
    """One sentence per choice that earned its place (FP8 KV cache, another engine) against the plain one."""
    cfg = best.variant.config
    out = []
    if "kv" in cfg.extras:
        out.append(_("FP8 KV cache ({flag}): {gain} more requests/s than a 16-bit cache on this hardware").format(
            flag=ENGINE_FLAGS.get(cfg.engine, cfg.engine), gain=_gain(best, plain)))
    if "engine" in cfg.extras:
        out.append(_("{engine}: {gain} more requests/s than {default} on this hardware").format(
            engine=ENGINE_NAMES.get(cfg.engine, cfg.engine), gain=_gain(best, plain),
            default=ENGINE_NAMES[DEFAULT_ENGINE]))
    return out


def _needed_why(c: Candidate) -> list[str]:
    """Why a choice that changes numerics or the engine was needed: nothing plain fits or serves."""
    cfg = c.variant.config
    out = []
    if "kv" in cfg.extras:
        out.append(_("FP8 KV cache ({flag}): a 16-bit cache leaves no room on this hardware").format(
            flag=ENGINE_FLAGS.get(cfg.engine, cfg.engine)))
    if "engine" in cfg.extras:
        out.append(_("{engine}: {default} cannot serve this configuration").format(
            engine=ENGINE_NAMES.get(cfg.engine, cfg.engine), default=ENGINE_NAMES[DEFAULT_ENGINE]))
    return out


def _engine_why(c: Candidate, other: Candidate) -> str:
    return _("{engine}: {gain} more requests/s than {default} on this layout").format(
        engine=ENGINE_NAMES.get(c.variant.config.engine, c.variant.config.engine), gain=_gain(c, other),
        default=ENGINE_NAMES.get(other.variant.config.engine, other.variant.config.engine))


def config_why(c: Candidate, model, shape) -> list[str]:
    """What the chosen configuration is, and why: weights, data-parallel attention, experts, batch limit."""
    from gpuplan.estimate.shapes import weight_bytes

    cfg = c.variant.config
    gpu = c.inst.gpu
    out = []
    w = c.variant.w
    gib = f"{weight_bytes(shape, w.precision or 'bf16', w.quantization or 'none')[0] / 2**30:,.0f}"
    if cfg.weight_path == "native":
        out.append(_("weights FP8 as published (block-wise e4m3), run on {gpu}'s FP8 tensor cores (W8A8): {gib} GiB "
                     "per model copy").format(gpu=gpu, gib=gib))
    elif cfg.weight_path == "marlin":
        out.append(_("weights FP8 as published, run weight-only (W8A16, vLLM FP8 Marlin): {gpu} has no FP8 tensor "
                     "cores").format(gpu=gpu))
    elif cfg.weight_path == "upcast":
        out.append(_("{model} is published in FP8, but {gpu} has no FP8 tensor cores and {engine} no FP8 kernel for "
                     "it here: served as a BF16 upcast (DeepSeek's fp8_cast_bf16.py), {gib} GiB per model copy").format(
            model=model.id, gpu=gpu, engine=ENGINE_NAMES.get(cfg.engine, cfg.engine), gib=gib))
    if cfg.dp_attention:
        out.append(_("data-parallel attention over {tp} GPUs: each holds the attention cache of its own 1/{tp} of the "
                     "sequences ({flags})").format(tp=c.tp, flags="SGLang --enable-dp-attention" if cfg.engine == "sglang"
                                                  else "vLLM -dp + --enable-expert-parallel"))
    if cfg.ep > 1:
        experts = int(getattr(getattr(model, "moe", None), "num_experts", 0) or 0)
        out.append(_("expert parallelism over {ep} GPUs: each holds {n} of the {total} routed experts").format(
            ep=cfg.ep, n=math.ceil(experts / cfg.ep) if experts else "-", total=experts or "-"))
    batch = c.est.performance.get("serving_batch")
    if batch:
        out.append(_("batch limit {n} sequences per model copy (max_num_seqs, launched as such): as many as the KV "
                     "cache holds, fewer only where a decode step of more would miss the TPOT target").format(n=batch))
    return out


def describe(c: Candidate) -> str:
    """The serving layout in words (an English value; its parts are msgids, shown through localize)."""
    cfg = c.variant.config
    parts = [f"TP{c.tp}"]
    if c.pp > 1:
        parts.append(f"PP{c.pp}")
    if c.dp > 1:
        parts.append(f"DP{c.dp}")
    if cfg.dp_attention:
        parts.append(N_("DP-attention"))
    if cfg.ep > 1:
        parts.append(f"EP{cfg.ep}")
    parts.append(N_("{format} weights").format(format=cfg.weight_format.upper()))
    if cfg.kv_cache_dtype not in ("auto", None):
        parts.append(N_("{dtype} KV").format(dtype=cfg.kv_cache_dtype.upper()))
    parts.append(ENGINE_NAMES.get(cfg.engine, cfg.engine))
    return ", ".join(parts)
