"""Exact mode, step 3: the model built on torch's fake tensors, its FLOPs counted and its peak memory tracked.

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

Nothing here imports torch at module level: torch/transformers/peft are imported only inside functions.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any, cast

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.workload import Workload

INSTALL_HINT = N_("pip install 'gpuplan[trace]' (install torch==2.13.0 first on this machine to get the CPU build)")


def import_torch():
    """(torch, transformers) or a GpuplanError with the install hint."""
    try:
        import torch
        import transformers
    except ImportError:
        raise GpuplanError(_("Exact mode needs torch and transformers."), hint=_(INSTALL_HINT)) from None
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
def quiet():
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
    if kind == "sgd-plain":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.0, foreach=True)
    if kind == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2)
    if kind == "paged":  # paged states are outside the allocator: a stateless in-place step
        return torch.optim.SGD(params, lr=1e-4, momentum=0.0, foreach=False)
    raise AssertionError(kind)


def trace_training(torch, transformers, hf_cfg: dict, plan: dict, w: Workload) -> dict:
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


def trace_inference(torch, transformers, hf_cfg: dict, plan: dict) -> dict:
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


