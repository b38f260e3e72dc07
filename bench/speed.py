"""Speed of the analytic path: one estimate in-process, and CLI start-up (`gpuplan gpus`, `estimate`).

Usage: python bench/speed.py   (writes bench/results/speed.md)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = {
    "7B LoRA on A10": {"model": "qwen2.5-7b", "task": "lora", "seq_len": 2048, "hardware": {"gpu": "A10"}},
    "70B serving TP4": {"model": "qwen2.5-72b", "task": "inference", "parallel": {"tp": 4},
                        "hardware": {"gpu": "A100-80GB", "count": 4}},
    "175B pretrain 1024 GPUs": {"model": "megatron-lm:gpt-175b", "task": "pretrain", "framework": "megatron",
                                "parallel": {"tp": 8, "pp": 16}, "hardware": {"gpu": "A100-80GB", "count": 1024}},
}


def time_inprocess(n: int = 200) -> list[tuple[str, float, float]]:
    from gpuplan.catalog.models import resolve_model
    from gpuplan.estimate.core import estimate_resolved
    from gpuplan.estimate.system import layout_from_workload, system_from_workload
    from gpuplan.workload_defaults import resolve_defaults
    from gpuplan.workload_loading import load_workload

    rows = []
    for name, wl in WORKLOADS.items():
        w, _ = resolve_defaults(load_workload(wl))
        model = resolve_model(w.model)
        system, _ = system_from_workload(w)
        layout = layout_from_workload(w, system.total_gpus, system.gpus_per_node)
        estimate_resolved(w, model, system, layout)  # warm caches
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            estimate_resolved(w, model, system, layout, with_suggestions=False)
            samples.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        from gpuplan.estimate.core import estimate

        for _ in range(20):
            estimate(wl)
        full = (time.perf_counter() - t0) / 20
        rows.append((name, statistics.median(samples) * 1e3, full * 1e3))
    return rows


def time_cli(args: list[str], n: int = 5) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gpuplan.cli", *args], capture_output=True, check=False)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


# Bad input must fail fast (issue 15): the tests only guard against hangs; the latency is measured here.
HOSTILE = {
    "YAML alias bomb in model: (484 bytes)": "model:\n  a: &a [x,x,x,x,x,x,x,x,x]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                             "  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                                             "  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                                             "  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n  h: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ntask: lora\n",
    "nesting 500 deep": "x: " + "[" * 500 + "]" * 500 + "\n",
    "5,000-digit integer": "model: qwen2.5-7b\nseq_len: " + "9" * 5000 + "\n",
    "!!int with an empty scalar": "model: qwen2.5-7b\nseq_len: !!int ''\n",
}


def time_hostile(tmp: Path, n: int = 5) -> list[tuple[str, float]]:
    """Median time to refuse each hostile workload file in-process (load_workload -> GpuplanError)."""
    from gpuplan import GpuplanError, load_workload

    rows = []
    for name, text in HOSTILE.items():
        path = tmp / "w.yaml"
        path.write_text(text)
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            try:
                load_workload(path)
            except GpuplanError:
                pass
            samples.append(time.perf_counter() - t0)
        rows.append((name, statistics.median(samples) * 1e3))
    return rows


def main() -> int:
    rows = time_inprocess()
    lines = ["# Speed of the analytic path", "", f"Machine: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
             "medians. `estimate_resolved` is the core call the recommender makes; `estimate()` adds parsing, "
             "defaults, catalog look-ups and fit suggestions.", "",
             "| workload | estimate_resolved (ms) | estimate() end to end (ms) |", "|---|---|---|"]
    lines += [f"| {n} | {a:.3f} | {b:.2f} |" for n, a, b in rows]
    lines += ["", "| CLI command | wall time (s) |", "|---|---|"]
    for args in (["--version"], ["gpus", "--json"], ["estimate", "--model", "qwen2.5-7b", "--task", "lora", "--gpu", "A10", "--json"]):
        lines.append(f"| gpuplan {' '.join(args)} | {time_cli(args):.2f} |")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        lines += ["", "| hostile workload file (refused with GpuplanError) | in-process (ms) |", "|---|---|"]
        lines += [f"| {n} | {ms:.1f} |" for n, ms in time_hostile(Path(tmp))]
    text = "\n".join(lines) + "\n"
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "speed.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
