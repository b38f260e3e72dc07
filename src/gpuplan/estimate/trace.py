"""Exact mode (`gpuplan estimate --trace`, extra ``gpuplan[trace]``).

Builds the model from its config on torch's fake tensors (no weights are allocated, no GPU is
needed), then

* counts the parameters exactly (``sum(p.numel())``; tied weights once);
* counts the FLOPs of one micro-batch with ``torch.utils.flop_counter.FlopCounterMode``;
* measures the peak allocated memory of two training steps (step 2 = steady state, Adam states
  exist) with ``torch.distributed._tools.mem_tracker.MemTracker`` under ``FakeTensorMode``;
  for inference, of one prefill forward without autograd.

Recipes and traps (../shared/facts/ecosystem-notes.md, Q2):

* ``FakeTensorMode`` must stay on CPU with the CPU build of torch; SDPA then dispatches to
  ``aten._scaled_dot_product_flash_attention_for_cpu`` (and its backward), which torch's FLOP
  registry lacks: :func:`_flop_mapping` maps them onto torch's own SDPA formulas. Conventions (torch's):
  attention counted non-causal, forward 4·B·S²·a·d_h per layer, backward 2.5x the forward (the flash
  backward recomputes the scores).
* transformers 5 MoE experts are 3-D parameters run through ``aten._grouped_mm``, which the
  registry also lacks: :func:`_grouped_mm_flops` counts 2·M·K·N per grouped GEMM.
* ``MemTracker`` needs ``reset_mod_stats()`` between iterations; FLOPs are counted in a separate
  pass (FlopCounterMode inside the measured steps keeps checkpoint-recomputed tensors alive);
  :func:`_tracker_class` keeps only the global peak (7x faster, same figure) and tolerates frozen
  parameters (LoRA).
* fused vs foreach AdamW differ by one parameter-sized temporary: the optimizer follows the
  workload (``adamw`` = fused, as Hugging Face Trainer >= 4.46 and DeepSpeed use).

Nothing here imports torch at module level: ``gpuplan.estimate.core`` (the analytic path) never
imports this module, and this module imports torch/transformers only inside functions.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
import time
import warnings
from typing import Any, cast

from gpuplan.errors import GpuplanError
from gpuplan.workload import Workload
from gpuplan.workload_defaults import resolve_defaults
from gpuplan.i18n import _

SCHEMA_VERSION = 1
INSTALL_HINT = "pip install 'gpuplan[trace]' (install torch==2.13.0 first on this machine to get the CPU build)"

# Architectures (ModelSpec.arch) that can be rebuilt from their shape, and the transformers
# model_type used for each. Others raise a GpuplanError with a hint.
_ARCH_TO_MODEL_TYPE = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "mixtral": "mixtral",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "deepseekv3": "deepseek_v3",
    "deepseekv2": "deepseek_v3",
}
SUPPORTED_TEXT = ("Llama-style decoders (llama, mistral, yi, internlm2...), qwen2, qwen3, mixtral, "
                  "qwen2-MoE, qwen3-MoE and DeepSeek-V2/V3 (MLA)")

# Size guard: tracing cost grows with the number of traced ops (layers), not tensor sizes.
# Measured on 2 CPU cores (torch 2.13, transformers 5.24): importing torch + transformers ~3.5 s;
# two training steps ~0.2 s per decoder layer (Llama-2-7B shape: 32 layers, 8.4 s in all; LoRA
# about twice that); one prefill forward ~0.02 s per layer.
IMPORT_S = 3.5
SECONDS_PER_LAYER = 0.25
MAX_TRACE_S_DEFAULT = 120.0
MAX_TRACE_ENV = "GPUPLAN_TRACE_MAX_S"


# ---------------------------------------------------------------------------------------------
# Config: ModelSpec -> Hugging Face config dict (pure, no torch)
# ---------------------------------------------------------------------------------------------

def hf_config_from_spec(spec: Any, *, min_positions: int = 0) -> tuple[dict[str, Any], list[str]]:
    """A Hugging Face config.json mapping that rebuilds ``spec``'s shape, and the assumptions made.

    Fields map back to the config keys ModelSpec was read from (catalog/models.py
    ``from_hf_config``): num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
    num_key_value_heads, head_dim, vocab_size, tie_word_embeddings, attention_bias, mlp_bias and the
    MoE/MLA keys of each model_type.
    """
    notes: list[str] = []
    if not getattr(spec, "is_llm", False):
        raise GpuplanError(
            _("Exact mode cannot trace {model!r}: it is a {kind} profile without a transformer shape.").format(model=spec.id, kind=spec.kind),
            hint=_("Drop --trace: the analytic estimate uses the model's FLOPs/activation profile."))
    if spec.kind != "decoder":
        raise GpuplanError(
            _("Exact mode traces decoder-only language models; {model!r} is an {kind} model.").format(model=spec.id, kind=spec.kind),
            hint=_("Drop --trace for the analytic estimate. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
    model_type = _ARCH_TO_MODEL_TYPE.get(spec.arch)
    if model_type is None or spec.mlp != "gated" or spec.norm != "rmsnorm" or spec.position != "rope":
        raise GpuplanError(
            _("Exact mode cannot rebuild {model!r} (architecture {arch}, {mlp} MLP, {norm}, {position} positions).").format(model=spec.id, arch=spec.arch, mlp=spec.mlp, norm=spec.norm, position=spec.position),
            hint=_("Drop --trace for the analytic estimate. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
    if spec.attention_sinks or spec.norms_per_layer != 2 or spec.embedding_norm or spec.has_norm_bias:
        raise GpuplanError(_("Exact mode cannot rebuild {model!r}: its layer layout is not Llama-style.").format(model=spec.id),
                           hint=_("Drop --trace for the analytic estimate. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
    if spec.family not in ("llama", "qwen2", "qwen3", "mixtral", "deepseek", "synthetic", ""):
        notes.append(_("traced as a transformers {model_type!r} model with {model}'s shapes (family {family}: same matrices, norms and embeddings)").format(model_type=model_type, model=spec.id, family=spec.family))
    max_pos = max(int(spec.max_position_embeddings or 0), int(min_positions), 2048)
    cfg: dict[str, Any] = {
        "model_type": model_type,
        "num_hidden_layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads,
        "vocab_size": spec.vocab_size,
        "tie_word_embeddings": bool(spec.tie_word_embeddings),
        "max_position_embeddings": max_pos,
        "hidden_act": "silu",
        "use_cache": False,
    }
    if spec.sliding_window:
        notes.append(_("sliding window {sliding_window} not applied: traced with full causal attention (same FLOP count under torch's non-causal convention, same activation memory with SDPA)").format(sliding_window=spec.sliding_window))
    moe = spec.moe
    if model_type in ("llama", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"):
        cfg["head_dim"] = spec.head_dim
    if model_type == "llama":
        if moe is not None:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: generic Llama-style MoE layouts are not a transformers model.").format(model=spec.id), hint=_("Drop --trace. Traceable: {SUPPORTED_TEXT}.").format(SUPPORTED_TEXT=SUPPORTED_TEXT))
        if spec.qkv_bias and not spec.o_bias:
            cfg["model_type"] = "qwen2"  # q/k/v biases without an o_proj bias: Qwen2's attention
            cfg["use_sliding_window"] = False
        elif spec.o_bias and not spec.qkv_bias:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: an o_proj bias without q/k/v biases.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
        else:
            cfg["attention_bias"] = bool(spec.qkv_bias)
        cfg["mlp_bias"] = bool(spec.mlp_bias)
    elif model_type == "qwen2":
        if not spec.qkv_bias:
            cfg["model_type"] = "llama"
            cfg["attention_bias"] = False
        cfg["use_sliding_window"] = False
        if spec.o_bias or spec.mlp_bias:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: Qwen2 has no o_proj/MLP biases.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
    elif model_type == "qwen3":
        cfg["attention_bias"] = bool(spec.qkv_bias)
        cfg["use_sliding_window"] = False
    elif model_type == "mixtral":
        assert moe is not None
        if moe.shared_experts or moe.first_k_dense or moe.moe_layer_freq != 1:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: Mixtral has no shared experts or dense layers.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
        cfg["intermediate_size"] = moe.moe_intermediate_size
        cfg.update(num_local_experts=moe.num_experts, num_experts_per_tok=moe.experts_per_token)
    elif model_type in ("qwen2_moe", "qwen3_moe"):
        assert moe is not None
        if moe.first_k_dense:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: leading dense layers are not a {model_type} option.").format(model=spec.id, model_type=model_type), hint=_("Drop --trace for the analytic estimate."))
        cfg.update(num_experts=moe.num_experts, num_experts_per_tok=moe.experts_per_token,
                   moe_intermediate_size=moe.moe_intermediate_size, decoder_sparse_step=moe.moe_layer_freq,
                   mlp_only_layers=[], use_sliding_window=False)
        if moe.moe_layer_freq != 1:
            notes.append(_("transformers places a MoE block on layers with (i+1) % decoder_sparse_step == 0; gpuplan's shape counts i % freq == 0 (same count when num_layers is a multiple)"))
        if model_type == "qwen2_moe":
            width = moe.shared_expert_intermediate_size * max(1, moe.shared_experts) if moe.shared_experts else 0
            cfg["shared_expert_intermediate_size"] = width
            if not width:
                notes.append(_("Qwen2-MoE without a shared expert: transformers still builds a zero-width one"))
            cfg["qkv_bias"] = bool(spec.qkv_bias)
        else:
            cfg["attention_bias"] = bool(spec.qkv_bias)
    elif model_type == "deepseek_v3":
        mla = spec.mla
        if mla is None or moe is None:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: DeepSeek-V2/V3 need both MLA and MoE keys.").format(model=spec.id),
                               hint=_("Drop --trace for the analytic estimate."))
        if moe.moe_layer_freq != 1:
            raise GpuplanError(_("Exact mode cannot rebuild {model!r}: moe_layer_freq {moe_layer_freq} is not a deepseek_v3 option.").format(model=spec.id, moe_layer_freq=moe.moe_layer_freq), hint=_("Drop --trace for the analytic estimate."))
        cfg.pop("num_key_value_heads")
        cfg.update(num_key_value_heads=spec.num_attention_heads, kv_lora_rank=mla.kv_lora_rank,
                   q_lora_rank=mla.q_lora_rank or None, qk_rope_head_dim=mla.qk_rope_head_dim,
                   qk_nope_head_dim=mla.qk_nope_head_dim, v_head_dim=mla.v_head_dim,
                   n_routed_experts=moe.num_experts, num_experts_per_tok=moe.experts_per_token,
                   moe_intermediate_size=moe.moe_intermediate_size, n_shared_experts=moe.shared_experts,
                   first_k_dense_replace=moe.first_k_dense, n_group=1, topk_group=1,
                   attention_bias=bool(spec.qkv_bias), rope_scaling=None)
        notes.append(_("DeepSeek router traced with one expert group (n_group 1): routing groups change neither FLOPs nor memory; its score-correction bias is a buffer in transformers, not a parameter"))
        if spec.arch == "deepseekv2":
            notes.append(_("DeepSeek-V2 traced with the deepseek_v3 module layout (same matrices)"))
    return cfg, notes


# ---------------------------------------------------------------------------------------------
# torch helpers (imported lazily)
# ---------------------------------------------------------------------------------------------

def _import_torch():
    """(torch, transformers) or a GpuplanError with the install hint."""
    try:
        import torch
        import transformers
    except ImportError:
        raise GpuplanError(_("Exact mode needs torch and transformers."), hint=INSTALL_HINT) from None
    return torch, transformers


def _grouped_mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``aten._grouped_mm`` (MoE experts in transformers 5): 2·M·K·N summed over groups.

    Forward and input-gradient calls are (M, K) x (E, K, N) -> 2·M·K·N; the weight-gradient call is
    (K, M) x (M, N) with M split into E groups -> 2·K·M·N as well; batched 3-D x 3-D -> 2·E·M·K·N.
    """
    if len(a_shape) == 2 and len(b_shape) == 3:
        return 2 * a_shape[0] * a_shape[1] * b_shape[2]
    if len(a_shape) == 2 and len(b_shape) == 2:
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    return 2 * math.prod(a_shape) * b_shape[-1]


def _flop_mapping(torch) -> dict:
    """Custom FlopCounterMode formulas for the ops torch's registry lacks on CPU (see module doc)."""
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count

    aten = torch.ops.aten
    out = {
        aten._scaled_dot_product_flash_attention_for_cpu:
            lambda q, k, v, *a, out_shape=None, **kw: sdpa_flop_count(q, k, v),
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            lambda g, q, k, v, *a, out_shape=None, **kw: sdpa_backward_flop_count(g, q, k, v),
    }
    if hasattr(aten, "_grouped_mm"):
        out[aten._grouped_mm] = _grouped_mm_flops
    return out


@contextlib.contextmanager
def _quiet():
    """Silence transformers' logging and Python warnings while tracing (nothing heavy printed)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)


def _category_bytes(snapshot: dict) -> tuple[int, dict[str, int]]:
    """(total, {category: bytes}) from one device's MemTracker snapshot."""
    breakdown: dict[str, int] = {}
    for key, value in snapshot.items():
        name = getattr(key, "name", str(key)).lower()
        if name == "total":
            continue
        breakdown[name] = int(value)
    return int(snapshot.get("Total", sum(breakdown.values()))), breakdown


def _first_device(snap: dict) -> dict:
    return next(iter(snap.values())) if snap else {}


# ---------------------------------------------------------------------------------------------
# Plan: what to trace for a resolved workload
# ---------------------------------------------------------------------------------------------

_TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _plan(w: Workload, spec: Any) -> dict[str, Any]:
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
                "sgd": "sgd", "adafactor": "adafactor", "paged-adamw": "paged", "paged-adamw-8bit": "paged"}.get(optimizer)
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
                  "adafactor": _("optimizer adafactor: torch.optim.Adafactor (factored second moments)"),
                  "paged": _("optimizer {optimizer}: states outside the allocator (unified memory); in-place step "
                             "traced with no state"),
                  }[opt_kind].format(optimizer=optimizer))
    ckpt = w.grad_checkpointing
    if ckpt == "selective":
        warns.append(_("selective recomputation is not a transformers option: traced without checkpointing (an upper bound on activations)"))
        ckpt = False
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


def _size_guard(spec: Any, task: str) -> float:
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


# ---------------------------------------------------------------------------------------------
# Tracing
# ---------------------------------------------------------------------------------------------

def _build_model(torch, transformers, hf_cfg: dict, plan: dict):
    """The model on fake tensors (call inside FakeTensorMode)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = dict(hf_cfg)
    model_type = kw.pop("model_type")
    config = AutoConfig.for_model(model_type, **kw)
    config._attn_implementation = plan["attn"]
    if hf_cfg.get("num_local_experts") or hf_cfg.get("num_experts") or hf_cfg.get("n_routed_experts"):
        # grouped GEMM experts (the eager path loops over experts with data-dependent shapes)
        config._experts_implementation = "grouped_mm"
    dtype = getattr(torch, plan["dtype"])
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model


def _apply_lora(model, w: Workload):
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise GpuplanError(_("Exact mode traces LoRA with peft, which is not installed."),
                           hint=_("pip install peft (or drop --trace for the analytic LoRA estimate)")) from None
    lora = w.lora
    targets: Any = lora.targets if lora else "all-linear"
    if isinstance(targets, str):
        key = targets.strip().lower()
        targets = {"all-linear": "all-linear", "all": "all-linear", "all_linear": "all-linear",
                   "attn": ["q_proj", "k_proj", "v_proj", "o_proj"], "qv": ["q_proj", "v_proj"]}.get(
            key, [t.strip() for t in targets.split(",") if t.strip()])
    # peft annotates lora_alpha as int but only divides it by r: a fractional alpha is valid (a cast,
    # not an ignore, so the check also passes where peft is not installed).
    cfg = LoraConfig(r=lora.rank if lora else 8, lora_alpha=cast(int, lora.alpha) if lora else 16,
                     lora_dropout=lora.dropout if lora else 0.05, target_modules=targets, task_type="CAUSAL_LM")
    try:
        return get_peft_model(model, cfg)
    except ValueError as exc:
        raise GpuplanError(_("peft cannot apply LoRA targets {targets!r}: {splitlines}").format(targets=targets, splitlines=str(exc).splitlines()[0]),
                           hint=_("Use lora.targets all-linear, attn, qv or q_proj/k_proj/... names.")) from None


def _tracker_class(fast: bool = True):
    """torch's MemTracker, adapted for gpuplan (private torch API, hence the fallbacks).

    * Gradient hooks only on parameters that require gradients: the stock tracker hooks every
      parameter of each module it enters, which raises for frozen ones (LoRA's base model).
    * ``fast``: keep only the global peak. The stock tracker also updates a per-module peak on every
      dispatched op, looping over all modules (O(ops x modules): most of a 7B trace's time, and 5x
      slower with peft's extra modules). The global peak it computes is unchanged.
    """
    from torch.distributed._tools import mem_tracker as mtm

    total_key = getattr(mtm, "_TOTAL_KEY", "Total")

    class _Tracker(mtm.MemTracker):
        def _track_module_params_and_buffers(self, module, install_grad_hooks=True):
            out = super()._track_module_params_and_buffers(module, install_grad_hooks=False)

            def on_grad(grad) -> None:  # a tensor hook must return None (or a tensor)
                self._update_and_maybe_create_winfos(grad, mtm._MemRefType.GRAD)

            if install_grad_hooks:
                for p in module.parameters():
                    if p.requires_grad and self._param_to_grad_hook_handles.get(p) is None:
                        h1 = p.register_hook(on_grad)
                        h2 = p.register_post_accumulate_grad_hook(lambda q: on_grad(q.grad))
                        self._param_to_grad_hook_handles[p] = (h1, h2)
            return out

        def _update_peak_stats(self, peak_state) -> None:
            snap = getattr(self, "_curr_mem_snap", None)
            peak = getattr(self, "_peak_mem", None)
            peak_snap = getattr(self, "_peak_mem_snap", None)
            if not fast or snap is None or peak is None or peak_snap is None:
                return super()._update_peak_stats(peak_state)
            for dev, dev_snap in snap.items():
                total = dev_snap[total_key]
                if peak.get(dev, 0) < total:
                    peak[dev] = total
                    peak_snap[dev] = dict(dev_snap)  # values are ints: a shallow copy is a snapshot
            return None

    return _Tracker


def _retie(model, hf_cfg: dict) -> None:
    """Tie the LM head to the embedding again (Module.to_empty gives each module its own tensor)."""
    if not hf_cfg.get("tie_word_embeddings"):
        return
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    out, inp = base.get_output_embeddings(), base.get_input_embeddings()
    if out is not None and inp is not None:
        out.weight = inp.weight


def _make_optimizer(torch, params, kind: str):
    if kind == "fused":
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    if kind == "foreach":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=True)
    if kind == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2)
    if kind == "paged":  # paged states are outside the allocator: a stateless in-place step
        return torch.optim.SGD(params, lr=1e-4, momentum=0.0, foreach=False)
    raise AssertionError(kind)


def _trace_training(torch, transformers, hf_cfg: dict, plan: dict, w: Workload) -> dict:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    mapping = _flop_mapping(torch)
    batch, seq = plan["batch"], plan["tokens"]
    lora = plan["task"] == "lora"
    if lora:
        # peft casts its adapters with Module.to(), which cannot swap fake parameters (they carry
        # weakrefs): build and adapt on the meta device, then materialise as fake CPU tensors.
        with torch.device("meta"):
            model = _build_model(torch, transformers, hf_cfg, plan)
        params_exact = sum(p.numel() for p in model.parameters())
        model = _apply_lora(model, w)
    with FakeTensorMode(allow_non_fake_inputs=True):
        if lora:
            model.to_empty(device="cpu")
            _retie(model, hf_cfg)
        else:
            model = _build_model(torch, transformers, hf_cfg, plan)
            params_exact = sum(p.numel() for p in model.parameters())
        if plan["checkpointing"]:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        trainable = [p for p in model.parameters() if p.requires_grad]
        params_trainable = sum(p.numel() for p in trainable)
        opt = _make_optimizer(torch, trainable, plan["optimizer"])
        ids = torch.randint(0, int(hf_cfg["vocab_size"]), (batch, seq))
        autocast_dtype = getattr(torch, plan["autocast"]) if plan["autocast"] else None
        mt = _tracker_class(plan.get("fast_tracker", True))()
        mt.track_external(model, opt)
        end_fwd: dict = {}

        def forward():
            with torch.autocast("cpu", dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype is not None):
                return model(input_ids=ids, labels=ids).loss

        with mt:
            for step in range(2):  # step 0 creates the optimizer states; step 1 is the steady state
                for micro in range(plan["micro_steps"]):
                    loss = forward()
                    if step == 1 and micro == 0:
                        end_fwd = dict(_first_device(mt.get_tracker_snapshot("current")))
                    loss.backward()
                    del loss
                opt.step()
                opt.zero_grad(set_to_none=True)
                mt.reset_mod_stats()
        peak_total, peak_breakdown = _category_bytes(_first_device(mt.get_tracker_snapshot("peak")))
        # FLOPs in a separate pass: FlopCounterMode's module hooks keep checkpoint-recomputed tensors
        # alive (Llama-2-7B at seq 2048 with checkpointing: 56.7 instead of 50.2 GiB if counted inside).
        fc = FlopCounterMode(display=False, custom_mapping=mapping)
        with fc:
            loss = forward()
            loss.backward()
        flops = fc.get_total_flops()
        del loss
        opt.zero_grad(set_to_none=True)
    fwd_total, fwd_breakdown = _category_bytes(end_fwd) if end_fwd else (0, {})
    tokens = batch * seq
    return {
        "params_exact": int(params_exact), "params_trainable": int(params_trainable),
        "flops_per_micro_batch": float(flops), "tokens_per_micro_batch": tokens,
        "peak": peak_total, "breakdown": peak_breakdown,
        "end_of_forward": {"allocated_bytes": fwd_total, "breakdown": fwd_breakdown},
    }


def _trace_inference(torch, transformers, hf_cfg: dict, plan: dict) -> dict:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    mapping = _flop_mapping(torch)
    batch, prompt = plan["batch"], plan["tokens"]
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = _build_model(torch, transformers, hf_cfg, plan)
        model.eval()
        params_exact = sum(p.numel() for p in model.parameters())
        ids = torch.randint(0, int(hf_cfg["vocab_size"]), (batch, prompt))
        mt = _tracker_class(plan.get("fast_tracker", True))()
        mt.track_external(model)
        with mt, torch.no_grad():
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
            del out
        fc = FlopCounterMode(display=False, custom_mapping=mapping)  # separate pass, as in training
        with fc, torch.no_grad():
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
            del out
        flops = fc.get_total_flops()
        peak_total, peak_breakdown = _category_bytes(_first_device(mt.get_tracker_snapshot("peak")))
    return {"params_exact": int(params_exact), "params_trainable": 0, "flops_per_micro_batch": float(flops),
            "tokens_per_micro_batch": batch * prompt, "peak": peak_total, "breakdown": peak_breakdown}


# ---------------------------------------------------------------------------------------------
# Analytic comparison
# ---------------------------------------------------------------------------------------------

def _analytic(resolved: Workload, spec: Any, plan: dict) -> tuple[dict, list[str]]:
    """The analytic estimate of the same single-device workload, for comparison."""
    from gpuplan.estimate.core import estimate_resolved
    from gpuplan.estimate.shapes import shape_of
    from gpuplan.estimate.system import layout_from_workload, system_from_workload
    from gpuplan.estimate.training import attention_flops_fwd_per_token, flops_per_token

    notes: list[str] = []
    system, _layout = system_from_workload(resolved)
    changes: dict[str, Any] = {"parallel": {}, "hardware": {"gpu": system.gpu.id, "count": 1}}
    if plan["task"] == "inference":
        changes.update(framework="transformers", output_tokens=1)
        notes.append(_("analytic comparison for inference: framework transformers (eager generate), output_tokens 1, so its peak is weights + prompt KV cache + prefill transient, like the trace"))
    w2 = resolved.with_updates(**changes)
    system2, _layout2 = system_from_workload(w2)
    layout = layout_from_workload(w2, system2.total_gpus, system2.gpus_per_node)
    est = estimate_resolved(w2, spec, system2, layout, with_suggestions=False)
    s = shape_of(spec)
    from gpuplan.estimate.params import table

    out: dict[str, Any] = {
        "params_total": float(spec.params_total),
        "peak_allocated_bytes": int(est.memory.peak_allocated_bytes),
        "workspace_bytes": int(table("memory", "workspace_bytes")),
        "peak_phase": est.memory.peak_phase,
        "components": {k: int(round(v)) for k, v in est.memory.components.items() if k != "overhead"},
        "layout": layout.describe(),
    }
    if plan["task"] == "inference":
        p = plan["tokens"]
        # inference.py prefill convention: 2·N·P + 2·L·a·d_h·P² (causal) per sequence
        out["hardware_flops_per_token"] = 2.0 * s.matmul_params_active + 2.0 * s.layers * s.heads * s.head_dim * p
        out["model_flops_per_token"] = out["hardware_flops_per_token"]
        out["attention_flops_fwd_per_token_noncausal"] = attention_flops_fwd_per_token(s, p)
    else:
        model_fpt, hw_fpt = flops_per_token(s, plan["tokens"], plan["task"], layout.checkpointing)
        out["hardware_flops_per_token"] = hw_fpt
        out["model_flops_per_token"] = model_fpt
    return out, notes


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

def trace_estimate(workload: Workload) -> dict:
    """Exact parameters, FLOPs and peak memory of a workload, traced on fake tensors (JSON-ready)."""
    from gpuplan.catalog.models import resolve_model

    started = time.perf_counter()
    resolved, assumptions = resolve_defaults(workload)
    spec = resolve_model(resolved.model)
    assumptions = list(assumptions) + list(getattr(spec, "assumptions", ()) or ())
    plan = _plan(resolved, spec)
    tokens = plan["tokens"]
    hf_cfg, cfg_notes = hf_config_from_spec(spec, min_positions=tokens)
    est_s = _size_guard(spec, plan["task"])
    torch, transformers = _import_torch()
    if est_s > 20:
        sys.stderr.write(_("Tracing {model} on fake tensors (about {seconds:.0f} s)...").format(model=spec.id,
                                                                                                 seconds=est_s) + "\n")
    try:
        with _quiet(), contextlib.redirect_stdout(io.StringIO()):
            if plan["task"] == "inference":
                res = _trace_inference(torch, transformers, hf_cfg, plan)
            else:
                res = _trace_training(torch, transformers, hf_cfg, plan, resolved)
    except GpuplanError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed trace is reported as one line, not a traceback
        if os.environ.get("GPUPLAN_DEBUG"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise GpuplanError(_("Tracing {model} failed: {name}: {first}").format(model=spec.id, name=exc.__class__.__name__, first=first),
                           hint=_("Drop --trace for the analytic estimate; GPUPLAN_DEBUG=1 shows the traceback.")) from None
    warns = list(plan["warnings"])
    analytic, cmp_notes = _analytic(resolved, spec, plan)
    ga = plan.get("grad_accum", 1)
    flops_per_step = res["flops_per_micro_batch"] * ga
    flops_per_token = res["flops_per_micro_batch"] / res["tokens_per_micro_batch"]
    if int(round(spec.params_total)) != res["params_exact"]:
        warns.append(_("traced parameters {res:,} differ from gpuplan's shape count {params_total:,} ({params_total2:+.3%})").format(res=res['params_exact'], params_total=int(round(spec.params_total)), params_total2=res['params_exact'] / spec.params_total - 1))
    analytic_tensors = analytic["peak_allocated_bytes"] - analytic["workspace_bytes"]
    comparison = {
        "params_ratio": res["params_exact"] / spec.params_total if spec.params_total else None,
        "flops_per_token_ratio": flops_per_token / analytic["hardware_flops_per_token"]
        if analytic["hardware_flops_per_token"] else None,
        # the trace sees tensors only: compare with the analytic peak less its cuBLAS/flash workspace term
        "peak_ratio": res["peak"] / analytic_tensors if analytic_tensors > 0 else None,
        "note": "trace / analytic; peak_ratio compares with analytic peak_allocated_bytes - workspace_bytes",
    }
    memory: dict[str, Any] = {"peak_allocated_bytes": int(res["peak"]), "breakdown": res["breakdown"]}
    if "end_of_forward" in res:
        memory["end_of_forward"] = res["end_of_forward"]
    conventions = [
        "FLOPs: torch FlopCounterMode, 2 per multiply-add, matrix products only (norms, activations, softmax "
        "and the optimizer step not counted); attention counted non-causal, SDPA backward 2.5x its forward",
        "memory: MemTracker under FakeTensorMode on CPU: tensors the model, autograd and optimizer allocate; "
        "not the CUDA context, cuBLAS/flash workspaces or caching-allocator fragmentation",
    ]
    if plan["task"] != "inference":
        conventions.append(_("peak over two optimizer steps (step 2 = steady state with optimizer states)"))
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "trace",
        "workload": resolved.model_dump(mode="json"),
        "model": {"id": spec.id, "kind": spec.kind, "arch": spec.arch, "hf_model_type": hf_cfg["model_type"],
                  "params_total": float(spec.params_total), "params_active": float(spec.params_active),
                  "hf_config": hf_cfg},
        "params_exact": res["params_exact"],
        "params_trainable": res["params_trainable"],
        "flops_per_step": float(flops_per_step),
        "flops_per_token": float(flops_per_token),
        "tokens_per_step": res["tokens_per_micro_batch"] * ga,
        "memory": memory,
        "analytic": analytic,
        "comparison": comparison,
        "trace": {"torch": torch.__version__, "transformers": transformers.__version__,
                  "wall_s": round(time.perf_counter() - started, 2)},
        "assumptions": assumptions + cfg_notes + plan["notes"] + cmp_notes + conventions,
        "warnings": warns,
    }


__all__ = ["trace_estimate", "hf_config_from_spec", "estimated_trace_s"]
