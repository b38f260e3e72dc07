"""`gpuplan ask`: the guides' closing questions as a wizard that builds a workload and plans it.

The guides end by asking for the task, the model, the data (or the traffic), the training period
(or the latency target) and the budget, and promise a plan. This module asks exactly that:

- on a terminal, one question at a time with rich's prompts (default and an example shown);
- otherwise (a pipe or a file), one answer per line in this order — task, model, dataset samples
  (requests/s for serving), tokens per sample (prompt tokens for serving), epochs (output tokens
  for serving), deadline hours (TTFT target in ms for serving), budget — where an empty line or the
  end of input takes the default.

Each answer is checked at once; a bad answer on a terminal is asked again, a bad line in a pipe
is one GpuplanError naming the question. The result is a plain workload mapping, written as YAML
by the CLI and planned by :func:`gpuplan.plan.recommend` like any other workload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, tr

TASKS = ("lora", "qlora", "full", "pretrain", "inference")


@dataclass(frozen=True)
class Question:
    """One question: the text (translated by key), its default, an example, and how to read it."""

    key: str
    text: str
    default: str
    example: str
    parse: Callable[[str], Any]


def _task(s: str) -> str:
    low = s.strip().lower()
    aliases = {"infer": "inference", "serve": "inference", "serving": "inference", "finetune": "full",
               "train": "pretrain", "推理": "inference", "部署": "inference", "微调": "lora", "预训练": "pretrain",
               "全参": "full", "全参微调": "full"}
    low = aliases.get(low, low)
    if low not in TASKS:
        raise ValueError(N_("one of: lora, qlora, full, pretrain, inference"))
    return low


def _model(s: str) -> str:
    s = s.strip()
    if not s or len(s) > 200 or any(c.isspace() for c in s):
        raise ValueError(N_("a model id such as Qwen/Qwen2.5-7B-Instruct"))
    return s


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(s: str) -> Any:
        try:
            v = kind(float(s.replace(",", "").replace("_", "")))
        except ValueError:
            raise ValueError(N_("a positive number")) from None
        if not v > 0 or v != v or v == float("inf"):
            raise ValueError(N_("a positive number"))
        return v
    return parse


def _optional_positive(s: str) -> float | None:
    low = s.strip().lower()
    if low in ("", "none", "no", "-", "无", "不限"):
        return None
    return _positive(float)(s)


def questions(task: str | None = None) -> list[Question]:
    """The questions in their fixed order; after the task is known, the serving wording applies."""
    serving = task == "inference"
    return [
        Question("task", N_("Task: lora, qlora, full, pretrain or inference"), "lora", "lora", _task),
        Question("model", N_("Model (Hugging Face / ModelScope id or a bundled alias)"),
                 "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", _model),
        Question("rate", N_("Peak requests per second"), "1", "5", _positive(float)) if serving else
        Question("samples", N_("Dataset size (samples)"), "100000", "50000", _positive(int)),
        Question("prompt_tokens", N_("Prompt tokens per request"), "1024", "2048", _positive(int)) if serving else
        Question("tokens_per_sample", N_("Tokens per sample"), "1024", "2048", _positive(int)),
        Question("output_tokens", N_("Output tokens per request"), "256", "512", _positive(int)) if serving else
        Question("epochs", N_("Epochs"), "1", "3", _positive(float)),
        Question("ttft_ms", N_("Time-to-first-token target (ms)"), "2000", "1000", _positive(float)) if serving else
        Question("deadline_hours", N_("Deadline (hours, 'none' for no limit)"), "none", "48", _optional_positive),
        Question("budget", N_("Budget in CNY ('none' for no limit)"), "none", "5000", _optional_positive),
    ]


def build_workload(answers: dict[str, Any]) -> dict[str, Any]:
    """The workload mapping for the answers (keys as in docs/workload.md)."""
    task = answers["task"]
    w: dict[str, Any] = {"name": f"ask-{task}", "model": answers["model"], "task": task}
    constraints: dict[str, Any] = {"currency": "CNY"}
    if task == "inference":
        w["prompt_tokens"] = answers["prompt_tokens"]
        w["output_tokens"] = answers["output_tokens"]
        w["serving"] = {"requests_per_s": answers["rate"], "peak_requests_per_s": answers["rate"],
                        "ttft_ms": answers["ttft_ms"]}
    else:
        w["seq_len"] = answers["tokens_per_sample"]
        w["dataset"] = {"samples": answers["samples"], "tokens_per_sample": answers["tokens_per_sample"],
                        "epochs": answers["epochs"]}
        if answers.get("deadline_hours") is not None:
            constraints["deadline_hours"] = answers["deadline_hours"]
    if answers.get("budget") is not None:
        constraints["budget"] = answers["budget"]
    w["constraints"] = constraints
    return w


def _prompt_text(q: Question, lang: str) -> str:
    return tr("{question} [e.g. {example}]", lang).format(question=tr(q.text, lang), example=q.example)


def ask_terminal(lang: str, console: Any) -> dict[str, Any]:
    """Ask on a terminal with rich's Prompt; a bad answer is asked again."""
    from rich.prompt import Prompt

    answers: dict[str, Any] = {}
    for i in range(len(questions())):
        q = questions(answers.get("task"))[i]
        while True:
            raw = Prompt.ask(_prompt_text(q, lang), default=q.default, console=console)
            try:
                answers[q.key] = q.parse(raw)
                break
            except ValueError as err:
                again = tr("Please answer with {what}.", lang).format(what=tr(str(err), lang))
                console.print(f"[yellow]{again}[/yellow]")
    return answers


def ask_lines(stream: TextIO, lang: str) -> dict[str, Any]:
    """Read one answer per line in the fixed order; an empty line or the end of input takes the default."""
    lines: Iterator[str] = iter(stream.readline, "")
    answers: dict[str, Any] = {}
    for i in range(len(questions())):
        q = questions(answers.get("task"))[i]
        raw = next(lines, "").strip()[:1000] or q.default
        try:
            answers[q.key] = q.parse(raw)
        except ValueError as err:
            raise GpuplanError(
                tr("Answer {n} ({question}) is not valid: {answer!r}.", lang).format(
                    n=i + 1, question=tr(q.text, lang), answer=raw),
                hint=tr("Give {what} on line {n}, or leave the line empty for the default ({default}).", lang).format(
                    what=tr(str(err), lang), n=i + 1, default=q.default)) from None
    return answers

