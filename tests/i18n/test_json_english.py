"""`--lang` changes human text only, never JSON keys or values (docs/architecture.md, JSON contract).

Under `--lang zh` every `--json` document equals its `--lang en` twin, and no Chinese character appears in
it except inside bundled data values that are themselves written in Chinese (official Chinese titles of
regulations and price sheets, quoted verbatim from data/). The same holds for the JSON files of a launch
bundle written with `gpuplan plan --lang zh` (plan.json above all: its why/warnings/assumptions stay English,
PLAN.md shows them translated).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from clirun import plan_exit_code

from .test_zh_everywhere import EXAMPLES, ROOT, run_cli

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
DATA = ROOT / "src" / "gpuplan" / "data"
VOLATILE = ("generated_at", "elapsed_s", "elapsed_ms", "timestamp", "now", "out")   # clock, and where it was written


@cache
def data_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(DATA.rglob("*")) if p.is_file()
                     and p.suffix in (".yaml", ".csv", ".json"))


def strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in strings(k) + strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings(v)]
    return []


def chinese_not_from_data(doc) -> list[str]:
    """Strings of `doc` with a Chinese character that are not verbatim bundled data."""
    return sorted({s for s in strings(doc) if CJK.search(s) and s not in data_text()})


def without_volatile(obj):
    if isinstance(obj, dict):
        return {k: without_volatile(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [without_volatile(v) for v in obj]
    return obj


COMMANDS = [
    *[(f"recommend-{p.stem}", ["recommend", str(p)]) for p in EXAMPLES],
    *[(f"estimate-{p.stem}", ["estimate", str(p)]) for p in EXAMPLES],
    *[(f"compare-{p.stem}", ["compare", str(p)]) for p in EXAMPLES[:2]],
    ("recommend-function-compute", ["recommend", str(Path(__file__).with_name("bursty-qwen7b.yaml"))]),
    ("quick", ["quick", "--params", "7B"]),
    ("quick-infer", ["quick", "--params", "70B", "--task", "infer"]),
    ("estimate-oom", ["estimate", "--model", "qwen2.5-72b", "--task", "full", "--gpu", "A10"]),
    ("instances", ["instances"]),
    ("gpus", ["gpus"]),
    ("show-instance", ["show", "ecs.gn7i-c8g1.2xlarge"]),
    ("error", ["estimate", "--model", "qwen-7", "--task", "lora", "--gpu", "A10"]),
]


def test_the_check_sees_chinese():
    assert chinese_not_from_data({"why": ["最便宜的可行方案"]}) == ["最便宜的可行方案"]
    assert chinese_not_from_data({"title": "ICP filing (ICP备案)"}) == []      # compliance.yaml, verbatim


@pytest.mark.parametrize("args", [a for _, a in COMMANDS], ids=[i for i, _ in COMMANDS])
def test_json_is_the_same_in_every_language(args, monkeypatch, capsys):
    code_en, en = run_cli([*args, "--json", "--lang", "en"], monkeypatch, capsys)
    code_zh, zh = run_cli([*args, "--json", "--lang", "zh"], monkeypatch, capsys)
    assert code_en == code_zh and code_zh in (0, 1, 2), zh
    doc_en, doc_zh = json.loads(en), json.loads(zh)
    assert chinese_not_from_data(doc_zh) == []
    assert without_volatile(doc_zh) == without_volatile(doc_en)


def _bundle(out: Path, lang: str, monkeypatch, capsys, src: Path, *more: str) -> str:
    code, text = run_cli(["plan", str(src), "--out", str(out), "--lang", lang, *more], monkeypatch, capsys)
    assert code == plan_exit_code(text), text
    return text


@pytest.mark.parametrize("example", ["qwen2.5-7b-lora.yaml", "llama-70b-int4-serving.yaml"])
def test_bundle_json_files_stay_english(example, tmp_path, monkeypatch, capsys):
    """plan.json and every other JSON file of a Chinese bundle: English, equal to the English bundle's
    (plan.json's "bundle.lang" says which language the human files are in). PLAN.md is Chinese."""
    src = ROOT / "examples" / example
    zh_dir, en_dir = tmp_path / "zh", tmp_path / "en"
    assert CJK.search(_bundle(zh_dir, "zh", monkeypatch, capsys, src))          # the human summary line
    _bundle(en_dir, "en", monkeypatch, capsys, src)
    zh_summary = json.loads(_bundle(tmp_path / "zh-json", "zh", monkeypatch, capsys, src, "--json"))
    en_summary = json.loads(_bundle(tmp_path / "en-json", "en", monkeypatch, capsys, src, "--json"))
    assert chinese_not_from_data(zh_summary) == [] and without_volatile(zh_summary) == without_volatile(en_summary)
    files = sorted(p.relative_to(zh_dir) for p in zh_dir.rglob("*.json"))
    assert Path("plan.json") in files
    for rel in files:
        if rel.name == "grafana-dashboard.json":
            continue     # a dashboard: its panel titles are human text (checked below)
        zh, en = json.loads((zh_dir / rel).read_text(encoding="utf-8")), json.loads((en_dir / rel).read_text(encoding="utf-8"))
        assert chinese_not_from_data(zh) == [], rel
        if rel == Path("plan.json"):
            assert zh["bundle"].pop("lang") == "zh" and en["bundle"].pop("lang") == "en"
        assert without_volatile(zh) == without_volatile(en), rel
    plan = json.loads((zh_dir / "plan.json").read_text(encoding="utf-8"))
    assert plan["plan"]["why"] and all(not CJK.search(w) for w in plan["plan"]["why"])
    assert CJK.search((zh_dir / "PLAN.md").read_text(encoding="utf-8"))
