"""Serving files, chosen by the model's kind.

- LLMs (decoder / encoder-decoder): serve.sh (vLLM), serve-sglang.sh, healthcheck.sh; the systemd unit
  is in infra. A quantized plan serves a pre-quantized checkpoint (data/quantized_checkpoints.yaml)
  and passes no ``--quantization`` flag, so vLLM reads the method from the checkpoint's config.json and
  picks its Marlin kernels (``--quantization awq`` on a BF16 repo fails with "Cannot find the config
  file for awq"; on an AWQ repo it forces the slow GEMM kernel): launch-notes 7.2.
  Multi-node replicas (TP x PP larger than one node): vLLM over a Ray cluster
  (``--distributed-executor-backend ray``), SGLang with ``--nnodes/--node-rank/--dist-init-addr``.
- Image diffusion models (SDXL, SD 1.5, SD3, FLUX, PixArt): generate_images.py, a diffusers batch script
  (DiffusionPipeline: the class the weights' model_index.json names) at the steps, pixels and dtype the plan estimated
  (image_launch, image_dtype). Video diffusion models (CogVideoX, Wan2.1,
  HunyuanVideo, LTX-Video): generate_videos.py, DiffusionPipeline + export_to_video with the plan's frames, size,
  steps, batch, offload and dtypes (video.py).
- Speech models (Whisper): transcribe.py, a faster-whisper batch transcription script
  (BatchedInferencePipeline, https://github.com/SYSTRAN/faster-whisper).
- Encoder-only models (embeddings) in a batch job: embed.py, sentence-transformers ``encode`` at the plan's batch, one
  process per GPU (https://sbert.net). As a service: serve.sh with vLLM's pooling runner (``--runner pooling``,
  https://docs.vllm.ai/en/v0.16.0/models/pooling_models/).

Engine flags: https://docs.vllm.ai/en/latest/configuration/engine_args.html and
https://docs.sglang.ai/backend/server_arguments.html .
"""

from __future__ import annotations

import json


from gpuplan.estimate.params import table
from gpuplan.estimate.serving.inference import pooling_batched_tokens
from gpuplan.render.bundle import video
from gpuplan.render.bundle.context import VLLM_DTYPE, Ctx
from gpuplan.render.bundle.context_model import catalog_spec
from gpuplan.render.bundle.safe import Safe
from gpuplan.render.bundle.templates import render
from gpuplan.render.bundle.node.environment import requirements_text
from gpuplan.render.bundle.node.nccl import nccl_env
from gpuplan.render.bundle.node.weights import QUANT_MARKERS, Checkpoint, checkpoint, fetch_model_script, model_dir

# Quantizations vLLM applies at load time to a BF16/FP16 checkpoint (dynamic FP8, bitsandbytes):
# https://docs.vllm.ai/en/latest/features/quantization/fp8.html , .../bnb.html
ONLINE_QUANT = {"fp8": "fp8", "bnb-nf4": "bitsandbytes", "bnb-int8": "bitsandbytes"}
RAY_PORT = 6379        # ray start --head default port
SGLANG_DIST_PORT = 5000
# faster-whisper model names for the OpenAI Whisper repos (it downloads Systran/faster-whisper-<name>).
FASTER_WHISPER = {"openai/whisper-large-v3": "large-v3", "openai/whisper-large-v3-turbo": "turbo",
                  "openai/whisper-large-v2": "large-v2", "openai/whisper-medium": "medium",
                  "openai/whisper-small": "small", "openai/whisper-base": "base", "openai/whisper-tiny": "tiny"}


def _notes(c: Ctx, ck: Checkpoint) -> tuple[str | None, str | None]:
    quant_note = kv_note = None
    if ck.quantized_from and ck.repo:
        quant_note = (f"{c.quantization} plan: serves the pre-quantized checkpoint of {ck.quantized_from} "
                      f"(source: {ck.source}); vLLM reads the method from its config.json and picks the Marlin kernel.")
    elif ck.repo is None:
        quant_note = (f"{c.quantization} plan: no known pre-quantized {c.quantization} checkpoint of {c.model}; "
                      "set MODEL to one (a Hugging Face repo id or a local path) before starting.")
    if c.kv_cache_dtype == "int8":
        kv_note = "vLLM has no int8 KV cache; fp8 (--kv-cache-dtype fp8) is the nearest and halves it the same way."
    return quant_note, kv_note


def engine_values(c: Ctx) -> dict:
    """Flag values shared by the vLLM and SGLang scripts and the Kubernetes manifests."""
    ck = checkpoint(c)
    quant_note, kv_note = _notes(c, ck)
    online = ONLINE_QUANT.get(c.quantization) if ck.repo == c.model and not ck.quantized_from else None
    if online == "fp8" and any(m in c.model.lower() for m in QUANT_MARKERS):
        online = None
    if online is not None and getattr(catalog_spec(c.model), "native_dtype", None) == c.quantization:
        # the publisher's checkpoint is in that format already (DeepSeek-V3 / R1, Kimi-K2: FP8): its config.json's
        # quantization_config drives the engine, and SGLang's DeepSeek guide says not to add --quantization fp8
        online = None
    vllm_kv, sglang_kv, kv_gpu_note = kv_cache_flags(c)
    dtype, dtype_note = engine_dtype(c)
    return {
        "serve_model": ck.repo,
        "base_model": c.model,
        "vllm_quant": online,
        "vllm_kv": vllm_kv,
        "sglang_kv": sglang_kv,
        "vllm_dtype": dtype,
        "dtype_note": Safe(dtype_note) if dtype_note else None,
        "quant_note": Safe(quant_note.replace("\n", " ")) if quant_note else None,
        "kv_note": Safe(kv_gpu_note or kv_note) if (kv_gpu_note or kv_note) else None,
        "engine_dp": engine_dp(c),
        "ray_port": RAY_PORT,
        "sglang_dist_port": SGLANG_DIST_PORT,
        "pooling_tokens": pooling_tokens(c),
    }


def pooling_tokens(c: Ctx) -> int | None:
    """vLLM's --max-num-batched-tokens of an encoder service (--runner pooling): the batch limit's prompts, the tokens
    the latency model timed per forward (estimate/serving/inference.py pooling_batched_tokens); None for LLMs (the
    engine's chunked-prefill default, which the estimate counts: inference.prefill_chunk_tokens)."""
    if c.model_kind != "encoder":
        return None
    return pooling_batched_tokens(c.max_num_seqs, c.prompt_tokens or c.max_model_len, c.max_model_len)


def engine_dp(c: Ctx) -> int:
    """The engine's data-parallel size on one node: DP copies of a TP x PP group started by ONE engine
    (vLLM --data-parallel-size, SGLang --dp-size), so a node serves all of its planned copies behind one
    endpoint. 1 for multi-node replicas (DP runs across replicas there)."""
    if c.training or c.multi_node:
        return 1
    return max(1, c.dp)


# vLLM / SGLang names for the KV-cache dtype (vllm/engine/arg_utils.py; SGLang server_arguments.md has no bare
# "fp8"). FP8 KV needs compute capability 8.9+ in vLLM's attention backends (FlashAttention FP8 KV only via FA3
# on SM90; Triton refuses FP8 KV below SM89; Ampere fails "type fp8e4nv not supported": vLLM issue #26431).
VLLM_KV = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "int8": "fp8"}
SGLANG_KV = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "int8": "fp8_e4m3"}
FP8_KV_MIN_CC = 8.9


def kv_cache_flags(c: Ctx) -> tuple[str, str, str | None]:
    """(vLLM --kv-cache-dtype, SGLang --kv-cache-dtype, a note when the GPU cannot use the planned FP8 cache)."""
    vllm, sglang = VLLM_KV.get(c.kv_cache_dtype, "auto"), SGLANG_KV.get(c.kv_cache_dtype, "auto")
    if vllm != "auto" and c.gpu_cc is not None and c.gpu_cc < FP8_KV_MIN_CC:
        note = (f"The plan counted an FP8 KV cache, but {c.gpu} (compute capability {c.gpu_cc:g}) cannot run one in "
                f"vLLM or SGLang (needs {FP8_KV_MIN_CC:g}+): the engines keep a 16-bit KV cache, which holds half as "
                "many tokens; requests above that queue.")
        return "auto", "auto", note
    return vllm, sglang, None


def engine_dtype(c: Ctx) -> tuple[str, str | None]:
    """vLLM/SGLang --dtype for the plan's precision on this GPU: float16 where the GPU has no BF16 (T4, V100:
    vLLM accepts only float16/float32 below compute capability 8.0 and refuses an explicit bfloat16,
    vllm/platforms/cuda.py), else the plan's precision."""
    dtype = VLLM_DTYPE.get(c.precision, "auto")
    if not c.bf16 and dtype in ("bfloat16", "auto"):
        return "float16", f"{c.gpu} has no BF16: weights and activations run in float16."
    return dtype, None


def embed_dtype(c: Ctx) -> str:
    """embed.py's --dtype: the plan's 16-bit type, float16 where the GPU has no BF16 (T4, V100), as the engines'."""
    dtype, _note = engine_dtype(c)
    return dtype if dtype in ("float16", "bfloat16", "float32") else ("bfloat16" if c.bf16 else "float16")


def deployed_script(c: Ctx) -> str:
    """The serving script the platform runs: serve.sh (vLLM), serve-sglang.sh, or the image server."""
    if c.model_kind == "diffusion":
        return "serve_images.py"
    return "serve-sglang.sh" if c.engine == "sglang" else "serve.sh"


def vllm_args(c: Ctx, *, dp: int | None = None) -> list[str]:
    """`vllm serve` arguments after the model (for the Kubernetes Deployment); ``dp`` overrides the engine's
    data-parallel size (1 = one pod per model copy behind the Service)."""
    v = engine_values(c)
    dp = v["engine_dp"] if dp is None else dp
    args = ["--served-model-name", c.slug, "--host", "0.0.0.0", "--port", str(c.ports["vllm"]),
            "--tensor-parallel-size", str(1 if c.dp_attention else c.tp), "--pipeline-parallel-size", str(c.pp),
            "--max-model-len", str(c.max_model_len), "--gpu-memory-utilization", str(c.gpu_mem_util),
            "--max-num-seqs", str(c.max_num_seqs), "--dtype", v["vllm_dtype"], "--kv-cache-dtype", v["vllm_kv"]]
    if c.dp_attention:   # the plan's DP attention: attention data-parallel over the TP ranks, experts split (EP)
        args += ["--data-parallel-size", str(c.tp * max(1, dp))]
    elif dp > 1:
        args += ["--data-parallel-size", str(dp)]
    if c.ep > 1:
        args += ["--enable-expert-parallel"]
    if v["vllm_quant"]:
        args += ["--quantization", v["vllm_quant"]]
    if c.trust_remote_code:
        args += ["--trust-remote-code"]
    if c.model_kind == "encoder":     # an embedding model: vLLM's pooling runner (/v1/embeddings), not generation
        args += ["--runner", "pooling", "--max-num-batched-tokens", str(v["pooling_tokens"])]
    return args


def sglang_args(c: Ctx, *, dp: int | None = None) -> list[str]:
    """`python3 -m sglang.launch_server` arguments after --model-path (for the Kubernetes Deployment)."""
    v = engine_values(c)
    dp = v["engine_dp"] if dp is None else dp
    args = ["--served-model-name", c.slug, "--host", "0.0.0.0", "--port", str(c.ports["sglang"]),
            "--tp-size", str(c.tp * c.pp), "--context-length", str(c.max_model_len),
            "--mem-fraction-static", str(c.gpu_mem_util), "--max-running-requests", str(c.max_num_seqs),
            "--dtype", v["vllm_dtype"], "--kv-cache-dtype", v["sglang_kv"], "--enable-metrics"]
    if c.dp_attention:   # DP attention: dp size = tp size (SGLang server_arguments.md)
        args += ["--dp-size", str(max(dp, c.tp)), "--enable-dp-attention"]
    elif dp > 1:
        args += ["--dp-size", str(dp)]
    if c.ep > 1:
        args += ["--ep-size", str(c.ep)]
    if v["vllm_quant"]:
        args += ["--quantization", v["vllm_quant"]]
    if c.trust_remote_code:
        args += ["--trust-remote-code"]
    if c.model_kind == "encoder":     # SGLang serves embedding models with --is-embedding (server_arguments.md)
        args += ["--is-embedding"]
    return args


def whisper_name(model: str) -> str:
    return FASTER_WHISPER.get(model.lower(), model)


def _py(text: str) -> Safe:
    """A Python string literal (JSON escaping is valid Python; ASCII only)."""
    return Safe(json.dumps(text, ensure_ascii=True))


def serve_requirements(c: Ctx) -> str:
    """requirements-serve.txt: the serving stack's pins over the node image (data/environments.yaml)."""
    e = c.env
    assert e is not None
    where = f"into {e.venv} (a virtual environment of its own)" if e.venv else "over the image (its torch kept)"
    header = [f"What the {e.stack} image installs {where}: FROM {e.base_image.rsplit('/', 1)[-1]}",
              f"(Python {e.python}, CUDA {e.cuda}, torch {e.torch}: plan.json `environment`), from {e.pip_index}.",
              "The Dockerfile runs pip install -r requirements-serve.txt."]
    return requirements_text(e, header)


def image_launch(c: Ctx) -> tuple[int, int, int]:
    """(steps, height, width) the image scripts run: the ones the estimate timed (estimate/nonllm/diffusion.image_sizes:
    the workload's input, else the pipeline's default steps and reference size, 4 steps for FLUX.1-schnell and 512 px
    for SD 1.5); a non-square input keeps its height and width (the estimate times the square of the same pixels)."""
    from gpuplan.estimate.nonllm.diffusion import image_sizes

    spec = catalog_spec(c.model)
    inp = c.model_input or {}
    if spec is not None and getattr(spec, "profile", None) is not None:
        side, steps = image_sizes(spec, inp)
    else:   # not a catalog pipeline: the workload's input, else image_sizes' own defaults (1024 px, the table's steps)
        side = int(inp.get("image_size") or 1024)
        steps = int(inp.get("steps") or table("nonllm")["default_diffusion_steps"])
    if inp.get("height") and inp.get("width"):
        return steps, int(inp["height"]), int(inp["width"])
    return steps, side, side


def image_dtype(c: Ctx) -> str:
    """The torch dtype the image scripts load the pipeline in: the plan's precision. A pipeline whose VAE the estimate
    decodes in fp32 (profile pipeline.vae_upcast: SDXL's force_upcast, which diffusers applies to a float16 VAE only)
    loads in float16, the dtype that upcast is for; T5-encoder pipelines (FLUX, SD3, PixArt) need bfloat16, where
    float16 overflows to NaN. A GPU without BF16 (T4, V100) loads float16, as generate_videos.py does."""
    dtype = video.diffusers_dtype(c)
    spec = catalog_spec(c.model)
    upcast = spec is not None and bool((getattr(getattr(spec, "profile", None), "pipeline", None) or {})
                                       .get("vae_upcast"))
    return "float16" if dtype == "bfloat16" and upcast else dtype


def files(c: Ctx) -> dict[str, str]:
    # a batch job runs the batch its plan chose (plan/search/search_job.py); a server's batch script keeps at most 16
    batch = max(1, c.max_num_seqs if not c.online else min(c.max_num_seqs, 16))
    launch = video.video_launch(c) if c.model_kind == "diffusion" else None
    if launch is not None:    # a video model: generate_videos.py runs what the plan estimated (video.py)
        return {video.SCRIPT: video.script(c, launch, batch=batch, model_dir=model_dir(c)),
                "requirements-serve.txt": serve_requirements(c), "fetch-model.sh": fetch_model_script(c)}
    if c.model_kind == "diffusion":
        steps, height, width = image_launch(c)
        dtype = image_dtype(c)
        out = {"generate_images.py": render("generate_images.py.j2", c=c, model_py=_py(c.model),
                                            model_dir_py=_py(model_dir(c)), steps=steps, height=height, width=width,
                                            batch=batch, dtype=dtype),
               "requirements-serve.txt": serve_requirements(c), "fetch-model.sh": fetch_model_script(c)}
        if c.online:   # a service: the online image server too
            out["serve_images.py"] = render("serve_images.py.j2", c=c, model_py=_py(c.model),
                                            model_dir_py=_py(model_dir(c)), steps=steps, height=height, width=width,
                                            copies=max(1, c.dp), port=c.serve_port, dtype=dtype)
            out["healthcheck.sh"] = render("healthcheck.sh.j2", c=c)
        return out
    if c.embed_job:     # an encoder-only model's batch job: the sentence-transformers script the plan timed
        return {"embed.py": render("embed.py.j2", c=c, model_dir_py=_py(model_dir(c)), batch=batch,
                                   max_length=max(1, c.prompt_tokens or 512), dtype=embed_dtype(c),
                                   base_model_comment=Safe(json.dumps(c.model, ensure_ascii=True)[1:-1]
                                                           .replace("\\", "/"))),
                "requirements-serve.txt": serve_requirements(c), "fetch-model.sh": fetch_model_script(c)}
    if c.model_kind == "speech":
        # the compute type the plan timed and sized: float32 weights for an fp32 plan, 16-bit otherwise (the 16-bit
        # figures are the same for float16 and bfloat16; faster-whisper's GPU default is float16)
        compute = "float32" if c.precision == "fp32" else "float16"
        return {"transcribe.py": render("transcribe.py.j2", c=c, model_dir_py=_py(model_dir(c)), batch=batch,
                                        compute=compute,
                                        base_model_comment=Safe(json.dumps(c.model, ensure_ascii=True)[1:-1]
                                                                .replace("\\", "/"))),
                "requirements-serve.txt": serve_requirements(c), "fetch-model.sh": fetch_model_script(c)}
    v = engine_values(c)
    out = {
        "serve.sh": render("serve.sh.j2", c=c, model_dir=model_dir(c), **v),
        "serve-sglang.sh": render("serve-sglang.sh.j2", c=c, model_dir=model_dir(c), **v),
        "healthcheck.sh": render("healthcheck.sh.j2", c=c),
        "fetch-model.sh": fetch_model_script(c),
        "requirements-serve.txt": serve_requirements(c),
    }
    if c.multi_node:   # one model copy over several nodes: its NCCL settings, as a training job's (the unit reads them)
        out["nccl.env"] = nccl_env(c)
    if c.pd:    # prefill/decode pools (plan.serving.disaggregation): the router that joins them
        out["router-pd.sh"] = render("router-pd.sh.j2", c=c)
    return out
