"""Memory options and stack mechanisms pinned to published figures (issue 12, acc-mem): activation
offloading, packing and torch.compile (torchtune), Megatron-Core's fused SwiGLU and fp32 main grads,
DeepSpeed ZeRO-3's live-parameter cap, and the fit of published Megatron-class runs."""

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.estimate.memory import activation_bytes_per_token_layer, eager_score_bytes
from gpuplan.estimate.shapes import shape_of
from gpuplan.catalog.models import resolve_model
from gpuplan.units import GIB
from gpuplan.workload import parse_workload, workload_json_schema

# torchtune README "Optimization flags" (commit 1814feb, 2024-11-18): Llama 3.2 3B, full_finetune_single_device,
# batch 2, max_seq_len 4096, packed, compile, CEWithChunkedOutputLoss, bf16, A100; "Peak Memory Active (GiB)".
TT_3B = {"model": "meta-llama/Llama-3.2-3B-Instruct", "task": "full", "framework": "torchtune", "precision": "bf16",
         "optimizer": "adamw", "batch_size": 2, "seq_len": 4096, "packed": True, "compile": True,
         "grad_checkpointing": True, "flash_attention": True, "optimizer_in_backward": False,
         "hardware": {"gpu": "A100-SXM4-80GB", "count": 1}}


def _alloc(wl: dict) -> float:
    return estimate(wl).memory.peak_allocated_bytes / GIB


def test_torchtune_optimization_flags_full_finetune():
    """+ Activation Checkpointing 24.9 GiB; + optimizer step fused into backward 23.1; + activation
    offloading 21.8 (torchtune README 'Optimization flags', Llama 3.2 3B on an A100)."""
    assert _alloc(TT_3B) == pytest.approx(24.9, rel=0.10)
    assert _alloc({**TT_3B, "optimizer_in_backward": True}) == pytest.approx(23.1, rel=0.10)
    assert _alloc({**TT_3B, "optimizer_in_backward": True, "activation_offloading": True}) \
        == pytest.approx(21.8, rel=0.10)


def test_activation_offloading_moves_checkpoints_to_host():
    base = {**TT_3B, "optimizer_in_backward": True}
    on = estimate({**base, "activation_offloading": True}).memory
    off = estimate(base).memory
    assert on.components["activations"] < off.components["activations"]
    moved = off.components["activations"] - on.components["activations"]
    # the 28 checkpointed layer inputs (28 x 8192 x 3072 x 2 bytes = 1.3 GiB) less the resident layers
    assert moved == pytest.approx(26 * 8192 * 3072 * 2, rel=0.05)
    assert on.host_bytes - off.host_bytes == pytest.approx(moved, rel=0.01)
    assert any("offloading" in n for n in on.notes)


@pytest.mark.parametrize("ckpt", [True, False])
@pytest.mark.parametrize("seq", [1024, 4096])
def test_activation_offloading_never_adds_gpu_memory(ckpt, seq):
    wl = {**TT_3B, "grad_checkpointing": ckpt, "seq_len": seq}
    assert estimate({**wl, "activation_offloading": True}).memory.per_gpu_bytes \
        <= estimate(wl).memory.per_gpu_bytes


def test_compiled_chunked_loss_keeps_bf16_chunks():
    """torchtune's CEWithChunkedOutputLoss returns 8 bf16 chunks (2 bytes per vocabulary entry per token);
    compiled, each chunk's fp32 work is fused and transient (4 / 8): 2.5 bytes. Eager it also saves the fp32
    log-softmax of every chunk (6 bytes)."""
    wl = {**TT_3B, "task": "lora", "grad_checkpointing": True}
    eager = estimate({**wl, "compile": False}).memory.components["logits"]
    comp = estimate(wl).memory.components["logits"]
    tokens, vocab = 2 * 4096, 128256
    assert comp == pytest.approx(tokens * vocab * 2.5, rel=1e-6)
    assert eager == pytest.approx(tokens * vocab * 6.0, rel=1e-6)
    # a framework without a compiled entry keeps its eager logits
    hf = {**wl, "framework": "transformers"}
    assert estimate(hf).memory.components["logits"] == estimate({**hf, "compile": False}).memory.components["logits"]


def test_packed_batches_reserve_less_than_padded_ones():
    wl = {**TT_3B, "task": "lora"}
    packed = estimate(wl).memory
    padded = estimate({**wl, "packed": False}).memory
    assert packed.peak_allocated_bytes == padded.peak_allocated_bytes
    assert packed.peak_reserved_bytes < padded.peak_reserved_bytes


def test_torchtune_adapters_stay_bf16():
    """torchtune builds LoRA adapters in the model dtype (bf16 weights, grads and AdamW states: 8 bytes per
    adapter parameter); PEFT upcasts them to fp32 (16 bytes)."""
    wl = {**TT_3B, "task": "lora", "lora": {"rank": 64, "targets": "all-linear", "dropout": 0.0}}
    tt = estimate(wl).memory.components["adapters"]
    hf = estimate({**wl, "framework": "transformers"}).memory.components["adapters"]
    assert tt == pytest.approx(hf / 2.0, rel=1e-6)


def test_new_workload_keys_default_unset_and_in_schema():
    w = parse_workload({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"})
    assert w.activation_offloading is None and w.packed is None and w.compile is None
    props = workload_json_schema()["properties"]
    assert {"activation_offloading", "packed", "compile"} <= set(props)


def test_megatron_fused_swiglu_keeps_six_f():
    """Megatron-Core's fused SwiGLU saves only its input (the fused gate|up output, 4 bytes per f) and the
    second linear saves its output (2): 6·f bytes per token where eager PyTorch keeps 8·f."""
    s = shape_of(resolve_model("meta-llama/Llama-3.1-8B"))
    kw = dict(flash=True, seq_len=4096)
    hf = activation_bytes_per_token_layer(s, "bf16", "transformers", **kw)
    mg = activation_bytes_per_token_layer(s, "bf16", "megatron", **kw)
    c_hf, c_mg = 20, 12  # memory.act_hidden_coeff
    assert hf - mg == pytest.approx((c_hf - c_mg) * s.hidden + 2.0 * s.moe_active_ffn)


def test_megatron_fused_softmax_keeps_five_bytes_per_score():
    """Korthikanti et al. 2022, Table 2: 5as^2b for the attention scores (softmax output, dropout mask and
    dropout output) in Megatron's fused kernel; Hugging Face eager keeps 6 (16-bit product + fp32 softmax)."""
    assert eager_score_bytes("megatron") == 5
    assert eager_score_bytes("transformers") == 6


LLAMA3_405B = {"model": "meta-llama/Llama-3.1-405B", "task": "pretrain", "framework": "megatron", "precision": "bf16",
               "batch_size": 1, "seq_len": 8192, "gradient_accumulation": 32, "grad_checkpointing": False,
               "flash_attention": True,
               "parallel": {"tp": 8, "pp": 16, "dp": 64, "zero": 2, "sp": True},
               "hardware": {"gpu": "H100-SXM-80GB", "count": 8192}}


def test_llama3_405b_pretraining_fits_h100():
    """The Llama 3 Herd of Models, Table 4 and section 3.3.2: 405B pre-trained on 8,192 H100-80GB with TP8,
    PP16, DP64 (FSDP sharding optimizer states and gradients, no resharding after forward), 8K sequences
    without activation checkpointing: the run completed, so it must fit."""
    mem = estimate(LLAMA3_405B).memory
    assert mem.fits
    # 16 micro-batches in flight on the first stage dominate: activations are most of the memory
    assert mem.components["activations"] > 0.6 * mem.per_gpu_bytes


@pytest.mark.parametrize("framework", ["megatron", "fsdp"])
def test_fp32_gradient_stacks(framework):
    """Megatron-LM distributed-optimizer docs: bf16 parameter 2 + fp32 gradient 4 + fp32 main parameter and
    Adam moments 12 = 18 bytes per parameter without the distributed optimizer. PyTorch FSDP mixed precision
    keeps fp32 sharded parameters, hence fp32 gradients (MixedPrecisionPolicy reduce_dtype fp32)."""
    wl = {**LLAMA3_405B, "model": "meta-llama/Llama-3.1-8B", "parallel": {"tp": 8, "pp": 1, "dp": 1},
          "framework": framework,
          "gradient_accumulation": 2, "grad_checkpointing": True, "hardware": {"gpu": "H100-SXM-80GB", "count": 8}}
    mg = estimate(wl).memory.components
    ds = estimate({**wl, "framework": "deepspeed"}).memory.components
    assert mg["gradients"] == pytest.approx(2.0 * ds["gradients"], rel=1e-6)


def test_deepspeed_zero3_gathers_at_most_the_live_parameter_cap():
    """DeepSpeed ZeRO-3 releases gathered parameters beyond stage3_max_live_parameters (default 1e9) and
    reduces gradients in reduce_bucket_size buckets (5e8): for GPT-3 530B-class blocks (5e9 parameters) the
    gathered memory stays near those caps, so Narayanan et al. 2021 (Table 2) could run 530B with ZeRO-3
    on 640 A100-80GB at micro-batch 4."""
    wl = {"model": "megatron-lm:gpt-530b", "task": "pretrain", "framework": "deepspeed", "precision": "fp16",
          "batch_size": 4, "gradient_accumulation": 1, "seq_len": 2048, "grad_checkpointing": True,
          "flash_attention": False, "parallel": {"tp": 1, "pp": 1, "dp": 640, "zero": 3},
          "hardware": {"gpu": "A100-SXM4-80GB", "count": 640}}
    mem = estimate(wl).memory
    shard = 529.6e9 * 2 / 640
    gathered = mem.components["weights"] - shard
    assert gathered < 10 * GIB           # not two whole 10 GB blocks plus a 20 GB fp32 bucket
    assert gathered > 2e9                # at least the 1e9 live fp16 parameters
    # a small model's blocks are below the caps: two gathered blocks, as before
    small = {**wl, "model": "Qwen/Qwen2.5-7B-Instruct", "precision": "bf16", "parallel": {"dp": 8, "zero": 3},
             "hardware": {"gpu": "A100-SXM4-80GB", "count": 8}}
    s = estimate(small).memory
    assert s.components["weights"] > 7.6e9 * 2 / 8


H200_LORA = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "framework": "transformers", "precision": "bf16",
             "optimizer": "adamw-fused", "batch_size": 2, "seq_len": 4096, "grad_checkpointing": True,
             "flash_attention": True, "lora": {"rank": 8, "alpha": 16, "targets": "all-linear", "dropout": 0.05},
             "hardware": {"gpu": "H200-SXM-141GB", "count": 1}}


def test_loss_and_recompute_peaks_follow_one_another():
    """With full recomputation the loss runs (and frees its logits) before the last layer is rebuilt: the
    allocated peak holds the larger of the two. Our own H200 run (bench/data/h200-calibration.csv G013:
    Qwen2.5-7B LoRA, batch 2 x 4096, transformers 5.17, torch.cuda.max_memory_allocated 30.08 GiB) sits on
    weights + checkpoints + the logits pipeline at its 12-byte peak, with no recomputed layer on top."""
    mem = estimate(H200_LORA).memory
    assert mem.peak_allocated_bytes / GIB == pytest.approx(30.08, rel=0.05)
    tokens, vocab = 2 * 4096, 152064
    assert mem.components["logits"] == pytest.approx(tokens * vocab * 12, rel=1e-6)
    # the reserved figure still holds both (the caching allocator keeps the freed logit segments)
    assert mem.peak_reserved_bytes > mem.peak_allocated_bytes


@pytest.mark.parametrize("seq", [512, 2048, 8192])
def test_peaks_grow_with_sequence_length_under_recomputation(seq):
    a = estimate({**H200_LORA, "seq_len": seq}).memory
    b = estimate({**H200_LORA, "seq_len": seq * 2}).memory
    assert b.peak_allocated_bytes > a.peak_allocated_bytes
    assert b.peak_reserved_bytes > a.peak_reserved_bytes


# NeMo Framework performance summary (container 25.02, FP8 pre-training): published runs that completed.
NEMO = {"task": "pretrain", "framework": "nemo", "precision": "fp8", "grad_checkpointing": False, "seq_len": 8192}


@pytest.mark.parametrize("wl", [
    # DGX-B200: LLAMA3-70B, 64 GPUs, GBS 128, MBS 1, TP 2, PP 4, CP 2, VP 5
    {**NEMO, "model": "meta-llama/Llama-3.1-70B", "batch_size": 1, "gradient_accumulation": 32,
     "parallel": {"tp": 2, "pp": 4, "cp": 2, "vp": 5}, "hardware": {"gpu": "B200", "count": 64}},
    # DGX-B200: LLAMA3-405B, 128 GPUs, GBS 64, MBS 1, TP 4, PP 8, CP 2, VP 8
    {**NEMO, "model": "meta-llama/Llama-3.1-405B", "batch_size": 1, "gradient_accumulation": 32,
     "parallel": {"tp": 4, "pp": 8, "cp": 2, "vp": 8}, "hardware": {"gpu": "B200", "count": 128}},
    # DGX-H100: GPT3-175B, 512 GPUs, GBS 2048, MBS 2, seq 2048, TP 4, PP 8, VP 6
    {**NEMO, "model": "megatron-lm:gpt-175b", "seq_len": 2048, "batch_size": 2, "gradient_accumulation": 64,
     "parallel": {"tp": 4, "pp": 8, "vp": 6}, "hardware": {"gpu": "H100-SXM-80GB", "count": 512}},
])
def test_nemo_performance_runs_fit(wl):
    """NeMo's defaults (distributed optimizer, sequence parallelism with TP) and context parallelism let the
    published runs fit; without them the 175B run would hold ~60 GiB of unsharded optimizer state alone."""
    e = estimate(wl)
    assert e.memory.fits
    assert e.layout.zero == 1 and e.layout.sp


def test_context_parallel_splits_activations_and_shards_optimizer_over_dp_cp():
    base = {**NEMO, "precision": "bf16", "model": "meta-llama/Llama-3.1-8B", "batch_size": 1,
            "gradient_accumulation": 16, "hardware": {"gpu": "H100-SXM-80GB", "count": 8}}
    one = estimate({**base, "parallel": {"cp": 1}})
    two = estimate({**base, "parallel": {"cp": 2}})
    assert two.layout.gpus == 8 and two.layout.dp == 4 and two.layout.cp == 2
    c1, c2 = one.memory.components, two.memory.components
    assert c2["activations"] == pytest.approx(c1["activations"] / 2, rel=1e-6)
    assert c2["logits"] == pytest.approx(c1["logits"] / 2, rel=1e-6)
    assert c2["optimizer"] == pytest.approx(c1["optimizer"], rel=1e-6)   # ZeRO-1 over DP x CP = 8 either way
    assert c2["weights"] == pytest.approx(c1["weights"], rel=1e-6)       # replicated across CP ranks
    # without CP the same 8K run does not fit one H100 (34 GiB of activations on 56 GiB of states)
    assert not one.memory.fits and two.memory.fits


def test_cp_must_divide_the_gpus():
    from gpuplan.errors import GpuplanError
    with pytest.raises(GpuplanError):
        estimate({**NEMO, "model": "meta-llama/Llama-3.1-8B", "parallel": {"tp": 2, "cp": 3},
                  "hardware": {"gpu": "H100-SXM-80GB", "count": 8}})


def test_framework_defaults_for_sp_and_distributed_optimizer():
    wl = {**NEMO, "precision": "bf16", "model": "meta-llama/Llama-3.1-8B", "gradient_accumulation": 4,
          "parallel": {"tp": 2}, "hardware": {"gpu": "H100-SXM-80GB", "count": 8}}
    assert estimate(wl).layout.sp and estimate(wl).layout.zero == 1
    ds = estimate({**wl, "framework": "deepspeed"}).layout
    assert not ds.sp and ds.zero == 0
    told = estimate({**wl, "parallel": {"tp": 2, "sp": False, "zero": 0}}).layout
    assert not told.sp and told.zero == 0
