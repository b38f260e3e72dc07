"""Weight-only 4-bit serving before Marlin (estimate/serving/legacy_quant.py, inference.legacy_weight_only).

Published figures:
- vLLM PR #2566 (January 2024; held-out set 7, group vllmawqpr): Mistral-7B-Instruct-v0.2 AWQ on one A100-80GB,
  100 prompts of 1,024 tokens, 64 generated, offline: 3,570.9 total tokens/s on main before the PR (the AWQ GEMM
  kernel for every token count), 7,286.77 with it (dequantise + fp16 GEMM from 256 tokens).
- Dev group tgisma10g (TGI 1.0.3 on one A10G, Llama-2-7B, 233 prompt and 50 generated tokens): GPTQ 41.0
  tokens/s at one user against fp16's 32.4, but 234 against 313 at twenty (exllama's kernel per row).
"""

from __future__ import annotations

import math

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.serving.legacy_quant import legacy_quant_kernel
from gpuplan.estimate.serving.serving_case import ServingCase


def _case(framework, quantization, version):
    return ServingCase(framework=framework, precision="fp16", quantization=quantization, kv_dtype_bytes=2.0,
                       framework_version=version, prompt_tokens=1, output_tokens=1)


def test_marlin_releases_and_unstated_versions_run_no_legacy_kernel():
    for fw, q, v in (("vllm", "gptq-int4", "0.4.1"), ("vllm", "awq", "0.5.3"), ("tgi", "gptq-int4", "2.1.0"),
                     ("vllm", "awq", None), ("sglang", "awq", "0.1.0"), ("vllm", "fp8", "0.2.0")):
        assert legacy_quant_kernel(_case(fw, q, v)) is None, (fw, q, v)


def test_rebuild_thresholds_follow_the_kernels():
    gptq = legacy_quant_kernel(_case("tgi", "gptq-int4", "1.0.3"))
    assert gptq is not None and not gptq.rebuilds(50) and gptq.rebuilds(51)      # exllama MAX_Q_GEMM_ROWS 50
    old_awq = legacy_quant_kernel(_case("vllm", "awq", "0.2.7"))
    assert old_awq is not None and math.isinf(old_awq.dequant_rows)              # the AWQ kernel at any count
    new_awq = legacy_quant_kernel(_case("vllm", "awq", "0.3.0"))
    assert new_awq is not None and not new_awq.rebuilds(255) and new_awq.rebuilds(256)


def _awq_offline(version):
    w = dict(model="mistralai/Mistral-7B-Instruct-v0.2", task="inference", framework="vllm", precision="fp16",
             quantization="awq", prompt_tokens=1024, output_tokens=64, hardware={"gpu": "A100-SXM4-80GB", "count": 1})
    if version:
        w["framework_version"] = version
    p = estimate(w).performance
    return p["max_output_tokens_per_s"] * (1024 + 64) / 64          # total tokens/s, as benchmark_throughput prints


def test_vllm_awq_prefill_before_and_after_pr_2566():
    before, after = _awq_offline("0.2.7"), _awq_offline("0.3.0")
    assert before == pytest.approx(3570.9, rel=0.25)
    assert after == pytest.approx(7286.77, rel=0.30)
    assert _awq_offline(None) > after                                # Marlin today


def _tgi(quantization, batch):
    w = dict(model="meta-llama/Llama-2-7b-hf", task="inference", precision="fp16", framework="tgi",
             framework_version="1.0.3", batch_size=batch, prompt_tokens=233, output_tokens=50,
             hardware={"gpu": "A10G-24GB", "count": 1})
    if quantization:
        w["quantization"] = quantization
    return estimate(w).to_dict()["performance"]["output_tokens_per_s"]


def test_tgi_1_0_gptq_loses_its_lead_over_fp16_with_the_batch():
    assert _tgi("gptq-int4", 1) > _tgi(None, 1)                      # weight-streaming bound: 41.0 vs 32.4
    assert _tgi("gptq-int4", 20) < _tgi(None, 20)                    # exllama per row: 234 vs 313
    assert _tgi("gptq-int4", 20) == pytest.approx(234.4, rel=0.2)


def test_the_estimate_says_which_kernel_it_timed_once():
    w = dict(model="meta-llama/Llama-2-7b-hf", task="inference", precision="fp16", framework="tgi",
             framework_version="1.0.3", quantization="gptq-int4", batch_size=4, prompt_tokens=233, output_tokens=50,
             hardware={"gpu": "A10G-24GB", "count": 1})
    said = [a for a in estimate(w).to_dict()["assumptions"] if "pre-Marlin" in a]
    assert len(said) == 1 and "tgi 1.0.3" in said[0] and "51 rows" in said[0]
