"""Workload defaults: one table (listed in docs/workload.md) and the resolver that fills every unset field
from it and reports each assumption it made (every result lists them)."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.fieldnames import field_label, value_text
from gpuplan.i18n import _
from gpuplan.workload import LoraSpec, ParallelSpec, Workload

DEFAULTS: dict[str, Any] = {
    "task": "inference",
    "precision": "bf16",
    "quantization": "none",
    "kv_cache_dtype": "auto",
    "framework": "auto",
    "batch_size": 1,
    "gradient_accumulation": 1,
    "seq_len": 2048,
    "prompt_tokens": 1024,
    "output_tokens": 512,
    "grad_checkpointing": True,
    "flash_attention": True,
    "optimizer": "adamw",
    "objective": "cost",
}

FRAMEWORK_DEFAULT_BY_TASK = {"inference": "vllm", "pretrain": "deepspeed", "full": "deepspeed", "lora": "transformers",
                             "qlora": "transformers"}
# Stacks that recompute nothing unless told to: Megatron-LM (--recompute-granularity unset) and NeMo's
# recipes (recompute off; activation_checkpointing is opt-in). Elsewhere the conservative default holds.
NO_RECOMPUTE_DEFAULT_FRAMEWORKS = {"megatron", "nemo"}


def resolve_defaults(w: Workload, *, searched: frozenset[str] = frozenset(),
                     start_points: frozenset[str] = frozenset()) -> tuple[Workload, list[str]]:
    """Fill every unset field with its documented default; return (resolved, assumptions).

    ``searched`` names fields left unset on purpose (the recommender searches them). ``start_points`` names
    fields that get their default as the search's starting point but are chosen per plan (the serving
    search's weight format, engine and KV-cache dtype): set, but not stated as an assumption.
    """
    data = w.model_dump(exclude_none=True)
    notes: list[str] = []
    _quantized_checkpoint(data, notes)
    task = data.get("task", DEFAULTS["task"])
    if data.get("framework") == "auto":
        data.pop("framework")  # an explicit "auto" means exactly what an unset framework means
    for key, value in DEFAULTS.items():
        if key in searched or data.get(key) is not None:
            continue
        if key in ("seq_len", "gradient_accumulation", "grad_checkpointing", "optimizer") and task == "inference":
            data[key] = value
            continue
        if key == "gradient_accumulation" and task != "inference" and (
                data.get("global_batch_size") is not None or data.get("global_batch_tokens") is not None):
            continue  # the layout divides the global batch over micro-batch x DP (estimate.system.accumulation_for)
        if key in ("prompt_tokens", "output_tokens", "kv_cache_dtype") and task != "inference":
            data[key] = value
            continue
        per_item = (data.get("dataset") or {}).get("tokens_per_sample")
        if key == "prompt_tokens" and task == "inference" and per_item:
            # an inference job's items are its prompts: their stated length, not the generic 1,024 tokens
            data[key] = int(round(per_item))
            if key not in start_points:
                notes.append(_("assumed prompt_tokens {n} (the dataset's tokens_per_sample)").format(n=data[key]))
            continue
        if key == "quantization" and task == "qlora":
            value = "bnb-nf4"
        if key == "precision" and data.get("quantization") in ("gptq-int4", "gptq-int8", "awq"):
            value = "fp16"
        if key == "framework":
            value = FRAMEWORK_DEFAULT_BY_TASK.get(task, "transformers")
        if key == "grad_checkpointing" and data.get("framework") in NO_RECOMPUTE_DEFAULT_FRAMEWORKS:
            value = False
        if key == "optimizer" and _torchtune_single_device_full(data, task):
            value = "paged-adamw-8bit"  # torchtune recipes/configs/*/*_full_single_device.yaml: PagedAdamW8bit
        data[key] = value
        if key not in start_points:
            notes.append(_("assumed {key} {value}").format(key=field_label(key, with_key=True),
                                                           value=value_text(value, key=key)))
    if task != "inference" and "optimizer_in_backward" not in searched and data.get("optimizer_in_backward") is None:
        if _torchtune_single_device_full(data, task):  # unset otherwise (= false), so outputs stay as they were
            data["optimizer_in_backward"] = True
            notes.append(_("assumed optimizer_in_backward true (torchtune's single-device full fine-tuning recipe)"))
    if task in ("lora", "qlora") and "lora" not in data:
        data["lora"] = LoraSpec().model_dump()
        notes.append(_("assumed LoRA rank 8, alpha 16, targets all-linear"))
    if "parallel" not in data and "parallel" not in searched:
        data["parallel"] = ParallelSpec().model_dump()
    return Workload.model_validate(data), notes


def _quantized_checkpoint(data: dict[str, Any], notes: list[str]) -> None:
    """A published quantized checkpoint as the model (Qwen/...-GPTQ-Int4, ...-AWQ, ...-FP8, GGUF): fill
    quantization from its name, or refuse a workload that sets a different one (gpuplan.catalog.quantized)."""
    model = data.get("model")
    if not isinstance(model, str):
        return
    from gpuplan.catalog.library import quantized_base

    found = quantized_base(model)
    if found is None:
        return
    q, base = found
    label, base_name = _(q.label), base.id if base is not None else q.base_names[0]
    given = data.get("quantization")
    if given is not None and given != q.quantization:
        raise GpuplanError(
            _("{checkpoint} is a {label} checkpoint, but the workload sets quantization {quantization}.").format(
                checkpoint=model, label=label, quantization=given),
            hint=_("Leave quantization unset (gpuplan reads it from the checkpoint name), set it to {expected}, or name "
                   "the unquantized base model {base}.").format(expected=q.quantization, base=base_name),
            field="quantization")
    cons = data.get("constraints") or {}
    allowed = cons.get("quantization")
    if allowed:
        if q.quantization not in allowed:
            raise GpuplanError(
                _("{checkpoint} is a {label} checkpoint, but constraints.quantization allows only {allowed}.").format(
                    checkpoint=model, label=label, allowed=", ".join(allowed)),
                hint=_("Add {expected} to constraints.quantization, or name the unquantized base model {base}.").format(
                    expected=q.quantization, base=base_name),
                field="constraints.quantization")
        cons["quantization"] = [q.quantization]  # the checkpoint's weights are fixed: nothing else to search
    data["quantization"] = q.quantization
    notes.append(_("resolved {checkpoint} as {label} {base} (quantization {quantization})").format(
        checkpoint=model, label=label, base=base_name, quantization=q.quantization))
    if q.note:
        notes.append(_(q.note).format(level=q.level, quantization=q.quantization))


def _torchtune_single_device_full(data: dict[str, Any], task: str) -> bool:
    """torchtune's single-device full fine-tuning recipe is the default stack: its configs
    (recipes/configs/llama3_1/8B_full_single_device.yaml) use bitsandbytes PagedAdamW8bit with
    optimizer_in_bwd: True, which needs gradient_accumulation_steps=1."""
    if data.get("framework") != "torchtune" or task != "full" or (data.get("gradient_accumulation") or 1) > 1:
        return False
    hw = data.get("hardware") or {}
    par = data.get("parallel") or {}
    gpus = (par.get("tp") or 1) * (par.get("pp") or 1) * (par.get("dp") or 1)
    return (hw.get("count") or 1) == 1 and gpus == 1 and not par.get("zero") and par.get("fsdp", "none") == "none"

