"""LLM.int8() decode (bitsandbytes Linear8bitLt under Hugging Face generate): every Linear call synchronises the
host, so a fixed time per call runs in series with the step (estimate/serving/decode.py int8_serial_s).

Sources:
- HF blog bloom-inference-pytorch-scripts (dev group bloom): BLOOM-176B int8, 8 A100-80GB split layer by layer
  (accelerate device_map), batch 1: 286.56 ms per token (3.49 tokens/s).
- premAI-io/benchmarks README @16338c3 (held-out set 6, exposed): Llama-2-7B-chat int8, one A100-SXM4-80GB,
  transformers 4.39.3 + bitsandbytes 0.43.1, batch 1: 6.91 tokens/s.
"""

from __future__ import annotations

import pytest

from gpuplan.catalog.models import get_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import shape_of


def _tps(model, gpu, count, quantization, pp=1, precision="fp16", prompt=20, out=512):
    w = dict(model=model, task="inference", precision=precision, quantization=quantization, framework="transformers",
             batch_size=1, prompt_tokens=prompt, output_tokens=out, hardware={"gpu": gpu, "count": count})
    if pp > 1:
        w["parallel"] = {"pp": pp}
    return estimate(w).to_dict()["performance"]["output_tokens_per_s"]


def test_linear_calls_count_fused_projections_once():
    assert shape_of(get_model("meta-llama/Llama-2-7b-hf")).linear_calls == 32 * 7      # q, k, v, o, gate, up, down
    assert shape_of(get_model("bigscience/bloom")).linear_calls == 70 * 4              # fused qkv, dense, h->4h, 4h->h
    assert shape_of(get_model("mistralai/Mixtral-8x7B-v0.1")).linear_calls == 32 * (4 + 2 * 3)   # two routed experts


def test_int8_decode_matches_both_published_sizes():
    assert _tps("meta-llama/Llama-2-7b-chat-hf", "A100-SXM4-80GB", 1, "bnb-int8") == pytest.approx(6.91, rel=0.2)
    assert _tps("bigscience/bloom", "A100-80GB", 8, "bnb-int8", pp=8, precision="bf16", prompt=10, out=100) == \
        pytest.approx(3.49, rel=0.2)


def test_int8_is_slower_than_16_bit_in_eager_generate():
    # the per-call sync outweighs reading half the bytes (the HF int8 docs: slower than fp16 at small batch)
    fp16 = _tps("meta-llama/Llama-2-7b-chat-hf", "A100-SXM4-80GB", 1, "none")
    int8 = _tps("meta-llama/Llama-2-7b-chat-hf", "A100-SXM4-80GB", 1, "bnb-int8")
    assert int8 < 0.5 * fp16
