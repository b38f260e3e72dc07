"""transformers generate's prefill peak (issue 12, fit2): the prompt logits of transformers < 4.45 are made by
the LM head after the last decoder layer has freed its MLP intermediates, so they add to the weights, the KV
cache and the final hidden states, not to the layer's transient.

Qwen2 speed benchmark (https://qwen.readthedocs.io/en/v2.0/benchmark/speed_benchmark.html; transformers 4.38.2,
PyTorch 2.1.2, flash-attn 2.3.3, A100 80GB, batch 1, 2,048 generated tokens), 'GPU Memory(GB)' =
torch.cuda.max_memory_allocated at a 30,720-token input."""

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.units import GIB

BASE = {"task": "inference", "framework": "transformers", "framework_version": "4.38.2", "prompt_tokens": 30720,
        "output_tokens": 2048, "batch_size": 1, "flash_attention": True, "hardware": {"gpu": "A100-80GB", "count": 1}}


@pytest.mark.parametrize("model, quant, gib", [
    ("Qwen/Qwen2-7B-Instruct", "none", 42.62),
    ("Qwen/Qwen2-7B-Instruct", "gptq-int4", 33.76),
    ("Qwen/Qwen2-1.5B-Instruct", "none", 30.31),
    ("Qwen/Qwen2-57B-A14B-Instruct", "gptq-int4", 58.01),
])
def test_qwen2_long_prompt_peaks(model, quant, gib):
    wl = {**BASE, "model": model, "quantization": quant,
          "precision": "fp16" if quant.startswith("gptq") else "bf16"}
    peak = estimate(wl).memory.peak_allocated_bytes / GIB
    # the layer transient of a 30,720-token prefill (4 GiB for the 7B) is not on top of the logits
    assert peak == pytest.approx(gib, rel=0.04)


def test_prompt_logits_and_layer_transient_do_not_stack():
    wl = {**BASE, "model": "Qwen/Qwen2-7B-Instruct", "precision": "bf16"}
    short = estimate({**wl, "prompt_tokens": 64}).memory.peak_allocated_bytes
    long = estimate(wl).memory.peak_allocated_bytes
    logits = 30720 * 152064 * 6.0  # bf16 + fp32 logits of every prompt position
    kv = 28 * 2 * 4 * 128 * 2.0 * (30720 - 64)  # Qwen2-7B: 28 layers, 4 KV heads of 128, bf16
    assert long - short == pytest.approx(logits + kv, rel=0.05)
