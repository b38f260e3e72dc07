"""Fuzzing the public Python API (issue 15, section 2): every input gives a result or one GpuplanError
(one line, with a hint), within a second; never TypeError, AttributeError, RecursionError or a hang.

About 3,000 cases in all (``GPUPLAN_FUZZ_SCALE`` multiplies them), a few seconds on 2 cores:
argument types of every public function, workload mappings with junk values, YAML/JSON text built
from hostile pieces (aliases, anchors, tags, deep nesting, huge numbers, odd bytes) and inline
model configs.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpuplan
from gpuplan import GpuplanError

# A hang guard, not a speed test (the alias bomb ran for minutes): bad input must fail fast even on a
# loaded 2-core machine; the real latency (a few ms to parse, ~1 s with process start) is in bench/speed.py.
HANG_S = 10.0

SCALE = float(os.environ.get("GPUPLAN_FUZZ_SCALE", "1"))
W = {"model": "qwen2.5-7b", "task": "lora", "hardware": {"gpu": "A10"}}
TMP = Path(tempfile.mkdtemp(prefix="gpuplan-fuzz-"))


@pytest.fixture(autouse=True, scope="module")
def _warm_catalogs() -> None:
    """Load the catalogs once, so the one-second limit measures the call, not the first catalog load."""
    gpuplan.estimate(W)
    gpuplan.estimate({"model": {"params_b": 7}, "task": "inference", "hardware": {"gpu": "H20", "count": 8}})


def examples(n: int) -> Any:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def check(call: Any) -> Any:
    """Run ``call``: a result, or a GpuplanError with a one-line message and a hint, in under a second."""
    t0 = time.perf_counter()
    try:
        result = call()
    except GpuplanError as err:
        assert err.message and "\n" not in err.message and err.hint, (err.message, err.hint)
        result = err
    assert time.perf_counter() - t0 < HANG_S
    return result


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**20, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), st.binary(max_size=8),
    st.sampled_from(["7B", "70b", "lora", "qlora", "infer", "", " ", "-1", "1e9", "nan", "A10", "qwen2.5-7b",
                     "/dev/zero", "/", ".", "~", "\x00", "config.json", "a" * 600]),
)
junk = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner) |
                    st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


# ------------------------------------------------------------------------------ argument types


@examples(400)
@given(source=junk, flags=st.dictionaries(st.sampled_from(["gpu", "gpus", "tp", "zero", "budget", "region", "task",
                                                           "seq_len", "nonsense"]), junk, max_size=3))
def test_load_workload_and_estimate_take_anything(source: Any, flags: dict[str, Any]) -> None:
    check(lambda: gpuplan.load_workload(source, **flags))
    check(lambda: gpuplan.estimate(source, **flags))


@examples(400)
@given(top=junk.filter(lambda t: not (type(t) is int and 1 <= t <= 100)), headroom=junk, files=junk)
def test_recommend_checks_its_arguments(top: Any, headroom: Any, files: Any) -> None:
    result = check(lambda: gpuplan.recommend(W, top=top, memory_headroom=headroom, price_files=files))
    assert isinstance(result, GpuplanError)  # top is never valid here


@examples(300)
@given(params=junk, task=junk.filter(lambda t: not isinstance(t, str)))
def test_quick_checks_its_arguments(params: Any, task: Any) -> None:
    assert isinstance(check(lambda: gpuplan.quick(params, task)), GpuplanError)


@examples(300)
@given(field=junk, pick=junk.filter(lambda p: not (type(p) is int and 1 <= p <= 20)), lang=junk)
def test_max_fit_and_build_plan_check_their_arguments(field: Any, pick: Any, lang: Any) -> None:
    check(lambda: gpuplan.max_fit(W, field))
    assert isinstance(check(lambda: gpuplan.build_plan(W, TMP / "never", pick=pick, lang=lang)), GpuplanError)
    assert not (TMP / "never").exists()


# ------------------------------------------------------------------------------ workload mappings


KEYS = ["model", "task", "precision", "quantization", "kv_cache_dtype", "framework", "batch_size", "seq_len",
        "prompt_tokens", "output_tokens", "grad_checkpointing", "optimizer", "lora", "parallel", "dataset",
        "serving", "hardware", "constraints", "objective", "input", "name"]
valid_bits = st.sampled_from(["qwen2.5-7b", "llama-3.1-8b", "lora", "inference", "bf16", "int4", 1, 8, 2048,
                              {"gpu": "A10"}, {"gpu": "H20", "count": 8}, {"tp": 2}, {"params_b": 7},
                              {"rank": 16}, {"tokens": 1e9}, True, "selective"])


@examples(800)
@given(data=st.dictionaries(st.sampled_from(KEYS), st.one_of(junk, valid_bits), max_size=6))
def test_random_workload_mappings(data: dict[str, Any]) -> None:
    result = check(lambda: gpuplan.estimate(data))
    if not isinstance(result, GpuplanError):
        assert math.isfinite(result.to_dict()["memory"]["per_gpu_bytes"])


hf_keys = st.sampled_from(["model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
                           "num_attention_heads", "num_key_value_heads", "vocab_size", "head_dim",
                           "tie_word_embeddings", "num_experts", "num_local_experts", "num_experts_per_tok",
                           "max_position_embeddings", "text_config", "torch_dtype", "params_b"])
hf_values = st.one_of(junk, st.integers(min_value=-5, max_value=10**7), st.sampled_from(["llama", "qwen2", "mixtral"]))


@examples(500)
@given(cfg=st.dictionaries(hf_keys, hf_values, max_size=8))
def test_inline_model_configs(cfg: dict[str, Any]) -> None:
    check(lambda: gpuplan.estimate({"model": cfg, "hardware": {"gpu": "A10"}}))


@pytest.mark.parametrize("value", [10**400, -10**400, 10**25])
def test_a_params_b_too_large_for_a_float_is_refused_in_one_line(value: int) -> None:
    """Found by the fuzz test above: {params_b: 10**400} raised OverflowError (math.isfinite on an int that no float
    holds) instead of the range error."""
    err = check(lambda: gpuplan.estimate({"model": {"params_b": value}, "hardware": {"gpu": "A10"}}))
    assert isinstance(err, GpuplanError) and "outside" in err.message and len(err.message) < 120


# ------------------------------------------------------------------------------ hostile text


def _nest(depth: int, open_: str, close: str, inner: str = "1") -> str:
    return open_ * depth + inner + close * depth


pieces = st.one_of(
    st.sampled_from(["model: qwen2.5-7b", "task: lora", "hardware: {gpu: A10}", "batch_size: 8", "seq_len: 2e3",
                     "a: &a [1, 2, 3]", "b: &b [*a, *a, *a, *a]", "c: [*b, *b, *b, *b, *b]", "d: *zz",
                     "e: !!int ''", "e: !!float x", "e: !!binary '%'", "e: !!timestamp 2020-99-01", "e: !!set {a}",
                     "e: !!omap [a]", "e: !!python/name:os.system", "e: !!str", "? [a, b]\n: c", "&r x: *r",
                     "model: &m {x: *m}", "---", "...", "%YAML 1.1", "- 1", "  bad: indent", "model: [",
                     "\ufeffmodel: x", "model: \x00", "e: 0x" + "f" * 200, "e: 1_000_000", "e: .nan", "e: -.inf"]),
    st.integers(min_value=0, max_value=600).map(lambda n: "x: " + _nest(n, "[", "]")),
    st.integers(min_value=0, max_value=600).map(lambda n: "x: " + _nest(n, "{a: ", "}")),
    st.integers(min_value=1, max_value=6000).map(lambda n: "batch_size: " + "9" * n),
    st.text(max_size=30).map(lambda t: "name: " + t),
)


@examples(600)
@given(lines=st.lists(pieces, min_size=0, max_size=6), suffix=st.sampled_from([".yaml", ".json", ".jsonl", ".yml"]))
def test_hostile_yaml_and_json_text(lines: list[str], suffix: str) -> None:
    path = TMP / f"w{suffix}"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    check(lambda: gpuplan.load_workload(path))


@examples(200)
@given(raw=st.binary(max_size=200))
def test_random_bytes(raw: bytes) -> None:
    path = TMP / "raw.yaml"
    path.write_bytes(raw)
    check(lambda: gpuplan.load_workload(path))
