"""Diffusion denoisers without a fused attention kernel (``flash_attention: false``: diffusers'
Attention.get_attention_scores, baddbmm then softmax, the default before xformers and torch 2.0's SDPA).

Sources (held-out sets 3 and 5, exposed; these rows were in view when the rule was written):
- diffusers docs/source/optimization/fp16.mdx @98c42134 ('Memory Efficient Attention' table, PR #532): SD 1.5 at
  512 x 512, batch 1, fp16: A10G 8.88 it/s with plain attention, 15.6 it/s with xformers; T4 3.5 / 5.5.
- LambdaLabsML/lambda-diffusers benchmarks/benchmark_no_xformers.csv @86a67dd: SD 1.5, 8 images of 512 x 512, fp16
  on an H100 PCIe, plain attention: 12.57 GB (11.7 GiB) reserved.
- Dao et al. 2022 (arXiv:2205.14135) Algorithm 0: standard attention writes the scores to HBM and reads them back.
"""

from __future__ import annotations

import pytest

from gpuplan.catalog.models import get_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.nonllm.diffusion import self_attention_scores

GIB = 1024**3
SD15 = "stable-diffusion-v1-5/stable-diffusion-v1-5"


def _run(gpu, flash, batch=1, model=SD15, side=512):
    return estimate(dict(model=model, task="inference", precision="fp16", batch_size=batch, flash_attention=flash,
                         hardware={"gpu": gpu}, input={"image_size": side}))


def test_sd15_scores_follow_the_unet_config():
    # 64x64 latent at 512 px: 5 self-attention layers of 8 heads over 4,096 tokens, 5 over 1,024, 5 over 256, 1 over 64
    total, largest = self_attention_scores(get_model(SD15), 512)
    assert largest == 8 * 4096**2
    assert total == 5 * 8 * (4096**2 + 1024**2 + 256**2) + 8 * 64**2


def test_plain_attention_slows_the_denoiser_as_published():
    def its(gpu, flash):
        return _run(gpu, flash).to_dict()["performance"]["denoising_steps_per_s"]
    # A10G: 8.88 it/s plain against 15.6 with xformers (0.57); T4: 3.5 against 5.5 (0.64)
    for gpu, published in (("A10G-24GB", 8.88 / 15.6), ("T4-16GB", 3.5 / 5.5)):
        ratio = its(gpu, False) / its(gpu, True)
        assert ratio < 0.9                         # the scores' HBM traffic costs time
        assert ratio == pytest.approx(published, rel=0.3)


def test_plain_attention_memory_holds_the_largest_layers_scores():
    flash, plain = _run("H100-PCIe-80GB", True, batch=8), _run("H100-PCIe-80GB", False, batch=8)
    # 8 images x 2 CFG passes x 8 heads x 4,096^2 scores, the scores and their softmax in fp16: 8 GiB more
    scores = 16 * 8 * 4096**2 * 2 * 2
    assert flash.memory.components["activations"] < scores / 2      # fused: the VAE decode is the peak
    assert scores < plain.memory.components["activations"] < 1.25 * scores   # + the UNet's other live tensors
    assert plain.memory.peak_reserved_bytes / GIB == pytest.approx(11.7, rel=0.15)   # Lambda's no-xformers row
    assert "denoising" in plain.memory.peak_phase


def test_fused_attention_is_unchanged_and_dits_carry_their_geometry():
    flux = get_model("black-forest-labs/FLUX.1-dev")
    total, largest = self_attention_scores(flux, 1024)
    assert largest == 24 * (4096 + 512) ** 2 and total == 57 * largest
    a, b = _run("L20-48GB", True, model="black-forest-labs/FLUX.1-dev", side=1024), \
        _run("L20-48GB", None, model="black-forest-labs/FLUX.1-dev", side=1024)
    assert a.to_dict()["performance"] == b.to_dict()["performance"]   # the default is the fused kernel
