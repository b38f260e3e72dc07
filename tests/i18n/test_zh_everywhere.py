"""Every command in `--lang zh` over the examples: no English sentence left (issue 16, item 1).

Each command runs in-process through the CLI's entry point (`gpuplan.cli.main`), so the text checked is
exactly what a user sees on stdout and stderr. `english_sentences()` ignores ids, units, numbers, code and
paths; what it still finds is an untranslated sentence.

The sentences found may only be ones listed in `tests/i18n/pending.txt` (one per line; empty since the
second pass): anything new fails, and so do entries no longer printed. Error messages allow nothing.

Bundled catalog data (source citations, notes, architecture names) is shown as written, in English:
phrases that occur in a record's own values (its `--json` document) are not sentences of gpuplan's.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from clirun import plan_exit_code
from gpuplan import cli
from .english import english_sentences

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml"))
PENDING_FILE = Path(__file__).with_name("pending.txt")


def pending() -> set[str]:
    lines = PENDING_FILE.read_text(encoding="utf-8").splitlines() if PENDING_FILE.exists() else []
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


def run_cli(args: list[str], monkeypatch, capsys, stdin: str | None = None) -> tuple[int, str]:
    """`gpuplan ARGS` in this process: exit code and stdout + stderr."""
    monkeypatch.setattr(sys, "argv", ["gpuplan", *args])
    monkeypatch.setenv("COLUMNS", "200")
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _strings(obj, skip=("prices",)) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() if k not in skip for s in _strings(v, skip)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v, skip)]
    return []


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip(" ,;:()-").lower()


def data_phrases(args: list[str], monkeypatch, capsys) -> list[str]:
    """The bundled data values a listing shows (from its --json twin), plus the price sources' labels."""
    from gpuplan.catalog.prices import load_sources

    if args[0] not in ("gpus", "instances", "models", "show"):
        return []
    _, text = run_cli([*args, "--json"], monkeypatch, capsys)
    values = _strings(json.loads(text))
    values += [str(e.get("label", "")) for e in load_sources().values()]
    return [_norm(v) for v in values if v]


def untranslated(text: str, data: list[str] = ()) -> list[str]:
    """English sentences of `text` that are neither data values nor pending (second pass)."""
    allowed = pending()
    out = []
    for chunk in english_sentences(text):
        if chunk.strip() in allowed or any(_norm(chunk) and _norm(chunk) in d for d in data):
            continue
        out.append(chunk)
    return out


# (id, argv)
STRICT = [
    ("gpus", ["gpus"]),
    ("instances", ["instances"]),
    ("instances-a10", ["instances", "--gpu", "A10", "--region", "cn-hangzhou"]),
    ("models", ["models"]),
    ("show-gpu", ["show", "A10"]),
    ("show-instance", ["show", "ecs.gn7i-c8g1.2xlarge"]),
    ("show-model", ["show", "qwen2.5-7b"]),
    ("catalog-status", ["catalog", "status"]),
    *[(f"estimate-{p.stem}", ["estimate", str(p)]) for p in EXAMPLES],
    ("estimate-max", ["estimate", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--gpu", "A10", "--max", "batch_size"]),
    ("estimate-oom", ["estimate", "--model", "qwen2.5-72b", "--task", "full", "--gpu", "A10"]),
]
ERRORS = [
    ("unknown-model", ["estimate", "--model", "qwen-7", "--task", "lora", "--gpu", "A10"], "未知的模型"),
    ("unknown-gpu", ["estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A1000"], "未知的 GPU"),
    ("unknown-show", ["show", "qwen-7"], "没有名为"),
    ("bad-flag-value", ["recommend", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--top", "abc"], "不是整数"),
    ("top-out-of-range", ["recommend", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--top", "0"], "超出范围"),
    ("unknown-option", ["gpus", "--colour"], "没有这个选项"),
    ("missing-file", ["estimate", "no-such-workload.yaml"], "不存在"),
    ("no-workload", ["estimate"], "未提供工作负载"),
    ("bad-task", ["estimate", "--model", "qwen2.5-7b", "--task", "finetune-all", "--gpu", "A10"], "工作负载字段"),
    ("bad-batch", ["estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--batch-size", "0"],
     "不能小于"),
]
PLANS = [
    *[(f"recommend-{p.stem}", ["recommend", str(p)]) for p in EXAMPLES],
    ("quick", ["quick", "--params", "7B"]),
    ("quick-infer", ["quick", "--params", "70B", "--task", "infer"]),
    *[(f"compare-{p.stem}", ["compare", str(p)]) for p in EXAMPLES[:2]],
    ("recommend-function-compute", ["recommend", str(Path(__file__).with_name("bursty-qwen7b.yaml"))]),
]


@pytest.mark.parametrize("args", [a for _, a in STRICT], ids=[i for i, _ in STRICT])
def test_command_speaks_chinese(args, monkeypatch, capsys):
    data = data_phrases(args, monkeypatch, capsys)
    code, text = run_cli([*args, "--lang", "zh"], monkeypatch, capsys)
    assert "Traceback" not in text and text.strip(), text
    assert code in (0, 1), text
    assert untranslated(text, data) == [], text


@pytest.mark.parametrize("args,marker", [(a, m) for _, a, m in ERRORS], ids=[i for i, _, _ in ERRORS])
def test_errors_speak_chinese(args, marker, monkeypatch, capsys):
    code, text = run_cli([*args, "--lang", "zh"], monkeypatch, capsys)
    assert code == 2, text
    assert text.startswith("错误") and "提示" in text and marker in text, text
    assert english_sentences(text) == [], text


@pytest.mark.parametrize("args", [a for _, a in PLANS], ids=[i for i, _ in PLANS])
def test_plan_commands_only_pending_english(args, monkeypatch, capsys):
    code, text = run_cli([*args, "--lang", "zh"], monkeypatch, capsys)
    assert code in (0, 1) and "Traceback" not in text, text
    new = untranslated(text)
    assert new == [], "English not in tests/i18n/pending.txt:\n" + "\n".join(new)


def test_plan_bundle_only_pending_english(tmp_path, monkeypatch, capsys):
    out = tmp_path / "plan"
    code, text = run_cli(["plan", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--out", str(out), "--lang", "zh"],
                         monkeypatch, capsys)
    assert code == plan_exit_code(text), text
    plan_md = (out / "PLAN.md").read_text(encoding="utf-8")
    new = untranslated(text + "\n" + plan_md)
    assert new == [], "English not in tests/i18n/pending.txt:\n" + "\n".join(new)


def test_ask_wizard_speaks_chinese(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    answers = "lora\nqwen2.5-7b\n20000\n1024\n2\n24\n2000\n"
    code, text = run_cli(["ask", "--lang", "zh"], monkeypatch, capsys, stdin=answers)
    assert code in (0, 1) and (tmp_path / "workload.yaml").exists(), text
    new = untranslated(text)
    assert new == [], "English not in tests/i18n/pending.txt:\n" + "\n".join(new)


def test_json_stays_english_under_zh(monkeypatch, capsys):
    """--json values never change with --lang (the contract): errors and assumptions stay English."""
    code, text = run_cli(["estimate", "--model", "qwen-7", "--task", "lora", "--gpu", "A10", "--json", "--lang", "zh"],
                         monkeypatch, capsys)
    assert code == 2 and "Unknown model 'qwen-7'." in text and "未知" not in text
    code, text = run_cli(["estimate", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--json", "--lang", "zh"],
                         monkeypatch, capsys)
    assert code == 0 and "achievable hardware FLOPs utilisation" in text and "可达" not in text


def test_pending_list_has_no_stale_entries(monkeypatch, capsys, tmp_path):
    """Every allowlisted sentence still occurs somewhere: the list only shrinks."""
    seen: set[str] = set()
    for _, args in STRICT + PLANS:
        _, text = run_cli([*args, "--lang", "zh"], monkeypatch, capsys)
        seen.update(english_sentences(text))
    out = tmp_path / "plan"
    _, text = run_cli(["plan", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--out", str(out), "--lang", "zh"],
                      monkeypatch, capsys)
    seen.update(english_sentences(text + "\n" + (out / "PLAN.md").read_text(encoding="utf-8")))
    monkeypatch.chdir(tmp_path)
    _, text = run_cli(["ask", "--lang", "zh"], monkeypatch, capsys, stdin="lora\nqwen2.5-7b\n20000\n1024\n2\n24\n2000\n")
    seen.update(english_sentences(text))
    stale = sorted(pending() - {c.strip() for c in seen})
    assert stale == [], "no longer printed; remove from tests/i18n/pending.txt:\n" + "\n".join(stale)


@pytest.mark.parametrize("workload,marker", [("model: qwen-7\ntask: lora\n", "未知的模型"),
                                             ("model: qwen2.5-7b\ntask: lora\nhardware: {instance_type: ecs.gn99-x}\n",
                                              "未知的实例规格")])
def test_plan_errors_speak_chinese(workload, marker, tmp_path, monkeypatch, capsys):
    """`gpuplan plan` computes the plan in English (for plan.json): its errors still reach the user in Chinese."""
    path = tmp_path / "w.yaml"
    path.write_text(workload, encoding="utf-8")
    code, text = run_cli(["plan", str(path), "--out", str(tmp_path / "out"), "--lang", "zh"], monkeypatch, capsys)
    assert code == 2 and text.startswith("错误") and marker in text and "提示" in text, text
    assert english_sentences(text) == [], text
    assert not (tmp_path / "out").exists()
