"""Fine-tuning step time: GPTQ dequantisation traffic and causal FlashAttention, pinned to published figures.

Source: Qwen-1 README, "Profiling of Memory and Speed" (QwenLM/Qwen @ 85cb093, README.md): Qwen finetune.py
(HF Trainer + PEFT, torch 2.0, flash-attn 2) on one A100-SXM4-80G, batch 1 x gradient accumulation 8,
every sample padded to the sequence length, gradient checkpointing, LoRA r64 on every linear layer;
Q-LoRA on the GPTQ-int4 checkpoint (fp16, DeepSpeed ZeRO-2). Seconds per optimizer step (8 samples):

    Qwen-7B   LoRA    256: 1.2   2048: 5.2   8192: 21.3
    Qwen-7B   Q-LoRA  256: 3.0   2048: 7.0   8192: 22.3
    Qwen-14B  LoRA   8192: 36.0
    Qwen-1.8B LoRA    256: 1.0   512: 1.0  (launch-bound: 125 ms per micro-batch at both lengths)
    Qwen-1.8B Q-LoRA  256: 1.4

(bench/data group qwen1ft, ids N801-N848.)
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import shape_of
from gpuplan.estimate.training.costs import flops_per_token
from gpuplan.catalog.models import resolve_model


def _qwen1(model: str, task: str, seq: int) -> dict:
    d = dict(model=model, task=task, framework="transformers", seq_len=seq, batch_size=1,
             gradient_accumulation=8, grad_checkpointing=True, flash_attention=True,
             # torch 2.0, 2023: PEFT before 0.12 kept the adapters in the base layer's dtype (lora.adapter_dtype)
             lora={"rank": 64, "targets": "all-linear", "adapter_dtype": "model"},
             hardware={"gpu": "A100-SXM4-80GB", "count": 1})
    if task == "qlora":
        d.update(precision="fp16", quantization="gptq-int4", parallel={"zero": 2})
    else:
        d.update(precision="bf16")
    return estimate(d).performance


def _s_per_it(p: dict) -> float:
    return 8.0 / p["samples_per_s"]


@pytest.mark.parametrize("model,task,seq,ref", [
    ("Qwen/Qwen-7B-Chat", "lora", 2048, 5.2),
    ("Qwen/Qwen-7B-Chat", "lora", 8192, 21.3),
    ("Qwen/Qwen-7B-Chat", "qlora", 2048, 7.0),
    ("Qwen/Qwen-7B-Chat", "qlora", 8192, 22.3),
    ("Qwen/Qwen-14B-Chat", "lora", 8192, 36.0),
])
def test_qwen1_readme_step_time(model, task, seq, ref):
    got = _s_per_it(_qwen1(model, task, seq))
    assert abs(got - ref) / ref < 0.2, (model, task, seq, got, ref)


def test_gptq_dequantisation_is_a_cost_per_micro_batch():
    """Q-LoRA over LoRA: 3.0 / 1.2 = 2.5x at 256 tokens, 22.3 / 21.3 = 1.05x at 8192. An HFU factor on
    the GEMMs would keep the ratio constant; dequantising each weight once per call makes it fade."""
    m = "Qwen/Qwen-7B-Chat"
    short = _s_per_it(_qwen1(m, "qlora", 256)) / _s_per_it(_qwen1(m, "lora", 256))
    long = _s_per_it(_qwen1(m, "qlora", 8192)) / _s_per_it(_qwen1(m, "lora", 8192))
    assert short > 1.5
    assert 1.0 < long < 1.15
    assert short > long


def test_causal_flash_attention_executes_half_the_scores_mfu_keeps_the_convention():
    s = shape_of(resolve_model("Qwen/Qwen-7B-Chat"))
    model_full, hw_full = flops_per_token(s, 8192, "lora", "full")
    model_half, hw_half = flops_per_token(s, 8192, "lora", "full", attn_executed_share=0.5)
    assert model_half == model_full
    attn = 4.0 * s.layers * s.heads * s.head_dim * 8192
    # LoRA with recomputation runs the attention core 4 times (forward, recompute, 2 in backward)
    assert hw_full - hw_half == pytest.approx(4 * attn * 0.5)


def test_unfused_attention_is_not_halved():
    base = dict(model="Qwen/Qwen-7B-Chat", task="lora", precision="bf16", framework="transformers", seq_len=4096,
                batch_size=1, gradient_accumulation=8, grad_checkpointing=True,
                hardware={"gpu": "A100-SXM4-80GB", "count": 1})
    flash = estimate({**base, "flash_attention": True}).performance
    eager = estimate({**base, "flash_attention": False}).performance
    assert eager["samples_per_s"] < flash["samples_per_s"]
    assert flash["mfu"] > eager["mfu"]


@pytest.mark.parametrize("task,seq,ref", [("lora", 256, 1.0), ("lora", 512, 1.0), ("qlora", 256, 1.4)])
def test_small_model_short_steps_are_launch_bound(task, seq, ref):
    """Qwen-1.8B at 256-512 tokens: the Python launches of the decoder layers, the PEFT adapters on its
    5 linears and (Q-LoRA) AutoGPTQ's unpacking ops set the step, not the GEMMs."""
    got = _s_per_it(_qwen1("Qwen/Qwen-1_8B-Chat", task, seq))
    assert abs(got - ref) / ref < 0.2, (task, seq, got, ref)
