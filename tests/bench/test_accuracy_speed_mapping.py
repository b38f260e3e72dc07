"""bench/accuracy.py speed-row mapping: what the published runs actually ran.

- ms-swift 1.x drops samples over max_length (SftArguments.truncation_strategy = 'delete'); its benchmark
  page (docs/source_en/LLM/Benchmark.md @ 4692215) gives the dataset's token statistics 3234.4 +- 2547.5.
- Llama 3 paper (arXiv 2407.21783, Table 4 / §3.3.2): 405B, TP8 PP16, interleaved 1F1B, 43% BF16 MFU on 8,192 H100s.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(acc):
    return {r["id"]: r for r in acc.load([ROOT / "bench" / "data" / "measurements.csv"])}


def test_kept_sample_length_is_below_max_length_and_grows_with_it(acc):
    mean, sd = acc.SWIFT_DATASET_TOKENS["swspd"]
    kept = [acc.kept_sample_tokens(m, mean, sd) for m in (512, 1024, 2048, 4096, 8192, 65536)]
    assert all(k < m for k, m in zip(kept, (512, 1024, 2048, 4096, 8192, 65536), strict=True))
    assert kept == sorted(kept)
    assert kept[-1] == pytest.approx(mean, rel=0.02)          # nothing dropped: the dataset mean
    # a padded batch runs at the longest of its samples
    assert acc.kept_sample_tokens(2048, mean, sd, batch=8) > acc.kept_sample_tokens(2048, mean, sd, batch=2) > kept[2]


def test_swift_speed_rows_run_at_the_kept_length_memory_rows_do_not(acc, rows):
    """The benchmark's samples (3234 +- 2548 tokens) are shorter than max_length 2048: the row carries the
    dataset's statistics and the estimator runs each micro-batch at its longest kept sample."""
    row = rows["H250-swspd"]
    w, _, _ = acc.row_to_case(row)
    assert w.seq_len == int(row["seq_len"])
    assert w.dataset.tokens_per_sample == pytest.approx(3234.4)
    perf = acc.predict_with_estimate(row)[3]
    notes = " ".join(perf.assumptions)
    assert "padded to its longest" in notes and "dropped" in notes
    mem = next(r for r in rows.values() if r["group"] == "swmem")
    w2, _, _ = acc.row_to_case(mem)
    assert w2.seq_len == int(mem["seq_len"]) and w2.dataset is None


def test_llama3_row_runs_interleaved_without_full_recompute(acc, rows):
    r = rows["N046-llama3"]
    _, _, layout = acc.row_to_case(r)
    assert layout.schedule == "interleaved" and layout.vp == 3   # 126 layers / PP16 / 2 per virtual stage
    assert layout.checkpointing == "none"
    pred, _, _ = acc.predict(r)
    assert abs(pred - 0.43) / 0.43 < 0.2


def test_efficiency_knobs_cannot_exceed_their_physical_ceiling(acc):
    ev = acc.Evaluator([], tuple(k for k in acc.KNOBS if k.cap is not None))
    top = tuple(len(acc.GRID) - 1 for _ in ev.knobs)
    for key, v in ev.overrides(top).items():
        knob = next(k for k, base in zip(ev.knobs, ev.base, strict=True) if key in base)
        assert v <= max(knob.cap, ev.base[ev.knobs.index(knob)][key]) + 1e-12, key


def test_lora_rows_on_a_stack_before_peft_012_keep_adapters_in_the_model_dtype(acc, rows):
    """PEFT 0.12 (July 2024) made fp32 adapters the default (autocast_adapter_dtype); a row whose stack runs torch < 2.2
    predates it (ms-swift 1.x on torch 2.1.1: group swspd), so its adapters took the base layer's bf16. A current stack
    keeps the default (the workload's unset lora.adapter_dtype)."""
    old = next(r for r in rows.values() if r["group"] == "swspd" and r["task"] == "lora")
    assert "torch 2.1.1" in old["notes"]
    assert acc.row_to_case(old)[0].lora.adapter_dtype == "model"
    new = {**old, "notes": old["notes"].replace("torch 2.1.1", "torch 2.5.1")}
    assert acc.row_to_case(new)[0].lora.adapter_dtype is None
