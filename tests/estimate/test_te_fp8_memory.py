"""Transformer Engine FP8 training memory (issue 12, fit2), and NeMo 24.07's published runs fitting with
NeMo's own defaults.

Mechanism (NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py, 1.x): under FP8 each TE
Linear keeps an FP8 copy and an FP8 transpose of its weight as workspaces across micro-batches (Megatron-Core
passes is_first_microbatch), and saves for its weight gradient the FP8 cast-transpose of its input instead of
the 16-bit input (saved_inputmat_t = inputmat_t); NeMo's FP8 recipes keep FP8 primary weights instead
(fp8_param_gather). torchao's Float8Linear (torchtune, torchtitan) saves the
high-precision input and keeps no weight cache."""

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.shapes import shape_of

# NeMo performance summary, container NeMo 24.07, DGX-H100 (docs/source/performance/performance_summary.md
# @070a0bb): Llama-2-70B pre-training on 64 GPUs, GBS 128, MBS 1, seq 4096, TP 4, PP 4, VP 20, FP8.
L70 = {"model": "meta-llama/Llama-2-70b-hf", "task": "pretrain", "framework": "nemo", "precision": "fp8",
       "grad_checkpointing": False, "seq_len": 4096, "batch_size": 1, "gradient_accumulation": 32,
       "parallel": {"tp": 4, "pp": 4, "vp": 20}, "hardware": {"gpu": "H100-SXM-80GB", "count": 64}}


def _block_params_per_gpu(model_id: str, layers: int, tp: int) -> float:
    s = shape_of(resolve_model(model_id))
    return layers * (s.attn_params_layer + s.mlp_params_layer_total) / tp


def test_te_fp8_keeps_an_fp8_weight_and_transpose_per_block_weight():
    """Megatron-LM (bf16 weights, --fp8-param-gather off by default): TE caches FP8 data + transpose."""
    mlm = {**L70, "framework": "megatron", "parallel": {"tp": 4, "pp": 4, "zero": 1}}
    fp8 = estimate(mlm).memory
    bf16 = estimate({**mlm, "precision": "bf16"}).memory
    cache = _block_params_per_gpu(L70["model"], 80 // 4, 4) * 2.0   # 2 bytes: FP8 data + FP8 transpose
    # 20 layers of Llama-2-70B on one TP4 rank: ~0.86e9 x 20 / 4 = 4.3e9 block weights -> ~8 GiB of FP8 caches
    assert cache / 2**30 == pytest.approx(8.0, rel=0.05)
    assert fp8.components["weights"] - bf16.components["weights"] == pytest.approx(cache, rel=1e-6)


def test_nemo_fp8_recipes_keep_fp8_primary_weights():
    """NeMo 2.x bf16_with_fp8_mixed sets fp8_param_gather: FP8 weights (data + transpose) replace the bf16
    copy, so the weights cost what bf16 weights cost."""
    fp8 = estimate(L70).memory
    bf16 = estimate({**L70, "precision": "bf16"}).memory
    assert fp8.components["weights"] == pytest.approx(bf16.components["weights"], rel=1e-9)


def test_te_fp8_saves_linear_inputs_in_one_byte():
    s = shape_of(resolve_model(L70["model"]))
    fp8 = estimate(L70)
    bf16 = estimate({**L70, "precision": "bf16"})
    tokens, tp = 4096, 4
    # first stage: 20 layers x (p + (p-1)/v) = 4.15 micro-batches in flight (interleaved 1F1B, VP 20)
    stage_layers = 80 // 4 * (fp8.layout.pp + (fp8.layout.pp - 1) / fp8.layout.vp)
    # QKV and fc1 inputs (the norm outputs: split by tp under sequence parallelism), out-proj and fc2 inputs
    saved = (2 * s.hidden / tp + (s.hidden + s.moe_active_ffn) / tp) * tokens * stage_layers
    assert bf16.memory.components["activations"] - fp8.memory.components["activations"] \
        == pytest.approx(saved, rel=1e-6)


def test_torchao_float8_stacks_keep_16bit_inputs_and_no_weight_cache():
    wl = {"model": "meta-llama/Llama-3.1-8B", "task": "pretrain", "framework": "torchtune", "seq_len": 4096,
          "batch_size": 1, "grad_checkpointing": False, "hardware": {"gpu": "H100-SXM-80GB", "count": 8}}
    a = estimate({**wl, "precision": "fp8"}).memory.components
    b = estimate({**wl, "precision": "bf16"}).memory.components
    assert a["weights"] == pytest.approx(b["weights"]) and a["activations"] == pytest.approx(b["activations"])


NEMO_2407 = {"framework": "nemo", "precision": "fp8", "grad_checkpointing": False, "seq_len": 4096,
             "batch_size": 1, "hardware": {"gpu": "H100-SXM-80GB"}}


@pytest.mark.parametrize("wl", [
    # Pretraining: Llama-2-70B, 64 GPUs, GBS 128, TP 4, PP 4, VP 20
    {**L70},
    # Pretraining: GPT-3 175B, 128 GPUs, GBS 256, MBS 1, seq 2048, TP 4, PP 8, VP 6
    {**NEMO_2407, "task": "pretrain", "model": "megatron-lm:gpt-175b", "seq_len": 2048, "gradient_accumulation": 64,
     "parallel": {"tp": 4, "pp": 8, "vp": 6}, "hardware": {"gpu": "H100-SXM-80GB", "count": 128}},
    # LoRA (SQuAD packed to 4096): Llama-2-70B, 8 GPUs, GBS 32, TP 2, PP 4; NeMo's LoRA defaults
    # (conf/peft/llama/squad.yaml @ launcher 24.07: adapter_dim 32 on attention_qkv, adapter_dropout 0.0)
    {**NEMO_2407, "task": "lora", "model": "meta-llama/Llama-2-70b-hf", "gradient_accumulation": 32,
     "lora": {"rank": 32, "targets": ["q_proj", "k_proj", "v_proj"], "dropout": 0.0},
     "parallel": {"tp": 2, "pp": 4}, "hardware": {"gpu": "H100-SXM-80GB", "count": 8}},
])
def test_nemo_2407_published_fp8_runs_fit(wl):
    """Completed NeMo 24.07 runs fit 80 GB with the FP8 weight caches counted, because NeMo runs sequence
    parallelism with TP (launcher 24.07 training configs: sequence_parallel true, no activation recompute)."""
    e = estimate(wl)
    assert e.layout.sp
    assert e.memory.fits, e.memory.per_gpu_bytes / 2**30


def test_interleaved_schedule_first_stage_holds_p_plus_p_minus_1_over_v_micro_batches():
    """Megatron-LM's interleaved 1F1B warms rank 0 up with 2(p-1) + (v-1)p chunks of L/(p·v) layers: its
    activations are (1 + (p-1)/(p·v)) x those of 1F1B (Narayanan et al. 2021, 'Efficient Large-Scale
    Language Model Training on GPU Clusters', §2.2.2); the NeMo 24.07 70B row uses p = 4, v = 20."""
    bf16 = {**L70, "precision": "bf16"}
    inter = estimate(bf16)
    plain = estimate({**bf16, "parallel": {"tp": 4, "pp": 4, "vp": 1}})
    assert inter.layout.schedule == "interleaved" and plain.layout.schedule == "1f1b"
    ratio = inter.memory.components["activations"] / plain.memory.components["activations"]
    assert ratio == pytest.approx(1 + 3 / (4 * 20), rel=1e-6)
