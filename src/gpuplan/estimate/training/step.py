"""Training step time: FLOPs over achievable throughput, plus communication that is not hidden.

- Model FLOPs per token: 6·N + 12·L·h·s (PaLM, Chowdhery et al. 2022, App. B; N = parameters
  multiplied per token, the LM head included, the embedding lookup not). LoRA/QLoRA skip the
  weight gradients of the frozen base: 4·N + 8·L·h·s plus the adapters.
- Hardware FLOPs add the recomputation: one more forward with full checkpointing (8·N·D,
  Narayanan et al. 2021 eq. 3), the attention core with selective recomputation.
- Achievable HFU by GPU architecture and layer width is data (efficiency.yaml).
- Communication: ring all-reduce 2(n-1)/n·S, reduce-scatter/all-gather (n-1)/n·S (nccl-tests
  PERFORMANCE.md); tensor parallelism all-reduces the activations 4 times per layer per
  micro-batch (Shoeybi et al. 2019 §3), over NVLink/PCIe inside a node and over the nodes' NICs when
  the TP group spans nodes; with tp_comm_overlap (TE userbuffers) most of it hides behind the GEMMs.
- Pipeline: a step of m micro-batches on p stages lasts (m + p - 1)/m of the ideal time with 1F1B or
  GPipe, and 1 + (p-1)/(v·m) with v interleaved virtual stages (Narayanan et al. 2021 §2.2); stage
  boundaries send the activations point to point (split over the TP ranks, scatter/gather §4.1).
- Data-parallel gradients: bucketed reduction overlapped with the backward pass (Li et al. 2020).
- FP8 (Transformer Engine): the GEMMs at the FP8 dense rate, everything else at the 16-bit rate.
- Fixed costs of the training loop per micro-batch and per optimizer step (data loader, loss sync,
  optimizer/scheduler calls) and the optimizer step's HBM traffic (memory-bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpuplan.estimate.clocks import (FP32_CORES, attention_rate_factor, attention_rate_note, training_kernel, matmul_dtype, peak_flops,
                                     sustained_note)
from gpuplan.estimate.comm import (context_parallel_s, dp_collective_time, dp_gradient_sync_s, expert_all_to_all_s, pipeline_bubble,
                                   pipeline_p2p_s, ring_latency_s, tp_collective_s)
from gpuplan.estimate.memory import shard_group, sharded_traffic_bytes, trainable_local_fraction
from gpuplan.estimate.forward import unfused_scores_s
from gpuplan.estimate.params import by_key, table
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.training.costs import (fp32_core_hfu, achievable_hfu, adapter_traffic_s, attention_flops_fwd_per_token,
                                             dequant_cpu_s, dequant_s, flops_per_token, framework_overhead_s,
                                             moe_eager_cpu_s, optimizer_step_s)
from gpuplan.i18n import _

MEGATRON_CORE = frozenset({"megatron", "nemo"})   # stacks on Megatron-Core's DDP and distributed optimizer
# Stacks whose LoRA adapters' element-wise work is not timed (adapter_traffic_s): torchtune's recipes compile their
# LoRALinear; NeMo's published LoRA rows (bench group nemo2407, H100, qkv adapters) are met without it (assumed fused).
UNTIMED_ADAPTER_FRAMEWORKS = frozenset({"torchtune", "nemo"})



@dataclass(eq=False)  # never compared: no generated __eq__/__hash__ to build
class TrainingPerf:
    """Time and throughput of one training step (what `estimate` prints under performance)."""

    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    samples_per_s: float
    mfu: float
    tflops_per_gpu: float
    comm_fraction: float
    compute_s: float
    comm_exposed_s: float
    offload_s: float
    efficiency: float
    peak_tflops: float
    tokens_per_step: float
    total_time_s: float | None = None
    gpu_hours: float | None = None
    notes: list[str] = field(default_factory=list)
    comm_total_s: float = 0.0   # all communication, hidden or not
    bubble: float = 0.0         # pipeline idle share
    loop_s: float = 0.0         # the training loop's own serial cost per step (training.framework_overhead_s)
    optimizer_s: float = 0.0    # the optimizer step (part of compute_s)

    def to_dict(self) -> dict:
        return {
            "step_time_s": self.step_time_s, "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu, "samples_per_s": self.samples_per_s,
            "mfu": self.mfu, "tflops_per_gpu": self.tflops_per_gpu, "comm_fraction": self.comm_fraction,
            "total_time_s": self.total_time_s, "gpu_hours": self.gpu_hours,
            "compute_s": self.compute_s, "comm_exposed_s": self.comm_exposed_s, "offload_s": self.offload_s,
            "hfu_assumed": self.efficiency, "peak_tflops_per_gpu": self.peak_tflops,
            "tokens_per_step": self.tokens_per_step, "comm_total_s": self.comm_total_s,
            "pipeline_bubble": self.bubble, "loop_s": self.loop_s, "optimizer_step_s": self.optimizer_s,
            # inference fields do not apply
            "ttft_s": None, "tpot_s": None, "output_tokens_per_s": None, "max_concurrency": None,
            "max_requests_per_s": None,
        }




def training_perf(s: Shape, *, task: str, precision: str, quantization: str, framework: str, seq_len: int,
                  layout: Layout, system: System, trainable_params: float, dataset_tokens: float | None,
                  tokens_per_sample: float | None = None, flash: bool = True,
                  optimizer: str = "adamw", adapted_linears: float = 0.0,
                  adapted_expert_linears: float = 0.0, adapter_widths: tuple[float, float] = (0.0, 0.0),
                  adapter_bytes: float = 4.0, lora_dropout: bool = True, compiled: bool = False,
                  tf32: bool = True, attention_kernel: str | None = None) -> TrainingPerf:
    """``tf32``: fp32 matmuls on the TF32 tensor cores (the workload's tf32; False: the FP32 cores, clocks.matmul_dtype).
    ``attention_kernel``: the workload's stated fused attention kernel (clocks.attention_rate_factor)."""
    notes: list[str] = []
    comm_tab = table("communication")
    attn_share = float(table("training", "flash_causal_executed_share")) if flash else 1.0
    model_fpt, hw_fpt = flops_per_token(s, seq_len, task, layout.checkpointing, attn_share)
    fwd_hw_fpt = 2.0 * s.matmul_params_active + attention_flops_fwd_per_token(s, seq_len) * attn_share
    dtype = matmul_dtype(precision, tf32)
    peak = peak_flops(system, dtype, notes)
    # context parallelism splits each sequence over cp GPUs: a GPU's GEMMs, TP all-reduces, stage sends and
    # expert exchanges see seq_len / cp tokens of each micro-batch
    tokens_mb = seq_len * layout.micro_batch / max(1, layout.cp)
    eff = achievable_hfu(system, s, framework, quantization, tokens_mb)
    if precision == "fp32" and (dtype == FP32_CORES or not system.gpu.peak_tflops("tf32")) \
            and (p16 := peak_flops(system, "fp16", [])) > peak:
        # no TF32 (none on the GPU, or tf32: false): the GEMMs on the FP32 cores beside the rest of the 16-bit step (costs.fp32_core_hfu)
        eff16, eff = eff, fp32_core_hfu(eff, p16, peak)
        notes.append(_("fp32 on {gpu}'s FP32 cores (no TF32): {eff:.0%} of its {p32:g} TFLOP/s, against {eff16:.0%} of its "
                       "16-bit tensor rate (the GEMMs slower, the rest of the step as at 16 bits)").format(
            gpu=system.gpu.id, eff=eff, p32=peak / 1e12, eff16=eff16))
    if (clock_note := sustained_note(system.gpu)) is not None:
        notes.append(clock_note)
    eff_table = table("training")
    if precision == "fp8" and system.gpu.peak_tflops("fp8"):
        bf16 = peak_flops(system, "bf16", [])
        if framework in eff_table["fp8_compute_frameworks"]:
            share = float(eff_table["fp8_gemm_share"])
            # GEMMs at the FP8 rate, the rest at bf16: harmonic mix
            peak = 1.0 / (share / peak + (1 - share) / bf16)
        else:
            peak = bf16
            notes.append(_("{framework} has no FP8 GEMM recipe (Transformer Engine / torchao): timed at the bf16 rate").format(framework=framework))
    tokens_per_step = seq_len * layout.micro_batch * layout.grad_accum * layout.dp
    gpus = layout.gpus
    # the attention core at its kernel's rate: FlashAttention-2 stacks on full-rate Hopper parts run it at about half
    # the GEMMs' rate (clocks.attention_rate_factor); its hardware FLOPs are hw_fpt less the same count without it
    attn_rate = attention_rate_factor(system.gpu, framework, model_parallel=layout.tp * layout.pp * layout.cp > 1,
                                      kernel=training_kernel(attention_kernel))
    attn_hw_fpt = hw_fpt - flops_per_token(s, seq_len, task, layout.checkpointing, 0.0)[1]
    compute_s = (hw_fpt + attn_hw_fpt * (1.0 / attn_rate - 1.0)) * tokens_per_step / gpus / (peak * eff)
    if attn_rate < 1.0 and attn_hw_fpt > 0:
        notes.append(attention_rate_note(system.gpu, framework, attn_rate,
                                         attn_hw_fpt * (1.0 / attn_rate - 1.0) / hw_fpt))
    if not flash:
        # unfused attention: the s x s scores go through HBM several times per layer
        scores = s.context_layers * s.heads * seq_len * seq_len * (tokens_per_step / seq_len) / gpus
        extra = unfused_scores_s(system, scores, float(table("training", "unfused_attention_bytes_per_score")))
        compute_s += extra
        notes.append(_("attention without FlashAttention: +{extra:.0%} time moving the s x s scores").format(extra=extra / compute_s))
    if quantization not in (None, "none"):
        compute_s += layout.grad_accum * dequant_s(system, s, layout, quantization)
    if task in ("lora", "qlora") and framework not in UNTIMED_ADAPTER_FRAMEWORKS and not compiled:
        # unfused adapters (PEFT's, whatever launches them; ms-swift Megatron's LoraParallelLinear the same in bf16)
        local_layers = s.layers / (1 if layout.naive_pipeline else layout.pp)
        lora_s = layout.grad_accum * adapter_traffic_s(system, layout, tokens_mb, local_layers, adapter_widths,
                                                       adapter_bytes, 4.0 if precision == "fp32" else 2.0, lora_dropout)
        if lora_s:
            notes.append(_("LoRA adapters' element-wise work (input casts, dropout, scaling, adds; {bytes:g}-byte adapters) "
                           "moves their inputs and outputs through HBM: +{share:.0%} on the GEMMs").format(
                bytes=adapter_bytes, share=lora_s / compute_s))
        compute_s += lora_s
    if framework in eff_table["eager_frameworks"]:
        # Python launch overhead per micro-batch, overlapped with the GPU work (soft maximum)
        inf = table("inference")
        passes = 1.0 + (1.0 if layout.checkpointing == "full" else 0.0) + float(eff_table["eager_backward_passes"])
        cpu_mb = s.layers / (1 if layout.naive_pipeline else layout.pp) * passes * float(inf["eager_cpu_s_per_layer"])
        # PEFT LoRA adapters add their own launches to every adapted linear (training.lora_eager_ops)
        lo = eff_table["lora_eager_ops"]
        cpu_mb *= 1.0 + adapted_linears * float(lo["per_adapter"]) / float(eff_table["dequant_traffic"]["eager_ops_per_layer"])
        cpu_mb += dequant_cpu_s(s, layout, quantization)
        cpu_mb += moe_eager_cpu_s(s, layout, tokens_mb, passes, adapted_expert_linears)
        gpu_mb = compute_s / max(1, layout.grad_accum)
        k = float(inf["eager_overlap_exponent"])
        compute_s = layout.grad_accum * (cpu_mb**k + gpu_mb**k) ** (1.0 / k)
    # one micro-batch's backward on this GPU (recomputation included) and forward: what the gradient reduction and
    # the parameter all-gather of a sharded optimizer can hide behind
    backward_mb_s = compute_s / max(1, layout.grad_accum) * (1.0 - fwd_hw_fpt / hw_fpt)
    forward_mb_s = compute_s / max(1, layout.grad_accum) * fwd_hw_fpt / hw_fpt
    bubble = 0.0
    if layout.pp > 1:
        if layout.naive_pipeline:
            compute_s *= layout.pp  # layer split: one stage busy at a time
            notes.append(_("layer split over GPUs (device_map) runs stages one after another"))
        else:
            bubble = pipeline_bubble(layout)
            compute_s *= 1 + bubble
            if layout.vp > 1:
                notes.append(_("pipeline bubble (p-1)/(v·m), v = {vp} virtual stages: {bubble:.2f} ({schedule}, "
                               "m = {microbatches})").format(vp=layout.vp, bubble=bubble, schedule=layout.schedule,
                                                             microbatches=max(1, layout.microbatches)))
            else:
                notes.append(_("pipeline bubble (p-1)/m: {bubble:.2f} ({schedule}, m = {microbatches})").format(
                    bubble=bubble, schedule=layout.schedule, microbatches=max(1, layout.microbatches)))
    loop_s = framework_overhead_s(framework, layout.grad_accum,
                                  deepspeed_engine=layout.zero > 0 and layout.fsdp == "none"
                                  and framework in eff_table["eager_frameworks"])
    opt_s = 0.0 if layout.offload != "none" and task not in ("lora", "qlora") else \
        optimizer_step_s(system, layout, trainable_params, optimizer,
                         expert_params=s.routed_expert_params if task in ("full", "pretrain") else 0.0)
    compute_s += loop_s + opt_s

    # communication
    overlap = comm_tab["overlap"]
    # a rank reduces the gradients it holds: with expert parallelism 1/ep of the routed experts' (the expert-data-
    # parallel group reduces them), as the ZeRO-3 traffic counts them (memory/sharding.py)
    grad_bytes = trainable_params / (layout.tp * layout.pp) * 2.0 * trainable_local_fraction(s, layout, task)
    comm = 0.0
    comm_total = 0.0
    if layout.dp > 1 and grad_bytes > 0:
        if layout.zero >= 3:
            # per micro-batch: the sharded weights all-gathered for the forward and again for the
            # backward (the frozen base too under LoRA/QLoRA, at its stored width: memory.sharded_traffic_bytes),
            # the trainable gradients reduce-scattered; FSDP gathers one unit (layer) at a time, DeepSpeed
            # ZeRO-3 module by module (more, smaller collectives, each paying the ring's start-up latency)
            ga = layout.grad_accum
            fsdp = layout.fsdp != "none"
            gather_b, reduce_b = sharded_traffic_bytes(s, layout, precision, quantization, task, trainable_params)
            group = replace(layout, dp=shard_group(layout, system))  # HSDP gathers within its node
            t = dp_collective_time(system, group, gather_b, 2.0 * ga) + dp_collective_time(system, layout, reduce_b, float(ga))
            per_layer = by_key(comm_tab["zero3_collectives_per_layer"], "fsdp" if fsdp else "deepspeed")
            n_coll = ga * s.layers / layout.pp * per_layer
            t += n_coll * ring_latency_s(system, layout)
            hidden = overlap["fsdp" if fsdp else "zero3"] * compute_s
            # prefetch cannot hide the first block's gather of each pass
            hidden = min(hidden, t * (1.0 - 1.0 / max(1.0, s.layers / layout.pp)))
            # communication hides behind computation, but never more than the computation lasts
            comm += max(0.0, t - hidden)
        else:
            # only the last micro-batch's backward can hide the reduction (ZeRO-2: every micro-batch's own)
            t, exposed = dp_gradient_sync_s(
                system, layout, grad_bytes, backward_mb_s, forward_mb_s, float(overlap["zero" if layout.zero else "ddp"]),
                # Megatron-Core has no ZeRO-2: its distributed optimizer reduces at the accumulation boundary
                every_micro_batch=layout.zero == 2 and framework not in MEGATRON_CORE,
                gather_overlap=framework in comm_tab["param_gather_overlap_frameworks"]["frameworks"])
            comm += exposed
        comm_total += t
    if layout.tp > 1:
        per_ar = tokens_mb * s.hidden * 2.0
        n_ar = 4 + (2 if layout.checkpointing == "full" else 0)
        t_tp = tp_collective_s(system, layout.tp, per_ar)
        # TE userbuffers write into the peers' memory: without GPU peer-to-peer nothing hides (communication.pcie_vm)
        overlapped = layout.tp_comm_overlap and system.gpu_p2p
        hidden_share = float(comm_tab["tp_comm_overlap_share"]) if overlapped else float(overlap["tp"])
        if layout.tp_comm_overlap and not overlapped:
            notes.append(_("tp_comm_overlap needs GPU peer-to-peer (Transformer Engine userbuffers); {inst} stages GPU "
                           "traffic through host memory, so the TP all-reduces are not hidden").format(
                inst=system.instance_type or system.gpu.id))
        t_all = t_tp * n_ar * s.layers / layout.pp * layout.grad_accum
        comm += t_all * (1 - hidden_share)
        comm_total += t_all
        if layout.tp > system.gpus_per_node:
            notes.append(_("TP {tp} spans nodes: its all-reduces cross the inter-node network").format(tp=layout.tp))
    t_a2a = expert_all_to_all_s(system, s, layout, tokens_mb) * layout.grad_accum
    if t_a2a:
        comm += t_a2a * (1 - float(overlap["ep"]))
        comm_total += t_a2a
    if layout.cp > 1:
        # the ring's sends overlap the attention of the chunk already received; only what outlasts it is exposed
        passes = 3.0 + (1.0 if layout.checkpointing == "full" else 0.0)
        t_cp = context_parallel_s(system, s, layout, tokens_mb, passes) * layout.grad_accum
        attn_s = attn_hw_fpt / attn_rate * tokens_per_step / gpus / (peak * eff)
        comm += max(0.0, t_cp - attn_s)
        comm_total += t_cp
    if layout.pp > 1:
        t_p2p = pipeline_p2p_s(system, layout, tokens_mb * s.hidden * 2.0)
        comm += t_p2p * (1 - float(overlap["pp"]))
        comm_total += t_p2p
    offload_s = 0.0
    if layout.offload != "none" and task not in ("lora", "qlora"):
        local = trainable_params / (layout.tp * layout.pp) / (layout.dp if layout.zero >= 1 else 1)
        pcie = comm_tab["pcie_gb_s"].get(system.gpu.pcie_gen or 4, 31.5) * 1e9 * 0.6
        offload_s = local * 4.0 / pcie + local / 1.0e9  # grads down + params up; CPU Adam ~1e9 params/s
        if layout.offload == "nvme":
            offload_s += local * 12.0 / 2.0e9
        notes.append(_("optimizer step on the CPU (offload): PCIe transfers and CPU Adam are not overlapped"))
    step = compute_s + comm + offload_s
    tokens_per_s = tokens_per_step / step
    samples_per_s = tokens_per_s / (tokens_per_sample or seq_len)
    mfu = model_fpt * tokens_per_s / gpus / (peak / system.gpu_fraction if system.gpu_fraction else peak)
    tflops = hw_fpt * tokens_per_s / gpus / 1e12
    total = gpu_hours = None
    if dataset_tokens:
        total = dataset_tokens / tokens_per_s
        gpu_hours = total * gpus / 3600.0
    return TrainingPerf(step_time_s=step, tokens_per_s=tokens_per_s, tokens_per_s_per_gpu=tokens_per_s / gpus,
                        samples_per_s=samples_per_s, mfu=mfu, tflops_per_gpu=tflops,
                        comm_fraction=(comm + offload_s) / step if step else 0.0, compute_s=compute_s,
                        comm_exposed_s=comm, offload_s=offload_s, efficiency=eff, peak_tflops=peak / 1e12,
                        tokens_per_step=tokens_per_step, total_time_s=total, gpu_hours=gpu_hours, notes=notes,
                        comm_total_s=comm_total, bubble=bubble, loop_s=loop_s, optimizer_s=opt_s)
