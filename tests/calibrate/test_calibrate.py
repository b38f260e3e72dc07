"""`gpuplan calibrate`: --from a measurements CSV, a real profile through an injected runner (and a tiny
model on CPU), --show and --reset, and later estimates that use the overlay and say so."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from clirun import run_cli
from gpuplan import calibrate as cal
from gpuplan.calibrate.profile import Measurement, torch_runner
from gpuplan.errors import GpuplanError
from gpuplan.estimate import calibration as overlay
from gpuplan.estimate.core import estimate
from gpuplan.workload import parse_workload

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "calibrate"
# llm-foundry's published MPT-7B pre-training run on 8 x H100 (tests/fixtures/calibrate/README.md)
MPT7B_H100 = {"model": "llm-foundry:mpt-7b", "task": "pretrain", "framework": "llm-foundry", "seq_len": 32768,
              "batch_size": 2, "gradient_accumulation": 2, "hardware": {"gpu": "H100-80GB", "count": 8},
              "parallel": {"tp": 1, "pp": 1, "dp": 8, "zero": 0}}
MEASURED_TOKENS_PER_S_PER_GPU = 3318.0


@pytest.fixture(autouse=True)
def _own_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPLAN_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("GPUPLAN_CALIBRATION", raising=False)


def _tokens_per_gpu(workload: dict) -> tuple[float, list[str]]:
    est = estimate(workload)
    return est.performance["tokens_per_s_per_gpu"], est.assumptions


def test_calibrate_from_a_measured_training_throughput_moves_the_estimate_within_15_percent():
    before, notes = _tokens_per_gpu(MPT7B_H100)
    assert abs(before / MEASURED_TOKENS_PER_S_PER_GPU - 1) > 0.15  # the uncalibrated estimate is off
    assert not any("calibrated" in n for n in notes)
    result = cal.calibrate_from_file(FIXTURES / "h100-mpt7b.csv", today=date(2026, 12, 3))
    [entry] = result.entries
    assert (entry.gpu, entry.framework, entry.workload_class) == ("H100-SXM-80GB", "llm-foundry", "pretrain")
    after, notes = _tokens_per_gpu(MPT7B_H100)
    assert after == pytest.approx(MEASURED_TOKENS_PER_S_PER_GPU, rel=0.15)
    note = next(n for n in notes if n.startswith("calibrated"))
    assert "2026-12-03" in note and "3,318 measured" in note and "h100-mpt7b.csv" in note
    # times move the other way; unrelated GPUs and workload classes are untouched
    assert estimate(MPT7B_H100).performance["step_time_s"] > 0
    other = dict(MPT7B_H100, hardware={"gpu": "A100-80GB", "count": 8})
    assert not any("calibrated" in n for n in estimate(other).assumptions)
    # --reset restores the default estimate
    assert cal.reset() is True
    restored, notes = _tokens_per_gpu(MPT7B_H100)
    assert restored == pytest.approx(before) and not any("calibrated" in n for n in notes)
    assert cal.reset() is False


def test_rows_that_cannot_be_estimated_are_reported_not_guessed():
    result = cal.calibrate_from_file(FIXTURES / "mixed.csv")
    assert {e.workload_class for e in result.entries} == {"pretrain", "lora"}
    assert len(result.skipped) == 2
    assert any("not-a-model" in s for s in result.skipped) and any("wall_hours" in s for s in result.skipped)


def test_a_file_with_no_usable_row_is_one_error(tmp_path):
    bad = tmp_path / "m.csv"
    bad.write_text("model,task,gpu,metric,value\nqwen2.5-7b,inference,A10,wall_hours,3\n", encoding="utf-8")
    with pytest.raises(GpuplanError, match="No row"):
        cal.calibrate_from_file(bad)
    missing = tmp_path / "n.csv"
    missing.write_text("model,task\nx,y\n", encoding="utf-8")
    with pytest.raises(GpuplanError, match="lacks the column"):
        cal.calibrate_from_file(missing)


class FakeRunner:
    """Stands in for the GPU: returns a fixed measurement and records what it was asked to run."""

    def __init__(self, value: float, metric: str = "train_tokens_per_s_per_gpu"):
        self.value, self.metric, self.calls = value, metric, []

    def __call__(self, workload, model, steps):
        self.calls.append((workload, model.id, steps))
        return Measurement(device_name="NVIDIA A100-SXM4-80GB", metric=self.metric, value=self.value,
                           peak_allocated_bytes=30.5 * 2**30, peak_reserved_bytes=33.0 * 2**30, steps=steps, seconds=12.0)


LORA_A100 = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "batch_size": 2}


def test_a_profile_on_this_machine_is_stored_for_its_gpu_framework_and_workload_class():
    runner = FakeRunner(2500.0)
    result = cal.calibrate_here(parse_workload(LORA_A100), runner=runner, steps=3, today=date(2026, 12, 3))
    [entry] = result.entries
    assert runner.calls[0][1] == "Qwen/Qwen2.5-7B-Instruct" and runner.calls[0][2] == 3
    assert runner.calls[0][0].framework == "transformers"
    assert (entry.gpu, entry.framework, entry.workload_class, entry.source) == (
        "A100-SXM4-80GB", "transformers", "lora", "this machine")
    assert entry.memory["measured_allocated_gib"] == 30.5 and entry.memory["estimated_allocated_gib"] > 0
    est = estimate({**LORA_A100, "framework": "transformers", "hardware": {"gpu": "A100-80GB", "count": 1}})
    assert est.performance["tokens_per_s_per_gpu"] == pytest.approx(2500.0, rel=0.01)
    assert any(n.startswith("calibrated on this machine, 2026-12-03") for n in est.assumptions)


def test_a_profile_refuses_multi_gpu_workloads_and_absurd_measurements():
    with pytest.raises(GpuplanError, match="one GPU"):
        cal.calibrate_here(parse_workload({**LORA_A100, "hardware": {"gpu": "A100-80GB", "count": 8}}),
                           runner=FakeRunner(1.0))
    with pytest.raises(GpuplanError, match="not stored"):
        cal.calibrate_here(parse_workload(LORA_A100), runner=FakeRunner(1e9))
    assert overlay.load() == ()


def test_the_torch_runner_trains_and_generates_a_tiny_model_on_cpu():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gpuplan.catalog.models import resolve_model

    tiny = resolve_model({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
                          "max_position_embeddings": 256})
    train = parse_workload({"model": "x", "task": "full", "seq_len": 32, "batch_size": 2, "precision": "fp32"})
    m = torch_runner(train, tiny, steps=2, device="cpu")
    assert m.metric == "train_tokens_per_s_per_gpu" and m.value > 0 and m.steps == 2
    assert m.peak_allocated_bytes is None  # no CUDA allocator on CPU
    infer = parse_workload({"model": "x", "task": "inference", "prompt_tokens": 8, "output_tokens": 4,
                            "batch_size": 2, "precision": "fp32"})
    g = torch_runner(infer, tiny, steps=1, device="cpu")
    assert g.metric == "output_tokens_per_s" and g.value > 0


def test_cli_from_show_reset_and_json():
    code, out, err = run_cli("calibrate", "--from", str(FIXTURES / "h100-mpt7b.csv"), "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["entries"][0]["gpu"] == "H100-SXM-80GB" and doc["path"].endswith("calibration.json")
    code, out, err = run_cli("calibrate", "--show", "--json")
    assert code == 0 and len(json.loads(out)["entries"]) == 1
    code, out, err = run_cli("calibrate", "--show", "--lang", "zh")
    assert code == 0 and "H100-SXM-80GB" in out
    code, out, err = run_cli("calibrate", "--reset")
    assert code == 0
    code, out, err = run_cli("calibrate", "--show", "--json")
    assert json.loads(out)["entries"] == []
    code, out, err = run_cli("calibrate", "--show", "--reset")
    assert code == 2 and "Give one of" in out + err


def test_plans_on_the_calibrated_gpu_use_the_overlay_and_say_so():
    from gpuplan import recommend

    work = {**LORA_A100, "framework": "transformers", "dataset": {"tokens": 1.0e8},
            "constraints": {"families": ["ecs.gn7e"], "regions": ["cn-beijing"], "billing": ["payg"]}}
    before = recommend(work)
    runner = FakeRunner(1.5 * _tokens(before))
    cal.calibrate_here(parse_workload(LORA_A100), runner=runner, today=date(2026, 12, 3))
    after = recommend(work)
    # the profile ran transformers on one GPU: the one-GPU plan (sized at the high end of its memory range, so with
    # recomputation) runs 1.5 x faster; the TP plans, sized by Megatron-Core's rules (docs/recommender.md), keep
    # their speed (the ranking between them may change, so each is compared with itself)
    one_before, one_after = _one_gpu(before), _one_gpu(after)
    assert one_after.gpu == one_before.gpu == "A100-SXM4-80GB"
    assert one_after.to_dict()["parallel"] == one_before.to_dict()["parallel"]
    assert one_after.performance["tokens_per_s_per_gpu"] == pytest.approx(
        1.5 * one_before.performance["tokens_per_s_per_gpu"], rel=1e-6)
    assert any(a.startswith("calibrated on this machine, 2026-12-03") for a in one_after.estimate.assumptions)
    for plan in after.all_plans:
        calibrated = any(a.startswith("calibrated") for a in plan.estimate.assumptions)
        assert calibrated == (plan.estimate.workload.framework == "transformers"), plan.instance_type
    assert any(a.startswith("calibrated on this machine, 2026-12-03") for a in after.assumptions)
    assert not any("calibrated" in a for a in before.assumptions)


def _one_gpu(rec):
    return next(p for p in rec.all_plans if p.to_dict()["gpus_total"] == 1)


def _tokens(rec) -> float:
    """Tokens/s per GPU of the uncalibrated estimate on one A100 (what the fake profile is measured against)."""
    est = estimate({**LORA_A100, "framework": "transformers", "hardware": {"gpu": "A100-80GB", "count": 1}})
    return est.performance["tokens_per_s_per_gpu"]


def test_a_recommendation_reads_the_overlay_once():
    """calibration.pinned(): one snapshot for a batch of estimates (recommend runs thousands), no file access
    inside; outside, a removed overlay is seen at once."""
    runner = FakeRunner(2.0 * _tokens(None))
    cal.calibrate_here(parse_workload(LORA_A100), runner=runner, today=date(2026, 12, 3))
    from gpuplan.estimate import calibration

    assert calibration.load()
    with calibration.pinned():
        snapshot = calibration.load()
        calibration.overlay_path().unlink()
        assert calibration.load() is snapshot and snapshot
    assert calibration.load() == ()
