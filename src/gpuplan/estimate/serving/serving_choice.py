"""The serving configuration of an LLM on a given machine: weight format as published, engine and KV-cache dtype.

One set of rules for both entry points: ``gpuplan recommend`` applies them to every candidate layout
(plan/serving/serving_config.py) and ``gpuplan estimate`` to the machine and layout it is given
(:func:`choose_serving`), so that ``estimate`` of a plan's machine and layout reproduces the plan's figures.

- **Weight format** (:func:`weight_format`): a model published in MXFP4 (gpt-oss) is served so where the engine
  has kernels for it (``MXFP4_CC``), else upcast to 16-bit. A model published in FP8 (``ModelSpec.native_dtype``:
  DeepSeek-V3/R1, block-wise e4m3) is served as published where the GPU runs it: FP8 GEMMs (W8A8) on
  Ada/Hopper/Blackwell (compute capability >= 8.9); weight-only FP8 through vLLM's FP8 Marlin kernels (W8A16)
  on compute capability >= 7.5 for dense models; otherwise upcast to BF16 (DeepSeek's
  ``inference/fp8_cast_bf16.py``; SGLang's DeepSeek guide lists "BF16 upcast 4 x 8 x A100"), because FP8 MoE
  kernels below SM89 are unconfirmed (vLLM issue #13885) and SGLang cannot load FP8 checkpoints on Ampere
  (sgl-project/sglang #7715). Other quantizations only when the workload asks for them.
- **KV cache**: 16-bit, or FP8 where engine and GPU run it (vLLM ``--kv-cache-dtype fp8``, SGLang
  ``fp8_e4m3``; compute capability >= 8.9).
- **Engine**: vLLM by default; SGLang where its constants allow the gain (estimate.serving.inference.
  engine_speedup_bound) and it serves ``SWITCH_GAIN`` more requests/s.
- **The rule** (:func:`choose`): a choice that changes numerics or the engine (an FP8 KV cache, another
  engine) is taken only when it serves at least ``SWITCH_GAIN`` (10 %) more requests/s than the plain
  configuration, or when the plain one does not fit: about the estimator's speed error (README).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

SEARCHED_ENGINES = ("vllm", "sglang")          # what the bundle launches (serve.sh, serve-sglang.sh)
DEFAULT_ENGINE = "vllm"
SWITCH_GAIN = 0.10
FP8_CC = 8.9            # FP8 tensor cores: Ada, Hopper, Blackwell
MARLIN_FP8_CC = 7.5     # vLLM FP8 Marlin (W8A16), dense layers
FP8_GEMM_ENGINES = frozenset({"vllm", "sglang", "trtllm"})
MARLIN_FP8_ENGINES = frozenset({"vllm"})
# Engines that serve an MXFP4 checkpoint (gpt-oss) as published, from this compute capability: vLLM on Ampere and
# Ada through Marlin MXFP4 (weight-only), Triton kernels on Hopper, FlashInfer on Blackwell (vllm-project/recipes
# OpenAI/GPT-OSS.md: "GPT-OSS works on Ampere devices by default ... Marlin MXFP4 MoE"; vLLM mxfp4.py backend
# selection); SGLang and TensorRT-LLM from Hopper (unconfirmed below it). Elsewhere the weights are upcast to 16-bit.
MXFP4_CC = {"vllm": 8.0, "sglang": 9.0, "trtllm": 9.0}
FP8_KV_ENGINES = frozenset({"vllm", "sglang", "trtllm"})
SERVING_FIELDS = ("quantization", "framework", "kv_cache_dtype")

T = TypeVar("T")


def compute_capability(gpu) -> float:
    try:
        return float(gpu.compute_capability or 0.0)
    except (TypeError, ValueError):
        return 0.0


def runtime_precision(gpu, precision: str) -> str:
    """The 16-bit type that runs on this GPU: fp16 for bf16 where the GPU has no BF16 (V100, T4: vLLM and SGLang
    take ``--dtype float16`` there, render/bundle/serving.py engine_dtype), else the workload's precision. One value
    for the plan's record, its estimate and the launch flag."""
    if precision == "bf16" and gpu.peak_tflops("bf16") is None:
        return "fp16"
    return precision


def weight_format(model, gpu, quantization: str, precision: str, engine: str) -> tuple[str, str, str]:
    """(workload quantization for the estimate, weight format shown, path) on this GPU and engine."""
    precision = runtime_precision(gpu, precision)
    native = getattr(model, "native_dtype", None)
    if native == "fp8" and quantization in ("none", "fp8"):
        cc = compute_capability(gpu)
        if cc >= FP8_CC and engine in FP8_GEMM_ENGINES:
            return "fp8", "fp8", "native"
        if cc >= MARLIN_FP8_CC and engine in MARLIN_FP8_ENGINES and getattr(model, "moe", None) is None:
            return "fp8", "fp8", "marlin"
        return "none", ("fp16" if precision == "fp16" else "bf16"), "upcast"
    if native == "mxfp4" and quantization in ("none", "mxfp4"):
        if compute_capability(gpu) >= MXFP4_CC.get(engine, math.inf):
            return "mxfp4", "mxfp4", "native"
        return "none", ("fp16" if precision == "fp16" else "bf16"), "upcast"
    if quantization == "none":
        return "none", precision, "16-bit"
    return quantization, quantization, "quantized"


def refuse_foreign_mxfp4(model, task: str, quantization: str | None, allowed: Sequence[str] | None = None) -> None:
    """MXFP4 is a published checkpoint's own format (gpt-oss: its routed experts), served as it is; one clear error
    for asking it of another model, or for training on it (PEFT and the trainers dequantize it to bf16), whether the
    workload sets it or ``allowed`` (constraints.quantization, recommend's search) lists it."""
    field = "quantization" if quantization == "mxfp4" else "constraints.quantization" if "mxfp4" in (allowed or ()) \
        else None
    if field is None:
        return
    from gpuplan.errors import GpuplanError
    from gpuplan.i18n import _

    if getattr(model, "native_dtype", None) != "mxfp4":
        raise GpuplanError(_("{model} has no MXFP4 checkpoint: MXFP4 is the format gpt-oss is published in, served as "
                             "it is.").format(model=getattr(model, "id", model)),
                           hint=_("For 4-bit weights use awq or gptq-int4; for 8-bit, fp8."), field=field)
    if task != "inference":
        raise GpuplanError(_("Training on MXFP4 weights is not modelled: the fine-tuning stacks dequantize {model} to "
                             "bf16 first.").format(model=model.id),
                           hint=_("Set quantization none (bf16 weights), or bnb-nf4 for QLoRA."), field=field)


def kv_options(gpu, engine: str, given: str | None) -> tuple[str, ...]:
    """The KV-cache dtypes to try: the workload's, else 16-bit and FP8 where engine and GPU run it."""
    if given is not None:
        return (given,)
    if engine in FP8_KV_ENGINES and compute_capability(gpu) >= FP8_CC:
        return ("auto", "fp8")
    return ("auto",)


def choose(items: Sequence[T], speed: Callable[[T], float], is_plain: Callable[[T], bool],
           memory: Callable[[T], float]) -> tuple[T, str]:
    """The configuration to run, and why ("plain" | "gain" | "needed"): the fastest plain one unless another
    serves SWITCH_GAIN more requests/s ("gain") or no plain one fits ("needed"). Ties: less memory."""
    def key(c: T) -> tuple[float, float]:
        return speed(c), -memory(c)

    best_any = max(items, key=key)
    plain = [c for c in items if is_plain(c)]
    if not plain:
        return best_any, "needed"
    best_plain = max(plain, key=key)
    if best_any is not best_plain and speed(best_any) >= speed(best_plain) * (1.0 + SWITCH_GAIN):
        return best_any, "gain"
    return best_plain, "plain"


def switch_engine(current_speed: float, other_speed: float) -> bool:
    """Whether another engine earns its place: SWITCH_GAIN more requests/s on the same layout."""
    return other_speed >= current_speed * (1.0 + SWITCH_GAIN)


def choose_serving(given, resolved, model, system, layout, estimate_fn, headroom: float = 0.02):
    """``gpuplan estimate`` of an LLM serving workload on a fixed machine and layout, with the fields the workload
    leaves unset (weight format, engine, KV dtype) chosen by the recommender's rules. ``estimate_fn(w)`` estimates
    a workload variant on the machine. Returns (estimate, notes) or None when nothing is left to choose."""
    from gpuplan.errors import GpuplanError
    from gpuplan.estimate.serving.inference import engine_speedup_bound

    free = {f for f in SERVING_FIELDS if getattr(given, f, None) in (None, "auto")}
    if getattr(given, "quantization", None) in ("none", "mxfp4"):   # the weights as published (recommend's rule)
        free.add("quantization")
    if not free:
        return None
    gpu = system.gpu
    precision = resolved.precision or "bf16"
    base_q = resolved.quantization or "none"
    moe = getattr(model, "moe", None) is not None
    # data-parallel attention runs on SGLang, or on vLLM as DP + EP for MoE models (plan/serving/serving_config.py)
    first = resolved.framework if "framework" not in free else (
        DEFAULT_ENGINE if not layout.dp_attention or moe else "sglang")

    def variant(engine: str, kv: str):
        q = weight_format(model, gpu, base_q, precision, engine)[0] if "quantization" in free else base_q
        try:
            w = resolved.with_updates(quantization=q, framework=engine, kv_cache_dtype=kv,
                                      precision=runtime_precision(gpu, precision))
        except GpuplanError:
            return None
        plain = (kv == "auto" or "kv_cache_dtype" not in free) and (engine == DEFAULT_ENGINE or "framework" not in free)
        return engine, kv, plain, estimate_fn(w)

    def fits(opt) -> bool:
        e = opt[3]
        return e.memory.per_gpu_bytes <= e.memory.capacity_bytes * (1.0 - headroom) and \
            float(e.performance.get("max_requests_per_s") or 0.0) > 0.0

    def speed(opt) -> float:
        return float(opt[3].performance.get("max_requests_per_s") or 0.0)

    kvs = kv_options(gpu, first, None if "kv_cache_dtype" in free else resolved.kv_cache_dtype)
    opts = [o for o in (variant(first, kv) for kv in kvs) if o is not None]
    ok = [o for o in opts if fits(o)]
    if not ok:
        return (opts[0][3], []) if opts else None
    best, _why = choose(ok, speed, lambda o: o[2], lambda o: float(o[3].memory.per_gpu_bytes))
    if "framework" in free:
        for engine in SEARCHED_ENGINES:
            if engine == best[0] or (best[1] != "auto" and engine not in FP8_KV_ENGINES):
                continue
            if layout.dp_attention and engine == "vllm" and not moe:
                continue
            if engine_speedup_bound(best[0], engine) < 1.0 + SWITCH_GAIN:
                continue
            other = variant(engine, best[1])
            if other is not None and fits(other) and switch_engine(speed(best), speed(other)):
                best = other
    return best[3], []


def as_recommended(given, resolved, model, system, layout, est, notes: list[str], estimate_fn):
    """``gpuplan estimate``'s serving configuration: :func:`choose_serving` for the fields the workload leaves
    unset, its "assumed ..." notes for those fields replaced by one line saying what was chosen."""
    from gpuplan.i18n import _

    got = choose_serving(given, resolved, model, system, layout, estimate_fn)
    if got is None:
        return est, notes
    chosen = got[0]
    cw = chosen.workload
    dropped = {_("assumed {key} {value}").format(key=k, value=getattr(resolved, k)) for k in SERVING_FIELDS}
    kept = [n for n in notes if n not in dropped]
    kept.append(_("serving: weights {quantization}, engine {engine}, KV cache {kv}: what `gpuplan recommend` runs on "
                  "this machine and layout (weights as published where the GPU runs them)").format(
        quantization=cw.quantization if cw.quantization not in (None, "none") else cw.precision,
        engine=cw.framework, kv=cw.kv_cache_dtype or "auto"))
    return chosen, kept
