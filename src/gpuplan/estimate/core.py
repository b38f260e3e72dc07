"""`estimate()`: one workload on fixed hardware -> memory breakdown, time/throughput, assumptions.

Pure and fast (no torch, no I/O beyond the lazily loaded catalog): the recommender calls
:func:`estimate_resolved` thousands of times per request. It checks the workload against the GPU, hands it to the
estimator of its kind (LLM serving: estimate/serving/inference.py; LLM training: estimate/training/from_workload.py;
other networks: estimate/nonllm/), applies the user's calibration and, when it does not fit, suggests what would.
The reverse question (the largest value that fits, `estimate --max`) is estimate/max_fit.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import scale_performance, workload_class
from gpuplan.estimate.engine_defaults import encoder_defaults, refuse_unread_head, training_head
from gpuplan.estimate.memory import MemoryEstimate
from gpuplan.estimate.params import calibration
from gpuplan.estimate.shapes import CLASSIFIER_OUTPUTS, Shape, shape_of, with_classifier_head
from gpuplan.estimate.system import Layout, System, global_sequences, layout_from_workload, system_from_workload
from gpuplan.estimate.training.from_workload import _training
from gpuplan.units import fmt_bytes
from gpuplan.workload import Workload
from gpuplan.workload_defaults import resolve_defaults
from gpuplan.workload_loading import load_workload
from gpuplan.i18n import _

SCHEMA_VERSION = 1


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class Estimate:
    """The result of one estimate (the JSON contract of `gpuplan estimate --json`)."""

    workload: Workload
    model: Any
    system: System
    layout: Layout
    memory: MemoryEstimate
    performance: dict
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    # LLM serving: the replica load model the performance figures were read from (estimate/serving/replica.py);
    # the recommender reads the planned load off it (plan/serving/serving_report.py). Not part of the JSON.
    serving_model: Any = field(default=None, repr=False, compare=False)
    # a concurrency one replica cannot hold (the `estimate` command warns; the recommender adds replicas)
    concurrency_warnings: list[str] = field(default_factory=list, repr=False, compare=False)

    @property
    def fits(self) -> bool:
        return self.memory.fits

    def to_dict(self) -> dict:
        from gpuplan.estimate import intervals

        sysd = {
            "gpu": self.system.gpu.id, "gpus_per_node": self.system.gpus_per_node, "nodes": self.system.nodes,
            "total_gpus": self.system.total_gpus, "instance_type": self.system.instance_type,
            "interconnect": self.system.intra_link, "inter_node_gbit_s": self.system.inter_node_gbit_s,
            "rdma": self.system.rdma,
        }
        lay = self.layout
        return {
            "schema_version": SCHEMA_VERSION,
            "workload": self.workload.model_dump(mode="json"),
            "model": {"id": self.model.id, "params_total": self.model.params_total,
                      "params_active": self.model.params_active, "kind": self.model.kind,
                      "arch": self.model.arch or None,
                      "linear_attention_layers": la.layers if (la := self.model.linear_attention) else 0,
                      "synthetic": bool(getattr(self.model, "synthetic", False))},
            "hardware": sysd,
            "parallel": {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep, "sp": lay.sp, "cp": lay.cp, "zero": lay.zero,
                         "fsdp": lay.fsdp, "offload": lay.offload, "checkpointing": lay.checkpointing,
                         "micro_batch": lay.micro_batch, "gradient_accumulation": lay.grad_accum,
                         "pipeline": "layer split" if lay.naive_pipeline else (
                             ({"1f1b": "1F1B", "gpipe": "GPipe"}.get(lay.schedule) or f"interleaved 1F1B (vp {lay.vp})")
                             if lay.pp > 1 else None),
                         "virtual_stages": lay.vp, "tp_comm_overlap": lay.tp_comm_overlap},
            "memory": {**self.memory.to_dict(), "fit_confidence": round(intervals.fit_confidence(self), 3)},
            "performance": self.performance,
            # 80 % prediction intervals of every memory and time figure: {dotted path: [low, high]}
            "intervals": intervals.estimate_intervals(self),
            "suggestions": list(self.suggestions),
            "assumptions": list(self.assumptions),
            "warnings": list(self.warnings),
        }



def _checks(w: Workload, model, system: System, warnings: list[str]) -> None:
    gpu = system.gpu
    if w.precision == "fp8" and gpu.peak_tflops("fp8") is None:
        warnings.append(_("{gpu} has no FP8 tensor cores: FP8 compute is not available on it").format(gpu=gpu.id))
    if w.quantization == "fp8" and gpu.peak_tflops("fp8") is None:
        warnings.append(_("{gpu} has no FP8 support: FP8 weights would run through a slower W8A16 path").format(gpu=gpu.id))
    if w.precision == "bf16" and gpu.peak_tflops("bf16") is None:
        warnings.append(_("{gpu} has no BF16 support: use precision fp16").format(gpu=gpu.id))
    if w.flash_attention and gpu.compute_capability and float(gpu.compute_capability) < 8.0 and w.framework not in ("vllm",):
        warnings.append(_("FlashAttention-2 needs compute capability 8.0+; {gpu} is {compute_capability}: activations assume the memory-efficient SDPA kernel").format(gpu=gpu.id, compute_capability=gpu.compute_capability))
    if w.attention_kernel == "fa3" and gpu.compute_capability and float(gpu.compute_capability) != 9.0:
        warnings.append(_("FlashAttention-3 runs on Hopper GPUs (compute capability 9.0) only; {gpu} is "
                          "{compute_capability}: timed with FlashAttention-2, the kernel the stack falls back to").format(
            gpu=gpu.id, compute_capability=gpu.compute_capability))
    if getattr(model, "linear_attention", None) is not None and gpu.compute_capability \
            and float(gpu.compute_capability) < 8.0:
        warnings.append(_("{model}'s linear-attention layers run on Triton kernels (flash-linear-attention, and vLLM's "
                          "and SGLang's own) written for compute capability 8.0+; on {gpu} ({compute_capability}) "
                          "they are unconfirmed: the time assumes they run").format(
            model=model.id, gpu=gpu.id, compute_capability=gpu.compute_capability))
    mpos = getattr(model, "max_position_embeddings", None)
    length = (w.prompt_tokens or 0) + (w.output_tokens or 0) if w.task == "inference" else (w.seq_len or 0)
    if mpos and length > mpos:
        warnings.append(_("{length} tokens exceed the model's max_position_embeddings {mpos}").format(length=length, mpos=mpos))
    if system.gpu_fraction < 1 and (system.total_gpus > 1 or w.task != "inference"):
        warnings.append(_("vGPU slices are meant for inference and graphics, not (multi-GPU) training"))


def _layers(model) -> int:
    return int(getattr(model, "num_layers", 0) or 0)


def _is_llm(model) -> bool:
    flag = getattr(model, "is_llm", True)
    return bool(flag() if callable(flag) else flag)


def estimate_resolved(w: Workload, model, system: System, layout: Layout, *,
                      shape: Shape | None = None, with_suggestions: bool = True,
                      memory_only: bool = False, explain: bool = True, memo: dict | None = None) -> Estimate:
    """Estimate a workload whose defaults are already filled (see workload_defaults.resolve_defaults).

    ``memory_only`` skips the time model (the recommender's feasibility pass); performance is then {}.
    ``explain=False`` skips the warnings and the memory notes (the recommender's recipe search; same numbers).
    ``memo``: a dict one caller keeps for one model and shape (the recommender's search): a training memory whose
    inputs were seen before (training_memory_key) is taken from it instead of computed again."""
    warnings: list[str] = []
    assumptions: list[str] = []
    if not memory_only and explain:  # the feasibility pass keeps memory only; the time pass writes the warnings
        _checks(w, model, system, warnings)
    framework = w.framework or "auto"
    task = w.task or "inference"
    if getattr(model, "profile", None) is not None and not _is_llm(model):
        from gpuplan.estimate.nonllm.nonllm import nonllm_estimate   # imported by the workloads that need it

        # the layout's batch: the workload's batch_size (layout_from_workload), or the one the job search tries
        res = nonllm_estimate(model, task=task, precision=w.precision or "bf16", batch=layout.micro_batch,
                              inp=w.input.model_dump() if w.input else None, optimizer=w.optimizer or "adamw",
                              framework=framework, layout=layout, system=system,
                              flash=w.flash_attention is not False, quantization=w.quantization or "none",
                              lora_rank=w.lora.rank if w.lora else 8, tf32=w.tf32 is not False,
                              attention_kernel=w.attention_kernel)
        assumptions.extend(res.notes)
        est = Estimate(w, model, system, layout, res.memory, res.performance, assumptions, warnings)
        if not memory_only:
            _apply_calibration(est)
        if with_suggestions and not est.fits:
            est.suggestions = _suggest(w, model, system, layout, est)
        return est
    s = shape or shape_of(model)
    if task != "inference" and training_head(w, model) == "classifier":
        s = with_classifier_head(s)
        assumptions.append(_("head: a task head of {n} outputs instead of the vocabulary projection: no [tokens x "
                             "vocab] logits and none of the projection's matmuls").format(n=CLASSIFIER_OUTPUTS))
    serving_model = None
    if task == "inference":
        # the serving models are imported by the serving workloads only (a cold training `estimate` skips them)
        from gpuplan.estimate.serving.inference import _inference

        mem, perf_d, notes, serving_model, perf_warnings = _inference(w, model, s, system, layout, memory_only)
    else:
        perf_warnings = []
        mem, perf_d, notes = _training(w, model, s, system, layout, memory_only, explain, memo)
    assumptions.extend(notes)
    assumptions.extend(mem.notes)
    if explain and not memory_only and (lin := getattr(model, "linear_attention", None)) is not None:
        assumptions.append(_(
            "{linear} of {layers} layers are Gated DeltaNet (linear attention): no KV cache, a fixed state per sequence "
            "({state:.1f} MiB), timed as their projections with fused kernels (vLLM and SGLang ship them; for "
            "transformers and Megatron the training bundle installs flash-linear-attention, without which they run a "
            "PyTorch loop several times slower, not counted)").format(linear=lin.layers, layers=model.num_layers,
                                   state=model.recurrent_state_bytes(2.0) / 2**20))
    est = Estimate(w, model, system, layout, mem, perf_d, assumptions, warnings, serving_model=serving_model,
                   concurrency_warnings=perf_warnings)
    if not memory_only:
        _apply_calibration(est)
    if with_suggestions and not est.fits:
        est.suggestions = _suggest(w, model, system, layout, est)
    return est


def _apply_calibration(est: Estimate) -> None:
    """Scale throughput and times by the user's `gpuplan calibrate` overlay for this GPU, framework and
    workload class (gpuplan.estimate.calibration), and say so in the assumptions."""
    w = est.workload
    cal = calibration(est.system.gpu.id, w.framework or "auto", workload_class(w.task or "inference", est.model))
    if cal is None or not est.performance:
        return
    est.performance = scale_performance(est.performance, cal.factor)
    if est.serving_model is not None:     # the load model answers at the calibrated speed too
        est.serving_model = replace(est.serving_model, speed=est.serving_model.speed * cal.factor)
    est.assumptions.append(cal.note())



def _serving_llm(model) -> bool:
    return _is_llm(model) and getattr(model, "kind", "decoder") in ("decoder", "encoder-decoder") and \
        getattr(model, "profile", None) is None


def estimate(workload: Workload | dict | str, **overrides: Any) -> Estimate:
    """Estimate one workload on its fixed hardware (``hardware:`` block or --gpu/--gpus)."""
    from gpuplan.catalog.models import resolve_model, workload_region

    w = load_workload(workload, **overrides) if overrides or not isinstance(workload, Workload) else workload
    resolved, notes = resolve_defaults(w)
    model = resolve_model(resolved.model, region=workload_region(resolved))
    from gpuplan.estimate.serving.serving_choice import refuse_foreign_mxfp4

    refuse_foreign_mxfp4(model, resolved.task or "inference", resolved.quantization)
    from gpuplan.estimate.nonllm.input_keys import refuse_unread_input

    refuse_unread_input(model, resolved.input)
    refuse_unread_head(model, resolved)
    resolved, notes = encoder_defaults(w, resolved, model, notes)
    system, sys_notes = system_from_workload(resolved)
    layout = layout_from_workload(resolved, system.total_gpus, system.gpus_per_node, _layers(model))
    if resolved.is_training and resolved.gradient_accumulation is None:   # from the workload's global batch
        notes.append(_("gradient_accumulation {ga}: the global batch of {target} sequences over micro-batch {micro} x "
                       "DP {dp} ({actual} sequences per optimizer step)").format(
            ga=layout.grad_accum, target=global_sequences(resolved), micro=layout.micro_batch, dp=layout.dp,
            actual=layout.micro_batch * layout.grad_accum * layout.dp))
        resolved = resolved.with_updates(gradient_accumulation=layout.grad_accum)
    est = estimate_resolved(resolved, model, system, layout)
    if (resolved.task or "inference") == "inference" and _serving_llm(model):
        from gpuplan.estimate.serving.serving_choice import as_recommended

        est, notes = as_recommended(w, resolved, model, system, layout, est, notes,
                                    lambda v: estimate_resolved(v, model, system, layout))
    est.assumptions[:0] = notes + sys_notes + list(getattr(model, "assumptions", ()) or ())
    est.warnings.extend(est.concurrency_warnings)
    from gpuplan.estimate import intervals

    est.assumptions.extend(intervals.notes(est))
    return est


# ---------------------------------------------------------------------------------------------
# What would make it fit
# ---------------------------------------------------------------------------------------------

def _try(w: Workload, model, system: System, layout: Layout, **wchanges) -> Estimate | None:
    try:
        w2 = w.with_updates(**wchanges) if wchanges else w
        lay = (layout_from_workload(w2, system.total_gpus, system.gpus_per_node, _layers(model))
               if "parallel" in wchanges else layout)
        return estimate_resolved(w2, model, system, lay, with_suggestions=False)
    except GpuplanError:
        return None


def _suggest(w: Workload, model, system: System, layout: Layout, est: Estimate) -> list[str]:
    out: list[str] = []
    short = est.memory.shortfall_bytes
    out.append(_("needs {per_gpu_bytes} per GPU, {short} more than the {capacity_bytes} of {gpu}").format(per_gpu_bytes=fmt_bytes(est.memory.per_gpu_bytes), short=fmt_bytes(short), capacity_bytes=fmt_bytes(est.memory.capacity_bytes), gpu=system.gpu.id))
    task = w.task or "inference"
    par = (w.parallel.model_dump() if w.parallel else {})
    if task == "inference":
        for q in ("fp8", "int8", "awq", "gptq-int4"):
            if q == w.quantization:
                continue
            if q == "fp8" and system.gpu.peak_tflops("fp8") is None:
                continue
            e = _try(w, model, system, layout, quantization=q, precision="fp16" if q in ("awq", "gptq-int4") else w.precision)
            if e and e.fits:
                out.append(_("quantize the weights to {q}: {per_gpu_bytes} per GPU").format(q=q, per_gpu_bytes=fmt_bytes(e.memory.per_gpu_bytes)))
                break
        if (w.kv_cache_dtype or "auto") not in ("fp8", "int8"):
            e = _try(w, model, system, layout, kv_cache_dtype="fp8")
            if e and e.fits:
                out.append(_("store the KV cache in fp8: {per_gpu_bytes} per GPU").format(per_gpu_bytes=fmt_bytes(e.memory.per_gpu_bytes)))
    else:
        if task == "full" or task == "pretrain":
            for t2, q in (("lora", "none"), ("qlora", "bnb-nf4")):
                e = _try(w, model, system, layout, task=t2, quantization=q,
                         lora={"rank": 8, "alpha": 16, "targets": "all-linear", "dropout": 0.05})
                if e and e.fits:
                    out.append(_("fine-tune with {task} instead: {per_gpu_bytes} per GPU").format(task=t2.upper(), per_gpu_bytes=fmt_bytes(e.memory.per_gpu_bytes)))
                    break
        if w.grad_checkpointing is not True:
            e = _try(w, model, system, layout, grad_checkpointing=True)
            if e and e.fits:
                out.append(_("turn on gradient checkpointing: {per_gpu_bytes} per GPU").format(per_gpu_bytes=fmt_bytes(e.memory.per_gpu_bytes)))
        if layout.zero < 3 and system.total_gpus > 1:  # LoRA/QLoRA too: ZeRO-3/FSDP shard the frozen base
            e = _try(w, model, system, layout, parallel={**par, "zero": 3})
            if e and e.fits:
                out.append(_("shard everything with ZeRO-3 / FSDP full_shard: {per_gpu_bytes} per GPU").format(per_gpu_bytes=fmt_bytes(e.memory.per_gpu_bytes)))
        if task in ("full", "pretrain") and layout.offload == "none":
            e = _try(w, model, system, layout, parallel={**par, "zero": max(layout.zero, 2), "offload": "cpu"})
            if e and e.fits:
                out.append(_("offload optimizer states to CPU (ZeRO-Offload): {per_gpu_bytes} per GPU, host RAM {host_bytes}").format(per_gpu_bytes=fmt_bytes(e.memory.per_gpu_bytes), host_bytes=fmt_bytes(e.memory.host_bytes)))
        if (w.batch_size or 1) > 1:
            e = _try(w, model, system, layout, batch_size=1, gradient_accumulation=(w.gradient_accumulation or 1) * (w.batch_size or 1))
            if e and e.fits:
                out.append(_("use micro-batch 1 with more gradient accumulation"))
    n = min_gpus_to_fit(w, model, system)
    if n:
        tmpl = _("use {n} x {gpu} (tensor parallel)") if task == "inference" else _("use {n} x {gpu} (ZeRO-3 / FSDP)")
        out.append(tmpl.format(n=n, gpu=system.gpu.id))
    if len(out) == 1:
        out.append(_("no single change fits: use a GPU with more memory (`gpuplan recommend` searches them)"))
    return out


def min_gpus_to_fit(w: Workload, model, system: System, limit: int = 64) -> int | None:
    """Smallest GPU count (powers of two up to ``limit``) on which the workload fits."""
    task = w.task or "inference"
    for n in (2, 4, 8, 16, 32, 64):
        if n > limit or n <= system.total_gpus:
            continue
        nodes = max(1, math.ceil(n / 8))
        sys2 = replace(system, gpus_per_node=min(n, 8), nodes=nodes,
                       intra_link=system.intra_link if system.intra_link != "none" else "pcie")
        if task == "inference":
            heads = getattr(model, "num_attention_heads", 0) or 0
            tp = min(n, 8)
            if heads and heads % tp:
                continue
            par = {"tp": tp, "pp": n // tp}
        else:
            par = {"zero": 3}
        try:
            w2 = w.with_updates(parallel={**(w.parallel.model_dump() if w.parallel else {}), **par, "dp": None})
            lay = layout_from_workload(w2, n, sys2.gpus_per_node, _layers(model))
            e = estimate_resolved(w2, model, sys2, lay, with_suggestions=False)
        except GpuplanError:
            continue
        if e.fits:
            return n
    return None
