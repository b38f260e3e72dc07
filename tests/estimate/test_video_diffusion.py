"""Video diffusion pinned to published figures (issue 30; rows in bench/data/measurements-nonllm.csv, groups
torchaocvx, wanreadme and hyvreadme).

Sources:
- sayakpaul/diffusers-torchao README @ 9b9f2383 (CogVideoX Benchmarks; inference/benchmark_video.py): CogVideoX-5b
  bf16 on one A100 80GB, 49 frames at 480x720, 50 steps, CFG batched: 243.3 s per video, max_memory_allocated
  31.746 GiB; CogVideoX-2b fp16: 96.9 s, 24.511 GiB; 5b on one H100 (fused QKV): 112.4 s.
- Wan-Video/Wan2.1 README @ 9737cba9 (assets/comp_effic.png): T2V-14B at 720P (81 frames, 50 steps) on one GPU with
  --offload_model True: 3,342.6 s on A800/A100, 6,935.5 s on H20, peak 69.1 GB.
- Tencent/HunyuanVideo README @ fa14b001 (Requirements): peak 60 GB at 720x1280x129f, 45 GB at 544x960x129f.
Tolerances: memory 5 % where the mechanism's VAE figure was read off the same source (CogVideoX, stated in
models.yaml), else 20 %; time 25 % (the CogVideoX rows sit 15-20 % under, the H100 ones 22-40 %: see test below).
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.units import GIB


def _est(model: str, gpu: str, precision: str = "bf16", **inp):
    w = dict(model=model, task="inference", precision=precision, batch_size=1, hardware={"gpu": gpu},
             input=inp or None)
    return estimate(w)


def test_cogvideox_is_known_by_the_ids_users_type():
    for name in ("THUDM/CogVideoX-5b", "cogvideox-5b", "zai-org/CogVideoX-5b"):
        assert _est(name, "A100-SXM4-80GB").memory.peak_allocated_bytes > 20 * GIB
    for name in ("wan2.1-t2v-14b", "wan2.1-t2v-1.3b", "hunyuanvideo", "ltx-video", "cogvideox-2b"):
        assert _est(name, "H100-SXM-80GB").performance["latency_s"] > 1.0


@pytest.mark.parametrize("model,precision,ref_gib", [("THUDM/CogVideoX-5b", "bf16", 31.746),
                                                     ("THUDM/CogVideoX-2b", "fp16", 24.511)])
def test_cogvideox_peak_allocated_matches_diffusers_torchao(model, precision, ref_gib):
    mem = _est(model, "A100-SXM4-80GB", precision).memory
    assert mem.peak_allocated_bytes / GIB == pytest.approx(ref_gib, rel=0.05)
    assert mem.peak_phase == "VAE decode"      # the untiled 3D VAE decode, not the DiT, is the peak


@pytest.mark.parametrize("model,precision,gpu,ref_s,rel", [
    ("THUDM/CogVideoX-5b", "bf16", "A100-SXM4-80GB", 243.3, 0.25),
    ("THUDM/CogVideoX-2b", "fp16", "A100-SXM4-80GB", 96.9, 0.25),
])
def test_cogvideox_time_per_video_matches_diffusers_torchao(model, precision, gpu, ref_s, rel):
    assert _est(model, gpu, precision).performance["latency_s"] == pytest.approx(ref_s, rel=rel)


def test_cogvideox_h100_time_matches_diffusers_torchao():
    # attention-heavy: FlashAttention-2 on the H100 runs at about half the GEMMs' rate (efficiency.yaml fa2_on_hopper);
    # timed at the GEMM rate it was 40 % fast (a known gap until the attention core got its kernel's rate)
    est = _est("THUDM/CogVideoX-5b", "H100-SXM-80GB")
    assert est.performance["latency_s"] == pytest.approx(112.4, rel=0.25)
    assert any("FlashAttention-2" in n for n in est.assumptions)


def test_wan_14b_720p_h100_over_a100_speed_up_matches_the_wan_readme():
    # the Wan README's H800/H100 and A800/A100 rows: 3342.6 s / 1837.9 s = 1.82x, not the 3.2x of the dense peaks:
    # 70 % of a 720p pass is attention, which FA2 runs at about a third of the H100's peak
    a100, h100 = (_est("Wan-AI/Wan2.1-T2V-14B", gpu, frames=81, height=720, width=1280, steps=50, offload="model")
                  .performance["latency_s"] for gpu in ("A100-SXM4-80GB", "H100-SXM-80GB"))
    assert a100 / h100 == pytest.approx(3342.6 / 1837.9, rel=0.15)


@pytest.mark.parametrize("gpu,ref_s", [("A100-SXM4-80GB", 3342.6), ("H20-96GB", 6935.5)])
def test_wan_14b_720p_time_matches_the_wan_readme(gpu, ref_s):
    est = _est("Wan-AI/Wan2.1-T2V-14B", gpu, frames=81, height=720, width=1280, steps=50, offload="model")
    assert est.performance["latency_s"] == pytest.approx(ref_s, rel=0.25)


def test_wan_14b_720p_peak_memory_matches_the_wan_readme():
    est = _est("Wan-AI/Wan2.1-T2V-14B", "A100-SXM4-80GB", frames=81, height=720, width=1280, offload="model")
    assert est.memory.per_gpu_bytes / GIB == pytest.approx(69.1, rel=0.10)
    assert est.memory.peak_phase == "denoising"    # the fp32 DiT on the GPU while the text encoder is off it


@pytest.mark.parametrize("h,w,ref", [(720, 1280, 60.0), (544, 960, 45.0)])
def test_hunyuanvideo_peak_memory_matches_its_readme(h, w, ref):
    est = _est("tencent/HunyuanVideo", "H100-SXM-80GB", frames=129, height=h, width=w)
    assert est.memory.per_gpu_bytes / GIB == pytest.approx(ref, rel=0.20)


def test_time_grows_faster_than_linearly_with_frames_at_fixed_resolution():
    """Attention is quadratic in the latent tokens, which are linear in the frames: doubling the latent frames
    more than doubles the DiT time at 720p."""
    t = [_est("wan2.1-t2v-14b", "H100-SXM-80GB", frames=f, height=720, width=1280).performance["latency_s"]
         for f in (41, 81)]              # 11 and 21 latent frames
    assert t[1] / t[0] > 21 / 11 * 1.2


def test_cfg_passes_follow_each_pipeline():
    """HunyuanVideo's embedded guidance runs one DiT pass per step; CogVideoX batches two."""
    from gpuplan.catalog.models import get_model
    from gpuplan.estimate.nonllm.video import passes

    assert passes(get_model("hunyuanvideo")) == 1
    assert passes(get_model("cogvideox-5b")) == 2


def test_offload_trades_memory_for_time():
    base = _est("THUDM/CogVideoX-5b", "A100-SXM4-80GB")
    seq = _est("THUDM/CogVideoX-5b", "A100-SXM4-80GB", offload="sequential")
    assert seq.memory.peak_allocated_bytes < 0.6 * base.memory.peak_allocated_bytes
    assert seq.performance["latency_s"] > base.performance["latency_s"]
