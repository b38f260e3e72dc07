"""The workload contract: one record for every entry point (CLI, Python, REST).

The schema is the one in docs/workload.md (and ../shared/docs/architecture.md). Parsing is
strict: unknown keys are errors with a did-you-mean, values outside their range are errors, and
every error reaches the user as one :class:`~gpuplan.errors.GpuplanError` with a hint.

Unset fields stay ``None`` in the parsed record so that ``recommend`` can tell "free to search"
from "fixed by the user"; :func:`resolve_defaults` fills the documented defaults and returns the
list of assumptions it made, which every result reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpuplan.errors import GpuplanError, did_you_mean
from gpuplan.fieldnames import field_label, value_text
from gpuplan.safeio import (
    MAX_BYTES,
    MAX_YAML_WORKLOAD_BYTES,
    check_nesting,
    load_json,
    load_yaml,
    read_stdin_bounded,
    read_text_bounded,
    size_text,
)
from gpuplan.i18n import N_, _, current_lang

Task = Literal["inference", "pretrain", "full", "lora", "qlora"]
TASK_ALIASES = {"train": "pretrain", "finetune": "full", "fine-tune": "full", "infer": "inference",
                "serve": "inference", "serving": "inference", "sft": "full"}
Precision = Literal["fp32", "fp16", "bf16", "fp8"]
Quantization = Literal["none", "int8", "int4", "gptq-int4", "gptq-int8", "awq", "fp8", "bnb-int8", "bnb-nf4"]
QUANT_ALIASES = {"nf4": "bnb-nf4", "gptq": "gptq-int4", "awq-int4": "awq", "int4-awq": "awq", "w4a16": "int4",
                 "w8a16": "int8", "bnb-4bit": "bnb-nf4", "bnb-8bit": "bnb-int8", "llm.int8": "bnb-int8"}
# Weight-only 4-bit and 8-bit bases a QLoRA-style adapter trains on (bitsandbytes, GPTQ, AWQ, generic).
QLORA_BASES = (None, "bnb-nf4", "bnb-int8", "int4", "int8", "gptq-int4", "gptq-int8", "awq")
KvDtype = Literal["auto", "fp16", "bf16", "fp8", "int8"]
Framework = Literal["auto", "transformers", "vllm", "sglang", "trtllm", "deepspeed", "megatron", "nemo", "fsdp",
                    "torchtune", "llm-foundry", "llama-factory", "swift", "lmdeploy", "tgi", "torch-compile"]
Optimizer = Literal["adamw", "adamw-fused", "adamw-foreach", "adamw-8bit", "adamw-bf16", "sgd", "adafactor",
                    "paged-adamw", "paged-adamw-8bit"]
# Names the frameworks use for the same optimizers (HF TrainingArguments.optim, torchtune/bitsandbytes classes).
OPTIMIZER_ALIASES = {"adamw_torch": "adamw", "adamw_torch_fused": "adamw-fused", "adamw_8bit": "adamw-8bit",
                     "adamw_bnb_8bit": "adamw-8bit", "adamw8bit": "adamw-8bit", "8bit-adamw": "adamw-8bit",
                     "paged_adamw_8bit": "paged-adamw-8bit", "pagedadamw8bit": "paged-adamw-8bit",
                     "paged_adamw_32bit": "paged-adamw", "paged-adamw-32bit": "paged-adamw", "pagedadamw": "paged-adamw",
                     "paged_adamw": "paged-adamw"}
FRAMEWORK_ALIASES = {"turbomind": "lmdeploy", "text-generation-inference": "tgi", "gpt-fast": "torch-compile",
                     "tensorrt-llm": "trtllm", "hf": "transformers", "megatron-lm": "megatron", "megatron-core": "megatron"}
PipelineSchedule = Literal["1f1b", "interleaved", "gpipe"]
Objective = Literal["cost", "time", "balanced"]
Billing = Literal["payg", "spot", "subscription"]
FsdpMode = Literal["none", "full_shard", "shard_grad_op", "hybrid_shard"]
Offload = Literal["none", "cpu", "nvme"]

MAX_TOKENS = 10_000_000  # longer than any released context window


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class LoraSpec(_Strict):
    rank: int = Field(8, ge=1, le=4096, description="LoRA rank r")
    alpha: float = Field(16, gt=0, le=1e6)
    targets: Union[str, list[str]] = Field("all-linear", description="all-linear | attn | qv | [module names]")
    dropout: float = Field(0.05, ge=0, lt=1)


class ParallelSpec(_Strict):
    tp: int = Field(1, ge=1, le=512, description="tensor-parallel size (within a node)")
    pp: int = Field(1, ge=1, le=1024, description="pipeline stages")
    dp: int | None = Field(None, ge=1, le=100_000, description="data-parallel size; default gpus/(tp*pp)")
    ep: int = Field(1, ge=1, le=1024, description="expert-parallel size (MoE)")
    sp: bool | None = Field(None, description="sequence parallelism (with tp): activations outside the TP "
                            "regions split by tp; unset = on for megatron / nemo with tp > 1, off otherwise")
    cp: int = Field(1, ge=1, le=256, description="context parallelism: each sequence split over cp GPUs (Megatron "
                    "/ NeMo context_parallel_size, torchtitan); GPUs = tp x pp x cp x dp")
    zero: int | None = Field(None, ge=0, le=3, description="DeepSpeed ZeRO stage / sharded optimizer (1 = Megatron's "
                             "distributed optimizer); unset = 0, nemo: 1 (NeMo turns its distributed optimizer on)")
    fsdp: FsdpMode = "none"
    offload: Offload = "none"
    microbatches: int | None = Field(None, ge=1, le=100_000, description="pipeline micro-batches per step")
    dp_attention: bool = Field(False, description="serving: data-parallel attention (SGLang --enable-dp-attention): "
                                                  "each TP rank keeps the KV/latent cache of its own sequences only")
    vp: int | None = Field(None, ge=1, le=1024, description="virtual pipeline stages per GPU (interleaved 1F1B); "
                           "default 1, NeMo: layers/(pp*2)")
    schedule: PipelineSchedule | None = Field(None, description="pipeline schedule: 1f1b | interleaved | gpipe")
    tp_comm_overlap: bool | None = Field(None, description="overlap tensor-parallel communication with GEMMs "
                                         "(Transformer Engine userbuffers); default on for NeMo")


class DatasetSpec(_Strict):
    tokens: float | None = Field(None, gt=0, le=1e15)
    samples: float | None = Field(None, gt=0, le=1e13)
    tokens_per_sample: float | None = Field(None, gt=0, le=MAX_TOKENS)
    bytes_per_sample: float | None = Field(None, gt=0, le=1e10, description="non-LLM datasets: stored bytes per sample")
    epochs: float = Field(1.0, gt=0, le=10_000)
    size_gib: float | None = Field(None, gt=0, le=1e7, description="stored dataset size, for storage advice")
    num_files: float | None = Field(None, gt=0, le=1e12)
    # batch inference jobs (task inference with a dataset): what is processed, besides samples/tokens
    items: float | None = Field(None, gt=0, le=1e13, description="inference job: requests / images / clips to process")
    audio_hours: float | None = Field(None, gt=0, le=1e8, description="inference job: hours of audio to transcribe")

    def total_tokens(self, seq_len: int) -> float | None:
        """Tokens processed over all epochs (samples x tokens_per_sample, or tokens)."""
        if self.tokens is not None:
            return self.tokens * self.epochs
        if self.samples is not None:
            per = self.tokens_per_sample if self.tokens_per_sample is not None else seq_len
            return self.samples * per * self.epochs
        return None


class ServingSpec(_Strict):
    requests_per_s: float | None = Field(None, gt=0, le=1e7)
    peak_requests_per_s: float | None = Field(None, gt=0, le=1e7)
    requests_per_day: float | None = Field(None, gt=0, le=1e12)
    peak_hours_per_day: float | None = Field(None, gt=0, le=24)
    ttft_ms: float | None = Field(None, gt=0, le=3.6e6)
    tpot_ms: float | None = Field(None, gt=0, le=6e4)
    target_utilization: float | None = Field(None, gt=0, le=1, description="demand / capacity at the peak; "
                                             "default 1/1.15 (capacity 15 % above demand)")


class InputSpec(_Strict):
    image_size: int | None = Field(None, ge=8, le=16384)
    steps: int | None = Field(None, ge=1, le=10_000)
    audio_seconds: float | None = Field(None, gt=0, le=36_000)


class HardwareSpec(_Strict):
    gpu: str | None = Field(None, min_length=1, max_length=100)
    count: int | None = Field(None, ge=1, le=100_000, description="GPUs in total")
    instance_type: str | None = Field(None, min_length=1, max_length=100)
    nodes: int | None = Field(None, ge=1, le=10_000)


class Constraints(_Strict):
    deadline_hours: float | None = Field(None, gt=0, le=1e6)
    budget: float | None = Field(None, gt=0, le=1e12)
    currency: Literal["CNY", "USD"] = "CNY"
    regions: list[str] | None = None
    billing: list[Billing] | None = None
    max_gpus: int | None = Field(None, ge=1, le=100_000)
    families: list[str] | None = None
    quantization: list[Quantization] | None = None
    include_status: list[Literal["ga", "preview", "ticket", "not-recommended", "retired", "unconfirmed"]] | None = None
    clouds: list[str] | None = None
    platforms: list[Literal["ecs", "function-compute", "pai-eas", "ack"]] | None = None   # serving deployments

    @field_validator("quantization", mode="before")
    @classmethod
    def _quant_aliases(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [QUANT_ALIASES.get(str(q).lower(), str(q).lower()) if isinstance(q, str) else q for q in v]
        return v


# A name (id, alias, ModelScope id, config.json path) or an inline config mapping; never empty.
ModelName = Annotated[str, Field(min_length=1, max_length=500)]
ModelRef = Union[ModelName, dict[str, Any]]


# Per field: the other names users and frameworks give the same value.
_NAME_ALIASES: dict[str, dict[str, str]] = {"task": TASK_ALIASES, "quantization": QUANT_ALIASES,
                                            "framework": FRAMEWORK_ALIASES, "optimizer": OPTIMIZER_ALIASES}


class Workload(_Strict):
    """A training or serving job, as the user describes it. Unset fields are ``None``."""

    name: str | None = Field(None, max_length=100)
    model: ModelRef
    task: Task | None = None
    precision: Precision | None = None
    quantization: Quantization | None = None
    kv_cache_dtype: KvDtype | None = None
    framework: Framework | None = None
    framework_version: str | None = Field(None, max_length=40, pattern=r"^\d+(\.\d+){0,3}([.+-]?[0-9A-Za-z.]*)?$",
                                          description="version of the framework when it changes memory (transformers "
                                          "< 4.45 keeps the logits of every prompt position in generate); unset = current")
    batch_size: int | None = Field(None, ge=1, le=65_536)
    gradient_accumulation: int | None = Field(None, ge=1, le=1_000_000)
    global_batch_size: int | None = Field(None, ge=1, le=1_000_000, description="training: sequences (samples) per "
                                          "optimizer step over all GPUs = micro-batch x accumulation x DP; unset = "
                                          "the published recipe for the task and model size (data/recipes.yaml)")
    global_batch_tokens: float | None = Field(None, ge=1, le=1e9, description="training: tokens per optimizer step "
                                              "(global_batch_size x seq_len); set this or global_batch_size")
    seq_len: int | None = Field(None, ge=1, le=MAX_TOKENS)
    prompt_tokens: int | None = Field(None, ge=0, le=MAX_TOKENS)
    output_tokens: int | None = Field(None, ge=0, le=MAX_TOKENS, description="tokens generated per request; 0 = "
                                      "prefill only (embeddings, reranking, classification, scoring)")
    input: InputSpec | None = None
    grad_checkpointing: Union[bool, Literal["selective"], None] = None
    flash_attention: bool | None = None
    optimizer: Optimizer | None = None
    optimizer_in_backward: bool | None = Field(None, description="optimizer step fused into the backward pass "
                                               "(torchtune optimizer_in_bwd): gradients are never all held at once")
    activation_offloading: bool | None = Field(None, description="saved activations (the checkpointed layer inputs "
                                               "with grad_checkpointing) are copied to pinned host RAM in forward and "
                                               "brought back in backward (torchtune enable_activation_offloading); "
                                               "unset = false")
    packed: bool | None = Field(None, description="training samples packed into full seq_len rows (no padding, one "
                                "shape every step); unset = true for pretrain, false for fine-tuning")
    compile: bool | None = Field(None, description="torch.compile of the model and loss (torchtune compile: true; "
                                 "HF torch_compile); unset = false")
    lora: LoraSpec | None = None
    parallel: ParallelSpec | None = None
    dataset: DatasetSpec | None = None
    serving: ServingSpec | None = None
    hardware: HardwareSpec | None = None
    constraints: Constraints | None = None
    objective: Objective | None = None

    @field_validator("task", "quantization", "precision", "kv_cache_dtype", "framework", "optimizer", "objective",
                     mode="before")
    @classmethod
    def _normalise_names(cls, v: Any, info: ValidationInfo) -> Any:
        """Lower-case, then map the field's aliases (`finetune` -> full, `nf4` -> bnb-nf4, `hf` -> transformers,
        `paged_adamw_8bit` -> paged-adamw-8bit); other fields only lower-case."""
        if isinstance(v, str):
            low = v.strip().lower()
            return _NAME_ALIASES.get(info.field_name or "", {}).get(low, low)
        return v

    @field_validator("grad_checkpointing", mode="before")
    @classmethod
    def _ckpt(cls, v: Any) -> Any:
        if isinstance(v, str):
            low = v.strip().lower()
            table = {"true": True, "yes": True, "full": True, "on": True, "false": False, "no": False,
                     "none": False, "off": False, "selective": "selective"}
            if low in table:
                return table[low]
        return v

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            if not v or len(v) > 500:
                raise ValueError(_("model must be a non-empty name or path (at most 500 characters)"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            raise ValueError(_("model must be a name, a config.json path or a mapping such as {params_b: 7}"))
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "Workload":
        if self.task == "qlora" and self.quantization not in QLORA_BASES:
            raise ValueError(_("task qlora needs a 4-bit or 8-bit base model, not quantization {quantization!r}")
                             .format(quantization=self.quantization))
        if self.optimizer_in_backward and (self.gradient_accumulation or 1) > 1:
            raise ValueError(_("optimizer_in_backward steps each parameter as soon as its gradient exists, so it needs "
                               "gradient_accumulation 1 (torchtune: optimizer_in_bwd requires "
                               "gradient_accumulation_steps=1)"))
        if self.global_batch_size is not None and self.global_batch_tokens is not None:
            raise ValueError(_("set global_batch_size (sequences) or global_batch_tokens, not both"))
        if (self.global_batch_size is not None or self.global_batch_tokens is not None) \
                and (self.task or "inference") == "inference":
            raise ValueError(_("global_batch_size and global_batch_tokens apply to training: set task to pretrain, "
                               "full, lora or qlora"))
        if self.precision == "fp32" and self.quantization not in (None, "none"):
            pass  # allowed: fp32 compute with quantized storage is unusual but legal
        return self

    # ---- convenience -------------------------------------------------------------------------
    def with_updates(self, **changes: Any) -> "Workload":
        """A copy with fields replaced (validated again)."""
        data = self.model_dump(exclude_unset=True)
        data.update({k: v for k, v in changes.items()})
        return parse_workload(data)

    @property
    def is_training(self) -> bool:
        return (self.task or "inference") != "inference"


# ------------------------------------------------------------------------------------------------
# Defaults: one table, listed in docs/workload.md and reported with every result.
# ------------------------------------------------------------------------------------------------

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
        if key in ("prompt_tokens", "output_tokens", "kv_cache_dtype") and task != "inference":
            data[key] = value
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


# ------------------------------------------------------------------------------------------------
# Parsing: YAML/JSON files, mappings, CLI flags. Every failure is a GpuplanError.
# ------------------------------------------------------------------------------------------------

def load_yaml_text(text: str, origin: str = "input") -> Any:
    """YAML (or JSON) text -> Python data, with gpuplan.safeio's depth, alias and number limits."""
    return load_yaml(text, origin)


def dump_workload_yaml(data: dict[str, Any]) -> str:
    """A workload mapping as the YAML file the CLI reads (keys in the given order, UTF-8 text kept)."""
    import yaml

    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=False)


def _yaml_size_check(text: str, p: Path) -> None:
    """Refuse a YAML workload larger than safeio.MAX_YAML_WORKLOAD_BYTES before parsing it."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_WORKLOAD_BYTES:
        raise GpuplanError(_("The workload file {p!r} is larger than {limit} ({size}).").format(
                               p=str(p), limit=size_text(MAX_YAML_WORKLOAD_BYTES), size=size_text(size)),
                           hint=_("A workload is a few hundred bytes: keep only the workload keys (JSON Lines "
                                  "files of many workloads may be larger)."))


def read_workload_documents(path: str | Path) -> Any:
    """Read a workload file (YAML, JSON, a JSON array or JSON Lines), size-bounded (see gpuplan.safeio).
    ``-`` reads standard input (once per process: a command that reads its workload twice gets the same text)."""
    if str(path) == "-":
        return _parse_documents(read_stdin_bounded("workload file"), Path("-"))
    p = Path(path)
    try:
        p.is_dir()  # a name too long for the file system, or otherwise unusable
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise GpuplanError(_("Cannot use {p!r} as a workload file: {reason}.").format(p=str(p)[:80], reason=reason),
                           hint=_("Give the path of a YAML or JSON workload file.")) from None
    if not p.exists():
        raise GpuplanError(_("Workload file {p!r} does not exist.").format(p=str(p)),
                           hint=_("Give a YAML or JSON workload file; `gpuplan schema` shows the format."))
    if p.is_dir():
        raise GpuplanError(_("{p!r} is a folder, not a workload file.").format(p=str(p)), hint=_("Give a .yaml or .json file."))
    json_lines = p.suffix.lower() in (".jsonl", ".ndjson")
    limit = MAX_BYTES if json_lines else MAX_YAML_WORKLOAD_BYTES    # checked with stat, before reading
    return _parse_documents(read_text_bounded(p, "workload file", max_bytes=limit), p)


def _parse_documents(text: str, p: Path) -> Any:
    stripped = text.strip()
    if not stripped:
        raise GpuplanError(_("Workload file {p!r} is empty.").format(p=str(p)),
                           hint=_("Start with `model: <name>` and `task: <inference|pretrain|full|lora|qlora>`."))
    if p.suffix.lower() in (".jsonl", ".ndjson") or (stripped.startswith("{") and "\n{" in stripped):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        docs: list[Any] = []
        for i, line in enumerate(lines, 1):
            try:
                docs.append(load_json(line, origin=_("{path!r} line {line}").format(path=str(p), line=i)))
            except GpuplanError:
                if len(lines) == 1:
                    break
                docs.append(_BadLine(i))
        else:
            return docs if len(docs) > 1 else docs[0]
    _yaml_size_check(text, p)
    return load_yaml_text(text, origin=str(p))


class _BadLine:
    """A JSON Lines line that does not parse: reported on its own output line."""

    def __init__(self, line: int):
        self.line = line


# pydantic's error types -> our sentences (its own messages are English-only).
_PYDANTIC_MESSAGES = {
    "greater_than": N_("Invalid workload field {field!r} = {shown}: it must be greater than {gt}."),
    "greater_than_equal": N_("Invalid workload field {field!r} = {shown}: it must be at least {ge}."),
    "less_than": N_("Invalid workload field {field!r} = {shown}: it must be less than {lt}."),
    "less_than_equal": N_("Invalid workload field {field!r} = {shown}: it must be at most {le}."),
    "literal_error": N_("Invalid workload field {field!r} = {shown}: it must be one of {expected}."),
    "int_parsing": N_("Invalid workload field {field!r} = {shown}: it must be a whole number."),
    "int_type": N_("Invalid workload field {field!r} = {shown}: it must be a whole number."),
    "int_from_float": N_("Invalid workload field {field!r} = {shown}: it must be a whole number."),
    "float_parsing": N_("Invalid workload field {field!r} = {shown}: it must be a number."),
    "float_type": N_("Invalid workload field {field!r} = {shown}: it must be a number."),
    "finite_number": N_("Invalid workload field {field!r} = {shown}: it must be a finite number."),
    "bool_parsing": N_("Invalid workload field {field!r} = {shown}: it must be true or false."),
    "bool_type": N_("Invalid workload field {field!r} = {shown}: it must be true or false."),
    "string_type": N_("Invalid workload field {field!r} = {shown}: it must be a text value."),
    "dict_type": N_("Invalid workload field {field!r} = {shown}: it must be a mapping of keys."),
    "model_type": N_("Invalid workload field {field!r} = {shown}: it must be a mapping of keys."),
    "list_type": N_("Invalid workload field {field!r} = {shown}: it must be a list."),
    "too_short": N_("Invalid workload field {field!r} = {shown}: it needs at least {min_length} item(s)."),
    "too_long": N_("Invalid workload field {field!r} = {shown}: it takes at most {max_length} item(s)."),
    "string_too_long": N_("Invalid workload field {field!r} = {shown}: it takes at most {max_length} characters."),
}


def _friendly(exc: ValidationError, prefix: str = "") -> GpuplanError:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    kind = err.get("type", "")
    field = (prefix + loc) if loc else prefix.rstrip(".") or None
    if kind == "extra_forbidden":
        parent_model = _model_at(Workload, err.get("loc", ())[:-1])
        key = str(err["loc"][-1])
        known = list(parent_model.model_fields) if parent_model else []
        close = did_you_mean(key, known)
        if close:
            hint = _("Did you mean {key!r}? `gpuplan schema` lists every key.").format(key=close[0])
            web_hint = _("Did you mean {key!r}?").format(key=close[0])
        else:
            hint = _("Known keys: {keys}. `gpuplan schema` lists every key.").format(keys=", ".join(known))
            web_hint = _("Known keys: {keys}.").format(keys=", ".join(known))
        return GpuplanError(_("Unknown workload key {field!r}.").format(field=field), hint=hint, web_hint=web_hint,
                            field=field)
    msg = err.get("msg", "invalid value")
    if msg.startswith("Value error, "):   # our validators' own (translated) sentences
        msg = msg[len("Value error, "):]
    value = err.get("input")
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if kind == "missing":
        return GpuplanError(_("Workload field {field!r} is required.").format(field=field),
                            hint=_("Add it, e.g. `model: Qwen/Qwen2.5-7B-Instruct`."), field=field)
    hint = _("See `gpuplan schema` for allowed values and ranges.")
    web_hint = _("Check the value against the field's allowed values and ranges.")
    ctx = {k: (v if not isinstance(v, float) or not v.is_integer() else int(v)) for k, v in (err.get("ctx") or {}).items()}
    # English keeps pydantic's own wording (a stable contract); other languages get our templates.
    template = _PYDANTIC_MESSAGES.get(kind) if current_lang() != "en" else None
    if kind == "literal_error":
        hint = web_hint = _("Allowed: {expected}.").format(expected=msg.split("Input should be ", 1)[-1]
                                                           if current_lang() == "en" else ctx.get("expected", ""))
    if template:
        try:
            message = _(template).format(field=field, shown=shown, **ctx)
        except (KeyError, IndexError, ValueError):
            message = _("Invalid workload field {field!r} = {shown}: {msg}.").format(field=field, shown=shown, msg=msg)
    else:
        message = _("Invalid workload field {field!r} = {shown}: {msg}.").format(field=field, shown=shown, msg=msg)
    return GpuplanError(message, hint=hint, web_hint=web_hint, field=field)


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    cur: Any = model
    for part in loc:
        if not (isinstance(cur, type) and issubclass(cur, BaseModel)):
            return None
        fld = cur.model_fields.get(str(part))
        if fld is None:
            return None
        ann = fld.annotation
        cur = _first_model(ann)
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def _first_model(ann: Any) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


_ORIGINS = (N_("workload"), N_("The request body"))


def parse_workload(data: Any, origin: str = "workload") -> Workload:
    """Validate a mapping (from YAML/JSON/Python/REST) into a Workload, or raise GpuplanError."""
    origin = _(origin)
    if isinstance(data, Workload):
        return data
    if isinstance(data, _BadLine):
        raise GpuplanError(_("Line {line} is not valid JSON.").format(line=data.line), hint=_("Each JSON Lines line must be one JSON object."))
    if not isinstance(data, dict):
        raise GpuplanError(_("{origin} must be a mapping of workload keys, not {name}.").format(origin=origin, name=type(data).__name__),
                           hint=_("Start with `model: <name>` and `task: <inference|pretrain|full|lora|qlora>`."))
    check_nesting(data, origin)
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise GpuplanError(_("Workload keys must be strings, got {bad!r}.").format(bad=bad[0]), hint=_("Quote the key in YAML."))
    try:
        w = Workload.model_validate(data)
    except ValidationError as exc:
        raise _friendly(exc) from None
    except (TypeError, ValueError, RecursionError) as exc:  # pragma: no cover - defensive
        raise GpuplanError(_("Invalid workload: {exc}.").format(exc=exc), hint=_("See `gpuplan schema`.")) from None
    _check_clouds_and_regions(w)
    return w


def _check_clouds_and_regions(w: Workload) -> None:
    """constraints.clouds and constraints.regions must name known clouds and regions (did-you-mean)."""
    cons = w.constraints
    if cons is None or not (cons.clouds or cons.regions):
        return
    from gpuplan.catalog.instances import DEFAULT_CLOUD, check_clouds, check_regions  # loaded on first use

    try:
        check_clouds(cons.clouds)
    except GpuplanError as exc:
        raise GpuplanError(exc.message, hint=exc.hint, field="constraints.clouds") from None
    # no clouds chosen means the default cloud's catalog (recommend searches Alibaba): its regions only
    check_regions(cons.regions, cons.clouds or [DEFAULT_CLOUD])


def load_workload(source: str | Path | dict[str, Any] | Workload, **overrides: Any) -> Workload:
    """Load a workload from a file path, a mapping, or a Workload; flags in ``overrides`` win.

    Overrides use the flat CLI names (``tp``, ``pp``, ``zero``, ``gpu``, ``gpus``, ``budget``,
    ``deadline_hours``, ``region``...) or workload keys.
    """
    if isinstance(source, Workload):
        data = source.model_dump(exclude_unset=True)
    elif isinstance(source, dict):
        data = dict(source)
    else:
        doc = read_workload_documents(source)
        if isinstance(doc, list):
            raise GpuplanError(_("{source!r} holds {doc} workloads.").format(source=str(source), doc=len(doc)),
                               hint=_("`gpuplan estimate FILE` handles a list (JSON Lines output); other commands take one."))
        if not isinstance(doc, dict):
            raise GpuplanError(_("{source!r} must hold one workload mapping.").format(source=str(source)), hint=_("See `gpuplan schema`."))
        data = doc
    if overrides:
        data = apply_overrides(data, overrides)
    return parse_workload(data)


_NESTED_FLAGS = {
    "tp": ("parallel", "tp"), "pp": ("parallel", "pp"), "dp": ("parallel", "dp"), "ep": ("parallel", "ep"),
    "zero": ("parallel", "zero"), "fsdp": ("parallel", "fsdp"), "offload": ("parallel", "offload"),
    "sp": ("parallel", "sp"), "cp": ("parallel", "cp"),
    "gpu": ("hardware", "gpu"), "gpus": ("hardware", "count"), "instance_type": ("hardware", "instance_type"),
    "nodes": ("hardware", "nodes"),
    "budget": ("constraints", "budget"), "deadline_hours": ("constraints", "deadline_hours"),
    "currency": ("constraints", "currency"), "max_gpus": ("constraints", "max_gpus"),
    "region": ("constraints", "regions"), "regions": ("constraints", "regions"),
    "billing": ("constraints", "billing"), "family": ("constraints", "families"),
    "families": ("constraints", "families"), "allow_quantization": ("constraints", "quantization"),
    "include_status": ("constraints", "include_status"), "cloud": ("constraints", "clouds"),
    "lora_rank": ("lora", "rank"), "lora_targets": ("lora", "targets"),
    "dataset_tokens": ("dataset", "tokens"), "dataset_samples": ("dataset", "samples"), "epochs": ("dataset", "epochs"),
    "requests_per_s": ("serving", "requests_per_s"), "ttft_ms": ("serving", "ttft_ms"), "tpot_ms": ("serving", "tpot_ms"),
    "requests_per_day": ("serving", "requests_per_day"),
    "image_size": ("input", "image_size"), "steps": ("input", "steps"), "audio_seconds": ("input", "audio_seconds"),
}


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Merge CLI-style flags (None = not given) into a workload mapping; flags win."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for key, value in overrides.items():
        if value is None or value == [] or value == ():
            continue
        if key in _NESTED_FLAGS:
            section, sub = _NESTED_FLAGS[key]
            block = out.get(section)
            block = dict(block) if isinstance(block, dict) else {}
            if isinstance(value, tuple):
                value = list(value)
            block[sub] = value
            out[section] = block
        else:
            out[key] = value
    return out


def workload_json_schema() -> dict[str, Any]:
    """The JSON Schema of the workload contract (for `gpuplan schema`)."""
    return Workload.model_json_schema()
