"""The parts of the workload contract (:mod:`gpuplan.workload`): the names a field takes (tasks, precisions,
quantizations, frameworks, optimizers... and the aliases each door reads), the strict base every model shares
(unknown keys refused, booleans refused where numbers belong), and the sub-records ``lora``, ``parallel``,
``dataset``, ``serving``, ``input``, ``hardware`` and ``constraints``. The top-level ``Workload``, its validators
and ``parse_workload`` are in gpuplan.workload, which re-exports every public name here.
"""


# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when the models are built (a cold `estimate` builds them).
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from gpuplan.catalog.hardware.gpu_inline import GpuInlineSpec
from gpuplan.i18n import _

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
Quantization = Literal["none", "int8", "int4", "gptq-int4", "gptq-int8", "awq", "fp8", "bnb-int8", "bnb-nf4", "mxfp4"]
QUANT_ALIASES = {"nf4": "bnb-nf4", "gptq": "gptq-int4", "awq-int4": "awq", "int4-awq": "awq", "w4a16": "int4",
                 "w8a16": "int8", "bnb-4bit": "bnb-nf4", "bnb-8bit": "bnb-int8", "llm.int8": "bnb-int8"}
# Weight-only 4-bit and 8-bit bases a QLoRA-style adapter trains on (bitsandbytes, GPTQ, AWQ, generic).
QLORA_BASES = (None, "bnb-nf4", "bnb-int8", "int4", "int8", "gptq-int4", "gptq-int8", "awq")
KvDtype = Literal["auto", "fp16", "bf16", "fp8", "int8"]
Framework = Literal["auto", "transformers", "vllm", "sglang", "trtllm", "deepspeed", "megatron", "nemo", "fsdp",
                    "torchtune", "llm-foundry", "llama-factory", "swift", "lmdeploy", "tgi", "torch-compile"]
Optimizer = Literal["adamw", "adamw-fused", "adamw-foreach", "adamw-8bit", "adamw-bf16", "sgd", "sgd-plain",
                    "adafactor", "paged-adamw", "paged-adamw-8bit"]
# Names the frameworks use for the same optimizers (HF TrainingArguments.optim, torchtune/bitsandbytes classes).
OPTIMIZER_ALIASES = {"adamw_torch": "adamw", "adamw_torch_fused": "adamw-fused", "adamw_8bit": "adamw-8bit",
                     "adamw_bnb_8bit": "adamw-8bit", "adamw8bit": "adamw-8bit", "8bit-adamw": "adamw-8bit",
                     "paged_adamw_8bit": "paged-adamw-8bit", "pagedadamw8bit": "paged-adamw-8bit",
                     "paged_adamw_32bit": "paged-adamw", "paged-adamw-32bit": "paged-adamw", "pagedadamw": "paged-adamw",
                     "paged_adamw": "paged-adamw",
                     # torch.optim.SGD's defaults (momentum 0: no state), as Hugging Face's optim="sgd" builds it
                     "sgd_plain": "sgd-plain", "sgd-nomomentum": "sgd-plain", "sgd_nomomentum": "sgd-plain"}
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
    adapter_dtype: Literal["float32", "model"] | None = Field(
        None, description="dtype of the adapter weights: float32 (PEFT's default since 0.12, autocast_adapter_dtype) "
                          "or model (the base model's 16-bit dtype: torchtune, PEFT before 0.12); unset = the stack's")


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
    loss_parallel: bool | None = Field(None, description="training with tp: the loss runs on the LM head's "
                                       "vocab-split logits (Megatron / NeMo vocab-parallel cross-entropy, torchtitan "
                                       "loss_parallel); false: the logits are gathered whole on every rank "
                                       "(transformers' tp_plan, a DTensor plan with output_layouts=Replicate()); "
                                       "unset = false for transformers and llama-factory, true otherwise")
    ep_dispatcher: Literal["alltoall", "deepep"] | None = Field(None, description=(
        "training with ep across nodes: how tokens reach their experts. alltoall = NCCL all-to-all, one copy of a "
        "token per expert it routes to (Megatron-Core's alltoall dispatcher); deepep = node-deduplicated dispatch, "
        "a token crosses to each remote node once and is forwarded to that node's experts over NVLink (DeepEP's "
        "normal kernels, Megatron-Core's flex dispatcher with the DeepEP or HybridEP backend). Unset = alltoall"))


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

    def job_items(self, tokens_per_request: float | None = None) -> float | None:
        """Items an inference job processes over all epochs: ``items``, else ``samples``, else (LLMs: pass the
        prompt + output tokens of one request) ``tokens`` / tokens per request; None when none is stated."""
        if self.items:
            return self.items * self.epochs
        if self.samples:
            return self.samples * self.epochs
        if self.tokens and tokens_per_request:
            return self.tokens * self.epochs / tokens_per_request
        return None

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
    max_num_seqs: int | None = Field(None, ge=1, le=65_536, description=(
        "the engine's batch limit as launched (vLLM --max-num-seqs, SGLang --max-running-requests); unset = as many "
        "sequences as the KV cache holds, what gpuplan's launch files set"))


class InputSpec(_Strict):
    image_size: int | None = Field(None, ge=8, le=16384)
    steps: int | None = Field(None, ge=1, le=10_000)
    audio_seconds: float | None = Field(None, gt=0, le=36_000)
    # speech (Whisper): tokens the decoder writes per 30 s window (its limit is 448); unset = 100, an English
    # speaker's rate (estimate/nonllm/speech.window_tokens). A benchmark that forces a count, or a language that
    # runs longer, states it here.
    tokens_per_window: int | None = Field(None, ge=1, le=448)
    # video diffusion: frames and resolution of each video (the pipeline's defaults when unset)
    frames: int | None = Field(None, ge=1, le=10_000)
    height: int | None = Field(None, ge=8, le=16384)
    width: int | None = Field(None, ge=8, le=16384)
    offload: Literal["none", "model", "sequential"] | None = Field(
        None, description="diffusers CPU offload: model = enable_model_cpu_offload (Wan --offload_model), "
                          "sequential = enable_sequential_cpu_offload; default none")
    image_tokens: int | None = Field(
        None, ge=1, le=1_000_000, description="vision-language models served: the tokens of prompt_tokens that a "
                                              "request's images become; the vision tower runs on them (its patches "
                                              "per token) before the language model's prefill")
    text_tokens: int | None = Field(
        None, ge=1, le=16384, description="joint-attention diffusion transformers (FLUX, SD3): the prompt's T5 "
                                          "tokens, which join the image tokens in every block (diffusers "
                                          "max_sequence_length; torchtitan max_t5_encoding_len); default the "
                                          "pipeline's: FLUX.1-dev 512, SD3 256")
    precomputed_conditioning: bool | None = Field(
        None, description="diffusion training: the prompts' text embeddings and the images' VAE latents are computed "
                          "before training (diffusers --cache_latents and precomputed embeddings), so the text "
                          "encoders and the VAE are not on the GPU during the steps; default false")


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
