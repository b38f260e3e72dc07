#!/usr/bin/env python3
"""Training entry point of this gpuplan bundle: plain PyTorch + transformers + peft.

launch.sh starts it under torchrun with the plan's numbers (micro-batch, accumulation, strategy);
run it directly only for debugging. Strategies:

  ddp        DistributedDataParallel (data parallel, optimizer states replicated)
  fsdp       PyTorch FSDP2 (fully_shard): full sharding = ZeRO-3, --zero 1/2 keeps parameters
             gathered between forward and backward (the SHARD_GRAD_OP analogue)
  deepspeed  DeepSpeed ZeRO with ds_config.json (train_batch_size = micro x accumulation x DP)
  tp_pp      PyTorch-native tensor parallel (DTensor) + pipeline stages (torch.distributed.pipelining):
             the CPU smoke stand-in for the Megatron launcher, with the plan's TP, PP and micro-batches

Data: a JSON-lines file, one {"messages": [{"role": ..., "content": ...}, ...]} (or {"text": ...})
per line; all text is tokenized, concatenated and cut into --seq_len blocks.
Checkpoints: <output_dir>/checkpoint-<step>/ (torch.distributed.checkpoint, or DeepSpeed's own
format); trainer_state.json is written last, so a checkpoint without it is incomplete and skipped.
A restart with the same arguments resumes from the newest complete checkpoint.
--smoke_model_type builds a tiny random model of that transformers family from its config (no
download, byte tokenizer, fp32, gloo) so the whole path runs on a laptop CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

TINY = dict(hidden_size=64, intermediate_size=128, num_attention_heads=8, num_key_value_heads=8, head_dim=8,
            vocab_size=256, tie_word_embeddings=False, moe_intermediate_size=32, num_experts=4,
            num_local_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=64)


def log(msg: str) -> None:
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"train.py: {msg}", flush=True)


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="Hugging Face / ModelScope repo id or local folder")
    p.add_argument("--task", choices=["pretrain", "full", "lora", "qlora"], required=True)
    p.add_argument("--data", required=True, help="JSON-lines training file")
    p.add_argument("--output_dir", required=True)
    p.add_argument("--strategy", choices=["ddp", "fsdp", "deepspeed", "tp_pp"], default="ddp")
    p.add_argument("--zero", type=int, default=0, choices=[0, 1, 2, 3])
    p.add_argument("--deepspeed_config", default="ds_config.json")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--pp", type=int, default=1)
    p.add_argument("--micro_batch", type=int, required=True)
    p.add_argument("--grad_accum", type=int, required=True)
    p.add_argument("--global_batch", type=int, required=True,
                   help="micro x accumulation x data-parallel size; checked against the world size")
    p.add_argument("--seq_len", type=int, default=2048)
    p.add_argument("--max_steps", type=int, default=0, help="0: one pass over the data")
    p.add_argument("--save_steps", type=int, default=500)
    p.add_argument("--lr", type=float, default=0.0, help="0: 1e-4 for LoRA, 1e-5 otherwise")
    p.add_argument("--precision", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--grad_ckpt", choices=["true", "false"], default="false")
    p.add_argument("--lora_rank", type=int, default=8)
    p.add_argument("--lora_alpha", type=float, default=16)
    p.add_argument("--lora_dropout", type=float, default=0.05)
    p.add_argument("--lora_targets", default="all-linear")
    p.add_argument("--quant_bits", type=int, default=4)
    p.add_argument("--smoke_model_type", default="", help="tiny random model of this transformers model_type")
    p.add_argument("--step_delay", type=float, default=0.0, help="seconds to sleep per step (smoke kill test)")
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------- data
def read_texts(path: str) -> list[str]:
    texts = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                sys.exit(f"train.py: {path}:{n}: not JSON ({exc.msg})")
            if "messages" in row:
                texts.append(row["messages"])
            elif "text" in row:
                texts.append(str(row["text"]))
            else:
                sys.exit(f"train.py: {path}:{n}: expected a 'messages' or 'text' key")
    if not texts:
        sys.exit(f"train.py: {path} holds no training rows")
    return texts


def tokenize(texts, tokenizer, seq_len: int) -> torch.Tensor:
    ids: list[int] = []
    for t in texts:
        if isinstance(t, list):
            if tokenizer is not None and getattr(tokenizer, "chat_template", None):
                t = tokenizer.apply_chat_template(t, tokenize=False)
            else:
                t = "\n".join(f"{m.get('role', '')}: {m.get('content', '')}" for m in t)
        if tokenizer is None:      # smoke: bytes are the tokens (vocab 256)
            ids += list(t.encode("utf-8")) + [0]
        else:
            ids += tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id or 0]
    while len(ids) < seq_len * 4:
        ids = ids + ids
    n = len(ids) // seq_len
    return torch.tensor(ids[: n * seq_len], dtype=torch.long).view(n, seq_len)


def batch(blocks: torch.Tensor, step: int, micro: int, accum: int, dp_rank: int, dp: int, m: int) -> torch.Tensor:
    """Micro-batch m of optimizer step `step` for this data-parallel rank: deterministic, so a resumed
    run continues where the checkpoint left off with no sampler state."""
    start = ((step * accum + m) * dp + dp_rank) * micro
    idx = torch.arange(start, start + micro) % blocks.shape[0]
    return blocks[idx]


# ---------------------------------------------------------------------------------------------- model
def build_model(args, layers: int | None = None):
    from transformers import AutoConfig, AutoModelForCausalLM

    if args.smoke_model_type:
        cfg = AutoConfig.for_model(args.smoke_model_type, num_hidden_layers=layers or max(2, args.pp),
                                   max_position_embeddings=max(args.seq_len, 64), **TINY)
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(cfg), None
    from transformers import AutoTokenizer

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.precision]
    kw: dict = {"dtype": dtype}
    if args.task == "qlora":
        from transformers import BitsAndBytesConfig

        kw["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=args.quant_bits == 4, load_in_8bit=args.quant_bits == 8, bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=dtype, bnb_4bit_use_double_quant=True)
    model = AutoModelForCausalLM.from_pretrained(args.model, **kw)
    return model, AutoTokenizer.from_pretrained(args.model)


def add_lora(model, args):
    from peft import LoraConfig, get_peft_model

    if args.task == "qlora" and not args.smoke_model_type:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=args.grad_ckpt == "true")
    targets = args.lora_targets if args.lora_targets in ("all-linear",) else args.lora_targets.split(",")
    cfg = LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                     target_modules=targets, task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def decoder_layers(model):
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return list(base.model.layers)


# ---------------------------------------------------------------------------------------------- checkpoints
CKPT_RE = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(out: Path) -> tuple[int, Path | None]:
    best = (0, None)
    if out.is_dir():
        for d in out.iterdir():
            m = CKPT_RE.match(d.name)
            if m and (d / "trainer_state.json").is_file() and int(m.group(1)) > best[0]:
                best = (int(m.group(1)), d)
    return best


def mark_complete(path: Path, step: int, args) -> None:
    dist.barrier()
    if dist.get_rank() == 0:
        state = {"global_step": step, "world_size": dist.get_world_size(), "strategy": args.strategy,
                 "micro_batch": args.micro_batch, "grad_accum": args.grad_accum, "tp": args.tp, "pp": args.pp}
        (path / "trainer_state.json").write_text(json.dumps(state) + "\n")
    dist.barrier()


def dcp_save(model, optim, path: Path, step: int, args, frozen_too: bool) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # Flattened optimizer state: one key per parameter, so pipeline stages with different parameters
    # never share a "param_groups" entry in the checkpoint.
    opts = StateDictOptions(ignore_frozen_params=not frozen_too, flatten_optimizer_state_dict=True)
    msd, osd = get_state_dict(model, optim, options=opts)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(path))
    mark_complete(path, step, args)
    log(f"saved {path}")


def dcp_load(model, optim, path: Path, frozen_too: bool) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

    opts = StateDictOptions(ignore_frozen_params=not frozen_too, strict=frozen_too, flatten_optimizer_state_dict=True)
    msd, osd = get_state_dict(model, optim, options=opts)
    state = {"model": msd, "optim": osd}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optim, model_state_dict=state["model"], optim_state_dict=state["optim"], options=opts)


# ---------------------------------------------------------------------------------------------- training
def setup() -> tuple[torch.device, str]:
    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    dist.init_process_group(backend)
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local), backend
    return torch.device("cpu"), backend


def check_batch(args, dp: int) -> None:
    if args.micro_batch * args.grad_accum * dp != args.global_batch:
        sys.exit(f"train.py: global batch {args.global_batch} != micro {args.micro_batch} x accumulation "
                 f"{args.grad_accum} x data-parallel {dp} (world {dist.get_world_size()}, TP {args.tp}, PP {args.pp})")


def train(args) -> None:
    device, backend = setup()
    world, rank = dist.get_world_size(), dist.get_rank()
    if args.strategy == "tp_pp":
        return train_tp_pp(args, device)
    check_batch(args, world)
    lora = args.task in ("lora", "qlora")
    model, tokenizer = build_model(args)
    if args.grad_ckpt == "true":
        model.gradient_checkpointing_enable()
    if lora:
        model = add_lora(model, args)
    blocks = tokenize(read_texts(args.data), tokenizer, args.seq_len)
    lr = args.lr or (1e-4 if lora else 1e-5)
    strategy = args.strategy
    if strategy == "deepspeed" and device.type == "cpu":
        # DeepSpeed's CPU accelerator hung at the first step with this bundle's ZeRO configs under gloo
        # (DeepSpeed 0.19.8, torch 2.13): the CPU rehearsal shards the same way with PyTorch FSDP2.
        log(f"CPU: running DeepSpeed ZeRO-{args.zero} as the equivalent PyTorch FSDP2 sharding")
        strategy = "fsdp"
    model.to(device)
    engine = None
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    elif strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        reshard = args.zero in (0, 3)   # ZeRO-3 / FULL_SHARD; 1-2 keep parameters between fwd and bwd
        log(f"FSDP2 fully_shard, reshard_after_forward={reshard} (ZeRO-{args.zero or 3} analogue)")
        for layer in decoder_layers(model):
            fully_shard(layer, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    if strategy == "deepspeed":
        import deepspeed

        cfg = json.loads(Path(args.deepspeed_config).read_text())
        planned = (cfg.get("train_batch_size"), cfg.get("train_micro_batch_size_per_gpu"),
                   cfg.get("gradient_accumulation_steps"))
        if args.smoke_model_type:   # CPU rehearsal: fp32, no offload, the rehearsal's world size
            cfg["bf16"], cfg["fp16"] = {"enabled": False}, {"enabled": False}
            for key in ("offload_optimizer", "offload_param"):
                cfg.get("zero_optimization", {}).pop(key, None)
            cfg["train_batch_size"] = args.global_batch
            cfg["train_micro_batch_size_per_gpu"], cfg["gradient_accumulation_steps"] = args.micro_batch, args.grad_accum
        elif planned != (args.global_batch, args.micro_batch, args.grad_accum):
            sys.exit(f"train.py: {args.deepspeed_config} has batch {planned}, the launcher passes "
                     f"{(args.global_batch, args.micro_batch, args.grad_accum)}")
        offload = "offload_optimizer" in cfg.get("zero_optimization", {})
        if offload:   # DeepSpeed's CPU Adam for offloaded optimizer states
            cfg["optimizer"] = {"type": "AdamW", "params": {"lr": lr, "weight_decay": 0.0}}
        engine, optim, _, _ = deepspeed.initialize(model=model, optimizer=None if offload else optim,
                                                   model_parameters=params if offload else None, config=cfg)
    out = Path(args.output_dir)
    start, ckpt = latest_checkpoint(out)
    if ckpt is not None:
        if engine is not None:
            engine.load_checkpoint(str(out), tag=ckpt.name)
        else:
            dcp_load(model, optim, ckpt, frozen_too=not lora)
        log(f"resumed from {ckpt} at step {start}")
    steps = args.max_steps or max(1, blocks.shape[0] // args.global_batch)
    amp = device.type == "cuda" and args.precision in ("bf16", "fp16") and engine is None and strategy == "ddp"
    for step in range(start, steps):
        t0 = time.time()
        total = 0.0
        for m in range(args.grad_accum):
            x = batch(blocks, step, args.micro_batch, args.grad_accum, rank, world, m).to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16 if args.precision == "bf16" else torch.float16,
                                enabled=amp):
                loss = (engine or model)(input_ids=x, labels=x).loss
            if engine is not None:
                engine.backward(loss)
                engine.step()
            else:
                (loss / args.grad_accum).backward()
            total += loss.item() / args.grad_accum
        if engine is None:
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
            optim.zero_grad(set_to_none=True)
        if args.step_delay:
            time.sleep(args.step_delay)
        log(f"step {step + 1}/{steps} loss {total:.4f} ({time.time() - t0:.2f} s)")
        if (step + 1) % args.save_steps == 0 or step + 1 == steps:
            path = out / f"checkpoint-{step + 1}"
            if engine is not None:
                engine.save_checkpoint(str(out), tag=path.name)
                mark_complete(path, step + 1, args)
            else:
                dcp_save(model, optim, path, step + 1, args, frozen_too=not lora)
    save_final(model, engine, out, lora)
    dist.destroy_process_group()


def save_final(model, engine, out: Path, lora: bool) -> None:
    """Hugging Face format (the LoRA adapter for LoRA/QLoRA) in <output_dir>/final."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    if engine is not None:
        engine.save_16bit_model(str(out / "final"))
        return
    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True,
                                                              ignore_frozen_params=lora))
    if dist.get_rank() == 0:
        inner = getattr(model, "module", model)
        inner.save_pretrained(str(out / "final"), state_dict=sd)
        log(f"saved the final model to {out / 'final'}")
    dist.barrier()


# ---------------------------------------------------------------------------------------------- TP x PP
def train_tp_pp(args, device) -> None:
    """Tensor parallel inside each pipeline stage, GPipe across stages, data parallel 1."""
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    world = dist.get_world_size()
    if world != args.tp * args.pp:
        sys.exit(f"train.py: tp_pp needs exactly TP x PP = {args.tp * args.pp} processes, got {world}")
    check_batch(args, 1)
    mesh = init_device_mesh(device.type, (args.pp, args.tp), mesh_dim_names=("pp", "tp"))
    pp_rank = mesh["pp"].get_local_rank()
    model, tokenizer = build_model(args, layers=max(2, args.pp))
    base = model.model
    n = len(base.layers)
    bounds = [round(i * n / args.pp) for i in range(args.pp + 1)]
    lo, hi = bounds[pp_rank], bounds[pp_rank + 1]
    first, last = pp_rank == 0, pp_rank == args.pp - 1

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = base.embed_tokens if first else None
            self.layers = nn.ModuleDict({str(i): base.layers[i] for i in range(lo, hi)})
            self.rotary = base.rotary_emb
            self.norm = base.norm if last else None
            self.lm_head = model.lm_head if last else None

        def forward(self, x):
            h = self.embed(x) if self.embed is not None else x
            pos = torch.arange(h.shape[1], device=h.device).unsqueeze(0).expand(h.shape[0], -1)
            pe = self.rotary(h, pos)
            for layer in self.layers.values():
                o = layer(h, attention_mask=None, position_ids=pos, position_embeddings=pe)
                h = o[0] if isinstance(o, tuple) else o
            return self.lm_head(self.norm(h)) if last else h

    stage_mod = Stage().to(device)
    if args.tp > 1:
        for layer in stage_mod.layers.values():
            plan = {f"self_attn.{k}_proj": ColwiseParallel() for k in "qkv"}
            plan["self_attn.o_proj"] = RowwiseParallel()
            if hasattr(layer.mlp, "gate_proj"):
                plan.update({"mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
                             "mlp.down_proj": RowwiseParallel()})
            parallelize_module(layer, mesh["tp"], plan)
    optim = torch.optim.AdamW(stage_mod.parameters(), lr=args.lr or 1e-5)
    blocks = tokenize(read_texts(args.data), tokenizer, args.seq_len)

    def loss_fn(logits, target):
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), target[:, 1:].reshape(-1))

    schedule = None
    if args.pp > 1:
        from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

        stage = PipelineStage(stage_mod, pp_rank, args.pp, device, group=mesh["pp"].get_group())
        schedule = ScheduleGPipe(stage, n_microbatches=args.grad_accum, loss_fn=loss_fn)
    out = Path(args.output_dir)
    start, ckpt = latest_checkpoint(out)
    if ckpt is not None:
        dcp_load(stage_mod, optim, ckpt, frozen_too=True)
        log(f"resumed from {ckpt} at step {start}")
    steps = args.max_steps or max(1, blocks.shape[0] // args.global_batch)
    log(f"TP {args.tp} x PP {args.pp}: stage {pp_rank} holds layers {lo}..{hi - 1}; "
        f"{args.grad_accum} micro-batches of {args.micro_batch} per step")
    for step in range(start, steps):
        x = torch.cat([batch(blocks, step, args.micro_batch, args.grad_accum, 0, 1, m)
                       for m in range(args.grad_accum)]).to(device)
        loss_val = None
        if schedule is None:
            for m in range(args.grad_accum):
                xm = x[m * args.micro_batch:(m + 1) * args.micro_batch]
                loss = loss_fn(stage_mod(xm), xm) / args.grad_accum
                loss.backward()
                loss_val = (loss_val or 0.0) + loss.item()
        elif first:
            schedule.step(x)
        elif last:
            losses: list = []
            schedule.step(target=x, losses=losses)
            loss_val = sum(float(v.detach()) for v in losses) / len(losses)
        else:
            schedule.step()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if args.step_delay:
            time.sleep(args.step_delay)
        if loss_val is not None and mesh["tp"].get_local_rank() == 0:
            print(f"train.py: step {step + 1}/{steps} loss {loss_val:.4f} (pipeline stage {pp_rank})", flush=True)
        if (step + 1) % args.save_steps == 0 or step + 1 == steps:
            dcp_save(stage_mod, optim, out / f"checkpoint-{step + 1}", step + 1, args, frozen_too=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    train(parse())
