"""A matrix of bundles over every launcher, engine and non-LLM stack, in mainland and other regions, rendered from the
scenario plans (tests/bundle/scenarios.py) with one change each: the requirements resolution and the environment
tests read it."""

from __future__ import annotations

import json
from collections.abc import Callable

from gpuplan.render.bundle import render_bundle

from .scenarios import inputs


def _variant(base: str, workload: dict | None = None, plan: dict | None = None, estimate: dict | None = None,
             region: str | None = None) -> dict[str, str]:
    p, w, e = inputs(base)
    p = json.loads(json.dumps(p))
    e = json.loads(json.dumps(e))
    for key, value in (plan or {}).items():
        if isinstance(value, dict):
            p.setdefault(key, {}).update(value)
        else:
            p[key] = value
    for key, value in (estimate or {}).items():
        e.setdefault(key, {}).update(value)
    if region:
        p["region"] = p["price_region"] = region
    if workload:
        w = w.model_copy(update=workload)
    return render_bundle(p, w, e)


# (name, files) for the matrix: every launcher, engine and non-LLM stack, mainland and elsewhere.
MATRIX: dict[str, Callable[[], dict[str, str]]] = {
    "lora-torchrun": lambda: _variant("lora_single"),
    "lora-torchrun-singapore": lambda: _variant("lora_single", region="ap-southeast-1"),
    "qlora-bitsandbytes": lambda: _variant("spot_job"),
    "full-deepspeed-zero3": lambda: _variant("two_node"),
    "full-adamw8bit": lambda: _variant("lora_single", workload={"task": "full", "optimizer": "adamw-8bit"}),
    "full-fsdp": lambda: _variant("two_node", plan={"parallel": {"launcher": "fsdp", "zero": 3}},
                                  estimate={"parallel": {"fsdp": "full_shard", "zero": 3}}),
    "full-megatron": lambda: _variant("two_node", plan={"parallel": {"launcher": "megatron", "tp": 8, "pp": 2,
                                                                     "dp": 1, "zero": 1}},
                                      estimate={"parallel": {"tp": 8, "pp": 2, "dp": 1, "zero": 1}}),
    "lora-torchrun-hybrid": lambda: _variant("lora_single", workload={"model": "Qwen/Qwen3-Next-80B-A3B-Instruct"},
                                             estimate={"model": {"linear_attention_layers": 36}}),
    "full-megatron-hybrid": lambda: _variant("two_node", workload={"model": "Qwen/Qwen3-Next-80B-A3B-Instruct"},
                                             plan={"parallel": {"launcher": "megatron", "tp": 8, "pp": 2, "dp": 1,
                                                                "zero": 1}},
                                             estimate={"parallel": {"tp": 8, "pp": 2, "dp": 1, "zero": 1},
                                                       "model": {"linear_attention_layers": 36}}),
    "serve-vllm": lambda: _variant("vllm_service"),
    "serve-sglang": lambda: _variant("vllm_service", plan={"parallel": {"engine": "sglang"}}),
    "sdxl-online": lambda: _variant("vllm_service", workload={"model": "stabilityai/stable-diffusion-xl-base-1.0"},
                                    estimate={"model": {"kind": "diffusion"}}),
    "sdxl-batch": lambda: _variant("vllm_service", workload={"model": "stabilityai/stable-diffusion-xl-base-1.0",
                                                             "serving": None},
                                   estimate={"model": {"kind": "diffusion"}}),
    "video-batch": lambda: _variant("vllm_service", workload={"model": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers",
                                                              "serving": None},
                                    estimate={"model": {"kind": "diffusion"}}),
    "whisper": lambda: _variant("vllm_service", workload={"model": "openai/whisper-large-v3", "serving": None},
                                estimate={"model": {"kind": "speech"}}),
    "embeddings-batch": lambda: _variant("vllm_service", workload={"model": "BAAI/bge-m3", "serving": None,
                                                                   "framework": "transformers"},
                                         estimate={"model": {"kind": "encoder"}}),
}
