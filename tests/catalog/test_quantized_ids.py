"""Published quantized checkpoint ids resolve to their base model and the quantization they name."""

from __future__ import annotations

import pytest

from gpuplan.catalog.library import get_model, quantized_base, resolve_model
from gpuplan.catalog.quantized import parse_quantized_id
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.workload import parse_workload
from gpuplan.workload_defaults import resolve_defaults


@pytest.mark.parametrize(("checkpoint", "base", "quantization"), [
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-7B-Instruct", "gptq-int4"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", "Qwen/Qwen2.5-72B-Instruct", "gptq-int8"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen/Qwen2.5-7B-Instruct", "awq"),
    ("Qwen/Qwen3-8B-FP8", "Qwen/Qwen3-8B", "fp8"),
    ("TheBloke/Llama-2-7B-Chat-GPTQ", "meta-llama/Llama-2-7b-chat-hf", "gptq-int4"),
    ("TheBloke/Mistral-7B-Instruct-v0.2-AWQ", "mistralai/Mistral-7B-Instruct-v0.2", "awq"),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "meta-llama/Llama-3.1-70B-Instruct", "awq"),
    ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "meta-llama/Llama-3.1-8B-Instruct", "fp8"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "meta-llama/Llama-3.1-8B-Instruct", "int4"),
    ("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "Qwen/Qwen2.5-7B-Instruct", "bnb-nf4"),
    ("Qwen/Qwen2.5-7B-Instruct-GGUF", "Qwen/Qwen2.5-7B-Instruct", "int4"),          # no level: Q4_K_M assumed
    ("Qwen/Qwen2.5-7B-Instruct-GGUF:Q8_0", "Qwen/Qwen2.5-7B-Instruct", "int8"),
    ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
     "meta-llama/Llama-3.1-8B-Instruct", "int4"),
    ("ggml-org/gemma-3-4b-it-Q4_K_M-GGUF", "google/gemma-3-4b-it", "int4"),
])
def test_checkpoint_ids_resolve_to_base_and_quantization(checkpoint, base, quantization):
    found = quantized_base(checkpoint)
    assert found is not None
    parsed, spec = found
    assert spec is not None and spec.id == base
    assert parsed.quantization == quantization
    assert resolve_model(checkpoint).id == base
    assert get_model(checkpoint).id == base  # the web API's gate: no file, no network


@pytest.mark.parametrize("name", ["Qwen/Qwen2.5-7B-Instruct", "deepseek-ai/DeepSeek-R1", "qwen2.5-7b",
                                  "meta-llama/Llama-3.1-8B", "someorg/model-with-fp8-in-the-middle-7b"])
def test_plain_names_are_not_quantized_checkpoints(name):
    assert quantized_base(name) is None


def test_gguf_without_a_level_says_which_one_it_assumed():
    q = parse_quantized_id("TheBloke/Llama-2-7B-Chat-GGUF")
    assert q is not None and q.level == "Q4_K_M" and "assumed" in q.note


def test_gptq_int4_checkpoint_estimates_as_gptq_4bit_qwen25_7b():
    est = estimate({"model": "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "task": "inference",
                    "hardware": {"gpu": "A10-24GB", "count": 1}})
    base = estimate({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "quantization": "gptq-int4",
                     "hardware": {"gpu": "A10-24GB", "count": 1}})
    assert est.workload.quantization == "gptq-int4" and est.workload.precision == "fp16"
    assert est.model.id == "Qwen/Qwen2.5-7B-Instruct"
    assert est.memory.components["weights"] == base.memory.components["weights"]
    bf16 = estimate({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "hardware": {"gpu": "A10-24GB", "count": 1}})
    assert est.memory.components["weights"] < 0.4 * bf16.memory.components["weights"]
    assert any("resolved Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 as GPTQ 4-bit Qwen/Qwen2.5-7B-Instruct" in a
               for a in est.assumptions)


def test_a_conflicting_quantization_is_one_clear_error():
    w = parse_workload({"model": "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "task": "inference", "quantization": "awq"})
    with pytest.raises(GpuplanError) as err:
        resolve_defaults(w)
    assert "GPTQ 4-bit checkpoint" in err.value.message and "gptq-int4" in err.value.hint
    assert err.value.field == "quantization"


def test_the_same_quantization_stated_twice_is_fine_and_constraints_narrow():
    w = parse_workload({"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "task": "inference", "quantization": "awq",
                        "constraints": {"quantization": ["none", "awq"]}})
    resolved, notes = resolve_defaults(w)
    assert resolved.quantization == "awq" and resolved.constraints is not None
    assert resolved.constraints.quantization == ["awq"]
    w2 = parse_workload({"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "task": "inference",
                         "constraints": {"quantization": ["none", "fp8"]}})
    with pytest.raises(GpuplanError, match="constraints.quantization"):
        resolve_defaults(w2)


def test_a_quantized_checkpoint_of_an_unknown_base_still_names_its_quantization_offline():
    w = parse_workload({"model": "TheBloke/Some-Unknown-13B-GPTQ", "task": "inference"})
    resolved, notes = resolve_defaults(w)
    assert resolved.quantization == "gptq-int4"
    assert any("Some-Unknown-13B" in n for n in notes)
    with pytest.raises(GpuplanError, match="Unknown model"):
        resolve_model("TheBloke/Some-Unknown-13B-GPTQ")
