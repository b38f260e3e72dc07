"""The REST API speaks the page's language (issue 16): `?lang=zh` or Accept-Language picks Chinese errors,
the JSON keys never change, and hints suggest actions on the page rather than CLI commands."""

from __future__ import annotations

import pytest

from i18n.english import english_sentences  # tests/ is on sys.path (rootdir of the test packages)

from .conftest import LORA

ZH = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}


def _error(client, path="/api/estimate", body=None, **kw):
    r = client.post(path, json=body, **kw)
    assert r.status_code == 422, r.text
    doc = r.json()
    assert set(doc) == {"error", "hint", "field"}   # the same keys in every language
    return doc


def test_unknown_model_in_chinese_with_a_page_hint(client):
    doc = _error(client, "/api/estimate?lang=zh", {**LORA, "model": "qwen-7", "hardware": {"gpu": "A10"}})
    assert doc["error"] == "未知的模型 'qwen-7'。" and doc["field"] == "model"
    assert "页面" in doc["hint"] and "gpuplan" not in doc["hint"], doc
    assert english_sentences(doc["error"] + "\n" + doc["hint"]) == []


def test_accept_language_picks_chinese(client):
    doc = _error(client, body={**LORA, "hardware": {"gpu": "A1000"}}, headers=ZH)
    assert doc["error"] == "未知的 GPU 'A1000'。" and doc["field"] == "hardware.gpu"
    assert "gpuplan" not in doc["hint"]


def test_query_lang_wins_over_accept_language(client):
    doc = _error(client, "/api/estimate?lang=en", {**LORA, "hardware": {"gpu": "A1000"}}, headers=ZH)
    assert doc["error"] == "Unknown GPU 'A1000'."


@pytest.mark.parametrize("body,field,marker", [
    ({**LORA, "batch_size": 0}, "batch_size", "不能小于 1"),
    ({**LORA, "task": "finetune-all"}, "task", "必须是"),
    ({**LORA, "modle": "x"}, "modle", "未知的工作负载字段"),
])
def test_workload_validation_errors_in_chinese(client, body, field, marker):
    doc = _error(client, "/api/estimate?lang=zh", body)
    assert doc["field"] == field and marker in doc["error"], doc
    assert "gpuplan schema" not in doc["hint"], doc
    assert english_sentences(doc["error"] + "\n" + doc["hint"]) == [], doc


def test_english_stays_the_default_with_cli_free_hints(client):
    doc = _error(client, body={**LORA, "model": "qwen-7", "hardware": {"gpu": "A10"}})
    assert doc["error"] == "Unknown model 'qwen-7'." and "gpuplan models" not in doc["hint"]
    doc = _error(client, body={**LORA, "modle": "x"})
    assert doc["error"] == "Unknown workload key 'modle'." and "gpuplan schema" not in doc["hint"]


def test_results_keep_their_keys_in_chinese(client):
    en = client.post("/api/estimate", json={**LORA, "hardware": {"gpu": "A100-SXM4-80GB"}}).json()
    zh = client.post("/api/estimate?lang=zh", json={**LORA, "hardware": {"gpu": "A100-SXM4-80GB"}}).json()
    assert set(en) == set(zh) and en["memory"] == zh["memory"]
    assert any("可达的硬件算力利用率" in a for a in zh["assumptions"])
    assert not any("可达" in a for a in en["assumptions"])


def test_guard_errors_in_chinese(client):
    r = client.post("/api/estimate?lang=zh", content=b"model=x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"] == "请求体必须是 JSON。"
