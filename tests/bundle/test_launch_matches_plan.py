"""The launch files run the plan they were written from (issue 29/32 review: "one model for one figure"; "the node is
not this machine"). Each test plans a real workload, writes its bundle and reads the launcher the way the node will."""

from __future__ import annotations

import json
import re

import pytest

from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle


def _flag(script: str, flag: str) -> str:
    m = re.search(rf"{re.escape(flag)}[ =]([0-9.]+)", script)
    assert m, f"{flag} not in the script"
    return m.group(1)


def test_engine_memory_fraction_is_the_one_the_plan_needs(tmp_path):
    """DeepSeek-R1 (FP8 weights, 671B) on 8 x H20: the weights take 78 of 95.6 GiB per GPU and the planned batch's
    KV cache needs 8.6 GiB more, above vLLM's default 90 % reservation. The estimate says so ("needs
    gpu_memory_utilization 0.94"); the bundle must launch vLLM and SGLang with that fraction, or the KV pool holds
    fewer sequences than the plan's max_num_seqs and the plan's throughput is never reached."""
    w = Workload.model_validate({"name": "r1-h20", "model": "deepseek-ai/DeepSeek-R1", "task": "inference",
                                 "prompt_tokens": 30000, "output_tokens": 2700, "batch_size": 8,
                                 "serving": {"requests_per_s": 0.05}, "hardware": {"gpu": "H20"},
                                 "constraints": {"regions": ["cn-beijing"], "billing": ["payg"],
                                                 "platforms": ["ecs"]}})
    path, _ = write_plan_bundle(w, tmp_path / "b")
    doc = json.loads((path / "plan.json").read_text())
    mem = doc["estimate"]["memory"]
    util = float(_flag((path / "serve.sh").read_text(), "--gpu-memory-utilization"))
    assert util * mem["capacity_bytes"] >= mem["per_gpu_bytes"]
    assert float(_flag((path / "serve-sglang.sh").read_text(), "--mem-fraction-static")) == util
    # the same figure as the note the plan shows, where the plan needs more than the default reservation (the
    # thirteenth refit's wider serving ranges plan this workload on two nodes, within the default: then no note)
    notes = " ".join(doc["estimate"]["assumptions"] + doc["estimate"]["warnings"])
    assert (f"needs gpu_memory_utilization {util:.2f}" in notes) == (mem["per_gpu_bytes"] > mem["engine_reserved_bytes"])
    k8s = path / "k8s/deployment.yaml"       # one-node plans only
    if k8s.exists():
        assert f"- --gpu-memory-utilization\n        - '{util}'" in k8s.read_text()


def _launch_steps(plan_md: str) -> str:
    return plan_md.split("## How to launch", 1)[1].split("No access key", 1)[0]


@pytest.mark.parametrize("scenario", ["lora_single", "two_node"])
def test_training_steps_run_in_the_bundles_image_not_on_the_host(scenario):
    """The node's own Python is Ubuntu 22.04's 3.10, and the pins are resolved for the image's 3.11 (transformers 5 does
    not install on 3.10): PLAN.md must not tell anyone to pip install on the node or start the launcher there. The
    rehearsal runs in the bundle's image, and the job starts through the systemd unit, which builds the same image
    (same tag) and runs run-with-resume.sh in it."""
    from gpuplan.render.bundle import render_bundle

    from .scenarios import inputs

    files = render_bundle(*inputs(scenario))
    steps = _launch_steps(files["PLAN.md"])
    assert "pip install" not in steps and "./run-with-resume.sh" not in steps
    unit_name = next(f for f in files if f.endswith(".service"))
    unit = files[unit_name]
    tag = re.search(r"docker build -q -t (\S+) ", unit).group(1)
    assert f"docker build -t {tag} . && docker run --rm --ipc=host {tag} bash /workspace/launch.sh --smoke" in steps
    assert "COPY . /workspace/" in files["Dockerfile"]
    assert f"systemctl enable --now {unit_name}" in steps
    assert "bash /workspace/run-with-resume.sh" in unit


def test_a_batch_job_runs_in_the_image_with_its_data_on_the_data_disk(tmp_path):
    """Whisper over 1,000 h of audio: transcribe.py runs in the bundle's image on the GPUs, reading and writing on the
    data disk the node mounts (the weights' MODEL_DIR is there too), not with a pip install on the host."""
    w = Workload.model_validate({"name": "whisper-1000h", "model": "openai/whisper-large-v3", "task": "inference",
                                 "dataset": {"audio_hours": 1000},
                                 "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}})
    path, _ = write_plan_bundle(w, tmp_path / "b")
    steps = _launch_steps((path / "PLAN.md").read_text())
    assert "pip install" not in steps
    run = re.search(r"docker run -d --name \S+ --restart on-failure:3 --gpus all -v (\S+):(\S+) (\S+) python3 (\S+) "
                    r"--out (\S+) (\S+)`", steps)
    assert run, steps
    disk, inside, tag, script, out, audio = run.groups()
    assert disk == inside == "/mnt/data" and out.startswith(disk) and audio.startswith(disk)
    assert f"docker build -t {tag} ." in steps
    assert "COPY transcribe.py fetch-model.sh /opt/gpuplan/" in (path / "Dockerfile").read_text()
    assert script == "/opt/gpuplan/transcribe.py"
    assert re.search(r'MODEL_DIR = .*"/mnt/data/models/', (path / "transcribe.py").read_text())
    assert "mount" in (path / "cloud-init.yaml").read_text() and "MOUNT=/mnt/data" in (path / "cloud-init.yaml").read_text()


def _default(script: str, var: str) -> int:
    m = re.search(rf'^{var}="\${{{var}:-([0-9]+)}}"', script, re.M)
    assert m, var
    return int(m.group(1))


@pytest.mark.parametrize("dataset,billing", [
    # examples/qwen2.5-7b-lora.yaml: samples of 2,048 tokens on average at seq_len 2,048
    ({"samples": 100000, "tokens_per_sample": 2048, "epochs": 1}, "payg"),
    # short samples, two epochs, on spot (a checkpoint at Young's interval)
    ({"samples": 100000, "tokens_per_sample": 512, "epochs": 2}, "spot"),
])
def test_the_launch_trains_the_rows_and_steps_the_plan_counted(tmp_path, dataset, billing):
    """train.py packs the samples into --seq_len blocks and Megatron runs --packing true, so the plan is sized for
    packed rows (plan.parallel.packed) and its optimizer steps are the packed sequences over the global batch. The
    launch then runs exactly the plan's steps, its step time x steps is the plan's run, and its checkpoint interval
    in steps is the planned minutes (before: the plan counted 12,500 unpacked steps of 512-token samples, launch.sh
    ran 3,125 packed steps of four times the work, and SAVE_STEPS 4,836 was never reached on spot)."""
    w = Workload.model_validate({"name": "lora-rows", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora",
                                 "seq_len": 2048, "dataset": dataset,
                                 "constraints": {"regions": ["cn-hangzhou"], "billing": [billing]}})
    path, _ = write_plan_bundle(w, tmp_path / "b")
    doc = json.loads((path / "plan.json").read_text())
    plan, est = doc["plan"], doc["estimate"]
    assert plan["parallel"]["packed"] is True
    assert not any("unpacked samples" in a for a in est["assumptions"])
    steps = plan["recipe"]["optimizer_steps"]
    tokens = dataset["samples"] * dataset["tokens_per_sample"] * dataset["epochs"]
    assert steps == -(-tokens // (plan["parallel"]["global_batch"] * 2048))
    launch = (path / "launch.sh").read_text()
    assert _default(launch, "MAX_STEPS") == steps == doc["bundle"]["train_steps"]
    if plan["parallel"]["launcher"] == "megatron":
        assert f"--train_iters {steps}" in launch and "--packing true" in launch
    step_s = est["performance"]["step_time_s"]
    run_s = plan["time_s"] - sum(v for k, v in plan["fixed_costs"].items() if k.endswith("_s"))
    assert steps * step_s == pytest.approx(run_s, rel=0.02)
    # the save interval the plan's time counts: an hour on pay-as-you-go, Young's interval on spot (a LoRA checkpoint
    # writes in about a second, so a few minutes: sqrt(2 x C x 20 h between interruptions))
    every = plan["checkpoint_saves"]["interval_s"]
    assert every == (3600 if billing == "payg" else pytest.approx(
        (2 * plan["checkpoint_saves"]["write_s"] * 3600 / plan["spot"]["job_interruptions_per_hour"]) ** 0.5, rel=1e-3))
    save = _default(launch, "SAVE_STEPS")
    assert save * step_s == pytest.approx(every, rel=0.02) and save < steps


def test_a_megatron_plan_told_not_to_pack_runs_unpacked_samples(tmp_path):
    """packed: false in the workload: the plan counts samples (one per row, padded) and ms-swift runs them so
    (--packing false), for the plan's samples / global batch iterations."""
    w = Workload.model_validate({"name": "lora-unpacked", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora",
                                 "framework": "megatron", "packed": False, "seq_len": 2048,
                                 "parallel": {"tp": 2},
                                 "dataset": {"samples": 20000, "tokens_per_sample": 1024},
                                 "constraints": {"regions": ["cn-hangzhou"], "billing": ["payg"]}})
    path, _ = write_plan_bundle(w, tmp_path / "b")
    doc = json.loads((path / "plan.json").read_text())
    plan = doc["plan"]
    assert plan["parallel"]["launcher"] == "megatron" and plan["parallel"]["packed"] is False
    steps = plan["recipe"]["optimizer_steps"]
    assert steps == -(-20000 // plan["parallel"]["global_batch"])
    launch = (path / "launch.sh").read_text()
    assert "--packing false" in launch and f"--train_iters {steps}" in launch and _default(launch, "MAX_STEPS") == steps
