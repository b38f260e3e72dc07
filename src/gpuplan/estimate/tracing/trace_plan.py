"""Exact mode, step 2: what to trace for a resolved workload (dtype, autocast, optimizer, checkpointing,
attention) and whether the trace fits the time limit (no torch)."""

from __future__ import annotations

import math
import os
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.workload import Workload

# Size guard: tracing cost grows with the number of traced ops (layers), not tensor sizes.
# Measured on 2 CPU cores (torch 2.13, transformers 5.24): importing torch + transformers ~3.5 s;
# two training steps ~0.2 s per decoder layer (Llama-2-7B shape: 32 layers, 8.4 s in all; LoRA
# about twice that); one prefill forward ~0.02 s per layer.
IMPORT_S = 3.5
SECONDS_PER_LAYER = 0.25
MAX_TRACE_S_DEFAULT = 120.0
MAX_TRACE_ENV = "GPUPLAN_TRACE_MAX_S"


_TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def trace_plan(w: Workload, spec: Any) -> dict[str, Any]:
    """Decide dtype, autocast, optimizer, checkpointing and attention for one resolved workload."""
    from gpuplan.estimate.memory import precision_mode

    notes: list[str] = []
    warns: list[str] = []
    task = w.task or "inference"
    precision = w.precision or "bf16"
    if precision == "fp8":
        warns.append(_("fp8 compute cannot be traced on CPU: traced in bf16 (fp8 GEMMs keep bf16 activations)"))
        precision = "bf16"
    quant = w.quantization or "none"
    if task == "qlora" or quant != "none":
        raise GpuplanError(
            _("Exact mode traces unquantized models; this workload uses {quant}.").format(quant='QLoRA' if task == 'qlora' else quant),
            hint=_("Drop --trace for quantized estimates, or set quantization: none (task lora instead of qlora)."))
    framework = w.framework or "auto"
    optimizer = w.optimizer or "adamw"
    plan: dict[str, Any] = {"task": task, "precision": precision, "framework": framework, "notes": notes,
                            "warnings": warns, "attn": "sdpa" if w.flash_attention is not False else "eager"}
    if plan["attn"] == "sdpa":
        notes.append(_("attention traced with SDPA (the CPU flash kernel: like FlashAttention it keeps only the output and log-sum-exp for backward)"))
    else:
        notes.append(_("attention traced eager (scores and fp32 softmax materialised), as flash_attention: false"))
    if task == "inference":
        plan.update(mode="pure", dtype=_TORCH_DTYPE[precision], autocast=None, batch=w.batch_size or 1,
                    tokens=w.prompt_tokens or 1)
        notes.append(_("inference: one prefill forward of {plan} x {plan2} prompt tokens, no autograd, KV cache built (use_cache), logits of the last token only (as generate's prefill)").format(plan=plan['batch'], plan2=plan['tokens']))
        return plan
    if task == "lora":
        mode = "fp32" if precision == "fp32" else "pure"
        plan["dtype"] = _TORCH_DTYPE[precision]
        notes.append(_("LoRA: frozen base in {precision}, adapters in fp32 (peft autocast_adapter_dtype)").format(precision=precision))
    else:
        mode = precision_mode(precision, framework, optimizer)
        if mode == "mixed":
            plan["dtype"] = "float32"
            notes.append(_("mixed precision: fp32 master weights, grads and optimizer states, {precision} autocast (framework {framework})").format(precision=precision, framework=framework))
        else:
            plan["dtype"] = _TORCH_DTYPE[precision]
            if mode == "pure":
                notes.append(_("pure {precision}: weights, gradients and optimizer states in {precision} (framework {framework})").format(precision=precision, framework=framework))
    plan["mode"] = mode
    plan["autocast"] = _TORCH_DTYPE[precision] if mode == "mixed" else None
    if task == "lora" and precision != "fp32":
        # Hugging Face Trainer / accelerate run with autocast when bf16/fp16 is on; it matters for LoRA
        # only: peft casts each adapted input to the fp32 adapter dtype, autocast brings it back to 16 bits.
        plan["autocast"] = _TORCH_DTYPE[precision]
        notes.append(_("LoRA traced under {precision} autocast (Hugging Face Trainer/accelerate mixed precision)").format(precision=precision))
    opt_kind = {"adamw": "fused", "adamw-fused": "fused", "adamw-foreach": "foreach", "adamw-bf16": "foreach",
                "sgd": "sgd", "sgd-plain": "sgd-plain", "adafactor": "adafactor", "paged-adamw": "paged",
                "paged-adamw-8bit": "paged"}.get(optimizer)
    if opt_kind == "paged":
        # bitsandbytes paged optimizers keep their states in CUDA unified memory, outside PyTorch's caching
        # allocator (the analytic path leaves them out of peak_reserved too): the step is traced as a
        # stateless in-place update, so the traced peak is what the allocator sees.
        warns.append(_("optimizer {optimizer}: its states live in CUDA unified memory outside the allocator "
                       "(bitsandbytes paged optimizers); traced as a stateless in-place step, states not counted")
                     .format(optimizer=optimizer))
    if opt_kind is None:
        raise GpuplanError(_("Exact mode cannot trace optimizer {optimizer!r} (bitsandbytes kernels need CUDA).").format(optimizer=optimizer),
                           hint=_("Use optimizer adamw, adamw-fused, adamw-foreach, sgd or adafactor, or drop --trace."))
    plan["optimizer"] = opt_kind
    notes.append({"fused": _("optimizer {optimizer}: torch AdamW fused=True (no parameter-sized temporaries)"),
                  "foreach": _("optimizer {optimizer}: torch AdamW foreach=True (one parameter-sized temporary)"),
                  "sgd": _("optimizer sgd: torch SGD with momentum 0.9 (one state per parameter)"),
                  "sgd-plain": _("optimizer sgd-plain: torch SGD without momentum (no state)"),
                  "adafactor": _("optimizer adafactor: torch.optim.Adafactor (factored second moments)"),
                  "paged": _("optimizer {optimizer}: states outside the allocator (unified memory); in-place step "
                             "traced with no state"),
                  }[opt_kind].format(optimizer=optimizer))
    ckpt = w.grad_checkpointing
    if ckpt == "selective":
        warns.append(_("selective recomputation is not a transformers option: traced without checkpointing (an upper bound on activations)"))
        ckpt = False
    elif ckpt == "per-op":
        warns.append(_("per-op selective recomputation (torchtitan) is not a transformers option: traced with "
                       "per-layer checkpointing (a lower bound on activations)"))
    plan["checkpointing"] = bool(ckpt)
    if ckpt:
        notes.append(_("gradient checkpointing: transformers' per-decoder-layer checkpointing (use_reentrant=False); FLOPs include the recomputed forward"))
    plan["batch"] = w.batch_size or 1
    plan["tokens"] = w.seq_len or 2048
    ga = w.gradient_accumulation or 1
    plan["grad_accum"] = ga
    plan["micro_steps"] = 2 if ga > 1 else 1
    if ga > 1:
        notes.append(_("gradient accumulation {ga}: two micro-batches traced per step (gradients stay resident through the second); FLOPs per step = micro-batch FLOPs x accumulation steps").format(ga=ga))
    par = w.parallel
    if par and (par.tp > 1 or par.pp > 1 or par.zero or par.fsdp != "none" or par.offload != "none"
                or (par.dp or 1) > 1 or par.ep > 1):
        warns.append(_("parallelism (tp/pp/dp/zero/fsdp/offload) is not traced: figures are for one unsharded replica on one device; the analytic comparison uses the same single-GPU layout"))
    return plan


def estimated_trace_s(spec: Any, task: str) -> float:
    """Rough wall time of a trace on 2 CPU cores (fixed cost + per layer; inference is ~4x cheaper)."""
    layers = max(1, int(spec.num_layers))
    per = SECONDS_PER_LAYER * {"inference": 0.1, "lora": 2.0}.get(task, 1.0)
    return IMPORT_S + per * layers


def size_guard(spec: Any, task: str) -> float:
    est = estimated_trace_s(spec, task)
    limit = MAX_TRACE_S_DEFAULT
    raw = os.environ.get(MAX_TRACE_ENV)
    if raw:
        try:
            limit = float(raw)
        except ValueError:
            raise GpuplanError(_("{MAX_TRACE_ENV}={raw!r} is not a number of seconds.").format(MAX_TRACE_ENV=MAX_TRACE_ENV, raw=raw),
                               hint=_("E.g. {MAX_TRACE_ENV}=1200.").format(MAX_TRACE_ENV=MAX_TRACE_ENV)) from None
    if est > limit:
        raise GpuplanError(
            _("Tracing {model} ({num_layers} layers) would take about {est:.0f} s on this machine's CPU.").format(model=spec.id, num_layers=spec.num_layers, est=est),
            hint=_("Drop --trace for the analytic estimate, or raise the limit with {MAX_TRACE_ENV}={ceil}.").format(MAX_TRACE_ENV=MAX_TRACE_ENV, ceil=math.ceil(est * 2)))
    return est
