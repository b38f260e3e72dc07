"""`gpuplan ask`: the wizard read from a pipe (one answer per line), in English and Chinese."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuplan.ask import ask_lines, build_workload, questions
from gpuplan.errors import GpuplanError
from gpuplan.workload_loading import load_workload

GPUPLAN = [sys.executable, "-c", "from gpuplan.cli import main; main()"]


def run_ask(tmp_path: Path, answers: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    return subprocess.run([*GPUPLAN, "ask", *args], input=answers, capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)


def test_zh_answers_from_a_file_write_the_workload_and_print_a_plan(tmp_path):
    # The guides' questions in order: task, model, samples, tokens/sample, epochs, deadline h, budget.
    p = run_ask(tmp_path, "lora\nQwen/Qwen2.5-7B-Instruct\n50000\n1024\n2\n48\n3000\n", "--lang", "zh")
    assert p.returncode == 0, p.stderr
    assert "已将工作负载写入 workload.yaml" in p.stdout
    assert "推荐方案" in p.stdout          # the recommendation table's title
    data = yaml.safe_load((tmp_path / "workload.yaml").read_text(encoding="utf-8"))
    assert data["task"] == "lora" and data["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert data["dataset"] == {"samples": 50000, "tokens_per_sample": 1024, "epochs": 2.0}
    assert data["constraints"]["deadline_hours"] == 48.0 and data["constraints"]["budget"] == 3000.0
    # The file is a valid workload that `gpuplan recommend` reads as it is.
    assert load_workload(tmp_path / "workload.yaml").task == "lora"


def test_empty_lines_take_the_defaults_and_a_second_run_does_not_overwrite(tmp_path):
    p1 = run_ask(tmp_path, "\n\n\n\n\n\n\n", "--json")
    assert p1.returncode == 0, p1.stderr
    assert json.loads(p1.stdout)["workload_file"] == "workload.yaml"
    defaults = {q.key: q.parse(q.default) for q in questions()}
    data = yaml.safe_load((tmp_path / "workload.yaml").read_text())
    assert data == build_workload(defaults)
    p2 = run_ask(tmp_path, "", "--json")          # end of input: every default
    assert p2.returncode == 0, p2.stderr
    assert json.loads(p2.stdout)["workload_file"] == "workload-2.yaml"


def test_serving_answers_build_a_serving_workload(tmp_path):
    # task, model, quantization, online/batch, requests/s, concurrency, prompt, output, TTFT ms, budget
    p = run_ask(tmp_path, "inference\nQwen/Qwen2.5-7B-Instruct\nnone\nonline\n4\n\n2048\n256\n1500\n\n", "--json")
    assert p.returncode in (0, 1), p.stderr
    data = yaml.safe_load((tmp_path / "workload.yaml").read_text())
    assert data["task"] == "inference"
    assert data["serving"] == {"requests_per_s": 4.0, "peak_requests_per_s": 4.0, "ttft_ms": 1500.0}
    assert (data["prompt_tokens"], data["output_tokens"]) == (2048, 256)
    assert "dataset" not in data
    assert json.loads(p.stdout)["workload"]["task"] == "inference"


@pytest.mark.parametrize("lang, words", [("en", "Answer 3"), ("zh", "第 3 个回答")])
def test_a_bad_answer_is_one_line_naming_the_question(tmp_path, lang, words):
    p = run_ask(tmp_path, "lora\nqwen2.5-7b\nmany\n", "--lang", lang)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and words in p.stderr
    assert not (tmp_path / "workload.yaml").exists()


def test_unknown_model_is_a_clear_error_not_a_traceback(tmp_path):
    p = run_ask(tmp_path, "lora\nno-such-model-xyz\n")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "no-such-model-xyz" in p.stderr


def test_task_aliases_in_both_languages():
    import io

    for raw, task in [("全参微调", "full"), ("LoRA微调", "lora"), ("推理", "inference"), ("serve", "inference"),
                      ("PRETRAIN", "pretrain")]:
        assert ask_lines(io.StringIO(f"{raw}\n"), "en")["task"] == task
    for word in ("dance", "微调", "train"):   # unknown, or a word for more than one task: refused with the choices
        with pytest.raises(GpuplanError) as exc:
            ask_lines(io.StringIO(f"{word}\n"), "en")
        assert "pretrain" in exc.value.hint and "lora" in exc.value.hint


def test_a_batch_job_with_quantization(tmp_path):
    # task, model, quantization, online/batch, requests to process, prompt, output, deadline h, budget
    p = run_ask(tmp_path, "inference\nQwen/Qwen2.5-7B-Instruct\nawq\nbatch\n200000\n512\n128\n24\n\n", "--json")
    assert p.returncode in (0, 1), p.stderr
    data = yaml.safe_load((tmp_path / "workload.yaml").read_text())
    assert data["quantization"] == "awq" and data["dataset"] == {"items": 200000}
    assert data["constraints"]["deadline_hours"] == 24.0 and "serving" not in data
    doc = json.loads(p.stdout)
    assert doc["workload"]["dataset"]["items"] == 200000
    assert all(plan.get("job") for plan in doc["plans"])    # priced as a job, not a service


def test_online_concurrency_becomes_the_batch_size():
    import io

    answers = ask_lines(io.StringIO("inference\nqwen2.5-7b\nint4\nonline\n3\n32\n\n\n\n\n"), "en")
    w = build_workload(answers)
    assert w["batch_size"] == 32 and w["quantization"] == "int4" and w["serving"]["requests_per_s"] == 3.0


@pytest.mark.parametrize("lines, key", [("inference\nqwen2.5-7b\nq9\n", "Weight quantization"),
                                        ("inference\nqwen2.5-7b\nnone\nsometimes\n", "Online service")])
def test_bad_quantization_or_mode_names_the_question(lines, key):
    import io

    with pytest.raises(GpuplanError) as exc:
        ask_lines(io.StringIO(lines), "en")
    assert key in exc.value.message


def test_the_model_is_checked_when_it_is_given_and_nothing_is_written(tmp_path):
    import io

    with pytest.raises(GpuplanError) as exc:
        ask_lines(io.StringIO("lora\nqwen7\n50000\n"), "en")
    assert "Answer 2" in exc.value.message and "qwen7" in exc.value.message
    assert "Did you mean" in exc.value.hint
    p = run_ask(tmp_path, "lora\nqwen7\n50000\n1024\n1\n\n\n")
    assert p.returncode == 2 and "Answer 2" in p.stderr
    assert list(tmp_path.iterdir()) == []        # no workload file for a wizard that did not finish


def test_the_example_in_the_prompt_survives_rich_markup():
    import io

    from rich.console import Console

    from gpuplan.ask import _prompt_text

    out = io.StringIO()
    Console(file=out, width=200).print(_prompt_text(questions()[0], "en"))
    assert "[e.g. lora]" in out.getvalue()
