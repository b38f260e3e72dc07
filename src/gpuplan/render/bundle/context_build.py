"""Everything the bundle templates need (:class:`gpuplan.render.bundle.context.Ctx`), gathered once from (plan,
workload, estimate) and checked: :func:`build_context`.

User strings are checked here (one line, no control characters; identifiers match a strict
pattern; command-line arguments do not start with '-') and escaped later by the template
filters in :mod:`gpuplan.render.bundle.safe`. Numbers come from the estimate (the layout it
used: micro-batch, accumulation, ZeRO stage, offload, TP, engine memory fraction) and from the
plan (instance type and count, billing, region, storage and network advice).
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.memory.common import adapter_param_bytes
from gpuplan.estimate.memory.run import kbit_upcast
from gpuplan.estimate.memory.serve import engine_memory_fraction
from gpuplan.i18n import _
from gpuplan.plan.record import high
from gpuplan.plan.search.candidates import LAUNCHERS, launcher_for, launcher_packed
from gpuplan.render.bundle.node import nccl
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.context_serving import finite_number, runs_embed_script, serving_fields
from gpuplan.render.bundle.node.environment import node_environment, stack_for
from gpuplan.render.bundle.context_model import is_video_model, local_folder, template_for, train_model
from gpuplan.render.bundle.node.model_sources import needs_remote_code
from gpuplan.render.bundle.safe import check_argument, check_id, check_text, slugify
from gpuplan.units import HOURS_PER_MONTH

# Minutes between checkpoints: spot instances are released 5 minutes after the interruption
# notice (https://www.alibabacloud.com/help/en/ecs/user-guide/what-is-a-spot-instance), so a spot
# job loses at most this much work per interruption; on-demand jobs checkpoint less often. Read only for a plan.json
# without plan.checkpoint_saves (written before the plan counted its saves).
CHECKPOINT_MINUTES = {"spot": 30, "payg": 60, "subscription": 60}
# Checkpoints kept on disk when the plan's storage advice does not say (data/storage.yaml checkpoints_kept); ms-swift
# Megatron refuses a save_total_limit below 2 (swift/megatron/arguments/megatron_args.py, v4.5.2).
DEFAULT_CHECKPOINTS_KEPT = 2
MIN_CHECKPOINTS_KEPT = 2
BNB_OPTIMIZER_NAMES = ("adamw-8bit", "paged-adamw-8bit", "paged-adamw")


def _int(value: Any, default: int) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError):
        return default
    return out if out > 0 else default


def _model_ref(workload: Any, estimate: dict) -> str:
    """The model argument for launch commands: the workload's name or path; for an inline
    mapping, the id the catalog resolved (synthetic models get a placeholder the user replaces)."""
    ref = workload.model
    if isinstance(ref, str):
        from gpuplan.catalog.models import _looks_like_path

        return check_argument(local_folder(ref) if _looks_like_path(ref) else ref, "model")
    mid = (estimate.get("model") or {}).get("id")
    return check_argument(mid or "path/to/model", "model")


def _instance(instance_type: str):
    try:
        from gpuplan.catalog.hardware.instances import get_instance

        return get_instance(instance_type)
    except GpuplanError:
        return None


def _storage(plan: dict) -> tuple[str, int, str | None, float | None, int | None, bool]:
    """(ESSD level, data disk GiB, shared file system kind, its TiB and GiB, OSS advised) from the advice."""
    storage = plan.get("storage") or {}
    disk = storage.get("disk") or {}
    level = str(disk.get("level") or "PL1")
    if level not in ("PL0", "PL1", "PL2", "PL3"):
        raise GpuplanError(_("Unknown ESSD performance level {level} in the plan's storage advice.").format(
                               level=repr(level)), hint=_("Use PL0, PL1, PL2 or PL3."))
    size = _int(disk.get("size_gib"), 200)
    size = min(max(size, 20), 32768)  # alicloud data disk range for cloud_essd
    shared = storage.get("shared") or {}
    kind = shared.get("kind")
    if kind not in (None, "cpfs", "nas", "extreme_nas"):
        raise GpuplanError(_("Unknown shared file system {kind} in the plan's storage advice.").format(kind=repr(kind)),
                           hint=_("Use extreme_nas, cpfs or nas."))
    texts = " ".join(str(n) for n in (storage.get("notes") or []))
    oss = "OSS" in texts or any("oss" in str(s).lower() for s in (storage.get("sources") or []))
    tib = finite_number(shared.get("capacity_tib"))
    gib = finite_number(shared.get("capacity_gib")) or (tib * 1024 if tib else None)
    return level, size, kind, tib, (int(math.ceil(gib)) if gib else None), oss


def _rdma_interfaces(instance_type: str) -> int:
    """ERIs per node for the instance family's full eRDMA rate (families.yaml rdma_interfaces; 1 when unknown)."""
    from gpuplan.catalog.hardware.instances import load_families

    inst = _instance(instance_type)
    fam = load_families(inst.cloud).get(inst.family) if inst is not None else None
    return max(1, fam.rdma_interfaces) if fam is not None else 1


def _model_kind(workload: Any, estimate: dict) -> str:
    kind = (estimate.get("model") or {}).get("kind")
    if not kind:
        try:
            from gpuplan.catalog.models import resolve_model

            kind = resolve_model(workload.model).kind
        except Exception:  # noqa: BLE001 - an inline or unknown model: treat it as an LLM
            kind = None
    return str(kind or "decoder")


def build_context(plan: dict, workload: Any, estimate: dict, *, lang: str = "en") -> Ctx:
    """Check and gather the bundle's inputs; every problem is one GpuplanError with a hint."""
    estimate = estimate or {}
    if lang not in ("en", "zh"):
        raise GpuplanError(_("Unknown language {lang}.").format(lang=repr(lang)), hint=_("Use en or zh."))
    if not isinstance(plan, dict) or not plan.get("instance_type"):
        raise GpuplanError(_("The plan has no instance_type."), hint=_("Pass one plan from `gpuplan recommend --json`."))
    name = check_text(workload.name or "", "job name", max_len=100)
    task = workload.task or "inference"
    training = task != "inference"
    if training:
        model, smoke_type = train_model(workload, (estimate.get("model") or {}).get("arch"))
    else:
        model, smoke_type = _model_ref(workload, estimate), "llama"
    instance_type = check_id(plan["instance_type"], "instance type")
    inst = _instance(instance_type)
    region = check_id(plan.get("region") or "cn-shanghai", "region")
    billing = str(plan.get("billing") or "payg")
    if billing not in ("payg", "spot", "subscription"):
        raise GpuplanError(_("Unknown billing mode {billing} in the plan.").format(billing=repr(billing)),
                           hint=_("Use payg, spot or subscription."))
    currency = check_id(plan.get("currency") or "CNY", "currency")
    hw = estimate.get("hardware") or {}
    nodes = _int(plan.get("instance_count") or hw.get("nodes"), 1)
    gpus_total = _int(plan.get("gpus_total") or hw.get("total_gpus"), nodes)
    gpus_per_node = _int(hw.get("gpus_per_node") or (inst.gpus if inst else 0) or gpus_total // nodes, 1)
    gpu = check_id(plan.get("gpu") or hw.get("gpu") or (inst.gpu if inst else "GPU"), "GPU id")
    network = plan.get("network") or {}
    rdma = network.get("rdma") or hw.get("rdma") or (inst.rdma if inst else None) or None
    if rdma is not None:
        rdma = check_id(rdma, "RDMA kind")
    interconnect = str(hw.get("interconnect") or (inst.interconnect if inst else "") or "pcie")
    par = estimate.get("parallel") or {}
    mem = estimate.get("memory") or {}
    perf = estimate.get("performance") or {}
    tp, pp = _int(par.get("tp"), 1), _int(par.get("pp"), 1)
    dp = _int(par.get("dp"), max(1, gpus_total // (tp * pp)))
    zero = int(par.get("zero") or 0)
    fsdp = str(par.get("fsdp") or "none")
    offload = str(par.get("offload") or "none")
    if zero not in (0, 1, 2, 3) or offload not in ("none", "cpu", "nvme") or \
            fsdp not in ("none", "full_shard", "shard_grad_op", "hybrid_shard"):
        raise GpuplanError(_("The estimate's parallel layout has an unknown ZeRO stage, offload or FSDP mode."),
                           hint=_("Pass Estimate.to_dict() of the plan's layout."))
    micro_batch = _int(par.get("micro_batch") or workload.batch_size, 1)
    grad_accum = _int(par.get("gradient_accumulation") or workload.gradient_accumulation, 1)
    checkpointing = str(par.get("checkpointing") or "none") != "none" if "checkpointing" in par \
        else bool(workload.grad_checkpointing)
    prompt = int(workload.prompt_tokens or 0)
    output = int(workload.output_tokens or 0)
    capacity = finite_number(mem.get("capacity_bytes"))
    reserved = finite_number(mem.get("engine_reserved_bytes"))
    # the engine's memory fraction: its default reservation, or more where the plan needs more per GPU (the figure
    # the estimate's note prints: "needs gpu_memory_utilization 0.94"), so the KV pool holds the planned batch
    util = engine_memory_fraction(max(finite_number(mem.get("per_gpu_bytes")) or 0.0, reserved), capacity,
                                  reserved / capacity) if reserved and capacity else 0.9
    util = min(max(util, 0.5), 0.99)
    lora = workload.lora
    targets = lora.targets if lora else "all-linear"
    targets_text = ",".join(targets) if isinstance(targets, list) else str(targets)
    targets_text = check_text(targets_text, "LoRA targets")
    step_time_s = finite_number(perf.get("step_time_s"))
    # the save interval the plan's time counts (plan.checkpoint_saves: Young's on spot, an hour otherwise); SAVE_STEPS is
    # that interval in steps, so the run writes as many checkpoints as the plan's time and cost count
    every = finite_number((plan.get("checkpoint_saves") or {}).get("interval_s"))
    minutes = max(1, round(every / 60)) if every else CHECKPOINT_MINUTES[billing]
    save_steps = max(1, int((every or minutes * 60) / step_time_s)) if step_time_s else 500
    level, disk_gib, shared_kind, shared_tib, shared_gib, oss = _storage(plan)
    price = finite_number(plan.get("instance_price_per_hour"))
    limit = finite_number(plan.get("spot_price_limit")) or price
    time_s = finite_number(plan.get("time_s")) or finite_number(perf.get("total_time_s"))
    months = max(1, math.ceil(time_s / 3600 / HOURS_PER_MONTH)) if (time_s and training) else 1
    framework = str(workload.framework or "auto")
    job_nodes = nodes if training else min(nodes, max(1, math.ceil(tp * pp / gpus_per_node)))
    replicas = _int(plan.get("replicas"), max(1, nodes // job_nodes))
    cp = _int(par.get("cp"), 1) if training else 1
    launcher = _launcher(plan, tp, pp, zero, fsdp, offload, cp) if training else None
    granularity = str(par.get("checkpointing") or "none") if "checkpointing" in par else \
        ("full" if workload.grad_checkpointing is True else str(workload.grad_checkpointing or "none"))
    deepspeed = launcher == "deepspeed"

    serving = serving_fields(plan, workload, estimate, gpu, region, training)
    model_kind = _model_kind(workload, estimate)
    video = model_kind == "diffusion" and is_video_model(workload.model)
    serving["embed_job"] = runs_embed_script(model_kind, training, framework, serving["online"])
    optimizer = str(workload.optimizer or "adamw")
    env = node_environment(region=region, slug=slugify(name or (model.rsplit("/", 1)[-1])),
                           stack=stack_for(training=training, launcher=launcher, engine=serving["engine"],
                                           model_kind=model_kind, embed_job=serving["embed_job"]),
                           deepspeed=deepspeed, bitsandbytes=task == "qlora" or optimizer in BNB_OPTIMIZER_NAMES,
                           linear_attention=training and bool((estimate.get("model") or {}).get(
                               "linear_attention_layers")),
                           online=serving["online"], video=video)
    serving["hub"] = env.weights_source
    kept = _int((plan.get("storage") or {}).get("checkpoints_kept"), DEFAULT_CHECKPOINTS_KEPT)
    return Ctx(
        name=name, slug=slugify(name or (model.rsplit("/", 1)[-1])), lang=lang, task=task, training=training,
        lora=task in ("lora", "qlora"), qlora=task == "qlora", framework=framework, model=model,
        precision=str(workload.precision or "bf16"), quantization=_weight_format(plan, workload),
        matmul_tf32=workload.tf32 is not False,
        kv_cache_dtype=str(_planned(plan, "kv_cache_dtype") or workload.kv_cache_dtype or "auto"), optimizer=optimizer,
        instance_type=instance_type, gpu=gpu, nodes=nodes, job_nodes=job_nodes, gpus_per_node=gpus_per_node, gpus_total=gpus_total,
        vcpus=inst.vcpus if inst else None, memory_gib=inst.memory_gib if inst else None,
        rdma=rdma, interconnect=interconnect, tp=tp, pp=pp, dp=dp, zero=zero, fsdp=fsdp, offload=offload,
        micro_batch=micro_batch, grad_accum=grad_accum, checkpointing=checkpointing,
        seq_len=int(workload.seq_len or 2048), prompt_tokens=prompt, output_tokens=output,
        max_model_len=max(prompt + max(output, int(workload.max_output_tokens or 0)), 1), max_num_seqs=_int(_planned(plan, "max_num_seqs"), 0) or _serving_batch(estimate, workload), gpu_mem_util=util,
        replicas=replicas,
        lora_rank=lora.rank if lora else 8, lora_alpha=lora.alpha if lora else 16.0,
        lora_dropout=lora.dropout if lora else 0.05, lora_targets=targets_text,
        lora_adapter_dtype="model" if adapter_param_bytes(framework, str(workload.precision or "bf16"),
                                                          lora.adapter_dtype if lora else None) == 2.0 else "float32",
        # the estimate's parallel.zero already folds FSDP in (system.FSDP_TO_ZERO): the estimator's own test
        kbit_upcast=kbit_upcast(task, _weight_format(plan, workload), framework, sharded=zero >= 3),
        billing=billing, region=region, currency=currency, instance_price_per_hour=price,
        spot_price_limit=round(limit, 3) if limit else None, subscription_months=months,
        data_disk_level=level, data_disk_gib=disk_gib, shared_kind=shared_kind, shared_capacity_tib=shared_tib,
        shared_capacity_gib=shared_gib,
        oss=oss, step_time_s=step_time_s, checkpoint_minutes=minutes, save_steps=save_steps, deepspeed=deepspeed,
        nccl_vars=nccl.nccl_vars(rdma, network.get("nccl_env") or {}, network.get("sources") or [],
                                 multi_node=job_nodes > 1),
        llamafactory_template=template_for(model), launcher=launcher, rdma_interfaces=_rdma_interfaces(instance_type),
        vpp=_int(par.get("virtual_stages") or par.get("virtual_pp") or par.get("vpp"), 1), sp=bool(par.get("sp")), cp=cp,
        smoke_model_type=smoke_type,
        model_kind=model_kind, video=video, job_time_s=time_s if training or serving["batch_job"] else None,
        job_time_high_s=high(plan.get("intervals"), "time_s", None) if training or serving["batch_job"] else None,
        sla_ttft_s=_sla(workload, "ttft_ms"), sla_tpot_s=_sla(workload, "tpot_ms"),
        ckpt_granularity=granularity if granularity in ("none", "selective", "full") else "full",
        loss="chunked" if training and mem.get("loss") == "chunked" and launcher != "megatron" else "model",
        train_tokens=workload.dataset.total_tokens(int(workload.seq_len or 2048)) if training and workload.dataset
        else None,
        packed=launcher_packed(par.get("packed") if "packed" in par else workload.packed),
        dataset=workload.dataset if training else None,
        model_input={k: v for k, v in (workload.input.model_dump() if getattr(workload, "input", None) else {}).items()
                     if isinstance(v, (int, float, str)) and not isinstance(v, bool)},   # str: input.offload
        env=env, trust_remote_code=needs_remote_code(model, (estimate.get("model") or {}).get("arch")),
        checkpoints_kept=max(MIN_CHECKPOINTS_KEPT, kept) if training else 0,
        epochs=float(workload.dataset.epochs or 1) if training and workload.dataset else 1.0,
        **serving,
    )



def _launcher(plan: dict, tp: int, pp: int, zero: int, fsdp: str, offload: str, cp: int) -> str:
    """The plan's launcher (the recommender's, which honours a framework the workload names); a plan
    without one (hand-written, older JSON) gets the layout's."""
    named = str((plan.get("parallel") or {}).get("launcher") or "")
    return named if named in LAUNCHERS else launcher_for(tp, pp, zero, fsdp, offload, cp)


# serving.weight_format values (contract) -> the workload's quantization names the scripts understand
WEIGHT_FORMATS = {"fp8": "fp8", "int8": "int8", "awq": "awq", "gptq-int4": "gptq-int4", "gptq-int8": "gptq-int8"}


def _weight_format(plan: dict, workload: Any) -> str:
    """The workload's quantization, or the weight format the serving search chose (FP8 weights) when the
    workload left it at none."""
    quant = str(workload.quantization or "none")
    if quant == "mxfp4":   # the checkpoint's own format (gpt-oss): the engine reads it from its config.json
        return "none"
    chosen = WEIGHT_FORMATS.get(str((plan.get("serving") or {}).get("weight_format") or ""))
    return chosen if quant == "none" and chosen else quant


def _planned(plan: dict, key: str) -> Any:
    """A serving setting the plan chose (plan.parallel, else plan.serving), or None (then the workload's)."""
    return (plan.get("parallel") or {}).get(key) or (plan.get("serving") or {}).get(key)


def _sla(workload: Any, key: str) -> float | None:
    value = finite_number(getattr(getattr(workload, "serving", None), key, None))
    return value / 1000.0 if value and value > 0 else None


def _serving_batch(estimate: dict | None, workload: Any) -> int:
    """Concurrent sequences for the engine: the batch the estimate found best within the SLA (at least
    the workload's own batch_size)."""
    perf = (estimate or {}).get("performance") or {}
    return max(_int(perf.get("serving_batch"), 1), _int(workload.batch_size, 1))
