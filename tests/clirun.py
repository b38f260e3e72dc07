"""Run the real `gpuplan` entry point in-process: (exit code, stdout, stderr). Shared by the CLI tests."""

from __future__ import annotations

import contextlib
import io
import sys

from gpuplan import cli


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["gpuplan", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def plan_exit_code(text: str) -> int:
    """The exit code `gpuplan plan` owes after writing a bundle, read from the preflight report it prints: 0 when
    `gpuplan check` passed, 1 when it failed (the --json summary's `check.ok`, or the human report's first line)."""
    import json

    if text.lstrip().startswith("{"):
        return 0 if json.loads(text)["check"]["ok"] else 1
    if "Preflight passed" in text or "预检通过" in text:
        return 0
    assert "Preflight failed" in text or "预检未通过" in text, f"no preflight report in:\n{text}"
    return 1
