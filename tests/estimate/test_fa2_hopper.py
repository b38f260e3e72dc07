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
