"""Memory mechanisms pinned to published figures (issue 12, fin-mem): generate's prompt logits in
older transformers, gradients under CPU offload, LoRA targets that the architecture has."""

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.estimate.memory import prompt_logits_bytes_per_vocab
from gpuplan.units import GIB
from gpuplan.workload import parse_workload

QWEN2_LONG = {"model": "Qwen/Qwen2-0.5B-Instruct", "task": "inference", "framework": "transformers",
              "precision": "bf16", "prompt_tokens": 30720, "output_tokens": 2048, "batch_size": 1,
              "flash_attention": True, "hardware": {"gpu": "A100-80GB", "count": 1}}


def test_transformers_438_keeps_prompt_logits_qwen2_benchmark():
    """Qwen2 speed benchmark (qwen.readthedocs.io v2.0, transformers 4.38.2, A100 80GB): Qwen2-0.5B-Instruct
    BF16 at a 30,720-token input peaks at 27.61 GiB of max_memory_allocated, nearly all of it the bf16 +
    fp32 logits of every prompt position (30,720 x 151,936 x 6 bytes = 26.1 GiB)."""
    old = estimate({**QWEN2_LONG, "framework_version": "4.38.2"}).memory
    assert old.peak_allocated_bytes / GIB == pytest.approx(27.61, rel=0.10)
    # the same run on a current stack (>= 4.45, or unset) keeps only the last position's logits
    new = estimate(QWEN2_LONG).memory
    assert new.peak_allocated_bytes < 5 * GIB
    assert estimate({**QWEN2_LONG, "framework_version": "4.45.0"}).memory.peak_allocated_bytes \
        == new.peak_allocated_bytes


def test_prompt_logits_only_for_old_transformers():
    assert prompt_logits_bytes_per_vocab("transformers", "4.38.2") == 6.0
    assert prompt_logits_bytes_per_vocab("transformers", "4.44.2") == 6.0
    assert prompt_logits_bytes_per_vocab("transformers", "4.45") == 0.0
    assert prompt_logits_bytes_per_vocab("transformers", "4.51.3") == 0.0
    assert prompt_logits_bytes_per_vocab("transformers", None) == 0.0
    assert prompt_logits_bytes_per_vocab("vllm", "0.4.2") == 0.0  # engines never materialise prompt logits


def test_prompt_logits_scale_with_prompt_and_batch():
    base = {**QWEN2_LONG, "framework_version": "4.38.2", "prompt_tokens": 4096}
    one = estimate(base).memory.peak_allocated_bytes
    two = estimate({**base, "prompt_tokens": 8192}).memory.peak_allocated_bytes
    assert two - one >= 4096 * 151936 * 6 * 0.95


def test_framework_version_is_validated():
    with pytest.raises(GpuplanError):
        parse_workload({**QWEN2_LONG, "framework_version": "latest; rm -rf"})


def test_cpu_offload_moves_gradients_off_the_gpu():
    """ZeRO-Offload (Ren et al. 2021) and FSDP CPU offload keep the sharded gradients in host RAM for the
    CPU optimizer step: torchtune's Llama-3.1-70B full fine-tune on 8 x A100 with CPU offload reports
    13.9 GiB peak reserved per GPU (README, commit 0031bfb), far below the 16.4 GiB that the bf16
    gradient shards alone would take on the GPU."""
    wl = {"model": "meta-llama/Llama-3.1-70B-Instruct", "task": "full", "framework": "torchtune",
          "optimizer": "adamw", "batch_size": 2, "seq_len": 2048, "grad_checkpointing": True,
          "flash_attention": True, "parallel": {"dp": 8, "fsdp": "full_shard", "offload": "cpu"},
          "hardware": {"gpu": "A100-80GB", "count": 8}}
    off = estimate(wl).memory
    on_gpu = estimate({**wl, "parallel": {"dp": 8, "fsdp": "full_shard"}}).memory
    assert off.components["gradients"] == 0.0
    assert on_gpu.components["gradients"] > 10 * GIB
    assert off.per_gpu_bytes < on_gpu.per_gpu_bytes - 10 * GIB
    assert off.per_gpu_bytes < 25 * GIB  # 13.9 GiB measured; activations and logits make up the rest


def test_zero2_offload_keeps_one_block_of_gradients():
    wl = {"model": "qwen2.5-7b", "task": "full", "framework": "deepspeed", "batch_size": 1, "seq_len": 2048,
          "parallel": {"dp": 2, "zero": 2, "offload": "cpu"}, "hardware": {"gpu": "A100-80GB", "count": 2}}
    off = estimate(wl).memory
    plain = estimate({**wl, "parallel": {"dp": 2, "zero": 2}}).memory
    assert 0 < off.components["gradients"] < 2 * GIB < plain.components["gradients"]
