"""Fuzzing the command line (issue 15, section 2): whatever the arguments and files, gpuplan exits 0,
1 or 2; a 2 prints exactly one ``Error:`` line and one ``Hint:`` line (or ``{"error", "hint"}`` under
``--json``), within a second; never a traceback, never ``Internal error`` (exit 3).

Most cases run in-process (``gpuplan.cli.main`` with a patched argv, about 650 cases); a few run
the real console entry point in a subprocess, to check exit codes and streams end to end.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan import cli

# A hang guard, not a speed test (the alias bomb ran for minutes): bad input must fail fast even on a
# loaded 2-core machine; the real latency (a few ms to parse, ~1 s with process start) is in bench/speed.py.
HANG_S = 10.0

SCALE = float(os.environ.get("GPUPLAN_FUZZ_SCALE", "1"))
SRC = Path(__file__).resolve().parents[1] / "src"
TMP = Path(tempfile.mkdtemp(prefix="gpuplan-cli-fuzz-"))

ALIAS_BOMB = ("model: {a: &a [x,x,x,x,x,x,x,x,x], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b], "
              "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c], e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d], f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e], "
              "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f], h: [*g,*g,*g,*g,*g,*g,*g,*g,*g]}\n")
FILES = {
    "bomb.yaml": ALIAS_BOMB,
    "deep.yaml": "model: qwen2.5-7b\nx: " + "[" * 500 + "]" * 500,
    "deep.json": '{"model": "qwen2.5-7b", "x": ' + "[" * 500 + "]" * 500 + "}",
    "deep.jsonl": '{"model": "qwen2.5-7b", "x": ' + "[" * 500 + "]" * 500 + "}\n",
    "big.yaml": "model: qwen2.5-7b\nbatch_size: " + "9" * 5000,
    "empty.jsonl": "",
    "tag.yaml": "model: qwen2.5-7b\nbatch_size: !!int ''\n",
    "config.json": '{"model_type": "llama", "x": ' + "[" * 500 + "]" * 500 + "}",
    "ok.yaml": "model: qwen2.5-7b\ntask: lora\nhardware: {gpu: A10}\n",
    "prices.csv": "instance_type,region\n" + "x," * 3,
}
for _name, _text in FILES.items():
    (TMP / _name).write_text(_text, encoding="utf-8")
PATHS = [str(TMP / n) for n in FILES] + ["/dev/zero", "/dev/null", str(TMP), str(TMP / "missing.yaml"), "-", ""]


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["gpuplan", *args]
    code: Any = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main()
    except SystemExit as e:
        code = e.code
    finally:
        sys.argv = argv
    return (code if isinstance(code, int) else (0 if code is None else 1)), out.getvalue(), err.getvalue()


def check(args: list[str], code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err and "Internal error" not in out + err, (args, err[-800:])
    assert code in (0, 1, 2), (args, code, err[-800:])
    if code == 2:
        if "--json" in args and out.strip().startswith("{") and not err.strip():
            doc = json.loads(out)
            assert doc.get("error") and "hint" in doc, (args, out)
        else:
            lines = err.strip().splitlines()
            # one error and one hint, in the language asked for (a random `--lang zh` answers in Chinese)
            assert len(lines) == 2 and lines[0].startswith(("Error: ", "错误: ")) \
                and lines[1].startswith(("Hint: ", "提示: ")), (args, err)


@pytest.fixture(autouse=True, scope="module")
def _warm_catalogs() -> None:
    run(["estimate", str(TMP / "ok.yaml"), "--json"])
    run(["recommend", str(TMP / "ok.yaml"), "--json", "--top", "1"])


values = st.one_of(
    st.sampled_from(["qwen2.5-7b", "llama-3.1-70b", "A10", "H20", "lora", "infer", "bf16", "int4", "7B", "0", "-1",
                     "1e9", "nan", "inf", "9" * 400, "", " ", "--json", "-", "zh", "en", "fr", "cn-shanghai",
                     "batch_size", "seq_len", "x" * 300]),
    st.sampled_from(PATHS),
    st.integers(min_value=-10**6, max_value=10**6).map(str),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"),
            max_size=15),
)
options = st.sampled_from(["--model", "--task", "--precision", "--quantization", "--seq-len", "--batch-size",
                           "--gpu", "--gpus", "--tp", "--pp", "--zero", "--budget", "--deadline-hours", "--region",
                           "--objective", "--framework", "--instance-type", "--grad-checkpointing", "--top",
                           "--prices", "--params", "--max", "--lang", "--pick", "--out", "--cloud", "--family",
                           "--min-gpu-memory", "--kind", "--currency", "--no-such-flag"])
COMMANDS = ["estimate", "recommend", "quick", "compare", "plan", "show", "instances", "models", "gpus", "schema"]


@settings(max_examples=max(1, int(500 * SCALE)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(command=st.sampled_from(COMMANDS), positional=st.lists(st.sampled_from(PATHS) | values, max_size=1),
       opts=st.lists(st.tuples(options, values), max_size=4), as_json=st.booleans())
def test_random_command_lines(command: str, positional: list[str], opts: list[tuple[str, str]], as_json: bool) -> None:
    args = [command, *positional]
    for opt, value in opts:
        if opt == "--out":
            value = str(TMP / "out" / str(abs(hash(value)) % 1000))
        args += [opt, value]
    if command == "plan":
        args += ["--out", str(TMP / "plans" / str(time.monotonic_ns()))]
    if as_json:
        args.append("--json")
    t0 = time.perf_counter()
    code, out, err = run(args)
    assert time.perf_counter() - t0 < HANG_S, args  # a recommend over the whole catalog takes ~0.3 s
    check(args, code, out, err)


@settings(max_examples=max(1, int(150 * SCALE)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), command=st.sampled_from(["estimate", "recommend", "compare"]),
       as_json=st.booleans())
def test_hostile_files_on_every_workload_command(path: str, command: str, as_json: bool) -> None:
    args = [command, path] + (["--json"] if as_json else [])
    t0 = time.perf_counter()
    code, out, err = run(args)
    assert time.perf_counter() - t0 < HANG_S, args
    check(args, code, out, err)
    if Path(path).name in ("bomb.yaml", "deep.yaml", "deep.json", "big.yaml", "tag.yaml", "empty.jsonl"):
        assert code == 2, (args, out, err)


@pytest.mark.parametrize("args", [
    ["estimate", str(TMP / "bomb.yaml")],
    ["recommend", str(TMP / "deep.json"), "--json"],
    ["estimate", "/dev/zero"],
    ["estimate", "--model", str(TMP / "config.json"), "--gpu", "A10"],
    ["recommend", "--model", "qwen2.5-7b", "--top", "-1"],
    ["estimate", "--no-such-flag"],
])
def test_the_console_script_end_to_end(args: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", "from gpuplan.cli import main; main()", *args], capture_output=True,
                          text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    check(args, proc.returncode, proc.stdout, proc.stderr)
