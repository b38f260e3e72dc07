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
    from gpuplan.catalog.prices.prices import load_sources

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


# ----------------------------------------------------------------------------------------- issue 32: help, errors

def _command_paths() -> list[list[str]]:
    """Every command and group of the CLI, as the words that name it (the root is [])."""
    import typer.main

    from gpuplan.cli.common import app

    paths: list[list[str]] = []

    def walk(cmd, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


COMMAND_PATHS = _command_paths()


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=[" ".join(p) or "gpuplan" for p in COMMAND_PATHS])
def test_help_speaks_chinese_with_lang_and_under_a_chinese_locale(path, monkeypatch, capsys):
    """`gpuplan [CMD] --help --lang zh`, `gpuplan --lang zh [CMD] --help` and `LANG=zh_CN.UTF-8 gpuplan [CMD] --help`:
    every line of help in Chinese (option names, metavars and ids stay as they are)."""
    def prose(text: str) -> str:   # the usage line is a command line (`gpuplan show [OPTIONS] NAME`), not prose
        return "\n".join(line for line in text.splitlines() if not line.startswith("用法"))

    for args in ([*path, "--help", "--lang", "zh"], ["--lang", "zh", *path, "--help"]):
        code, text = run_cli(args, monkeypatch, capsys)
        assert code == 0 and text.startswith("用法") and "选项" in text, text
        assert english_sentences(prose(text)) == [], (args, english_sentences(prose(text)))
    for var in ("GPUPLAN_LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    code, text = run_cli([*path, "--help"], monkeypatch, capsys)
    assert code == 0 and text.startswith("用法") and english_sentences(prose(text)) == [], text


def test_help_stays_english_in_english(monkeypatch, capsys):
    for var in ("GPUPLAN_LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    code, text = run_cli(["estimate", "--help"], monkeypatch, capsys)
    assert code == 0 and text.startswith("Usage: gpuplan estimate") and "Show this message and exit." in text


def test_lang_before_the_command_applies_to_it(monkeypatch, capsys):
    code, text = run_cli(["--lang", "zh", "estimate", "--model", "qwen-7", "--task", "lora", "--gpu", "A10"],
                         monkeypatch, capsys)
    assert code == 2 and text.startswith("错误") and "未知的模型" in text, text


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


# (id, argv or a function of tmp_path that gives it, a Chinese marker the message must hold)
MORE_ERRORS = [
    ("inline-config-incomplete", lambda t: ["estimate", _file(t, "model: {hidden_size: 4096}\ntask: lora\n"),
                                            "--gpu", "A10"], "config.json"),
    ("ambiguous-task", lambda t: ["estimate", "--model", "qwen2.5-7b", "--task", "train", "--gpu", "A10"], "多种任务"),
    ("ambiguous-task-quick", lambda t: ["quick", "--params", "13B", "--task", "finetune"], "多种任务"),
    ("boolean-seq-len", lambda t: ["estimate", _file(t, "model: qwen2.5-7b\ntask: lora\nseq_len: true\n"),
                                   "--gpu", "A10"], "数字"),
    ("region-typo", lambda t: ["recommend", "--model", "qwen2.5-7b", "--task", "lora", "--region", "cn-hangzou"],
     "地域"),
    ("tencent-region", lambda t: ["recommend", "--model", "qwen2.5-7b", "--task", "lora", "--region", "ap-guangzhou"],
     "腾讯云"),
    ("bad-params", lambda t: ["quick", "--params", "many"], "参数量"),
    ("bad-max-field", lambda t: ["estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--max",
                                 "width"], "width"),
    ("bad-schema", lambda t: ["schema", "plan"], "plan"),
    ("bad-yaml", lambda t: ["estimate", _file(t, "model: [qwen\n")], "YAML"),
    ("unknown-key", lambda t: ["estimate", _file(t, "model: qwen2.5-7b\ntsk: lora\n")], "tsk"),
    ("unknown-cloud", lambda t: ["instances", "--cloud", "mars"], "mars"),
    ("min-gpu-memory", lambda t: ["instances", "--min-gpu-memory", "0"], "超出范围"),
    ("calibrate-nothing", lambda t: ["calibrate"], "calibrate"),
    ("plan-no-such-rank", lambda t: ["plan", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--out", str(t / "o"),
                                     "--pick", "99"], "99"),
    ("ask-bad-answer", lambda t: ["ask"], "第 3 个回答"),
    ("missing-argument", lambda t: ["show"], "缺少"),
]


@pytest.mark.parametrize("make,marker", [(m, k) for _, m, k in MORE_ERRORS], ids=[i for i, _, _ in MORE_ERRORS])
def test_every_error_path_speaks_chinese(make, marker, tmp_path, monkeypatch, capsys):
    args = make(tmp_path)
    monkeypatch.chdir(tmp_path)
    stdin = "lora\nqwen2.5-7b\nmany\n" if args[0] == "ask" else None
    code, text = run_cli([*args, "--lang", "zh"], monkeypatch, capsys, stdin=stdin)
    assert code == 2, text
    assert text.startswith("错误") and "提示" in text and marker in text, text
    assert english_sentences(text) == [], english_sentences(text)


def test_words_inside_chinese_sentences_are_chinese(monkeypatch, capsys):
    """No English word glued into a Chinese sentence: the savings plan's source kind, quick's task name."""
    code, text = run_cli(["recommend", str(ROOT / "examples/qwen2.5-7b-lora.yaml"), "--lang", "zh", "--wide"],
                         monkeypatch, capsys)
    assert code in (0, 1)
    assert "third-party" not in text and "official数据" not in text
    code, text = run_cli(["quick", "--params", "13B", "--task", "pretrain", "--lang", "zh"], monkeypatch, capsys)
    assert code in (0, 1) and "13B, 预训练" in text and "13B, pretrain" not in text, text


def test_the_savings_plan_sentence_names_its_source_in_chinese():
    """The savings plan's source kind is a word of the sentence ("third-party数据" was printed)."""
    from types import SimpleNamespace

    from gpuplan.i18n import localize, use_lang
    from gpuplan.plan.money.billing import break_even_sentences, savings_plan

    sp = savings_plan()
    assert sp is not None
    payg = SimpleNamespace(per_hour=10.0)
    english = break_even_sentences(payg, None, sp, None, "CNY")
    with use_lang("zh"):
        chinese = break_even_sentences(payg, None, sp, None, "CNY")
    for text in (chinese[0], localize(english[0], "zh")):
        assert sp.kind not in text and english_sentences(text) == [], text


@pytest.mark.parametrize("args, usage", [([], "gpuplan [OPTIONS]"), (["catalog"], "gpuplan catalog [OPTIONS]"),
                                         (["--lang", "zh"], "gpuplan [OPTIONS]")])
def test_a_command_line_that_names_no_command_prints_the_help(args, usage, monkeypatch, capsys):
    code, text = run_cli(args, monkeypatch, capsys)
    assert code == 0 and usage in text.splitlines()[0], text
    assert ("用法" in text) == ("zh" in args)
