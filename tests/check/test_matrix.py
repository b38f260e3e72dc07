"""`gpuplan check` over the matrix of real bundles (tests/check/matrix.py): training x launchers, serving x engines x
platforms, diffusion and speech, mainland and other regions. Every bundle `gpuplan plan` writes passes every check:
shell scripts, schemas, Kubernetes manifests and the autoscaler's reach and metrics pipeline, Function Compute limits
and its two identical definitions, the provider arguments, auto-release and the load balancer, registries and hosts a
mainland node reaches, pins for the declared Python, checkpoint rotation and disks, weights loaded from the local copy.
"""

from __future__ import annotations

import json

import pytest

from .matrix import expanded

IDS = [bid for bid, _case, _region in expanded()]


def _plan(matrix, bid) -> dict:
    return json.loads((matrix[bid] / "plan.json").read_text())


def test_the_matrix_covers_launchers_engines_platforms_and_regions(matrix):
    assert len(matrix) >= 30
    plans = {bid: _plan(matrix, bid)["plan"] for bid in matrix}
    launchers = {p["parallel"].get("launcher") for p in plans.values() if p["parallel"].get("launcher")}
    assert launchers == {"torchrun", "deepspeed", "fsdp", "megatron"}
    assert any(_plan(matrix, b)["workload"]["task"] == "qlora" for b in matrix)
    served = {(p["platform"], p["parallel"].get("engine")) for p in plans.values() if p["parallel"].get("engine")}
    for platform in ("ecs", "ack", "pai-eas"):
        assert {(platform, "vllm"), (platform, "sglang")} <= served, platform
    fc = {b.split("@")[0] for b, p in plans.items() if p["platform"] == "function-compute"}
    assert fc == {"vllm-fc", "sglang-fc"}
    assert (matrix["sglang-fc@cn-hangzhou"] / "serve-sglang.sh").exists()
    assert 'CMD ["bash", "/opt/gpuplan/serve-sglang.sh"]' in (matrix["sglang-fc@cn-hangzhou"] / "Dockerfile").read_text()
    assert (matrix["sdxl-ecs@cn-shanghai"] / "serve_images.py").exists()
    assert (matrix["whisper@cn-shanghai"] / "transcribe.py").exists()
    assert (matrix["wan-video@cn-shanghai"] / "generate_videos.py").exists()
    regions = {p["region"] for p in plans.values()}
    assert {"cn-shanghai", "cn-hangzhou", "ap-southeast-1"} <= regions


@pytest.mark.parametrize("bid", IDS)
def test_every_check_passes(reports, bid):
    report = reports[bid]
    assert report.ok, "\n".join(f.render() for f in report.findings)


def test_several_instances_stand_behind_a_load_balancer(matrix):
    """SDXL on ECS at several instances: a CLB whose listener health-checks /health on the serve port, one
    attachment per instance; the single-instance services have none."""
    plan = _plan(matrix, "sdxl-ecs@cn-shanghai")["plan"]
    assert plan["instance_count"] > 1
    lb = (matrix["sdxl-ecs@cn-shanghai"] / "terraform/lb.tf").read_text()
    assert 'health_check_uri          = "/health"' in lb and "count           = var.instance_count" in lb
    assert not (matrix["vllm-ecs@cn-shanghai"] / "terraform/lb.tf").exists()
    assert _plan(matrix, "vllm-ecs@cn-shanghai")["plan"]["instance_count"] == 1


def test_an_encoder_service_is_served_like_an_llm(matrix):
    """bge-m3 at 200 req/s on T4 nodes: the bundle builds the engine's image and runs serve.sh (vLLM --runner pooling)
    under systemd behind the load balancer, and the batch limit it launches is the one the plan sized replicas with
    (not one request at a time), the token budget the tokens of those prompts and never below max_model_len (vLLM
    runs encoder-only pooling models without chunked prefill: vllm/config/scheduler.py verify_max_model_len)."""
    bundle = matrix["bge-m3-ecs@cn-shanghai"]
    data = _plan(matrix, "bge-m3-ecs@cn-shanghai")
    plan, perf = data["plan"], data["plan"]["performance"]
    assert plan["instance_count"] > 1
    assert 'CMD ["bash", "/opt/gpuplan/serve.sh"]' in (bundle / "Dockerfile").read_text()
    unit = (bundle / "gpuplan-bge-m3-ecs.service").read_text()
    assert "docker run --rm --name gpuplan-bge-m3-ecs --gpus all" in unit and "healthcheck.sh" in unit
    assert (bundle / "terraform/lb.tf").exists()
    serve = (bundle / "serve.sh").read_text()
    limit = perf["serving_batch"]
    assert limit > 1
    assert f"--max-num-seqs {limit}\n" in serve and "--runner pooling" in serve
    tokens = int(serve.split("--max-num-batched-tokens ")[1].split()[0])
    max_len = int(serve.split("--max-model-len ")[1].split()[0])
    assert tokens == max(max_len, limit * data["workload"]["prompt_tokens"])
    # the replicas were sized on that batch limit's rate: the fleet covers the traffic at the utilisation target
    assert plan["replicas"] * perf["max_requests_per_s"] >= 200
    assert "own inference script" not in (bundle / "PLAN.md").read_text()


def test_ack_autoscaler_reaches_the_planned_peak(matrix):
    import yaml

    for bid in ("vllm-ack@cn-shanghai", "sglang-ack@cn-shanghai", "sdxl-ack@cn-hangzhou"):
        plan = _plan(matrix, bid)["plan"]
        hpa = yaml.safe_load((matrix[bid] / "autoscale/hpa.yaml").read_text())
        dep = next(d for d in yaml.safe_load_all((matrix[bid] / "k8s/deployment.yaml").read_text())
                   if d["kind"] == "Deployment")
        per_replica = dep["spec"]["replicas"] // plan["replicas"]
        assert hpa["spec"]["maxReplicas"] == plan["autoscaling"]["max_replicas"] * per_replica, bid
        assert hpa["spec"]["minReplicas"] == plan["autoscaling"]["min_replicas"] * per_replica, bid


def test_every_pin_a_bundle_writes_has_shipped_metadata(matrix):
    """The pins check proves pins from data/pin_metadata.json; a pin the renderer writes without an entry there is a
    gap (regenerate: python scripts/gen_pin_metadata.py [BUNDLE_DIR ...])."""
    from gpuplan.check.bundle import Bundle
    from gpuplan.check.pins import bundle_pins, metadata

    known = metadata()["packages"]
    pins = {(name, version) for path in matrix.values() for entries in bundle_pins(Bundle(path)).values()
            for _line, name, _extras, version in entries}
    assert {"torch", "transformers", "deepspeed", "bitsandbytes", "modelscope", "diffusers"} <= {n for n, _v in pins}
    missing = sorted(f"{n}=={v}" for n, v in pins if v not in known.get(n, {}))
    assert not missing, missing
