"""Expert-parallel training on the published clusters (bench/accuracy.py rows, dev set).

- A rank holds 1/ep of the routed experts (Megatron-Core expert parallelism; FSDP2 + EP), so its data-parallel
  gradient reduction moves only those (none when EP = DP): ``memory.expert_collective_fraction``, shared by the
  ZeRO-3 / FSDP gathers and the training step's gradient sync.
- The clusters' compute network is one NIC per GPU (DGX A100 200 Gb/s; DGX H100 / H200 / B200, H800 clusters and
  GB200 NVL72 400 Gb/s), not one per node.
"""

from pathlib import Path

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.memory import expert_collective_fraction, trainable_local_fraction
from gpuplan.estimate.memory.sharding import gathered_block_fraction
from gpuplan.estimate.shapes import shape_of
from gpuplan.estimate.system import Layout

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(acc):
    return {r["id"]: r for r in acc.load([ROOT / "bench" / "data" / "measurements-dev2.csv"])}


def test_a_rank_holds_one_ep_th_of_the_routed_experts():
    s = shape_of(resolve_model("deepseek-ai/DeepSeek-V3"))
    assert expert_collective_fraction(s, Layout(ep=1, dp=128)) == 1.0
    local = expert_collective_fraction(s, Layout(ep=64, dp=128))
    # ~97 % of the 671B parameters are routed experts (58 MoE layers of 256): a rank of EP 64 reduces ~4 % of its slice
    assert 0.03 < local < 0.06
    # at EP = DP each rank holds its experts alone: only the attention and shared layers are reduced (~3 %)
    assert expert_collective_fraction(s, Layout(ep=64, dp=64)) == pytest.approx(local - (1 - local) / 63, abs=0.01)
    assert expert_collective_fraction(shape_of(resolve_model("meta-llama/Llama-2-7b-hf")), Layout(ep=8, dp=8)) == 1.0
    # the gradients a rank reduces: the model's split when the whole model trains; LoRA adapters are not split so
    assert trainable_local_fraction(s, Layout(ep=64, dp=128), "pretrain") == local
    assert trainable_local_fraction(s, Layout(ep=64, dp=128), "lora") == 1.0


def test_deepseek_v3_on_gb200_nvl72_as_megatron_bridge_published(acc, rows):
    # Megatron-Bridge performance summary (25.11): DeepSeek-V3 on 256 GB200, TP1 PP4 EP64, 3,139 tokens/s per GPU.
    # Reducing all 671B parameters' gradients over DP, through one 400 Gb/s NIC per 72-GPU rack, the estimate was 896
    row = rows["H373-mbridge"]
    pred = acc.predict_with_estimate(row)[0]
    assert pred == pytest.approx(float(row["value"]), rel=0.15)


def test_deepseek_v3_pretraining_gpu_hours_within_a_factor_of_three(acc, rows):
    # DeepSeek-V3 technical report: 2.664M H800 GPU-hours for pre-training. The estimate was 30.5M (11x) with the
    # gradients of every expert reduced over DP through 50 Gb/s per GPU; it is now within 3x: the rest is DualPipe,
    # which hides the expert all-to-all behind computation (not modelled: Megatron-Core's overlap is opt-in)
    row = rows["H612-dsv3h800"]
    pred = acc.predict_with_estimate(row)[0]
    assert float(row["value"]) < pred < 3.0 * float(row["value"])


def test_routed_experts_are_all_the_experts_not_the_unused_ones():
    # Mixtral 8x7B: 32 layers x 8 experts x 3 x 4,096 x 14,336 = 45.1B routed-expert weights of 46.7B. Counting only the
    # 6 experts a token does not use (34B) made EP 8 keep 34 % of a rank's slice instead of 16 %
    s = shape_of(resolve_model("mistralai/Mixtral-8x7B-v0.1"))
    assert s.routed_expert_params == pytest.approx(32 * 8 * 3 * 4096 * 14336, rel=0.01)
    assert expert_collective_fraction(s, Layout(ep=8, dp=16)) == pytest.approx(1 - 45.1 / 46.7 * 7 / 8, abs=0.01)


def test_wide_expert_parallel_serving_holds_one_ep_th_of_the_experts(acc, rows):
    # rtp-llm's DeepSeek-V3 decode instance: 144 H800, DP 144 = EP 144, 92 requests per GPU (1,850 tokens/s per GPU).
    # Each GPU holds the attention and shared layers and 1/144 of the routed experts (~20 GiB in FP8), not the whole
    # 666 GiB model; and the instance's throughput is its 144 ranks'
    row = rows["H614-rtpdsh800"]
    pred, fits, _note, est = acc.predict_with_estimate(row)
    assert fits
    assert est.memory.components["weights"] / 2**30 < 25
    assert float(row["value"]) / 3 < pred < float(row["value"])   # within 3x, slow: wide-EP decode is not modelled


def _mixtral_states(ep: int, zero: int):
    from gpuplan.estimate.core import estimate

    est = estimate({"model": "mistralai/Mixtral-8x7B-v0.1", "task": "full", "precision": "bf16", "framework": "megatron",
                    "seq_len": 4096, "batch_size": 1, "grad_checkpointing": True,
                    "hardware": {"gpu": "H100-SXM-80GB", "count": 8},
                    "parallel": {"tp": 1, "pp": 1, "dp": 8, "ep": ep, "zero": zero}})
    return est.memory.components


def test_the_optimizer_shards_experts_over_the_expert_data_parallel_group():
    # Megatron-Core builds the experts' distributed optimizer over the expert-data-parallel group (expt_dp, DP / EP
    # ranks): at EP 8 of DP 8 a rank keeps its own 1/8 of the experts with all their states. Sharding the rank's
    # 1/8 again over all 8 DP ranks counted 1/64 of the experts' states
    sharded, replicated = _mixtral_states(8, 1), _mixtral_states(1, 1)
    assert sharded["optimizer"] == pytest.approx(replicated["optimizer"], rel=0.01)   # 46.7B x 12 B / 8 either way
    assert sharded["weights"] < replicated["weights"] / 4                            # weights: EP keeps 1/8 of experts
    # without a sharded optimizer EP is what splits the states
    assert _mixtral_states(8, 0)["optimizer"] == pytest.approx(_mixtral_states(1, 0)["optimizer"] * (1 - 45.1 / 46.7 * 7 / 8),
                                                              rel=0.02)


def test_a_sharded_rank_gathers_only_its_own_experts():
    # FSDP2 + EP (NeMo AutoModel) and Megatron-Core shard a rank's experts over the expert-data-parallel group, DP / EP
    # ranks: a DeepSeek-V3 block of 256 experts is ~11B parameters, but at EP 64 of DP 64 a rank holds its 4 experts
    # whole and gathers only the attention and shared expert; at DP 128 it gathers its 4 experts' other half as well
    s = shape_of(resolve_model("deepseek-ai/DeepSeek-V3"))
    block = s.attn_params_layer + s.mlp_params_layer_total
    experts = s.routed_expert_params / s.layers
    assert gathered_block_fraction(s, Layout(ep=1), 64) == 1.0
    assert gathered_block_fraction(s, Layout(ep=64), 64) == pytest.approx((block - experts) / block)
    assert gathered_block_fraction(s, Layout(ep=64), 128) == pytest.approx((block - experts + experts / 64) / block)
    assert gathered_block_fraction(s, Layout(ep=64), 64) < 0.1


@pytest.mark.parametrize("rid", ["H375-automodel", "H376-automodel", "H377-automodel", "H378-automodel"])
def test_nemo_automodel_moe_pretraining_runs_fit_the_h100(acc, rows, rid):
    # NeMo AutoModel's performance summary (2025-10): Qwen3-30B-A3B, gpt-oss-20b / 120b and DeepSeek-V3 pre-trained on
    # 80 GB H100s with FSDP2 + EP. The estimate read all four as not fitting (87-138 GiB): it gathered every expert of
    # a block, and built the models in fp32-master mixed precision where AutoModel builds them in bf16 and steps
    # them with torch.optim.Adam in place (bf16 moments)
    row = rows[rid]
    est = acc.predict_with_estimate(row)[-1]
    assert est.memory.fits
    assert est.memory.per_gpu_bytes < 0.85 * est.memory.capacity_bytes
