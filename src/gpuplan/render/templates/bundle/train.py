#!/usr/bin/env python3
"""Training entry point of this gpuplan bundle: plain PyTorch + transformers + peft.

launch.sh starts it under torchrun with the plan's numbers (micro-batch, accumulation, strategy,
activation checkpointing, optimizer, precision); `./launch.sh --smoke` starts the same command on
CPU processes (gloo) with a tiny model of the same family. Strategies:

  ddp        DistributedDataParallel (data parallel, optimizer states replicated)
  fsdp       PyTorch FSDP2 (fully_shard): full sharding = ZeRO-3, --zero 1/2 keeps parameters
             gathered between forward and backward (the SHARD_GRAD_OP analogue)
  deepspeed  DeepSpeed ZeRO with ds_config.json (train_batch_size = micro x accumulation x DP); on a
             machine without CUDA, DeepSpeed's CPU accelerator (DS_ACCELERATOR=cpu) over gloo
  tp_pp      PyTorch-native tensor parallel (DTensor) + pipeline stages (torch.distributed.pipelining):
             the CPU stand-in for the Megatron launcher, with the plan's TP, PP and micro-batches

Precision: trainable parameters stay float32 (the master weights) and bf16/fp16 runs as autocast
(FSDP2: MixedPrecisionPolicy; DeepSpeed: its bf16/fp16 mode keeps an fp32 master partition); frozen
LoRA bases load in the compute dtype. `--optimizer adamw-bf16` trains bf16 weights on purpose.
Loss: `--loss chunked` (what gpuplan plans for DDP, FSDP and DeepSpeed) computes the language-model loss with a
chunked fused linear cross-entropy (ChunkedLinearCrossEntropy: 512 tokens' logits at a time, their gradients at once,
so the [tokens x vocab] logits never exist); `--loss model` runs the model's own loss over the whole logits. The
tp_pp stand-in computes the whole logits, as Megatron does.
Checks on every run (a failure stops the run with "check failed"): the model is in training mode,
layers re-run their forward in backward exactly when --grad_ckpt asks for it (counted with hooks), the chunked
loss ran when planned,
the optimizer is the planned class, the master weights have the planned dtype; --rehearsal also
checks that the loss went down.
Data: a JSON-lines file, one {"messages": [{"role": ..., "content": ...}, ...]} (or {"text": ...})
per line; all text is tokenized, concatenated and cut into --seq_len blocks. Fine-tuning (full, LoRA,
QLoRA) learns the assistant turns only: the labels of system and user turns are -100 (the prompt is
context, not a target); pre-training and "text" rows learn every token.
Checkpoints: <output_dir>/checkpoint-<step>/ (torch.distributed.checkpoint, or DeepSpeed's own
format); trainer_state.json is written last, so a checkpoint without it is incomplete and skipped.
Only the newest --save_total_limit complete checkpoints are kept (the plan's storage counts them).
A restart with the same arguments resumes from the newest complete checkpoint.
`train.py make-tiny-model DIR TYPE LAYERS` writes a small random model of a transformers family that the
rehearsal then loads like a real one (a model folder without a tokenizer is read as bytes);
`train.py check-megatron-args sft|pt VERSION ARGS...` parses a `megatron sft|pt` command line with
ms-swift's own argument classes and parser (HfArgumentParser), unknown flags and bad values fail.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from contextlib import nullcontext
import functools
from functools import partial
from pathlib import Path

try:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
except ImportError as _missing:   # no training stack here: say what to install instead of a traceback
    sys.exit(f"train.py: the Python package {_missing.name!r} is not installed: pip install -r requirements.txt "
             f"(the bundle's image has it; ./launch.sh --smoke prints what a CPU rehearsal needs)")

if not torch.cuda.is_available():
    os.environ.setdefault("DS_ACCELERATOR", "cpu")   # DeepSpeed's CPU accelerator (gloo, bf16)

# The rehearsal's tiny model: narrower layers of the same family (and fewer of them, --pp decides).
TINY = dict(hidden_size=64, intermediate_size=128, num_attention_heads=8, num_key_value_heads=8, head_dim=8,
            vocab_size=256, tie_word_embeddings=False, moe_intermediate_size=32, num_experts=4,
            num_local_experts=4, num_experts_per_tok=2, shared_expert_intermediate_size=64,
            # hybrids (qwen3_next): a full-attention layer every 2nd, so a 2-layer model holds one (an all-linear
            # model fails in transformers' mask builder), and narrow Gated DeltaNet heads
            full_attention_interval=2, linear_num_key_heads=4, linear_num_value_heads=8, linear_key_head_dim=8,
            linear_value_head_dim=8)
# bitsandbytes classes for the workload's optimizer names (bitsandbytes/optim/__init__.py).
BNB = {"adamw-8bit": "AdamW8bit", "paged-adamw-8bit": "PagedAdamW8bit", "paged-adamw": "PagedAdamW"}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def log(msg: str) -> None:
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"train.py: {msg}", flush=True)


def fail(msg: str) -> None:
    print(f"train.py: check failed: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


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
    p.add_argument("--save_total_limit", type=int, default=2, help="complete checkpoints kept (0: all)")
    p.add_argument("--trust_remote_code", action="store_true",
                   help="the model's code is in its repository, not in transformers (Qwen-1, ChatGLM, Baichuan...)")
    p.add_argument("--lr", type=float, default=0.0, help="0: 1e-4 for LoRA, 1e-5 otherwise")
    p.add_argument("--precision", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--grad_ckpt", choices=["none", "selective", "full", "true", "false"], default="none",
                   help="activation recomputation: full = every decoder layer, selective = keep matmul and "
                        "attention outputs, recompute the rest (torch selective activation checkpointing)")
    p.add_argument("--optimizer", default="adamw",
                   choices=["adamw", "adamw-fused", "adamw-foreach", "adamw-bf16", "adamw-8bit", "paged-adamw-8bit",
                            "paged-adamw", "sgd", "sgd-plain", "adafactor"])
    p.add_argument("--loss", choices=["chunked", "model"], default="model",
                   help="chunked: the chunked fused linear cross-entropy (the [tokens x vocab] logits never exist); "
                        "model: the model's own loss over the whole logits")
    p.add_argument("--lora_rank", type=int, default=8)
    p.add_argument("--lora_alpha", type=float, default=16)
    p.add_argument("--lora_dropout", type=float, default=0.05)
    p.add_argument("--adapter_dtype", choices=["float32", "model"], default="float32",
                   help="LoRA adapter weights in float32 (peft's autocast_adapter_dtype) or in the model's dtype")
    p.add_argument("--lora_targets", default="all-linear")
    p.add_argument("--quant_bits", type=int, default=4)
    p.add_argument("--kbit_upcast", choices=["yes", "no"], default="yes",
                   help="QLoRA: upcast embeddings, head and norms to float32 (peft's prepare_model_for_kbit_training) "
                        "or keep them in the load dtype, as LLaMA-Factory, torchtune and ms-swift do")
    p.add_argument("--rehearsal", action="store_true", help="CPU rehearsal: also check that the loss goes down")
    p.add_argument("--step_delay", type=float, default=0.0, help="seconds to sleep per step (rehearsal kill test)")
    a = p.parse_args(argv)
    a.grad_ckpt = {"true": "full", "false": "none"}.get(a.grad_ckpt, a.grad_ckpt)
    return a


# ---------------------------------------------------------------------------------------------- data
def read_texts(path: str) -> list:
    texts: list = []
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


def encode(text: str, tokenizer) -> list[int]:
    if tokenizer is None:      # a model folder without a tokenizer (the rehearsal): bytes are the tokens
        return list(text.encode("utf-8"))
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def segments(messages: list, tokenizer) -> list[tuple[str, bool]]:
    """(text, is the assistant's) pieces of one conversation, as the chat template renders it: the template of the
    first i+1 turns minus that of the first i is turn i (with its role markers)."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return [(f"{m.get('role', '')}: {m.get('content', '')}\n", m.get("role") == "assistant") for m in messages]
    out, prev = [], ""
    for i, m in enumerate(messages):
        cur = tokenizer.apply_chat_template(messages[: i + 1], tokenize=False)
        out.append((cur[len(prev):] if cur.startswith(prev) else cur, m.get("role") == "assistant"))
        prev = cur
    return out


def tokenize(texts, tokenizer, seq_len: int, mask_prompt: bool) -> torch.Tensor:
    """(blocks, 2, seq_len): token ids and labels, packed into --seq_len blocks. With ``mask_prompt`` (fine-tuning)
    the labels of non-assistant turns are -100, so the loss is on the answers only; blocks with no label to
    predict are dropped."""
    eos = 0 if tokenizer is None else (tokenizer.eos_token_id or 0)
    ids: list[int] = []
    labels: list[int] = []
    for t in texts:
        pieces = segments(t, tokenizer) if isinstance(t, list) else [(t, True)]
        for text, learn in pieces:
            toks = encode(text, tokenizer)
            ids += toks
            labels += toks if (learn or not mask_prompt) else [-100] * len(toks)
        ids.append(eos)
        labels.append(eos)
    while len(ids) < seq_len * 4:
        ids, labels = ids + ids, labels + labels
    n = len(ids) // seq_len
    out = torch.stack([torch.tensor(ids[: n * seq_len]).view(n, seq_len),
                       torch.tensor(labels[: n * seq_len]).view(n, seq_len)], dim=1)
    # the loss predicts token t+1 from tokens up to t: a block needs a label after its first position (else its
    # loss is 0/0, NaN, and poisons the step)
    keep = (out[:, 1, 1:] != -100).any(dim=1)
    if not keep.any():
        sys.exit("train.py: the data has no assistant turns to learn from (every label is masked)")
    learned = int((out[keep][:, 1] != -100).sum())
    log(f"labels: {'assistant turns only, prompt masked' if mask_prompt else 'every token'}: {learned} of "
        f"{int(keep.sum()) * seq_len} tokens in {int(keep.sum())} blocks of {seq_len} carry the loss")
    return out[keep]


def batch(blocks: torch.Tensor, step: int, micro: int, accum: int, dp_rank: int, dp: int, m: int) -> torch.Tensor:
    """Micro-batch m of optimizer step `step` for this data-parallel rank, (micro, 2, seq): ids and labels;
    deterministic, so a resumed run continues where the checkpoint left off with no sampler state."""
    start = ((step * accum + m) * dp + dp_rank) * micro
    idx = torch.arange(start, start + micro) % blocks.shape[0]
    return blocks[idx]


# ---------------------------------------------------------------------------------------------- model
def make_tiny_model(folder: str, model_type: str, layers: int) -> None:
    """`train.py make-tiny-model DIR TYPE LAYERS`: a random model of the family with TINY widths, saved like a
    hub model (config.json + safetensors) so the rehearsal loads it through the same from_pretrained path."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(model_type, num_hidden_layers=layers, max_position_embeddings=256, **TINY)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    print(f"train.py: tiny {model_type} model ({layers} layers, hidden {cfg.hidden_size}) in {folder}", flush=True)


def load_dtype(args, full_params: bool) -> torch.dtype:
    """Weights as loaded: trainable full-parameter weights in float32 (the master copy; compute runs in
    autocast), DeepSpeed in the compute dtype (it keeps its own fp32 master partition), frozen LoRA bases and
    --optimizer adamw-bf16 in the compute dtype."""
    compute = DTYPES[args.precision]
    if args.strategy == "deepspeed" or not full_params or args.optimizer == "adamw-bf16":
        return compute
    return torch.float32


def build_model(args, dschf_cfg: dict | None = None):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    full_params = args.task in ("pretrain", "full")
    kw: dict = {"dtype": load_dtype(args, full_params), "trust_remote_code": args.trust_remote_code}
    if args.task == "qlora":
        from transformers import BitsAndBytesConfig

        kw["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=args.quant_bits == 4, load_in_8bit=args.quant_bits == 8, bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=DTYPES[args.precision], bnb_4bit_use_double_quant=True)
    keep = None
    if dschf_cfg is not None and dschf_cfg.get("zero_optimization", {}).get("stage") == 3:
        from transformers.integrations import HfDeepSpeedConfig

        # ZeRO-3: each rank loads only its shard (zero.Init). The batch keys are checked at deepspeed.initialize.
        keep = HfDeepSpeedConfig({k: v for k, v in dschf_cfg.items() if k != "train_batch_size"})
    model = AutoModelForCausalLM.from_pretrained(args.model, **kw)
    del keep
    try:
        tokenizer = AutoTokenizer.from_pretrained(args.model, trust_remote_code=args.trust_remote_code)
        if not tokenizer("a b c", add_special_tokens=False)["input_ids"]:
            raise ValueError("empty vocabulary")   # transformers 5 builds an empty tokenizer for a folder without one
    except (OSError, ValueError):
        if not Path(args.model).is_dir():
            raise
        tokenizer = None
        log(f"{args.model} has no tokenizer: bytes are the tokens")
    return model, tokenizer


def ckpt_kwargs(granularity: str) -> dict:
    """torch.utils.checkpoint arguments: non-reentrant; selective keeps matmul and attention outputs
    (torch.utils.checkpoint.create_selective_checkpoint_contexts) and recomputes norms and activations."""
    if granularity != "selective":
        return {"use_reentrant": False}
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    keep = {aten.mm.default, aten.addmm.default, aten.bmm.default}
    for name in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"):
        if hasattr(aten, name):
            keep.add(getattr(aten, name).default)

    def policy(ctx, op, *a, **k):
        return CheckpointPolicy.MUST_SAVE if op in keep else CheckpointPolicy.PREFER_RECOMPUTE

    return {"use_reentrant": False, "context_fn": partial(create_selective_checkpoint_contexts, policy)}


# The chunked loss (--loss chunked) walks the tokens this many at a time. A chunk's logits (a 16-bit matmul output
# and its fp32 copy: 6 bytes per vocabulary entry) are the only logits that exist; 512 tokens keep the LM-head
# matmuls compute-bound (arithmetic intensity about 400 FLOP/byte, above the A10's, A100's and H200's ridge).
# gpuplan sizes the plan with the same figure (data/efficiency.yaml memory.chunked_loss).
LOSS_CHUNK_TOKENS = 512
# Config keys whose CausalLM forward rewrites the LM head's output before the loss (Gemma-2/3 soft-capping, Cohere's
# logit_scale, Granite's logits_scaling): the chunked loss does not, so those models keep their own loss.
LOGIT_REWRITE_KEYS = ("final_logit_softcapping", "logit_scale", "logits_scaling")


class ChunkedLinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of logits = h @ W^T (+ b) over the labels that are not -100 (0 when there are none), without
    the [tokens x vocab] logits: the forward walks the tokens `chunk` at a time, computes each chunk's logits in the
    compute dtype (autocast's, else W's) and upcasts them to fp32 per chunk, and at once the chunk's gradients (grad_h
    rows; grad_W and grad_b accumulated in the compute dtype); backward hands them back scaled by the incoming
    gradient (gradient accumulation's 1/N). The Liger-Kernel FusedLinearCrossEntropy algorithm in plain torch. Peak:
    one chunk's 16-bit + fp32 buffers (both reused in place), grad_W and grad_h."""

    @staticmethod
    def forward(ctx, h, weight, bias, labels, chunk):
        dev = h.device.type
        dt = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else weight.dtype
        hf, y = h.reshape(-1, h.shape[-1]), labels.reshape(-1)
        denom = max(1, int((y != -100).sum()))
        grad_h = torch.empty_like(hf)
        grad_w = torch.zeros(weight.shape, dtype=dt, device=h.device) if weight.requires_grad else None
        grad_b = torch.zeros(weight.shape[0], dtype=torch.float32, device=h.device) \
            if bias is not None and bias.requires_grad else None
        total = torch.zeros((), dtype=torch.float32, device=h.device)
        for lo in range(0, hf.shape[0], chunk):
            hc, yc = hf[lo:lo + chunk], y[lo:lo + chunk]
            z16 = F.linear(hc, weight, bias)              # autocast: the 16-bit matmul (W's cast is cached)
            z = z16.float() if z16.dtype != torch.float32 else z16.clone()
            valid = (yc != -100).to(torch.float32)
            rows, tgt = torch.arange(len(yc), device=h.device), yc.clamp(min=0)
            picked = z[rows, tgt]
            top = z.amax(1, keepdim=True)
            z.sub_(top).exp_()
            norm = z.sum(1, keepdim=True)
            total += ((top.squeeze(1) + norm.log().squeeze(1) - picked) * valid).sum()
            z.div_(norm)                                  # softmax, in place
            z[rows, tgt] -= valid                         # minus the one-hot target (ignored rows: nothing)
            z.mul_((valid / denom)[:, None])              # d(mean loss)/d logits; ignored rows 0
            z16.copy_(z)                                  # the gradient in the compute dtype, in z16's buffer
            del z
            grad_h[lo:lo + chunk] = torch.matmul(z16, weight)
            if grad_w is not None:
                grad_w.addmm_(z16.t(), hc.to(dt))
            if grad_b is not None:
                grad_b += z16.sum(0, dtype=torch.float32)
            del z16
        ctx.grads = (grad_h, grad_w, grad_b)
        ctx.shape, ctx.dtypes = h.shape, (weight.dtype, None if bias is None else bias.dtype)
        return total / denom

    @staticmethod
    def backward(ctx, grad_out):
        grad_h, grad_w, grad_b = ctx.grads
        ctx.grads = None
        scale = grad_out.to(torch.float32)
        gh = grad_h.mul_(scale.to(grad_h.dtype)).view(ctx.shape)
        gw = None if grad_w is None else grad_w.mul_(scale.to(grad_w.dtype)).to(ctx.dtypes[0])
        gb = None if grad_b is None else grad_b.mul_(scale).to(ctx.dtypes[1])
        return gh, gw, gb, None, None


def chunked_loss(h, weight, bias, labels, chunk: int = LOSS_CHUNK_TOKENS):
    """The causal-LM loss of hidden states h (batch, seq, hidden) against labels (batch, seq): position t predicts
    label t+1, as transformers' ForCausalLMLoss (labels shifted left, the last position ignored)."""
    shifted = F.pad(labels[..., 1:], (0, 1), value=-100)
    return ChunkedLinearCrossEntropy.apply(h, weight, bias, shifted, chunk)


def use_chunked_loss(model) -> str | None:
    """Make model(input_ids=..., labels=...).loss the chunked loss, inside the model's own forward: the LM head module
    computes it (so DeepSpeed ZeRO-3 and FSDP gather its weight as for the plain head) from labels the wrapped forward
    hands it, and the model's loss function passes the result through (a mixture-of-experts router loss is still
    added by the forward). Returns why it cannot (the model's own loss then runs), None when installed."""
    from torch import nn

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if not type(model).__module__.startswith("transformers."):
        return f"{type(model).__name__} is the model repository's own code (trust_remote_code)"
    if type(head) is not nn.Linear:
        return f"the output layer is {type(head).__name__}, not a plain Linear"
    rewrite = [k for k in LOGIT_REWRITE_KEYS if getattr(model.config, k, None) not in (None, 1, 1.0)]
    if rewrite:
        return f"the model's forward rewrites its logits before the loss (config {', '.join(rewrite)})"
    plain_head, plain_forward, own_loss = head.forward, model.forward, model.loss_function
    pending: list = []

    def head_forward(h):
        if not pending:
            return plain_head(h)
        head.chunked_calls = getattr(head, "chunked_calls", 0) + 1
        return chunked_loss(h, head.weight, head.bias, pending.pop())

    def loss_function(logits, labels=None, vocab_size=None, **kw):
        return logits if logits.dim() == 0 else own_loss(logits, labels, vocab_size, **kw)

    @functools.wraps(plain_forward)
    def forward(*a, labels=None, **kw):
        if labels is not None:
            pending[:] = [labels]
        try:
            return plain_forward(*a, labels=labels, **kw)
        finally:
            pending.clear()

    head.forward, model.forward, model.loss_function = head_forward, forward, loss_function
    return None


def add_lora(model, args):
    from peft import LoraConfig, get_peft_model

    targets = args.lora_targets if args.lora_targets in ("all-linear",) else args.lora_targets.split(",")
    cfg = LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                     target_modules=targets, task_type="CAUSAL_LM")
    # float32 adapters (peft's autocast_adapter_dtype) or the model's 16-bit dtype: what the plan sized
    return get_peft_model(model, cfg, autocast_adapter_dtype=args.adapter_dtype == "float32")


def prepare(model, args):
    """QLoRA preparation, activation checkpointing, LoRA adapters, training mode: the order the libraries need."""
    lora = args.task in ("lora", "qlora")
    ckpt = args.grad_ckpt != "none"
    if args.task == "qlora" and args.kbit_upcast == "yes":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=ckpt,
                                                gradient_checkpointing_kwargs=ckpt_kwargs(args.grad_ckpt))
    elif ckpt:
        if args.task == "qlora":
            model.enable_input_require_grads()   # what prepare_model_for_kbit_training does besides the upcast
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=ckpt_kwargs(args.grad_ckpt))
    if lora:
        model = add_lora(model, args)
    model.train()   # from_pretrained returns eval mode: no recomputation and no LoRA dropout until this
    return model


def apply_loss(model, args):
    """The planned loss: --loss chunked installs the chunked fused cross-entropy (a model that cannot take it stops
    the run: the plan's memory assumed it); returns the LM head whose calls prove it ran (None: the model's loss)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if args.loss == "model":
        log("loss: the model's own cross-entropy over the whole logits")
        return None
    why = use_chunked_loss(base)
    if why:
        fail(f"the plan sized the chunked loss, but {why}: plan the job with fused_loss: false")
    log(f"loss: chunked fused linear cross-entropy, {LOSS_CHUNK_TOKENS} tokens per chunk (the whole logits never "
        f"exist)")
    return base.get_output_embeddings()


def check_loss(head) -> None:
    if head is not None and not getattr(head, "chunked_calls", 0):
        fail("--loss chunked: the LM head never computed the chunked loss in step 1")


def decoder_layers(model) -> list:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    base = getattr(base, "module", base)
    return list(base.model.layers)


class LayerCalls:
    """Counts decoder-layer forwards that run inside backward (recomputation), with hooks on each layer's
    attention block (transformers wraps the layer's `forward` for checkpointing, so its submodules are what
    re-run): one per layer and micro-batch with recomputation, none without."""

    def __init__(self, layers):
        self.n, self.layers, self.recomputed = len(layers), layers, 0
        self.handles = [getattr(m, "self_attn", m).register_forward_pre_hook(self._hook) for m in layers]

    def _hook(self, module, inputs):
        if torch._C._current_graph_task_id() != -1:   # called by the autograd engine: a recomputation
            self.recomputed += 1

    def check(self, granularity: str, micro_batches: int, pipeline_stage: bool = False) -> None:
        for h in self.handles:
            h.remove()
        if not all(m.training for m in self.layers):
            fail("decoder layers are not in training mode")
        expect = 0 if granularity == "none" else self.n * micro_batches
        got = self.recomputed
        if expect and pipeline_stage and got % expect == self.n:
            # torch.distributed.pipelining runs one extra backward per later stage on its first step, to infer
            # the gradient shapes (PipelineStage._backward_metadata_inference): one more pass per layer.
            got -= self.n
        # A pipeline stage that splits its backward (input gradients, then weight gradients) recomputes twice.
        ok = got == 0 if not expect else got > 0 and got % expect == 0
        if not ok:
            fail(f"activation checkpointing {granularity}: {self.recomputed} layer forwards re-ran in backward in "
                 f"step 1, expected {expect or 0} ({self.n} layers x {micro_batches} micro-batches)")
        log(f"activation checkpointing {granularity}: {self.recomputed} layer forwards recomputed in backward in "
            f"step 1 ({self.n} layers x {micro_batches} micro-batches{'' if expect else ': none planned'})")


def inner_optimizer(optim):
    """The optimizer that updates the weights (DeepSpeed and wrappers keep theirs in `.optimizer`)."""
    while isinstance(getattr(optim, "optimizer", None), torch.optim.Optimizer) \
            and optim.optimizer is not optim:
        optim = optim.optimizer
    return optim


def master_dtype(optim) -> torch.dtype:
    """dtype of the weights the optimizer step writes: DeepSpeed's fp32 partitions, else the parameters'."""
    for attr in ("fp32_partitioned_groups_flat", "single_partition_of_fp32_groups", "fp32_groups_flat_partition"):
        groups = getattr(optim, attr, None)
        if groups:
            return groups[0].dtype
    inner = inner_optimizer(optim)
    dtypes = {p.dtype for g in inner.param_groups for p in g["params"]}
    return dtypes.pop() if len(dtypes) == 1 else torch.float32 if torch.float32 in dtypes else next(iter(dtypes))


def expected_optimizer(args, offload: bool) -> str:
    if args.optimizer in BNB:
        return BNB[args.optimizer]
    if offload:
        return "DeepSpeedCPUAdam"    # DeepSpeed's AdamW for offloaded optimizer states
    return {"sgd": "SGD", "sgd-plain": "SGD", "adafactor": "Adafactor"}.get(args.optimizer, "AdamW")


def make_optimizer(params, args, lr: float):
    name = args.optimizer
    if name in BNB:
        import bitsandbytes as bnb

        return getattr(bnb.optim, BNB[name])(params, lr=lr, weight_decay=0.0)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "sgd-plain":
        return torch.optim.SGD(params, lr=lr, momentum=0.0)
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=lr, scale_parameter=False, relative_step=False, warmup_init=False)
    kw = {"fused": True} if name == "adamw-fused" else {"foreach": True} if name == "adamw-foreach" else {}
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.0, **kw)


def check_optimizer(optim, args, offload: bool = False) -> None:
    inner = inner_optimizer(optim)
    want = expected_optimizer(args, offload)
    got = type(inner).__name__
    if got != want:
        fail(f"optimizer {got}, the plan says {want} ({args.optimizer})")
    master = master_dtype(optim)
    want_master = DTYPES[args.precision] if args.optimizer == "adamw-bf16" else torch.float32
    if master != want_master:
        fail(f"master weights {master}, expected {want_master}")
    log(f"optimizer {got} ({type(inner).__module__}) for {args.optimizer}; master weights "
        f"{str(master).replace('torch.', '')}, compute {args.precision}")


# ---------------------------------------------------------------------------------------------- checkpoints
CKPT_RE = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(out: Path) -> tuple[int, Path | None]:
    best: tuple[int, Path | None] = (0, None)
    if out.is_dir():
        for d in out.iterdir():
            m = CKPT_RE.match(d.name)
            if m and (d / "trainer_state.json").is_file() and int(m.group(1)) > best[0]:
                best = (int(m.group(1)), d)
    return best


def mark_complete(path: Path, step: int, args, losses: list) -> None:
    dist.barrier()
    if dist.get_rank() == 0:
        state = {"global_step": step, "world_size": dist.get_world_size(), "strategy": args.strategy,
                 "micro_batch": args.micro_batch, "grad_accum": args.grad_accum, "tp": args.tp, "pp": args.pp,
                 "optimizer": args.optimizer, "grad_ckpt": args.grad_ckpt, "losses": losses}
        (path / "trainer_state.json").write_text(json.dumps(state) + "\n")
    dist.barrier()


def rotate(out: Path, keep: int) -> None:
    """Keep the newest ``keep`` complete checkpoints (rank 0 deletes the older ones, complete or not): the plan's
    storage counts exactly that many (0 keeps all)."""
    if keep <= 0 or dist.get_rank() != 0:
        return
    found = sorted((int(m.group(1)), d) for d in out.iterdir() if (m := CKPT_RE.match(d.name)) and d.is_dir())
    complete = [step for step, d in found if (d / "trainer_state.json").is_file()]
    if len(complete) <= keep:
        return
    oldest_kept = complete[-keep]
    for step, d in found:
        if step < oldest_kept:
            shutil.rmtree(d, ignore_errors=True)
            log(f"removed {d.name} (save_total_limit {keep})")


def past_losses(ckpt: Path | None) -> list:
    if ckpt is None:
        return []
    return list(json.loads((ckpt / "trainer_state.json").read_text()).get("losses") or [])


def dcp_save(model, optim, path: Path, frozen_too: bool) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # Flattened optimizer state: one key per parameter, so pipeline stages with different parameters
    # never share a "param_groups" entry in the checkpoint.
    opts = StateDictOptions(ignore_frozen_params=not frozen_too, flatten_optimizer_state_dict=True)
    msd, osd = get_state_dict(model, optim, options=opts)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(path))


def dcp_load(model, optim, path: Path, frozen_too: bool) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict

    opts = StateDictOptions(ignore_frozen_params=not frozen_too, strict=frozen_too, flatten_optimizer_state_dict=True)
    msd, osd = get_state_dict(model, optim, options=opts)
    state = {"model": msd, "optim": osd}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optim, model_state_dict=state["model"], optim_state_dict=state["optim"], options=opts)


def replicated_save(model, optim, path: Path, frozen_too: bool) -> None:
    """DDP: every rank holds the same weights and optimizer state (any optimizer class, bitsandbytes
    8-bit states included): rank 0 writes them with torch.save."""
    if dist.get_rank() == 0:
        path.mkdir(parents=True, exist_ok=True)
        inner = getattr(model, "module", model)
        sd = {k: v for k, v in inner.state_dict().items()
              if frozen_too or k in {n for n, p in inner.named_parameters() if p.requires_grad}}
        torch.save({"model": sd, "optim": optim.state_dict()}, path / "state.pt")


def replicated_load(model, optim, path: Path) -> None:
    state = torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    getattr(model, "module", model).load_state_dict(state["model"], strict=False)
    optim.load_state_dict(state["optim"])


# ---------------------------------------------------------------------------------------------- training
def setup(strategy: str) -> torch.device:
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        return torch.device("cuda", local)
    if strategy == "deepspeed":
        # On CPU DeepSpeed would JIT-compile its shared-memory all-reduce op (deepspeed/comm/torch.py
        # build_shm_op: a C++ toolchain and minutes on first use in every fresh environment). The rehearsal's
        # gloo collectives do not need it, and the CUDA accelerator on the node never builds it.
        import deepspeed.ops

        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    return torch.device("cpu")


def check_batch(args, dp: int) -> None:
    if args.micro_batch * args.grad_accum * dp != args.global_batch:
        sys.exit(f"train.py: global batch {args.global_batch} != micro {args.micro_batch} x accumulation "
                 f"{args.grad_accum} x data-parallel {dp} (world {dist.get_world_size()}, TP {args.tp}, PP {args.pp})")


def log_layout(args, strategy: str, dp: int) -> None:
    nodes = int(os.environ.get("GROUP_WORLD_SIZE") or os.environ.get("NNODES") or 1)
    log(f"layout: strategy {strategy}, world {dist.get_world_size()} ({nodes} node(s)), TP {args.tp} x PP {args.pp} "
        f"x DP {dp}; micro-batch {args.micro_batch} x accumulation {args.grad_accum} x DP {dp} = global batch "
        f"{args.global_batch} sequences of {args.seq_len} tokens")


def log_versions() -> None:
    import transformers

    log(f"versions: Python {sys.version.split()[0]}, torch {torch.__version__}, transformers {transformers.__version__}")


def log_model(model) -> None:
    if not model.training:
        fail("the model is not in training mode")
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    cfg = getattr(base, "config", None)
    log(f"model {type(base).__name__} ({getattr(cfg, 'model_type', '?')}, {getattr(cfg, 'num_hidden_layers', '?')} "
        f"layers, hidden {getattr(cfg, 'hidden_size', '?')}); training mode on")


def deepspeed_config(args, lr: float) -> dict:
    cfg = json.loads(Path(args.deepspeed_config).read_text())
    if cfg.get("train_batch_size") != args.global_batch:
        sys.exit(f"train.py: {args.deepspeed_config} has train_batch_size {cfg.get('train_batch_size')}, the "
                 f"launcher passes global batch {args.global_batch}")
    zero = cfg.get("zero_optimization", {})
    if args.rehearsal:
        # The rehearsal keeps the global batch with fewer ranks (more accumulation); NVMe offload becomes CPU
        # offload (no NVMe path here); DeepSpeed's CPU accelerator has no fp16.
        cfg["train_micro_batch_size_per_gpu"], cfg["gradient_accumulation_steps"] = args.micro_batch, args.grad_accum
        for key in ("offload_optimizer", "offload_param"):
            if zero.get(key, {}).get("device") == "nvme":
                zero[key] = {"device": "cpu", "pin_memory": False}
                log(f"rehearsal: {key} nvme -> cpu")
        if cfg.get("fp16", {}).get("enabled") and not torch.cuda.is_available():
            cfg["fp16"], cfg["bf16"] = {"enabled": False}, {"enabled": True}
            log("rehearsal: DeepSpeed's CPU accelerator has no fp16: bf16 instead")
    elif (cfg.get("train_micro_batch_size_per_gpu"), cfg.get("gradient_accumulation_steps")) != \
            (args.micro_batch, args.grad_accum):
        sys.exit(f"train.py: {args.deepspeed_config} has micro-batch/accumulation "
                 f"{(cfg.get('train_micro_batch_size_per_gpu'), cfg.get('gradient_accumulation_steps'))}, the "
                 f"launcher passes {(args.micro_batch, args.grad_accum)}")
    if "offload_optimizer" in zero and args.optimizer not in BNB:
        cfg["optimizer"] = {"type": "AdamW", "params": {"lr": lr, "weight_decay": 0.0}}   # DeepSpeedCPUAdam
    return cfg


def autocast(device: torch.device, args, enabled: bool):
    if not enabled or args.precision == "fp32" or args.optimizer == "adamw-bf16":
        return nullcontext()
    return torch.autocast(device.type, dtype=DTYPES[args.precision])


def allow_tf32(args) -> None:
    """fp32 runs put their matmuls and convolutions on the TF32 tensor cores (compute capability 8.0+), the rate the
    plan's estimate timed them at; PyTorch leaves matmuls on the FP32 cores unless told (8x slower on an A100)."""
    if args.precision == "fp32" and torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        print("train.py: fp32 matmuls on the TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32)", flush=True)


def train(args) -> None:
    device = setup(args.strategy)
    allow_tf32(args)
    world, rank = dist.get_world_size(), dist.get_rank()
    if args.strategy == "tp_pp":
        return train_tp_pp(args, device)
    check_batch(args, world)
    lora = args.task in ("lora", "qlora")
    lr = args.lr or (1e-4 if lora else 1e-5)
    ds_cfg = deepspeed_config(args, lr) if args.strategy == "deepspeed" else None
    model, tokenizer = build_model(args, ds_cfg)
    model = prepare(model, args)
    loss_head = apply_loss(model, args)
    log_layout(args, args.strategy, world)
    log_versions()
    log_model(model)
    counter = LayerCalls(decoder_layers(model))
    blocks = tokenize(read_texts(args.data), tokenizer, args.seq_len, mask_prompt=args.task != "pretrain")
    if args.task != "qlora" and args.strategy != "deepspeed":
        model.to(device)
    engine = None
    if args.strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    elif args.strategy == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        if args.optimizer in BNB:
            fail("bitsandbytes optimizers do not step FSDP2's sharded DTensor parameters: use DeepSpeed")
        reshard = args.zero in (0, 3)   # ZeRO-3 / FULL_SHARD; 1-2 keep parameters between fwd and bwd
        mp = MixedPrecisionPolicy(param_dtype=DTYPES[args.precision], reduce_dtype=torch.float32) \
            if args.precision != "fp32" and args.optimizer != "adamw-bf16" else MixedPrecisionPolicy()
        log(f"FSDP2 fully_shard, reshard_after_forward={reshard} (ZeRO-{args.zero or 3} analogue), "
            f"param_dtype {args.precision}, reduce_dtype float32")
        for layer in decoder_layers(model):
            fully_shard(layer, reshard_after_forward=reshard, mp_policy=mp)
        fully_shard(model, reshard_after_forward=reshard, mp_policy=mp)
    params = [p for p in model.parameters() if p.requires_grad]
    offload = bool(ds_cfg and "offload_optimizer" in ds_cfg.get("zero_optimization", {}))
    optim = None if (offload and args.optimizer not in BNB) else make_optimizer(params, args, lr)
    if ds_cfg is not None:
        import deepspeed

        log(f"DeepSpeed ZeRO-{ds_cfg['zero_optimization']['stage']} on {'CUDA' if device.type == 'cuda' else 'CPU'}"
            f"{', optimizer offload to ' + ds_cfg['zero_optimization']['offload_optimizer']['device'] if offload else ''}")
        engine, optim, _, _ = deepspeed.initialize(model=model, optimizer=optim,
                                                   model_parameters=params if optim is None else None, config=ds_cfg)
    check_optimizer(optim, args, offload)
    scaler = torch.amp.GradScaler(device.type) if args.precision == "fp16" and engine is None else None
    out = Path(args.output_dir)
    start, ckpt = latest_checkpoint(out)
    if ckpt is not None:
        if engine is not None:
            engine.load_checkpoint(str(out), tag=ckpt.name)
        elif args.strategy == "ddp":
            replicated_load(model, optim, ckpt)
        else:
            dcp_load(model, optim, ckpt, frozen_too=not lora)
        log(f"resumed from {ckpt} at step {start}")
    losses = past_losses(ckpt)
    steps = args.max_steps or max(1, blocks.shape[0] // args.global_batch)
    for step in range(start, steps):
        t0 = time.time()
        total = 0.0
        for m in range(args.grad_accum):
            xy = batch(blocks, step, args.micro_batch, args.grad_accum, rank, world, m).to(device)
            with autocast(device, args, engine is None):
                loss = (engine or model)(input_ids=xy[:, 0], labels=xy[:, 1]).loss
            if engine is not None:
                engine.backward(loss)
                engine.step()
            elif scaler is not None:
                scaler.scale(loss / args.grad_accum).backward()
            else:
                (loss / args.grad_accum).backward()
            total += loss.item() / args.grad_accum
        if engine is None:
            if scaler is not None:
                scaler.unscale_(optim)
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            if scaler is not None:
                scaler.step(optim)
                scaler.update()
            else:
                optim.step()
            optim.zero_grad(set_to_none=True)
        if step == start:
            counter.check(args.grad_ckpt, args.grad_accum)
            check_loss(loss_head)
        losses.append(round(total, 6))
        if args.step_delay:
            time.sleep(args.step_delay)
        log(f"step {step + 1}/{steps} loss {total:.4f} ({time.time() - t0:.2f} s)")
        if (step + 1) % args.save_steps == 0 or step + 1 == steps:
            path = out / f"checkpoint-{step + 1}"
            if engine is not None:
                engine.save_checkpoint(str(out), tag=path.name)
            elif args.strategy == "ddp":
                replicated_save(model, optim, path, frozen_too=not lora)
            else:
                dcp_save(model, optim, path, frozen_too=not lora)
            mark_complete(path, step + 1, args, losses)
            log(f"saved {path}")
            rotate(out, args.save_total_limit)
    save_final(model, engine, out, lora)
    finish(args, losses)


def finish(args, losses: list) -> None:
    if args.rehearsal and dist.get_rank() == 0:
        if len(losses) < 2 or not losses[-1] < losses[0]:
            fail(f"the loss did not go down: {losses}")
        log(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} over {len(losses)} steps: down")
    dist.barrier()
    dist.destroy_process_group()
    if not torch.cuda.is_available():
        # DeepSpeed's CPU path can abort at interpreter exit after a clean run ("terminate called without an
        # active exception", a worker thread not joined): everything is saved, so leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def save_final(model, engine, out: Path, lora: bool) -> None:
    """Hugging Face format (the LoRA adapter for LoRA/QLoRA) in <output_dir>/final."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    if engine is not None:
        if lora:   # the adapter only (ZeRO-3: gathered from its shards first)
            import deepspeed

            trained = [p for p in engine.module.parameters() if p.requires_grad]
            with deepspeed.zero.GatheredParameters(trained, modifier_rank=None):
                if dist.get_rank() == 0:
                    engine.module.save_pretrained(str(out / "final"))
        else:
            engine.save_16bit_model(str(out / "final"))
        dist.barrier()
        log(f"saved the final model to {out / 'final'}")
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
    """The Megatron stand-in: tensor parallel inside each pipeline stage (DTensor), GPipe across stages, data
    parallel 1, fp32 master weights with autocast, the planned recomputation per layer."""
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.utils.checkpoint import checkpoint

    world = dist.get_world_size()
    if world != args.tp * args.pp:
        sys.exit(f"train.py: tp_pp needs exactly TP x PP = {args.tp * args.pp} processes, got {world}")
    check_batch(args, 1)
    mesh = init_device_mesh(device.type, (args.pp, args.tp), mesh_dim_names=("pp", "tp"))
    pp_rank = mesh["pp"].get_local_rank()
    args.strategy = "tp_pp"
    model, tokenizer = build_model(args)
    model.train()
    log_layout(args, "tp_pp (Megatron stand-in: DTensor tensor parallel + GPipe pipeline stages)", 1)
    log_versions()
    log_model(model)
    base = model.model
    n = len(base.layers)
    bounds = [round(i * n / args.pp) for i in range(args.pp + 1)]
    lo, hi = bounds[pp_rank], bounds[pp_rank + 1]
    first, last = pp_rank == 0, pp_rank == args.pp - 1
    kw = ckpt_kwargs(args.grad_ckpt)

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = base.embed_tokens if first else None
            self.layers = nn.ModuleDict({str(i): base.layers[i] for i in range(lo, hi)})
            self.rotary = base.rotary_emb
            self.norm = base.norm if last else None
            self.lm_head = model.lm_head if last else None

        def forward(self, x):
            with autocast(device, args, True):
                h = self.embed(x) if self.embed is not None else x
                pos = torch.arange(h.shape[1], device=h.device).unsqueeze(0).expand(h.shape[0], -1)
                pe = self.rotary(h, pos)
                for layer in self.layers.values():
                    run = partial(layer, attention_mask=None, position_ids=pos, position_embeddings=pe)
                    o = checkpoint(run, h, **kw) if args.grad_ckpt != "none" else run(h)
                    h = o[0] if isinstance(o, tuple) else o
                return self.lm_head(self.norm(h)).float() if last else h.float()

    stage_mod = Stage().to(device).train()
    counter = LayerCalls(list(stage_mod.layers.values()))
    if args.tp > 1:
        for layer in stage_mod.layers.values():
            plan = {f"self_attn.{k}_proj": ColwiseParallel() for k in "qkv"}
            plan["self_attn.o_proj"] = RowwiseParallel()
            if hasattr(layer.mlp, "gate_proj"):
                plan.update({"mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
                             "mlp.down_proj": RowwiseParallel()})
            parallelize_module(layer, mesh["tp"], plan)
    optim = make_optimizer(list(stage_mod.parameters()), args, args.lr or 1e-5)
    check_optimizer(optim, args)
    blocks = tokenize(read_texts(args.data), tokenizer, args.seq_len, mask_prompt=args.task != "pretrain")

    def loss_fn(logits, target):   # labels -100 (prompt tokens) are ignored
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), target[:, 1:].reshape(-1),
                               ignore_index=-100)

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
    losses = past_losses(ckpt)
    steps = args.max_steps or max(1, blocks.shape[0] // args.global_batch)
    log(f"TP {args.tp} x PP {args.pp}: stage {pp_rank} holds layers {lo}..{hi - 1}; "
        f"{args.grad_accum} micro-batches of {args.micro_batch} per step")
    for step in range(start, steps):
        xy = torch.cat([batch(blocks, step, args.micro_batch, args.grad_accum, 0, 1, m)
                        for m in range(args.grad_accum)]).to(device)
        x, y = xy[:, 0], xy[:, 1]
        loss_val = None
        if schedule is None:
            loss_val = 0.0
            for m in range(args.grad_accum):
                sl = slice(m * args.micro_batch, (m + 1) * args.micro_batch)
                loss = loss_fn(stage_mod(x[sl]), y[sl]) / args.grad_accum
                loss.backward()
                loss_val += loss.item()
        elif first:
            schedule.step(x)
        elif last:
            got: list = []
            schedule.step(target=y, losses=got)
            loss_val = sum(float(v.detach()) for v in got) / len(got)
        else:
            schedule.step()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if step == start:
            counter.check(args.grad_ckpt, args.grad_accum, pipeline_stage=schedule is not None and not first)
        shared = torch.tensor([loss_val if loss_val is not None else 0.0])
        dist.all_reduce(shared, op=dist.ReduceOp.MAX)   # the last stage's loss, for rank 0's log
        losses.append(round(float(shared), 6))
        if args.step_delay:
            time.sleep(args.step_delay)
        log(f"step {step + 1}/{steps} loss {float(shared):.4f}")
        if (step + 1) % args.save_steps == 0 or step + 1 == steps:
            path = out / f"checkpoint-{step + 1}"
            dcp_save(stage_mod, optim, path, frozen_too=True)
            mark_complete(path, step + 1, args, losses)
            log(f"saved {path}")
            rotate(out, args.save_total_limit)
    finish(args, losses)


# ---------------------------------------------------------------------------------------------- Megatron flags
# Runtime packages ms-swift's argument modules import but parsing never uses (Megatron-Core, mcore-bridge,
# data and hub libraries): stand-ins where they are not installed, so the check runs on any machine.
MS_SWIFT_RUNTIME = ("megatron", "mcore_bridge", "datasets", "modelscope", "pandas", "PIL", "json_repair", "kernels")


def check_megatron_args(cmd: str, version: str, argv: list) -> None:
    """Parse `megatron sft|pt ARGS` with ms-swift's MegatronSftArguments/MegatronPretrainArguments and its parser
    (swift.utils.parse_args: HfArgumentParser, unknown arguments are an error) without running anything.
    ms-swift comes from the environment or from ~/.cache/gpuplan/ms-swift-VERSION
    (`pip install --no-deps --target ~/.cache/gpuplan/ms-swift-VERSION ms-swift==VERSION`)."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    from unittest import mock

    cache = Path.home() / ".cache" / "gpuplan" / f"ms-swift-{version}"
    if importlib.util.find_spec("swift") is None:
        if not (cache / "swift").is_dir():
            print(f"train.py: ms-swift {version} is not installed here: the megatron command line was not parsed "
                  f"(pip install --no-deps --target {cache} ms-swift=={version})", flush=True)
            return
        sys.path.insert(0, str(cache))
    missing = {m for m in MS_SWIFT_RUNTIME if importlib.util.find_spec(m) is None}

    class StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] not in missing:
                return None
            return importlib.machinery.ModuleSpec(name, self, is_package=True)

        def create_module(self, spec):
            module = mock.MagicMock(name=spec.name)
            module.__path__, module.__spec__, module.__version__ = [], spec, "0.0"
            return module

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, StandIn())
    from transformers import HfArgumentParser

    import swift
    from swift.megatron.arguments import MegatronPretrainArguments, MegatronSftArguments
    from swift.utils.utils import _patch_get_type_hints

    cls = MegatronPretrainArguments if cmd == "pt" else MegatronSftArguments
    with _patch_get_type_hints():
        parser = HfArgumentParser([cls])
    ns, rest = parser.parse_known_args(argv)
    if rest:
        fail(f"megatron {cmd}: ms-swift {swift.__version__} does not know {rest}")
    flags = [a for a in argv if a.startswith("--")]
    print(f"train.py: megatron {cmd} command line parsed by ms-swift {getattr(swift, '__version__', version)}'s "
          f"{cls.__name__} (HfArgumentParser): {len(flags)} flags, recompute_granularity "
          f"{ns.recompute_granularity}, train_iters {ns.train_iters}, num_train_epochs {ns.num_train_epochs}, "
          f"micro_batch_size {ns.micro_batch_size}, global_batch_size {ns.global_batch_size}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["make-tiny-model"]:
        make_tiny_model(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["check-megatron-args"]:
        check_megatron_args(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        train(parse())
