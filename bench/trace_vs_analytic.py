"""Exact mode vs the analytic estimator: parameters, FLOPs per token and peak allocated memory.

Usage: python bench/trace_vs_analytic.py [--quick] [--out bench/results/trace_vs_analytic.md] [--only NAME ...]

Runs ``gpuplan.estimate.tracing.trace.trace_estimate`` (torch fake tensors + MemTracker, CPU only) on a few
small configs (and one 7B shape unless ``--quick``) and writes one table row per case with the
trace / analytic ratios. The analytic peak is compared without its cuBLAS/flash workspace term,
which the trace cannot see. Needs the ``gpuplan[trace]`` extra (torch, transformers; peft for the
LoRA row).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from gpuplan.errors import GpuplanError
from gpuplan.units import GIB
from gpuplan.workload import parse_workload

HERE = Path(__file__).resolve().parent

# Llama-style 12 x 768 (GPT-2-small widths, gated MLP 2048, vocab 32000, tied): 109,529,856 params
# (../shared/facts/ecosystem-notes.md Q2a).
L110M = {"model_type": "llama", "hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12,
         "num_attention_heads": 12, "num_key_value_heads": 12, "vocab_size": 32000, "tie_word_embeddings": True}
# Llama-2-7B shape (huggingface.co/meta-llama/Llama-2-7b-hf config.json): 6,738,415,616 params.
L7B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
       "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000, "tie_word_embeddings": False}
# A small Qwen3-MoE shape (8 experts, top-2).
MOE = {"model_type": "qwen3_moe", "hidden_size": 512, "intermediate_size": 1536, "moe_intermediate_size": 384,
       "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
       "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000, "tie_word_embeddings": False}

PURE = {"framework": "transformers", "optimizer": "adamw"}  # pure bf16, fused AdamW
CASES: list[tuple[str, dict]] = [
    ("110M full bf16 s512 b1", {"model": L110M, "task": "full", "seq_len": 512, "batch_size": 1,
                                "grad_checkpointing": False, **PURE}),
    ("110M full bf16 s2048 b1", {"model": L110M, "task": "full", "seq_len": 2048, "batch_size": 1,
                                 "grad_checkpointing": False, **PURE}),
    ("110M full bf16 s2048 b4 ckpt", {"model": L110M, "task": "full", "seq_len": 2048, "batch_size": 4,
                                      "grad_checkpointing": True, **PURE}),
    ("110M full bf16 s2048 b1 foreach", {"model": L110M, "task": "full", "seq_len": 2048, "batch_size": 1,
                                         "grad_checkpointing": False, "framework": "transformers",
                                         "optimizer": "adamw-foreach"}),
    ("110M full bf16 s2048 b1 eager", {"model": L110M, "task": "full", "seq_len": 2048, "batch_size": 1,
                                       "grad_checkpointing": False, "flash_attention": False, **PURE}),
    ("110M full AMP s2048 b8", {"model": L110M, "task": "full", "seq_len": 2048, "batch_size": 8,
                                "grad_checkpointing": False, "framework": "deepspeed"}),
    ("110M lora r16 s2048 b4", {"model": L110M, "task": "lora", "seq_len": 2048, "batch_size": 4,
                                "grad_checkpointing": False, "framework": "transformers",
                                "lora": {"rank": 16, "targets": "all-linear"}}),
    ("110M inference p2048 b4", {"model": L110M, "task": "inference", "prompt_tokens": 2048, "batch_size": 4}),
    ("MoE 4L 8e top2 s1024 b2", {"model": MOE, "task": "full", "seq_len": 1024, "batch_size": 2,
                                 "grad_checkpointing": False, **PURE}),
    ("7B full bf16 s2048 b1", {"model": L7B, "task": "full", "seq_len": 2048, "batch_size": 1,
                               "grad_checkpointing": False, **PURE}),
    ("7B full bf16 s2048 b1 ckpt", {"model": L7B, "task": "full", "seq_len": 2048, "batch_size": 1,
                                    "grad_checkpointing": True, **PURE}),
    ("7B inference p2048 b1", {"model": L7B, "task": "inference", "prompt_tokens": 2048, "batch_size": 1}),
    ("Qwen2.5-7B full bf16 s2048 b1", {"model": "qwen2.5-7b", "task": "full", "seq_len": 2048, "batch_size": 1,
                                       "grad_checkpointing": False, **PURE}),
]
SLOW = {name for name, _ in CASES if "7B" in name}


def run_case(name: str, data: dict) -> dict:
    from gpuplan.estimate.tracing.trace import trace_estimate

    t0 = time.perf_counter()
    r = trace_estimate(parse_workload(data))
    a, c = r["analytic"], r["comparison"]
    return {
        "name": name, "params": r["params_exact"], "params_ratio": c["params_ratio"],
        "flops_tok": r["flops_per_token"], "flops_tok_analytic": a["hardware_flops_per_token"],
        "flops_ratio": c["flops_per_token_ratio"],
        "peak": r["memory"]["peak_allocated_bytes"], "peak_analytic": a["peak_allocated_bytes"] - a["workspace_bytes"],
        "peak_ratio": c["peak_ratio"], "phase": a["peak_phase"],
        "breakdown": r["memory"]["breakdown"], "end_fwd": (r["memory"].get("end_of_forward") or {}),
        "components": a["components"], "wall_s": time.perf_counter() - t0,
    }


def _gib(x: float) -> str:
    return f"{x / GIB:.3f}"


def render(rows: list[dict]) -> str:
    out = ["# Exact mode (trace) vs analytic estimate", "",
           "Generated by `python bench/trace_vs_analytic.py` (torch fake tensors + MemTracker on CPU; one device,",
           "no parallelism). Ratios are trace / analytic. The analytic peak is `peak_allocated_bytes` less its",
           "32 MiB cuBLAS/flash workspace term (the trace sees tensors only). FLOPs: torch FlopCounterMode",
           "conventions (non-causal attention, SDPA backward 2.5x forward) vs the analytic 6N + 12Lhs",
           "(+ one forward with full checkpointing).", "",
           "| case | params | FLOPs/token trace | analytic | ratio | peak GiB trace | analytic | ratio | analytic phase | wall s |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['name']} | error: {r['error']} |||||||||")
            continue
        out.append(f"| {r['name']} | {r['params']:,} | {r['flops_tok']:.4g} | {r['flops_tok_analytic']:.4g} | "
                   f"{r['flops_ratio']:.3f} | {_gib(r['peak'])} | {_gib(r['peak_analytic'])} | {r['peak_ratio']:.3f} | "
                   f"{r['phase']} | {r['wall_s']:.1f} |")
    out += ["", "## Breakdowns (GiB)", "",
            "Trace: MemTracker categories at the peak (param, grad, opt, act, temp) and the activations alive at the",
            "end of the forward. Analytic: its components at its peak phase.", ""]
    for r in rows:
        if "error" in r:
            continue
        tb = ", ".join(f"{k} {_gib(v)}" for k, v in r["breakdown"].items() if v)
        ef = r["end_fwd"].get("breakdown", {}) if r["end_fwd"] else {}
        efs = f"; end of forward: act {_gib(ef.get('act', 0))}" if ef else ""
        ab = ", ".join(f"{k} {_gib(v)}" for k, v in r["components"].items() if v)
        out.append(f"- **{r['name']}** trace: {tb}{efs}. Analytic: {ab}.")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results" / "trace_vs_analytic.md"))
    ap.add_argument("--quick", action="store_true", help="skip the 7B rows (about 40 s on 2 cores)")
    ap.add_argument("--only", nargs="*", help="case names (substring match)")
    args = ap.parse_args(argv)
    rows = []
    for name, data in CASES:
        if args.quick and name in SLOW:
            continue
        if args.only and not any(o in name for o in args.only):
            continue
        try:
            row = run_case(name, data)
        except GpuplanError as err:
            row = {"name": name, "error": f"{err.message} ({err.hint})"}
        rows.append(row)
        if "error" in row:
            print(f"{name}: {row['error']}", file=sys.stderr)
        else:
            print(f"{name}: params {row['params']:,} flops ratio {row['flops_ratio']:.3f} "
                  f"peak {_gib(row['peak'])} GiB ratio {row['peak_ratio']:.3f} ({row['wall_s']:.1f} s)", file=sys.stderr)
    text = render(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
