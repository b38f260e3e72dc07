"""One figure for each thing a node does at start (issue 29): the plan's time and cost count the driver install and
the model download the bundle actually performs, at the figures its PLAN.md, fetch-model.sh and auto-release state.

Before: the plan's fixed costs assumed a driver-preinstalled image (no install) and weights at 200 MB/s from OSS,
while the ECS bundle starts from the stock Ubuntu image, installs the driver at first boot (node-bootstrap.sh,
1,200 s: "10 to 20 minutes", Alibaba's auto-install page) and downloads the weights from ModelScope / Hugging Face
over the node's 100 Mbit/s public bandwidth (12.5 MB/s) unless they are staged in OSS.

Workloads: bench/plan_quality.py "job-whisper-1000h" (Whisper large-v3, 1.55 B parameters in 16 bits = 3.1 GB:
248 s at 12.5 MB/s, 15.5 s at the old 200 MB/s) and "lora-7b-sg" (Qwen2.5-7B, 7.6 B parameters = 15.2 GB: about
20 min at 12.5 MB/s, 76 s at the old rate).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.plan.advice.ops import load_ops
from gpuplan.plan.money.transfer import node_start
from gpuplan.units import fmt_duration
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

WHISPER = {"name": "whisper-1000h", "model": "openai/whisper-large-v3", "task": "inference",
           "dataset": {"audio_hours": 1000}, "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}
LORA_SG = {"name": "lora-7b-sg", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048,
           "dataset": {"tokens": 1.0e8},
           "constraints": {"regions": ["ap-southeast-1"], "billing": ["payg"]}}

PUBLIC_BYTES_S = 100e6 / 8          # data/ops.yaml bundle_network.public_bandwidth_mbit: 100


def _bundle(tmp: Path, workload: dict) -> tuple[Path, dict, str]:
    path, _info = write_plan_bundle(Workload.model_validate(workload), tmp / "b")
    doc = json.loads((path / "plan.json").read_text())
    plan = {**doc["plan"], "params_total": doc["estimate"]["model"]["params_total"]}
    return path, plan, (path / "PLAN.md").read_text()


@pytest.fixture(scope="module", params=[WHISPER, LORA_SG], ids=["whisper-job", "lora-7b-sg"])
def bundle(request, tmp_path_factory):
    return _bundle(tmp_path_factory.mktemp(request.param["name"]), request.param)


def test_the_plan_counts_the_driver_install_the_ecs_bundle_runs(bundle):
    path, plan, md = bundle
    assert plan.get("platform", "ecs") == "ecs"
    assert "auto_install" in (path / "node-bootstrap.sh").read_text()           # the bundle installs the driver
    driver_s = float(load_ops()["bundle_network"]["driver_install_s"])
    assert driver_s == 1200
    fixed = plan["fixed_costs"]
    assert fixed["driver_install_s"] == driver_s                               # before: not counted at all
    release = plan["ops"]["auto_release"]
    assert release["driver_install_s"] == fixed["driver_install_s"]
    assert release["first_boot_s"] == pytest.approx(fixed["boot_s"] + fixed["driver_install_s"] + fixed["image_pull_s"],
                                                    abs=0.1)
    # the run the release adds its margin to excludes every fixed part, the driver included
    run_s = plan["time_s"] - sum(v for k, v in fixed.items() if k.endswith("_s"))
    assert release["run_s"] == pytest.approx(run_s, abs=0.1)
    # the plan's cost of the fixed part is its seconds at the plan's hourly price, the driver's 20 minutes included
    assert plan["fixed_costs"]["cost"] == pytest.approx(
        sum(v for k, v in fixed.items() if k.endswith("_s")) / 3600 * plan["price_per_hour"], rel=0.01)


def test_the_plan_counts_the_download_at_the_rate_of_the_source_the_bundle_fetches_from(bundle):
    path, plan, md = bundle
    fixed = plan["fixed_costs"]
    release = plan["ops"]["auto_release"]
    download_s = fixed["model_download_s"]
    assert release["download_s"] == pytest.approx(download_s, abs=0.1)         # one figure for cost and release
    assert download_s == pytest.approx(2 * plan["params_total"] / PUBLIC_BYTES_S, rel=0.01)   # 16-bit weights
    assert download_s > 200                                                     # before: 15.5 s / 76 s at 200 MB/s
    # PLAN.md and fetch-model.sh state the time the plan counted
    assert f"about {fmt_duration(download_s)}." in md
    fetch = (path / "fetch-model.sh").read_text()
    assert "PLAN.md times this download at 100 Mbit/s" in fetch


def test_the_download_rate_follows_the_source_by_platform():
    ops = load_ops()
    oss_bytes_s = float(ops["bundle_network"]["oss_intranet_mb_s"]) * 1e6
    for platform in ("ecs", "ack"):            # fetch-model.sh from the hub unless MODEL_OSS is set
        start = node_start(ops, platform)
        assert (start.weights_from, start.download_bytes_s) == ("hub", PUBLIC_BYTES_S)
        assert node_start(ops, platform, staged_in_oss=True).download_bytes_s == oss_bytes_s
    for platform in ("pai-eas", "function-compute"):   # the staged OSS copy, mounted
        assert node_start(ops, platform).download_bytes_s == oss_bytes_s
    assert node_start(ops, "ecs").driver_install_s == 1200
    assert [node_start(ops, p).driver_install_s for p in ("ack", "pai-eas", "function-compute")] == [0, 0, 0]
    assert node_start(ops, "ecs").download_s(3.1e9) == pytest.approx(248, abs=1)
