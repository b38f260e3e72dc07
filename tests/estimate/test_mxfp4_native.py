"""gpt-oss is published with MXFP4 routed experts (config.json quantization_config) and its engines serve it so: the
estimate counts those weights at 4.25 bits (E2M1 + one E8M0 scale per 32, OCP MX v1.0) where the engine has kernels
for them, as the bundle's launcher loads the checkpoint. It had planned gpt-oss-120b in bf16: 218 GiB, four GPUs,
for a model OpenAI says runs on one 80 GB GPU.

Published: the gpt-oss model card (OpenAI, arXiv:2508.10925, Table 1: checkpoint size 60.8 GiB for gpt-oss-120b, 12.8 GiB for
gpt-oss-20b); vLLM's GPT-OSS recipe (vllm-project/recipes OpenAI/GPT-OSS.md: "gpt-oss-120b will fit on a single A100
(80GB)", Marlin MXFP4 MoE on Ampere)."""

from __future__ import annotations

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.plan.recommend import recommend
from gpuplan.units import GIB


def _est(model: str, gpu: str, **kw):
    return estimate({"model": model, "task": "inference", "prompt_tokens": 1024, "output_tokens": 512,
                     "hardware": {"gpu": gpu}, **kw})


@pytest.mark.parametrize(("model", "gib"), [("openai/gpt-oss-120b", 60.8), ("openai/gpt-oss-20b", 12.8)])
def test_weights_are_the_published_checkpoint(model, gib):
    e = _est(model, "H100")
    assert e.memory.components["weights"] / GIB == pytest.approx(gib, rel=0.02)


def test_120b_fits_one_80gb_gpu_on_vllm_hopper_and_ampere():
    for gpu in ("H100", "A100-80GB"):
        e = _est("openai/gpt-oss-120b", gpu, framework="vllm")
        assert e.memory.per_gpu_bytes <= e.memory.capacity_bytes


def test_an_engine_without_mxfp4_kernels_on_the_gpu_upcasts():
    # SGLang's MXFP4 path is Hopper and newer (unconfirmed below): on an A100 the experts are bf16
    e = _est("openai/gpt-oss-20b", "A100-80GB", framework="sglang")
    assert e.memory.components["weights"] / GIB > 35


def test_quantization_none_is_the_checkpoint_as_published_in_estimate_as_in_recommend():
    unset = _est("openai/gpt-oss-20b", "H100", framework="vllm")
    none = _est("openai/gpt-oss-20b", "H100", framework="vllm", quantization="none")
    assert none.memory.components["weights"] == unset.memory.components["weights"] < 13 * GIB
    assert none.performance["tpot_s"] == unset.performance["tpot_s"]


@pytest.mark.parametrize("work", [
    {"model": "meta-llama/Llama-3.1-8B-Instruct", "task": "inference", "quantization": "mxfp4"},
    {"model": "openai/gpt-oss-20b", "task": "lora", "quantization": "mxfp4"},
])
def test_mxfp4_elsewhere_is_refused_with_a_hint_by_both_doors(work):
    for door in (lambda: estimate({**work, "hardware": {"gpu": "H100"}}), lambda: recommend(work)):
        with pytest.raises(GpuplanError) as err:
            door()
        assert err.value.field == "quantization" and err.value.hint


def test_recommend_serves_120b_on_one_gpu_and_launches_the_checkpoint_as_published():
    res = recommend({"model": "openai/gpt-oss-120b", "task": "inference", "prompt_tokens": 1024, "output_tokens": 512,
                     "serving": {"requests_per_s": 1}, "constraints": {"regions": ["cn-beijing"]}})
    best = res.plans[0].to_dict() if hasattr(res.plans[0], "to_dict") else res.plans[0]
    assert best["serving"]["weight_format"] == "mxfp4"
    assert best["memory_per_gpu_bytes"] < 80 * GIB


def test_mxfp4_allowed_in_the_constraints_of_another_model_is_refused_before_the_search():
    # it had searched a "MXFP4 weights" plan of Llama counted in bf16: a label the plan's bytes did not carry
    with pytest.raises(GpuplanError) as err:
        recommend({"model": "meta-llama/Llama-3.1-8B-Instruct", "task": "inference", "serving": {"requests_per_s": 1},
                   "constraints": {"quantization": ["none", "mxfp4"], "regions": ["cn-beijing"]}})
    assert err.value.field == "constraints.quantization" and err.value.hint


def test_an_explicit_mxfp4_is_the_published_weights_as_none_is():
    # on an engine without MXFP4 kernels for the GPU both are the bf16 upcast, in estimate as in recommend
    none = _est("openai/gpt-oss-20b", "A100-80GB", framework="sglang", quantization="none")
    mxfp4 = _est("openai/gpt-oss-20b", "A100-80GB", framework="sglang", quantization="mxfp4")
    assert mxfp4.memory.components["weights"] == none.memory.components["weights"] > 35 * GIB
