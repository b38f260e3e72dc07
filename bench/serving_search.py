"""Speed of the serving configuration search and of the bounded queueing (issues 21 and 24).

Run: python bench/serving_search.py [--baseline SRC]  -> writes bench/results/serving_search.md
(SRC: e.g. `git archive <branch point> src | tar -x -C /tmp/base` then `--baseline /tmp/base/src`)

- in-process: median of warm `recommend()` runs over the bench cases of bench/recommend_speed.py plus
  DeepSeek-R1 serving (the issue-21 workload);
- cold CLI: `python -m gpuplan.cli recommend FILE --json` for DeepSeek-R1 and for 1e5 and 1e7 requests/s
  (issue 24: within 10 s);
- with ``--baseline SRC`` the same figures for another source tree (e.g. the main branch's ``src``), and
  the ratio.

Targets: < 300 ms in-process median, < 2.5 s cold CLI for the bench cases, < 10 s for 1e5 / 1e7 req/s.
On a shared machine wall time follows the load: the tables give CPU time (``time.process_time`` in
process, the children's user + system time for the CLI) beside the wall time, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
R1 = {"model": "deepseek-ai/DeepSeek-R1", "task": "inference", "prompt_tokens": 2048, "output_tokens": 1024,
      "serving": {"requests_per_s": 2, "ttft_ms": 3000, "tpot_ms": 100}}
HOSTILE = {f"Qwen2.5-7B serving {rate:g} req/s": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                                                  "serving": {"requests_per_s": rate, "ttft_ms": 2000}}
           for rate in (1e5, 1e7)}
RUNS = 7
CLI_TIMEOUT_S = 120


def measure() -> dict:
    """The figures for the gpuplan on sys.path (a JSON-able dict)."""
    sys.path.insert(0, str(HERE))
    from recommend_speed import CASES

    from gpuplan.plan import recommend

    cases = {**CASES, "DeepSeek-R1 serving 2 req/s": R1}
    rows = {}
    for name, wd in cases.items():
        recommend(wd)
        times, cpu = [], []
        for _ in range(RUNS):
            t, c = time.perf_counter(), time.process_time()
            rec = recommend(wd)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        rows[name] = {"median_ms": statistics.median(cpu) * 1000, "wall_ms": statistics.median(times) * 1000,
                      "min_ms": min(cpu) * 1000,
                      "estimates": rec.stats.get("estimates"), "top": rec.plans[0].instance_type if rec.plans else None}
    cli = {}
    with tempfile.TemporaryDirectory() as d:
        for name, wd in {"DeepSeek-R1 serving 2 req/s": R1, **HOSTILE}.items():
            f = Path(d) / "w.json"
            f.write_text(json.dumps(wd))
            times: list = []
            for _ in range(3):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                try:
                    subprocess.run([sys.executable, "-m", "gpuplan.cli", "recommend", str(f), "--json"],
                                   capture_output=True, check=False, timeout=CLI_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    times = [None]          # slower than the timeout: one run says enough
                    break
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            cli[name] = statistics.median(times) if times != [None] else None
    return {"in_process": rows, "cli_s": cli, "load": os.getloadavg()[0]}


def _secs(x) -> str:
    return f"> {CLI_TIMEOUT_S}" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="another gpuplan source tree to measure the same way")
    ap.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure_only:
        print(json.dumps(measure()))
        return
    now = measure()
    base = None
    if args.baseline:
        env = {**os.environ, "PYTHONPATH": args.baseline}
        out = subprocess.run([sys.executable, __file__, "--measure-only"], env=env, capture_output=True, text=True,
                             check=True, timeout=3600)
        base = json.loads(out.stdout.strip().splitlines()[-1])
    lines = ["# Serving search and queueing speed", "",
             f"Machine: {platform.machine()}, Python {platform.python_version()}, load average {now['load']:.1f} "
             f"(shared); in process: CPU time of {RUNS} warm runs, median / best (timeit's lower bound: the rest is "
             "other processes), median wall time in brackets; 3 cold CLI runs.",
             "", "| workload | CPU ms now | estimates | CPU ms before | estimates before | ratio (median) |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, r in now["in_process"].items():
        b = (base or {}).get("in_process", {}).get(name)
        ratio = f"{r['median_ms'] / b['median_ms']:.2f}" if b else "-"
        mine = f"{r['median_ms']:.0f} / {r['min_ms']:.0f} ({r['wall_ms']:.0f})"
        lines.append(f"| {name} | {mine} | {r['estimates']} | {b['median_ms']:.0f} / {b['min_ms']:.0f} "
                     f"({b['wall_ms']:.0f}) | {b['estimates']} | {ratio} |" if b else
                     f"| {name} | {mine} | {r['estimates']} | - | - | - |")
    lines += ["", "| cold CLI `recommend FILE --json`, CPU s (user + system) | now | before |", "|---|---:|---:|"]
    for name, s in now["cli_s"].items():
        b = (base or {}).get("cli_s", {}).get(name, "-")
        lines.append(f"| {name} | {_secs(s)} | {_secs(b) if base else '-'} |")
    lines += ["", "Targets: < 300 ms in-process median, < 2.5 s cold CLI, < 10 s for 1e5 and 1e7 requests/s."]
    (HERE / "results" / "serving_search.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
