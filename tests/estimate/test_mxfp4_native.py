"""gpt-oss is published with MXFP4 routed experts (config.json quantization_config) and its engines serve it so: the
estimate counts those weights at 4.25 bits (E2M1 + one E8M0 scale per 32, OCP MX v1.0) where the engine has kernels
for them, as the bundle's launcher loads the checkpoint. It had planned gpt-oss-120b in bf16: 218 GiB, four GPUs,
for a model OpenAI says runs on one 80 GB GPU.

Published: the gpt-oss model card (OpenAI, 2025-08-05, Table 1: checkpoint size 60.8 GiB for gpt-oss-120b, 12.8 GiB for
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


def test_mxfp4_decodes_faster_than_bf16_on_the_same_gpu():
    # an explicit quantization none is bf16 weights (the given value is kept); left unset, the checkpoint's MXFP4
    native = _est("openai/gpt-oss-20b", "H100", framework="vllm", batch_size=1)
    bf16 = _est("openai/gpt-oss-20b", "H100", framework="vllm", batch_size=1, quantization="none")
    assert bf16.memory.components["weights"] > 2.5 * native.memory.components["weights"]
    assert native.performance["tpot_s"] < 0.85 * bf16.performance["tpot_s"]


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
