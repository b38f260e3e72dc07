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
