"""The command line: exact outputs, exit codes, one-line errors, never a traceback."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from clirun import run_cli


run = run_cli


def test_version():
    code, out, _ = run("--version")
    assert code == 0 and out.strip().startswith("gpuplan ")


def test_instances_with_a10_are_exactly_the_a10_families():
    code, out, _ = run("instances", "--gpu", "A10", "--json")
    assert code == 0
    fams = {i["family"] for i in json.loads(out)["instances"]}
    assert fams == {"gn7i", "ebmgn7i", "ebmgn7ix", "vgn7i-vws", "sgn7i-vws"}


def test_show_gn7e_is_one_a100_80gb_16_vcpu_125_gib():
    code, out, _ = run("show", "ecs.gn7e-c16g1.4xlarge", "--json")
    inst = json.loads(out)["instance"]
    assert code == 0
    assert (inst["gpu"], inst["gpu_count"], inst["gpu_memory_gib"], inst["vcpus"], inst["memory_gib"]) == \
        ("A100-SXM4-80GB", 1, 80, 16, 125)


def test_show_a10_has_125_dense_bf16_600_gb_s_no_fp8_no_mig():
    code, out, _ = run("show", "A10", "--json")
    gpu = json.loads(out)["gpu"]
    assert code == 0
    assert gpu["bf16_dense_tflops"] == 125 and gpu["mem_bandwidth_gb_s"] == 600
    assert gpu["fp8_dense_tflops"] is None and gpu["mig"] is False


def test_human_tables_in_chinese():
    code, out, _ = run("instances", "--gpu", "L20", "--lang", "zh")
    assert code == 0 and "实例规格" in out and "gn8is" in out


@pytest.mark.parametrize("args, needle", [
    (("show", "A1O0"), "Did you mean"),
    (("estimate", "--model", "qwen2.5-7bb", "--gpu", "A10"), "Did you mean"),
    (("estimate", "--model", "qwen2.5-7b", "--gpu", "A10", "--seq-len", "-5"), "seq_len"),
    (("estimate", "--model", "qwen2.5-7b", "--task", "dance"), "Allowed"),
    (("estimate", "no-such-file.yaml"), "does not exist"),
    (("instances", "--min-gpu-memory", "-3"), "out of range"),
    (("estimate",), "No workload given"),
])
def test_bad_input_exits_2_with_one_line_and_a_hint(args, needle):
    code, out, err = run(*args)
    assert code == 2
    assert "Traceback" not in err and "Traceback" not in out
    assert err.count("Error:") == 1 and "Hint:" in err
    assert needle in err


@pytest.mark.parametrize("args", [("estimate", "--no-such-flag"), ("estimate", "--model", "x", "-3"),
                                  ("recommend", "--top", "many"), ("no-such-command",)])
def test_usage_errors_exit_2_without_internal_error(args):
    code, out, err = run(*args)
    assert code == 2
    assert "Internal error" not in err and "Traceback" not in err


def test_errors_under_json_are_json_on_stdout():
    code, out, _ = run("show", "nonsense-thing", "--json")
    assert code == 2
    doc = json.loads(out)
    assert set(doc) >= {"error", "hint"}


def test_malformed_yaml_and_unknown_keys(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("model: [unclosed\n")
    code, _, err = run("estimate", str(bad))
    assert code == 2 and "not valid YAML" in err
    bad.write_text("model: qwen2.5-7b\nseq_lenght: 2048\n")
    code, _, err = run("estimate", str(bad))
    assert code == 2 and "seq_len" in err


def test_estimate_json_contract():
    code, out, _ = run("estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema_version"] == 1
    mem = doc["memory"]
    assert sum(mem["components"].values()) == pytest.approx(mem["per_gpu_bytes"], abs=8)
    assert doc["workload"]["seq_len"] == 2048 and any("assumed seq_len" in a for a in doc["assumptions"])
    import jsonschema

    from gpuplan.schemas import ESTIMATE_SCHEMA
    jsonschema.validate(doc, ESTIMATE_SCHEMA)


def test_estimate_jsonl_batch_keeps_order_and_reports_errors_per_line(tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_text('{"model": "qwen2.5-7b", "task": "lora", "hardware": {"gpu": "A10"}}\n'
                 '{"model": "no-such-model"}\n'
                 '{"model": "llama-3.1-8b", "task": "inference", "hardware": {"gpu": "L20"}}\n')
    code, out, _ = run("estimate", str(f), "--json")
    lines = [json.loads(x) for x in out.splitlines()]
    assert code == 1 and len(lines) == 3
    assert lines[0]["workload"]["model"] == "qwen2.5-7b" and "error" in lines[1]
    assert lines[2]["hardware"]["gpu"] == "L20-48GB"


def test_estimate_max_answers_the_reverse_question():
    code, out, _ = run("estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--max", "seq_len", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["value"] > 1000 and doc["estimate"]["memory"]["fits"]


def test_schema_is_json_schema():
    code, out, _ = run("schema")
    schema = json.loads(out)
    assert code == 0 and "model" in schema["properties"]


def test_doctor_without_gpu_says_so_and_exits_2():
    code, out, _ = run("doctor", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["exit_code"] == 2


def test_catalog_refresh_without_credentials_exits_2(monkeypatch):
    for var in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_ACCESS_KEY",
                "ALICLOUD_SECRET_KEY", "ALIBABA_CLOUD_CREDENTIALS_FILE", "ALIBABA_CLOUD_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    monkeypatch.setenv("HOME", "/nonexistent-home-for-test")
    code, out, err = run("catalog", "refresh", "--region", "cn-hangzhou")
    assert code == 2
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in (out + err)


names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names)
def test_random_names_never_traceback(name):
    if name.startswith("-"):
        name = "x" + name
    code, out, err = run("show", name)
    assert code in (0, 2)
    assert "Traceback" not in err and "Internal error" not in err


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12)
keys = st.sampled_from(["model", "task", "precision", "quantization", "seq_len", "batch_size", "prompt_tokens",
                        "output_tokens", "parallel", "hardware", "lora", "dataset", "serving", "constraints",
                        "grad_checkpointing", "framework", "optimizer", "kv_cache_dtype", "objective", "name"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.dictionaries(keys, json_values, max_size=8), model=st.sampled_from(
    ["qwen2.5-7b", "llama-3.1-8b", "sdxl", {"params_b": 3}, "nope", 7]))
def test_random_workload_mappings_never_traceback(data, model, tmp_path_factory):
    data = dict(data)
    data["model"] = model
    f = tmp_path_factory.mktemp("w") / "w.json"
    f.write_text(json.dumps(data))
    code, out, err = run("estimate", str(f), "--json")
    assert code in (0, 2), (code, err[-500:])
    assert "Traceback" not in err and "Internal error" not in err
    json.loads(out)


def _stdin(monkeypatch, data: bytes) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_dash_reads_the_workload_from_stdin_once_for_commands_that_read_it_twice(monkeypatch):
    # `estimate` reads the workload to look for a list, then loads it: both reads see the same text
    _stdin(monkeypatch, b"model: Qwen/Qwen2.5-7B-Instruct\ntask: lora\nseq_len: 1024\n")
    code, out, err = run("estimate", "-", "--gpu", "A10", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["workload"]["model"] == "Qwen/Qwen2.5-7B-Instruct" and d["workload"]["seq_len"] == 1024
    _stdin(monkeypatch, b'{"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "dataset": {"tokens": 1e8}}')
    code, out, err = run("recommend", "-", "--json")
    assert code == 0, err
    assert json.loads(out)["plans"]


@pytest.mark.parametrize(("data", "words"), [(b"", "is empty"), (b"\xff\xfe\xfa", "not UTF-8")])
def test_bad_stdin_is_one_clear_error(monkeypatch, data, words):
    _stdin(monkeypatch, data)
    code, out, err = run("recommend", "-")
    assert code == 2 and words in err and "Traceback" not in err


@pytest.mark.parametrize("lang, words", [("en", ("request batch 1", "concurrent sequences per replica")),
                                         ("zh", ("请求批次 1", "并发序列"))])
def test_estimate_of_a_service_shows_the_serving_layout_not_training_fields(lang, words):
    code, out, _ = run("estimate", "--model", "qwen2.5-7b", "--task", "inference", "--gpu", "A10", "--lang", lang)
    layout = next(ln for ln in out.splitlines() if "TP1" in ln)
    assert code == 0 and all(w in layout for w in words), layout
    for training_word in ("ckpt", "GA ", "micro-batch", "激活重计算", "梯度累积"):
        assert training_word not in layout, layout
    code, out, _ = run("estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10")
    assert "micro-batch" in next(ln for ln in out.splitlines() if "TP1" in ln)


def test_a_service_storage_line_names_no_checkpoint():
    code, out, _ = run("recommend", "--model", "qwen2.5-7b", "--task", "inference")
    storage = next(ln for ln in out.splitlines() if ln.startswith("Storage"))
    assert code == 0 and "checkpoint" not in storage, storage
    code, out, _ = run("recommend", "--model", "qwen2.5-7b", "--task", "lora")
    assert "checkpoint" in next(ln for ln in out.splitlines() if ln.startswith("Storage"))
