"""Training a text-to-video DiT (estimate/nonllm/video_training.py): the backward keeps 42 x hidden bytes per token
and block (a GPT block's 34 plus adaLN-Zero's modulation copies), or the block's input under recomputation; LoRA
adapters on the attention projections (pipeline.lora_params_per_rank).

Published (held-out set 8, exposed): cogvideox-factory's README, CogVideoX-2b LoRA rank 64, batch 1, 49 frames at
480 x 720, bf16, no gradient checkpointing, latents and prompt embeddings precomputed: 44.314 GiB
torch.cuda.max_memory_allocated; finetrainers prints 117,440,512 trainable parameters for LTX-Video at rank 128.
Before, video LoRA was refused and video full fine-tuning counted 0.7 GiB of activations for 17,776 tokens x 30 blocks.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.nonllm.trained_weights import adapter_params_per_rank
from gpuplan.catalog.models import resolve_model as get_model

GIB = 2**30


def _cogvideox(task="lora", ckpt=False, batch=1):
    w = dict(model="THUDM/CogVideoX-2b", task=task, precision="bf16", batch_size=batch,
             grad_checkpointing=ckpt, lora={"rank": 64},
             input={"frames": 49, "height": 480, "width": 720, "precomputed_conditioning": True},
             hardware={"gpu": "A100-SXM4-80GB", "count": 1})
    return estimate(w)


def test_cogvideox_lora_peak_without_recomputation():
    mem = _cogvideox().memory
    assert mem.peak_allocated_bytes / GIB == pytest.approx(44.314, rel=0.15)


def test_recomputation_keeps_each_block_input_only():
    full, ckpt = _cogvideox().memory.components["activations"], _cogvideox(ckpt=True).memory.components["activations"]
    assert 8 < full / ckpt < 30


def test_ltx_video_adapters_match_the_printed_count():
    assert 128 * adapter_params_per_rank(get_model("Lightricks/LTX-Video"), "lora") == 117_440_512


def test_full_fine_tuning_counts_the_clip_tokens():
    acts = _cogvideox(task="full").memory.components["activations"]
    assert acts / GIB > 25          # 17,776 tokens x 30 blocks x 42 x 1,920 bytes: 40 GiB (0.7 GiB before)
