"""The declared search space of the recommender: instance type x node count x parallel layout x
memory-saving knobs x quantization.

The space is a product of small tuples (``itertools.product``); divisibility rules are filters.
Memory-saving knobs (ZeRO stage, offload, activation checkpointing, optimizer) form a lattice: a
config that saves at least as much memory in every dimension *dominates*. Memory never grows
and speed never improves along the lattice, so for one (instance, nodes, TP, PP) the search only
needs the minimal feasible configs (see :func:`walk_lattice`); the property tests check this
against brute force.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from gpuplan.workload import Workload

TRAIN_TASKS = frozenset({"pretrain", "full", "lora", "qlora"})
NODE_OPTIONS_TRAIN = (1, 2, 4, 8, 16)
NODE_OPTIONS_INFER = (1, 2, 4)
TP_OPTIONS = (1, 2, 4, 8)
TP_ACROSS_NODES = (16,)        # serving only: TP over whole nodes (SGLang/vLLM TP16 on 2 x 8 GPUs)
PP_OPTIONS = (1, 2, 4, 8)
DEFAULT_MAX_GPUS = 64          # the search bound when constraints.max_gpus is unset

# Orders along each memory-saving dimension (least saving first).
ZERO_ORDER = (0, 1, 2, 3)
OFFLOAD_ORDER = ("none", "cpu")
CKPT_ORDER = ("none", "selective", "full")
OPTIMIZER_ORDER = ("adamw", "adamw-8bit")

# Which engine the bundle emits for a layout (docs/plan-bundle.md, "Launchers"):
# torchrun = DDP in the bundle's train.py; fsdp = torchrun + FSDP2 in train.py; deepspeed = torchrun +
# DeepSpeed ZeRO (ds_config.json) in train.py; megatron = ms-swift Megatron mode (`megatron sft|pt`,
# Megatron-Core), the only emitted engine with tensor and pipeline parallelism. Megatron mode has no
# DeepSpeed: its ZeRO-1 equivalent is --use_distributed_optimizer and it has no CPU offload, and it
# cannot train a bitsandbytes-quantized base (QLoRA), so those layouts are not offered with TP/PP > 1
# (ms-swift swift/megatron/arguments/megatron_args.py, gpuplan research notes, launch notes section 1.2).
LAUNCHERS = ("torchrun", "fsdp", "deepspeed", "megatron")
# The launchers that run the bundle's own train.py, whose loss is the chunked fused cross-entropy (workload fused_loss,
# estimate/memory/loss.py); Megatron mode computes the whole logits.
TRAIN_PY_LAUNCHERS = frozenset({"torchrun", "fsdp", "deepspeed"})
# A framework the workload names wins over the layout's default launcher (docs/plan-bundle.md, "Training
# launch"); the search then offers only layouts it runs (:func:`launchable`). Other names (transformers,
# llama-factory, swift, torchtune, ...) have no launcher of their own in the bundle: the layout decides.
FRAMEWORK_LAUNCHER = {"deepspeed": "deepspeed", "fsdp": "fsdp", "megatron": "megatron"}


def launcher_packed(packed: bool | None) -> bool:
    """Whether a training plan's launch packs its samples into full seq_len rows: the workload's ``packed``, else yes,
    as every launcher of the bundle does (train.py concatenates the samples into --seq_len blocks, Megatron runs
    ``--packing true``), so the plan is sized and its steps counted for the rows the launch really trains (an
    unset ``packed`` means unpacked rows in ``estimate``, as the Hugging Face Trainer runs them)."""
    return True if packed is None else bool(packed)


def launcher_for(tp: int, pp: int, zero: int = 0, fsdp: str = "none", offload: str = "none", cp: int = 1,
                 framework: str | None = None) -> str:
    """The launcher that runs a training layout (one of LAUNCHERS); context parallelism needs Megatron.
    ``framework``: the one the workload names, which wins when it runs the layout."""
    named = FRAMEWORK_LAUNCHER.get(framework or "")
    if named and _runs(named, tp * pp * cp, zero, offload):
        return named
    if tp * pp * cp > 1:
        return "megatron"
    if fsdp not in (None, "none"):
        return "fsdp"
    if zero > 0 or offload not in (None, "none"):
        return "deepspeed"
    return "torchrun"


# The framework whose memory and time rules size a layout under each launcher (the estimator's names). Megatron
# mode runs Megatron-Core: fp32 main_grad buffers allocated for the whole run (4 bytes per parameter for bf16),
# its fused kernels and activation layout; the bundle's FSDP2 keeps fp32 sharded parameters and gradients. The
# other launchers run the Hugging Face model of the bundle's train.py (DDP or the DeepSpeed engine): there the
# workload's framework keeps its rules (a named Trainer stack, else the task's default: DeepSpeed's mixed
# precision for full training, transformers + PEFT for LoRA). docs/recommender.md, "Only launchable layouts".
LAUNCHER_RULES = {"megatron": ("megatron", ("megatron", "nemo")), "fsdp": ("fsdp", ("fsdp",))}


def sizing_framework(launcher: str, framework: str, named: str | None) -> str:
    """The framework whose rules size a layout the bundle runs with ``launcher``: ``framework`` is the workload's
    (resolved), ``named`` the one the user set (None: unset). Megatron mode always brings Megatron-Core's rules
    (NeMo's, on the same core, stay NeMo's); FSDP's own rules when the user named no framework."""
    rules = LAUNCHER_RULES.get(launcher)
    if rules is None or framework in rules[1]:
        return framework
    if launcher == "megatron" or named in (None, "auto"):
        return rules[0]
    return framework


def _runs(launcher: str, model_parallel: int, zero: int, offload: str | None) -> bool:
    """Whether ``launcher`` runs a layout: DeepSpeed and FSDP have no TP/PP in the bundle (FSDP2 no
    offload either); Megatron mode has the distributed optimizer (ZeRO-1) at most and no offload."""
    if launcher == "megatron":
        return zero <= 1 and offload in (None, "none")
    if launcher == "fsdp":
        return model_parallel == 1 and offload in (None, "none")
    return model_parallel == 1


def launchable(task: str, tp: int, pp: int, zero: int = 0, offload: str = "none", framework: str | None = None) -> bool:
    """True when some emitted launcher runs this layout (see LAUNCHERS); with a named ``framework``
    that has a launcher of its own, when that one does."""
    named = FRAMEWORK_LAUNCHER.get(framework or "")
    if named:
        return _runs(named, tp * pp, zero, offload) and not (named == "megatron" and task == "qlora")
    if tp * pp == 1:
        return True
    return task != "qlora" and zero <= 1 and offload in (None, "none")


@dataclass(frozen=True, order=True)
class Knobs:
    """Memory-saving settings of one layout (each field indexes its *_ORDER tuple)."""

    zero: int = 0
    offload: int = 0
    ckpt: int = 0
    optimizer: int = 0

    def __post_init__(self) -> None:
        # the search looks knobs up in dicts tens of thousands of times: hash once
        object.__setattr__(self, "_hash", hash((self.zero, self.offload, self.ckpt, self.optimizer)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]  # set in __post_init__ (not a field: eq and repr ignore it)

    @property
    def offload_name(self) -> str:
        return OFFLOAD_ORDER[self.offload]

    @property
    def ckpt_name(self) -> str:
        return CKPT_ORDER[self.ckpt]

    @property
    def optimizer_name(self) -> str:
        return OPTIMIZER_ORDER[self.optimizer]

    def dominates(self, other: "Knobs") -> bool:
        """True when self saves at least as much memory as ``other`` in every dimension."""
        return (self.zero >= other.zero and self.offload >= other.offload and self.ckpt >= other.ckpt
                and self.optimizer >= other.optimizer)

    def steps_down(self) -> Iterator[tuple[str, "Knobs"]]:
        """The configs one step less saving, each with the name of the feature it drops."""
        if self.ckpt:
            yield (f"{CKPT_ORDER[self.ckpt]} checkpointing", Knobs(self.zero, self.offload, self.ckpt - 1, self.optimizer))
        if self.offload:
            yield ("CPU offload", Knobs(self.zero, self.offload - 1, self.ckpt, self.optimizer))
        if self.zero:
            yield (f"ZeRO-{self.zero}", Knobs(self.zero - 1, self.offload, self.ckpt, self.optimizer))
        if self.optimizer:
            yield ("8-bit AdamW", Knobs(self.zero, self.offload, self.ckpt, self.optimizer - 1))


@dataclass(frozen=True)
class Fixed:
    """What the workload fixes; None = free to search."""

    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    zero: int | None = None
    offload: str | None = None
    checkpointing: str | None = None   # none | selective | full
    optimizer: str | None = None
    gpus: int | None = None
    nodes: int | None = None
    framework: str | None = None       # the framework the workload names (None: unset or auto)

    @classmethod
    def from_workload(cls, w: Workload, framework: str | None = None) -> "Fixed":
        """``framework``: the one the user named (the unresolved workload's), not the task default."""
        from gpuplan.estimate.system import FSDP_TO_ZERO, default_zero

        par = w.parallel
        hw = w.hardware
        ck = w.grad_checkpointing
        # per-op selective recomputation (torchtitan) is sized as full: the bundle's launchers have no per-op mode
        ckpt = None if ck is None else ("selective" if ck == "selective" else ("full" if ck else "none"))
        gpus = hw.count if hw and hw.count else None
        if par is not None and par.dp is not None and gpus is None:
            gpus = par.tp * par.pp * par.dp
        # a ZeRO stage is fixed only when the workload (or its framework's default, or an FSDP mode) says one;
        # a parallel block naming only TP/PP leaves the distributed optimizer to the search
        zero = max(default_zero(par, w.framework or "auto"), FSDP_TO_ZERO[par.fsdp]) if par else 0
        return cls(
            tp=par.tp if par else None, pp=par.pp if par else None, dp=par.dp if par else None,
            zero=zero if par and (par.zero is not None or zero > 0) else None,
            offload=par.offload if par else None,
            checkpointing=ckpt, optimizer=w.optimizer, gpus=gpus, nodes=hw.nodes if hw and hw.nodes else None,
            framework=framework if framework in FRAMEWORK_LAUNCHER else None,
        )


def is_llm(model) -> bool:
    """ModelSpec.is_llm (a property; tolerate a method too)."""
    v = getattr(model, "is_llm", False)
    return bool(v() if callable(v) else v)


def _choices(order: tuple, fixed_value) -> tuple[int, ...]:
    if fixed_value is None:
        return tuple(range(len(order)))
    if fixed_value in order:
        return (order.index(fixed_value),)
    return (-1,)  # a value outside the searched order (e.g. optimizer sgd): kept as-is, see knob_values


@functools.lru_cache(maxsize=512)
def lattice(task: str, dp: int, fixed: Fixed, optimizer_level: int | None = None,
            model_parallel: bool = False) -> tuple[Knobs, ...]:
    """Every memory-saving config allowed for ``task`` with data-parallel size ``dp``, least saving first.

    ``optimizer_level`` restricts the optimizer dimension to one level: the search tries 8-bit AdamW
    only where AdamW fits nowhere in the lattice (it changes the numerics, so it is a last resort).

    ZeRO stages only shard across dp > 1 ranks (stage 2 with CPU offload also helps on one GPU,
    as ZeRO-Offload: Ren et al. 2021); LoRA keeps tiny optimizer states, so neither offload nor an
    8-bit optimizer is searched for it. With ``model_parallel`` (TP x PP > 1) only layouts the
    Megatron launcher runs are kept (ZeRO 0/1, no offload: :func:`launchable`).
    """
    lora = task in ("lora", "qlora")
    if task not in TRAIN_TASKS:
        return (Knobs(),)
    zeros = _choices(ZERO_ORDER, fixed.zero)
    offs = _choices(OFFLOAD_ORDER, fixed.offload) if not lora or fixed.offload else (0,)
    ckpts = _choices(CKPT_ORDER, fixed.checkpointing)
    opts = _choices(OPTIMIZER_ORDER, fixed.optimizer) if not lora or fixed.optimizer else (0,)
    if optimizer_level is not None and fixed.optimizer is None:
        opts = tuple(o for o in opts if o == optimizer_level)
    out = []
    for z, o, c, p in itertools.product(zeros, offs, ckpts, opts):
        if fixed.zero is None and dp == 1 and z not in (0, 2):
            continue            # ZeRO 1/3 change nothing on one rank
        if fixed.zero is None and dp == 1 and (z == 2) != (o == 1):
            continue            # on one rank: stage 2 only as the carrier of CPU offload
        if fixed.offload is None and o == 1 and z < 2:
            continue            # DeepSpeed offloads optimizer states from ZeRO stage 2 up
        if lora and fixed.zero is None and z in (1, 2):
            continue            # LoRA: plain DDP or full sharding of the frozen base (ZeRO-3 / FSDP)
        if not launchable(task, 2 if model_parallel else 1, 1, max(z, 0), OFFLOAD_ORDER[max(o, 0)], fixed.framework):
            continue            # TP/PP run under Megatron: distributed optimizer (ZeRO-1) at most, no offload;
            #                     a named framework runs only its own layouts
        if (model_parallel or fixed.framework == "megatron") and max(p, 0) > 0:
            continue            # Megatron mode has no bitsandbytes 8-bit AdamW (its own Adam only)
        out.append(Knobs(max(z, 0), max(o, 0), max(c, 0), max(p, 0)))
    return tuple(sorted(set(out), key=lambda k: (k.offload, k.zero + k.ckpt + k.optimizer, k.ckpt, k.zero, k.optimizer)))


@functools.lru_cache(maxsize=256)
def _structure(configs: tuple[Knobs, ...]) -> tuple[tuple[Knobs, ...], dict[Knobs, tuple[Knobs, ...]], list[Knobs]]:
    """The minimal elements of a lattice, each config's upper covers and the configs by level (computed
    once per lattice)."""
    mins = tuple(k for k in configs if not any(k != j and k.dominates(j) for j in configs))
    ups: dict[Knobs, tuple[Knobs, ...]] = {}
    for k in configs:
        above = [j for j in configs if j != k and j.dominates(k)]
        ups[k] = tuple(j for j in above if not any(m != j and m in above and j.dominates(m) for m in above))
    by_level = sorted(configs, key=lambda k: (k.zero + k.offload + k.ckpt + k.optimizer, k))
    return mins, ups, by_level


def walk_lattice(configs: list[Knobs], fits: Callable[[Knobs], bool],
                 gpu_fits: Callable[[Knobs], bool] | None = None) -> list[Knobs]:
    """The minimal feasible configs (none of them dominates another feasible config).

    Memory only shrinks up the lattice, so GPU-memory infeasibility propagates down: (1) when every
    minimal config fits, they are the answer; (2) otherwise walk top-down (most saving first) and
    skip every config below a GPU-infeasible one; but when a middle config fits, the frontier
    is low and a bottom-up walk that skips configs above a feasible one is cheaper. Host RAM (offload needs more) is checked per
    config and does not propagate.
    """
    if not configs:
        return []
    gpu_ok = gpu_fits or fits
    mins, ups, by_level = _structure(tuple(configs))
    if all(fits(k) for k in mins):
        return list(mins)
    mid = by_level[len(by_level) // 2]
    if fits(mid):
        # The feasibility frontier is low: bottom-up, skipping configs above a feasible one.
        found = [mid]
        for k in configs:
            if not any(k.dominates(f) for f in found) and fits(k):
                found.append(k)
        return _minimal(found)
    order = by_level[::-1]
    gpu_bad: set[Knobs] = set()
    feasible: list[Knobs] = []
    for k in order:
        if any(u in gpu_bad for u in ups[k]):
            gpu_bad.add(k)
            continue
        if not gpu_ok(k):
            gpu_bad.add(k)
            continue
        if fits(k):
            feasible.append(k)
    return _minimal(feasible)


def _minimal(found: list[Knobs]) -> list[Knobs]:
    return [k for k in found if not any(k != j and k.dominates(j) for j in found)]


def splits_in_training(model, fixed: Fixed) -> bool:
    """Whether a training plan may split ``model`` over GPUs (TP/PP): Megatron mode (ms-swift ``megatron sft|pt``,
    the bundle's only TP/PP launcher) registers decoder (GPT-style) models only (modelscope/ms-swift
    swift/megatron/model/gpt/__init__.py; Megatron-SWIFT Quick-start: "Qwen3, Qwen3-MoE, Qwen2.5, Llama3,
    Deepseek-R1 and GLM4.5 series"), so an encoder (BERT, bge) or encoder-decoder (T5) trains data-parallel
    (DDP, ZeRO, FSDP). A TP or PP the workload pins is kept (the user's layout, estimated as asked)."""
    return getattr(model, "kind", "decoder") == "decoder" or fixed.tp is not None or fixed.pp is not None


def parallel_shapes(model, total_gpus: int, gpus_per_node: int, task: str, fixed: Fixed) -> list[tuple[int, int, int]]:
    """(tp, pp, dp) triples for ``total_gpus``: TP stays within a node (serving may also span whole
    nodes, its all-reduces then cross the network) and divides the attention
    heads (and the KV heads, or is a multiple of them: vLLM and Megatron shard KV heads that way);
    PP divides into at most one stage per layer. Inference keeps dp as replicas inside the group."""
    heads = int(getattr(model, "num_attention_heads", 0) or 0)
    kv = int(getattr(model, "num_key_value_heads", 0) or heads or 0)
    layers = int(getattr(model, "num_layers", 0) or 0)
    llm = heads > 0 and layers > 0 and is_llm(model)
    out = []
    tps = TP_OPTIONS if task in TRAIN_TASKS else TP_OPTIONS + TP_ACROSS_NODES
    for tp, pp in itertools.product(tps, PP_OPTIONS):
        if fixed.tp is not None and tp != fixed.tp or fixed.pp is not None and pp != fixed.pp:
            continue
        if not llm and (tp > 1 or pp > 1):
            continue
        if tp > gpus_per_node:
            # across nodes: whole nodes, serving only, and no pipeline on top (TP already spans them)
            if task in TRAIN_TASKS or tp % gpus_per_node or pp > 1 or total_gpus % tp:
                continue
        elif gpus_per_node % tp or total_gpus % (tp * pp):
            continue
        if llm and (heads % tp or (kv % tp and tp % kv)):
            continue
        if llm and pp > layers:
            continue
        if task in TRAIN_TASKS and tp * pp > 1 and not splits_in_training(model, fixed):
            continue     # Megatron mode, the bundle's only TP/PP launcher, trains decoder models only
        if not launchable(task, tp, pp, framework=fixed.framework):
            continue     # QLoRA has no TP/PP launcher (Megatron mode trains no bitsandbytes base); a named
            #              framework runs only its own layouts (DeepSpeed, FSDP: no TP/PP)
        dp = total_gpus // (tp * pp)
        if fixed.dp is not None and dp != fixed.dp:
            continue
        if pp > 1 and tp < gpus_per_node:
            continue     # Megatron's rule of thumb: TP fills a node first, pipeline stages go across nodes
        if task not in TRAIN_TASKS and total_gpus > gpus_per_node and dp > 1 \
                and fixed.nodes is None and fixed.dp is None:
            continue     # a serving group spans nodes only to hold one copy of the model: several copies
            #              over several nodes are the same GPUs as more, smaller replicas (a plan already)
        out.append((tp, pp, dp))
    return out


def node_options(task: str, gpus_per_node: int, max_gpus: int, fixed: Fixed, *,
                 multi_node: bool = True) -> Iterable[int]:
    """Node counts to try for an instance type with ``gpus_per_node`` GPUs. ``multi_node`` is False
    for all but the largest whole-GPU type of a family: clusters are built from full nodes."""
    opts = NODE_OPTIONS_TRAIN if task in TRAIN_TASKS else NODE_OPTIONS_INFER
    for n in opts:
        if n > 1 and not multi_node and fixed.nodes is None:
            continue
        if fixed.nodes is not None and n != fixed.nodes:
            continue
        g = n * gpus_per_node
        if fixed.gpus is not None and g != fixed.gpus:
            continue
        if g > max_gpus:
            continue
        yield n
