"""build_bundle: the folder it writes, atomically; plan.json; credentials; live estimates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.render import bundle as bundle_pkg
from gpuplan.render.bundle import build_bundle, render_bundle
from gpuplan.workload import parse_workload

from .scenarios import PLANS, WORKLOADS, inputs

TRAINING_FILES = {"PLAN.md", "plan.json", "memory.svg", "launch.sh", "run-with-resume.sh", "train.py",
                  "requirements.txt", "data/train.jsonl", "cloud-init.yaml", "gpu-check.sh", "idle-stop.sh",
                  "terraform/main.tf", "terraform/variables.tf", "terraform/versions.tf", "terraform/outputs.tf",
                  "terraform/terraform.tfvars.example", "monitoring/prometheus.yml", "monitoring/alerts.yml",
                  "monitoring/grafana-dashboard.json", "monitoring/dcgm-counters.csv", "k8s/job.yaml",
                  "pai-dlc-job.json"}
SERVING_FILES = {"PLAN.md", "plan.json", "memory.svg", "serve.sh", "serve-sglang.sh", "healthcheck.sh",
                 "cloud-init.yaml", "gpu-check.sh", "idle-stop.sh", "terraform/main.tf", "k8s/deployment.yaml",
                 "monitoring/prometheus.yml", "monitoring/alerts.yml"}


def _files(path):
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def test_training_bundle_contents(bundles):
    single = _files(bundles["lora_single"])
    assert TRAINING_FILES <= single
    assert {"llamafactory.yaml", "swift-sft.sh", "gpuplan-qwen7b-lora-demo.service", "cost-time.svg"} <= single
    assert "nccl.env" not in single and "serve.sh" not in single
    multi = _files(bundles["two_node"])
    assert {"nccl.env", "ds_config.json"} <= multi and "llamafactory.yaml" not in multi
    assert "ds_config.json" not in single      # a DDP plan has no DeepSpeed config


def test_serving_bundle_contents(bundles):
    files = _files(bundles["vllm_service"])
    assert SERVING_FILES <= files
    assert not {"launch.sh", "ds_config.json", "pai-dlc-job.json", "cost-time.svg"} & files


def test_existing_folder_is_refused_without_force(tmp_path):
    plan, workload, est = inputs("lora_single")
    out = tmp_path / "b"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(GpuplanError, match="already exists") as err:
        build_bundle(plan, workload, est, out)
    assert "--force" in err.value.hint
    assert (out / "keep.txt").read_text() == "mine"
    build_bundle(plan, workload, est, out, force=True)
    assert not (out / "keep.txt").exists() and (out / "plan.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # no temporary folders left


def test_failure_leaves_nothing_half_written(tmp_path, monkeypatch):
    plan, workload, est = inputs("lora_single")
    out = tmp_path / "b"
    real = bundle_pkg.Path.write_text
    calls = {"n": 0}

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(28, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(bundle_pkg.Path, "write_text", flaky)
    with pytest.raises(GpuplanError, match="No space left"):
        build_bundle(plan, workload, est, out)
    assert list(tmp_path.iterdir()) == []


def test_failed_force_keeps_the_old_bundle(tmp_path, monkeypatch):
    plan, workload, est = inputs("lora_single")
    out = build_bundle(plan, workload, est, tmp_path / "b")
    before = (out / "plan.json").read_text()
    monkeypatch.setattr(bundle_pkg.plan_contract, "plan_json", lambda *a, **k: (_ for _ in ()).throw(GpuplanError("boom")))
    with pytest.raises(GpuplanError, match="boom"):
        build_bundle(plan, workload, est, out, force=True)
    assert (out / "plan.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_plan_json_follows_the_contract(bundles):
    doc = json.loads((bundles["two_node"] / "plan.json").read_text())
    assert doc["schema_version"] == 1
    for key in ("platform", "instance_type", "instance_count", "gpu", "gpus_total", "parallel", "memory_per_gpu_bytes",
                "capacity_per_gpu_bytes", "billing", "region", "price_region", "instance_price_per_hour",
                "price_per_hour", "currency", "price_as_of", "price_source", "time_s", "total_cost", "replicas",
                "monthly_cost", "cost_per_million_output_tokens", "storage", "network", "host", "pareto", "why"):
        if key in PLANS["two_node"]:
            assert doc["plan"][key] == PLANS["two_node"][key], key
    assert doc["workload"]["task"] == "full" and doc["workload"]["parallel"]["zero"] == 3
    assert doc["estimate"]["parallel"]["dp"] == 16 and "workload" not in doc["estimate"]
    assert doc["rejected"][0]["code"] == "network" and len(doc["pareto"]) == 3
    assert "plan.json" in doc["bundle"]["files"] and "launch.sh" in doc["bundle"]["files"]


def test_doctor_reads_the_bundle(bundles):
    from gpuplan.doctor.plan import expectations, load_plan

    exp = expectations(load_plan(bundles["two_node"]))
    assert exp.has_plan and exp.instance_type == "ecs.ebmgn7ex.32xlarge" and exp.instance_count == 2
    assert exp.gpu_id == "A100-SXM4-80GB" and exp.gpus_per_node == 8 and exp.rdma == "erdma"
    # Ampere needs R525+, the node image's CUDA 12.8 needs R570+ (data/environments.yaml): the higher one
    assert exp.min_driver_version == "570" and exp.precision == "bf16"


def test_numbers_reach_the_files(bundles):
    serve = (bundles["vllm_service"] / "serve.sh").read_text()
    _, _, est = inputs("vllm_service")
    util = round(est["memory"]["engine_reserved_bytes"] / est["memory"]["capacity_bytes"], 2)
    assert f"--gpu-memory-utilization {util}" in serve
    # the estimate's serving batch (the frozen fixture's), prompt 1,024 + output 512 tokens, the workload's FP8 KV cache
    assert f"--max-num-seqs {est['performance']['serving_batch']}" in serve
    assert "--max-model-len 1536" in serve and "--kv-cache-dtype fp8" in serve
    launch = (bundles["two_node"] / "launch.sh").read_text()
    # micro 2 x accumulation 4 x DP 16 (2 nodes x 8 GPUs, TP = PP = 1) = 128, in launch.sh and ds_config.json
    assert "--strategy deepspeed --zero 3" in launch and "--micro_batch 2 --grad_accum 4 --global_batch 128" in launch
    assert "--node_rank \"$NODE_RANK\"" in launch and "--master_addr \"$MASTER_ADDR\"" in launch
    ds = json.loads((bundles["two_node"] / "ds_config.json").read_text())
    assert (ds["train_batch_size"], ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"]) == (128, 2, 4)
    nccl = (bundles["two_node"] / "nccl.env").read_text()
    assert "NCCL_IB_HCA=erdma" in nccl and "NCCL_IB_GID_INDEX=1" in nccl
    assert all(line.startswith("# ") and "Source: https://" in line
               for line, nxt in zip(nccl.splitlines(), nccl.splitlines()[1:], strict=False) if nxt.startswith("NCCL_"))
    tcp = (bundles["two_node_tcp"] / "nccl.env").read_text()
    assert "NCCL_IB_DISABLE=1" in tcp and "erdma" not in tcp


def test_save_interval_follows_the_estimated_step_time(bundles):
    _, _, est = inputs("spot_job")
    steps = int(30 * 60 / est["performance"]["step_time_s"])  # spot: every 30 minutes
    assert f'SAVE_STEPS="${{SAVE_STEPS:-{steps}}}"' in (bundles["spot_job"] / "launch.sh").read_text()


def test_a_spot_plan_checkpoints_at_the_interval_its_time_counts(tmp_path):
    """Review of guide need n7 (full fine-tune of an 8B on spot): the plan's interruption overhead (10.3 %) is
    Young's interval, 113 min, but the launcher saved every 30 min, writing about four times the checkpoints the plan's
    time and cost count. SAVE_STEPS is now that interval over the step time."""
    from gpuplan.workload_loading import load_workload
    from gpuplan.write_bundle import write_plan_bundle

    root = Path(__file__).resolve().parents[2]
    out, _ = write_plan_bundle(load_workload(str(root / "examples/guide-needs/n7-spot-full-8b.yaml")), tmp_path / "b")
    plan = json.loads((out / "plan.json").read_text())["plan"]
    assert plan["billing"] == "spot"
    est = json.loads((out / "plan.json").read_text())["estimate"]
    interval = plan["spot"]["checkpoint_interval_s"]
    assert interval > 3600                                      # Young's interval, not the 30-minute default
    steps = int(interval / est["performance"]["step_time_s"])
    assert f'SAVE_STEPS="${{SAVE_STEPS:-{steps}}}"' in (out / "launch.sh").read_text()
    assert f"every {steps} steps (~{round(interval / 60)} min)" in (out / "PLAN.md").read_text()


def test_chinese_plan(bundles):
    text = (bundles["vllm_service"] / "PLAN.md").read_text()
    assert text.startswith("# 方案: qwen7b-chat-api") and "## 为什么选这个方案" in text and "## 每卡显存" in text
    assert "# Plan:" in (bundles["lora_single"] / "PLAN.md").read_text()


def test_nothing_is_printed(tmp_path, capsys):
    plan, workload, est = inputs("two_node")
    build_bundle(plan, workload, est, tmp_path / "b")
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_no_credential_shapes_in_any_file(bundles):
    import re

    pattern = re.compile(r"LTAI[0-9A-Za-z]{12,}|AKIA[0-9A-Z]{16}|(?i:(access_?key_?secret|secret_?key)\s*[:=]\s*\S)")
    for path in bundles.values():
        for p in path.rglob("*"):
            if p.is_file():
                assert not pattern.search(p.read_text()), p


def test_a_credential_in_the_workload_is_refused(tmp_path, monkeypatch):
    plan, workload, est = inputs("lora_single")
    secret = "s3cr3tValueThatMustNotLeak"
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", secret)
    with pytest.raises(GpuplanError) as err:
        build_bundle(plan, workload.with_updates(name=f"job {secret}"), est, tmp_path / "b")
    assert secret not in str(err.value) + err.value.hint
    with pytest.raises(GpuplanError, match="access key"):
        render_bundle(plan, workload.with_updates(name="key LTAI5tAbCdEfGhIjKlMnOpQr"), est)
    assert list(tmp_path.iterdir()) == []


def test_unknown_language_is_an_error():
    plan, workload, est = inputs("lora_single")
    with pytest.raises(GpuplanError, match="language"):
        render_bundle(plan, workload, est, lang="fr")


@pytest.mark.parametrize("name", ["lora_single", "two_node", "vllm_service", "spot_job"])
def test_live_estimates_render(name):
    """The frozen fixtures stand in for today's estimator: the same workloads, estimated now, still render."""
    w = parse_workload(WORKLOADS[name])
    est = estimate(w)
    files = render_bundle(PLANS[name], est.workload, est.to_dict())
    assert "plan.json" in files and ("launch.sh" in files or "serve.sh" in files)


def test_a_full_fine_tune_counts_the_checkpoints_its_launcher_writes(tmp_path):
    """Review of the multi-node and 72B bundles: the launchers saved every hour, each save stalling the run for its
    write (108 GB of weights and Adam states for a 7B: about 5 minutes at 350 MB/s), and the plan's time counted none
    of them. The plan now owns the cadence (plan.checkpoint_saves) and its time counts the writes; SAVE_STEPS is that
    interval."""
    from gpuplan.workload_loading import load_workload
    from gpuplan.write_bundle import write_plan_bundle

    root = Path(__file__).resolve().parents[2]
    out, _ = write_plan_bundle(load_workload(str(root / "examples/qwen-7b-full-zero.yaml")), tmp_path / "b")
    doc = json.loads((out / "plan.json").read_text())
    plan, est = doc["plan"], doc["estimate"]
    ck = plan["checkpoint_saves"]
    assert ck["interval_s"] == 3600 and ck["write_s"] > 60
    assert ck["overhead_fraction"] == pytest.approx(ck["write_s"] / 3600, rel=1e-3)
    fixed = sum(v for k, v in plan["fixed_costs"].items() if k.endswith("_s"))
    assert plan["time_s"] - fixed == pytest.approx(est["performance"]["total_time_s"] * (1 + ck["overhead_fraction"]),
                                                   rel=1e-3)
    steps = int(3600 / est["performance"]["step_time_s"])
    assert f'SAVE_STEPS="${{SAVE_STEPS:-{steps}}}"' in (out / "launch.sh").read_text()


def test_an_encoder_training_bundle_is_refused_in_plain_words(tmp_path):
    """The refusal named the kind as an article would ("is a encoder model"); it says the kind as a value now."""
    from gpuplan.workload import Workload
    from gpuplan.write_bundle import write_plan_bundle

    w = Workload.model_validate({"model": "google-bert/bert-base-uncased", "task": "full", "batch_size": 32,
                                 "seq_len": 128, "dataset": {"samples": 100000}})
    with pytest.raises(GpuplanError) as err:
        write_plan_bundle(w, tmp_path / "b")
    assert "is not one (its kind: encoder)" in str(err.value) and "a encoder" not in str(err.value)
    assert "gpuplan recommend" in err.value.hint


def test_the_health_check_gives_the_api_key_to_curl_on_stdin_not_on_its_command_line(bundles, tmp_path):
    """A stub curl records its arguments and its stdin: the key (with a quote and a backslash) is in curl's config on
    stdin, escaped, and in no argument another user's `ps` could read."""
    import os
    import subprocess

    stub = tmp_path / "bin"
    stub.mkdir()
    log = tmp_path / "curl.log"
    (stub / "curl").write_text(f'#!/usr/bin/env bash\nprintf "ARGS %s\\n" "$*" >> {log}\n'
                               f'if [[ " $* " == *" -K - "* ]]; then cat >> {log}; fi\n'
                               'echo \'{"data":[{"id":"qwen7b-chat-api"}]}\'\n')
    (stub / "curl").chmod(0o755)
    key = 'sk-abc"d\\e'
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "API_KEY": key,
           "SERVED_MODEL_NAME": "qwen7b-chat-api"}
    run = subprocess.run(["bash", str(bundles["vllm_service"] / "healthcheck.sh")], env=env, capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    text = log.read_text()
    args = [line for line in text.splitlines() if line.startswith("ARGS")]
    assert not any("sk-abc" in a for a in args)
    assert 'header = "Authorization: Bearer sk-abc\\"d\\\\e"' in text


@pytest.mark.parametrize("state,expected", [("activating", "0"), ("active", "6")])
def test_idle_stop_does_not_count_the_units_start(bundles, tmp_path, state, expected):
    """The image build, the download and the model's load leave the GPUs idle by design: while the unit is
    activating, idle-stop.sh resets its count (a review of 2026-12-06: a 53-minute first start against a 30-minute
    window would have powered a node off before its job ran)."""
    import os
    import subprocess

    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "systemctl").write_text(f'#!/usr/bin/env bash\n[ "$1" = is-active ] && {{ echo {state}; exit 0; }}\n'
                                    f'echo "$@" >> {tmp_path}/poweroff\n')
    (stub / "nvidia-smi").write_text("#!/usr/bin/env bash\necho 0\necho 3\n")
    (stub / "logger").write_text("#!/usr/bin/env bash\n")
    for f in stub.iterdir():
        f.chmod(0o755)
    state_file = tmp_path / "idle"
    state_file.write_text("5")
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "IDLE_STOP_ENABLED": "1",
           "STATE_FILE": str(state_file)}
    run = subprocess.run(["bash", str(bundles["lora_single"] / "idle-stop.sh")], env=env, capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert state_file.read_text().strip() == expected
    assert not (tmp_path / "poweroff").exists()
