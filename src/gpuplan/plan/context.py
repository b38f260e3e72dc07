"""What one recommendation works from: the resolved workload, the model, prices, regions and billing
modes in play (``PlanContext``), and the small facts read from them (request rate, batch job items,
checkpoint and model bytes). Shared by the costing, checks and explanations of plan drafts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from gpuplan.catalog.hardware.instances import InstanceType
from gpuplan.i18n import N_
from gpuplan.plan.money import cost as costm
from gpuplan.plan.money import fixed_costs as fixedm
from gpuplan.plan.search.candidates import is_llm
from gpuplan.plan.advice.storage import checkpoint_bytes, data_read_bytes_s, shared_data_gib, shared_fs, \
    shared_need_mb_s, shared_nodes
from gpuplan.units import GIB, HOUR_S
from gpuplan.workload import Workload


@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class PlanContext:
    """What one recommend run shares across its plans."""

    w: Workload
    model: Any
    task: str
    training: bool
    book: costm.PriceBook
    regions: list[str]
    billings: tuple[str, ...]
    max_gpus: int | None
    spot: costm.SpotModel
    today: dt.date | None
    insts: list[InstanceType]
    fixed: fixedm.FixedCosts = field(default_factory=fixedm.load_fixed_costs)
    framework: str | None = None     # named by the workload (Fixed.framework): its launcher wins

    @property
    def llm(self) -> bool:
        return bool(is_llm(self.model))

    @property
    def job(self) -> bool:
        """An inference workload with a dataset is a batch job (time, total cost, cost per item), not a service."""
        return not self.training and job_items(self) is not None

    @property
    def service(self) -> bool:
        """An online service (replicas up for months), not a training or batch job."""
        return not self.training and not self.job

    def dataset_tokens(self) -> float | None:
        ds = self.w.dataset
        return ds.total_tokens(self.w.seq_len or 2048) if ds else None

    def dataset_samples(self) -> float | None:
        ds = self.w.dataset
        if ds and ds.samples:
            return ds.samples * ds.epochs
        return None

    def request_rate(self) -> float | None:
        s = self.w.serving
        if not s:
            return None
        if s.peak_requests_per_s:
            return s.peak_requests_per_s
        if s.requests_per_s:
            return s.requests_per_s
        if s.requests_per_day:
            avg = s.requests_per_day / 86400.0
            return avg * (24.0 / s.peak_hours_per_day) if s.peak_hours_per_day else avg
        return None

    def family(self, instance_type: str) -> str:
        return next((i.family for i in self.insts if i.instance_type == instance_type), instance_type)


def job_items(ctx: PlanContext) -> tuple[float, str] | None:
    """(items to process, unit) of a batch inference job, or None (a service)."""
    ds = ctx.w.dataset
    if ds is None:
        return None
    if ds.audio_hours:
        clip = (ctx.w.input.audio_seconds if ctx.w.input and ctx.w.input.audio_seconds else None) or 30.0
        return ds.audio_hours * HOUR_S / clip * ds.epochs, "clip"
    unit = item_unit(ctx)
    if not ds.items and not ds.samples:
        unit = "request"       # only an LLM's dataset.tokens counts requests
    per = ((ctx.w.prompt_tokens or 0) + (ctx.w.output_tokens or 0)) if ctx.llm else 0
    n = ds.job_items(per or None)
    return (n, unit) if n is not None else None


def item_unit(ctx: PlanContext) -> str:
    """The item a non-LLM workload processes or serves: image, video, clip or request (serving.traffic.priced_unit)."""
    from gpuplan.plan.serving.traffic import priced_unit

    return priced_unit(ctx.model, False, None)


ITEM_UNITS = {"image": N_("images"), "video": N_("videos"), "clip": N_("clips"), "request": N_("requests")}


def target_util(ctx: PlanContext) -> float:
    from gpuplan.plan.serving.queueing import DEFAULT_TARGET_UTILIZATION

    s = ctx.w.serving
    return s.target_utilization if s and s.target_utilization else DEFAULT_TARGET_UTILIZATION


def ckpt_bytes(ctx: PlanContext, optimizer: str) -> float:
    from gpuplan.estimate.memory import lora_param_count

    params = float(ctx.model.params_total)
    trainable = params
    if ctx.task in ("lora", "qlora") and ctx.llm:
        lo = ctx.w.lora
        trainable, _unused = lora_param_count(ctx.model, lo.targets if lo else "all-linear", lo.rank if lo else 8)
    return checkpoint_bytes(params, trainable, ctx.task, optimizer or "adamw")


def final_export_bytes(ctx: PlanContext, weights_bytes: float) -> float:
    """The trained model the job writes at the end (train.py <output_dir>/final): the 16-bit weights for full
    fine-tuning and pre-training, the 16-bit adapter for LoRA/QLoRA."""
    if not ctx.training:
        return 0.0
    if ctx.task in ("lora", "qlora") and ctx.llm:
        from gpuplan.estimate.memory import lora_param_count

        lo = ctx.w.lora
        trainable, _unused = lora_param_count(ctx.model, lo.targets if lo else "all-linear", lo.rank if lo else 8)
        return float(trainable) * 2.0
    return weights_bytes


def stated_dataset_bytes(ctx: PlanContext) -> float | None:
    """The dataset's bytes on disk: its stated size, else an LLM dataset's tokens at 4 bytes each."""
    ds = ctx.w.dataset
    if ds and ds.size_gib:
        return ds.size_gib * GIB
    if ds and ctx.llm:
        toks = ds.tokens or ((ds.samples or 0) * (ds.tokens_per_sample or ctx.w.seq_len or 2048))
        return toks * 4.0 if toks else None
    return None


def training_shared_fs(ctx: PlanContext, nodes: int, perf: Mapping[str, Any], optimizer: str,
                       weights_bytes: float) -> dict | None:
    """The shared file system a multi-node training run gets (plan/advice/storage.py shared_fs), from the inputs
    the storage advice reads: the nodes' data reads, the checkpoint, and what the run keeps there. One function
    for the plan's checkpoint write time (plan/money/costing.py) and its storage advice (plan/explain.py)."""
    if not ctx.training or nodes < shared_nodes():
        return None
    ds = ctx.w.dataset
    read = data_read_bytes_s(llm=ctx.llm, tokens_per_s=perf.get("tokens_per_s"),
                             samples_per_s=perf.get("samples_per_s"), bytes_per_sample=ds.bytes_per_sample if ds else None)
    ck = ckpt_bytes(ctx, optimizer)
    data = shared_data_gib(stated_dataset_bytes(ctx) or 0.0, weights_bytes, ck,
                           final_export_bytes(ctx, weights_bytes))
    return shared_fs(shared_need_mb_s(read, nodes, ck, True), data)


def node_weights_bytes(ctx: PlanContext, estimate_weights_bytes: float, tp: int, pp: int) -> float:
    """The weights each node downloads (the published checkpoint, or the served pre-quantized one), the number the
    plan's download time and the bundle's fetch-model.sh use (plan/money/transfer.py); an inline model without a
    parameter count falls back to the estimate's weights across its model-parallel group."""
    return model_bytes(ctx) or estimate_weights_bytes * max(1, (tp or 1) * (pp or 1))


def model_bytes(ctx: PlanContext) -> float:
    """Bytes of the model checkpoint each node downloads (its published format, or the pre-quantized size)."""
    from gpuplan.plan.money.transfer import download_bytes

    return download_bytes(getattr(ctx.model, "params_total", 0.0), ctx.w.quantization, ctx.training, ctx.model) or 0.0
