"""Mutation tests: break one invariant in a real bundle (or a minimal one) and `gpuplan check` exits 2 naming the
file and the line; the same check passes on the unbroken copy. `--only` runs the one check the mutation targets."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from clirun import run_cli
from gpuplan.check import check_bundle


def _copy(matrix, bid: str, tmp_path: Path) -> Path:
    dst = tmp_path / bid.replace("@", "_")
    shutil.copytree(matrix[bid], dst)
    return dst


def _edit(path: Path, old: str, new: str, count: int = 1) -> int:
    """Replace ``old`` (a regex) once and return the 1-based line it was on."""
    text = path.read_text()
    m = re.search(old, text, re.M)
    assert m, f"{old!r} not in {path.name}"
    path.write_text(text[:m.start()] + re.sub(old, new, m.group(0), count=count, flags=re.M) + text[m.end():])
    return text[:m.start()].count("\n") + 1


def _broken(folder: Path, only: str, where: str) -> str:
    """`gpuplan check --only ONLY` exits 2 and names ``where`` ("file:line", or "file:" for some line of the file,
    or "file" alone when no line applies) on the broken bundle."""
    code, out, err = run_cli("check", str(folder), "--only", only)
    assert code == 2, out + err
    pattern = re.escape(where) + (r"\d+: " if where.endswith(":") else r"[: ]")
    assert re.search(r"^  " + pattern, err, re.M), err
    return err


def _passes(folder: Path, only: str) -> None:
    code, out, err = run_cli("check", str(folder), "--only", only)
    assert code == 0, out + err
    assert "Preflight passed" in out


# --- Kubernetes: schema, HPA reach, metrics pipeline -------------------------------------------------------------

def test_hpa_below_the_planned_peak(matrix, tmp_path):
    b = _copy(matrix, "vllm-ack@cn-shanghai", tmp_path)
    _passes(b, "kube")
    line = _edit(b / "autoscale/hpa.yaml", r"maxReplicas: \d+", "maxReplicas: 2")
    err = _broken(b, "kube", f"autoscale/hpa.yaml:{line}")
    assert "cannot reach the stated peak" in err


def test_hpa_metric_no_adapter_rule_serves(matrix, tmp_path):
    b = _copy(matrix, "sglang-ack@cn-shanghai", tmp_path)
    _passes(b, "kube")
    values = b / "autoscale/metrics-adapter-values.yaml"
    _edit(values, r"as: sglang_num_queue_reqs", "as: sglang_queue")
    doc = yaml.safe_load((b / "autoscale/hpa.yaml").read_text())
    assert doc["spec"]["metrics"][0]["pods"]["metric"]["name"] == "sglang_num_queue_reqs"
    err = _broken(b, "kube", "autoscale/hpa.yaml:")
    assert "no rule in autoscale/metrics-adapter-values.yaml exposes" in err


def test_podmonitor_scrapes_a_port_the_pods_lack(matrix, tmp_path):
    b = _copy(matrix, "vllm-ack@cn-shanghai", tmp_path)
    line = _edit(b / "autoscale/podmonitor.yaml", r"port: http", "port: metrics")
    _broken(b, "kube", f"autoscale/podmonitor.yaml:{line}")


def test_deployment_field_the_api_server_rejects(matrix, tmp_path):
    pytest.importorskip("kubernetes_validate")
    b = _copy(matrix, "vllm-ack@cn-shanghai", tmp_path)
    line = _edit(b / "k8s/deployment.yaml", r"^(\s+)readinessProbe:", r"\1readinessProbes:")
    err = _broken(b, "kube", f"k8s/deployment.yaml:{line}")
    assert "readinessProbes" in err


def test_kube_check_says_when_kubernetes_validate_is_missing(matrix, monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)   # import fails as if not installed
    report = check_bundle(matrix["vllm-ack@cn-shanghai"], only=("kube",))
    assert report.ok and any("kubernetes-validate is not installed" in n for n in report.notes)


# --- Function Compute --------------------------------------------------------------------------------------------

def test_fc_memory_over_the_documented_32_gb(matrix, tmp_path):
    b = _copy(matrix, "vllm-fc@cn-shanghai", tmp_path)
    _passes(b, "fc")
    line = _edit(b / "function-compute/s.yaml", r"memorySize: \d+", "memorySize: 65536")
    err = _broken(b, "fc", f"function-compute/s.yaml:{line}")
    assert "outside 128-32768 MB" in err
    assert "function-compute/terraform/main.tf:" in err   # and the Terraform file now says otherwise


def test_fc_memory_per_vcpu_over_4_gb(matrix, tmp_path):
    b = _copy(matrix, "vllm-fc@cn-shanghai", tmp_path)
    line = _edit(b / "function-compute/s.yaml", r"cpu: [\d.]+", "cpu: 4.0")
    _edit(b / "function-compute/terraform/main.tf", r"cpu  +=  *[\d.]+", "cpu                  = 4")
    err = _broken(b, "fc", "function-compute/s.yaml:")
    assert "GB of memory per vCPU" in err and line > 0


def test_fc_terraform_differs_from_s_yaml(matrix, tmp_path):
    b = _copy(matrix, "sglang-fc@cn-hangzhou", tmp_path)
    _passes(b, "fc")
    line = _edit(b / "function-compute/terraform/main.tf", r"instance_concurrency = \d+", "instance_concurrency = 7")
    err = _broken(b, "fc", f"function-compute/terraform/main.tf:{line}")
    assert "deploy different functions" in err


# --- Terraform ---------------------------------------------------------------------------------------------------

def test_auto_release_without_a_null_branch(matrix, tmp_path):
    b = _copy(matrix, "lora-torchrun@ap-southeast-1", tmp_path)
    _passes(b, "terraform")
    line = _edit(b / "terraform/main.tf", r"auto_release_time = .*$",
                 'auto_release_time = formatdate("YYYY-MM-DD\'T\'hh:mm:ss\'Z\'", '
                 'timeadd(timestamp(), "${var.auto_release_hours}h"))')
    err = _broken(b, "terraform", f"terraform/main.tf:{line}")
    assert "auto_release_hours = 0" in err


def test_several_instances_without_a_load_balancer(matrix, tmp_path):
    b = _copy(matrix, "sdxl-ecs@ap-southeast-1", tmp_path)
    _passes(b, "terraform")
    (b / "terraform/lb.tf").unlink()
    line = next(i for i, t in enumerate((b / "terraform/main.tf").read_text().splitlines(), 1)
                if t.startswith('resource "alicloud_instance" "gpu"'))
    err = _broken(b, "terraform", f"terraform/main.tf:{line}")
    assert "no load balancer" in err


def test_load_balancer_without_a_health_check(matrix, tmp_path):
    b = _copy(matrix, "sdxl-ecs@ap-southeast-1", tmp_path)
    lb = b / "terraform/lb.tf"
    lb.write_text(re.sub(r'^\s*health_check_uri\s*=.*\n', "", lb.read_text(), flags=re.M))
    err = _broken(b, "terraform", "terraform/main.tf:")
    assert "health check asks the serve port" in err


def test_argument_the_provider_does_not_have(matrix, tmp_path):
    b = _copy(matrix, "vllm-ecs@ap-southeast-1", tmp_path)
    line = _edit(b / "terraform/main.tf", r"^  instance_type( +)=", r"  instance_typ\1 =")
    err = _broken(b, "terraform", f"terraform/main.tf:{line}")
    assert "no argument instance_typ" in err


def test_value_the_provider_validation_refuses(matrix, tmp_path):
    b = _copy(matrix, "vllm-fc@ap-southeast-1", tmp_path)
    line = _edit(b / "function-compute/terraform/main.tf", r"memory_size( +)= \d+", r"memory_size\1= 65536")
    err = _broken(b, "terraform", f"function-compute/terraform/main.tf:{line}")
    assert "int_between" in err and "32768" in err


def test_required_argument_missing(matrix, tmp_path):
    b = _copy(matrix, "sdxl-ecs@ap-southeast-1", tmp_path)
    lb = b / "terraform/lb.tf"
    text = lb.read_text()
    line = text[:text.index('resource "alicloud_slb_listener" "api"')].count("\n") + 1
    lb.write_text(re.sub(r"\n  protocol +=[^\n]+", "", text, count=1))
    err = _broken(b, "terraform", f"terraform/lb.tf:{line}")
    assert "lacks the required argument protocol" in err


def test_reference_to_an_undeclared_variable(matrix, tmp_path):
    b = _copy(matrix, "whisper@ap-southeast-1", tmp_path)
    line = _edit(b / "terraform/main.tf", r"cidr_block = var\.vpc_cidr", "cidr_block = var.nope")
    err = _broken(b, "terraform", f"terraform/main.tf:{line}")
    assert "var.nope is not declared" in err


# --- Shell scripts and schemas -----------------------------------------------------------------------------------

def test_shell_syntax_error(matrix, tmp_path):
    b = _copy(matrix, "vllm-ecs@ap-southeast-1", tmp_path)
    _passes(b, "scripts")
    line = _edit(b / "serve.sh", r"^exec vllm serve", "if then exec vllm serve")
    _broken(b, "scripts", f"serve.sh:{line}")


def test_shellcheck_warning(matrix, tmp_path):
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck is not installed")
    b = _copy(matrix, "full-deepspeed@ap-southeast-1", tmp_path)
    _passes(b, "scripts")
    line = _edit(b / "launch.sh", r'^cd "\$\(dirname "\$0"\)"$', 'cd $(dirname "$0")')
    err = _broken(b, "scripts", f"launch.sh:{line}")
    assert "SC2046" in err or "SC2164" in err


def test_deepspeed_config_against_its_schema(matrix, tmp_path):
    pytest.importorskip("jsonschema")
    b = _copy(matrix, "full-deepspeed@ap-southeast-1", tmp_path)
    _passes(b, "schemas")
    line = _edit(b / "ds_config.json", r'"stage": 3', '"stage": 4')
    _broken(b, "schemas", f"ds_config.json:{line}")


def test_dlc_job_mount_path_against_its_schema(matrix, tmp_path):
    pytest.importorskip("jsonschema")
    b = _copy(matrix, "qlora@ap-southeast-1", tmp_path)
    _passes(b, "schemas")
    job = json.loads((b / "pai-dlc-job.json").read_text())
    assert {s["MountPath"] for s in job["DataSources"]} >= {"/mnt/data"} and job["Envs"]["OUTPUT_DIR"]
    line = _edit(b / "pai-dlc-job.json", r'"MountPath": "/mnt/data"', '"MountPath": "mnt/data"')
    _broken(b, "schemas", f"pai-dlc-job.json:{line}")


def test_cloud_init_key_against_its_schema(matrix, tmp_path):
    pytest.importorskip("jsonschema")
    b = _copy(matrix, "whisper@ap-southeast-1", tmp_path)
    _passes(b, "schemas")
    line = _edit(b / "cloud-init.yaml", r"^package_update: true", "package_update: sometimes")
    _broken(b, "schemas", f"cloud-init.yaml:{line}")


# --- The node-environment invariants, on minimal bundles ---------------------------------------------------------

def _minimal(tmp_path: Path, region: str = "cn-shanghai", **plan_extra) -> Path:
    b = tmp_path / "mini"
    b.mkdir(parents=True)
    task = plan_extra.pop("task", "inference")
    doc = {"schema_version": 1, "plan": {"region": region, "platform": "ecs", **plan_extra}, "workload": {"task": task}}
    (b / "plan.json").write_text(json.dumps(doc))
    return b


def test_mainland_docker_hub_image(tmp_path):
    b = _minimal(tmp_path)
    (b / "Dockerfile").write_text("# built from a mirror of https://hub.docker.com/r/vllm/vllm-openai\n"
                                  "FROM registry.cn-shanghai.aliyuncs.com/ns/vllm-openai:v0.8.5\nRUN true\n")
    (b / "node.sh").write_text("#!/usr/bin/env bash\n# see https://huggingface.co/docs\napt-get install -y docker.io\n")
    _passes(b, "mainland")
    (b / "Dockerfile").write_text("FROM vllm/vllm-openai:v0.8.5\n")
    err = _broken(b, "mainland", "Dockerfile:1")
    assert "Docker Hub" in err


def test_mainland_hub_host_in_a_script_but_not_in_a_comment(tmp_path):
    b = _minimal(tmp_path)
    (b / "fetch.sh").write_text("#!/usr/bin/env bash\n# huggingface.co is never used\n"
                                "curl -fsSL https://huggingface.co/x/resolve/main/config.json\n")
    err = _broken(b, "mainland", "fetch.sh:3")
    assert "fetch.sh:2" not in err
    other = _minimal(tmp_path / "sg", region="ap-southeast-1")
    shutil.copy(b / "fetch.sh", other / "fetch.sh")
    _passes(other, "mainland")


def test_pin_that_needs_a_newer_python(tmp_path):
    b = _minimal(tmp_path)
    doc = json.loads((b / "plan.json").read_text())
    doc["environment"] = {"python": "3.10"}
    (b / "plan.json").write_text(json.dumps(doc))
    (b / "requirements.txt").write_text("# pins\ntorch==2.10.0\ntransformers==4.57.6\n")
    _passes(b, "pins")
    (b / "requirements.txt").write_text("# pins\ntorch==2.10.0\ntransformers==5.24.0\n")
    err = _broken(b, "pins", "requirements.txt:3")
    assert "requires Python >=3.11" in err


def test_pins_that_contradict_each_other(tmp_path):
    """ms-swift 4.5.2 with the megatron extra requires mcore-bridge>=1.6.2 (its Requires-Dist)."""
    b = _minimal(tmp_path)
    doc = json.loads((b / "plan.json").read_text())
    doc["environment"] = {"python": "3.12"}
    (b / "plan.json").write_text(json.dumps(doc))
    (b / "requirements.txt").write_text("ms-swift[megatron]==4.5.2\nmcore-bridge==1.6.0\n")
    err = _broken(b, "pins", "requirements.txt:1")
    assert "mcore-bridge>=1.6.2" in err
    (b / "requirements.txt").write_text("ms-swift==4.5.2\nmcore-bridge==1.6.0\n")   # without the extra: no conflict
    _passes(b, "pins")


def test_pin_without_shipped_metadata(tmp_path):
    b = _minimal(tmp_path)
    doc = json.loads((b / "plan.json").read_text())
    doc["environment"] = {"python": "3.12"}
    (b / "plan.json").write_text(json.dumps(doc))
    (b / "requirements.txt").write_text("torch==0.0.1\n")
    err = _broken(b, "pins", "requirements.txt:1")
    assert "gen_pin_metadata.py" in err


def _plan_doc(b: Path) -> dict:
    return json.loads((b / "plan.json").read_text())


def _write_plan(b: Path, doc: dict) -> None:
    (b / "plan.json").write_text(json.dumps(doc, indent=2))


def test_checkpoint_rotation_missing(matrix, tmp_path):
    b = _copy(matrix, "full-deepspeed@cn-shanghai", tmp_path)
    _passes(b, "storage")
    for rel in ("launch.sh", "swift-sft.sh", "llamafactory.yaml", "k8s/job.yaml", "pai-dlc-job.json",
                "run-with-resume.sh"):
        if (b / rel).exists():
            t = re.sub(r"--save_total_limit[ =]\S+", "", (b / rel).read_text())
            (b / rel).write_text(re.sub(r"^\s*save_total_limit:.*$", "", t, flags=re.M))
    err = _broken(b, "storage", "launch.sh")
    assert "rotation" in err


def test_rotation_that_keeps_more_than_the_plan_sized(matrix, tmp_path):
    b = _copy(matrix, "lora-torchrun@cn-shanghai", tmp_path)
    kept = _plan_doc(b)["plan"]["storage"]["budget"]["checkpoints_kept"]
    line = _edit(b / "launch.sh", rf"SAVE_TOTAL_LIMIT:-{kept}\b", "SAVE_TOTAL_LIMIT:-9")
    err = _broken(b, "storage", f"launch.sh:{line}")
    assert f"sized for {kept}" in err


def test_checkpoints_outgrow_the_disk_terraform_creates(matrix, tmp_path):
    """The plan's own figure (plan.storage.budget.disk_needed_bytes) against the data disk terraform/variables.tf
    creates: shrinking the disk in Terraform is refused at its line."""
    b = _copy(matrix, "full-megatron@cn-shanghai", tmp_path)
    _passes(b, "storage")
    need_gib = _plan_doc(b)["plan"]["storage"]["budget"]["disk_needed_bytes"] / 2 ** 30
    text = (b / "terraform/variables.tf").read_text()
    m = re.search(r'variable "data_disk_gib" \{[^}]*?default\s*=\s*(\d+)', text, re.S)
    assert m and float(m.group(1)) >= need_gib
    line = text[:m.start(1)].count("\n") + 1
    (b / "terraform/variables.tf").write_text(text[:m.start(1)] + str(int(need_gib) - 1) + text[m.end(1):])
    err = _broken(b, "storage", f"terraform/variables.tf:{line}")
    assert "no space left" in err


def test_checkpoints_outgrow_the_shared_file_system(matrix, tmp_path):
    b = _copy(matrix, "pretrain-two-node@cn-shanghai", tmp_path)
    _passes(b, "storage")
    doc = _plan_doc(b)
    doc["plan"]["storage"]["budget"]["shared_needed_bytes"] = 11 * 2 ** 40     # more than its Extreme NAS holds
    _write_plan(b, doc)
    err = _broken(b, "storage", "terraform/variables.tf:")
    assert "shared file system" in err


def test_missing_plan_field_is_a_finding_not_a_crash(matrix, tmp_path):
    b = _copy(matrix, "qlora@ap-southeast-1", tmp_path)
    doc = _plan_doc(b)
    del doc["plan"]["storage"]["budget"]["checkpoints_kept"]
    _write_plan(b, doc)
    err = _broken(b, "storage", "plan.json")
    assert "plan.json has no plan.storage.budget.checkpoints_kept" in err


def test_launcher_that_ignores_the_local_weights(matrix, tmp_path):
    b = _copy(matrix, "vllm-fc@cn-shanghai", tmp_path)
    _passes(b, "weights")
    line = _edit(b / "serve.sh", r'^    SERVE_PATH="\$MODEL_DIR"', '    SERVE_PATH="$MODEL"')
    err = _broken(b, "weights", "serve.sh:")
    assert "never loads MODEL_DIR" in err and line > 0
    b2 = _copy(matrix, "vllm-fc@ap-southeast-1", tmp_path)
    line = _edit(b2 / "serve.sh", r'^exec vllm serve "\$SERVE_PATH"', 'exec vllm serve --model Qwen/Qwen2.5-7B-Instruct')
    _broken(b2, "weights", f"serve.sh:{line}")


def test_megatron_launch_that_downloads_from_the_hub(matrix, tmp_path):
    b = _copy(matrix, "full-megatron@cn-shanghai", tmp_path)
    _passes(b, "weights")
    line = _edit(b / "launch.sh", r'--model "\$MODEL"', '--model Qwen/Qwen2.5-7B-Instruct --use_hf true')
    err = _broken(b, "weights", f"launch.sh:{line}")
    assert "--use_hf true" in err


def test_weights_staged_somewhere_else_than_the_plan_says(matrix, tmp_path):
    b = _copy(matrix, "lora-torchrun@cn-shanghai", tmp_path)
    line = _edit(b / "launch.sh", r'^MODEL_DIR="\$\{MODEL_DIR:-[^}]+\}"', 'MODEL_DIR="${MODEL_DIR:-/root/models}"')
    err = _broken(b, "weights", f"launch.sh:{line}")
    assert "weights.local_dir" in err


def test_eas_service_without_a_mounted_copy(matrix, tmp_path):
    b = _copy(matrix, "vllm-eas@cn-shanghai", tmp_path)
    _passes(b, "weights")
    doc = json.loads((b / "pai-eas/service.json").read_text())
    del doc["storage"]
    (b / "pai-eas/service.json").write_text(json.dumps(doc, indent=2))
    err = _broken(b, "weights", "pai-eas/service.json:")
    assert "not a mounted OSS or NAS folder" in err


def test_image_server_deployment_loading_an_unmounted_path(matrix, tmp_path):
    b = _copy(matrix, "sdxl-ack@cn-hangzhou", tmp_path)
    _passes(b, "weights")
    _edit(b / "k8s/deployment.yaml", r"- /mnt/data/models/sdxl-ack$", "- /opt/models/sdxl-ack")
    err = _broken(b, "weights", "k8s/deployment.yaml:")
    assert "no volume is mounted there" in err


# --- mainland hosts and images in real bundles --------------------------------------------------------------------

def test_mainland_node_bootstrap_from_nvidias_github_repository(matrix, tmp_path):
    b = _copy(matrix, "vllm-ecs@cn-shanghai", tmp_path)
    _passes(b, "mainland")
    assert "https://mirrors.aliyun.com/libnvidia-container" in (b / "node-bootstrap.sh").read_text()
    line = _edit(b / "node-bootstrap.sh", r"NCT_REPO=\S+", "NCT_REPO=https://nvidia.github.io/libnvidia-container")
    err = _broken(b, "mainland", f"node-bootstrap.sh:{line}")
    assert "nvidia.github.io" in err


def test_mainland_dcgm_exporter_only_from_the_documented_copy(matrix, tmp_path):
    """The DCGM exporter comes from the one copy plan.json documents (environment.copied_images); NVIDIA's registry or
    another image in the same ACR namespace is refused."""
    b = _copy(matrix, "lora-torchrun@cn-shanghai", tmp_path)
    _passes(b, "mainland")
    copies = _plan_doc(b)["environment"]["copied_images"]
    assert [c["source"] for c in copies] == ["nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"]
    assert copies[0]["image"] in (b / "cloud-init.yaml").read_text()
    line = _edit(b / "cloud-init.yaml", re.escape(copies[0]["image"]),
                 copies[0]["image"].replace("dcgm-exporter:", "dcgm-exporter-custom:"))
    err = _broken(b, "mainland", f"cloud-init.yaml:{line}")
    assert "is not one plan.json declares" in err
    _edit(b / "cloud-init.yaml", r"\S+/dcgm-exporter-custom:\S+", copies[0]["source"])
    err = _broken(b, "mainland", f"cloud-init.yaml:{line}")
    assert "nvcr.io" in err


def test_mainland_deployment_image_from_another_registry(matrix, tmp_path):
    b = _copy(matrix, "vllm-ack@cn-shanghai", tmp_path)
    line = _edit(b / "k8s/deployment.yaml", r"image: registry\.cn-shanghai\.aliyuncs\.com/\S+",
                 "image: ghcr.io/vllm-project/vllm-openai:v0.17.1")
    err = _broken(b, "mainland", f"k8s/deployment.yaml:{line}")
    assert "ghcr.io/vllm-project/vllm-openai:v0.17.1" in err


def test_pins_of_a_real_bundle_for_an_older_python(matrix, tmp_path):
    """The shipped metadata proves the bundle's pins for its Python; the same pins on the Python 3.10 of NGC PyTorch
    24.05 (the issue's image) are refused at the transformers line."""
    b = _copy(matrix, "qlora@cn-shanghai", tmp_path)
    _passes(b, "pins")
    doc = _plan_doc(b)
    doc["environment"]["python"] = "3.10"
    _write_plan(b, doc)
    line = next(i for i, t in enumerate((b / "requirements.txt").read_text().splitlines(), 1)
                if t.startswith("transformers=="))
    err = _broken(b, "pins", f"requirements.txt:{line}")
    assert "requires Python >=3.11" in err


def test_check_refuses_a_path_that_is_not_a_bundle(tmp_path):
    code, _out, err = run_cli("check", str(tmp_path / "nope"))
    assert code == 2 and "is not a folder" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_cli("check", str(empty), "--json")
    doc = json.loads(out)
    assert code == 2 and not doc["ok"] and doc["findings"][0]["path"] == "plan.json"
