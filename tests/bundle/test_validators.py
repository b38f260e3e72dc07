"""Every generated file checked by the tool that consumes it (or its published schema)."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from .conftest import require_module, require_tool
from .scenarios import inputs

SCHEMAS = Path(__file__).parents[2] / "src" / "gpuplan" / "data" / "schemas"


def _scripts(bundle: Path) -> list[Path]:
    return sorted(bundle.rglob("*.sh"))


def _cloud_init_scripts(bundle: Path, tmp_path: Path) -> list[Path]:
    """The shell scripts cloud-init writes (write_files entries under /usr/local/sbin)."""
    doc = yaml.safe_load((bundle / "cloud-init.yaml").read_text())
    out = []
    for i, entry in enumerate(doc["write_files"]):
        if entry["path"].endswith(".sh"):
            p = tmp_path / f"cloud-init-{i}.sh"
            p.write_text(entry["content"])
            out.append(p)
    return out


def test_every_shell_script_parses_with_bash_n(bundle, tmp_path):
    scripts = _scripts(bundle) + _cloud_init_scripts(bundle, tmp_path)
    assert len(scripts) >= 6
    for script in scripts:
        res = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert res.returncode == 0, f"{script.name}: {res.stderr}"
        assert script.read_text().startswith("#!/"), script.name


def test_scripts_are_executable(bundle):
    for script in _scripts(bundle):
        assert script.stat().st_mode & 0o111, script.name


def test_shellcheck_reports_nothing(bundle, tmp_path):
    shellcheck = require_tool("shellcheck")
    scripts = _scripts(bundle) + _cloud_init_scripts(bundle, tmp_path)
    res = subprocess.run([shellcheck, "--severity=style", "--format=gcc", *map(str, scripts)],
                         capture_output=True, text=True, cwd=bundle)
    assert res.returncode == 0, res.stdout + res.stderr


def test_ds_config_matches_schema_and_estimate(bundles):
    schema = json.loads((SCHEMAS / "deepspeed-config.schema.json").read_text())
    for name in ("two_node", "two_node_tcp"):      # the DeepSpeed plans (ZeRO > 0); DDP plans have none
        cfg = json.loads((bundles[name] / "ds_config.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(cfg)
        _, _, est = inputs(name)
        par = est["parallel"]
        assert cfg["train_micro_batch_size_per_gpu"] == par["micro_batch"]
        assert cfg["gradient_accumulation_steps"] == par["gradient_accumulation"]
        assert cfg["zero_optimization"]["stage"] == par["zero"]
        # DeepSpeed refuses to start unless train_batch_size = micro x accumulation x data-parallel size.
        assert cfg["train_batch_size"] == par["micro_batch"] * par["gradient_accumulation"] * par["dp"]


def test_ds_schema_rejects_a_bad_config():
    schema = json.loads((SCHEMAS / "deepspeed-config.schema.json").read_text())
    bad = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 8,
           "bf16": {"enabled": True}, "fp16": {"enabled": True}, "zero_optimization": {"stage": 4}}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
    assert len(errors) == 2  # stage 4 and bf16 + fp16 together


def test_two_node_layout_in_ds_config(bundles):
    cfg = json.loads((bundles["two_node"] / "ds_config.json").read_text())
    assert cfg["train_batch_size"] == 2 * 4 * 16
    assert cfg["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True


def test_every_yaml_file_parses(bundle):
    files = [p for p in bundle.rglob("*") if p.suffix in (".yaml", ".yml")]
    assert files
    for p in files:
        docs = list(yaml.safe_load_all(p.read_text()))
        assert docs and all(d is not None for d in docs), p.name


def test_every_json_file_parses(bundle):
    for p in bundle.rglob("*.json"):
        json.loads(p.read_text())


def test_kubernetes_manifests_validate(bundle):
    kv = require_module("kubernetes_validate")
    version = kv.latest_version()
    manifests = list((bundle / "k8s").glob("*.yaml"))
    if (bundle / "generate_images.py").is_file() and not (bundle / "serve_images.py").is_file():
        assert not manifests   # a batch image job runs generate_images.py in the bundle's image, not a Deployment
        return
    assert len(manifests) == 1
    docs = list(yaml.safe_load_all(manifests[0].read_text()))
    kinds = sorted(d["kind"] for d in docs)
    # a service's weights claim comes with it (its pods mount it); a training Job's storage claim is the user's
    assert kinds in (["Job", "Service"], ["Deployment", "PersistentVolumeClaim", "Service"])
    for doc in docs:
        kv.validate(doc, version, strict=True)
        for c in _containers(doc):
            assert int(c["resources"]["limits"]["nvidia.com/gpu"]) >= 1


def _containers(doc: dict) -> list[dict]:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return spec.get("containers", [])


def test_kubernetes_validate_catches_a_bad_field(bundles):
    kv = require_module("kubernetes_validate")
    doc = list(yaml.safe_load_all((bundles["vllm_service"] / "k8s/deployment.yaml").read_text()))[0]
    doc["spec"]["replicas"] = "two"
    with pytest.raises(kv.ValidationError):
        kv.validate(doc, kv.latest_version(), strict=True)


def test_erdma_pods_request_the_device_and_host_network(bundles):
    docs = list(yaml.safe_load_all((bundles["two_node"] / "k8s/job.yaml").read_text()))
    job = next(d for d in docs if d["kind"] == "Job")
    spec = job["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True
    container = spec["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8, "aliyun/erdma": 1}
    assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NCCL_IB_HCA"] == "erdma"
    assert job["spec"]["completions"] == 2 and job["spec"]["completionMode"] == "Indexed"


def test_promtool_checks_config_and_rules(bundle):
    promtool = require_tool("promtool")
    res = subprocess.run([promtool, "check", "config", str(bundle / "monitoring/prometheus.yml")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    res = subprocess.run([promtool, "check", "rules", str(bundle / "monitoring/alerts.yml")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    # 7 GPU/node rules, plus 3 serving rules (TTFT, TPOT, queue of the deployed engine only) on a serving bundle
    serving = (bundle / "serve.sh").exists()
    assert f"SUCCESS: {10 if serving else 7} rules found" in res.stdout


def test_alert_rules_cover_the_issue(bundles):
    rules = yaml.safe_load((bundles["lora_single"] / "monitoring/alerts.yml").read_text())["groups"][0]["rules"]
    by_name = {r["alert"]: r for r in rules}
    assert by_name["GpuIdle"]["expr"].endswith("< 10") and by_name["GpuIdle"]["for"] == "30m"
    assert by_name["GpuIdle"]["labels"]["action"] == "stop"
    assert "ECC_DBE" in by_name["GpuEccDoubleBitErrors"]["expr"]
    assert "XID" in by_name["GpuXidError"]["expr"]
    assert "FB_USED" in by_name["GpuMemoryNearFull"]["expr"]
    assert "node_filesystem_avail_bytes" in by_name["DiskNearlyFull"]["expr"]
    # Serving reserves 90% of GPU memory up front: the near-full alert sits above that.
    serve = yaml.safe_load((bundles["vllm_service"] / "monitoring/alerts.yml").read_text())["groups"][0]["rules"]
    assert next(r for r in serve if r["alert"] == "GpuMemoryNearFull")["expr"].endswith("> 0.95")


def test_cloud_init_matches_the_cloud_config_schema(bundle):
    schema = json.loads((SCHEMAS / "schema-cloud-config-v1.json").read_text())
    text = (bundle / "cloud-init.yaml").read_text()
    assert text.startswith("#cloud-config\n")
    jsonschema.Draft4Validator(schema).validate(yaml.safe_load(text))


def test_cloud_init_schema_catches_mistakes():
    schema = json.loads((SCHEMAS / "schema-cloud-config-v1.json").read_text())
    bad = {"packages": "curl", "runcmd": "echo hi", "write_files": [{"content": "x"}]}
    errors = list(jsonschema.Draft4Validator(schema).iter_errors(bad))
    assert len(errors) >= 3


def test_grafana_dashboard_shape(bundle):
    dash = json.loads((bundle / "monitoring/grafana-dashboard.json").read_text())
    assert dash["schemaVersion"] >= 36 and dash["uid"] and len(dash["uid"]) <= 40
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) == (10 if (bundle / "serve.sh").exists() else 6)
    for p in dash["panels"]:
        assert p["targets"][0]["expr"] and p["datasource"]["uid"] == "${datasource}"
        assert set(p["gridPos"]) == {"h", "w", "x", "y"}


def test_pai_dlc_job_matches_the_api_fields(bundles):
    schema = json.loads((SCHEMAS / "pai-dlc-job.schema.json").read_text())
    for name in ("lora_single", "two_node", "spot_job"):
        job = json.loads((bundles[name] / "pai-dlc-job.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(job)
    job = json.loads((bundles["two_node"] / "pai-dlc-job.json").read_text())
    assert job["JobSpecs"][0]["PodCount"] == 2 and job["JobSpecs"][0]["EcsSpec"] == "ecs.ebmgn7ex.32xlarge"


def test_svg_files_are_well_formed_xml(bundle):
    svgs = list(bundle.glob("*.svg"))
    assert (bundle / "memory.svg") in svgs
    for p in svgs:
        root = ET.fromstring(p.read_text())
        assert root.tag.endswith("svg")


def test_systemd_unit_shape(bundles):
    unit = (bundles["vllm_service"] / "gpuplan-qwen7b-chat-api.service").read_text()
    sections = [line for line in unit.splitlines() if line.startswith("[")]
    assert sections == ["[Unit]", "[Service]", "[Install]"]
    # The server runs in the bundle's image (which contains serve.sh and the engine), built on the node.
    assert "ExecStartPre=/usr/bin/docker build -q -t gpuplan/qwen7b-chat-api:bundle /opt/gpuplan/qwen7b-chat-api" in unit
    assert re.search(r"^ExecStart=/usr/bin/docker run --rm --name gpuplan-qwen7b-chat-api --gpus all .* "
                     r"gpuplan/qwen7b-chat-api:bundle$", unit, re.M)
    assert "--entrypoint /opt/gpuplan/fetch-model.sh" in unit   # the weights first, timed by PLAN.md
    assert "Restart=always" in unit
    dockerfile = (bundles["vllm_service"] / "Dockerfile").read_text()
    assert "COPY serve.sh serve-sglang.sh healthcheck.sh fetch-model.sh /opt/gpuplan/" in dockerfile
    assert 'ENTRYPOINT []\nCMD ["bash", "/opt/gpuplan/serve.sh"]' in dockerfile
    train = (bundles["spot_job"] / "gpuplan-qwen14b-qlora-spot.service").read_text()
    # Training runs in the bundle's image too (the declared environment, not the host's Python): the weights first,
    # then the resume wrapper, with the data disk mounted at the same path.
    assert re.search(r"^ExecStartPre=/usr/bin/docker run --rm --network host .* -v /mnt/data:/mnt/data "
                     r"gpuplan/qwen14b-qlora-spot:bundle bash /workspace/fetch-model.sh$", train, re.M)
    assert re.search(r"^ExecStart=/usr/bin/docker run --rm --name gpuplan-qwen14b-qlora-spot --gpus all .* "
                     r"-v /mnt/data:/mnt/data gpuplan/qwen14b-qlora-spot:bundle bash /workspace/run-with-resume.sh$",
                     train, re.M)
