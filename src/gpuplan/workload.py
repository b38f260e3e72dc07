"""The workload contract: one record for every entry point (CLI, Python, REST).

The schema is the one in docs/workload.md (and ../shared/docs/architecture.md). Parsing is
strict: unknown keys are errors with a did-you-mean, values outside their range are errors, and
every error reaches the user as one :class:`~gpuplan.errors.GpuplanError` with a hint.

Unset fields stay ``None`` in the parsed record so that ``recommend`` can tell "free to search"
from "fixed by the user"; :func:`gpuplan.workload_defaults.resolve_defaults` fills the documented
defaults and returns the list of assumptions it made, which every result reports. Reading files is
gpuplan.files.workload_files, loading with flags gpuplan.workload_loading, error sentences gpuplan.workload_errors.
"""


# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when the models are built (a cold `estimate` builds them).
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpuplan.catalog.hardware.gpu_inline import GpuInlineSpec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.files.safeio import check_nesting
from gpuplan.workload_errors import TASK_CHOICES, friendly_error
from gpuplan.files.workload_files import BadLine

Task = Literal["inference", "pretrain", "full", "lora", "qlora"]
# Other names of the tasks, each with one meaning (every door reads them: workload files, flags, REST, the page,
# `quick` and the wizard).
TASK_ALIASES = {"infer": "inference", "serve": "inference", "serving": "inference", "推理": "inference",
                "部署": "inference", "服务": "inference", "pre-train": "pretrain", "pretraining": "pretrain",
                "预训练": "pretrain", "从头训练": "pretrain", "full-finetune": "full", "full-fine-tune": "full",
                "full-ft": "full", "全参": "full", "全参微调": "full", "全量微调": "full", "lora微调": "lora",
                "qlora微调": "qlora"}
# Words that name more than one task: refused with the choices, never read silently as one of them
# ("train" used to plan from-scratch pre-training for someone who meant to fine-tune).
AMBIGUOUS_TASKS = frozenset({"train", "training", "训练", "finetune", "fine-tune", "fine-tuning", "finetuning", "sft",
                             "微调", "tune"})

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


_NUMERIC_FIELDS: dict[type, frozenset[str]] = {}


def _numeric_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` that take numbers and not booleans (``seq_len``, ``budget``...)."""
    found = _NUMERIC_FIELDS.get(model)
    if found is None:
        found = frozenset(name for name, info in model.model_fields.items()
                          if _leaf_types(info.annotation) & {int, float} and bool not in _leaf_types(info.annotation))
        _NUMERIC_FIELDS[model] = found
    return found


def _leaf_types(ann: Any) -> set[Any]:
    args = getattr(ann, "__args__", None)
    if args and getattr(ann, "__origin__", None) is not Literal and not isinstance(ann, type):
        out: set[Any] = set()
        for a in args:
            out |= _leaf_types(a)
        return out
    return {ann}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    @model_validator(mode="wrap")
    @classmethod
    def _no_bool_for_numbers(cls, data: Any, handler: Any) -> Any:
        """pydantic's lax mode reads true as 1 and false as 0: a number field refuses booleans instead (the
        error names the field, as pydantic's own do)."""
        if isinstance(data, dict):
            for name in _numeric_fields(cls):
                if isinstance(data.get(name), bool):
                    from pydantic_core import InitErrorDetails, PydanticCustomError

                    error = PydanticCustomError("number_not_bool", _("it takes a number, not {value}").format(
                        value=str(data[name]).lower()))
                    raise ValidationError.from_exception_data(cls.__name__, [InitErrorDetails(
                        type=error, loc=(name,), input=data[name])])
        return handler(data)


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
    tokens_per_sample_sd: float | None = Field(None, gt=0, le=MAX_TOKENS, description=(
        "standard deviation of the sample lengths (tokens): unpacked batches are padded to their longest sample"))
    max_tokens_per_sample: float | None = Field(None, gt=0, le=MAX_TOKENS, description=(
        "the dataset's longest sample (tokens): below seq_len, memory and rows are sized at it instead"))
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
    # video diffusion: frames and resolution of each video (the pipeline's defaults when unset)
    frames: int | None = Field(None, ge=1, le=10_000)
    height: int | None = Field(None, ge=8, le=16384)
    width: int | None = Field(None, ge=8, le=16384)
    offload: Literal["none", "model", "sequential"] | None = Field(
        None, description="diffusers CPU offload: model = enable_model_cpu_offload (Wan --offload_model), "
                          "sequential = enable_sequential_cpu_offload; default none")


class HardwareSpec(_Strict):
    # a catalog name (`gpuplan gpus`) or, for a card the catalog lacks, its figures (catalog/hardware/gpu_inline.py)
    gpu: Optional[Annotated[Union[Annotated[Annotated[str, Field(min_length=1, max_length=100)], Tag("name")],
                                  Annotated[GpuInlineSpec, Tag("spec")]],
                            Discriminator(lambda v: "name" if isinstance(v, str) else "spec")]] = None
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
                                "shape every step); unset = true for pretrain, false for fine-tuning in estimate; "
                                "recommend sizes every training plan packed, as the bundle's launchers run it")
    compile: bool | None = Field(None, description="torch.compile of the model and loss (torchtune compile: true; "
                                 "HF torch_compile); unset = false")
    fused_loss: bool | None = Field(None, description="training: the loss is the chunked fused linear cross-entropy of "
                                    "the gpuplan bundle's train.py (--loss chunked: 512 tokens' logits at a time, the "
                                    "[tokens x vocab] logits never exist); unset = false in estimate; recommend sets it "
                                    "per plan: on where the bundle launches train.py (DDP, FSDP, DeepSpeed), off under "
                                    "Megatron; false keeps the model's own loss in train.py too")
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
        """Lower-case, then map the field's aliases (`infer` -> inference, `nf4` -> bnb-nf4, `hf` -> transformers,
        `paged_adamw_8bit` -> paged-adamw-8bit); other fields only lower-case. A task word with two meanings
        (`train`, `finetune`) is refused with the choices."""
        if isinstance(v, str):
            low = v.strip().lower()
            if info.field_name == "task" and low in AMBIGUOUS_TASKS:
                read_task(v)   # raises the refusal every door gives (a GpuplanError passes through pydantic)
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
        # Names checked against the catalog belong to validation too, so that every way of making a Workload
        # (parse_workload, the REST API's request body, model_validate) refuses the same regions and clouds.
        # (A GpuplanError is not a ValueError: pydantic lets it through unchanged, hint and field included.)
        _check_clouds_and_regions(self)
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


def read_task(word: str) -> str:
    """A task name as people type it (any case, an alias) -> the task; an unknown or ambiguous word is a
    GpuplanError that lists the choices. `quick` and the wizard read their task with this."""
    from typing import get_args

    low = str(word).strip().lower()
    low = TASK_ALIASES.get(low, low)
    if low in get_args(Task):
        return low
    message = (_("{task!r} names more than one task.") if low in AMBIGUOUS_TASKS else _("Unknown task {task!r}."))
    raise GpuplanError(message.format(task=str(word).strip()),
                       hint=_("Choose one: {choices}.").format(choices=_(TASK_CHOICES)), field="task")


_ORIGINS = (N_("workload"), N_("The request body"))


def parse_workload(data: Any, origin: str = "workload") -> Workload:
    """Validate a mapping (from YAML/JSON/Python/REST) into a Workload, or raise GpuplanError."""
    origin = _(origin)
    if isinstance(data, Workload):
        return data
    if isinstance(data, BadLine):
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
        raise friendly_error(exc, Workload) from None
    except (TypeError, ValueError, RecursionError) as exc:  # pragma: no cover - defensive
        raise GpuplanError(_("Invalid workload: {exc}.").format(exc=exc), hint=_("See `gpuplan schema`.")) from None
    return w


def _check_clouds_and_regions(w: Workload) -> None:
    """constraints.clouds and constraints.regions must name known clouds and regions (did-you-mean)."""
    cons = w.constraints
    if cons is None or not (cons.clouds or cons.regions):
        return
    from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD  # loaded on first use
    from gpuplan.catalog.hardware.regions import check_clouds, check_regions

    try:
        check_clouds(cons.clouds)
    except GpuplanError as exc:
        raise GpuplanError(exc.message, hint=exc.hint, field="constraints.clouds") from None
    # no clouds chosen means the default cloud's catalog (recommend searches Alibaba): its regions only
    check_regions(cons.regions, cons.clouds or [DEFAULT_CLOUD])


def workload_json_schema() -> dict[str, Any]:
    """The JSON Schema of the workload contract (for `gpuplan schema`)."""
    return Workload.model_json_schema()
