"""Training memory on the busiest GPU: one small function per component, assembled per pipeline stage.

The peak is the larger of two phases — forward/backward (activations, logits) and the optimizer step
(gradients + the optimizer's temporaries) — not the sum of everything (docs/formulas.md, "Phases").
What the caching allocator reserves on top, the CUDA context and NCCL buffers are calibrated constants
in data/efficiency.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.memory.common import (
    MemoryEstimate,
    adapter_param_bytes,
    eager_score_bytes,
    largest_block_matrix,
    largest_param_tensor,
    per_op_saved_bytes_per_token_layer,
)
from gpuplan.estimate.memory.loss import loss_logits_bytes
from gpuplan.estimate.memory.run import Run, TrainingInputs, frozen_fp8_primary, run_constants, stage_layers
from gpuplan.estimate.memory.sharding import gathered_param_bytes
from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import ACT_BYTES, Shape
from gpuplan.estimate.system import Layout, System
from gpuplan.i18n import N_, _
from gpuplan.units import GIB

# Words put into the notes at run time (phase of the peak, precision mode).
_NOTE_WORDS = (N_("forward/backward"), N_("optimizer step"), N_("pure"), N_("mixed"), N_("fp32"))

__all__ = ["TrainingInputs", "stage_inflight", "stage_layers", "training_memory"]


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class _Stage:
    """One pipeline stage's peak: per-GPU bytes, allocated, reserved, breakdown, phase, paged spill."""

    per_gpu: float
    alloc: float
    reserved: float
    comp: dict
    phase: str
    paged_spill: float
    offloaded_acts: float
    need: float


# ---------------------------------------------------------------------------------------------
# Components of one stage
# ---------------------------------------------------------------------------------------------

def stage_inflight(layout: Layout, i: int) -> float:
    """Micro-batches whose activations pipeline stage ``i`` holds at once: 1F1B keeps min(p - i, m);
    Megatron-LM's interleaved schedule warms rank i up with 2(p-i-1) + (v-1)p chunks of L/(p·v) layers
    and holds one more in steady state: p + (p-2i-1)/v stages' worth (Narayanan et al. 2021: the first
    stage's (1 + (p-1)/(p·v)) x 1F1B; the last stage holds ~p, not 1). A layer split runs one at a time."""
    if layout.naive_pipeline:
        return 1.0
    if layout.schedule == "interleaved" and layout.vp > 1:
        return min(layout.pp + (layout.pp - 2 * i - 1) / layout.vp, layout.microbatches)
    return float(min(layout.pp - i, layout.microbatches))


def stage_params(s: Shape, layout: Layout, n_layers: int, first: bool, last: bool) -> tuple[float, float]:
    """(parameters of the stage, parameters on one of its GPUs): the stage's layers, the embedding on
    the first stage, the LM head on the last (a tied head keeps a copy there); TP splits them, expert
    parallelism the routed experts."""
    params = n_layers * (s.attn_params_layer + s.mlp_params_layer_total)
    if first:
        params += s.embed_params
    if last:
        params += s.lm_head_params
        if layout.pp > 1 and not s.lm_head_params:
            params += s.embed_params  # tied head: a copy lives on the last stage
    local = params / layout.tp
    if layout.ep > 1:
        expert_share = s.routed_expert_params * n_layers / s.layers / layout.tp
        local -= expert_share * (1 - 1 / layout.ep)
    return params, local


def stage_expert_local(s: Shape, layout: Layout, n_layers: int) -> float:
    """Routed-expert parameters on one GPU of the stage (its 1/ep of them, split over TP); 0 without EP."""
    if layout.ep <= 1:
        return 0.0
    return s.routed_expert_params * n_layers / max(1, s.layers) / layout.tp / layout.ep


def sharded_share(local: float, expert_local: float, shard: int, ep: int) -> float:
    """What one GPU keeps of its ``local`` parameters' tensors sharded over ``shard`` data-parallel ranks (ZeRO /
    the distributed optimizer / FSDP). Expert parallelism sits inside the DP group, and a rank's routed experts
    (``expert_local`` of the ``local``) are sharded over the expert-data-parallel group, shard / ep ranks (Megatron-Core's
    expert data-parallel group; DeepSpeed-MoE's expert groups; FSDP2 + EP's expert mesh): a rank keeps as many expert
    states as without EP, the sharding having moved from DP to EP."""
    if shard <= 1 or expert_local <= 0.0:
        return local / max(1, shard)
    return (local - expert_local) / shard + expert_local / max(1, shard // max(1, ep))


def stage_weight_bytes(run: Run, n_layers: int, params: float, params_local: float, expert_local: float = 0.0) -> float:
    """Weights on one GPU of the stage at their storage width; ZeRO-3 / FSDP shard every parameter,
    frozen ones included (a PyTorch FSDP mixed-precision shard is the fp32 master: counted with the states);
    Transformer Engine FP8 adds its cached FP8 copies of the block weights (a
    frozen LoRA base with FP8 primaries keeps those instead of the 16-bit weights)."""
    s, layout = run.s, run.layout
    block_local = params_local - (params - n_layers * (s.attn_params_layer + s.mlp_params_layer_total)) / layout.tp
    frozen_fp8 = frozen_fp8_primary(run.t)
    if frozen_fp8 is not None:
        other_local = params_local - block_local
        weights = (block_local * frozen_fp8 + other_local * run.dense_w) / run.shard_weights
    else:
        # a PyTorch FSDP mixed-precision shard is the fp32 master weight, counted with the optimizer states
        weights = 0.0 if run.sharded_master else \
            sharded_share(params_local, expert_local, run.shard_weights, layout.ep) * run.bytes_per_param_w
        if run.fp8_cache_b:
            weights += block_local * run.fp8_cache_b
    if layout.offload != "none" and layout.zero >= 3:
        return 0.0  # FSDP offload_params / ZeRO-3 offload_param: the shards live in host RAM
    return weights


def stage_adapter_bytes(run: Run, n_layers: int) -> float:
    """LoRA adapters on one GPU: weights, gradients and AdamW states, sharded like the stage says. PEFT
    upcasts adapters to fp32; torchtune builds them in the model dtype (bf16 weights, grads, states)."""
    if not run.peft:
        return 0.0
    t, layout = run.t, run.layout
    local = run.lora_params * (n_layers / max(1, run.s.layers)) / layout.tp
    ad_b = adapter_param_bytes(t.framework, t.precision, t.lora_adapter_dtype)
    states = 0.0 if layout.offload != "none" else 2.0 * ad_b / run.shard_states
    return local * (ad_b / run.shard_weights + ad_b / run.shard_grads + states)


def stage_trainable_bytes(run: Run, params_local: float, expert_local: float = 0.0) -> tuple[float, float, float]:
    """(gradients, optimizer states, optimizer-step temporaries) of a fully trained stage on one GPU.
    optimizer_in_backward steps each parameter from its gradient hook: one parameter's gradient is live
    (torchtune optimizer_in_bwd). CPU offload (ZeRO-Offload, Ren et al. 2021 §4; FSDP CPUOffload /
    CPUOffloadPolicy) moves states and the reduced gradient shards to host RAM: only the bucket being
    reduced stays (with the gathered parameters under ZeRO-3 / FSDP; one block's gradients otherwise)."""
    if run.peft:
        return 0.0, 0.0, 0.0
    s, layout = run.s, run.layout
    grads = sharded_share(params_local, expert_local, run.shard_grads, layout.ep) * run.grad_b
    states = sharded_share(params_local, expert_local, run.shard_states, layout.ep) * run.state_b
    step_temp = sharded_share(params_local, expert_local, run.shard_states, layout.ep) * run.temp_b
    if run.in_bwd:
        grads = min(grads, largest_param_tensor(s) / layout.tp * run.grad_b)
        step_temp = min(step_temp, largest_param_tensor(s) / layout.tp * run.temp_b)
    if layout.offload != "none":
        bucket = (s.attn_params_layer + s.mlp_params_layer_total) / layout.tp * run.grad_b
        grads = 0.0 if layout.zero >= 3 else min(grads, bucket)
        states = step_temp = 0.0
    return grads, states, step_temp


def stage_activation_bytes(run: Run, n_layers: int, inflight: float) -> tuple[float, float, float]:
    """(stored activations, transient of the recomputed layer, activations offloaded to host) on one GPU.

    Without recomputation every layer keeps its saved tensors for each in-flight micro-batch; full
    recomputation keeps each layer's input (2·h per token) plus one rebuilt layer and its gradients;
    selective recomputation drops the eager attention scores; per-op selective recomputation (torchtitan) keeps the
    block input, q, v, the attention output, the gate and the down projection's output
    (:func:`per_op_saved_bytes_per_token_layer`) plus one rebuilt block. A weight-only quantized base (QLoRA) is
    dequantized one matrix at a time (bitsandbytes MatMul4Bit): the largest block matrix is transiently
    live. torchtune's activation offloading keeps a few layers' worth resident (memory.activation_offload_resident_layers)."""
    s, t, layout = run.s, run.t, run.layout
    if layout.checkpointing == "full":
        stored = n_layers * run.tokens_mb * 2.0 * s.hidden * ACT_BYTES.get(t.precision, 2.0) / 2.0 \
            / (layout.tp if layout.sp else 1) * inflight
        recompute = run.tokens_mb * run.act_tok_layer * 1.5  # one layer rebuilt + its gradients
    elif layout.checkpointing == "per-op":
        kept = min(run.act_tok_layer, per_op_saved_bytes_per_token_layer(s, t.precision, layout.tp, layout.sp))
        stored = n_layers * run.tokens_mb * kept * inflight
        # backward rebuilds one block's recomputed tensors beside its gradients (as full recomputation, less what
        # the block kept)
        recompute = run.tokens_mb * (run.act_tok_layer * 1.5 - kept)
    else:
        per_tok = run.act_tok_layer
        if layout.checkpointing == "selective" and not t.flash:
            per_tok -= eager_score_bytes(t.framework) * s.heads * t.seq_len / layout.tp
        stored = n_layers * run.tokens_mb * per_tok * inflight
        recompute = 0.0
    if run.peft and run.quant != "none":
        recompute += largest_block_matrix(s) / layout.tp * 2.0
    offloaded = 0.0
    if t.activation_offloading:
        resident = float(table("memory", "activation_offload_resident_layers")) / max(1, n_layers * inflight)
        offloaded = stored * (1.0 - min(1.0, resident))
        stored *= min(1.0, resident)
    return stored, recompute, offloaded


def stage_logits_bytes(run: Run, last: bool) -> float:
    """The logits pipeline at the loss peak (last stage only): the model's own loss over the whole logits
    (memory.logits_bytes_per_vocab_token) or the bundle's chunked loss (memory.chunked_loss; estimate/memory/loss.py)."""
    if not last:
        return 0.0
    return loss_logits_bytes(run.s, run.tokens_mb, chunked=run.chunked_loss, framework=run.t.framework,
                             precision=run.t.precision, tp=run.layout.tp if run.layout.loss_parallel else 1,
                             compiled=run.t.compiled,
                             trainable_head=not run.peft)


# ---------------------------------------------------------------------------------------------
# One stage's peak, then the whole model
# ---------------------------------------------------------------------------------------------

def _stage_peak(run: Run, n_layers: int, first: bool, last: bool, inflight: float) -> _Stage:
    layout = run.layout
    params, params_local = stage_params(run.s, layout, n_layers, first, last)
    expert_local = stage_expert_local(run.s, layout, n_layers)
    weights = stage_weight_bytes(run, n_layers, params, params_local, expert_local)
    adapters = stage_adapter_bytes(run, n_layers)
    grads, states, step_temp = stage_trainable_bytes(run, params_local, expert_local)
    paged_states = states if run.paged else 0.0
    states -= paged_states
    gather = gathered_param_bytes(run.s, layout, run.layer_store, run.dense_w, trainable=not run.peft, group=run.dp,
                                  grad_bytes=4.0 if run.mode in ("mixed", "fp32") else 2.0)
    stored, recompute, offloaded = stage_activation_bytes(run, n_layers, inflight)
    acts = stored + recompute
    logits = stage_logits_bytes(run, last)
    transient = logits + recompute
    cached = 0.0
    if layout.checkpointing == "full":
        # The loss (forward and backward) runs before the last layer is recomputed and frees its logits
        # first: only the larger of the two is allocated. The caching allocator keeps the freed logit
        # segments, which the recomputed layer's differently sized tensors do not fill: reserved holds both.
        cached = min(logits, recompute)
        if logits >= recompute:
            acts = stored
        else:
            logits = 0.0
    phase, comp, alloc = _phases(run, weights + states + adapters, weights, states, adapters, grads, step_temp,
                                 gather, acts, logits)
    uncapped = alloc + (cached if phase == "forward/backward" else 0.0) \
        + run.reserve_transient * transient + run.reserve_total * alloc
    # the caching allocator frees its cache and retries before an out-of-memory error
    reserved = min(uncapped, max(alloc, run.capacity - run.ctx - run.nccl))
    per_gpu = reserved + run.ctx + run.nccl
    # paged optimizer states sit in unified memory: resident on the GPU as far as room allows
    paged_resident = min(paged_states, max(0.0, run.capacity - per_gpu))
    per_gpu += paged_resident
    comp["optimizer"] += paged_resident
    comp["kv_cache"] = 0.0
    comp["overhead"] = per_gpu - sum(v for k, v in comp.items() if k != "overhead")
    need = uncapped + run.ctx + run.nccl + paged_states
    return _Stage(per_gpu, alloc, reserved, comp, phase, paged_states - paged_resident, offloaded, need)


def _phases(run: Run, persistent: float, weights: float, states: float, adapters: float, grads: float,
            step_temp: float, gather: float, acts: float, logits: float) -> tuple[str, dict, float]:
    """(phase, breakdown, allocated bytes) at the larger of the forward/backward and optimizer-step peaks.
    Gradients exist during forward/backward when accumulated over micro-batches (or stepped in backward), and
    always where the stack keeps them in buffers allocated for the whole run (Megatron-Core's main_grad buffer:
    memory.persistent_grad_buffer_frameworks); otherwise, without ZeRO-2 sharding, they build up while
    activations are freed in backward."""
    layout = run.layout
    if run.in_bwd or run.persistent_grads:
        fb_grads, fb = grads, persistent + grads + gather + acts + logits
        act_part, logit_part = acts, logits
    elif layout.grad_accum > 1 or layout.zero < 2:
        fb_grads = grads if layout.grad_accum > 1 else 0.0
        fb = persistent + fb_grads + gather + max(acts + logits, 0.0 if layout.grad_accum > 1 else grads)
        if layout.grad_accum == 1 and grads > acts + logits:
            fb_grads, act_part, logit_part = grads, 0.0, 0.0
        else:
            act_part, logit_part = acts, logits
    else:
        fb_grads, fb = grads, persistent + grads + gather + acts + logits
        act_part, logit_part = acts, logits
    step = persistent + grads + step_temp
    workspace = table("memory")["workspace_bytes"]
    if fb >= step:
        comp = {"weights": weights + gather, "gradients": fb_grads, "optimizer": states,
                "activations": act_part, "logits": logit_part, "adapters": adapters}
        return "forward/backward", comp, fb + workspace
    comp = {"weights": weights, "gradients": grads, "optimizer": states + step_temp,
            "activations": 0.0, "logits": 0.0, "adapters": adapters}
    return "optimizer step", comp, step + workspace


def training_host_bytes(run: Run, system: System, paged_spill: float, offloaded_acts: float) -> float:
    """Host RAM: offloaded optimizer states, the reduced gradient partition the CPU step reads (and ZeRO-3
    parameters), paged-optimizer spill, offloaded activations, ~3 GiB per process for data loading, and half the
    weights while loading.

    ZeRO-Offload keeps the gradient partition on the host in the master dtype (DeepSpeed stage_1_and_2.py
    ``initialize_optimizer_states``: ``single_partition_of_fp32_groups[i].grad`` allocated on the offload device;
    stage3.py likewise for ``fp32_partitioned_groups_flat``): 12 + 4 = 16 bytes per parameter with AdamW in mixed
    precision, 18 with the ZeRO-3 parameters, as DeepSpeed's own ``estimate_zero2/3_model_states_mem_needs``
    count before their 1.5 buffer factor."""
    s, layout = run.s, run.layout
    host = 0.0
    if layout.offload != "none" and not run.peft:
        host_grad_b = 4.0 if run.mode in ("mixed", "fp32") else 2.0
        host += s.params_total / layout.tp / layout.pp * (
            run.state_b + host_grad_b + (run.dense_w if layout.zero >= 3 else 0.0)) / run.shard_states \
            * system.gpus_per_node
    if layout.offload != "none" and run.peft and layout.zero >= 3:
        host += run.w_total / layout.tp / layout.pp / run.shard_weights * system.gpus_per_node
    host += (paged_spill + offloaded_acts) * system.gpus_per_node
    return host + 3.0 * GIB * system.gpus_per_node + 0.5 * run.w_total


def _notes(run: Run, phase: str) -> list[str]:
    t, layout = run.t, run.layout
    notes = [_("peak in the {phase} phase").format(phase=_(phase)),
             _("optimizer states: {optimizer} ({mode} precision, {bytes:g} bytes/param)").format(
                 optimizer=t.optimizer, mode=_(run.mode), bytes=run.state_b)]
    if layout.zero >= 3 and run.dp > 1:
        notes.append(_("ZeRO-3 / FSDP: every weight{peft} is sharded {dp} ways; two gathered blocks and the embedding/head are live at a time").format(peft=_(' (the frozen base included)') if run.peft else '', dp=run.dp))
    if run.paged:
        notes.append(_("paged optimizer: states live in CUDA unified memory outside PyTorch's allocator and page to host RAM when the GPU runs short (they never cause an out-of-memory error)"))
    if run.in_bwd:
        notes.append(_("optimizer step fused into backward: one parameter's gradient is live at a time"))
    if t.activation_offloading:
        notes.append(_("activation offloading: saved activations wait in pinned host RAM; about {layers:g} layers' "
                       "worth stay on the GPU").format(layers=table("memory")['activation_offload_resident_layers']))
    if run.layout.tp > 1 and not run.layout.loss_parallel and not run.chunked_loss:
        notes.append(_("loss: the logits are gathered whole on each of the {tp} tensor-parallel ranks (the LM head's "
                       "output replicated for the loss, not split over the ranks)").format(tp=run.layout.tp))
    if run.chunked_loss:
        notes.append(_("loss: the chunked fused cross-entropy of the bundle's train.py: the logits of {tokens:g} "
                       "tokens at a time and the LM head's gradient, never the whole logits").format(
                           tokens=table("memory", "chunked_loss")["chunk_tokens"]))
    if frozen_fp8_primary(t) is not None:
        notes.append(_("FP8 LoRA: the frozen base is kept as FP8 weights and their FP8 transpose ({bytes:g} bytes per "
                       "block weight), no 16-bit copy").format(bytes=frozen_fp8_primary(t)))
    return notes


def training_memory_key(s: Shape, t: TrainingInputs, layout: Layout, system: System, with_notes: bool) -> tuple:
    """What :func:`training_memory` reads besides the model and the efficiency tables in force: equal keys give
    equal results (the recommender's search computes one memory per key). Of the system only the node shape and
    the usable memory: the GPU's rates and the links change times, never bytes."""
    inputs = tuple(tuple(v) if isinstance(v, list) else v for v in vars(t).values())
    return (s, inputs, layout, system.gpus_per_node, system.nodes, system.capacity_bytes, with_notes)


def training_memory(model, s: Shape, t: TrainingInputs, layout: Layout, system: System, *,
                    with_notes: bool = True) -> MemoryEstimate:
    """Memory of one training step on the busiest GPU (and the sum over one replica's GPUs).
    ``with_notes=False`` skips the explanatory notes (the recommender's feasibility pass)."""
    run = run_constants(model, s, t, layout, system)
    stages: list[_Stage] = []
    seen: dict[tuple, _Stage] = {}  # stages alike in layers, ends and in-flight micro-batches are computed once
    for i, n_layers in enumerate(stage_layers(s.layers, layout.pp)):
        key = (n_layers, i == 0, i == layout.pp - 1, stage_inflight(layout, i))
        if key not in seen:
            seen[key] = _stage_peak(run, *key)
        stages.append(seen[key])
    busiest = max(stages, key=lambda st: st.per_gpu)
    host = training_host_bytes(run, system, busiest.paged_spill, max(st.offloaded_acts for st in stages))
    return MemoryEstimate(per_gpu_bytes=busiest.per_gpu, peak_allocated_bytes=busiest.alloc,
                          peak_reserved_bytes=busiest.reserved, capacity_bytes=system.capacity_bytes,
                          components=busiest.comp, host_bytes=host, peak_phase=busiest.phase,
                          total_bytes=sum(st.per_gpu for st in stages) * layout.tp,
                          total_allocated_bytes=sum(st.alloc for st in stages) * layout.tp,
                          total_reserved_bytes=sum(st.reserved for st in stages) * layout.tp,
                          notes=_notes(run, busiest.phase) if with_notes else [],
                          need_bytes=max(st.need for st in stages),
                          loss="chunked" if run.chunked_loss else "model")
