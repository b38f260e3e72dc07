"""Training files: launch.sh (the plan's launcher, and `--smoke` for a CPU rehearsal), train.py,
requirements.txt, the sample dataset, ds_config.json, the LLaMA-Factory config and ms-swift script
for LoRA/QLoRA jobs, nccl.env and the checkpoint wrapper.

The launcher comes from the layout (:func:`gpuplan.plan.search.candidates.launcher_for`): DP, FSDP and
DeepSpeed ZeRO run the bundle's train.py under torchrun; TP/PP layouts run ms-swift's Megatron mode
(`megatron sft|pt`, Megatron-Core). Batch arithmetic comes from
:func:`gpuplan.render.bundle.training_layout.batch_layout` only.

DeepSpeed keys: https://www.deepspeed.ai/docs/config-json/ ; LLaMA-Factory arguments:
https://llamafactory.readthedocs.io/en/latest/advanced/arguments.html ; ms-swift 4.x flags:
swift/megatron/arguments/megatron_args.py and docs/source_en/Megatron-SWIFT/Command-line-parameters.md
(modelscope/ms-swift@3602360a5623).
"""

from __future__ import annotations

import json
from importlib import resources

import yaml

from gpuplan.i18n import N_, tr
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.environment import requirements_text
from gpuplan.render.bundle.templates import render
from gpuplan.render.bundle.node.nccl import nccl_env
from gpuplan.render.bundle.training_alt import dataset_info, sample_data
from gpuplan.render.bundle.training_layout import SMOKE_SEQ_LEN, SMOKE_STEPS, batch_layout, smoke_layout, train_iters
from gpuplan.render.bundle.node.weights import model_dir
from gpuplan.render.bundle.node.oss import node_role, oss_endpoint

QUANT_BITS = {"bnb-nf4": 4, "int4": 4, "gptq-int4": 4, "awq": 4, "bnb-int8": 8, "int8": 8, "gptq-int8": 8}
DATA_FILE = "data/train.jsonl"   # the one place for the user's data (every launcher reads it)

# ms-swift whose own argument classes parse the Megatron command line in the rehearsal (train.py
# check-megatron-args; ~/.cache/gpuplan/ms-swift-<version>): the version the Megatron stack pins.
MS_SWIFT_PARSER = "4.5.2"


# The optimizers train.py builds for the workload's `optimizer` (bitsandbytes classes:
# bitsandbytes-foundation/bitsandbytes bitsandbytes/optim/__init__.py; 8-bit states run on CPU from 0.50.0)
# and the Hugging Face TrainingArguments.optim names the LLaMA-Factory / ms-swift alternatives take
# (transformers src/transformers/training_args.py, OptimizerNames).
BNB_OPTIMIZERS = {"adamw-8bit": "AdamW8bit", "paged-adamw-8bit": "PagedAdamW8bit", "paged-adamw": "PagedAdamW"}
HF_OPTIM = {"adamw": "adamw_torch", "adamw-fused": "adamw_torch_fused", "adamw-foreach": "adamw_torch",
            "adamw-bf16": "adamw_torch", "adamw-8bit": "adamw_bnb_8bit", "paged-adamw-8bit": "paged_adamw_8bit",
            "paged-adamw": "paged_adamw_32bit", "sgd": "sgd", "sgd-plain": "sgd", "adafactor": "adafactor"}
# Hugging Face's optim="sgd" builds torch SGD without momentum; the workload's sgd has momentum 0.9 (the state the
# estimate counts), passed as optim_args (transformers trainer_optimizer._get_sgd reads momentum from it; a release
# that ignores it launches momentum-free SGD, which needs less memory than planned)
HF_OPTIM_ARGS = {"sgd": "momentum=0.9"}


def uses_bitsandbytes(c: Ctx) -> bool:
    return c.qlora or c.optimizer in BNB_OPTIMIZERS


def strategy(c: Ctx) -> str:
    """train.py --strategy for the launcher."""
    return {"torchrun": "ddp", "fsdp": "fsdp", "deepspeed": "deepspeed", "megatron": "tp_pp"}[c.launcher or "torchrun"]


def train_precision(c: Ctx) -> str:
    return {"bf16": "bf16", "fp16": "fp16", "fp8": "bf16"}.get(c.precision, "fp32")


def zero_stage(c: Ctx) -> int:
    """ZeRO stage for train.py: the plan's stage, or FSDP's analogue."""
    return {"full_shard": 3, "hybrid_shard": 3, "shard_grad_op": 2}.get(c.fsdp, c.zero)


def ds_config(c: Ctx) -> dict:
    """DeepSpeed config with the estimate's values; ``train_batch_size`` = micro x accumulation x DP
    (DeepSpeed checks that identity at start-up)."""
    b = batch_layout(c)
    cfg: dict = {
        "train_batch_size": b.global_batch,
        "train_micro_batch_size_per_gpu": b.micro,
        "gradient_accumulation_steps": b.accum,
        "gradient_clipping": 1.0,
        "steps_per_print": 100,
        "wall_clock_breakdown": False,
        "bf16": {"enabled": c.precision in ("bf16", "fp8")},
        "fp16": {"enabled": c.precision == "fp16"},
    }
    if c.precision == "fp16":
        cfg["fp16"].update({"loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000,
                            "hysteresis": 2, "min_loss_scale": 1})
    zero: dict = {"stage": c.zero, "overlap_comm": True, "contiguous_gradients": True,
                  "reduce_bucket_size": 500_000_000}
    if c.zero >= 2 or c.offload != "none":
        zero["allgather_bucket_size"] = 500_000_000
    if c.offload != "none":
        dev: dict = {"device": c.offload, "pin_memory": True}
        if c.offload == "nvme":
            dev["nvme_path"] = f"{c.data_dir}/deepspeed-offload"
        zero["offload_optimizer"] = dict(dev)
        if c.zero == 3:
            zero["offload_param"] = dict(dev)
    if c.zero == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    cfg["zero_optimization"] = zero
    if c.optimizer in BNB_OPTIMIZERS:
        # train.py passes the bitsandbytes optimizer as DeepSpeed's client optimizer; DeepSpeed keeps the
        # fp32 master partition and needs these keys for an optimizer it has not tested (and, with CPU
        # offload, to accept one other than its CPU Adam): deepspeed/runtime/engine.py, zero/offload_config.py.
        cfg["zero_allow_untested_optimizer"] = True
        if c.offload != "none":
            cfg["zero_force_ds_cpu_optimizer"] = False
    return cfg


def train_args(c: Ctx) -> list[str]:
    """train.py arguments fixed by the plan (launch.sh adds model, data, output dir and save steps)."""
    b = batch_layout(c)
    args = ["--task", c.task if c.task in ("pretrain", "full", "lora", "qlora") else "full",
            "--strategy", strategy(c), "--zero", str(zero_stage(c)),
            "--tp", str(c.tp), "--pp", str(c.pp),
            "--micro_batch", str(b.micro), "--grad_accum", str(b.accum), "--global_batch", str(b.global_batch),
            "--seq_len", str(c.seq_len), "--precision", train_precision(c),
            "--grad_ckpt", c.ckpt_granularity, "--optimizer", c.optimizer, "--loss", c.loss]
    if c.lora:
        args += ["--lora_rank", str(c.lora_rank), "--lora_alpha", f"{c.lora_alpha:g}",
                 "--lora_dropout", f"{c.lora_dropout:g}", "--lora_targets", c.lora_targets,
                 "--adapter_dtype", c.lora_adapter_dtype]
    if c.qlora:
        args += ["--quant_bits", str(QUANT_BITS.get(c.quantization, 4))]
        if not c.kbit_upcast:
            args += ["--kbit_upcast", "no"]   # the named stack keeps them 16-bit, as the plan sized
    return args


def megatron_args(c: Ctx) -> list[str]:
    """`megatron sft|pt` arguments (ms-swift 4.x names) with the plan's TP, PP, virtual stages and batch."""
    b = batch_layout(c)
    # --model comes at run time: the local copy fetch-model.sh made (launch.sh megatron_cmdline), never a hub id
    args = ["--tuner_type", "lora" if c.lora else "full",
            "--tensor_model_parallel_size", str(c.tp), "--pipeline_model_parallel_size", str(c.pp)]
    if c.vpp > 1:
        args += ["--virtual_pipeline_model_parallel_size", str(c.vpp)]
    if c.cp > 1:
        args += ["--context_parallel_size", str(c.cp)]
    if c.tp > 1 and c.sp:   # what the estimate counted (activation memory divided by TP)
        args += ["--sequence_parallel", "true"]
    args += ["--micro_batch_size", str(b.micro), "--global_batch_size", str(b.global_batch),
             "--use_distributed_optimizer", "true" if c.zero >= 1 else "false",
             "--max_length", str(c.seq_len), "--packing", "true" if c.packed else "false", "--torch_dtype", c.torch_dtype,
             *recompute_args(c), *length_args(c)]
    if c.lora:
        targets = "all-linear" if c.lora_targets in ("all-linear", "all") else c.lora_targets.replace(",", " ")
        args += ["--lora_rank", str(c.lora_rank), "--lora_alpha", str(round(c.lora_alpha)),   # an int in ms-swift
                 "--lora_dropout", f"{c.lora_dropout:g}", "--target_modules", *targets.split()]
    return args


def recompute_args(c: Ctx) -> list[str]:
    """ms-swift Megatron recomputation for the plan's checkpointing (its default is selective, core attention
    only): full = every layer recomputed (uniform, 1 layer per chunk, as ms-swift's Quick-start)."""
    if c.ckpt_granularity == "full":
        return ["--recompute_granularity", "full", "--recompute_method", "uniform", "--recompute_num_layers", "1"]
    return ["--recompute_granularity", c.ckpt_granularity]


def length_args(c: Ctx) -> list[str]:
    """The run length: iterations from the token budget, or the workload's epochs of the data when it has none."""
    iters = train_iters(c)
    return ["--train_iters", str(iters)] if iters else ["--num_train_epochs", f"{c.epochs:g}"]


def requirements(c: Ctx) -> str:
    """requirements.txt: the training stack's pins over the node image (data/environments.yaml); torch is the
    image's (pinned so pip keeps it). tests/bundle/test_requirements_resolve.py resolves it for the declared Python
    on Linux x86_64."""
    e = c.env
    assert e is not None
    header = [f"What the training image installs over {e.base_image.rsplit('/', 1)[-1]}",
              f"(Python {e.python}, CUDA {e.cuda}, torch {e.torch}: plan.json `environment`), from {e.pip_index}:",
              f"pip install -i {e.pip_index} -r requirements.txt   (the Dockerfile does this).",
              "torch is the image's: the pin below keeps it (pip installs no other torch)."]
    if c.launcher == "megatron":
        header += ["Megatron launcher: ms-swift Megatron mode with Megatron-Core and mcore-bridge; the image brings",
                   "transformer-engine and apex. Versions chosen to resolve together on Python " + e.python + " (ms-swift",
                   "4.5.2: peft<0.20, mcore-bridge>=1.6.2; mcore-bridge 1.6.2: transformers<5.15; megatron-core>=0.17",
                   "requires Python 3.12)."]
    else:
        header += ["train.py is rehearsed (./launch.sh --smoke) with these transformers/peft/DeepSpeed/bitsandbytes",
                   f"versions on CPU, Python {e.python}."]
    return requirements_text(e, header)


def llamafactory(c: Ctx) -> dict:
    """LLaMA-Factory SFT config for a LoRA/QLoRA job, reading data/train.jsonl (dataset "train")."""
    b = batch_layout(c)
    cfg: dict = {
        "model_name_or_path": model_dir(c),      # the local copy (fetch-model.sh, once, in the region)
        "trust_remote_code": c.trust_remote_code,
        "stage": "sft",
        "do_train": True,
        "finetuning_type": "lora",
        "lora_rank": c.lora_rank,
        "lora_alpha": c.lora_alpha,
        "lora_dropout": c.lora_dropout,
        "lora_target": "all" if c.lora_targets in ("all-linear", "all") else c.lora_targets,
    }
    if c.qlora:
        cfg["quantization_bit"] = QUANT_BITS.get(c.quantization, 4)
        cfg["quantization_method"] = "bitsandbytes"
    if c.lora_adapter_dtype == "model" and c.precision == "bf16" and not (c.deepspeed and c.zero >= 3):
        # LLaMA-Factory upcasts trainable parameters to float32 unless pure_bf16 (bf16 without AMP; refused with
        # ZeRO-3, where the alternative keeps float32 adapters): the 16-bit adapters the plan sized
        cfg["pure_bf16"] = True
    cfg.update({
        "dataset": "train",
        "dataset_dir": "data",
        "template": c.llamafactory_template,
        "cutoff_len": c.seq_len,
        "preprocessing_num_workers": 8,
        "output_dir": c.checkpoint_dir,
        "logging_steps": 10,
        "save_steps": c.save_steps,
        "save_total_limit": c.checkpoints_kept,
        "overwrite_output_dir": False,
        "per_device_train_batch_size": b.micro,
        "gradient_accumulation_steps": b.accum,
        "learning_rate": 1.0e-4,
        "num_train_epochs": float(c.epochs),
        **({"max_steps": train_iters(c)} if train_iters(c) else {}),   # the planned run, as launch.sh
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.1,
        "disable_gradient_checkpointing": not c.checkpointing,
        "optim": HF_OPTIM.get(c.optimizer, "adamw_torch"),
        **({"optim_args": HF_OPTIM_ARGS[c.optimizer]} if c.optimizer in HF_OPTIM_ARGS else {}),
        "bf16": c.precision in ("bf16", "fp8"),
        "fp16": c.precision == "fp16",
        **({"tf32": True} if c.tf32 else {}),   # the rate the estimate timed fp32 at (Ctx.tf32)
        "flash_attn": "auto",
    })
    if c.deepspeed:
        cfg["deepspeed"] = "ds_config.json"
    return cfg


def train_py() -> str:
    return resources.files("gpuplan.render").joinpath("templates/bundle/train.py").read_text(encoding="utf-8")


def smoke_modules(c: Ctx) -> list[str]:
    """The Python modules `./launch.sh --smoke` needs on the machine that runs it."""
    mods = ["torch", "transformers", "peft"]
    if c.launcher == "deepspeed":
        mods.append("deepspeed")
    if uses_bitsandbytes(c):
        mods.append("bitsandbytes")
    return mods


def smoke_pins(c: Ctx) -> list[str]:
    """What `./launch.sh --smoke` tells you to install: the node image's versions of the modules it needs (the
    training stack's pins for Megatron plans, whose rehearsal runs train.py)."""
    from gpuplan.render.bundle.node.environment import requirement_pins

    pins = dict(requirement_pins("training", deepspeed=c.launcher == "deepspeed", bitsandbytes=uses_bitsandbytes(c)))
    return [f"{m}=={pins[m]}" for m in smoke_modules(c) if m in pins]


def files(c: Ctx) -> dict[str, str]:
    """Training files by bundle path."""
    from gpuplan.render.bundle.node.environment import pip_install_args
    from gpuplan.render.bundle.safe import Safe
    from gpuplan.render.bundle.node.weights import fetch_model_script

    b = batch_layout(c)
    assert c.env is not None
    out = {
        "launch.sh": render("launch.sh.j2", c=c, b=b, s=smoke_layout(c), train_args=train_args(c), data_file=DATA_FILE,
                            steps=SMOKE_STEPS, smoke_seq=SMOKE_SEQ_LEN, ms_swift=MS_SWIFT_PARSER,
                            megatron_args=megatron_args(c) if c.launcher == "megatron" else [],
                            megatron_cmd="pt" if c.task == "pretrain" else "sft", steps_planned=train_iters(c),
                            model_dir=model_dir(c), env=c.env, smoke_modules=Safe(" ".join(smoke_modules(c))),
                            smoke_pins=Safe(" ".join(smoke_pins(c))), pip_args=Safe(pip_install_args(c.env))),
        "fetch-model.sh": fetch_model_script(c),
        "run-with-resume.sh": render("run-with-resume.sh.j2", c=c, endpoint=oss_endpoint(c.region), role=node_role(c)),
        "train.py": train_py(),
        "requirements.txt": requirements(c),
        DATA_FILE: sample_data(c),
    }
    if c.launcher == "deepspeed":
        out["ds_config.json"] = json.dumps(ds_config(c), indent=2) + "\n"
    if c.lora and c.launcher != "megatron":
        header = ("# LLaMA-Factory alternative for this LoRA job: `llamafactory-cli train llamafactory.yaml`.\n"
                  "# It reads data/train.jsonl (dataset \"train\" in data/dataset_info.json); check `template`.\n")
        out["llamafactory.yaml"] = header + yaml.safe_dump(llamafactory(c), sort_keys=False, allow_unicode=True)
        out["data/dataset_info.json"] = json.dumps(dataset_info(), indent=2) + "\n"
        targets = ["all-linear"] if c.lora_targets in ("all-linear", "all") else \
            [t for t in c.lora_targets.split(",") if t.strip()]
        out["swift-sft.sh"] = render("swift-sft.sh.j2", c=c, b=b, swift_targets=targets, data_file=DATA_FILE,
                                     quant_bits=QUANT_BITS.get(c.quantization, 4), model_dir=model_dir(c),
                                     steps_planned=train_iters(c), epochs=f"{c.epochs:g}",
                                     optim=HF_OPTIM.get(c.optimizer, "adamw_torch"),
                                     optim_args=HF_OPTIM_ARGS.get(c.optimizer))
    if c.multi_node:
        out["nccl.env"] = nccl_env(c)
    return out


LAUNCHER_TEXT = {
    "torchrun": N_("torchrun + train.py, DistributedDataParallel"),
    "fsdp": N_("torchrun + train.py, PyTorch FSDP2"),
    "deepspeed": N_("torchrun + train.py, DeepSpeed ZeRO (ds_config.json)"),
    "megatron": N_("ms-swift Megatron mode (`megatron sft` / `megatron pt`, Megatron-Core): tensor and pipeline "
                   "parallel"),
}


def training_rows(c: Ctx) -> list:
    """(item, value) rows for PLAN.md: the launcher and the batch arithmetic, from :func:`batch_layout`."""
    from gpuplan.render.bundle.safe import Safe

    def _(text: str) -> str:  # the catalog's keyword, so Babel extracts the literals below
        return tr(text, c.lang)

    b = batch_layout(c)
    layout = (_("TP {tp} x PP {pp} x DP {dp}, {vpp} virtual stages") if c.vpp > 1 else
              _("TP {tp} x PP {pp} x DP {dp}")).format(tp=c.tp, pp=c.pp, dp=b.dp, vpp=c.vpp)
    rows = [(N_("Launcher"), Safe(_(LAUNCHER_TEXT[c.launcher or "torchrun"]))),
            (N_("Layout"), Safe(layout)),
            (N_("Global batch"), Safe(_("{global_batch} = micro-batch {micro} x accumulation {accum} x DP {dp}").format(
                global_batch=b.global_batch, micro=b.micro, accum=b.accum, dp=b.dp))),
            (N_("Data"), Safe(_("{file} (sample; replace with your rows, same format) or {alt}").format(
                file=f"`{DATA_FILE}`", alt="`DATA=<file> ./launch.sh`"))),
            (N_("Rehearsal"), Safe(_("{cmd}: CPU, gloo, tiny random {model_type} model, checkpoint, kill, resume").format(
                cmd="`./launch.sh --smoke`", model_type=c.smoke_model_type)))]
    if c.launcher == "megatron":
        rows.append((N_("Note"), Safe(_(
            "Megatron needs CUDA and transformer-engine; --smoke rehearses the same TP/PP split with PyTorch-native "
            "tensor parallel + pipeline stages on CPU (dp 1)"))))
    if c.launcher == "deepspeed":
        ds = (_("ZeRO-{zero}, {offload} offload; train_batch_size {batch} in ds_config.json") if c.offload != "none"
              else _("ZeRO-{zero}; train_batch_size {batch} in ds_config.json"))
        rows.append(("DeepSpeed", Safe(ds.format(zero=c.zero, offload=c.offload, batch=b.global_batch))))
    return [(Safe(_(k)), v) for k, v in rows]
