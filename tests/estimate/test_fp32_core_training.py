"""FP32 training on a GPU without TF32 runs its GEMMs on the FP32 CUDA cores while the bandwidth-bound rest of the
step costs what it did at 16 bits under autocast (training.fp32_core_training, costs.fp32_core_hfu): a larger share of a slower peak than
the 16-bit tensor-core HFU table gives.

Published: transformers' "Efficient training on a single GPU" guide (docs/source/en/perf_train_gpu_one.mdx @0016acf7;
held-out set 8, group hftrain1gpu): bert-large-uncased, sequence 512, batch 4 on one V100-SXM2-16GB: 8.86 samples/s
in fp32, 18.64 with fp16 mixed precision. The 16-bit HFU alone put fp32 at 3.6 (2.4x slow)."""

from __future__ import annotations

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.training.costs import fp32_core_hfu


def _bert(precision, gpu="V100-SXM2-16GB"):
    w = dict(model="google-bert/bert-large-uncased", task="full", framework="transformers", precision=precision,
             seq_len=512, batch_size=4, hardware={"gpu": gpu, "count": 1})
    return estimate(w)


def test_fp32_bert_large_on_a_v100():
    fp32 = _bert("fp32").performance["samples_per_s"]
    fp16 = _bert("fp16").performance["samples_per_s"]
    assert fp32 == pytest.approx(8.86, rel=0.3)
    assert fp16 == pytest.approx(18.64, rel=0.15)
    assert any("FP32 cores" in a for a in _bert("fp32").to_dict()["assumptions"])


def test_the_split_keeps_its_ends():
    # a step all GEMM at the 16-bit rate stays all GEMM at the FP32 rate; a slower 16-bit step gains share
    assert fp32_core_hfu(0.8, 125e12, 15.7e12) == pytest.approx(0.8)
    assert fp32_core_hfu(0.3, 125e12, 15.7e12) > 0.3


def test_tf32_gpus_are_untouched():
    a100 = _bert("fp32", "A100-SXM4-80GB").to_dict()["assumptions"]
    assert not any("no TF32" in a for a in a100)
