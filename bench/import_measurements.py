"""Bring a shared measurement file (the schema of ../shared/validation) into bench/data, one copy per row.

Usage: python bench/import_measurements.py SOURCE.csv [--out bench/data/measurements-dev2.csv]

- A row that repeats one already in bench/data (same model, task, quantization, GPU, batch, lengths and
  metric kind, value within 3 % once both are expressed in the same unit) is left out: one copy per row.
- Groups transcribed from a table the bench already has keep that table's group name (GROUP_ALIASES), so
  leave-one-group-out leaves the whole table out at once.
The rules are data (below); the report (bench/results/accuracy.md) scores whatever the file holds.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent
# dev2 group -> the bench group of the same source table
GROUP_ALIASES = {
    "q3mem": "q3hf", "q3memq": "q3hf", "q3tps": "q3hf",       # Qwen3 speed benchmark (Transformers rows)
    "q2mem": "q2hf",                                          # Qwen2 speed benchmark (Transformers)
    "nemo": "nemo2407", "nemoft": "nemo2407",                 # NeMo 24.07 performance summary
    "ttmem": "torchtune", "tttps": "torchtune",               # torchtune README 'Memory and training speed'
    "ttablmem": "ttflags", "ttabltps": "ttflags",             # torchtune README 'Optimization flags'
    "peftdocs": "peftdist",                                   # PEFT DeepSpeed / FSDP docs
    "qw1ftmem": "qwen1ft", "qw1ftspd": "qwen1ft",             # Qwen-1 README 'Profiling of Memory and Speed'
    "llama3tf": "llama3", "llama1tps": "llama1",              # Llama 3 and LLaMA papers
}
SPEED_PER_TOKEN = {"output_tokens_per_s", "total_tokens_per_s", "max_output_tokens_per_s"}


def _f(x: str) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def comparable(r: dict[str, str]) -> tuple[tuple, float] | None:
    """(conditions, value in a common unit) of a row: throughput rows as generated tokens/s."""
    value = _f(r["value"])
    if value is None:
        return None
    metric = r["metric"]
    kind = "memory" if metric.startswith("peak_mem") else metric
    if metric in ("step_time_s", "train_samples_per_s"):
        kind = "samples"  # one optimizer step of global_batch sequences = global_batch / samples per second
        gb = _f(r["global_batch"])
        if metric == "step_time_s":
            if not gb or not value:
                return None
            value = gb / value
    if metric in SPEED_PER_TOKEN:
        kind = "tokens"
        p, o = _f(r["prompt_tokens"]) or 0.0, _f(r["output_tokens"]) or 0.0
        if metric == "total_tokens_per_s" and p + o:
            value *= o / (p + o)
    gpu = (r["gpu"] or "").split("-")[0].upper()
    key = (r["model"].lower(), r["task"], r["quantization"] or "none", gpu, r["gpu_count"] or "1",
           r["micro_batch"] or "", r["seq_len"] or "", r["prompt_tokens"] or "", r["output_tokens"] or "",
           kind, metric if kind == "memory" else "")
    return key, value


def is_duplicate(r: dict[str, str], known: dict[tuple, list[float]]) -> bool:
    c = comparable(r)
    if c is None:
        return False
    key, value = c
    return any(abs(value - v) <= 0.03 * max(abs(v), 1e-9) for v in known.get(key, ()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "data" / "measurements-dev2.csv")
    args = ap.parse_args(argv)
    known: dict[tuple, list[float]] = {}
    for path in sorted((HERE / "data").glob("*.csv")):
        if path.resolve() == args.out.resolve():
            continue
        with open(path, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                c = comparable(r)
                if c:
                    known.setdefault(c[0], []).append(c[1])
    with open(args.source, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    kept, dropped = [], 0
    for r in rows:
        if is_duplicate(r, known):
            dropped += 1
            continue
        r["group"] = GROUP_ALIASES.get(r["group"], r["group"])
        kept.append(r)
    with open(args.out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    print(f"{len(kept)} rows written to {args.out}, {dropped} duplicates of bench/data rows left out")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
