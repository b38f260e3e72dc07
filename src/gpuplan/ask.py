"""`gpuplan ask`: the guides' closing questions as a wizard that builds a workload and plans it.

The guides end by asking for the task, the model, the data (or the traffic), the training period
(or the latency target) and the budget, and promise a plan. This module asks exactly that, and
which questions follow depends on the answers so far:

- training (lora, qlora, full, pretrain): task, model, dataset samples, tokens per sample, epochs,
  deadline hours, budget;
- inference: task, model, quantization, then "online" (a service) or "batch" (an offline job):
  online: peak requests/s, concurrent requests, prompt tokens, output tokens, TTFT target (ms),
  budget; batch: requests to process, prompt tokens, output tokens, deadline hours, budget.

On a terminal it asks one question at a time with rich's prompts (default and an example shown);
otherwise (a pipe or a file) it reads one answer per line in that order, where an empty line or
the end of input takes the default.

Each answer is checked as it is given (the model must resolve before the next question); a bad
answer on a terminal is asked again, a bad line in a pipe is one GpuplanError naming the
question. Nothing is written here: the CLI writes the file after every answer and the whole
workload have been checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO, get_args

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, tr
from gpuplan.units import parse_amount

TASKS = ("lora", "qlora", "full", "pretrain", "inference")
MODES = ("online", "batch")


@dataclass(frozen=True)
class Question:
    """One question: the text (translated by key), its default, an example, and how to read it."""

    key: str
    text: str
    default: str
    example: str
    parse: Callable[[str], Any]


def _task(s: str) -> str:
    """The workload's own task words (gpuplan.workload.read_task): `train` or 微调 (two meanings) asks again."""
    from gpuplan.workload import read_task

    return read_task(s)


def _model(s: str) -> str:
    """A model name that resolves now (bundled id, alias, ModelScope id, cached hub id or config path)."""
    from gpuplan.catalog.models import resolve_model

    s = s.strip()
    if not s or len(s) > 200 or any(c.isspace() for c in s):
        raise ValueError(N_("a model id such as Qwen/Qwen2.5-7B-Instruct"))
    resolve_model(s)      # GpuplanError (unknown model, did you mean ...) when it does not
    return s


def _quantization(s: str) -> str:
    from gpuplan.workload_parts import QUANT_ALIASES, Quantization

    low = s.strip().lower()
    low = {"no": "none", "无": "none", "不量化": "none"}.get(low, QUANT_ALIASES.get(low, low))
    if low not in get_args(Quantization):
        raise ValueError(N_("one of: none, int8, int4, awq, gptq-int4, gptq-int8, fp8"))
    return low


def _mode(s: str) -> str:
    low = s.strip().lower()
    low = {"service": "online", "serve": "online", "在线": "online", "服务": "online", "offline": "batch",
           "job": "batch", "离线": "batch", "批量": "batch", "批处理": "batch"}.get(low, low)
    if low not in MODES:
        raise ValueError(N_("online (a service answering requests) or batch (an offline job)"))
    return low


def _amount(kind: str, whole: bool = False) -> Callable[[str], Any]:
    """An answer read by gpuplan.units.parse_amount ("5万", "1.5e9", "3天", "¥2000"...); ``whole``: an integer."""
    def parse(s: str) -> Any:
        value = parse_amount(s, kind)          # ValueError(msgid of the expected form)
        if whole:
            if abs(value - round(value)) > 1e-9 * max(1.0, value):
                raise ValueError(N_("a whole number such as 50000, 5万 or 50k"))
            return int(round(value))
        return value
    return parse


def _optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse``, or None for 'none' / 不限 / an empty answer (no limit)."""
    def read(s: str) -> Any:
        low = s.strip().lower()
        if low in ("", "none", "no", "-", "无", "不限", "没有"):
            return None
        return parse(s)
    return read


_BUDGET = Question("budget", N_("Budget in CNY ('none' for no limit)"), "none", "5000", _optional(_amount("money")))
_DEADLINE = Question("deadline_hours", N_("Deadline (hours, 'none' for no limit)"), "none", "48",
                     _optional(_amount("hours")))
_PROMPT = Question("prompt_tokens", N_("Prompt tokens per request"), "1024", "2048", _amount("count", whole=True))
_OUTPUT = Question("output_tokens", N_("Output tokens per request"), "256", "512", _amount("count", whole=True))


def questions(answers: dict[str, Any] | None = None) -> list[Question]:
    """The questions in order, as far as the answers so far decide them (task, then serving mode)."""
    answers = answers or {}
    head = [Question("task", N_("Task: lora, qlora, full, pretrain or inference"), "lora", "lora", _task),
            Question("model", N_("Model (Hugging Face / ModelScope id or a bundled alias)"),
                     "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", _model)]
    task = answers.get("task")
    if task != "inference":
        return head + [
            Question("samples", N_("Dataset size (samples)"), "100000", "50000", _amount("count", whole=True)),
            Question("tokens_per_sample", N_("Tokens per sample"), "1024", "2048", _amount("count", whole=True)),
            Question("epochs", N_("Epochs"), "1", "3", _amount("number")), _DEADLINE, _BUDGET]
    head += [Question("quantization", N_("Weight quantization: none, int8, int4, awq, gptq-int4 or fp8"), "none",
                      "awq", _quantization),
             Question("mode", N_("Online service or offline batch job: online or batch"), "online", "batch", _mode)]
    if answers.get("mode") == "batch":
        return head + [Question("items", N_("Requests to process in the job"), "100000", "1000000",
                                _amount("count", whole=True)),
                       _PROMPT, _OUTPUT, _DEADLINE, _BUDGET]
    return head + [
        Question("rate", N_("Peak requests per second"), "1", "5", _amount("count")),
        Question("concurrency", N_("Concurrent requests per replica ('none' to size from the rate)"), "none", "16",
                 _optional(_amount("count", whole=True))),
        _PROMPT, _OUTPUT,
        Question("ttft_ms", N_("Time-to-first-token target (ms)"), "2000", "1000", _amount("ms")), _BUDGET]


def build_workload(answers: dict[str, Any]) -> dict[str, Any]:
    """The workload mapping for the answers (keys as in docs/workload.md)."""
    task = answers["task"]
    w: dict[str, Any] = {"name": f"ask-{task}", "model": answers["model"], "task": task}
    constraints: dict[str, Any] = {"currency": "CNY"}
    if task == "inference":
        if answers.get("quantization", "none") != "none":
            w["quantization"] = answers["quantization"]
        w["prompt_tokens"] = answers["prompt_tokens"]
        w["output_tokens"] = answers["output_tokens"]
        if answers.get("mode") == "batch":
            w["name"] = "ask-batch"
            w["dataset"] = {"items": answers["items"]}
        else:
            if answers.get("concurrency") is not None:
                w["batch_size"] = answers["concurrency"]
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
    """The prompt, with rich markup escaped: '[e.g. lora]' is text, not a style tag."""
    from rich.markup import escape

    return escape(tr("{question} [e.g. {example}]", lang).format(question=tr(q.text, lang), example=q.example))


def _reason(err: Exception, lang: str) -> str:
    """What a bad answer should have been: a ValueError carries a msgid; a GpuplanError its message and hint."""
    if isinstance(err, GpuplanError):
        return " ".join(x for x in (err.message, err.hint_for("cli")) if x)
    return tr("Please answer with {what}.", lang).format(what=tr(str(err), lang))


def ask_terminal(lang: str, console: Any) -> dict[str, Any]:
    """Ask on a terminal with rich's Prompt; a bad answer is asked again."""
    from rich.markup import escape
    from rich.prompt import Prompt

    answers: dict[str, Any] = {}
    i = 0
    while i < len(questions(answers)):
        q = questions(answers)[i]
        raw = Prompt.ask(_prompt_text(q, lang), default=q.default, console=console)
        try:
            answers[q.key] = q.parse(raw)
            i += 1
        except (ValueError, GpuplanError) as err:
            console.print(f"[yellow]{escape(_reason(err, lang))}[/yellow]")
    return answers


def ask_lines(stream: TextIO, lang: str) -> dict[str, Any]:
    """Read one answer per line in order; an empty line or the end of input takes the default."""
    lines: Iterator[str] = iter(stream.readline, "")
    answers: dict[str, Any] = {}
    i = 0
    while i < len(questions(answers)):
        q = questions(answers)[i]
        raw = next(lines, "").strip()[:1000] or q.default
        try:
            answers[q.key] = q.parse(raw)
        except GpuplanError as err:
            raise GpuplanError(
                tr("Answer {n} ({question}) is not valid: {answer!r}.", lang).format(
                    n=i + 1, question=tr(q.text, lang), answer=raw) + " " + err.message,
                hint=err.hint_for("cli"), field=q.key) from None
        except ValueError as err:
            raise GpuplanError(
                tr("Answer {n} ({question}) is not valid: {answer!r}.", lang).format(
                    n=i + 1, question=tr(q.text, lang), answer=raw),
                hint=tr("Give {what} on line {n}, or leave the line empty for the default ({default}).", lang).format(
                    what=tr(str(err), lang), n=i + 1, default=q.default)) from None
        i += 1
    return answers
