"""Data files in their fastest form (issue 32): libyaml, a compiled copy keyed by the file's hash, and a cold
`estimate` that imports nothing it does not need."""

from __future__ import annotations

import datetime
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from gpuplan.files import datafiles
from gpuplan.files.datafiles import DataFormatError, load_data

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(datafiles.CACHE_ENV_OFF, raising=False)
    return tmp_path / "cache" / "compiled"


def test_a_compiled_copy_is_written_once_and_read_back(tmp_path, cache):
    src = tmp_path / "prices.yaml"
    src.write_text("as_of: 2024-06-01\nrows: [{a: 1, b: 2.5}, {a: 2, b: null}]\n", encoding="utf-8")
    first = load_data(src)
    assert first == {"as_of": datetime.date(2024, 6, 1), "rows": [{"a": 1, "b": 2.5}, {"a": 2, "b": None}]}
    copies = list(cache.glob("prices-*.pickle"))
    assert len(copies) == 1
    assert load_data(src) == first
    src.write_text("as_of: 2024-07-01\n", encoding="utf-8")       # another file: another hash, another copy
    assert load_data(src) == {"as_of": datetime.date(2024, 7, 1)}
    assert len(list(cache.glob("prices-*.pickle"))) == 2


def test_a_damaged_or_planted_copy_is_never_trusted(tmp_path, cache):
    src = tmp_path / "gpus.yaml"
    src.write_text("gpus: [A10]\n", encoding="utf-8")
    load_data(src)
    (copy,) = cache.glob("gpus-*.pickle")
    copy.write_bytes(b"not a pickle")
    assert load_data(src) == {"gpus": ["A10"]}               # parsed again, and rewritten
    copy.write_bytes(pickle.dumps(os.system))              # a global other than datetime: refused, not called
    assert load_data(src) == {"gpus": ["A10"]}
    assert pickle.loads(copy.read_bytes()) == {"gpus": ["A10"]}


def test_the_c_loader_reads_the_bundled_files_as_the_python_one_does(cache):
    import yaml

    for path in sorted((ROOT / "src" / "gpuplan" / "data").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        assert datafiles.parse_yaml(text) == yaml.safe_load(text), path


def test_a_syntax_error_is_a_value_error(tmp_path, cache):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n", encoding="utf-8")
    with pytest.raises(DataFormatError):
        load_data(bad)
    assert issubclass(DataFormatError, ValueError)


_PROBE = """
import json, sys
from gpuplan import cli
sys.argv = ["gpuplan", *json.loads(sys.argv[1])]
try:
    cli.main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _modules(args: list[str], cache_dir: Path) -> set[str]:
    env = {**os.environ, "GPUPLAN_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT / "src")}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], capture_output=True, text=True, env=env,
                          timeout=120)
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES "))
    return set(json.loads(line[len("MODULES "):]))


def test_a_cold_estimate_imports_only_what_it_needs(tmp_path):
    args = ["estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--json"]
    _modules(args, tmp_path)                   # the first run compiles the data files it reads
    loaded = _modules(args, tmp_path)
    unneeded = {"yaml", "urllib.request", "importlib.metadata", "email", "fastapi", "torch", "gpuplan.plan",
                "gpuplan.render.bundle", "gpuplan.providers.alibaba"}
    assert loaded & unneeded == set(), loaded & unneeded

