"""Serving files: serve.sh (vLLM), serve-sglang.sh, healthcheck.sh. The systemd unit is in infra.

Engine flags: https://docs.vllm.ai/en/latest/configuration/engine_args.html and
https://docs.sglang.ai/backend/server_arguments.html .
"""

from __future__ import annotations

from gpuplan.render.bundle.context import SGLANG_KV, VLLM_DTYPE, VLLM_KV, VLLM_QUANT, Ctx
from gpuplan.render.bundle.safe import Safe
from gpuplan.render.bundle.templates import render


def _notes(c: Ctx) -> tuple[str | None, str | None]:
    quant_note = kv_note = None
    if c.quantization in ("int8", "int4"):
        quant_note = (f"Quantization {c.quantization} (generic weight-only): serve a pre-quantized checkpoint "
                      "(GPTQ, AWQ or compressed-tensors); vLLM reads its method from config.json.")
    if c.kv_cache_dtype == "int8":
        kv_note = "vLLM has no int8 KV cache; fp8 (--kv-cache-dtype fp8) is the nearest and halves it the same way."
    return quant_note, kv_note


def engine_values(c: Ctx) -> dict:
    """Flag values shared by the vLLM and SGLang scripts and the Kubernetes manifests."""
    quant_note, kv_note = _notes(c)
    return {
        "vllm_quant": VLLM_QUANT.get(c.quantization),
        "vllm_kv": VLLM_KV.get(c.kv_cache_dtype, "auto"),
        "sglang_kv": SGLANG_KV.get(c.kv_cache_dtype, "auto"),
        "vllm_dtype": VLLM_DTYPE.get(c.precision, "auto"),
        "quant_note": Safe(quant_note) if quant_note else None,
        "kv_note": Safe(kv_note) if kv_note else None,
    }


def vllm_args(c: Ctx) -> list[str]:
    """`vllm serve` arguments after the model (for the Kubernetes Deployment)."""
    v = engine_values(c)
    args = ["--served-model-name", c.slug, "--host", "0.0.0.0", "--port", str(c.serve_port),
            "--tensor-parallel-size", str(c.tp), "--pipeline-parallel-size", str(c.pp),
            "--max-model-len", str(c.max_model_len), "--gpu-memory-utilization", str(c.gpu_mem_util),
            "--max-num-seqs", str(c.max_num_seqs), "--dtype", v["vllm_dtype"], "--kv-cache-dtype", v["vllm_kv"]]
    if v["vllm_quant"]:
        args += ["--quantization", v["vllm_quant"]]
    if v["vllm_quant"] == "bitsandbytes":
        args += ["--load-format", "bitsandbytes"]
    return args


def files(c: Ctx) -> dict[str, str]:
    v = engine_values(c)
    return {
        "serve.sh": render("serve.sh.j2", c=c, **v),
        "serve-sglang.sh": render("serve-sglang.sh.j2", c=c, **v),
        "healthcheck.sh": render("healthcheck.sh.j2", c=c),
    }
