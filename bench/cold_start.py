"""Cold-start benchmark: how long a fresh `gpuplan` process takes for `estimate` and `recommend`, as a ratio
of the bare CLI's start (`gpuplan --version`: Python, typer and the command table, nothing else).

Usage: python bench/cold_start.py [--runs 9] [--instructions] [--out bench/results/cold_start.md]

Each command runs in a new process, `--runs` times, after one warm-up run (so the bytecode and the compiled
data files, `<cache>/compiled/`, exist: what every run after the first one on a machine sees). It reports the
wall time and the CPU time (user + system of the child) per command, the minimum and the median, and the
ratios to the bare start: the targets are `estimate` within 2x and `recommend` within 4x (issue 32). On a busy
machine compare the CPU time (other processes stretch it much less than the wall time), or better the
instruction counts (``--instructions``). A
"first run" line measures the same commands with an empty cache folder (YAML parsed, then compiled).
hyperfine is used for the wall times when it is installed; the CPU times always come from this script.
``--instructions`` also counts the instructions each command executes under valgrind (callgrind), which no
other process changes: the steadiest ratio on a shared machine (slow: about a minute per command).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "bare (--version)": ["--version"],
    "estimate": ["estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10"],
    "recommend": ["recommend", str(ROOT / "examples" / "qwen2.5-7b-lora.yaml")],
}
TARGETS = {"estimate": 2.0, "recommend": 4.0}


def _env(cache_dir: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}   # bytecode as installed
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("COLUMNS", "120")
    if cache_dir is not None:
        env["GPUPLAN_CACHE_DIR"] = cache_dir
    return env


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one `python -m gpuplan.cli ARGS` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gpuplan.cli", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"gpuplan {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _hyperfine(args: list[str], runs: int, env: dict[str, str]) -> list[float] | None:
    exe = shutil.which("hyperfine")
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "h.json"
        cmd = " ".join([sys.executable, "-m", "gpuplan.cli", *args])
        subprocess.run([exe, "--warmup", "1", "--runs", str(runs), "--export-json", str(out), cmd], env=env,
                       check=True, capture_output=True)
        return list(json.loads(out.read_text())["results"][0]["times"])


def _instructions(args: list[str], env: dict[str, str]) -> float | None:
    """Instructions one `gpuplan ARGS` process executes (valgrind --tool=callgrind), or None without valgrind."""
    exe = shutil.which("valgrind")
    if exe is None:
        return None
    proc = subprocess.run([exe, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
                           "gpuplan.cli", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    for line in proc.stderr.splitlines():
        if "Collected :" in line:
            return float(line.rsplit(":", 1)[1].replace(",", "").strip())
    return None


def measure(runs: int, instructions: bool = False) -> dict[str, dict[str, float]]:
    env = _env()
    results: dict[str, dict[str, float]] = {}
    for name, args in COMMANDS.items():
        _run(args, env)   # warm-up: bytecode, the compiled data files
        walls, cpus = [], []
        for _ in range(runs):
            wall, cpu = _run(args, env)
            walls.append(wall)
            cpus.append(cpu)
        hf = _hyperfine(args, runs, env)
        if hf:
            walls = hf
        results[name] = {"wall_min": min(walls), "wall_median": statistics.median(walls), "cpu_min": min(cpus),
                         "cpu_median": statistics.median(cpus)}
        counted = _instructions(args, env) if instructions else None
        if counted is not None:
            results[name]["instructions"] = counted
    with tempfile.TemporaryDirectory() as cache:   # the first run on a machine: YAML parsed and compiled
        first = {name: _run(args, _env(cache))[1] for name, args in COMMANDS.items()}
    for name, cpu in first.items():
        results[name]["cpu_first"] = cpu
    return results


def report(results: dict[str, dict[str, float]], runs: int) -> str:
    bare = results["bare (--version)"]
    lines = ["# Cold start (bench/cold_start.py)", "",
             f"{runs} runs per command, each a new process, after one warm-up run; Python {platform.python_version()}, "
             f"{os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end. "
             "Ratios are to the bare start and use the median CPU time (user + system), which other processes on "
             "a busy machine stretch less than the wall time (shown as measured); the instruction counts below, "
             "when present, do not change with the load at all.", "",
             "| command | CPU median | CPU min | wall median | wall min | ratio (CPU median) | target | first run "
             "(CPU, empty cache) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        ratio = r["cpu_median"] / bare["cpu_median"]
        target = TARGETS.get(name)
        verdict = "" if target is None else (f"<= {target:g}x: {'met' if ratio <= target else 'missed'}")
        lines.append(f"| {name} | {r['cpu_median']:.3f} s | {r['cpu_min']:.3f} s | {r['wall_median']:.3f} s | "
                     f"{r['wall_min']:.3f} s | {ratio:.2f}x | {verdict} | {r['cpu_first']:.3f} s |")
    if all("instructions" in r for r in results.values()):
        lines += ["", "Instructions executed (valgrind callgrind; the same on an idle or a busy machine):", "",
                  "| command | instructions | ratio | target |", "|---|---|---|---|"]
        for name, r in results.items():
            ratio = r["instructions"] / bare["instructions"]
            target = TARGETS.get(name)
            verdict = "" if target is None else f"<= {target:g}x: {'met' if ratio <= target else 'missed'}"
            lines.append(f"| {name} | {r['instructions'] / 1e6:,.0f} M | {ratio:.2f}x | {verdict} |")
    lines += ["", "Commands: " + "; ".join(f"`gpuplan {' '.join(a)}`".replace(str(ROOT) + "/", "")
                                          for a in COMMANDS.values()) + ".", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cold_start.md")
    ns = ap.parse_args()
    results = measure(ns.runs, ns.instructions)
    text = report(results, ns.runs)
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
