"""The LLM training estimate of one resolved workload (estimate.core.estimate_resolved): the workload's
TrainingInputs, the training memory (memoized for the recommender's search), and the step time over the rows the
GPUs run (unpacked samples are padded to the longest of each micro-batch: estimate/lengths.py), read back in the
dataset's tokens."""

from __future__ import annotations

from gpuplan.estimate.lengths import dataset_lengths
from gpuplan.estimate.memory import MemoryEstimate, TrainingInputs, lora_param_count, training_memory, training_memory_key
from gpuplan.estimate.memory.common import adapter_param_bytes
from gpuplan.estimate.shapes import Shape
from gpuplan.estimate.system import Layout, System
from gpuplan.estimate.training.step import MEGATRON_CORE, training_perf
from gpuplan.i18n import _
from gpuplan.workload import Workload


def _adapters(model, t) -> tuple[float, float, float, float]:
    """What the adapted linears cost per decoder layer: (adapted linears outside the routed experts, adapted linears
    per routed expert) for the eager launches (an expert's run only for the experts a micro-batch touches), and (sum
    of adapted input widths, sum of adapted output widths) one token passes for their element-wise traffic (a token
    passes only the k routed experts it is sent to, k/E of each expert linear's E copies)."""
    try:
        shapes = model.linear_shapes_per_layer(t.lora_targets)
    except Exception:  # noqa: BLE001 - an unknown target list falls back to all linear layers, as lora_param_count
        shapes = model.linear_shapes_per_layer("all-linear")
    moe = getattr(model, "moe", None)
    experts = float(getattr(moe, "num_experts", 0) or 0)
    routed = float(moe.experts_per_token) / experts if moe is not None and experts else 1.0
    dense = per_expert = din = dout = 0.0
    for name, d_in, d_out, count in shapes:
        expert = bool(experts) and name.startswith("experts.")
        if expert:
            per_expert += count / experts
        else:
            dense += count
        share = count * (routed if expert else 1.0)
        din += d_in * share
        dout += d_out * share
    return dense, per_expert, din, dout


def _adapter_forward_bytes(t) -> float:
    """Bytes per element of the adapters' forward: their dtype (memory.common.adapter_param_bytes), except under
    Megatron-Core, whose forward runs the bf16 model parameters (the fp32 copies are the optimizer's main params)."""
    if t.framework in MEGATRON_CORE and t.precision != "fp32":
        return 2.0
    return adapter_param_bytes(t.framework, t.precision, t.lora_adapter_dtype)


def _training(w: Workload, model, s: Shape, system: System, layout: Layout, memory_only: bool = False,
              explain: bool = True, memo: dict | None = None):
    task = w.task or "full"
    ds = w.dataset
    tokens_per_sample = ds.tokens_per_sample if ds and ds.tokens_per_sample else None
    t = TrainingInputs(task=task, precision=w.precision or "bf16", quantization=w.quantization or "none",
                       optimizer=w.optimizer or "adamw", framework=w.framework or "auto",
                       flash=bool(w.flash_attention), seq_len=_longest_row(w),
                       lora_rank=w.lora.rank if w.lora else 8, lora_targets=w.lora.targets if w.lora else "all-linear",
                       lora_dropout=w.lora.dropout if w.lora else 0.05,
                       lora_adapter_dtype=w.lora.adapter_dtype if w.lora else None,
                       variable_length=(not w.packed) if w.packed is not None else task != "pretrain",
                       optimizer_in_backward=bool(w.optimizer_in_backward),
                       activation_offloading=bool(w.activation_offloading), compiled=bool(w.compile),
                       fused_loss=bool(w.fused_loss))
    with_notes = explain and not memory_only
    if memo is None:
        mem = training_memory(model, s, t, layout, system, with_notes=with_notes)
    else:
        key = (id(model), training_memory_key(s, t, layout, system, with_notes))
        known: MemoryEstimate | None = memo.get(key)
        if known is None:
            known = memo[key] = training_memory(model, s, t, layout, system, with_notes=with_notes)
        mem = known
    if memory_only:
        return mem, {}, []
    if task in ("lora", "qlora"):
        trainable, _targets = lora_param_count(model, t.lora_targets, t.lora_rank)
    else:
        trainable = s.params_total
    dataset_tokens = ds.total_tokens(t.seq_len) if ds else None
    adapted = _adapters(model, t) if task in ("lora", "qlora") else (0.0, 0.0, 0.0, 0.0)
    # unpacked samples shorter than seq_len: each micro-batch runs its longest sample's length (estimate/lengths.py)
    lengths = dataset_lengths(ds, t.seq_len, layout.micro_batch, t.framework, packed=not t.variable_length)
    run_len = max(1, round(lengths.padded_tokens)) if lengths else t.seq_len
    if lengths and dataset_tokens and tokens_per_sample:
        dataset_tokens = dataset_tokens / tokens_per_sample * lengths.kept_share * run_len   # padded tokens run
    perf = training_perf(s, task=task, precision=t.precision, quantization=t.quantization, framework=t.framework,
                         seq_len=run_len, layout=layout, system=system, trainable_params=trainable,
                         dataset_tokens=dataset_tokens, tokens_per_sample=run_len if lengths else tokens_per_sample,
                         flash=t.flash, optimizer=t.optimizer, adapted_linears=adapted[0],
                         adapted_expert_linears=adapted[1],
                         adapter_widths=(adapted[2], adapted[3]),
                         adapter_bytes=_adapter_forward_bytes(t),
                         lora_dropout=t.lora_dropout > 0, compiled=t.compiled, tf32=w.tf32 is not False,
                         attention_kernel=w.attention_kernel)
    notes = list(perf.notes)
    perf_d = perf.to_dict()
    if lengths and tokens_per_sample:
        _unpad(perf_d, lengths, tokens_per_sample, run_len)
        args = {"mean": f"{tokens_per_sample:.0f}", "sd": f"{tokens_per_sample * lengths.cv:.0f}",
                "padded": f"{lengths.padded_tokens:.0f}", "seq_len": t.seq_len,
                "share": f"{1 - lengths.kept_share:.0%}"}
        notes.append((_("unpacked samples of {mean} tokens on average (sd {sd}; log-normal, assumed): each micro-batch "
                        "is padded to its longest, {padded} tokens per row of {seq_len}; samples longer than {seq_len} "
                        "are dropped ({share} of them)") if lengths.policy == "delete" else
                      _("unpacked samples of {mean} tokens on average (sd {sd}; log-normal, assumed): each micro-batch "
                        "is padded to its longest, {padded} tokens per row of {seq_len}")).format(**args))
    notes.append(_("achievable hardware FLOPs utilisation {efficiency:.0%} of {peak_tflops:.0f} TFLOP/s dense ({gpu}, data/efficiency.yaml)").format(efficiency=perf.efficiency, peak_tflops=perf.peak_tflops, gpu=system.gpu.id))
    return mem, perf_d, notes


def _longest_row(w: Workload) -> int:
    """The longest row a training step runs: seq_len, or the dataset's longest sample when it is shorter (an
    unpacked batch is padded to its longest sample, never to max_length)."""
    seq = int(w.seq_len or 2048)
    ds = w.dataset
    if ds and ds.max_tokens_per_sample and not w.packed and ds.max_tokens_per_sample < seq:
        return max(1, int(ds.max_tokens_per_sample))
    return seq


def _unpad(perf: dict, lengths, tokens_per_sample: float, run_len: int) -> None:
    """Throughputs in the dataset's tokens, not the padded rows the GPUs ran: tokens/s is the rate the dataset's
    tokens (as tokens_per_sample counts them, dropped samples included) go by, so dataset tokens / tokens_per_s is
    the job's time; MFU counts the tokens trained."""
    if not perf.get("tokens_per_s"):
        return
    rate = perf["samples_per_s"] * tokens_per_sample / max(lengths.kept_share, 1e-9)
    ratio = rate / perf["tokens_per_s"]
    for key in ("tokens_per_s", "tokens_per_s_per_gpu"):
        if perf.get(key):
            perf[key] *= ratio
    if perf.get("mfu"):
        perf["mfu"] *= lengths.mean_tokens / run_len
