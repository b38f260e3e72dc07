"""One limit per kind of user file, one constant each (gpuplan/files/input_limits.py), and the docs quote those values:
the README and docs/workload.md once disagreed (256 KiB and 20 MB) about the same workload file."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.errors import GpuplanError
from gpuplan.files.input_limits import MAX_BATCH_FILE_BYTES, MAX_BYTES, MAX_WORKLOAD_FILE_BYTES, size_text
from gpuplan.files.workload_files import read_workload_documents

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("doc", ["README.md", "docs/workload.md"])
def test_the_docs_quote_the_limits_the_code_enforces(doc):
    text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
    assert "workload file (YAML, JSON or a JSON array)" in text
    assert size_text(MAX_WORKLOAD_FILE_BYTES) in text and size_text(MAX_BATCH_FILE_BYTES) in text, doc
    assert "gpuplan/files/input_limits.py" in text


def test_the_workload_file_limit_is_enforced_before_parsing(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("model: qwen2.5-7b\n# " + "x" * MAX_WORKLOAD_FILE_BYTES + "\n", encoding="utf-8")
    with pytest.raises(GpuplanError) as exc:
        read_workload_documents(big)
    assert size_text(MAX_WORKLOAD_FILE_BYTES) in exc.value.message
    small = tmp_path / "small.yaml"
    small.write_text("model: qwen2.5-7b\n# " + "x" * (MAX_WORKLOAD_FILE_BYTES - 100) + "\n", encoding="utf-8")
    assert read_workload_documents(small)["model"] == "qwen2.5-7b"
    # a JSON Lines batch may be larger: many workloads, one a line
    batch = tmp_path / "many.jsonl"
    line = '{"model": "qwen2.5-7b", "task": "lora", "hardware": {"gpu": "A10"}}\n'
    batch.write_text(line * (MAX_WORKLOAD_FILE_BYTES // len(line) + 10), encoding="utf-8")
    assert len(read_workload_documents(batch)) > MAX_WORKLOAD_FILE_BYTES // len(line)
    assert MAX_BATCH_FILE_BYTES <= MAX_BYTES
