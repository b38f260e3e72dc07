"""`--lang zh` has no English unit or field words (issue 24, item 4): durations (秒, 分钟, 小时, 天),
rates (请求/秒, 张/秒, token/秒), the field labels of `show`, the assumed field names, and the
schema's titles. Symbols that read the same in both languages stay: GiB, GB, MB/s, IOPS, TFLOPS, ms-free."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .english import english_sentences
from .test_zh_everywhere import run_cli

ROOT = Path(__file__).resolve().parents[2]
UNIT_WORDS = re.compile(r"\d\s?(?:ms|s|min|h|hours?|days?)\b|\b(?:req|requests|images|tokens|samples|clips)/s\b"
                        r"|\bper (?:month|hour|day)\b|\breplica\(s\)")


def english_units(text: str) -> list[str]:
    return [m.group(0) for m in UNIT_WORDS.finditer(text)]


@pytest.mark.parametrize("example", ["sdxl-inference.yaml", "llama-70b-int4-serving.yaml", "qwen2.5-7b-lora.yaml"])
def test_recommend_in_chinese_has_no_english_unit_words(example, monkeypatch, capsys):
    code, out = run_cli(["recommend", str(ROOT / "examples" / example), "--lang", "zh"], monkeypatch, capsys)
    assert code in (0, 1), out
    assert english_units(out) == [], english_units(out)
    assert english_sentences(out) == [], english_sentences(out)
    assert not re.search(r"假设 [a-z_]+[ ：]", out), re.findall(r"假设 [a-z_]+[ ：]", out)   # field names have labels
    assert re.search(r"假设 [^a-z\s]+（[a-z_]+）", out)


def test_estimate_in_chinese_has_no_english_unit_words(monkeypatch, capsys):
    code, out = run_cli(["estimate", str(ROOT / "examples" / "qwen-7b-full-zero.yaml"), "--gpu", "A100-80GB",
                         "--lang", "zh"], monkeypatch, capsys)
    assert code == 0, out
    assert english_units(out) == [], english_units(out)
    assert "每秒 token 数" in out and "form factor" not in out


@pytest.mark.parametrize("name, labels", [
    ("A10", ["显存带宽（GB/s）", "厂商", "规格形态"]),
    ("ecs.gn7i-c8g1.2xlarge", ["实例规格", "网络带宽", "本地盘（GiB）"]),
    ("Qwen/Qwen2.5-7B-Instruct", ["隐藏层维度", "注意力头数", "参数量"]),
])
def test_show_labels_are_chinese(name, labels, monkeypatch, capsys):
    code, out = run_cli(["show", name, "--lang", "zh"], monkeypatch, capsys)
    assert code == 0, out
    for label in labels:
        assert label in out, (label, out)
    left = [ln.split("│")[1].strip() for ln in out.splitlines() if ln.count("│") >= 3]
    assert not [k for k in left if re.fullmatch(r"[a-z0-9_]+", k)], left    # no raw snake_case keys


def test_schema_json_and_lang(monkeypatch, capsys):
    code, out = run_cli(["schema", "--json", "--lang", "zh"], monkeypatch, capsys)
    assert code == 0
    zh = json.loads(out)
    code, out = run_cli(["schema", "--json"], monkeypatch, capsys)
    en = json.loads(out)
    assert zh["properties"]["model"]["title"] == "模型（model）"
    assert zh["properties"].keys() == en["properties"].keys()          # keys and structure never change
    assert zh["$defs"]["ServingSpec"]["properties"]["ttft_ms"]["title"].startswith("首字延迟目标")
    code, out = run_cli(["schema", "nope", "--lang", "zh"], monkeypatch, capsys)
    assert code == 2 and "未知" in out


@pytest.mark.parametrize("text, zh", [("a: " + "[" * 70 + "]" * 70 + "\n", "嵌套超过 64 层"),
                                      ("model: qwen2.5-7b\nx: !!int abc\n", "无效的整数 'abc'")])
def test_the_parsers_details_are_chinese(tmp_path, text, zh, monkeypatch, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = run_cli(["recommend", str(path), "--lang", "zh"], monkeypatch, capsys)
    assert code == 2 and zh in out, out
    code, out = run_cli(["recommend", str(path)], monkeypatch, capsys)
    assert code == 2 and ("nested more than 64 levels deep" in out or "invalid integer 'abc'" in out)


def test_assumed_enum_values_are_words_of_the_language(monkeypatch, capsys):
    code, out = run_cli(["recommend", "--model", "qwen2.5-7b", "--task", "lora", "--lang", "zh"], monkeypatch, capsys)
    assert "优化目标（objective）：成本最低" in out and "）：是" in out and " 为 是" not in out, out
    code, out = run_cli(["recommend", "--model", "qwen2.5-7b", "--task", "lora", "--json"], monkeypatch, capsys)
    assert "assumed objective cost" in out and "assumed flash_attention True" in out   # JSON unchanged


def test_a_bad_choice_lists_the_allowed_values_in_chinese_words(monkeypatch, capsys, tmp_path):
    """pydantic writes "'float32' or 'model'"; the Chinese error and hint join the choices with 或, not "or"."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "lora": {"adapter_dtype": "bf16"}}))
    code, out = run_cli(["--lang", "zh", "estimate", str(bad)], monkeypatch, capsys)
    assert code != 0 and "'float32' 或 'model'" in out and " or " not in out
