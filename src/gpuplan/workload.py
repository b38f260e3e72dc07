"""The workload contract: one record for every entry point (CLI, Python, REST).

The schema is the one in docs/workload.md (and ../shared/docs/architecture.md). Parsing is
strict: unknown keys are errors with a did-you-mean, values outside their range are errors, and
every error reaches the user as one :class:`~gpuplan.errors.GpuplanError` with a hint.

Unset fields stay ``None`` in the parsed record so that ``recommend`` can tell "free to search"
from "fixed by the user"; :func:`gpuplan.workload_defaults.resolve_defaults` fills the documented
defaults and returns the list of assumptions it made, which every result reports. The names a field
takes and the sub-records (lora, parallel, dataset, ...) are gpuplan.workload_parts (re-exported here:
this module stays the contract's import path). Reading files is gpuplan.files.workload_files, loading
with flags gpuplan.workload_loading, error sentences gpuplan.workload_errors.
"""


# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when the models are built (a cold `estimate` builds them).
from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _
from gpuplan.files.safeio import check_nesting
from gpuplan.workload_errors import TASK_CHOICES, friendly_error
from gpuplan.files.workload_files import BadLine
from gpuplan.workload_parts import (
    AMBIGUOUS_TASKS,
    FRAMEWORK_ALIASES,
    MAX_TOKENS,
    OPTIMIZER_ALIASES,
    QLORA_BASES,
    QUANT_ALIASES,
    TASK_ALIASES,
    Billing,
    Constraints,
    DatasetSpec,
    Framework,
    FsdpMode,
    HardwareSpec,
    InputSpec,
    KvDtype,
    LoraSpec,
    Objective,
    Offload,
    Optimizer,
    ParallelSpec,
    PipelineSchedule,
    Precision,
    Quantization,
    ServingSpec,
    Task,
    _Strict,
)

# The contract's public names, those defined here and those of gpuplan.workload_parts it re-exports.
__all__ = [
    "AMBIGUOUS_TASKS", "FRAMEWORK_ALIASES", "MAX_TOKENS", "OPTIMIZER_ALIASES", "QLORA_BASES", "QUANT_ALIASES",
    "TASK_ALIASES", "Billing", "Constraints", "DatasetSpec", "Framework", "FsdpMode", "HardwareSpec", "InputSpec",
    "KvDtype", "LoraSpec", "ModelName", "ModelRef", "Objective", "Offload", "Optimizer", "ParallelSpec",
    "PipelineSchedule", "Precision", "Quantization", "ServingSpec", "Task", "Workload", "parse_workload",
    "read_task", "workload_json_schema",
]


# A name (id, alias, ModelScope id, config.json path) or an inline config mapping; never empty.
ModelName = Annotated[str, Field(min_length=1, max_length=500)]
ModelRef = Union[ModelName, dict[str, Any]]


# Per field: the other names users and frameworks give the same value.
_NAME_ALIASES: dict[str, dict[str, str]] = {"task": TASK_ALIASES, "quantization": QUANT_ALIASES,
                                            "framework": FRAMEWORK_ALIASES, "optimizer": OPTIMIZER_ALIASES}


# A service's traffic and latency targets (ServingSpec): what a batch job (a dataset run once) has no use for.
# serving.max_num_seqs, the engine's batch limit as launched, applies to an offline job's engine too.
SERVING_TRAFFIC_KEYS = ("requests_per_s", "peak_requests_per_s", "requests_per_day", "peak_hours_per_day", "ttft_ms",
                        "tpot_ms", "target_utilization")


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
                                          description="version of the framework when it changes the estimate (transformers "
                                          "< 4.45 keeps the logits of every prompt position in generate; LMDeploy "
                                          "< 0.2 sizes its KV blocks by the sessions; vLLM / SGLang releases change "
                                          "defaults); unset = current")
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
    max_output_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS, description=(
        "inference: the most tokens one request may generate (the engine's max_tokens). Above output_tokens, "
        "outputs vary in length: exponential with mean output_tokens, cut here (a job waits for its longest); "
        "unset = every request generates output_tokens"))
    input: InputSpec | None = None
    grad_checkpointing: Union[bool, Literal["selective", "per-op"], None] = None
    flash_attention: bool | None = None
    attention_kernel: Literal["fa2", "fa3", "cudnn"] | None = Field(None, description=(
        "the fused attention kernel the stack runs: fa2 (FlashAttention-2), fa3 (FlashAttention-3: Hopper only, "
        "e.g. flash_attn_3, xDiT / FastVideo / prime-rl builds), cudnn (cuDNN SDPA: PyTorch's sm90 default once its "
        "bundled cuDNN passes 9.15). On an H100 / H800 / H200 fa3 and cudnn run attention at the GEMMs' rate, fa2 at "
        "about half (data/efficiency.yaml fa2_on_hopper); unset = the framework's usual kernel"))
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
    tf32: bool | None = Field(None, description="precision fp32: matmuls on the TF32 tensor cores of a compute-"
                              "capability-8.0+ GPU (torch.backends.cuda.matmul.allow_tf32 = True, "
                              "torch.set_float32_matmul_precision('high')); unset = true, as the gpuplan bundle's "
                              "scripts run fp32; false = PyTorch's default since 1.12: matmuls on the FP32 cores "
                              "(8x slower on an A100), cuDNN convolutions still on TF32")
    compile: bool | None = Field(None, description="torch.compile of the model and loss (torchtune compile: true; "
                                 "HF torch_compile); unset = false")
    fused_loss: bool | None = Field(None, description="training: the loss is the chunked fused linear cross-entropy of "
                                    "the gpuplan bundle's train.py (--loss chunked: 512 tokens' logits at a time, the "
                                    "[tokens x vocab] logits never exist); unset = false in estimate; recommend sets it "
                                    "per plan: on where the bundle launches train.py (DDP, FSDP, DeepSpeed), off under "
                                    "Megatron; false keeps the model's own loss in train.py too")
    head: Literal["lm", "classifier"] | None = Field(None, description=(
        "training: the output head. lm = a vocabulary projection at every position (causal or masked language "
        "modelling: the [tokens x vocab] logits and their loss); classifier = a task head of a few outputs (sequence "
        "or token classification, QA spans, a reward model): no vocabulary logits. Unset = lm, except an "
        "encoder-only model fine-tuned (task full, lora, qlora): classifier"))
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
                     "none": False, "off": False, "selective": "selective",
                     # torchtitan's per-op selective checkpointing (activation_checkpoint mode selective,
                     # selective_ac_option "op"): estimate/memory/common.per_op_saved_bytes_per_token_layer
                     "per-op": "per-op", "per_op": "per-op", "op": "per-op", "selective-op": "per-op",
                     "selective_op": "per-op"}
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
        if self.attention_kernel is not None and self.flash_attention is False:
            raise ValueError(_("attention_kernel {kernel!r} names a fused attention kernel, and flash_attention false "
                               "says the stack runs none: drop one of them").format(kernel=self.attention_kernel))
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
        if self.max_output_tokens is not None and self.output_tokens is not None \
                and self.max_output_tokens < self.output_tokens:
            raise ValueError(_("max_output_tokens ({cap}) is below output_tokens ({mean}): output_tokens is the mean "
                               "length, max_output_tokens the longest a request may generate").format(
                cap=self.max_output_tokens, mean=self.output_tokens))
        if self.head is not None and not self.is_training:
            raise ValueError(_("head says which output layer a training run trains; an inference workload trains "
                               "none: set task to pretrain, full, lora or qlora, or drop head"))
        if self.parallel is not None and self.parallel.ep_dispatcher is not None and not self.is_training:
            raise ValueError(_("parallel.ep_dispatcher times a training run's MoE token exchange; a serving engine "
                               "picks its own: set task to pretrain, full, lora or qlora, or drop it"))
        if self.input is not None and self.input.image_tokens is not None:
            if self.is_training:
                raise ValueError(_("input.image_tokens times a served vision-language model's vision tower; training "
                                   "one with images is not modelled: drop it (the images' tokens count in seq_len)"))
            if self.prompt_tokens is not None and self.input.image_tokens > self.prompt_tokens:
                raise ValueError(_("input.image_tokens ({image}) are part of prompt_tokens ({prompt}): the prompt holds "
                                   "the text and the images' tokens, so it cannot be shorter").format(
                    image=self.input.image_tokens, prompt=self.prompt_tokens))
        if self.max_output_tokens is not None and self.is_training:
            raise ValueError(_("max_output_tokens applies to inference: set task to inference, or drop it"))
        if self.max_output_tokens is not None and self.output_tokens is None:
            raise ValueError(_("max_output_tokens needs output_tokens, the mean length of an output (the default, 512, "
                               "could lie above the cap): set both"))
        if self.precision == "fp32" and self.quantization not in (None, "none"):
            pass  # allowed: fp32 compute with quantized storage is unusual but legal
        traffic = [k for k in SERVING_TRAFFIC_KEYS if getattr(self.serving, k, None) is not None] if self.serving else []
        if self.dataset is not None and traffic and not self.is_training:
            raise ValueError(_("dataset makes this inference workload a batch job (run once over its items) and "
                               "serving.{key} a service (up for months): set one of them (a job's speed is its "
                               "deadline: constraints.deadline_hours)").format(key=traffic[0]))
        if self.tf32 is not None and self.precision != "fp32":
            raise ValueError(_("tf32 says where fp32 matmuls run, so it needs precision fp32, not {precision}")
                             .format(precision=self.precision or _("unset (bf16)")))
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
