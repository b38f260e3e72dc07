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
    from gpuplan.workload import load_workload, resolve_defaults

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
    text = "\n".join(lines) + "\n"
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "speed.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
