"""Speed of `recommend()` over the whole catalog (in-process, warm) and of a cold CLI-like process.

Run: python bench/recommend_speed.py  -> writes bench/results/recommend_speed.md
Targets (issue): < 300 ms in-process, < 1.5 s for the CLI.
"""

from __future__ import annotations

import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuplan.plan import recommend

ALL = ["ga", "preview", "ticket", "not-recommended", "retired", "unconfirmed"]
CASES = {
    "Qwen2.5-7B LoRA, seq 2048, 1e8 tokens": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048,
                                              "dataset": {"tokens": 1e8}},
    "Qwen-7B full fine-tune, 1e9 tokens": {"model": "Qwen/Qwen-7B-Chat", "task": "full", "seq_len": 2048,
                                           "dataset": {"tokens": 1e9}},
    "Qwen-7B full fine-tune, every status": {"model": "Qwen/Qwen-7B-Chat", "task": "full", "seq_len": 2048,
                                             "dataset": {"tokens": 1e9}, "constraints": {"include_status": ALL}},
    "Llama-3.1-70B full, seq 4096, every status": {"model": "meta-llama/Llama-3.1-70B-Instruct", "task": "full",
                                                   "seq_len": 4096, "dataset": {"tokens": 1e9},
                                                   "constraints": {"include_status": ALL}},
    "Llama-3.1-70B serving, 4 quantizations, every status": {
        "model": "meta-llama/Llama-3.1-70B-Instruct", "task": "inference", "serving": {"requests_per_s": 5},
        "constraints": {"include_status": ALL, "quantization": ["none", "fp8", "int8", "awq"]}},
    "Qwen2.5-7B serving 10 req/s": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                                    "serving": {"requests_per_s": 10}},
}
RUNS = 15


def in_process() -> list[tuple[str, float, float, dict]]:
    rows = []
    for name, wd in CASES.items():
        recommend(wd)                      # warm the catalog caches
        times = []
        for _ in range(RUNS):
            t = time.perf_counter()
            rec = recommend(wd)
            times.append(time.perf_counter() - t)
        rows.append((name, statistics.median(times), max(times), rec.stats))
    return rows


def cold_cli() -> tuple[str, float]:
    """`gpuplan recommend FILE --json` when the command exists, else the same work in a fresh
    interpreter (import, load the catalog, recommend, render JSON)."""
    wd = CASES["Qwen2.5-7B LoRA, seq 2048, 1e8 tokens"]
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "w.json"
        f.write_text(json.dumps(wd))
        exe = shutil.which("gpuplan")
        cmd = None
        if exe:
            probe = subprocess.run([exe, "recommend", "--help"], capture_output=True, text=True)
            if probe.returncode == 0:
                cmd = [exe, "recommend", str(f), "--json"]
        label = "gpuplan recommend FILE --json"
        if cmd is None:
            label = "python -c 'recommend(FILE); json.dumps(...)' (CLI command not wired yet)"
            cmd = [sys.executable, "-c", "import json,sys; from gpuplan.plan import recommend; "
                   "print(json.dumps(recommend(sys.argv[1]).to_dict())[:80])", str(f)]
        times = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=False)
            times.append(time.perf_counter() - t)
    return label, statistics.median(times)


def main() -> None:
    rows = in_process()
    label, cli_s = cold_cli()
    out = ["# recommend() speed", "",
           f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
           f"median of {RUNS} warm runs over the whole bundled catalog.", "",
           "| workload | median ms | max ms | instance types | candidates | estimates |", "|---|---:|---:|---:|---:|---:|"]
    for name, med, mx, st in rows:
        out.append(f"| {name} | {med * 1000:.0f} | {mx * 1000:.0f} | {st['instance_types']} | {st['candidates']} | "
                   f"{st['estimates']} |")
    out += ["", f"Cold process ({label}): {cli_s:.2f} s (median of 3).", "",
            "Targets: < 300 ms in-process, < 1.5 s CLI."]
    path = Path(__file__).parent / "results" / "recommend_speed.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    print("\n".join(out))


if __name__ == "__main__":
    main()
