"""Models added for issue 12: each shape reproduces the parameter count its model card publishes.

Published sizes (Hugging Face model cards, "Model size"): Gemma-2 2.61B / 9.24B / 27.2B; Phi-3-mini
3.82B; Phi-3-medium 14B (13.96B); Phi-3.5-MoE 41.9B total, 6.6B active; Phi-4 14.7B; phi-2 2.78B;
Mistral-Nemo 12.2B; Mistral-Small-2409 22.2B; Mistral-Small-24B 23.6B (23,572,403,200 text
parameters); Mistral-7B v0.1/v0.2 7.24B; DeepSeek-LLM 7B 6.91B / 67B 67.4B; TinyLlama 1.1B;
Qwen2.5-Coder 0.49B / 1.54B / 3.09B / 14.7B."""

import pytest

from gpuplan.catalog.models import (
    active_param_count,
    param_count_from_shape,
    resolve_model,
)
from gpuplan.workload import parse_workload


@pytest.mark.parametrize(("name", "published_b"), [
    ("google/gemma-2-2b-it", 2.61), ("google/gemma-2-9b", 9.24), ("gemma-2-27b", 27.2),
    ("microsoft/Phi-3-mini-4k-instruct", 3.82), ("microsoft/Phi-3-medium-4k-instruct", 13.96),
    ("microsoft/Phi-3.5-mini-instruct", 3.82), ("microsoft/Phi-3.5-MoE-instruct", 41.9), ("microsoft/phi-4", 14.7),
    ("microsoft/phi-2", 2.78), ("mistralai/Mistral-Nemo-Instruct-2407", 12.2), ("mistralai/Mistral-Small-Instruct-2409", 22.2),
    ("mistralai/Mistral-Small-24B-Instruct-2501", 23.57), ("mistralai/Mistral-7B-Instruct-v0.1", 7.24),
    ("mistralai/Mistral-7B-Instruct-v0.2", 7.24), ("deepseek-ai/deepseek-llm-7b-base", 6.91),
    ("deepseek-ai/deepseek-llm-67b-chat", 67.4), ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1.10),
    ("Qwen/Qwen2.5-Coder-0.5B-Instruct", 0.49), ("Qwen/Qwen2.5-Coder-1.5B-Instruct", 1.54),
    ("Qwen/Qwen2.5-Coder-3B-Instruct", 3.09), ("Qwen/Qwen2.5-Coder-14B-Instruct", 14.7),
])
def test_published_parameter_counts(name, published_b):
    assert param_count_from_shape(resolve_model(name)) / 1e9 == pytest.approx(published_b, rel=0.01)


def test_phi_3_5_moe_active_parameters():
    assert active_param_count(resolve_model("microsoft/Phi-3.5-MoE-instruct")) / 1e9 == pytest.approx(6.6, rel=0.02)


@pytest.mark.parametrize("base", ["Qwen/Qwen3-0.6B-Base", "Qwen/Qwen3-8B-Base", "Qwen/Qwen3-30B-A3B-Base",
                                  "mistralai/Mistral-Nemo-Base-2407", "deepseek-ai/deepseek-llm-67b-base"])
def test_base_releases_resolve_to_the_same_shape(base):
    assert resolve_model(base).params_total > 0


def test_phi2_is_a_parallel_block_with_biases():
    spec = resolve_model("microsoft/phi-2")
    assert (spec.mlp, spec.norm, spec.qkv_bias, spec.o_bias, spec.mlp_bias, spec.norms_per_layer) == \
        ("plain", "layernorm", True, True, True, 1)


@pytest.mark.parametrize("quant", ["gptq-int8", "int8", "bnb-int8", "gptq-int4", "awq", "bnb-nf4"])
def test_qlora_accepts_every_4_and_8_bit_weight_only_base(quant):
    w = parse_workload({"model": "qwen2.5-7b", "task": "qlora", "quantization": quant, "precision": "fp16"})
    assert w.quantization == quant


def test_qlora_on_an_unquantized_or_fp8_base_is_still_refused():
    from gpuplan.errors import GpuplanError

    for quant in ("none", "fp8"):
        with pytest.raises((GpuplanError, ValueError)):
            parse_workload({"model": "qwen2.5-7b", "task": "qlora", "quantization": quant})
