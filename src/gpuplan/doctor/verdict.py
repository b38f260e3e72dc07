"""A check's verdict: the :class:`Check` record (pass / warn / fail / skip, a message and a fix, translated on
output), the exit code of a list of them, and the small helpers every check shares (doctor/checks.py,
doctor/checks_gpu.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuplan.doctor.facts import GpuFacts
from gpuplan.doctor.i18n import t

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"


@dataclass(frozen=True)
class Check:
    id: str
    status: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    fix_key: str | None = None
    fix_params: dict[str, Any] = field(default_factory=dict)

    def message(self, lang: str = "en") -> str:
        return t(self.key, lang, **self.params)

    def fix(self, lang: str = "en") -> str | None:
        return t(self.fix_key, lang, **self.fix_params) if self.fix_key and self.status in (WARN, FAIL) else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "message": self.message("en"), "fix": self.fix("en")}


def exit_code(checks: list[Check]) -> int:
    statuses = {c.status for c in checks}
    return 2 if FAIL in statuses else 1 if WARN in statuses else 0


def version_tuple(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v or ""))


def _gpus_text(gpus: list[GpuFacts]) -> str:
    return ", ".join(f"GPU{g.index}" for g in gpus)


def _skip(cid: str, key: str = "not_in_plan", **params: Any) -> list[Check]:
    return [Check(cid, SKIP, key, params)]
