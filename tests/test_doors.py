"""Every door gives the same answer and the same refusal (issue 32).

The same workload goes in through the CLI (in process, `tests/clirun.py`), the Python API (`gpuplan.recommend`,
`gpuplan.estimate`), REST (FastAPI's TestClient), the web page (its request builder, `static/request.js`, run in
JavaScript, whose JSON is then POSTed as the page does) and the wizard (`gpuplan ask`'s answers, typed the way
people type them, through `ask_lines` and `build_workload`). Good workloads must give the same plans (instance
type, count, billing, region, cost) at every door; bad input must give the same sentence, the same did-you-mean
and hint (REST: 422, with the hint the page can act on, in the page's language).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import gpuplan
from clirun import run_cli
from gpuplan.ask import ask_lines, build_workload
from gpuplan.errors import GpuplanError
from pagejs import node_binary, page_requests

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from gpuplan.api import create_app  # noqa: E402

TOP = 3
ALL_BILLING = {"billing": ["payg", "spot", "subscription"], "billing_all": 3}
FORM = {"objective": "cost", "precision": "", "quantization": "", "currency": "CNY", "cloud": "alibaba", "region": "",
        **ALL_BILLING}

# name -> (the workload, the page's form values, the wizard's answers as typed). Each states one job.
GOOD: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "lora-samples": (
        {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 1024,
         "dataset": {"samples": 50000, "tokens_per_sample": 1024, "epochs": 1.0},
         "constraints": {"deadline_hours": 48.0, "budget": 3000.0}},
        {**FORM, "model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": "1024", "samples": "50000",
         "tokens_per_sample": "1024", "epochs": "1", "deadline_hours": "48", "budget": "3000"},
        "lora\nQwen/Qwen2.5-7B-Instruct\n5万\n1024\n1\n2天\n¥3000\n"),
    "gptq-serving": (   # a pre-quantized checkpoint, precision and quantization as published
        {"model": "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "task": "inference", "prompt_tokens": 1000,
         "output_tokens": 256, "serving": {"requests_per_s": 2.0, "peak_requests_per_s": 2.0, "ttft_ms": 2000.0}},
        {**FORM, "model": "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "task": "inference", "mode": "online",
         "prompt_tokens": "1000", "output_tokens": "256", "requests_per_s": "2", "ttft_ms": "2000"},
        "inference\nQwen/Qwen2.5-72B-Instruct-GPTQ-Int4\nnone\nonline\n2\nnone\n1k\n256\n2秒\n不限\n"),
    "batch-job": (
        {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "quantization": "awq", "prompt_tokens": 512,
         "output_tokens": 128, "dataset": {"items": 200000}, "constraints": {"deadline_hours": 24.0}},
        {**FORM, "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "mode": "batch", "quantization": "awq",
         "prompt_tokens": "512", "output_tokens": "128", "items": "200000", "deadline_hours": "24"},
        "inference\nQwen/Qwen2.5-7B-Instruct\nawq\nbatch\n20万\n512\n128\n1天\nnone\n"),
}
# The page sends the peak rate only through its "other keys" box (the wizard asks for one rate and sets both).
PAGE_EXTRA = {"gptq-serving": {"serving": {"peak_requests_per_s": 2}}}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), base_url="http://localhost") as c:
        yield c


@pytest.fixture(scope="module")
def page_bodies() -> dict[str, dict[str, Any]]:
    if node_binary() is None:
        pytest.skip("no JavaScript runtime (node or playwright's) for the page's request builder")
    names = list(GOOD)
    bodies = page_requests([(GOOD[n][1], PAGE_EXTRA.get(n)) for n in names])
    return dict(zip(names, bodies, strict=True))


def _plans(doc: dict[str, Any]) -> list[tuple]:
    """What a plan is, as the tables show it: the machine, how many, how billed, where, and its cost."""
    def cost(p: dict[str, Any]) -> float | None:
        value = p.get("total_cost") if p.get("total_cost") is not None else p.get("monthly_cost")
        return round(value, 2) if value is not None else None
    return [(p["platform"], p["instance_type"], p["instance_count"], p["gpus_total"], p["billing"], p["region"],
             cost(p)) for p in doc["plans"]]


def _cli_recommend(tmp_path: Path, workload: dict[str, Any], *flags: str) -> dict[str, Any]:
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload, allow_unicode=True), encoding="utf-8")
    code, out, err = run_cli("recommend", str(path), "--top", str(TOP), "--json", *flags)
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("name", list(GOOD))
def test_one_workload_gives_the_same_plans_at_every_door(name, tmp_path, client, page_bodies):
    workload, _fields, typed = GOOD[name]
    python = gpuplan.recommend(workload, top=TOP).to_dict()
    want = _plans(python)
    assert want, f"{name}: no plan, so nothing is compared"
    assert _plans(_cli_recommend(tmp_path, workload)) == want, "CLI"
    rest = client.post(f"/api/recommend?top={TOP}", json=workload)
    assert rest.status_code == 200, rest.text
    assert _plans(rest.json()) == want, "REST"
    page = page_bodies[name]
    assert {k: v for k, v in page.items() if k != "objective"} == workload, "the page asks for another workload"
    from_page = client.post(f"/api/recommend?top={TOP}", json=page)
    assert from_page.status_code == 200, from_page.text
    assert _plans(from_page.json()) == want, "page"
    answers = ask_lines(io.StringIO(typed), "en")
    wizard = build_workload(answers)
    assert {k: v for k, v in wizard.items() if k != "name"} == {**workload, "constraints": {
        "currency": "CNY", **workload.get("constraints", {})}}, "the wizard read the answers as another workload"
    assert _plans(gpuplan.recommend(wizard, top=TOP).to_dict()) == want, "wizard"


def test_estimate_is_the_same_through_cli_python_and_rest(client):
    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "hardware": {"gpu": "A10"}}
    python = gpuplan.estimate(w).to_dict()
    code, out, err = run_cli("estimate", "--model", "Qwen/Qwen2.5-7B-Instruct", "--task", "lora", "--seq-len", "2048",
                             "--gpu", "A10", "--json")
    assert code == 0, err
    rest = client.post("/api/estimate", json=w)
    assert rest.status_code == 200, rest.text
    for doc in (json.loads(out), rest.json()):
        assert doc["memory"] == python["memory"] and doc["performance"] == python["performance"]


# ------------------------------------------------------------------------------------------------ refusals

LORA = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"}
# name -> (workload, CLI flags saying the same, or None when flags cannot)
BAD: dict[str, tuple[dict[str, Any], list[str] | None]] = {
    "region-typo": ({**LORA, "constraints": {"regions": ["cn-hangzou"]}},
                    ["--model", LORA["model"], "--task", "lora", "--region", "cn-hangzou"]),
    "region-of-mars": ({**LORA, "constraints": {"regions": ["mars-1"]}},
                       ["--model", LORA["model"], "--task", "lora", "--region", "mars-1"]),
    "tencent-region": ({**LORA, "constraints": {"regions": ["ap-guangzhou"]}},
                       ["--model", LORA["model"], "--task", "lora", "--region", "ap-guangzhou"]),
    "ambiguous-task": ({**LORA, "task": "train"}, ["--model", LORA["model"], "--task", "train"]),
    "boolean-seq-len": ({**LORA, "seq_len": True}, None),
    "unknown-model": ({**LORA, "model": "qwen-7"}, ["--model", "qwen-7", "--task", "lora"]),
    "no-model": ({"task": "lora", "seq_len": 1024}, None),
}


def _python_error(workload: dict[str, Any]) -> GpuplanError:
    with pytest.raises(GpuplanError) as exc:
        gpuplan.recommend(workload, top=TOP)
    return exc.value


@pytest.mark.parametrize("name", list(BAD))
def test_the_same_bad_input_gets_the_same_refusal_at_every_door(name, tmp_path, client):
    workload, flags = BAD[name]
    err = _python_error(workload)
    assert err.message and err.hint, name
    # CLI: the workload file, and the flags that say the same
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(workload), encoding="utf-8")
    runs = [run_cli("recommend", str(path), "--json")] + ([run_cli("recommend", *flags, "--json")] if flags else [])
    for code, out, _err in runs:
        assert code == 2
        assert json.loads(out) == err.to_dict("cli")
    # REST and the page (which sends what its "other keys" box holds as it is)
    rest = client.post("/api/recommend", json=workload)
    assert rest.status_code == 422, rest.text
    body = rest.json()
    assert body["error"] == err.message and body["hint"] == err.hint_for("web")
    assert body["hint"] and not body["hint"].startswith(("g.", "5-")), body   # whole sentences
    if "Did you mean" in err.hint:
        assert err.hint.split("?")[0] in body["hint"]   # the same did-you-mean names
    # the page: its model field and task picker, the rest through its "other keys" box (it refuses an empty model
    # itself, and its task picker offers the five tasks only)
    if node_binary() is not None and workload.get("model") and workload.get("task") in ("lora", "inference"):
        fields = {**FORM, "model": workload["model"], "task": workload["task"]}
        extra = {k: v for k, v in workload.items() if k not in ("model", "task")}
        page = page_requests([(fields, extra or None)])[0]
        got = client.post("/api/recommend", json=page)
        assert got.status_code == 422 and got.json()["error"] == err.message, got.text


@pytest.mark.parametrize("name", ["region-typo", "tencent-region", "ambiguous-task", "unknown-model"])
def test_refusals_speak_the_language_of_the_door(name, client):
    workload, flags = BAD[name]
    assert flags is not None
    code, out, errtext = run_cli("recommend", *flags, "--lang", "zh")
    assert code == 2
    from gpuplan.i18n import use_lang

    with use_lang("zh"):
        err = _python_error(workload)
    assert err.message in errtext and err.hint in errtext
    rest = client.post("/api/recommend?lang=zh", json=workload).json()
    assert rest["error"] == err.message and rest["hint"] == err.hint_for("web")
    assert any("\u4e00" <= ch <= "\u9fff" for ch in rest["error"] + rest["hint"]), rest


@pytest.mark.parametrize("typed, question", [("train", "Task"), ("微调", "Task")])
def test_the_wizard_refuses_the_ambiguous_task_words_the_workload_refuses(typed, question):
    with pytest.raises(GpuplanError) as exc:
        ask_lines(io.StringIO(typed + "\n"), "en")
    wizard = exc.value
    with pytest.raises(GpuplanError) as exc2:
        gpuplan.load_workload({"model": "Qwen/Qwen2.5-7B-Instruct", "task": typed})
    assert question in wizard.message and exc2.value.message in wizard.message and wizard.hint == exc2.value.hint
