"""Speed of `recommend()` over the whole catalog (in-process, warm) and of a cold CLI process.

Run: python bench/recommend_speed.py [--baseline SRC] [--runs N]  -> writes bench/results/recommend_speed.md

``--baseline SRC`` names the ``src`` folder of another checkout (for example
``git archive <commit> src | tar -x -C /tmp/base`` then ``--baseline /tmp/base/src``): both trees run in
worker processes, alternately, so that both see the same machine load, and the report gives their medians
and the ratio. Targets (issues 14 and 21): < 300 ms median in-process, < 2.5 s for a cold CLI run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
# Cold CLI runs: the bench's LoRA case and issue 21's training workloads.
CLI_CASES = {
    "Qwen2.5-7B LoRA": CASES["Qwen2.5-7B LoRA, seq 2048, 1e8 tokens"],
    "Llama-3-70B full, seq 4096, deadline 168 h (issue 21)": {
        "model": "meta-llama/Meta-Llama-3-70B", "task": "full", "seq_len": 4096, "dataset": {"tokens": 1.0e9},
        "constraints": {"deadline_hours": 168}},
    "BERT-base full, seq 512, 1M samples x 3 (issue 21)": {
        "model": "bert-base-uncased", "task": "full", "seq_len": 512,
        "dataset": {"samples": 1000000, "tokens_per_sample": 512, "epochs": 3}},
}
RUNS = 15

# A worker: warms every case, then answers "case name" lines with [cpu s, wall s, stats].
WORKER = """
import json, sys, time
from gpuplan.plan import recommend
cases = json.loads(sys.argv[1])
for wd in cases.values():
    recommend(wd)
print("ready", flush=True)
for line in sys.stdin:
    wd = cases[line.strip()]
    c, t = time.process_time(), time.perf_counter()
    rec = recommend(wd)
    print(json.dumps([time.process_time() - c, time.perf_counter() - t, rec.stats]), flush=True)
"""


def _worker(src: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": src}
    p = subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(CASES)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def _ask(p: subprocess.Popen, name: str) -> list:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(name + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def in_process(runs: int, baseline: str | None) -> dict[str, dict[str, list]]:
    """{case: {"after": [[cpu, wall, stats], ...], "before": [...]}}, the two trees alternating."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    workers = {"after": _worker(here)}
    if baseline:
        workers["before"] = _worker(baseline)
    out: dict[str, dict[str, list]] = {}
    for name in CASES:
        out[name] = {k: [] for k in workers}
        for _ in range(runs):
            for k, p in workers.items():
                out[name][k].append(_ask(p, name))
    for p in workers.values():
        p.terminate()
    return out


def cold_cli(src: str) -> dict[str, float]:
    """`gpuplan recommend FILE --json` in a fresh process (median of 3) for each CLI case."""
    out = {}
    env = {**os.environ, "PYTHONPATH": src}
    with tempfile.TemporaryDirectory() as d:
        for name, wd in CLI_CASES.items():
            f = Path(d) / "w.json"
            f.write_text(json.dumps(wd))
            exe = shutil.which("gpuplan")
            cmd = [exe, "recommend", str(f), "--json"] if exe else \
                [sys.executable, "-m", "gpuplan.cli", "recommend", str(f), "--json"]
            times = []
            for _ in range(3):
                t = time.perf_counter()
                subprocess.run(cmd, capture_output=True, check=False, env=env)
                times.append(time.perf_counter() - t)
            out[name] = statistics.median(times)
    return out


def _ms(rows: list, i: int) -> float:
    return statistics.median(r[i] for r in rows) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", help="src folder of the tree to compare with (run alternately)")
    ap.add_argument("--runs", type=int, default=RUNS)
    args = ap.parse_args()
    res = in_process(args.runs, args.baseline)
    here = str(Path(__file__).resolve().parents[1] / "src")
    cli = cold_cli(here)
    cli_base = cold_cli(args.baseline) if args.baseline else {}
    head = ["# recommend() speed", "",
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; median of {args.runs} warm runs per case over the whole bundled catalog "
            "(wall and CPU time of the process)."]
    if args.baseline:
        head += [f"Before = `{args.baseline}`, after = this tree; both ran in worker processes, alternately, under "
                 "the same load (the machine is shared: absolute times move with it, the ratios much less)."]
        table = ["| workload | before ms | after ms | ratio | before CPU ms | after CPU ms | CPU ratio | estimates "
                 "before -> after | candidates after |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, r in res.items():
            b, a = r["before"], r["after"]
            table.append(f"| {name} | {_ms(b, 1):.0f} | {_ms(a, 1):.0f} | {_ms(a, 1) / _ms(b, 1):.2f} | {_ms(b, 0):.0f} | "
                         f"{_ms(a, 0):.0f} | {_ms(a, 0) / _ms(b, 0):.2f} | {b[0][2]['estimates']} -> "
                         f"{a[0][2]['estimates']} | {a[0][2]['candidates']} |")
    else:
        table = ["| workload | median ms | max ms | CPU ms | instance types | candidates | estimates |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for name, r in res.items():
            a = r["after"]
            st = a[0][2]
            table.append(f"| {name} | {_ms(a, 1):.0f} | {max(x[1] for x in a) * 1000:.0f} | {_ms(a, 0):.0f} | "
                         f"{st['instance_types']} | {st['candidates']} | {st['estimates']} |")
    cli_lines = ["", "Cold CLI (`gpuplan recommend FILE --json` in a fresh process, median of 3):", ""]
    for name, t in cli.items():
        extra = f" (before: {cli_base[name]:.2f} s)" if name in cli_base else ""
        cli_lines.append(f"- {name}: {t:.2f} s{extra}")
    out = head + [""] + table + cli_lines + ["", "Targets: < 300 ms median in-process, < 2.5 s cold CLI."]
    path = Path(__file__).parent / "results" / "recommend_speed.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    print("\n".join(out))


if __name__ == "__main__":
    main()
