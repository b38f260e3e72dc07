"""Workload files: YAML, JSON, a JSON array or JSON Lines, size-bounded (gpuplan.files.safeio), and the YAML the CLI
reads written back. Text in, plain data out; validation is gpuplan.workload.parse_workload's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.files.input_limits import MAX_BATCH_FILE_BYTES, MAX_WORKLOAD_FILE_BYTES
from gpuplan.files.safeio import (
    load_json,
    load_yaml,
    read_stdin_bounded,
    read_text_bounded,
    size_text,
)


def load_yaml_text(text: str, origin: str = "input") -> Any:
    """YAML (or JSON) text -> Python data, with gpuplan.files.safeio's depth, alias and number limits."""
    return load_yaml(text, origin)


def dump_workload_yaml(data: dict[str, Any]) -> str:
    """A workload mapping as the YAML file the CLI reads (keys in the given order, UTF-8 text kept)."""
    import yaml

    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, default_flow_style=False)


def _yaml_size_check(text: str, p: Path) -> None:
    """Refuse a YAML workload larger than input_limits.MAX_WORKLOAD_FILE_BYTES before parsing it."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_WORKLOAD_FILE_BYTES:
        raise GpuplanError(_("The workload file {p!r} is larger than {limit} ({size}).").format(
                               p=str(p), limit=size_text(MAX_WORKLOAD_FILE_BYTES), size=size_text(size)),
                           hint=_("A workload is a few hundred bytes: keep only the workload keys (JSON Lines "
                                  "files of many workloads may be larger)."))


def read_workload_documents(path: str | Path) -> Any:
    """Read a workload file (YAML, JSON, a JSON array or JSON Lines), size-bounded (see gpuplan.files.safeio).
    ``-`` reads standard input (once per process: a command that reads its workload twice gets the same text)."""
    if str(path) == "-":
        return _parse_documents(read_stdin_bounded("workload file"), Path("-"))
    p = Path(path)
    try:
        p.is_dir()  # a name too long for the file system, or otherwise unusable
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise GpuplanError(_("Cannot use {p!r} as a workload file: {reason}.").format(p=str(p)[:80], reason=reason),
                           hint=_("Give the path of a YAML or JSON workload file.")) from None
    if not p.exists():
        raise GpuplanError(_("Workload file {p!r} does not exist.").format(p=str(p)),
                           hint=_("Give a YAML or JSON workload file; `gpuplan schema` shows the format."))
    if p.is_dir():
        raise GpuplanError(_("{p!r} is a folder, not a workload file.").format(p=str(p)), hint=_("Give a .yaml or .json file."))
    json_lines = p.suffix.lower() in (".jsonl", ".ndjson")
    limit = MAX_BATCH_FILE_BYTES if json_lines else MAX_WORKLOAD_FILE_BYTES    # checked with stat, before reading
    return _parse_documents(read_text_bounded(p, "workload file", max_bytes=limit), p)


def _parse_documents(text: str, p: Path) -> Any:
    stripped = text.strip()
    if not stripped:
        raise GpuplanError(_("Workload file {p!r} is empty.").format(p=str(p)),
                           hint=_("Start with `model: <name>` and `task: <inference|pretrain|full|lora|qlora>`."))
    if p.suffix.lower() in (".jsonl", ".ndjson") or (stripped.startswith("{") and "\n{" in stripped):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        docs: list[Any] = []
        for i, line in enumerate(lines, 1):
            try:
                docs.append(load_json(line, origin=_("{path!r} line {line}").format(path=str(p), line=i)))
            except GpuplanError:
                if len(lines) == 1:
                    break
                docs.append(BadLine(i))
        else:
            return docs if len(docs) > 1 else docs[0]
    _yaml_size_check(text, p)
    return load_yaml_text(text, origin=str(p))


class BadLine:
    """A JSON Lines line that does not parse: reported on its own output line."""

    def __init__(self, line: int):
        self.line = line
