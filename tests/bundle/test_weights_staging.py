"""Large weights staged once in OSS before the GPUs start (issue 29): the plan decides the weights' source, counts the
OSS pull in its fixed costs, and the bundle stages them (stage-weights.sh) and refuses to pull from the hub.

Before: every node of bench/plan_quality.py "full-70b-week" (Llama-3.1-70B full fine-tune, 8 x gn7e 8 x A100 in
cn-shanghai) downloaded 141 GB from ModelScope at 12.5 MB/s: 3.1 h of idle GPUs per node, about CNY 7,000 for the
job. A single-node LoRA of a 7B model (bench "lora-7b-sg", 15 GB: 20 minutes) keeps the hub.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuplan.check import check_bundle
from gpuplan.plan.advice.ops import load_ops
from gpuplan.plan.money.staging import decide, staging_price_per_hour
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

FULL_70B = {"name": "full-70b-week", "model": "meta-llama/Llama-3.1-70B", "task": "full", "seq_len": 2048,
            "dataset": {"tokens": 1.0e9},
            "constraints": {"deadline_hours": 168, "regions": ["cn-shanghai"], "billing": ["payg"]}}
LORA_SG = {"name": "lora-7b-sg", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048,
           "dataset": {"tokens": 1.0e8}, "constraints": {"regions": ["ap-southeast-1"], "billing": ["payg"]}}

OSS_BYTES_S = 100e6                 # data/ops.yaml bundle_network.oss_intranet_mb_s
PUBLIC_BYTES_S = 100e6 / 8          # bundle_network.public_bandwidth_mbit


def _bundle(tmp: Path, workload: dict) -> tuple[Path, dict, str]:
    path, _info = write_plan_bundle(Workload.model_validate(workload), tmp / "b")
    doc = json.loads((path / "plan.json").read_text())
    return path, doc["plan"], (path / "PLAN.md").read_text()


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("full70"), FULL_70B)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp("lora7"), LORA_SG)


def test_the_70b_plan_stages_the_weights_and_counts_the_oss_pull(staged):
    _path, plan, _md = staged
    ws = plan["weights_staging"]
    assert ws["weights_from"] == "oss"
    assert plan["instance_count"] == ws["instances"] > 1
    n_bytes = ws["weight_bytes"]
    assert n_bytes > 140e9                                               # 70.6 B parameters in 16 bits
    fixed = plan["fixed_costs"]
    assert fixed["model_download_s"] == pytest.approx(n_bytes / OSS_BYTES_S, rel=0.01)   # before: n_bytes / 12.5 MB/s
    assert ws["hub_download_s"] == pytest.approx(n_bytes / PUBLIC_BYTES_S, rel=0.01)
    # the decision: the idle GPUs of every node's hub download cost more than the staging machine and the OSS pull
    assert ws["hub_idle_cost"] > ws["staging_cost"] + ws["oss_idle_cost"]
    assert ws["hub_idle_cost"] == pytest.approx(
        ws["instances"] * ws["hub_download_s"] / 3600 * plan["price_per_hour"] / plan["instance_count"], rel=0.01)
    # the staging is wall time before the GPUs start, not GPU time: the plan's time holds the OSS pull only
    assert ws["staging_s"] == pytest.approx(n_bytes / PUBLIC_BYTES_S + n_bytes / OSS_BYTES_S, rel=0.01)
    assert ws["staging_cost"] == pytest.approx(ws["staging_s"] / 3600 * staging_price_per_hour(load_ops()), rel=0.02)
    # one figure: the auto-release counts the download the fixed costs count
    assert plan["ops"]["auto_release"]["download_s"] == pytest.approx(fixed["model_download_s"], abs=0.1)
    # the why line says what the idle GPUs cost, in the plan's currency (before: "idle GPUs 1,059 instead of 7,972")
    line = next(w for w in plan["why"] if "stage-weights.sh" in w)
    assert f"idle GPUs {ws['currency']} {ws['oss_idle_cost']:,.0f} instead of {ws['currency']} {ws['hub_idle_cost']:,.0f}" in line


def test_the_70b_bundle_stages_first_and_refuses_the_hub(staged, tmp_path):
    path, _plan, md = staged
    steps = md.split("## How to launch", 1)[1]
    assert steps.lstrip().startswith("1. `MODEL_OSS=oss://<bucket>/<prefix> ./stage-weights.sh`")
    assert "-var model_oss_prefix=oss://<bucket>/<prefix>" in steps
    assert "stage-weights.sh" in md.split("## Files in this bundle", 1)[1]
    assert os.access(path / "stage-weights.sh", os.X_OK)
    variables = (path / "terraform" / "variables.tf").read_text()
    block = variables.split('variable "model_oss_prefix"', 1)[1].split("\n}\n", 1)[0]
    assert "or leave it empty" not in block and 'regex("^oss://' in block        # empty is refused at plan time
    # fetch-model.sh refuses to start without MODEL_OSS: one message with its way out, no hub download
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL_OSS", "MODEL_MIRROR", "WEIGHTS_FROM")}
    run = subprocess.run(["bash", str(path / "fetch-model.sh")], env={**env, "MODEL_DIR": str(tmp_path / "m")},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "MODEL_OSS is not set" in run.stderr and "./stage-weights.sh" in run.stderr
    assert not (tmp_path / "m").exists()
    # stage-weights.sh without a target says what to set
    run = subprocess.run(["bash", str(path / "stage-weights.sh")], env=env, capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert run.returncode == 2 and "MODEL_OSS=oss://<bucket>/<prefix>" in run.stderr


def test_stage_weights_uses_fetch_models_rules_and_is_idempotent(staged):
    path, _plan, _md = staged
    text = (path / "stage-weights.sh").read_text()
    assert 'MODEL_OSS="" MODEL_MIRROR="" WEIGHTS_FROM=hub MODEL_DIR="$STAGE_DIR" bash "$HERE/fetch-model.sh"' in text
    assert 'ossutil stat "$TARGET/.gpuplan-staged"' in text                   # a finished upload is not repeated
    assert text.index('"$TARGET/.gpuplan-staged"') < text.index("--exclude")  # checked before anything is uploaded
    assert text.rindex('"$TARGET/.gpuplan-staged"') > text.index("--exclude")  # the marker goes up last


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_staged_bundle_scripts_are_shellcheck_clean(staged):
    path, _plan, _md = staged
    run = subprocess.run(["shellcheck", "stage-weights.sh", "fetch-model.sh"], cwd=path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


def test_gpuplan_check_passes_on_the_staged_bundle(staged):
    path, _plan, _md = staged
    report = check_bundle(path)
    assert report.ok, report.to_dict()


def test_a_single_node_7b_lora_keeps_the_hub(hub):
    path, plan, md = hub
    ws = plan["weights_staging"]
    assert ws["weights_from"] == "hub" and ws["instances"] == 1
    assert ws["saved_instance_s"] < ws["min_saved_instance_s"]            # 20 minutes of one node: not worth a bucket
    assert plan["fixed_costs"]["model_download_s"] == pytest.approx(ws["weight_bytes"] / PUBLIC_BYTES_S, rel=0.01)
    assert not (path / "stage-weights.sh").exists()
    assert "MODEL_OSS is not set" not in (path / "fetch-model.sh").read_text()
    assert "stage-weights.sh" not in md


def test_the_decision_grows_with_instances_and_weights():
    ops = load_ops()
    price = 278.0                                                          # CNY/h, an 8 x A100 gn7e instance
    small = 15.2e9
    assert decide(ops, small, 1, instance_price_per_hour=price, currency="CNY").weights_from == "hub"
    assert decide(ops, small, 8, instance_price_per_hour=price, currency="CNY").weights_from == "oss"
    assert decide(ops, 141e9, 1, instance_price_per_hour=price, currency="CNY").weights_from == "oss"
    # a platform that already mounts a staged copy has nothing to decide
    assert decide(ops, 141e9, 8, instance_price_per_hour=price, currency="CNY", platform="pai-eas") is None
    # idle GPUs cheaper than the staging machine: the hub
    assert decide(ops, 141e9, 8, instance_price_per_hour=1e-4, currency="CNY").weights_from == "hub"
