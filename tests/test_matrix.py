"""The plan matrix: every task kind x every deployment platform x every output renders.

Task kinds: pretrain, full, LoRA, QLoRA, online serving (a bursty 7B chat service at 0.005 req/s in
cn-hangzhou, the case serverless exists for), batch inference (no request rate), and two non-LLM
services (SDXL images, Whisper audio). Platforms: ECS, Function Compute, PAI-EAS and ACK, forced one
at a time with ``constraints.platforms``. Outputs: the terminal table (en and zh), JSON, the web API
(FastAPI TestClient, recommend and the plan zip) and the bundle written by ``gpuplan plan``.

A serving workload with a request rate has plans on every platform; training and batch inference run
on ECS only, so a cell that forbids ECS has no plan and says that ``platforms`` binds (exit 1 on the
CLI, 422 for the bundle on the web API) - never an internal error. Recommendations are cached per cell.
"""

from __future__ import annotations

import functools
import io
import json
import zipfile

import pytest
import yaml
from rich.console import Console

from clirun import plan_exit_code, run_cli
from gpuplan.i18n import tr
from gpuplan.plan import recommend
from gpuplan.plan.record import PLATFORMS, Plan
from gpuplan.render.recommend import PLATFORM_LABELS, render_recommendation

Q7 = "Qwen/Qwen2.5-7B-Instruct"
HANGZHOU = {"regions": ["cn-hangzhou"]}
TASKS = {
    "pretrain": {"model": "Qwen/Qwen2.5-0.5B", "task": "pretrain", "dataset": {"tokens": 1.0e9}},
    "full": {"model": "Qwen/Qwen-7B-Chat", "task": "full", "dataset": {"tokens": 2.0e8}},
    "lora": {"model": Q7, "task": "lora", "dataset": {"tokens": 1.0e8}},
    "qlora": {"model": Q7, "task": "qlora", "dataset": {"tokens": 1.0e8}},
    "serving": {"model": Q7, "task": "inference", "prompt_tokens": 512, "output_tokens": 256,
                "serving": {"requests_per_s": 0.005}},
    "batch": {"model": Q7, "task": "inference", "batch_size": 16},
    "sdxl": {"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
             "input": {"image_size": 1024, "steps": 30}, "serving": {"requests_per_day": 500}},
    "whisper": {"model": "openai/whisper-large-v3", "task": "inference", "serving": {"requests_per_s": 0.01}},
}
SERVED = {"serving", "sdxl", "whisper"}          # a request rate: every platform applies
CELLS = [(t, p) for t in TASKS for p in PLATFORMS]


def _applies(task: str, platform: str) -> bool:
    return platform == "ecs" or task in SERVED


def workload(task: str, platform: str) -> dict:
    return {**TASKS[task], "name": f"matrix-{task}-{platform}",
            "constraints": {**HANGZHOU, "platforms": [platform]}}


@functools.cache
def rec_of(task: str, platform: str):
    return recommend(workload(task, platform), top=3)


def _ids(cell):
    return f"{cell[0]}-{cell[1]}"


@pytest.mark.parametrize("cell", CELLS, ids=_ids)
def test_recommendation_is_one_record_type_on_the_forced_platform(cell):
    task, platform = cell
    rec = rec_of(task, platform)
    if not _applies(task, platform):
        assert rec.plans == [] and rec.binding_constraints[0]["constraint"] == "platforms"
        assert "ecs" in rec.binding_constraints[0]["needed"]
        return
    assert rec.plans, rec.binding_constraints
    for p in rec.plans:
        assert type(p) is Plan and p.platform == platform
        assert p.memory.per_gpu_bytes <= p.memory.capacity_per_gpu_bytes
        assert p.estimate is not None and p.performance
        assert p.advice.why
    best = rec.plans[0]
    # the label is true on the shown figures: "cheapest" only when no lower plan shows less (plan/explain.py)
    head = best.advice.why[0]
    if best.cost.headline[0] is None and rec.objective in ("cost", "balanced"):
        # no price (PAI-EAS without a bundled price): not called the cheapest, nor ranked by a cost it lacks
        assert head.startswith("feasible plan") and "no price known" in head, head
    else:
        assert head.split(" feasible plan")[0] in ("cheapest", "fastest", "best cost x time") or head.startswith(
            ("lowest expected cost", "fastest within 0.5 %")), head
        if not head.startswith(("cheapest", "fastest feasible")):
            assert "shows less" in best.advice.why[1] or head.startswith("best cost x time")
    if platform == "ecs":
        assert best.advice.storage and best.advice.host     # ECS plans carry storage/host advice
    else:
        assert best.to_dict()["traffic"]["requests_per_day"] > 0


def _text(rec, lang: str) -> str:
    buf = io.StringIO()
    render_recommendation(rec, Console(file=buf, width=100, color_system=None), lang)
    return buf.getvalue()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("cell", CELLS, ids=_ids)
def test_text_table_shows_the_platform(cell, lang):
    rec = rec_of(*cell)
    text = _text(rec, lang)
    if not _applies(*cell):
        assert "platforms" in text                    # the binding constraint, said in one line
        return
    label = tr(PLATFORM_LABELS[cell[1]], lang)      # "Function Compute" is 函数计算 FC in Chinese
    assert label in text, text
    assert rec.plans[0].short_name in text


@pytest.mark.parametrize("cell", CELLS, ids=_ids)
def test_json_has_the_contract_keys_and_the_platform(cell):
    import jsonschema

    from gpuplan.schemas import RECOMMEND_SCHEMA

    doc = json.loads(json.dumps(rec_of(*cell).to_dict()))
    jsonschema.validate(doc, RECOMMEND_SCHEMA)
    assert {p["platform"] for p in doc["plans"]} <= {cell[1]}
    assert all(p["platform"] == cell[1] for p in doc["pareto"])
    for p in doc["plans"]:
        for key in ("cold_start", "traffic", "autoscaling", "memory_components", "ops"):
            assert key in p                           # null where the platform has none, never missing


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.api import create_app

    with TestClient(create_app(), base_url="http://localhost") as c:
        yield c


@pytest.mark.parametrize("cell", CELLS, ids=_ids)
def test_web_api_recommend_and_plan_zip(client, cell):
    task, platform = cell
    w = workload(task, platform)
    r = client.post("/api/recommend?top=3", json=w)
    assert r.status_code == 200, r.text
    doc = r.json()
    z = client.post("/api/plan?rank=1&lang=en", json=w)
    if not _applies(task, platform):
        assert doc["plans"] == [] and doc["binding_constraints"][0]["constraint"] == "platforms"
        assert z.status_code == 422 and z.json()["error"]
        return
    assert doc["plans"][0]["platform"] == platform
    assert z.status_code == 200, z.text
    with zipfile.ZipFile(io.BytesIO(z.content)) as zf:
        plan_json = next(n for n in zf.namelist() if n.endswith("/plan.json"))
        chosen = json.loads(zf.read(plan_json))
        md = zf.read(next(n for n in zf.namelist() if n.endswith("/PLAN.md"))).decode()
    assert json.dumps(chosen).count(f'"platform": "{platform}"') >= 1
    assert f"| {platform} |" in md


_cli = run_cli


@pytest.mark.parametrize("cell", CELLS, ids=_ids)
def test_gpuplan_plan_writes_the_bundle(cell, tmp_path):
    task, platform = cell
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload(task, platform)))
    code, out, err = _cli("plan", str(path), "--out", str(tmp_path / "bundle"))
    assert "Internal error" not in out + err and "Traceback" not in out + err
    if not _applies(task, platform):
        assert code == 2 and "platforms" in err and "Hint" in err and not out
        return
    assert code == plan_exit_code(out + err), out + err   # 1: written, but the preflight found a problem
    md = (tmp_path / "bundle" / "PLAN.md").read_text()
    assert f"| {platform} |" in md
    plan = json.loads((tmp_path / "bundle" / "plan.json").read_text())
    assert json.dumps(plan).count(f'"platform": "{platform}"') >= 1


def test_the_bursty_chat_service_ranks_function_compute_first_and_renders(tmp_path):
    """The case from the issue: no platform forced, Function Compute ranks first; every output works."""
    w = {**TASKS["serving"], "constraints": HANGZHOU}
    rec = recommend(w)
    assert rec.plans[0].platform == "function-compute"
    assert {p.platform for p in rec.plans} >= {"function-compute", "ecs"}
    for lang in ("en", "zh"):
        text = _text(rec, lang)
        assert tr("Function Compute", lang) in text and "fc.gpu.ada.1" in text
    path = tmp_path / "bursty.yaml"
    path.write_text(yaml.safe_dump(w))
    for lang in ("en", "zh"):
        code, out, err = _cli("recommend", str(path), "--lang", lang)
        assert code == 0 and "fc.gpu.ada.1" in out and not err, out + err
    code, out, err = _cli("plan", str(path), "--out", str(tmp_path / "bundle"))
    assert code == plan_exit_code(out + err) and "fc.gpu.ada.1" in out, out + err
