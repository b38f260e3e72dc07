"""The limits on what a user can hand gpuplan, in one place (gpuplan.files.safeio enforces them; README.md and
docs/workload.md quote them, and tests/test_input_limits.py checks that they quote these values)."""

from __future__ import annotations

MAX_BYTES = 20_000_000  # any user file (a config.json, a price file); the REST API has its own request limit
# A workload file (YAML, JSON or a JSON array): a workload is < 2 KiB, one with an inline config.json
# < 16 KiB. PyYAML's pure-Python parser (the one that can count nesting and aliases) reads a few hundred
# KB a second, so this bound keeps the worst file under a second.
MAX_WORKLOAD_FILE_BYTES = 256 * 1024
# A JSON Lines batch of many workloads (.jsonl / .ndjson, parsed as JSON, one workload a line).
MAX_BATCH_FILE_BYTES = MAX_BYTES
MAX_DEPTH = 64  # a workload is 3 levels deep, a Hugging Face config.json about 4
MAX_NODES = 200_000  # expanded YAML nodes (scalars + collections), aliases counted every time they are used
MAX_INT_DIGITS = 100  # far above any count gpuplan reads (tokens, bytes, parameters)


def size_text(n_bytes: int) -> str:
    """A byte limit as people read it: '256 KiB', '20 MB'."""
    if n_bytes % 1_000_000 == 0:
        return f"{n_bytes // 1_000_000} MB"
    return f"{n_bytes // 1024} KiB" if n_bytes >= 1024 else f"{n_bytes} B"
