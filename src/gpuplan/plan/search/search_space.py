"""The declared space of one search, as the searcher walks it: the framework whose rules size each training point
(its launcher's), the workload variant of a knob setting, the splits of the global batch, virtual pipeline
stages, context-parallel sizes and optimizer levels. A mix-in of :class:`gpuplan.plan.search.search.Searcher` (which
holds the workload, the fixed fields and the recipe target these read)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuplan.estimate.system import NAIVE_PP_FRAMEWORKS
from gpuplan.plan.search.candidates import (
    OFFLOAD_ORDER,
    OPTIMIZER_ORDER,
    TRAIN_PY_LAUNCHERS,
    Fixed,
    Knobs,
    launcher_for,
    launcher_packed,
    sizing_framework,
    splits_in_training,
)
from gpuplan.plan.search.recipe import BatchOption, BatchTarget, batch_options, search_setting
from gpuplan.plan.search.search_point import Variant

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.workload import Workload


class SearchSpace:
    """What one search may try (see the module docstring)."""

    w: "Workload"
    model: Any
    fixed: Fixed
    task: str
    training: bool
    shape: Any
    target: BatchTarget | None
    named_framework: str | None
    _opts: dict[tuple[int, int], tuple[BatchOption, ...]]

    def launcher_of(self, k: Knobs, shape: tuple[int, int, int, int]) -> str:
        """The launcher the bundle runs a training point with (plan/search/candidates.py ``launcher_for``)."""
        tp, pp, _dp, cp = shape
        offload = self.fixed.offload if self.fixed.offload not in (None, *OFFLOAD_ORDER) else k.offload_name
        par = self.w.parallel
        fsdp = par.fsdp if (par and par.fsdp and par.fsdp != "none" and k.zero >= 2) else "none"
        return launcher_for(tp, pp, k.zero, fsdp, offload, cp, framework=self.fixed.framework)

    def framework_for(self, k: Knobs, shape: tuple[int, int, int, int]) -> str:
        """The framework whose rules size a training point: the one its launcher runs (plan/search/candidates.py
        ``sizing_framework``: Megatron mode brings Megatron-Core's memory and kernels whatever the task's default)."""
        return sizing_framework(self.launcher_of(k, shape), self.w.framework or "auto", self.named_framework)

    def fused_loss_for(self, k: Knobs, shape: tuple[int, int, int, int]) -> bool:
        """Whether a training point's loop runs the chunked fused loss: the bundle's train.py does (DDP, FSDP,
        DeepSpeed launchers) unless the workload says fused_loss: false; Megatron computes the whole logits."""
        return self.w.fused_loss is not False and self.launcher_of(k, shape) in TRAIN_PY_LAUNCHERS

    def variant_for(self, v: Variant, k: Knobs, shape: tuple[int, int, int, int] | None = None) -> Variant:
        """The workload of one training point: the optimizer knob (the estimator reads w.optimizer) and, given the
        layout's ``shape``, the framework its launcher runs (:meth:`framework_for`)."""
        if not self.training:
            return v
        name = OPTIMIZER_ORDER[k.optimizer] if self.task not in ("lora", "qlora") and self.fixed.optimizer is None \
            else v.w.optimizer
        framework = self.framework_for(k, shape) if shape is not None else v.w.framework
        fused = self.fused_loss_for(k, shape) if shape is not None else v.w.fused_loss
        packed = launcher_packed(self.w.packed)    # the rows the launch trains (candidates.launcher_packed)
        if v.w.optimizer == name and v.w.framework == framework and v.w.fused_loss == fused and v.w.packed == packed:
            return v
        cache = self.__dict__.setdefault("_opt_variants", {})
        key = (v.quantization, v.config, name, framework, fused, packed)
        if key not in cache:
            cache[key] = Variant(v.quantization, name, v.w.with_updates(optimizer=name, framework=framework,
                                                                        fused_loss=fused, packed=packed), v.config)
        return cache[key]

    def cp_options(self) -> tuple[int, ...]:
        """The workload's context parallelism, or 1 then 2, 4, 8 for long sequences when the layout is searched
        (data/recipes.yaml ``context_parallel_min_seq_len``)."""
        par = self.w.parallel
        if not self.training:
            return (1,)
        if par is not None:
            return (par.cp,)
        if self.target is None or self.task == "qlora" or not splits_in_training(self.model, self.fixed) or \
                (self.w.seq_len or 0) < int(search_setting(
                "context_parallel_min_seq_len")):
            return (1,)
        return (1, 2, 4, 8)

    def _levels(self) -> tuple[int | None, ...]:
        """The optimizer levels tried in turn: AdamW, then 8-bit AdamW only where AdamW fits nowhere."""
        return (0, 1) if (self.training and self.task not in ("lora", "qlora") and self.fixed.optimizer is None) \
            else (None,)

    def batch_options(self, dp: int, pp: int = 1) -> tuple[BatchOption, ...]:
        """The splits of the global batch on ``dp`` ranks (plan/search/recipe.py); one fixed split when no recipe is
        searched (serving, non-transformer models). With a pipeline of ``pp`` stages only splits with at least
        ``pp`` micro-batches per step, where there are any: fewer leave at least half of each step idle (bubble
        (p-1)/m >= 1), and the next smaller micro-batch, which fits whenever they do, halves that."""
        got = self._opts.get((dp, pp))
        if got is not None:
            return got
        if self.target is None:
            got = (BatchOption(self.w.batch_size or 1, self.w.gradient_accumulation or 1),)
        else:
            got = batch_options(self.target, dp)
            if pp > 1 and (self.w.framework or "auto") not in NAIVE_PP_FRAMEWORKS:
                got = tuple(o for o in got if o.grad_accum >= pp) or got
        self._opts[(dp, pp)] = got
        return got

    def vp_options(self, pp: int, opt: BatchOption, naive: bool) -> tuple[int | None, ...]:
        """Virtual pipeline stages to time (None: the workload's or the framework's schedule)."""
        if pp <= 1 or naive or self.w.parallel is not None or self.target is None:
            return (None,)
        layers = int(self.shape.layers) if self.shape is not None else 0
        more = tuple(v for v in search_setting("virtual_stages") if layers and layers % (pp * v) == 0
                     and opt.grad_accum >= pp)
        return (1,) + more
