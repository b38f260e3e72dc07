"""Training files: launch.sh, ds_config.json, the FSDP/accelerate alternative, the LLaMA-Factory
config and ms-swift script for LoRA/QLoRA jobs, nccl.env, hostfile and the checkpoint wrapper.

DeepSpeed keys: https://www.deepspeed.ai/docs/config-json/ ; accelerate FSDP config:
https://huggingface.co/docs/accelerate/usage_guides/fsdp ; LLaMA-Factory arguments:
https://llamafactory.readthedocs.io/en/latest/advanced/arguments.html .
"""

from __future__ import annotations

import json

import yaml

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.templates import render

FSDP_STRATEGY = {"full_shard": "FULL_SHARD", "shard_grad_op": "SHARD_GRAD_OP", "hybrid_shard": "HYBRID_SHARD"}
ZERO_TO_FSDP = {3: "FULL_SHARD", 2: "SHARD_GRAD_OP", 1: "SHARD_GRAD_OP", 0: "FULL_SHARD"}
QUANT_BITS = {"bnb-nf4": 4, "int4": 4, "gptq-int4": 4, "awq": 4, "bnb-int8": 8, "int8": 8, "gptq-int8": 8}


def fsdp_strategy(c: Ctx) -> str:
    """FSDP sharding for the alternative launcher: the workload's FSDP mode, else the ZeRO stage's analogue."""
    return FSDP_STRATEGY.get(c.fsdp) or ZERO_TO_FSDP[c.zero]


def ds_config(c: Ctx) -> dict:
    """DeepSpeed config with the estimate's values; ``train_batch_size`` = micro x accumulation x DP
    (DeepSpeed checks that identity at start-up)."""
    cfg: dict = {
        "train_batch_size": c.micro_batch * c.grad_accum * c.dp,
        "train_micro_batch_size_per_gpu": c.micro_batch,
        "gradient_accumulation_steps": c.grad_accum,
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
    return cfg


def accelerate_fsdp(c: Ctx) -> dict:
    """accelerate config for FSDP (machine rank and main process address are passed on the command line)."""
    return {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "FSDP",
        "downcast_bf16": "no",
        "fsdp_config": {
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_backward_prefetch": "BACKWARD_PRE",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_forward_prefetch": False,
            "fsdp_offload_params": c.offload != "none",
            "fsdp_sharding_strategy": fsdp_strategy(c),
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_sync_module_states": True,
            "fsdp_use_orig_params": True,
            "fsdp_activation_checkpointing": c.checkpointing,
        },
        "machine_rank": 0,
        "main_process_port": c.ports["rdzv"],
        "main_training_function": "main",
        "mixed_precision": c.mixed_precision,
        "num_machines": c.nodes,
        "num_processes": c.gpus_total,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
    }


def llamafactory(c: Ctx) -> dict:
    """LLaMA-Factory SFT config for a LoRA/QLoRA job (the dataset name is the user's to fill in)."""
    cfg: dict = {
        "model_name_or_path": c.model,
        "trust_remote_code": False,
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
    cfg.update({
        "dataset": "identity,alpaca_en_demo",
        "template": c.llamafactory_template,
        "cutoff_len": c.seq_len,
        "preprocessing_num_workers": 8,
        "output_dir": c.checkpoint_dir,
        "logging_steps": 10,
        "save_steps": c.save_steps,
        "overwrite_output_dir": False,
        "per_device_train_batch_size": c.micro_batch,
        "gradient_accumulation_steps": c.grad_accum,
        "learning_rate": 1.0e-4,
        "num_train_epochs": 1.0,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.1,
        "disable_gradient_checkpointing": not c.checkpointing,
        "bf16": c.precision in ("bf16", "fp8"),
        "fp16": c.precision == "fp16",
        "flash_attn": "auto",
    })
    if c.deepspeed:
        cfg["deepspeed"] = "ds_config.json"
    return cfg


def nccl_env(c: Ctx) -> str:
    """KEY=value lines (for `set -a; . nccl.env`, systemd EnvironmentFile and docker --env-file),
    each preceded by what it does and its source."""
    fabric = {"erdma": "eRDMA", "roce": "RoCE", "ib": "InfiniBand"}.get(c.rdma or "", "TCP (no RDMA on this type)")
    lines = [f"# NCCL settings for {c.nodes} x {c.instance_type} over {fabric}.",
             "# Plain KEY=value lines: `set -a; . ./nccl.env; set +a`, systemd EnvironmentFile= or docker --env-file.",
             "# NVIDIA's reference for every variable: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
             "# Set NCCL_DEBUG=WARN once the first run's log shows the expected transport."]
    if c.rdma == "erdma":
        lines.append("# eRDMA needs NCCL 2.19 or later and the eRDMA driver on the host "
                     "(https://www.alibabacloud.com/help/en/pai/user-guide/erdma-distributed-training-with-high-performance-networks).")
    for v in c.nccl_vars:
        lines.append("")
        lines.append(f"# {v.note}. Source: {v.source}")
        lines.append(f"{v.name}={v.value}")
    return "\n".join(lines) + "\n"


def hostfile(c: Ctx) -> str:
    """DeepSpeed launcher hostfile: one line per node (replace the names with the private IPs)."""
    lines = ["# DeepSpeed hostfile: replace node-N with each node's private IP (terraform output private_ips)."]
    lines += [f"node-{i} slots={c.gpus_per_node}" for i in range(c.nodes)]
    return "\n".join(lines) + "\n"


def files(c: Ctx) -> dict[str, str]:
    """Training files by bundle path."""
    out = {
        "launch.sh": render("launch.sh.j2", c=c),
        "run-with-resume.sh": render("run-with-resume.sh.j2", c=c),
        "ds_config.json": json.dumps(ds_config(c), indent=2) + "\n",
        "accelerate-fsdp.yaml": yaml.safe_dump(accelerate_fsdp(c), sort_keys=False, allow_unicode=True),
        "launch-fsdp.sh": render("launch-fsdp.sh.j2", c=c, fsdp_strategy=fsdp_strategy(c)),
    }
    if c.lora:
        header = ("# LLaMA-Factory SFT config for this LoRA job: `llamafactory-cli train llamafactory.yaml`\n"
                  "# (launch.sh does it with LAUNCHER=llamafactory). Replace `dataset` with your dataset names\n"
                  "# from data/dataset_info.json and check `template` for your model family.\n")
        out["llamafactory.yaml"] = header + yaml.safe_dump(llamafactory(c), sort_keys=False, allow_unicode=True)
        targets = ["all-linear"] if c.lora_targets in ("all-linear", "all") else \
            [t for t in c.lora_targets.split(",") if t.strip()]
        out["swift-sft.sh"] = render("swift-sft.sh.j2", c=c, swift_targets=targets,
                                     quant_bits=QUANT_BITS.get(c.quantization, 4))
    if c.multi_node:
        out["nccl.env"] = nccl_env(c)
        out["hostfile"] = hostfile(c)
    return out
