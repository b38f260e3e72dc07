"""Property-based runs against the API (about 30 s in all): no input may produce a 500.

1. schemathesis generates requests from the app's own OpenAPI document (every operation, body
   and query parameters) and checks: no server error, only documented status codes and content
   types, and 200 bodies that match the published response schemas (gpuplan.schemas).
   Random model strings would all stop at "Unknown model", so most generated bodies get a
   bundled model name instead (chosen from the generated string, so shrinking still works).
2. hypothesis draws plausible workloads (bundled models, every task, precision, quantization,
   lengths, layouts, constraints) and posts them to /api/estimate and /api/recommend: each
   answer is 200 or a 422 that names a field or says why.
"""

from __future__ import annotations

import zlib

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from gpuplan.api import create_app  # noqa: E402
from gpuplan.api.limits import Limits  # noqa: E402
from gpuplan.catalog.models import list_models  # noqa: E402

MODELS = [m.id for m in list_models()]
APP = create_app(Limits(time_budget_s=30), allowed_hosts=None)
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Examples per operation: the compute endpoints cost 5-400 ms each on 2 cores.
EXAMPLES = {"/api/plan": 15, "/api/recommend": 40}


def _realistic(body):
    """Swap a generated model string for a bundled model four times in five. Request rates stay as generated,
    up to the schema's 1e7 req/s: the queueing model is closed-form, so any valid rate is cheap."""
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        h = zlib.crc32(body["model"].encode("utf-8", "surrogatepass"))
        if h % 5:
            body = {**body, "model": MODELS[h % len(MODELS)]}
    return body


@SCHEMA.parametrize()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_openapi_fuzz_finds_no_server_error(case):
    limit = EXAMPLES.get(case.path)
    if limit is not None:
        # hypothesis's max_examples is per test; thin out the slow operations deterministically.
        key = zlib.crc32(repr(case.body).encode("utf-8", "surrogatepass") + repr(case.query).encode())
        if key % 100 >= limit:
            return
    case.body = _realistic(case.body)
    case.call_and_validate(checks=CHECKS)


# ------------------------------------------------------------------------------------------ plain hypothesis

def _opt(strategy):
    return st.one_of(st.none(), strategy)


workloads = st.fixed_dictionaries(
    {"model": st.one_of(st.sampled_from(MODELS),
                        st.fixed_dictionaries({"params_b": st.floats(0.01, 5000, allow_nan=False)}))},
    optional={
        "task": st.sampled_from(["inference", "pretrain", "full", "lora", "qlora", "train", "finetune"]),
        "precision": st.sampled_from(["fp32", "fp16", "bf16", "fp8"]),
        "quantization": st.sampled_from(["none", "int8", "int4", "gptq-int4", "awq", "fp8", "bnb-nf4", "nf4"]),
        "kv_cache_dtype": st.sampled_from(["auto", "fp8", "int8", "fp16"]),
        "batch_size": st.integers(1, 512),
        "seq_len": st.integers(1, 200_000),
        "prompt_tokens": st.integers(0, 200_000),
        "output_tokens": st.integers(1, 50_000),
        "grad_checkpointing": st.sampled_from([True, False, "selective"]),
        "optimizer": st.sampled_from(["adamw", "adamw-8bit", "sgd", "adafactor"]),
        "framework": st.sampled_from(["auto", "vllm", "sglang", "deepspeed", "transformers", "megatron"]),
        "parallel": st.fixed_dictionaries({}, optional={"tp": st.integers(1, 16), "pp": st.integers(1, 8),
                                                        "zero": st.integers(0, 3),
                                                        "offload": st.sampled_from(["none", "cpu", "nvme"])}),
        "hardware": st.fixed_dictionaries({}, optional={
            "gpu": st.sampled_from(["A10", "L20", "H20", "A100-80GB", "T4", "H800", "V100-32GB", "nope"]),
            "count": st.integers(1, 64)}),
        "dataset": st.fixed_dictionaries({"tokens": st.floats(1e3, 1e12)}, optional={"epochs": st.floats(0.1, 10)}),
        "serving": st.fixed_dictionaries({}, optional={"requests_per_s": st.floats(0.01, 1e4),
                                                       "ttft_ms": st.floats(1, 1e5), "tpot_ms": st.floats(1, 1e3)}),
        "constraints": st.fixed_dictionaries({}, optional={
            "budget": st.floats(1, 1e7), "deadline_hours": st.floats(0.1, 1e4), "max_gpus": st.integers(1, 256),
            "regions": st.lists(st.sampled_from(["cn-shanghai", "us-east-1", "cn-beijing", "mars-1"]), max_size=2),
            "billing": st.lists(st.sampled_from(["payg", "spot", "subscription"]), min_size=1, max_size=3),
            "quantization": st.lists(st.sampled_from(["none", "int8", "awq", "fp8"]), min_size=1, max_size=3),
            "currency": st.sampled_from(["CNY", "USD"])}),
        "objective": st.sampled_from(["cost", "time", "balanced"]),
    },
)


def _assert_answer(resp):
    assert resp.status_code in (200, 422), resp.text
    doc = resp.json()
    if resp.status_code == 422:
        assert doc["error"] and isinstance(doc["hint"], str)
        assert "field" in doc


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(w=workloads)
def test_estimate_answers_every_plausible_workload(client, w):
    _assert_answer(client.post("/api/estimate", json=w))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(w=workloads)
def test_recommend_answers_every_plausible_workload(client, w):
    resp = client.post("/api/recommend?top=3", json=w)
    _assert_answer(resp)
    if resp.status_code == 200:
        doc = resp.json()
        assert len(doc["plans"]) <= 3 + 10
        assert doc["plans"] or doc["binding_constraints"], "no plan and no binding constraint named"
