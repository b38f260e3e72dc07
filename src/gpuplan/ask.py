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
from gpuplan.i18n import register, tr

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
        raise ValueError("one of: lora, qlora, full, pretrain, inference")
    return low


def _model(s: str) -> str:
    s = s.strip()
    if not s or len(s) > 200 or any(c.isspace() for c in s):
        raise ValueError("a model id such as Qwen/Qwen2.5-7B-Instruct")
    return s


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(s: str) -> Any:
        try:
            v = kind(float(s.replace(",", "").replace("_", "")))
        except ValueError:
            raise ValueError("a positive number") from None
        if not v > 0 or v != v or v == float("inf"):
            raise ValueError("a positive number")
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
        Question("task", "Task: lora, qlora, full, pretrain or inference", "lora", "lora", _task),
        Question("model", "Model (Hugging Face / ModelScope id or a bundled alias)",
                 "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", _model),
        Question("rate", "Peak requests per second", "1", "5", _positive(float)) if serving else
        Question("samples", "Dataset size (samples)", "100000", "50000", _positive(int)),
        Question("prompt_tokens", "Prompt tokens per request", "1024", "2048", _positive(int)) if serving else
        Question("tokens_per_sample", "Tokens per sample", "1024", "2048", _positive(int)),
        Question("output_tokens", "Output tokens per request", "256", "512", _positive(int)) if serving else
        Question("epochs", "Epochs", "1", "3", _positive(float)),
        Question("ttft_ms", "Time-to-first-token target (ms)", "2000", "1000", _positive(float)) if serving else
        Question("deadline_hours", "Deadline (hours, 'none' for no limit)", "none", "48", _optional_positive),
        Question("budget", "Budget in CNY ('none' for no limit)", "none", "5000", _optional_positive),
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
    return f"{tr(q.text, lang)} [{tr('e.g.', lang)} {q.example}]"


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
                console.print(f"[yellow]{tr('Please answer with {what}.', lang).format(what=tr(str(err), lang))}[/yellow]")
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


register({
    "Task: lora, qlora, full, pretrain or inference": "任务：lora、qlora、full（全参微调）、pretrain（预训练）或 inference（推理服务）",
    "Model (Hugging Face / ModelScope id or a bundled alias)": "模型（Hugging Face / ModelScope 仓库名或内置别名）",
    "Peak requests per second": "峰值每秒请求数",
    "Dataset size (samples)": "数据集大小（样本数）",
    "Prompt tokens per request": "每个请求的输入 token 数",
    "Tokens per sample": "每个样本的 token 数",
    "Output tokens per request": "每个请求的输出 token 数",
    "Epochs": "训练轮数（epoch）",
    "Time-to-first-token target (ms)": "首字延迟目标（毫秒）",
    "Deadline (hours, 'none' for no limit)": "期限（小时，填 none 表示不限）",
    "Budget in CNY ('none' for no limit)": "预算（人民币元，填 none 表示不限）",
    "e.g.": "例如",
    "Please answer with {what}.": "请填写{what}。",
    "one of: lora, qlora, full, pretrain, inference": "以下之一：lora、qlora、full、pretrain、inference",
    "a model id such as Qwen/Qwen2.5-7B-Instruct": "模型名，例如 Qwen/Qwen2.5-7B-Instruct",
    "a positive number": "一个正数",
    "Answer {n} ({question}) is not valid: {answer!r}.": "第 {n} 个回答（{question}）无效：{answer!r}。",
    "Give {what} on line {n}, or leave the line empty for the default ({default}).":
        "请在第 {n} 行填写{what}，或留空使用默认值（{default}）。",
    "Wrote the workload to {path}.": "已将工作负载写入 {path}。",
    "Plan it again with: gpuplan recommend {path}": "之后可用以下命令重新规划：gpuplan recommend {path}",
})
