"""Issue 31: a price the buyer imports (`gpuplan catalog import`) prices every answer, marked as theirs and
dated, through every door: the CLI, the Python API, the REST API (a running server picks up an import and a
removal) and the plan bundle (PLAN.md's cost lines and plan.json)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import gpuplan
from clirun import run_cli
from gpuplan.catalog.prices.price_files import import_prices
from gpuplan.providers.imported import remove

QUOTED = (dt.date.today() - dt.timedelta(days=1)).isoformat()
TYPE = "ecs.gn7i-c8g1.2xlarge"
# one A10 serving a 7B model: a small search; the imported quote (far below the bundled CNY 9.53-9.74/h and
# CNY 4,575-4,676/month) makes gn7i-c8g1.2xlarge the cheapest plan
WORKLOAD = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "hardware": {"gpu": "A10-24GB"},
            "constraints": {"regions": ["cn-shanghai"]}}
OWN = "your own price: quote.csv, imported"


@pytest.fixture
def imported(tmp_path):
    # the test session's own cache folder (tests/conftest.py): the API's worker processes are forked from a
    # fork server that keeps the environment it started with, as a real server keeps its cache folder
    quote = tmp_path / "quote.csv"
    quote.write_text("cloud,instance_type,region,billing,price,currency,unit,date,source\n"
                     f"alibaba,{TYPE},cn-shanghai,payg,2.5,CNY,hour,{QUOTED},console quote\n"
                     f"alibaba,{TYPE},cn-shanghai,subscription,1200,CNY,month,{QUOTED},console quote\n",
                     encoding="utf-8")
    import_prices(quote)
    yield tmp_path
    remove()


def _own(plan: dict) -> bool:
    return plan["instance_type"] == TYPE and plan["price_kind"] == "user" and plan["price_basis"] == "quoted" \
        and str(plan["price_source"]).startswith(OWN) and plan["price_as_of"] == QUOTED


def test_python_api_and_cli_use_the_imported_price(imported):
    top = gpuplan.recommend(WORKLOAD).to_dict()["plans"][0]
    assert _own(top) and top["monthly_cost"] == pytest.approx(1200.0) and top["price_age_days"] == (dt.date.today() - dt.date.fromisoformat(QUOTED)).days
    code, out, _err = run_cli("recommend", "--model", "Qwen/Qwen2.5-7B-Instruct", "--task", "inference", "--gpu",
                              "A10-24GB", "--region", "cn-shanghai", "--wide", "--lang", "en")
    assert code == 0
    first = next(line for line in out.splitlines() if line.lstrip().startswith("1 "))
    age = (dt.date.today() - dt.date.fromisoformat(QUOTED)).days   # 2 when the run crosses midnight
    assert "gn7i-c8g1.2xlarge" in first and f"{QUOTED} ({age} d), yours" in first
    assert OWN in out
    code, out_zh, _err = run_cli("recommend", "--model", "Qwen/Qwen2.5-7B-Instruct", "--task", "inference", "--gpu",
                                 "A10-24GB", "--region", "cn-shanghai", "--wide", "--lang", "zh")
    assert code == 0 and f"{QUOTED}（{age} 天），您的报价" in out_zh and "您自己的价格：quote.csv" in out_zh


def test_plan_bundle_cost_lines_and_plan_json_carry_the_imported_price(imported):
    folder = gpuplan.build_plan(WORKLOAD, imported / "bundle")
    plan = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
    chosen = plan.get("plan", plan)
    assert _own(chosen)
    report = (folder / "PLAN.md").read_text(encoding="utf-8")
    assert OWN in report and QUOTED in report


def test_rest_api_and_the_page_see_an_import_and_its_removal(imported):
    from fastapi.testclient import TestClient

    from gpuplan.api import create_app

    with TestClient(create_app(), base_url="http://localhost") as client:
        doc = client.post("/api/recommend", json=WORKLOAD).json()
        assert _own(doc["plans"][0])
        assert len(remove()) == 2                          # the running server reads the cache on each request
        after = client.post("/api/recommend", json=WORKLOAD).json()
        assert not any(p["price_kind"] == "user" for p in after["plans"])
        assert after["plans"][0]["price_as_of"] != QUOTED
