"""The CLI's fast paths answer exactly what the slow ones would: the console without rich's emoji codes, typer's
option coercion without a validator for an option that was not given (gpuplan/cli/fastparams.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clirun import run_cli

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuplan"


def test_no_rich_emoji_code_in_gpuplan_text():
    """The console prints `:name:` literally (emoji=False); that changes nothing gpuplan writes only if no source,
    translation or data file holds a code rich would have replaced."""
    from rich._emoji_codes import EMOJI

    pattern = re.compile(r":(\S*?)(?:-(?:emoji|text))?:")
    files = [*SRC.rglob("*.py"), *SRC.rglob("*.po"), *SRC.rglob("*.yaml"), *SRC.rglob("*.json")]
    assert len(files) > 100
    found = {m.group(0) for p in files for m in pattern.finditer(p.read_text(encoding="utf-8", errors="ignore"))
             if m.group(1).lower() in EMOJI}
    assert found == set()


def test_console_prints_a_typed_emoji_code_as_typed(monkeypatch):
    from gpuplan.cli.common import _console

    monkeypatch.setenv("COLUMNS", "80")
    c = _console()
    with c.capture() as cap:
        c.print("model :fire: x")
    assert cap.get() == "model :fire: x\n"


def _typer_params():
    """Every option and argument of every gpuplan command (typer's own parameter objects)."""
    import typer.main

    from gpuplan.cli import app

    stack, out = [typer.main.get_command(app)], []
    while stack:
        cmd = stack.pop()
        out.extend(cmd.params)
        stack.extend(getattr(cmd, "commands", {}).values())
    return out


def test_lazy_coercion_answers_what_typer_does():
    """For every parameter and value: the same result, or the same error, as typer's own validator."""
    pytest.importorskip("typer._coercion")
    import typer.main
    from typer._click import Context
    from typer._coercion import build_runtime_param

    from gpuplan.cli import app
    from gpuplan.cli.fastparams import _LazyCoercion

    def outcome(coercion, value, param, ctx):
        try:
            got = coercion.coerce(value, param=param, ctx=ctx)
            return ("ok", type(got), got)
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            return ("error", type(exc).__name__, str(exc))

    ctx = Context(typer.main.get_command(app))
    seen, checked = set(), 0
    for param in _typer_params():
        desc = getattr(param, "type_descriptor", None)
        kind = (repr(desc.annotation), param.multiple, param.nargs) if desc is not None else None
        if desc is None or kind in seen:
            continue
        seen.add(kind)
        real, lazy = build_runtime_param(desc), _LazyCoercion(desc)
        for value in (None, "qwen2.5-7b", " spaced ", "12", "1e3", "abc", "", ("a", "b"), 5, 2.5, True,
                      "examples/qwen2.5-7b-lora.yaml", "examples", "/no/such/file.yaml", "-"):
            assert outcome(lazy, value, param, ctx) == outcome(real, value, param, ctx), (param.name, value)
            checked += 1
    assert checked >= 40


def test_an_unused_option_builds_no_validator():
    """`estimate` with three string options builds no pydantic validator for the thirty it was not given."""
    pytest.importorskip("typer._coercion")
    import typer._coercion as coercion

    from gpuplan.cli import fastparams

    built = []
    real = coercion.build_runtime_param

    def counting(descriptor):
        built.append(descriptor.annotation)
        return real(descriptor)

    coercion.build_runtime_param = counting
    try:
        code, out, _err = run_cli("estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--json")
        assert code == 0 and '"fits"' in out
        assert built == []
        code, out, _err = run_cli("recommend", str(SRC.parents[1] / "examples" / "qwen2.5-7b-lora.yaml"), "--json")
        assert code == 0 and '"plans"' in out
        assert built == []
    finally:
        coercion.build_runtime_param = real
    assert fastparams._supported()
    # a value that is not a plain string still goes through typer's validator (and its error)
    code, _out, err = run_cli("estimate", "--model", "qwen2.5-7b", "--seq-len", "many")
    assert code == 2 and "--seq-len" in err and "valid integer" in err
