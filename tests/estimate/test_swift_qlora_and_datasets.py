"""ms-swift runs: its QLoRA keeps the non-quantized parameters in 16-bit, and its example scripts' datasets are
shorter than max_length (bench/accuracy.py reads the dataset the script names).

- ms-swift never calls peft.prepare_model_for_kbit_training (swift/llm/tuner.py at d1e9962 only casts trainable
  fp16 parameters to fp32; no release through 4.5 calls it): embeddings, LM head and norms stay in the load dtype,
  where the PEFT recipe upcasts them to fp32 (memory.common.NO_KBIT_UPCAST_FRAMEWORKS).
- ms-swift 1.x's dataset table states each dataset's token statistics (docs/source/LLM/支持的模型和数据集.md @ d1e9962):
  blossom-math-zh's longest sample is 563 tokens, so a max_length 2048 run never holds 2048-token rows.
"""

from pathlib import Path

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import shape_of

ROOT = Path(__file__).resolve().parents[2]


def _weights(framework):
    return estimate({"model": "Qwen/Qwen2.5-7B", "task": "qlora", "framework": framework, "seq_len": 1024,
                     "hardware": {"gpu": "A10-24GB", "count": 1}}).memory.components["weights"]


def test_swift_qlora_keeps_the_embeddings_and_head_in_16_bit():
    s = shape_of(resolve_model("Qwen/Qwen2.5-7B"))
    # the PEFT recipe (transformers) upcasts the 1.1B embedding and head parameters to fp32: 2 bytes more each
    assert _weights("transformers") - _weights("swift") == pytest.approx(2.0 * s.other_params, rel=0.01)
    assert _weights("llama-factory") == pytest.approx(_weights("swift"), rel=1e-6)


@pytest.fixture(scope="module")
def rows(acc):
    return {r["id"]: r for r in acc.load([ROOT / "bench" / "data" / "measurements-dev2.csv"])}


def test_a_swift_example_trains_its_named_dataset(acc, rows):
    row = rows["H604-swifta10"]   # Qwen-14B QLoRA, max_length 2048, dataset blossom-math-zh
    w = acc.row_to_case(row)[0]
    assert w.dataset.max_tokens_per_sample == 563
    assert w.dataset.tokens_per_sample == pytest.approx(169.3)
    # a row that packs its samples, or names no dataset, keeps max_length
    assert acc.row_to_case({**row, "notes": row["notes"].replace("dataset blossom-math-zh", "dataset x")})[0].dataset \
        is None


def test_the_short_dataset_brings_the_estimate_near_the_published_peak(acc, rows):
    # the script's comment: 2 x 16 GB on 2 A10 (14.9 GiB); sized at 2048 tokens the estimate was 22.5 GiB (the whole
    # usable A10) with fp32 embeddings; at the dataset's 563 tokens and 16-bit embeddings it is within 15 %
    row = rows["H604-swifta10"]
    pred = acc.predict_with_estimate(row)[0]
    assert pred == pytest.approx(float(row["value"]), rel=0.15)
