"""Speed of the serving configuration search and of the bounded queueing (issues 21 and 24).

Run: python bench/serving_search.py [--baseline SRC]  -> writes bench/results/serving_search.md
(SRC: e.g. `git archive <branch point> src | tar -x -C /tmp/base` then `--baseline /tmp/base/src`)

- in-process: median of warm `recommend()` runs over the bench cases of bench/recommend_speed.py plus
  DeepSeek-R1 serving (the issue-21 workload);
- cold CLI: `python -m gpuplan.cli recommend FILE --json` for DeepSeek-R1 and for 1e5 and 1e7 requests/s
  (issue 24: within 10 s);
- with ``--baseline SRC`` the same figures for another source tree (e.g. the main branch's ``src``), and
  the ratio.

- issue 29: the top plan of the serving cases the issue names (Qwen2.5-72B GPTQ on L20 at 20 req/s, DeepSeek-R1
  for 8 concurrent 30k-token users, the 0.2 / 2 req/s cost case): GPUs, replicas, batch limit, TTFT p50 / p90,
  TPOT and cost per 1M output tokens, now and (with ``--baseline``) before.

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
# issue 29's serving cases (docs/recommender.md, "Serving: one latency model")
ISSUE29 = {
    "Qwen2.5-72B GPTQ-Int4 on L20, 20 req/s, TTFT 2 s": {
        "model": "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "task": "inference", "prompt_tokens": 1000,
        "output_tokens": 300, "serving": {"requests_per_s": 20, "ttft_ms": 2000}, "hardware": {"gpu": "L20-48GB"}},
    "Qwen2.5-72B GPTQ-Int4 on L20, 20 req/s, TTFT 5 s": {
        "model": "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "task": "inference", "prompt_tokens": 1000,
        "output_tokens": 300, "serving": {"requests_per_s": 20, "ttft_ms": 5000}, "hardware": {"gpu": "L20-48GB"}},
    "DeepSeek-R1, 8 concurrent users, 30k in / 2.7k out": {
        "model": "deepseek-ai/DeepSeek-R1", "task": "inference", "prompt_tokens": 30000, "output_tokens": 2700,
        "batch_size": 8},
    "Qwen2.5-7B, 0.2 req/s average, 2 req/s peak": {
        "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 1000, "output_tokens": 300,
        "serving": {"requests_per_s": 0.2, "peak_requests_per_s": 2}},
}
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
    return {"in_process": rows, "cli_s": cli, "load": os.getloadavg()[0], "issue29": issue29()}


def issue29() -> dict:
    """The top plan of each issue-29 case (figures, not times)."""
    from gpuplan.plan import recommend

    out = {}
    for name, wd in ISSUE29.items():
        rec = recommend(wd, top=1)
        p = rec.plans[0].to_dict() if rec.plans else None
        if p is None:
            out[name] = None
            continue
        s = p.get("serving") or {}
        out[name] = {"plan": f"{p['instance_count']} x {p['instance_type']}", "gpus": p["gpus_total"],
                     "replicas": p["replicas"], "max_num_seqs": s.get("max_num_seqs") or p["performance"].get(
                         "serving_batch"),
                     "ttft": f"{s.get('ttft_p50_s', p['performance'].get('ttft_s')) or 0:.2f} / "
                             f"{s.get('ttft_p90_s', p['performance'].get('ttft_s')) or 0:.2f}",
                     "tpot_ms": (s.get("tpot_s") or p["performance"].get("tpot_s") or 0) * 1000,
                     "per_1m": p.get("cost_per_million_output_tokens"), "monthly": p.get("monthly_cost")}
    return out


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
    lines += ["", "Targets: < 300 ms in-process median, < 2.5 s cold CLI, < 10 s for 1e5 and 1e7 requests/s.", "",
              "## Issue 29: the serving cases' top plans", "",
              "| case | plan | GPUs | replicas | max_num_seqs | TTFT p50 / p90 s | TPOT ms | per 1M output tokens |"
              " before: plan, GPUs, TTFT, per 1M |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in now["issue29"].items():
        b = (base or {}).get("issue29", {}).get(name)
        before = f"{b['plan']}, {b['gpus']}, {b['ttft']}, {b['per_1m'] or 0:,.2f}" if b else "-"
        lines.append(f"| {name} | {r['plan']} | {r['gpus']} | {r['replicas']} | {r['max_num_seqs']} | {r['ttft']} | "
                     f"{r['tpot_ms']:.1f} | {r['per_1m'] or 0:,.2f} | {before} |" if r else f"| {name} | no plan |")
    (HERE / "results" / "serving_search.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
