"""Serving memory on one GPU: weights, KV cache, the prefill transient and the engine's pre-allocation.

KV cache = 2·L·k·d·bytes per token (MLA: L·(d_c + d_rope)·bytes, DeepSeek-V2 §2.1); paged engines round
each sequence up to whole blocks and pre-allocate a share of the GPU (vLLM gpu_memory_utilization, SGLang
mem_fraction_static); eager ``generate`` grows its cache by concatenation. docs/formulas.md, "Inference".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.estimate.memory.common import MemoryEstimate, overhead_fixed
from gpuplan.estimate.memory.engine_limits import default_max_num_seqs, step_tokens, version_tuple
from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import Shape, weight_bytes
from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import _
from gpuplan.units import GIB


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class InferenceInputs:
    """The workload fields an inference memory estimate reads."""

    precision: str
    quantization: str
    kv_dtype_bytes: float
    framework: str
    flash: bool
    prompt_tokens: int
    output_tokens: int
    concurrency: int
    framework_version: str | None = None
    encoder: bool = False            # encoder-only model (embeddings, classification): no KV cache


def prompt_logits_bytes_per_vocab(framework: str, version: str | None) -> float:
    """Bytes per vocabulary entry per prompt token that generate's prefill materialises.

    transformers before 4.45 runs the LM head on every prompt position during generate and upcasts
    the result (``logits = logits.float()`` in every *ForCausalLM.forward): the bf16 logits and their
    fp32 copy are live together, prompt x vocab x 6 bytes, although only the last position is used
    (transformers issue #30860; PR #31292 added ``num_logits_to_keep``, released in 4.45). Newer
    versions compute the last position only (0 here). Unset version = the current stack."""
    if framework != "transformers" or not version:
        return 0.0
    cfg = table("memory", "generate_prompt_logits")
    if version_tuple(version) >= version_tuple(str(cfg["fixed_in"])):
        return 0.0
    return float(cfg["bytes_per_vocab_token"])


ENGINES = {"vllm", "sglang", "trtllm", "lmdeploy", "tgi"}  # paged KV pool, continuous batching


def kv_bytes_per_sequence(s: Shape, tokens: int, kv_dtype_bytes: float, framework: str) -> float:
    """KV cache of one sequence (all layers). Paged engines round up to whole blocks."""
    if framework in ENGINES:
        block = table("inference", "paged_block_tokens")
        tokens = math.ceil(tokens / block) * block
    return s.kv_bytes_per_token_16bit * kv_dtype_bytes / 2.0 * tokens


def state_bytes_per_sequence(s: Shape, layout: Layout) -> float:
    """A hybrid model's linear-attention state of one sequence on one GPU, whatever its length (0 for other models):
    16-bit (vLLM's mamba_ssm_cache_dtype "auto" keeps the model dtype; the KV cache dtype does not apply), split by
    pipeline stage and by TP over its value heads."""
    if not s.state_bytes_per_seq_16bit:
        return 0.0
    return s.state_bytes_per_seq_16bit / layout.pp / min(layout.tp, max(1, s.state_heads))


def kv_shard_fraction(s: Shape, layout: Layout) -> float:
    """Share of one sequence's KV cache a GPU holds, per sequence the replica serves.

    Pipeline stages split the layers. Tensor parallelism splits K/V by heads, but never below one
    KV head per rank: with fewer KV heads than ranks, vLLM/SGLang replicate heads (each rank keeps
    ceil(kv_heads / tp) heads, at least one). The MLA latent (DeepSeek-V2/V3/R1) has no heads to split: every TP
    rank keeps the whole latent of every sequence (vLLM MLA backend, SGLang), unless data-parallel
    attention is on (SGLang --enable-dp-attention), where each of the tp attention ranks serves its
    own 1/tp of the sequences with the whole latent of each."""
    frac = 1.0 / layout.pp
    if s.is_mla:
        return frac / (layout.tp if layout.dp_attention else 1)
    if layout.dp_attention:
        return frac / layout.tp
    kv_heads = max(1, s.kv_heads)
    heads_per_rank = math.ceil(kv_heads / layout.tp)  # 1 when tp >= kv_heads: heads are replicated
    return frac * heads_per_rank / kv_heads


def kv_pool_rule(framework: str, version: str | None = None) -> tuple[str, float]:
    """How a serving engine sizes its KV pool when launched with its defaults: ("total", f): the engine takes f of
    the whole GPU and the pool is what weights and activations leave (vLLM gpu_memory_utilization, SGLang
    mem_fraction_static); ("free", f): the pool is f of the memory free once the weights are loaded (LMDeploy
    cache_max_entry_count 0.8 since v0.2.2, 0.5 of the total in v0.2.0-0.2.1; TensorRT-LLM
    free_gpu_memory_fraction 0.9); ("sessions", 0): blocks for the launch's batch x session length only
    (LMDeploy TurboMind before v0.2, whose cache_max_entry_count counted sequences). ``inference.kv_pool`` in
    data/efficiency.yaml, with the sources."""
    inf = table("inference")
    if framework == "sglang":
        return "total", float(inf["sglang_mem_fraction_static"])
    rules = inf["kv_pool"].get(framework)
    if rules:
        got = None
        for start, kind, frac in rules:          # the last row whose release the version has reached
            if version is None or version_tuple(version) >= version_tuple(str(start)):
                got = (str(kind), float(frac))
        if got is not None:
            return got
    return "total", float(inf["vllm_gpu_memory_utilization"])


def engine_memory_fraction(need_bytes: float, capacity_bytes: float, default: float) -> float:
    """The memory fraction a serving engine must pre-allocate (vLLM ``gpu_memory_utilization``, SGLang
    ``mem_fraction_static``) for a plan that needs ``need_bytes`` per GPU: the engine's default when that covers it,
    else the need plus one point of margin (at most 0.99), to two decimals, as the plan's note and the bundle's
    launch scripts both print it."""
    if capacity_bytes <= 0 or need_bytes <= default * capacity_bytes:
        return round(default, 2)
    return round(min(0.99, need_bytes / capacity_bytes + 0.01), 2)


def inference_weight_bytes(s: Shape, w_total: float, layout: Layout) -> float:
    """Weights per GPU: split over TP x PP; with data-parallel attention the attention blocks are
    replicated on every TP rank (only the MLP/experts stay split); an expert-parallel group wider than TP (vLLM
    ``--enable-expert-parallel`` with DP, SGLang ``--ep`` over DP ranks) splits the routed experts ep ways."""
    shards = layout.tp * layout.pp
    weights = w_total / shards
    if layout.dp_attention and layout.tp > 1 and s.params_total:
        attn_share = s.layers * s.attn_params_layer / s.params_total
        weights += w_total * attn_share / layout.pp * (1.0 - 1.0 / layout.tp)
    if layout.ep > layout.tp and s.params_total:
        expert_share = min(1.0, s.routed_expert_params / s.params_total)
        weights -= w_total * expert_share / layout.pp * (1.0 / layout.tp - 1.0 / layout.ep)
    return weights


def prefill_transient_bytes(s: Shape, tokens: float, tp: int, flash: bool, batch: int) -> float:
    """Largest activation live during a prefill forward (no autograd): the MLP's intermediates
    (act(gate), up and their product: 3·f for a gated MLP, 2·f plain) plus a few hidden-size
    tensors; eager attention also materialises the scores of one layer (6·a·s² bytes)."""
    mlp = (3.0 if s.gated else 2.0) * s.moe_active_ffn
    per_tok = 2.0 * (mlp + 4.0 * s.hidden) / tp
    out = per_tok * tokens * batch
    if not flash:
        out += 6.0 * s.heads / tp * tokens * tokens * batch
    out += batch * s.vocab * 4.0  # last-token logits in fp32
    return out


def inference_memory(s: Shape, t: InferenceInputs, layout: Layout, system: System) -> MemoryEstimate:
    """Memory of serving ``concurrency`` sequences of prompt+output tokens."""
    mem_tab = table("memory")
    inf = table("inference")
    shards = layout.tp * layout.pp
    w_total, _dtype = weight_bytes(s, t.precision, t.quantization)
    weights = inference_weight_bytes(s, w_total, layout)
    seq_tokens = t.prompt_tokens + t.output_tokens
    per_seq = 0.0 if t.encoder else \
        kv_bytes_per_sequence(s, seq_tokens, t.kv_dtype_bytes, t.framework) * kv_shard_fraction(s, layout) \
        + state_bytes_per_sequence(s, layout)
    kv = per_seq * t.concurrency
    ctx, nccl = overhead_fixed(system, replica=layout)   # TP1 replicas on one machine open no communicator
    cap = system.capacity_bytes
    notes: list[str] = []
    if t.framework in ENGINES and not t.encoder:  # an encoder keeps no cache: nothing to pre-allocate
        rule, util = kv_pool_rule(t.framework, t.framework_version)
        # The engine's memory profile (vLLM profile_run): one step of its token budget (max_num_batched_tokens, as
        # launched: the engine's default by GPU) and the sampler over its batch limit's fp32 logits, gathered whole
        # on the first rank (256 sequences where no batch-limit default is tabled: vLLM V0's max_num_seqs). SGLang does
        # not profile: the same step is the peak its static fraction leaves room for.
        profile_tokens = step_tokens(t.framework, system.gpu.id, system.gpu.memory_gib, version=t.framework_version,
                                     context_tokens=seq_tokens, dp_attention=layout.dp_attention)
        sampler_seqs = min(profile_tokens, default_max_num_seqs(t.framework, t.framework_version, system.gpu.id,
                                                                system.gpu.memory_gib) or 256)
        act = prefill_transient_bytes(s, profile_tokens, layout.tp, True, 1) + sampler_seqs * s.vocab * 4.0
        graphs = float(inf["engine_graph_bytes"])
        needed = weights + kv + act + graphs + ctx + nccl
        if rule == "free":        # f of what is free once the weights are in, beside the runtime's own buffers
            reserved_engine = min(cap, weights + act + graphs + ctx + nccl
                                  + util * max(0.0, cap - weights - ctx - nccl))
        elif rule == "sessions":  # blocks for the launched sessions only
            reserved_engine = needed
        else:
            reserved_engine = util * cap
        budget = reserved_engine - (weights + act + graphs + ctx + nccl)
        per_gpu = max(needed, reserved_engine)
        pool = max(kv, per_gpu - (weights + act + graphs + ctx + nccl))
        comp = {"weights": weights, "kv_cache": pool, "activations": act, "overhead": graphs + ctx + nccl,
                "gradients": 0.0, "optimizer": 0.0, "adapters": 0.0, "logits": 0.0}
        alloc = weights + kv + act + graphs
        reserved = per_gpu - ctx - nccl
        if rule == "free":
            notes.append(_("{framework} gives its KV pool {util:.0%} of the memory free after the weights load").format(
                framework=t.framework, util=util))
        elif rule == "sessions":
            notes.append(_("{framework} {version} allocates KV blocks for the launched sessions only (batch x "
                           "sequence length)").format(framework=t.framework, version=t.framework_version))
        else:
            notes.append(_("{framework} pre-allocates {util:.0%} of GPU memory; the KV pool takes what weights and activations leave").format(framework=t.framework, util=util))
        if s.is_mla and layout.tp > 1:
            notes.append(_("MLA latent cache: every TP rank keeps the whole latent of its sequences (data-parallel "
                           "attention: each rank serves 1/tp of them)") if layout.dp_attention else
                         _("MLA latent cache: every TP rank keeps the whole latent of its sequences (not split by TP; "
                           "parallel.dp_attention: true splits the sequences instead)"))
        elif layout.tp > s.kv_heads and not layout.dp_attention:
            notes.append(_("{kv_heads} KV heads over TP {tp}: heads are replicated, one per rank").format(kv_heads=s.kv_heads, tp=layout.tp))
        if needed > reserved_engine and rule == "total":
            notes.append(_("needs gpu_memory_utilization {needed:.2f} (above the default {util:.2f})").format(
                needed=engine_memory_fraction(needed, cap, util), util=util))
        return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                              capacity_bytes=cap, components=comp, host_bytes=_inference_host(w_total, system),
                              engine_reserved_bytes=reserved_engine, peak_phase="serving",
                              total_bytes=per_gpu * shards, total_allocated_bytes=alloc * shards,
                              total_reserved_bytes=reserved * shards, kv_budget_bytes=budget,
                              kv_bytes_per_sequence=per_seq, kv_batch_bytes=kv, notes=notes)
    # Eager PyTorch (transformers generate): DynamicCache grows by concatenation.
    act = prefill_transient_bytes(s, t.prompt_tokens, layout.tp, t.flash, t.concurrency)
    old_logits = prompt_logits_bytes_per_vocab(t.framework, t.framework_version)
    if old_logits:
        # The LM head runs after the last decoder layer has freed its MLP intermediates: the prompt's
        # logits (bf16 + fp32) live next to the final normed hidden states, not on top of the layer peak.
        head = (old_logits * s.vocab + 2.0 * s.hidden) / layout.tp * t.prompt_tokens * t.concurrency
        act = max(act, head)
        notes.append(_("transformers {version} computes the logits of every prompt position in generate (bf16 + fp32 "
                       "copy, {bytes:g} bytes per vocabulary entry per prompt token); >= 4.45 keeps only the last").format(
            version=t.framework_version, bytes=old_logits))
    cat_copy = kv / max(1, s.layers / layout.pp)  # one layer's cache copied while it grows
    seq_tokens_all = max(1, t.prompt_tokens + t.output_tokens)
    kv_prompt = kv * t.prompt_tokens / seq_tokens_all
    alloc = weights + max(kv_prompt + act, kv + cat_copy) + mem_tab["workspace_bytes"]
    reserve = mem_tab["reserve_fraction_of_transient"]["generate"] * kv + mem_tab["reserve_fraction_of_total"] * alloc
    reserved = min(alloc + reserve, max(alloc, cap - ctx - nccl))  # the allocator frees its cache before OOM
    per_gpu = reserved + ctx + nccl
    comp = {"weights": weights, "kv_cache": kv, "activations": max(act, cat_copy), "gradients": 0.0,
            "optimizer": 0.0, "adapters": 0.0, "logits": 0.0}
    comp["overhead"] = per_gpu - sum(comp.values())
    budget = cap - (weights + act + ctx + nccl + mem_tab["workspace_bytes"])
    if kv:
        notes.append(_("transformers generate: the cache grows by concatenation, so the allocator's reserve approaches twice the KV cache"))
    return MemoryEstimate(per_gpu_bytes=per_gpu, peak_allocated_bytes=alloc, peak_reserved_bytes=reserved,
                          capacity_bytes=cap, components=comp, host_bytes=_inference_host(w_total, system),
                          peak_phase="prefill/decode", total_bytes=per_gpu * shards,
                          total_allocated_bytes=alloc * shards, total_reserved_bytes=reserved * shards,
                          kv_budget_bytes=budget / 2.0, kv_bytes_per_sequence=per_seq, notes=notes,
                          need_bytes=alloc + reserve + ctx + nccl)


MAX_SHARD_BYTES = 5e9  # Hugging Face checkpoints are saved in shards of at most 5 GB by default


def _inference_host(weight_total: float, system: System) -> float:
    """Host RAM to load and serve: safetensors shards are memory-mapped and copied to the GPU one at a
    time, so the process holds about one shard, plus ~3 GiB per GPU process (Python, CUDA, tokenizer)."""
    return min(weight_total, MAX_SHARD_BYTES) + 3.0 * GIB * system.gpus_per_node
