"""`gpuplan plan --lang zh`: PLAN.md is Chinese except text that other modules still write in English.

Bundles are rendered in Chinese for real recommendations (a LoRA training plan, a full fine-tuning plan,
a vLLM serving plan, an SDXL plan, a Function Compute plan) and for the bundle test scenarios. Every English
phrase left in PLAN.md must be listed in tests/i18n/pending-bundle.txt, which holds only phrases whose text
comes from outside render/bundle (estimate assumptions, recommender reasons, storage/network advice, price
sources); anything the bundle renderer writes itself must be translated. English bundles have no Chinese.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from gpuplan.plan import recommend
from gpuplan.plan.bundle import bundle_inputs
from gpuplan.render.bundle import render_bundle
from gpuplan.workload import Workload
from gpuplan.workload_loading import load_workload

from bundle.scenarios import GOLDEN_SCENARIOS, PARETO, REJECTED, inputs
from .english import english_sentences

ROOT = Path(__file__).resolve().parents[2]
PENDING = Path(__file__).with_name("pending-bundle.txt")
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
BURSTY = {"name": "bursty-qwen7b", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 512,
          "output_tokens": 256, "serving": {"requests_per_day": 2000, "peak_requests_per_s": 2,
                                            "peak_hours_per_day": 2, "ttft_ms": 3000}}
REAL = {"training-lora": "examples/qwen2.5-7b-lora.yaml", "training-full": "examples/qwen-7b-full-zero.yaml",
        "serving-vllm": "examples/llama-70b-int4-serving.yaml", "sdxl": "examples/sdxl-inference.yaml",
        "function-compute": BURSTY}


@cache
def bundle(key: str, lang: str) -> dict[str, str]:
    if key in GOLDEN_SCENARIOS:
        plan, workload, est = inputs(key)
        return render_bundle(plan, workload, est, lang=lang, rejected=REJECTED.get(key), pareto=PARETO.get(key))
    src = REAL[key]
    w = Workload.model_validate(src) if isinstance(src, dict) else load_workload(ROOT / src)
    rec = recommend(w, top=5)
    data = rec.to_dict()
    workload, est = bundle_inputs(rec.plans[0], w)
    return render_bundle(data["plans"][0], workload, est, lang=lang, rejected=data.get("rejected"),
                         pareto=data.get("pareto"))


def pending() -> set[str]:
    lines = PENDING.read_text(encoding="utf-8").splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


KEYS = [*REAL, *GOLDEN_SCENARIOS]


def test_the_cases_cover_training_serving_sdxl_and_function_compute():
    import json

    platforms = {json.loads(bundle(k, "en")["plan.json"])["plan"].get("platform") for k in REAL}
    assert "function-compute" in platforms and "ecs" in platforms
    assert "generate_images.py" in bundle("sdxl", "en") and "launch.sh" in bundle("training-lora", "en")
    assert "serve.sh" in bundle("serving-vllm", "en")


@pytest.mark.parametrize("key", KEYS)
def test_chinese_plan_md_has_no_english_sentence_of_its_own(key):
    text = bundle(key, "zh")["PLAN.md"]
    new = sorted({s for s in english_sentences(text) if s.strip() not in pending()})
    assert not new, ("English left in the Chinese PLAN.md: translate it where it is written (render/bundle: "
                     f"tr()/N_() + the .po); only text from other modules may go to {PENDING.name}: {new}")
    assert "## " in text and CJK.search(text.splitlines()[0])


@pytest.mark.parametrize("key", KEYS)
def test_english_bundle_has_no_chinese(key):
    """Every file but plan.json, which carries the plan's data values verbatim (e.g. a requirement named
    "ICP filing (ICP备案)" in the platform data)."""
    for path, text in bundle(key, "en").items():
        if path == "plan.json":
            continue
        found = CJK.search(text)
        assert found is None, f"{key}/{path}: Chinese text {text[max(0, found.start() - 20):found.end() + 20]!r}"


def test_a_chinese_bundle_changes_only_its_human_text():
    """Shell scripts and configs keep their code: only echoed messages and PLAN.md follow the language."""
    en, zh = bundle("vllm_service", "en"), bundle("vllm_service", "zh")
    assert set(en) == set(zh)
    import json

    assert json.loads(en["plan.json"])["plan"] == json.loads(zh["plan.json"])["plan"]
    for path in ("terraform/main.tf", "k8s/deployment.yaml", "monitoring/prometheus.yml"):
        assert en[path] == zh[path], path


SHELL_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


@pytest.mark.parametrize("key", ["training-lora", "two_node", "spot_job", "vllm_service", "serving-vllm"])
def test_chinese_shell_messages_keep_the_scripts_working(key, tmp_path):
    """Translated echo/log lines keep every $VARIABLE of the English script, each followed by ASCII (so no
    locale can read a Chinese character as part of the name), and the scripts still parse."""
    import shutil
    import subprocess

    en, zh = bundle(key, "en"), bundle(key, "zh")
    scripts = [p for p in zh if p.endswith(".sh")]
    assert scripts
    for path in scripts:
        assert sorted(SHELL_VAR.findall(zh[path])) == sorted(SHELL_VAR.findall(en[path])), path
        for line in zh[path].splitlines():
            assert not re.search(r"\$[A-Za-z_][A-Za-z0-9_]*[^\x00-\x7f]", line), (path, line)
        if shutil.which("bash"):
            f = tmp_path / path.replace("/", "_")
            f.write_text(zh[path], encoding="utf-8")
            assert subprocess.run(["bash", "-n", str(f)], capture_output=True).returncode == 0, path
    changed = [p for p in scripts if en[p] != zh[p]]
    assert changed, "no script message follows the bundle's language"


@pytest.mark.parametrize("key", ["vllm_service", "serving-vllm"])
def test_chinese_autoscale_readme_is_all_chinese(key):
    """autoscale/README.md is written by the renderer alone: nothing of it may stay English."""
    text = bundle(key, "zh")["autoscale/README.md"]
    assert text.startswith("# 自动伸缩") and english_sentences(text) == []
    assert bundle(key, "en")["autoscale/README.md"].startswith("# Autoscaling")


def test_bundle_errors_follow_the_command_language(tmp_path):
    """`gpuplan plan --lang zh --out EXISTING`: the error and its hint are Chinese (English by default)."""
    from gpuplan.errors import GpuplanError
    from gpuplan.i18n import use_lang
    from gpuplan.render.bundle import build_bundle

    plan, workload, est = inputs("lora_single")
    with pytest.raises(GpuplanError) as en:
        build_bundle(plan, workload, est, tmp_path)
    assert en.value.message == f"{tmp_path} already exists." and "--force" in en.value.hint
    with use_lang("zh"), pytest.raises(GpuplanError) as zh:
        build_bundle(plan, workload, est, tmp_path)
    assert zh.value.message == f"{tmp_path} 已存在。" and "--force" in zh.value.hint
    assert english_sentences(zh.value.message + "\n" + zh.value.hint) == []


@pytest.mark.parametrize("key", ["vllm_service", "training-lora"])
def test_chinese_alerts_and_dashboard_titles(key):
    """alerts.yml annotations and Grafana panel titles follow the language; names, expressions, labels and the
    Prometheus template expressions ({{ $labels.instance }} ...) stay as in the English bundle."""
    import json

    import yaml

    en, zh = bundle(key, "en"), bundle(key, "zh")
    rules_en = [r for g in yaml.safe_load(en["monitoring/alerts.yml"])["groups"] for r in g["rules"]]
    rules_zh = [r for g in yaml.safe_load(zh["monitoring/alerts.yml"])["groups"] for r in g["rules"]]
    assert [(r["alert"], r["expr"], r["labels"]) for r in rules_zh] == [(r["alert"], r["expr"], r["labels"])
                                                                         for r in rules_en]
    for r_en, r_zh in zip(rules_en, rules_zh, strict=True):
        for k, text in r_zh["annotations"].items():
            assert CJK.search(text) and english_sentences(text) == [], text
            assert sorted(re.findall(r"\{\{[^}]*\}\}", text)) == sorted(re.findall(r"\{\{[^}]*\}\}", r_en["annotations"][k]))
    panels_en = json.loads(en["monitoring/grafana-dashboard.json"])["panels"]
    panels_zh = json.loads(zh["monitoring/grafana-dashboard.json"])["panels"]
    assert [p["targets"] for p in panels_zh] == [p["targets"] for p in panels_en]
    assert all(CJK.search(p["title"]) for p in panels_zh)


@pytest.mark.parametrize("call", ["text", "id", "argument"])
def test_bundle_input_errors_follow_the_language(call):
    """render/bundle/safe.py refuses unsafe values with one GpuplanError, Chinese under zh (field kept English)."""
    from gpuplan.errors import GpuplanError
    from gpuplan.i18n import use_lang
    from gpuplan.render.bundle import safe

    fn, value, field = {"text": (safe.check_text, "a\nb", "job name"), "id": (safe.check_id, "gn7 i", "instance type"),
                        "argument": (safe.check_argument, "-rf", "model")}[call]
    with pytest.raises(GpuplanError) as en:
        fn(value, field)
    with use_lang("zh"), pytest.raises(GpuplanError) as zh:
        fn(value, field)
    assert field in en.value.message and zh.value.field == en.value.field == field
    assert CJK.search(zh.value.message) and CJK.search(zh.value.hint)
    assert english_sentences(zh.value.message + "\n" + zh.value.hint) == []
