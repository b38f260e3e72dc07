"""gpuplan.files.simpleyaml reads what PyYAML's loader reads, or nothing: every text it returns a value for, PyYAML
(gpuplan.files.safeyaml.LimitedYamlLoader) reads to the same value, types and key order included."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from gpuplan.files.safeyaml import LimitedYamlLoader
from gpuplan.files.simpleyaml import read_simple

ROOT = Path(__file__).resolve().parents[1]

# plain values near every YAML 1.1 resolver's edge: words, numbers, dates, octals, specials, and names
TOKENS = ["qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", "all-linear", "payg", "CNY", "A10", "bf16", "_x", "x_",
          "yes", "Yes", "YES", "no", "NO", "on", "On", "off", "OFF", "true", "True", "FALSE", "null", "Null", "NULL",
          "y", "n", "~", "0", "-0", "+0", "7", "-12", "+12", "2048", "012", "0o7", "0x1F", "0b101", "1_000",
          "123456789012345678901234", "1.5", "-1.5", "+1.0", "1.", ".5", "1e3", "2e9", "1.5e3", "1.5E+3", "1e-3",
          "1E5", "12e", "1.2.3", "1:30", "190:20:30", "2024-01-01", "2024-1-1", "2002-12-14t21:59:43.10-05:00",
          ".inf", "-.inf", ".NaN", "nan", "inf", "-", "+", ".", "/", "a/b", "a.b", "a-", "-a", "+a", "=", "<<",
          "a b", "a:b", "a: b", "a#b", "a #b", "'q'", '"q"', "&a", "*a", "!x", "|", ">", "%", "@x", "`x", "é", "a\tb"]
KEYS = ["model", "task", "seq_len", "lora", "rank", "a", "_k", "k_1", "yes", "on", "null", "No", "1", "a b", "<<",
        "x-y", "é"]


def _flow(depth: int) -> st.SearchStrategy[str]:
    scalar = st.sampled_from(TOKENS)
    if depth == 0:
        return scalar
    inner = _flow(depth - 1)
    seps = st.sampled_from([", ", ",", " , ", ",  "])
    seq = st.tuples(st.lists(inner, max_size=4), seps, st.sampled_from(["", " "]), st.booleans()).map(
        lambda t: "[" + t[2] + t[1].join(t[0]) + ("," if t[3] else "") + t[2] + "]")
    pair = st.tuples(st.sampled_from(KEYS), st.sampled_from([": ", ":", ":  "]), inner).map("".join)
    mapping = st.tuples(st.lists(pair, max_size=4), seps, st.sampled_from(["", " "])).map(
        lambda t: "{" + t[2] + t[1].join(t[0]) + t[2] + "}")
    return st.one_of(scalar, seq, mapping)


LINE = st.tuples(
    st.sampled_from([0, 0, 2, 2, 4, 1, 3]),                       # indentation
    st.sampled_from(KEYS),
    st.sampled_from([": ", ":", ":  ", ": "]),
    st.one_of(st.just(""), _flow(2)),
    st.sampled_from(["", "", " # note", "  #x: y", "#x", " "]),
).map(lambda t: " " * t[0] + t[1] + t[2] + t[3] + t[4])
EXTRA = st.sampled_from(["", "# comment: x", "   ", "---", "- item", "  - item", "...", "\t", "key: |", "k: >-",
                         "a: b\r"])
DOC = st.lists(st.one_of(LINE, LINE, LINE, EXTRA), min_size=1, max_size=12).map("\n".join)


GOOD = ["qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", "all-linear", "payg", "spot", "A10", "bf16", "0", "7", "-12",
        "2048", "1.5", "-0.25", "1e3", "2e9", "1.5E+3", "true", "no", "null", "Off", "x_1"]
GOOD_KEYS = ["model", "task", "seq_len", "lora", "rank", "a", "_k", "k_1", "B"]


def _render(tree: dict, indent: int, style: int) -> list[str]:
    lines = []
    for key, value in tree.items():
        pad = " " * indent
        if isinstance(value, dict) and value and style % 2 == 0:
            lines.append(f"{pad}{key}:" + (" # block" if style % 3 == 0 else ""))
            lines.extend(_render(value, indent + 2 + (style % 2) * 2, style // 2))
        else:
            lines.append(f"{pad}{key}: {_inline(value)}")
    return lines


def _inline(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return value


LEAF = st.one_of(st.sampled_from(GOOD), st.sampled_from(GOOD), st.sampled_from(GOOD), st.sampled_from(TOKENS))
TREE = st.recursive(LEAF, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                 st.dictionaries(st.sampled_from(GOOD_KEYS), kids, max_size=3)),
                    max_leaves=8)
LIKELY = st.tuples(st.dictionaries(st.sampled_from(GOOD_KEYS + ["on"]), TREE, min_size=1, max_size=6),
                   st.integers(0, 63)).map(lambda t: "\n".join(["# a workload", *_render(t[0], 0, t[1])]) + "\n")


def _typed(value):
    """A value with every scalar's type spelled out (True == 1 == 1.0 in Python; YAML tells them apart)."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


def _same_as_pyyaml(text: str) -> bool:
    got = read_simple(text)
    if got is None:
        return False
    want = yaml.load(text, Loader=LimitedYamlLoader)   # must not raise for a text read_simple read
    assert _typed(got) == _typed(want), text
    return True


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOC)
def test_read_simple_reads_what_pyyaml_reads(text):
    _same_as_pyyaml(text)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LIKELY)
def test_read_simple_reads_what_pyyaml_reads_in_workload_shaped_files(text):
    _same_as_pyyaml(text)


def test_the_examples_are_read_alike():
    files = sorted((ROOT / "examples").glob("*.yaml"))
    read = [f.name for f in files if _same_as_pyyaml(f.read_text(encoding="utf-8"))]
    assert "qwen2.5-7b-lora.yaml" in read     # the file bench/cold_start.py measures


def test_forms_left_to_pyyaml():
    for text in ("a: 2024-01-01", "a: 012", "a: 1_000", "a: 1:30", "a: 'q'", "a:\n- x", "on: 1", "a: 1\na: 2",
                 "  a: 1", "a: b c", "a: [x, y,]", "a: {b: c,}", "a: .5", "---\na: 1", "a: é", "", "# only",
                 "a:\n    b: 1\n  c: 2", "a: [x]y", "a: 1e", "a: 0x1F"):
        assert read_simple(text) is None, text
    assert read_simple("a: [yes, 1, 1.5, 2e9, x]\nb:\n  c: {d: [null, Off]}\ne:") == {
        "a": [True, 1, 1.5, 2e9, "x"], "b": {"c": {"d": [None, False]}}, "e": None}
