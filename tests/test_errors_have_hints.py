"""Every GpuplanError raised by gpuplan says how to fix it: no call site leaves out the hint."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuplan"


def test_every_gpuplan_error_call_passes_a_hint():
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "GpuplanError":
                has_hint = len(node.args) >= 2 or any(k.arg in ("hint", None) for k in node.keywords)
                if not has_hint:
                    missing.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert missing == [], "GpuplanError without a hint: " + ", ".join(missing)
