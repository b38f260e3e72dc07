"""An engine's per-step token budget and batch limit (estimate/memory/engine_limits.py): one rule read by the
engine's memory profile (memory/serve.py) and by the serving model's chunked prefill (serving/inference.py)."""

from __future__ import annotations

import pytest

from gpuplan import estimate
from gpuplan.estimate.memory.engine_limits import default_max_num_seqs, step_tokens, version_tuple

GIB = 2**30


@pytest.mark.parametrize("framework,gpu,memory,version,context,want", [
    ("vllm", "H100-SXM-80GB", 79.2, None, 4096, 8192),       # V1 get_batch_defaults: >= 70 GiB, not an A100
    ("vllm", "A100-SXM4-80GB", 79.2, None, 4096, 2048),
    ("vllm", "L40S-48GB", 44.4, None, 4096, 2048),
    ("vllm", "L40S-48GB", 44.4, "0.7.3", 10000, 10000),      # V0: max(max_model_len, 2048) unchunked
    ("vllm", "T4-16GB", 14.7, "0.7.2", 512, 2048),
    ("vllm", "H100-SXM-80GB", 79.2, "0.6.6.post1", 65536, 2048),   # V0 chunks above a 32k context
    ("sglang", "H100-SXM-80GB", 79.2, None, 4096, 8192),
    ("sglang", "H200-SXM-141GB", 139.7, None, 4096, 8192),
    ("tgi", "A10-24GB", 22.0, None, 4096, 4096),
])
def test_an_engine_step_takes_its_launch_default_tokens(framework, gpu, memory, version, context, want):
    assert step_tokens(framework, gpu, memory, version=version, context_tokens=context) == want


def test_a_version_without_a_release_number_is_the_current_release():
    assert step_tokens("vllm", "H100-SXM-80GB", 79.2, version="main", context_tokens=10000) == 8192


def test_sglang_halves_its_chunk_with_dp_attention():
    assert step_tokens("sglang", "H100-SXM-80GB", 79.2, dp_attention=True) == 4096


def test_versions_and_batch_limits():
    assert version_tuple("0.6.3.post1") == (0, 6, 3) and version_tuple("main") == ()
    assert default_max_num_seqs("vllm", "0.7.3", "H100-SXM-80GB", 79.2) == 256
    assert default_max_num_seqs("vllm", None, "H100-SXM-80GB", 79.2) == 1024


def _vllm(model, gpu, tp, version, context):
    return estimate({"model": model, "task": "inference", "framework": "vllm", "framework_version": version,
                     "prompt_tokens": context - 512, "output_tokens": 512, "batch_size": 1,
                     "parallel": {"tp": tp}, "hardware": {"gpu": gpu, "count": tp}})


def test_the_engine_profile_counts_the_step_it_is_launched_with():
    """vLLM logs its profile run's "PyTorch activation peak memory". Qwen2.5-32B-Instruct, TP2 on L40S, V0,
    max_model_len 10000: 1.26 GiB (https://github.com/vllm-project/vllm/issues/15815). One step of 10,000 tokens (V0
    without chunked prefill) and the sampler's 256 sequences of fp32 logits give 1.11 GiB; the 2,048-token step of
    the V1 default on this 48 GB card gives a third of it. Meta-Llama-3-8B on an H100 with vLLM's defaults (max_model_len
    8192 from its config), 0.6.5: 1.26 GiB (https://github.com/vllm-project/vllm/pull/10511, 2024-12-14 comment)."""
    v0 = _vllm("Qwen/Qwen2.5-32B-Instruct", "L40S", 2, "0.7.3", 10000).memory.components["activations"]
    v1 = _vllm("Qwen/Qwen2.5-32B-Instruct", "L40S", 2, None, 10000).memory.components["activations"]
    assert v0 / GIB == pytest.approx(1.26, rel=0.2)
    assert v1 < 0.4 * v0
    llama = _vllm("meta-llama/Meta-Llama-3-8B", "H100-SXM-80GB", 1, "0.6.5", 8192).memory.components["activations"]
    assert llama / GIB == pytest.approx(1.26, rel=0.25)
