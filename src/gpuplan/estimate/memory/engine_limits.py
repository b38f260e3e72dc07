"""What a serving engine launched with its defaults takes per step, by GPU: its batch limit (vLLM ``max_num_seqs``)
and its step's token budget (vLLM ``max_num_batched_tokens``, SGLang ``chunked_prefill_size``), from
``inference.engine_default_max_num_seqs`` and ``inference.prefill_chunk_tokens`` in data/efficiency.yaml. One rule for
both readers: the engine's memory profile run (memory/serve.py: vLLM profiles its activations with one step of that
many tokens and its sampler with that many sequences) and the serving model's chunked prefill and batch
(serving/inference.py), so the memory a plan shows is the launched engine's."""

from __future__ import annotations

from gpuplan.estimate.params import table


def version_tuple(v: str) -> tuple[int, ...]:
    """"0.6.3.post1" -> (0, 6, 3); a part that does not start with a digit ends the tuple."""
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def gpu_tier(rows, gpu_id: str, memory_gib: float):
    """The value of the first ``[memory GiB below, value, (GPU names excluded)]`` row this GPU falls in (the engines'
    defaults by device memory and name: vLLM's get_batch_defaults, SGLang's server_args), None when none does."""
    name = gpu_id.upper()
    for limit, value, *exclude in rows:
        if memory_gib < float(limit) and not any(x.upper() in name for x in (exclude[0] if exclude else ())):
            return value
    return None


def default_max_num_seqs(framework: str, version: str | None, gpu_id: str, memory_gib: float) -> int | None:
    """The batch limit an engine launched without one runs (``inference.engine_default_max_num_seqs``: vLLM by
    release and GPU), None where the engine's own default is the KV cache's room (SGLang, LMDeploy) or no table
    row applies. ``version`` None: the current release."""
    rows = table("inference", "engine_default_max_num_seqs").get(framework)
    if not rows:
        return None
    got = None
    for start, tiers in rows:                 # the last row whose release the version has reached
        if version is None or version_tuple(version) >= version_tuple(str(start)):
            got = tiers
    seqs = gpu_tier(got, gpu_id, memory_gib) if got is not None else None
    return int(seqs) if seqs is not None else None


def step_tokens(framework: str, gpu_id: str, memory_gib: float, *, version: str | None = None,
                context_tokens: int = 0, dp_attention: bool = False) -> int:
    """Tokens one engine step takes at most (``inference.prefill_chunk_tokens``): vLLM's max_num_batched_tokens
    default and SGLang's chunked_prefill_size by GPU memory (SGLang halves it with --enable-dp-attention). vLLM before
    0.8 (``version``; None is the current release) sized it by the context it was launched for (``context_tokens``,
    its max_model_len): that context, at least 2048, up to 32k; 2048 above, where it chunks the prefill."""
    got = table("inference", "prefill_chunk_tokens")
    v0 = got["vllm_v0"]
    release = version_tuple(version) if version else ()      # "main", "latest": no release number, the current one
    if framework == "vllm" and release and release < version_tuple(str(v0["before"])):
        if context_tokens > int(v0["chunked_above"]):
            return int(v0["chunked"])
        return max(int(context_tokens), int(v0["unchunked_floor"]))
    row = got.get(framework, got["default"])
    if isinstance(row, (int, float)):
        return int(row)
    tokens = gpu_tier(row, gpu_id, memory_gib)   # [[memory GiB below, tokens, (excluded)], ...]
    out = int(tokens if tokens is not None else row[-1][1])
    if dp_attention and framework == "sglang":
        out //= 2
    return max(1, out)
