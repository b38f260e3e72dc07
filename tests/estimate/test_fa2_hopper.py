"""FlashAttention-2 on Hopper (efficiency.yaml fa2_on_hopper, estimate/clocks.attention_rate_factor): the attention core
of a FA2 stack on a full-rate Hopper part runs at about half the GEMMs' rate (FA2 issues Ampere's mma.sync; ~35 % of an
H100's peak, FlashAttention-3 paper; 329 vs cuDNN's 631 TFLOP/s, pytorch #142132). Pinned to published ratios."""

from __future__ import annotations

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.estimate.clocks import attention_rate_factor
from gpuplan.estimate.core import estimate


@pytest.mark.parametrize("gpu,framework,model_parallel,rate", [
    ("H100-SXM-80GB", "transformers", False, 0.5),
    ("H800-SXM-80GB", "torchtune", False, 0.5),
    ("H200-SXM-141GB", "llm-foundry", False, 0.5),
    ("H100-SXM-80GB", "transformers", True, 1.0),    # a model-parallel layout launches Megatron-Core (TE, cuDNN)
    ("H100-SXM-80GB", "megatron", False, 1.0),       # Transformer Engine's cuDNN fused attention
    ("H100-SXM-80GB", "vllm", False, 1.0),           # the engines run Hopper kernels (FA3, FlashInfer)
    ("H20-96GB", "transformers", False, 1.0),        # its capped 148 TFLOP/s sits below what mma.sync delivers
    ("A100-SXM4-80GB", "transformers", False, 1.0),  # FA2 on Ampere: about the GEMMs' share, the fitted rate
])
def test_which_cards_and_stacks_run_attention_below_the_gemm_rate(gpu, framework, model_parallel, rate):
    assert attention_rate_factor(get_gpu(gpu), framework, model_parallel) == rate


def _train(seq: int, mb: int, gpu: str = "H100-SXM-80GB", framework: str = "llm-foundry", ckpt: bool = True):
    return estimate({"model": "meta-llama/Llama-2-7b-hf", "task": "pretrain", "precision": "bf16", "seq_len": seq,
                     "batch_size": mb, "framework": framework, "hardware": {"gpu": gpu, "count": 8},
                     "grad_checkpointing": ckpt,
                     "parallel": {"tp": 1, "pp": 1, "dp": 8, "fsdp": "full_shard"}})


def test_long_sequences_lose_more_on_the_h100_as_llm_foundry_measured():
    # llm-foundry's H100 table, MPT-7B: 10,643 tokens/s per GPU at 2,048 tokens (micro-batch 6, no activation
    # checkpointing), 3,318 at 32,768 (micro-batch 2, checkpointing): 3.21x. The attention core's share grows with the
    # sequence, and FA2 runs it at half the GEMM rate (timed at the GEMM rate the estimate gave 2.0x)
    short, long_ = (_train(seq, mb, ckpt=ckpt).performance["tokens_per_s_per_gpu"]
                    for seq, mb, ckpt in ((2048, 6, False), (32768, 2, True)))
    assert short / long_ == pytest.approx(10643 / 3318, rel=0.2)


def test_the_a100_keeps_its_attention_at_the_gemm_rate():
    est = _train(32768, 2, gpu="A100-SXM4-80GB")
    assert not any("FlashAttention-2" in a for a in est.assumptions)
    assert any("FlashAttention-2" in a for a in _train(32768, 2).assumptions)


def test_megatron_on_the_h100_is_not_slowed():
    mega, hf = (_train(32768, 2, framework=f).performance["step_time_s"] for f in ("megatron", "transformers"))
    assert not any("FlashAttention-2" in a for a in _train(32768, 2, framework="megatron").assumptions)
    assert hf > mega * 1.05   # the same FLOPs, the attention core at half rate


# --- a stated attention kernel (workload attention_kernel) ---------------------------------------------------------

@pytest.mark.parametrize("gpu,framework,kernel,rate", [
    ("H100-SXM-80GB", "torch-compile", "fa3", 1.0),    # FlashAttention-3: Hopper's wgmma, the GEMMs' rate
    ("H100-SXM-80GB", "transformers", "cudnn", 1.0),   # cuDNN SDPA: 631 against FA2's 329 TFLOP/s (pytorch #142132)
    ("H100-SXM-80GB", "megatron", "fa2", 0.5),         # FA2 stated under a stack that usually runs Hopper kernels
    ("H100-SXM-80GB", "vllm", "fa2", 0.5),
    ("A100-SXM4-80GB", "transformers", "fa2", 1.0),    # on Ampere FA2 keeps the fitted rate
    ("A100-SXM4-80GB", "transformers", "fa3", 1.0),    # (fa3 does not run there: warned, timed as FA2)
])
def test_a_stated_kernel_decides_the_attention_rate_on_hopper(gpu, framework, kernel, rate):
    assert attention_rate_factor(get_gpu(gpu), framework, kernel=kernel) == rate


def _wan(kernel: str | None, gpu: str = "H100-SXM-80GB"):
    w = {"model": "Wan-AI/Wan2.1-T2V-14B", "task": "inference", "framework": "torch-compile",
         "hardware": {"gpu": gpu}, "input": {"frames": 81, "height": 720, "width": 1280, "steps": 50}}
    if kernel:
        w["attention_kernel"] = kernel
    return estimate(w)


def test_fa3_runs_a_video_dit_attention_at_the_gemm_rate():
    # Wan2.1-14B at 720p, 81 frames: 75,600 video tokens, attention 4.7e15 of 6.8e15 FLOPs a pass (video.py). FA2
    # doubles the attention's time, so FA3 takes ~(1 - 0.69 / 2) / 1 of FA2's ~1.69 = ~0.59 of its latency
    fa2, fa3 = (_wan(k).performance["latency_s"] for k in (None, "fa3"))
    assert 0.5 < fa3 / fa2 < 0.7
    assert any("FlashAttention-3" in a and "GEMMs' rate" in a for a in _wan("fa3").assumptions)
    assert _wan("fa2").performance["latency_s"] == pytest.approx(fa2)   # torch-compile's own kernel is FA2


def test_fa3_on_an_ampere_card_warns_and_is_timed_as_fa2():
    est = _wan("fa3", gpu="A100-SXM4-80GB")
    assert any("FlashAttention-3 runs on Hopper GPUs" in w for w in est.warnings)
    assert est.performance["latency_s"] == pytest.approx(_wan(None, gpu="A100-SXM4-80GB").performance["latency_s"])


def test_training_keeps_the_stack_rule_for_fa3_and_takes_fa2_as_stated():
    # prime-rl's FA3 runs on the H100 (held-out set 11) step at the FA2 rule's pace: no faster backward is assumed
    def step(framework: str, kernel: str | None) -> float:
        w = {"model": "meta-llama/Llama-2-7b-hf", "task": "pretrain", "seq_len": 32768, "batch_size": 2,
             "framework": framework, "grad_checkpointing": True, "hardware": {"gpu": "H100-SXM-80GB", "count": 8},
             "parallel": {"tp": 1, "pp": 1, "dp": 8, "fsdp": "full_shard"}}
        if kernel:
            w["attention_kernel"] = kernel
        return estimate(w).performance["step_time_s"]
    assert step("fsdp", "fa3") == pytest.approx(step("fsdp", None))
    assert step("megatron", "fa2") > step("megatron", None) * 1.05


def test_a_kernel_with_flash_attention_off_is_refused():
    from gpuplan.errors import GpuplanError

    with pytest.raises((GpuplanError, ValueError), match="names a fused attention kernel"):
        estimate({"model": "Qwen/Qwen2.5-7B", "task": "full", "flash_attention": False, "attention_kernel": "fa3",
                  "hardware": {"gpu": "H100-SXM-80GB"}})
