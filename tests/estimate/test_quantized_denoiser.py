"""A weight-only quantized diffusion denoiser (fp8 / int8 / 4-bit storage, cast to the compute dtype layer by layer:
diffusers' layerwise casting and quantization backends, DiffSynth-Studio's fp8 ``torch_dtype``) is counted at its
storage bytes, the text encoders and the VAE at the compute dtype (estimate/profile.py denoiser_weight_bytes).

Before, ``quantization`` was dropped without a word for every non-language model: Wan2.1-T2V-14B with fp8 weights
estimated the same 82 GiB as bf16 (DiffSynth-Studio's Wan README, held-out set 9 group dsswan: 48 GB in bf16, 24 GB
with fp8 storage, the DiT resident). A vision or speech model's quantization, which nothing models, is refused.
"""

from __future__ import annotations

import pytest

from gpuplan.catalog.models import resolve_model as get_model
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import quant_bits_per_param

GIB = 2**30


def _weights(model: str, quantization: str, **extra) -> tuple[float, object]:
    w = dict(model=model, task="inference", precision="bf16", quantization=quantization, batch_size=1,
             hardware={"gpu": "A100-SXM4-80GB", "count": 1}, **extra)
    est = estimate(w)
    return est.memory.components["weights"], est


def _denoiser_params(model: str) -> float:
    comps = get_model(model).profile.components
    return float(comps.get("transformer") or comps.get("unet"))


@pytest.mark.parametrize("quant", ["fp8", "int8", "bnb-nf4"])
@pytest.mark.parametrize("model", ["black-forest-labs/FLUX.1-dev", "stabilityai/stable-diffusion-xl-base-1.0"])
def test_image_denoiser_stored_quantized(model, quant):
    dense, _ = _weights(model, "none")
    quantized, est = _weights(model, quant)
    saved = _denoiser_params(model) * (2.0 - quant_bits_per_param(quant) / 8.0)
    assert quantized == pytest.approx(dense - saved, rel=1e-9)
    assert any(quant in a and "denoiser" in a for a in est.assumptions)


def test_video_dit_fp8_holds_one_byte_per_parameter():
    """Wan2.1-T2V-14B, the DiT resident and the other components offloaded (DiffSynth's num_persistent_param_in_dit
    None): the fp8 DiT holds 1 byte per parameter, a quarter of the fp32 checkpoint Wan's own generate.py keeps
    (the profile's denoiser_weight_bytes 4)."""
    inp = {"frames": 81, "height": 480, "width": 832, "offload": "model"}
    dense, _ = _weights("Wan-AI/Wan2.1-T2V-14B", "none", input=inp)
    fp8, est = _weights("Wan-AI/Wan2.1-T2V-14B", "fp8", input=inp)
    params = _denoiser_params("Wan-AI/Wan2.1-T2V-14B")
    assert dense == pytest.approx(params * 4.0, rel=1e-9)
    assert fp8 == pytest.approx(params * 1.0, rel=1e-9)
    assert est.memory.per_gpu_bytes < 40 * GIB


@pytest.mark.parametrize("model", ["timm/resnet50.a1_in1k", "openai/whisper-large-v3"])
def test_quantized_vision_or_speech_inference_is_refused(model):
    with pytest.raises(GpuplanError) as err:
        estimate(dict(model=model, task="inference", quantization="int8", batch_size=1,
                      hardware={"gpu": "A10", "count": 1}))
    assert err.value.field == "quantization" and "not modelled" in err.value.message


def test_recommend_sizes_the_denoiser_as_its_bundle_loads_it():
    """The bundle's image pipelines load the denoiser in the compute dtype: recommend plans the fp8 workload as bf16
    (the memory a plan shows is the launcher's) and says that it does."""
    from gpuplan.plan import recommend

    base = {"model": "black-forest-labs/FLUX.1-dev", "task": "inference", "batch_size": 1,
            "hardware": {"gpu": "L20-48GB", "count": 1}}
    dense = recommend(base)
    fp8 = recommend({**base, "quantization": "fp8"})
    assert fp8.plans and [p.memory.per_gpu_bytes for p in fp8.plans] == [p.memory.per_gpu_bytes for p in dense.plans]
    assert any("quantization fp8 is not launched" in w for w in fp8.warnings)
    assert not any("quantization" in w for w in dense.warnings)


def test_recommend_gives_the_estimates_refusal_for_a_quantized_vision_model():
    """Same refusal at every door: recommend asks before its search (it had answered 'no instance type matches the
    hardware/family/status constraints', every layout having failed with the estimate's error)."""
    from gpuplan.plan import recommend

    w = dict(model="timm/resnet50.a1_in1k", task="inference", quantization="int8", batch_size=8)
    with pytest.raises(GpuplanError) as from_estimate:
        estimate({**w, "hardware": {"gpu": "A10", "count": 1}})
    with pytest.raises(GpuplanError) as from_recommend:
        recommend(w)
    assert from_recommend.value.message == from_estimate.value.message
    assert from_recommend.value.field == "quantization"
