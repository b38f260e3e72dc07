"""The doctor's only door to the machine: commands, files and disk space.

Every probe receives a :class:`Runner` (in the spirit of PyTorch's ``collect_env``, whose probes
get ``run_lambda`` injected) so tests replace the whole machine with recorded outputs. A runner
never raises for an ordinary failure: a missing command, a timeout or an unreadable file comes
back as a result the probe can read as "cannot tell".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RunResult:
    """Outcome of one command. ``rc`` 127: command not found; 124: timed out."""

    rc: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0


NOT_FOUND = RunResult(127, "", "command not found")


@dataclass(frozen=True)
class DiskUsage:
    total_bytes: int
    free_bytes: int


class Runner(Protocol):
    """What probes may ask of the machine."""

    def run(self, argv: list[str], timeout_s: float = 20.0) -> RunResult: ...

    def read_text(self, path: str) -> str | None: ...

    def listdir(self, path: str) -> list[str] | None: ...

    def disk_usage(self, path: str) -> DiskUsage | None: ...


class SystemRunner:
    """The real machine: subprocess with a timeout, plain file reads, ``os.statvfs``."""

    def run(self, argv: list[str], timeout_s: float = 20.0) -> RunResult:
        if not argv or shutil.which(argv[0]) is None:
            return NOT_FOUND
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout_s, check=False,
                env={**os.environ, "LC_ALL": "C"},
            )
        except subprocess.TimeoutExpired:
            return RunResult(124, "", f"timed out after {timeout_s:.0f} s")
        except OSError as exc:
            return RunResult(126, "", str(exc))
        return RunResult(proc.returncode, proc.stdout or "", proc.stderr or "")

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None

    def listdir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def disk_usage(self, path: str) -> DiskUsage | None:
        try:
            st = os.statvfs(path)
        except OSError:
            return None
        return DiskUsage(st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)
