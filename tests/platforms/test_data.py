"""Every new price and limit has a source and a date; unknown prices are null, never 0."""

from __future__ import annotations

import datetime as dt

import yaml
from importlib.resources import files

from gpuplan.plan.advice.ops import load_compliance, load_ops
from gpuplan.plan.deploy.platform_data import load_platforms


def _date(x) -> dt.date:
    return x if isinstance(x, dt.date) else dt.date.fromisoformat(str(x))


def test_platform_prices_are_sourced_and_dated():
    doc = load_platforms()
    fc = doc["function_compute"]
    for g in fc["gpu_types"]:
        assert g["source"].startswith("https://") and _date(g["as_of"])
    pr = fc["pricing"]
    assert pr["source"].startswith("https://") and _date(pr["as_of"])
    assert all(t["price_per_cu"] > 0 for t in pr["tiers"])
    assert pr["cny_price_per_cu"] is None
    fee = doc["ack"]["management_fee"]
    assert fee["pro_per_hour"] == 0.09 and fee["currency"] == "USD" and fee["source"].startswith("https://")
    assert _date(fee["as_of"]) == dt.date(2026, 3, 26)
    for r in doc["pai_eas"]["resources"]:
        assert r["price_per_hour"] is None or (r["price_per_hour"] > 0 and r["as_of"] and r["source"])


def test_assumptions_are_marked_unconfirmed():
    cold = load_platforms()["function_compute"]["cold_start"]
    assert set(cold["unconfirmed"]) == {"container_start_s", "weight_load_gb_s", "keep_alive_s"}


def test_ops_generations_cover_the_catalog_families():
    fams = {f["family"] for f in yaml.safe_load((files("gpuplan") / "data" / "clouds" / "alibaba" / "families.yaml")
                                                  .read_text())}
    covered = {f for g in load_ops()["generations"] for f in g["families"]}
    assert fams <= covered, fams - covered
    for g in load_ops()["generations"]:
        assert g["sources"] and all(s.startswith("https://") for s in g["sources"])


def test_compliance_notes_are_dated_and_sourced():
    doc = load_compliance()
    ids = {n["id"] for n in doc["notes"]}
    assert ids == {"icp-filing", "algorithm-filing", "generative-ai-measures"}
    gen = next(n for n in doc["notes"] if n["id"] == "generative-ai-measures")
    assert _date(gen["effective"]) == dt.date(2023, 8, 15)
    alg = next(n for n in doc["notes"] if n["id"] == "algorithm-filing")
    assert _date(alg["effective"]) == dt.date(2022, 3, 1)
    for n in doc["notes"]:
        assert n["sources"] and _date(n["as_of"])
    assert "not legal advice" in doc["disclaimer"]
