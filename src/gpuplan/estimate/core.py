"""`estimate()`: one workload on fixed hardware -> memory breakdown, time/throughput, assumptions.

Pure and fast (no torch, no I/O beyond the lazily loaded catalog): the recommender calls
:func:`estimate_resolved` thousands of times per request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import scale_performance, workload_class
from gpuplan.estimate.engine_defaults import encoder_defaults
from gpuplan.estimate.lengths import dataset_lengths
from gpuplan.estimate.memory import (
    MemoryEstimate,
    TrainingInputs,
    lora_param_count,
    training_memory,
    training_memory_key,
)
from gpuplan.estimate.params import calibration
from gpuplan.estimate.shapes import Shape, shape_of
from gpuplan.estimate.system import Layout, System, layout_from_workload, system_from_workload
from gpuplan.estimate.training.step import training_perf
from gpuplan.units import fmt_bytes
from gpuplan.workload import Workload
from gpuplan.workload_defaults import resolve_defaults
from gpuplan.workload_loading import load_workload
from gpuplan.i18n import _

SCHEMA_VERSION = 1
KV_DTYPE_BYTES = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0}


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


def _kv_bytes(w: Workload) -> float:
    kv = w.kv_cache_dtype or "auto"
    if kv == "auto":
        if w.quantization == "fp8" and w.framework == "trtllm":
            return 1.0  # ModelOpt FP8 checkpoints (what TensorRT-LLM serves) quantize the KV cache too
        if w.quantization == "fp8" or w.precision == "fp8":
            return 2.0
        return 2.0 if w.precision != "fp32" else 4.0
    return KV_DTYPE_BYTES[kv]


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
                              framework=framework, layout=layout, system=system)
        assumptions.extend(res.notes)
        est = Estimate(w, model, system, layout, res.memory, res.performance, assumptions, warnings)
        if not memory_only:
            _apply_calibration(est)
        if with_suggestions and not est.fits:
            est.suggestions = _suggest(w, model, system, layout, est)
        return est
    s = shape or shape_of(model)
    serving_model = None
    if task == "inference":
        mem, perf_d, notes, serving_model, perf_warnings = _inference(w, model, s, system, layout, memory_only)
    else:
        perf_warnings = []
        mem, perf_d, notes = _training(w, model, s, system, layout, memory_only, explain, memo)
    assumptions.extend(notes)
    assumptions.extend(mem.notes)
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


def _inference(w: Workload, model, s: Shape, system: System, layout: Layout, memory_only: bool = False):
    # the serving models are imported by the serving workloads only (a cold training `estimate` skips them)
    from gpuplan.estimate.serving.inference import ServingCase, inference_perf
    from gpuplan.estimate.memory import InferenceInputs, inference_memory

    framework = w.framework or "vllm"
    encoder = model.kind == "encoder"
    # an encoder job's batch per forward is the layout's: the workload's batch_size (layout_from_workload), or the one
    # the recommender's job search tries (plan/search/search_job.py)
    conc = max(1, layout.micro_batch) if encoder else (w.batch_size or 1)
    output_tokens = 0 if encoder else (w.output_tokens if w.output_tokens is not None else 1)
    inp = InferenceInputs(precision=w.precision or "bf16", quantization=w.quantization or "none",
                          kv_dtype_bytes=_kv_bytes(w), framework=framework, flash=bool(w.flash_attention),
                          prompt_tokens=w.prompt_tokens or 0, output_tokens=output_tokens, concurrency=conc,
                          framework_version=w.framework_version, encoder=encoder)
    mem = inference_memory(s, inp, layout, system)
    if memory_only:
        return mem, {}, [], None, []
    case = ServingCase(framework_version=w.framework_version,
                       precision=inp.precision, quantization=inp.quantization, kv_dtype_bytes=inp.kv_dtype_bytes,
                       framework=framework, prompt_tokens=inp.prompt_tokens, output_tokens=inp.output_tokens)
    sla = w.serving
    perf = inference_perf(s, case, layout, system, conc, mem,
                          ttft_sla_s=(sla.ttft_ms / 1000 if sla and sla.ttft_ms else None),
                          tpot_sla_s=(sla.tpot_ms / 1000 if sla and sla.tpot_ms else None),
                          encoder_only=encoder)
    notes = list(perf.notes)
    if output_tokens:
        notes.append(_("decode at batch {conc}, average context {prompt_tokens:.0f} tokens").format(conc=conc, prompt_tokens=inp.prompt_tokens + inp.output_tokens / 2))
    return mem, perf.to_dict(), notes, perf.model, list(perf.warnings)


def _adapted_linears(model, t) -> tuple[float, float]:
    """(adapted linear layers per decoder layer outside the routed experts, adapted linears per routed
    expert): each adds eager kernel launches; an expert's run only for the experts a micro-batch touches."""
    try:
        shapes = model.linear_shapes_per_layer(t.lora_targets)
    except Exception:  # noqa: BLE001 - an unknown target list falls back to all linear layers, as lora_param_count
        shapes = model.linear_shapes_per_layer("all-linear")
    experts = float(getattr(getattr(model, "moe", None), "num_experts", 0) or 0)
    dense = sum(count for name, _din, _dout, count in shapes if not (experts and name.startswith("experts.")))
    per_expert = sum(count / experts for name, _din, _dout, count in shapes if experts and name.startswith("experts."))
    return float(dense), float(per_expert)


def _training(w: Workload, model, s: Shape, system: System, layout: Layout, memory_only: bool = False,
              explain: bool = True, memo: dict | None = None):
    task = w.task or "full"
    ds = w.dataset
    tokens_per_sample = ds.tokens_per_sample if ds and ds.tokens_per_sample else None
    t = TrainingInputs(task=task, precision=w.precision or "bf16", quantization=w.quantization or "none",
                       optimizer=w.optimizer or "adamw", framework=w.framework or "auto",
                       flash=bool(w.flash_attention), seq_len=_longest_row(w),
                       lora_rank=w.lora.rank if w.lora else 8, lora_targets=w.lora.targets if w.lora else "all-linear",
                       lora_dropout=w.lora.dropout if w.lora else 0.05,
                       variable_length=(not w.packed) if w.packed is not None else task != "pretrain",
                       optimizer_in_backward=bool(w.optimizer_in_backward),
                       activation_offloading=bool(w.activation_offloading), compiled=bool(w.compile),
                       fused_loss=bool(w.fused_loss))
    with_notes = explain and not memory_only
    if memo is None:
        mem = training_memory(model, s, t, layout, system, with_notes=with_notes)
    else:
        key = (id(model), training_memory_key(s, t, layout, system, with_notes))
        known: MemoryEstimate | None = memo.get(key)
        if known is None:
            known = memo[key] = training_memory(model, s, t, layout, system, with_notes=with_notes)
        mem = known
    if memory_only:
        return mem, {}, []
    if task in ("lora", "qlora"):
        trainable, _targets = lora_param_count(model, t.lora_targets, t.lora_rank)
    else:
        trainable = s.params_total
    dataset_tokens = ds.total_tokens(t.seq_len) if ds else None
    adapted = _adapted_linears(model, t) if task in ("lora", "qlora") else (0.0, 0.0)
    # unpacked samples shorter than seq_len: each micro-batch runs its longest sample's length (estimate/lengths.py)
    lengths = dataset_lengths(ds, t.seq_len, layout.micro_batch, t.framework, packed=not t.variable_length)
    run_len = max(1, round(lengths.padded_tokens)) if lengths else t.seq_len
    if lengths and dataset_tokens and tokens_per_sample:
        dataset_tokens = dataset_tokens / tokens_per_sample * lengths.kept_share * run_len   # padded tokens run
    perf = training_perf(s, task=task, precision=t.precision, quantization=t.quantization, framework=t.framework,
                         seq_len=run_len, layout=layout, system=system, trainable_params=trainable,
                         dataset_tokens=dataset_tokens, tokens_per_sample=run_len if lengths else tokens_per_sample,
                         flash=t.flash, optimizer=t.optimizer, adapted_linears=adapted[0],
                         adapted_expert_linears=adapted[1])
    notes = list(perf.notes)
    perf_d = perf.to_dict()
    if lengths and tokens_per_sample:
        _unpad(perf_d, lengths, tokens_per_sample, run_len)
        args = {"mean": f"{tokens_per_sample:.0f}", "sd": f"{tokens_per_sample * lengths.cv:.0f}",
                "padded": f"{lengths.padded_tokens:.0f}", "seq_len": t.seq_len,
                "share": f"{1 - lengths.kept_share:.0%}"}
        notes.append((_("unpacked samples of {mean} tokens on average (sd {sd}; log-normal, assumed): each micro-batch "
                        "is padded to its longest, {padded} tokens per row of {seq_len}; samples longer than {seq_len} "
                        "are dropped ({share} of them)") if lengths.policy == "delete" else
                      _("unpacked samples of {mean} tokens on average (sd {sd}; log-normal, assumed): each micro-batch "
                        "is padded to its longest, {padded} tokens per row of {seq_len}")).format(**args))
    notes.append(_("achievable hardware FLOPs utilisation {efficiency:.0%} of {peak_tflops:.0f} TFLOP/s dense ({gpu}, data/efficiency.yaml)").format(efficiency=perf.efficiency, peak_tflops=perf.peak_tflops, gpu=system.gpu.id))
    return mem, perf_d, notes


def _longest_row(w: Workload) -> int:
    """The longest row a training step runs: seq_len, or the dataset's longest sample when it is shorter (an
    unpacked batch is padded to its longest sample, never to max_length)."""
    seq = int(w.seq_len or 2048)
    ds = w.dataset
    if ds and ds.max_tokens_per_sample and not w.packed and ds.max_tokens_per_sample < seq:
        return max(1, int(ds.max_tokens_per_sample))
    return seq


def _unpad(perf: dict, lengths, tokens_per_sample: float, run_len: int) -> None:
    """Throughputs in the dataset's tokens, not the padded rows the GPUs ran: tokens/s is the rate the dataset's
    tokens (as tokens_per_sample counts them, dropped samples included) go by, so dataset tokens / tokens_per_s is
    the job's time; MFU counts the tokens trained."""
    if not perf.get("tokens_per_s"):
        return
    rate = perf["samples_per_s"] * tokens_per_sample / max(lengths.kept_share, 1e-9)
    ratio = rate / perf["tokens_per_s"]
    for key in ("tokens_per_s", "tokens_per_s_per_gpu"):
        if perf.get(key):
            perf[key] *= ratio
    if perf.get("mfu"):
        perf["mfu"] *= lengths.mean_tokens / run_len


def _serving_llm(model) -> bool:
    return _is_llm(model) and getattr(model, "kind", "decoder") in ("decoder", "encoder-decoder") and \
        getattr(model, "profile", None) is None


def estimate(workload: Workload | dict | str, **overrides: Any) -> Estimate:
    """Estimate one workload on its fixed hardware (``hardware:`` block or --gpu/--gpus)."""
    from gpuplan.catalog.models import resolve_model, workload_region

    w = load_workload(workload, **overrides) if overrides or not isinstance(workload, Workload) else workload
    resolved, notes = resolve_defaults(w)
    model = resolve_model(resolved.model, region=workload_region(resolved))
    resolved, notes = encoder_defaults(w, resolved, model, notes)
    system, sys_notes = system_from_workload(resolved)
    layout = layout_from_workload(resolved, system.total_gpus, system.gpus_per_node, _layers(model))
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


# ---------------------------------------------------------------------------------------------
# The reverse question: the largest value that fits
# ---------------------------------------------------------------------------------------------

MAX_FIELDS = {"batch_size": "batch_size", "seq_len": "seq_len", "prompt_tokens": "prompt_tokens",
              "concurrency": "batch_size"}


def fits_cleanly(est: Estimate) -> bool:
    """The verdict `estimate` prints as "fits": everything the job would hold, the allocator's full reserve
    included (``need_bytes``), is on the card. A job whose reserve exceeds the card still runs (``memory.fits``)
    only by freeing the allocator's cache, slower and with no headroom: `estimate` says so, and `--max` does
    not count it as fitting."""
    return est.memory.required_bytes <= est.memory.capacity_bytes


def max_fit(workload: Workload | dict | str, field_name: str, *, clean: bool = True,
            **overrides: Any) -> tuple[int, Estimate | None]:
    """Largest value of ``field_name`` (batch_size | seq_len | prompt_tokens | concurrency) that fits: by the
    verdict `estimate` prints as "fits" (:func:`fits_cleanly`), or with ``clean=False`` the largest that runs
    at all (``memory.fits``, the allocator's cache freed when needed)."""
    from gpuplan.catalog.models import resolve_model, workload_region

    if field_name not in MAX_FIELDS:
        raise GpuplanError(_("Cannot maximise {field_name!r}.").format(field_name=field_name), hint=_("Choose one of {MAX_FIELDS}.").format(MAX_FIELDS=', '.join(MAX_FIELDS)))
    key = MAX_FIELDS[field_name]
    w = load_workload(workload, **overrides) if overrides or not isinstance(workload, Workload) else workload
    resolved, notes = resolve_defaults(w)
    model = resolve_model(resolved.model, region=workload_region(resolved))
    system, _layout = system_from_workload(resolved)
    layout = layout_from_workload(resolved, system.total_gpus, system.gpus_per_node, _layers(model))
    if field_name == "concurrency" or (field_name == "batch_size" and resolved.task == "inference" and
                                       resolved.framework in ("vllm", "sglang", "trtllm")):
        est = estimate_resolved(resolved, model, system, layout, with_suggestions=False)
        from gpuplan.estimate.serving.inference import max_concurrency

        return max_concurrency(est.memory), est

    def fits(v: int) -> Estimate | None:
        try:
            w2 = resolved.with_updates(**{key: v})
            lay = layout_from_workload(w2, system.total_gpus, system.gpus_per_node, _layers(model))
            e = estimate_resolved(w2, model, system, lay, with_suggestions=False)
        except GpuplanError:
            return None
        return e if (fits_cleanly(e) if clean else e.fits) else None

    lo, hi = 0, 1
    best = None
    while hi <= 10_000_000:
        e = fits(hi)
        if not e:
            break
        lo, best = hi, e
        hi *= 2
    hi = min(hi, 10_000_001)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        e = fits(mid)
        if e:
            lo, best = mid, e
        else:
            hi = mid
    return lo, best

