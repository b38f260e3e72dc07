"""ops_advice: image, driver, CUDA, UEFI, auto-release, logs, data loading, compliance."""

from __future__ import annotations

import datetime as dt

from gpuplan.catalog.models import resolve_model
from gpuplan.plan.advice.ops import is_mainland, ops_advice
from gpuplan.workload_loading import load_workload

SERVE = load_workload({"model": "Qwen/Qwen2.5-7B-Instruct"})
TRAIN = load_workload({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora",
                       "dataset": {"samples": 100000, "tokens_per_sample": 512, "bytes_per_sample": 2000}})


def _plan(it, **kw):
    return {"platform": "ecs", "instance_type": it, "billing": "payg", "region": "cn-shanghai", "instance_count": 1, **kw}


def test_blackwell_needs_cuda_12_8_and_uefi():
    for it in ("ecs.ebmgn9ge.64xlarge", "ecs.gn9gc.4xlarge"):
        a = ops_advice(_plan(it), SERVE)
        assert a["uefi"] is True and a["cuda"].startswith(">= 12.8") and "570" in a["driver"]
        assert all("UEFI" in i for i in a["image"])


def test_ampere_and_bare_metal_l20():
    a = ops_advice(_plan("ecs.gn7i-c8g1.2xlarge"), SERVE)
    assert a["uefi"] is False and a["image"] == ["Alibaba Cloud Linux 3", "Ubuntu 22.04"]
    assert a["generation"] == "ampere" and a["driver"].startswith(">= 535")
    assert ops_advice(_plan("ecs.ebmgn8is.32xlarge"), SERVE)["uefi"] is True
    assert ops_advice(_plan("ecs.gn8v-tee.4xlarge"), SERVE)["image"] == ["Alibaba Cloud Linux 3"]
    assert "GRID" in ops_advice(_plan("ecs.sgn7i-vws-m4.2xlarge"), SERVE)["driver"]


def test_training_gets_auto_release_tensorboard_and_small_file_advice():
    now = dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.timezone.utc)
    a = ops_advice(_plan("ecs.gn7i-c8g1.2xlarge", time_s=7200), TRAIN, now=now)
    assert a["auto_release"]["hours"] == 4              # ceil(2 h x 1.2 + the operator's launch steps, 1 h assumed)
    assert a["auto_release"]["operator_s"] == 3600
    assert a["auto_release"]["release_at_utc"] == "2026-11-30T14:00:00Z"
    assert a["tensorboard"] and a["logs"]["service"].startswith("Simple Log Service")
    assert a["data_loading"]["small_files"] is True and "WebDataset" in a["data_loading"]["advice"]
    assert a["compliance"] == []                                     # training: no serving notes
    assert ops_advice(_plan("ecs.gn7i-c8g1.2xlarge", billing="subscription", time_s=7200), TRAIN)["auto_release"] is None


def test_compliance_only_for_mainland_serving():
    notes = ops_advice(_plan("ecs.gn7i-c8g1.2xlarge"), SERVE)["compliance"]
    assert [n["id"] for n in notes] == ["icp-filing", "algorithm-filing", "generative-ai-measures"]
    assert all(n["sources"] and n["as_of"] and "not legal advice" in n["disclaimer"] for n in notes)
    assert ops_advice(_plan("ecs.gn7i-c8g1.2xlarge", region="ap-southeast-1"), SERVE)["compliance"] == []
    assert ops_advice(_plan("ecs.gn7i-c8g1.2xlarge", region="cn-hongkong"), SERVE)["compliance"] == []
    assert is_mainland("cn-wulanchabu") and not is_mainland("us-west-1")


def test_function_compute_plan_advice():
    a = ops_advice({"platform": "function-compute", "instance_type": "fc.gpu.ada.1", "region": "cn-hangzhou"}, SERVE)
    assert "managed" in a["driver"] and a["auto_release"] is None and len(a["compliance"]) == 3


def test_modelscope_ids_resolve_to_the_same_model():
    assert resolve_model("qwen/Qwen2.5-7B-Instruct").id == "Qwen/Qwen2.5-7B-Instruct"
    assert resolve_model("LLM-Research/Meta-Llama-3.1-8B-Instruct").id == "meta-llama/Llama-3.1-8B-Instruct"
    assert resolve_model("LLM-Research/Meta-Llama-3-8B-Instruct").id == "meta-llama/Meta-Llama-3-8B-Instruct"
