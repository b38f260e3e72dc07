"""`gpuplan plan` bundles the user's own choice (issue 22): pins for the instance type, GPU count, TP/PP and the
micro-batch, re-estimated through the recommender; a pin that does not fit is one error with its reason."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import plan_exit_code, run_cli

ROOT = Path(__file__).resolve().parents[2]
LORA = str(ROOT / "examples/qwen2.5-7b-lora.yaml")


def test_a_pinned_instance_type_gets_a_bundle_for_that_type(tmp_path):
    out = tmp_path / "b"
    code, stdout, stderr = run_cli("plan", LORA, "--out", str(out), "--instance-type", "ecs.gn8is.2xlarge", "--json")
    assert code == plan_exit_code(stdout), stderr
    summary = json.loads(stdout)
    assert summary["instance_type"] == "ecs.gn8is.2xlarge" and summary["pins"] == {"instance_type": "ecs.gn8is.2xlarge"}
    doc = json.loads((out / "plan.json").read_text())
    assert doc["plan"]["instance_type"] == "ecs.gn8is.2xlarge"
    assert doc["estimate"]["hardware"]["instance_type"] == "ecs.gn8is.2xlarge"   # re-estimated on that type
    assert 'default     = "ecs.gn8is.2xlarge"' in (out / "terraform/variables.tf").read_text()


def test_a_pinned_micro_batch_reaches_the_launcher(tmp_path):
    out = tmp_path / "b"
    code, stdout, stderr = run_cli("plan", LORA, "--out", str(out), "--instance-type", "ecs.gn8is.2xlarge",
                                   "--micro-batch", "2")
    assert code == plan_exit_code(stdout + stderr), stderr
    doc = json.loads((out / "plan.json").read_text())
    assert doc["estimate"]["parallel"]["micro_batch"] == 2 and doc["workload"]["batch_size"] == 2
    assert "--micro_batch 2" in (out / "launch.sh").read_text()


def test_a_pin_that_does_not_fit_says_why_and_writes_nothing(tmp_path):
    out = tmp_path / "b"
    code, stdout, stderr = run_cli("plan", LORA, "--out", str(out), "--instance-type", "ecs.gn6i-c4g1.xlarge",
                                   "--gpus", "1")
    assert code == 2 and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in stderr
    assert lines[0].startswith("Error: The pinned plan (instance type ecs.gn6i-c4g1.xlarge, 1 GPU(s)) does not fit: gn6i")
    assert "GiB" in lines[0]                  # the recommender's memory reason for that type
    assert lines[1].startswith("Hint: Change or drop a pin")
    assert not out.exists()
    code, stdout, _ = run_cli("plan", LORA, "--out", str(out), "--instance-type", "ecs.gn6i-c4g1.xlarge", "--gpus", "1",
                              "--json")
    err = json.loads(stdout)
    assert code == 2 and "does not fit" in err["error"] and err["hint"].startswith("Change or drop a pin")


def test_an_unknown_pinned_type_is_one_error(tmp_path):
    code, _, stderr = run_cli("plan", LORA, "--out", str(tmp_path / "b"), "--instance-type", "ecs.nope.xlarge")
    assert code == 2 and "Unknown instance type" in stderr and "Traceback" not in stderr


def test_rank_is_pick_and_batch_size_must_agree_with_micro_batch(tmp_path):
    code, stdout, _ = run_cli("plan", LORA, "--out", str(tmp_path / "r2"), "--rank", "2", "--json")
    assert code == plan_exit_code(stdout)
    second = json.loads(stdout)
    code, stdout, _ = run_cli("plan", LORA, "--out", str(tmp_path / "p2"), "--pick", "2", "--json")
    assert code == plan_exit_code(stdout) and json.loads(stdout)["instance_type"] == second["instance_type"]
    code, _, stderr = run_cli("plan", LORA, "--out", str(tmp_path / "x"), "--batch-size", "4", "--micro-batch", "2")
    assert code == 2 and "disagree" in stderr
