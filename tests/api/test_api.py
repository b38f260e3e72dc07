"""The REST API with FastAPI's test client: the CLI's JSON contract, errors with the field, limits."""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from pathlib import Path

import pytest

from gpuplan.api import create_app, is_loopback, serve
from gpuplan.api.app import json_response
from gpuplan.api.limits import Limits
from gpuplan.api.middleware import max_nesting
from gpuplan.errors import GpuplanError

from .conftest import LORA, SERVE

jsonschema = pytest.importorskip("jsonschema")
STATIC = Path(__file__).resolve().parents[2] / "src" / "gpuplan" / "api" / "static"


def _openapi_schema(client, path: str) -> dict:
    return client.get("/openapi.json").json()["paths"][path]["post"]["responses"]["200"]["content"][
        "application/json"]["schema"]


# ------------------------------------------------------------------------------------------- contract

def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_estimate_is_the_cli_document(client):
    from gpuplan.estimate.core import estimate

    body = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "hardware": {"gpu": "A10"}}
    r = client.post("/api/estimate", json=body)
    assert r.status_code == 200
    doc = r.json()
    assert doc == json.loads(json.dumps(estimate(body).to_dict()))
    jsonschema.validate(doc, _openapi_schema(client, "/api/estimate"))
    assert doc["hardware"]["gpu"] == "A10-24GB"
    comps = doc["memory"]["components"]
    assert sum(comps.values()) == doc["memory"]["per_gpu_bytes"]


def test_recommend_is_the_cli_document(client):
    from gpuplan.plan import recommend

    r = client.post("/api/recommend?top=3", json=LORA)
    assert r.status_code == 200
    doc = r.json()
    direct = json.loads(json.dumps(recommend(LORA, top=3).to_dict()))
    doc["search"].pop("elapsed_s"), direct["search"].pop("elapsed_s")
    assert doc == direct
    jsonschema.validate(doc, _openapi_schema(client, "/api/recommend"))
    assert [p["rank"] for p in doc["plans"][:3]] == [1, 2, 3]
    assert all(p["instance_type"].startswith("ecs.") for p in doc["plans"])


def test_recommend_without_a_plan_names_the_binding_constraint(client):
    r = client.post("/api/recommend", json={**LORA, "constraints": {"budget": 1}})
    assert r.status_code == 200
    doc = r.json()
    assert doc["plans"] == [] and doc["binding_constraints"][0]["constraint"] == "budget"


def test_plan_zip_holds_the_chosen_plan(client):
    rec = client.post("/api/recommend?top=3", json=SERVE).json()
    r = client.post("/api/plan?rank=2&lang=zh", json=SERVE)
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert r.headers["content-disposition"].endswith('-plan.zip"')
    with zipfile.ZipFile(io.BytesIO(r.content)) as zf:
        names = zf.namelist()
        root = names[0].split("/")[0]
        assert all(n.startswith(root + "/") for n in names)
        plan = json.loads(zf.read(f"{root}/plan.json"))
        preflight = json.loads(zf.read(f"{root}/preflight.json"))
        md = zf.read(f"{root}/PLAN.md").decode("utf-8")
        assert "方案" in md and "| 排序依据 |" in md, md[:1500]   # the same PLAN.md as `gpuplan plan` writes
        scripts = [zf.getinfo(n) for n in names if n.endswith(".sh")]
    assert scripts and all((info.external_attr >> 16) & 0o111 for info in scripts)
    # the preflight ran on the bundle (gpuplan check) and its report came with it
    assert preflight["ok"] and preflight["findings"] == [] and preflight["checked_files"] > 10, preflight
    assert r.headers["x-gpuplan-check"] == "passed" and r.headers["x-gpuplan-check-findings"] == "0"
    chosen = plan.get("plan", plan)
    assert chosen["instance_type"] == rec["plans"][1]["instance_type"]
    assert chosen["billing"] == rec["plans"][1]["billing"]


def test_plan_rank_beyond_the_plans_is_a_422(client):
    body = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "hardware": {"instance_type": "ecs.gn7i-c8g1.2xlarge"}}
    r = client.post("/api/plan?rank=20", json=body)
    assert r.status_code == 422 and r.json()["field"] == "rank"
    r = client.post("/api/plan", json={**LORA, "constraints": {"budget": 1}})
    assert r.status_code == 422 and r.json()["field"] == "constraints"


def test_catalog_listings(client):
    from gpuplan.catalog.hardware.gpus import load_gpus
    from gpuplan.catalog.models import list_models

    gpus = client.get("/api/gpus").json()["gpus"]
    assert len(gpus) == len(load_gpus()) and any(g["id"] == "H20-96GB" for g in gpus)
    a10 = client.get("/api/instances", params={"gpu": "A10"}).json()["instances"]
    assert a10 and {i["gpu"] for i in a10} == {"A10-24GB"}
    assert any(i["instance_type"] == "ecs.gn7i-c8g1.2xlarge" for i in a10)
    models = client.get("/api/models", params={"brief": "true"}).json()["models"]
    assert len(models) == len(list_models()) and set(models[0]) >= {"id", "aliases", "params_total"}
    hits = client.get("/api/models", params={"q": "qwen2.5-7b", "brief": "true"}).json()["models"]
    assert "Qwen/Qwen2.5-7B-Instruct" in [m["id"] for m in hits]
    opts = client.get("/api/options").json()
    assert opts["tasks"] == ["inference", "pretrain", "full", "lora", "qlora"] and "cn-shanghai" in opts["regions"]


# ------------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("body, field, words", [
    ({"model": "Qwen/Qwen2.5-7B-Instruct", "tsk": "lora"}, "tsk", "Did you mean 'task'"),
    ({"model": "Qwen/Qwen2.5-7B-Instruct", "batch_size": 0}, "batch_size", "greater than or equal to 1"),
    ({"model": "Qwen/Qwen2.5-7B-Instruct", "parallel": {"zero": 4}}, "parallel.zero", "less than or equal to 3"),
    ({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "teach"}, "task", "Allowed"),
    ({"model": "qwen7"}, "model", "Did you mean"),
    ({"model": "Qwen/Qwen2.5-7B-Instruct", "hardware": {"gpu": "A1000"}}, "hardware.gpu", "Unknown GPU"),
    ({"model": "Qwen/Qwen2.5-7B-Instruct", "hardware": {"instance_type": "ecs.nope"}}, "hardware.instance_type",
     "Unknown instance type"),
    ({"model": {"params_b": -1}}, "model.params_b", "params_b"),
    ({"task": "lora"}, "model", "required"),
])
def test_invalid_workloads_get_422_with_the_field(client, body, field, words):
    r = client.post("/api/estimate", json={"hardware": {"gpu": "A10"}, **body})
    assert r.status_code == 422, r.text
    doc = r.json()
    assert doc["field"] == field and words in doc["error"] + " " + doc["hint"]


def test_the_api_never_reads_a_config_path(client, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2,
                               "num_attention_heads": 8, "intermediate_size": 1024, "vocab_size": 1000}))
    r = client.post("/api/estimate", json={"model": str(cfg), "hardware": {"gpu": "A10"}})
    assert r.status_code == 422 and r.json()["field"] == "model" and "inline mapping" in r.json()["hint"]


@pytest.mark.parametrize("content, ctype, status", [
    (b"{not json", "application/json", 422),
    (b"\xff\xfe", "application/json", 422),
    (b"", "application/json", 422),
    (b"[1, 2]", "application/json", 422),
    (b"[" * 100 + b"]" * 100, "application/json", 422),
    (b"model: x", "application/x-yaml", 415),
    (b"model=x", "application/x-www-form-urlencoded", 415),
    (b'{"model": "' + b"x" * 70_000 + b'"}', "application/json", 413),
])
def test_malformed_bodies_are_client_errors(client, content, ctype, status):
    r = client.post("/api/recommend", content=content, headers={"content-type": ctype})
    assert r.status_code == status, r.text
    assert set(r.json()) == {"error", "hint", "field"}


def test_query_parameters_are_checked(client):
    r = client.post("/api/recommend?top=0", json=LORA)
    assert r.status_code == 422 and r.json()["field"] == "top"
    r = client.post("/api/plan?lang=fr", json=LORA)
    assert r.status_code == 422 and r.json()["field"] == "lang"
    r = client.get("/api/instances", params={"family": "gnx"})
    assert r.status_code == 422 and r.json()["field"] == "family"


def test_search_size_limits(client):
    r = client.post("/api/recommend", json={**LORA, "constraints": {"max_gpus": 100_000}})
    assert r.status_code == 422 and r.json()["field"] == "constraints.max_gpus"
    r = client.post("/api/recommend", json={**LORA, "hardware": {"gpu": "A10", "count": 4096}})
    assert r.status_code == 422 and r.json()["field"] == "hardware.count"
    r = client.post("/api/recommend", json={**LORA, "constraints": {"regions": ["cn-shanghai"] * 40}})
    assert r.status_code == 422 and r.json()["field"] == "constraints.regions"


def test_time_budget_answers_503(monkeypatch):
    from fastapi.testclient import TestClient

    import gpuplan.api.work as work

    from .slow_work import sleep_half_second

    monkeypatch.setattr(work, "do_estimate", sleep_half_second)
    with TestClient(create_app(Limits(time_budget_s=0.05)), base_url="http://localhost") as c:
        t0 = time.perf_counter()
        r = c.post("/api/estimate", json={"model": "Qwen/Qwen2.5-7B-Instruct"})
        assert time.perf_counter() - t0 < 0.4
    assert r.status_code == 503 and r.headers["retry-after"] == "5" and "budget" in r.json()["error"]


def test_a_runaway_computation_is_killed_and_its_worker_replaced(monkeypatch):
    from fastapi.testclient import TestClient

    import gpuplan.api.work as work

    from .slow_work import spin_forever

    app = create_app(Limits(time_budget_s=0.5, max_workers=2))
    with TestClient(app, base_url="http://localhost") as c:
        runner = app.state.runner
        before = {w.proc.pid for w in runner._idle}
        monkeypatch.setattr(work, "do_estimate", spin_forever)
        r = c.post("/api/estimate", json={"model": "Qwen/Qwen2.5-7B-Instruct"})
        assert r.status_code == 503 and "budget" in r.json()["error"]
        after = {w.proc.pid for w in runner._idle}
        assert len(after) == 2 and runner.alive == 2 and after != before   # the spinning one is gone
        monkeypatch.undo()
        r = c.post("/api/estimate", json={"model": "Qwen/Qwen2.5-7B-Instruct", "hardware": {"gpu": "A10"}})
        assert r.status_code == 200


def _in_thread(c, results: list, body: dict) -> threading.Thread:
    th = threading.Thread(target=lambda: results.append(c.post("/api/estimate", json=body)))
    th.start()
    return th


def _wait_started(flag: Path, n: int = 1) -> None:
    for _ in range(1000):
        if Path(str(flag) + ".started").exists():
            return
        time.sleep(0.01)
    raise AssertionError("the work did not start")


def test_queue_limit_answers_503_at_once(monkeypatch, tmp_path):
    from fastapi.testclient import TestClient

    import gpuplan.api.work as work

    from .slow_work import wait_for_file

    flag = tmp_path / "release"
    monkeypatch.setattr(work, "do_estimate", wait_for_file)
    with TestClient(create_app(Limits(max_workers=1, max_queue=1)), base_url="http://localhost") as c:
        first: list = []
        th = _in_thread(c, first, {"model": "x", "name": str(flag)})
        _wait_started(flag)
        second = c.post("/api/estimate", json={"model": "x", "name": str(flag)})
        flag.write_text("go")
        th.join(10)
    assert second.status_code == 503 and "busy" in second.json()["error"] and second.headers["retry-after"] == "5"
    assert first[0].status_code == 200


def test_one_client_gets_429_beyond_its_share(monkeypatch, tmp_path):
    from fastapi.testclient import TestClient

    import gpuplan.api.work as work

    from .slow_work import wait_for_file

    flag = tmp_path / "release"
    monkeypatch.setattr(work, "do_estimate", wait_for_file)
    limits = Limits(max_workers=2, per_client_active=1, per_client_queue=2)
    with TestClient(create_app(limits), base_url="http://localhost") as c:
        results: list = []
        threads = [_in_thread(c, results, {"model": "x", "name": str(flag)}) for _ in range(2)]
        _wait_started(flag)
        time.sleep(0.2)   # the second request waits for this client's one active slot
        third = c.post("/api/estimate", json={"model": "x", "name": str(flag)})
        flag.write_text("go")
        for th in threads:
            th.join(10)
    assert third.status_code == 429 and int(third.headers["retry-after"]) >= 1
    assert "Too many requests" in third.json()["error"]
    assert [r.status_code for r in results] == [200, 200]


def test_host_header_check_and_security_headers():
    from fastapi.testclient import TestClient

    with TestClient(create_app(), base_url="http://evil.example") as c:
        r = c.get("/healthz")
        assert r.status_code == 400 and r.json()["error"] == "Unexpected Host header."
    with TestClient(create_app(allowed_hosts=None), base_url="http://gpu-box.internal:8000") as c:
        r = c.get("/")
        assert r.status_code == 200
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"


def test_page_and_static_files_are_served_and_offline(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/app.js"' in r.text
    for name in ("app.js", "util.js", "form.js", "facts.js", "charts.js", "app.css", "docs.js"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/secret.txt").status_code == 404
    # Nothing is fetched from elsewhere: the only absolute URL is the SVG namespace.
    for path in STATIC.iterdir():
        text = path.read_text(encoding="utf-8")
        urls = [u for u in ("http://", "https://") if u in text.replace("http://www.w3.org/2000/svg", "")]
        assert not urls, f"{path.name} refers to an external URL"
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert {"/api/estimate", "/api/recommend", "/api/plan", "/api/gpus", "/api/instances", "/api/models",
            "/healthz"} <= set(spec["paths"])
    assert "Workload" in spec["components"]["schemas"]


# ------------------------------------------------------------------------------------------- helpers

def test_json_response_turns_non_finite_numbers_into_null():
    r = json_response({"a": float("nan"), "b": [float("inf"), 1.5], "c": "中文"})
    assert json.loads(r.body) == {"a": None, "b": [None, 1.5], "c": "中文"}


def test_max_nesting_ignores_brackets_in_strings():
    assert max_nesting(b'{"a": "[[[[[[[[[["}', 3) == 1
    assert max_nesting(b'{"a": "[[[[", "b": [[1]]}', 2) == 3
    assert max_nesting(b'{"a": "\\"[[[[", "b": [1]}', 1) == 2


def test_serve_checks_its_arguments():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com")
    with pytest.raises(GpuplanError):
        serve("127.0.0.1", 70000)


def test_live_server_over_loopback(live_server):
    import httpx

    r = httpx.post(live_server + "/api/recommend?top=2", json=LORA, timeout=30)
    assert r.status_code == 200 and len(r.json()["plans"]) >= 2


def test_an_input_key_the_model_ignores_is_a_422_on_its_field(client):
    # estimate/nonllm/input_keys.py: the CLI's refusal, on its field
    r = client.post("/api/estimate", json={"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                                           "hardware": {"gpu": "A10-24GB"}, "input": {"frames": 49}})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "input.frames" and "video diffusion" in r.json()["error"]
