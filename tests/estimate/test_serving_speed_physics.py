"""Decode-speed physics added for issue 12, pinned to published figures.

Sources:
- gpt-fast README, pytorch-labs/gpt-fast @ 0f925b5 ("Benchmarks"; A100-80GB at 330 W, batch 1, 5-token
  prompt, 200 new tokens): Llama-2-7B int8 155.58, int4 (G=32) 196.80; Llama-2-70B int8 19.13, int4 25.25 tok/s.
- Qwen speed benchmark (QwenLM/Qwen2.5 docs/source/getting_started/speed_benchmark.md @ ac72724; SGLang
  0.4.6.post1 on one H20-96GB, batch 1, 1-token prompt, 2048 generated): Qwen3-30B-A3B BF16 137.18, Qwen3-4B
  BF16 133.13 prompt+generated tok/s — the MoE with 3.3B active parameters decodes like a 4B dense model.
- aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0) kernel databases: all-reduce latency by message size and GPU count
  (H200 SGLang 0.5.9 custom all-reduce; L40S vLLM 0.14.0 custom all-reduce and NCCL 2.27.3).
- NVIDIA NIM LLM benchmarking page (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance, NIM 1.8.0):
  Llama-3.3-70B-Instruct FP8 TP2 on 2 x H100-80GB, 5000 in / 500 out, concurrency 1: 51.67 output tok/s
  (ITL 18.58 ms).
"""

from __future__ import annotations

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate
from gpuplan.estimate.serving.decode import ServingCase, decode_step_time
from gpuplan.estimate.shapes import shape_of, weight_bytes
from gpuplan.estimate.system import Layout, System


def _rel(pred: float, ref: float) -> float:
    return abs(pred - ref) / ref


def _serve(**kw):
    base = dict(task="inference", precision="bf16", prompt_tokens=5, output_tokens=200, batch_size=1)
    base.update(kw)
    return estimate(base).performance


@pytest.mark.parametrize("model,quant,ref", [
    ("meta-llama/Llama-2-7b-hf", "int8", 155.58),
    ("meta-llama/Llama-2-7b-hf", "int4", 196.80),
    ("meta-llama/Llama-2-70b-hf", "int8", 19.13),
    ("meta-llama/Llama-2-70b-hf", "int4", 25.25),
])
def test_gpt_fast_weight_only_quantized_decode(model, quant, ref):
    p = _serve(model=model, framework="torch-compile", quantization=quant,
               hardware={"gpu": "A100-SXM4-80GB", "count": 1})
    assert _rel(p["output_tokens_per_s"], ref) < 0.2, (p["output_tokens_per_s"], ref)


def test_moe_decodes_at_the_speed_of_its_active_experts():
    hw = {"gpu": "H20-96GB", "count": 1}
    kw = dict(framework="sglang", framework_version="0.4.6.post1", prompt_tokens=1, output_tokens=2048, hardware=hw)
    moe = _serve(model="Qwen/Qwen3-30B-A3B", **kw)["output_tokens_per_s"]
    dense = _serve(model="Qwen/Qwen3-4B", **kw)["output_tokens_per_s"]
    # published: 137.18 / 133.13 = 1.03 (same table, same stack and GPU)
    assert 0.8 < moe / dense < 1.3, (moe, dense)


def test_moe_decode_step_grows_with_the_experts_a_batch_touches():
    from gpuplan.estimate.serving.decode import decode_consts, decode_step
    from gpuplan.estimate.params import table

    m = resolve_model("Qwen/Qwen3-30B-A3B")
    s = shape_of(m)
    sys1 = System(gpu=get_gpu("H100-SXM5-80GB"), gpus_per_node=1, nodes=1, intra_link="none")
    case = ServingCase(precision="bf16", quantization="none", kv_dtype_bytes=2.0, framework="vllm",
                       prompt_tokens=128, output_tokens=128)
    c = decode_consts(s, case, Layout(), sys1, [])
    overhead = table("inference", "engine_step_overhead_s", "vllm")
    # the kernels' own time: the step less its fixed costs (kernel latencies, the engine's step overhead)
    gpu = [decode_step(c, b, 128.0) - c.fixed_s(b) - overhead for b in (1, 2, 8, 64, 512)]
    assert gpu == sorted(gpu)                            # more tokens, more experts read
    all_weights = weight_bytes(s, "bf16", "none")[0] / (sys1.gpu.mem_bandwidth_gb_s * 1e9)
    assert gpu[0] < 0.4 * all_weights                    # batch 1 reads 8 of 128 experts per layer
    assert gpu[-1] > 0.9 * all_weights                   # a large batch touches every expert


def test_moe_pads_each_touched_experts_rows_to_the_kernel_tile():
    """A fused-MoE GEMM runs whole row tiles per touched expert: at batch 1 the 8 routed experts compute
    16 rows each (vLLM/SGLang fused_moe BLOCK_SIZE_M), under expert parallelism DeepGEMM's 64."""
    from gpuplan.estimate.serving.decode import decode_consts

    s = shape_of(resolve_model("deepseek-ai/DeepSeek-R1"))
    sys8 = System(gpu=get_gpu("H20-96GB"), gpus_per_node=8, nodes=1, intra_link="nvswitch")
    case = ServingCase(precision="bf16", quantization="fp8", kv_dtype_bytes=2.0, framework="sglang",
                       prompt_tokens=128, output_tokens=128)
    tp = decode_consts(s, case, Layout(tp=8), sys8, [])
    ep = decode_consts(s, case, Layout(tp=8, ep=8, dp_attention=True), sys8, [])
    assert tp.expert_rows(1) == pytest.approx(8 * 16)
    assert ep.expert_rows(1) == pytest.approx(8 * 64)
    # a large batch fills the tiles: the rows are the tokens' own (k rows per token)
    assert tp.expert_rows(4096) == pytest.approx(4096 * 8, rel=0.01)


def test_dense_decode_is_unchanged_by_the_moe_term():
    s = shape_of(resolve_model("Qwen/Qwen2.5-7B-Instruct"))
    sys1 = System(gpu=get_gpu("A100-SXM4-80GB"), gpus_per_node=1, nodes=1, intra_link="none")
    case = ServingCase(precision="bf16", quantization="none", kv_dtype_bytes=2.0, framework="vllm",
                       prompt_tokens=1, output_tokens=1)
    t1 = decode_step_time(s, case, Layout(), sys1, 1, 1.0, [])
    t2 = decode_step_time(s, case, Layout(), sys1, 2, 1.0, [])
    assert t2 < 1.05 * t1   # weights read once for the batch: batch 2 costs barely more than batch 1


def test_nim_trtllm_fp8_70b_tp2_concurrency_one():
    p = _serve(model="meta-llama/Llama-3.3-70B-Instruct", framework="trtllm", quantization="fp8",
               prompt_tokens=5000, output_tokens=500, parallel={"tp": 2},
               hardware={"gpu": "H100-SXM5-80GB", "count": 2})
    assert _rel(p["output_tokens_per_s"], 51.67) < 0.2, p["output_tokens_per_s"]


def test_engine_tp_all_reduce_is_cheaper_than_nccl_ring_at_decode_sizes():
    """Two all-reduces per layer at the measured latency of the engine's custom all-reduce (aiconfigurator's
    H200 SGLang 0.5.9 table: 4.4 us for a 16 KB message on 4 GPUs), not NCCL's ring start-up."""
    from gpuplan.estimate.comm import tp_collective_s
    from gpuplan.estimate.serving.decode import engine_allreduce_s, tp_allreduce_s

    sys4 = System(gpu=get_gpu("H100-SXM5-80GB"), gpus_per_node=4, nodes=1, intra_link="nvswitch")
    msg = 1 * 8192 * 2.0                        # one sequence's hidden state, 16 KB
    assert engine_allreduce_s(sys4, 4, msg) == pytest.approx(4.6e-6, rel=0.05)
    assert engine_allreduce_s(sys4, 4, msg) < tp_collective_s(sys4, 4, msg)
    # TP 6 lies between the measured 4- and 8-GPU curves
    assert engine_allreduce_s(sys4, 4, msg) < engine_allreduce_s(sys4, 6, msg) < engine_allreduce_s(sys4, 8, msg)
    # a serving engine pays the measured latency, a training stack the ring model
    assert tp_allreduce_s(sys4, Layout(tp=4), msg, 160, "vllm") == pytest.approx(160 * engine_allreduce_s(sys4, 4, msg))
    assert tp_allreduce_s(sys4, Layout(tp=4), msg, 160, "deepspeed") == pytest.approx(160 * tp_collective_s(sys4, 4, msg))


def test_pcie_all_reduce_beyond_two_gpus_is_nccl_not_the_custom_kernel():
    """vLLM and SGLang switch their custom all-reduce off on more than two PCIe GPUs: NCCL's latency (L40S,
    23 us on 8 GPUs at 2 KB) instead of the custom kernel's 5 us between two."""
    from gpuplan.estimate.serving.decode import engine_allreduce_s

    sys8 = System(gpu=get_gpu("L20-48GB"), gpus_per_node=8, nodes=1, intra_link="pcie")
    assert engine_allreduce_s(sys8, 2, 2048) == pytest.approx(5.3e-6, rel=0.05)
    assert engine_allreduce_s(sys8, 8, 2048) == pytest.approx(23.1e-6, rel=0.05)


def test_mla_decode_reads_the_whole_latent_on_every_tp_rank():
    """vLLM/SGLang keep the whole MLA latent on each TP rank (issue 12 item 4): the KV bytes a rank reads
    per step do not shrink with TP, unlike GQA heads split across ranks."""
    from gpuplan.estimate.serving.decode import decode_consts as _decode_consts

    s = shape_of(resolve_model("deepseek-ai/DeepSeek-V2-Lite"))
    sys8 = System(gpu=get_gpu("H100-SXM5-80GB"), gpus_per_node=8, nodes=1, intra_link="nvswitch")
    case = ServingCase(precision="bf16", quantization="none", kv_dtype_bytes=2.0, framework="sglang",
                       prompt_tokens=1024, output_tokens=128)
    kv = {tp: _decode_consts(s, case, Layout(tp=tp), sys8, []).kv_s_per_token for tp in (1, 2, 8)}
    assert kv[1] == pytest.approx(kv[8])
    dpa = _decode_consts(s, case, Layout(tp=8, dp_attention=True), sys8, []).kv_s_per_token
    assert dpa == pytest.approx(kv[1] / 8)


def test_weight_only_int4_decode_pads_the_batch_to_16_rows_even_on_hopper():
    # Marlin-class kernels (vLLM awq_marlin / gptq_marlin) compute 16-row blocks of the batch with mma.sync
    # on every architecture (vllm csrc/quantization/gptq_marlin/gptq_marlin.cu, thread_m_blocks); BF16 and
    # FP8 GEMMs on Hopper use 64-row wgmma tiles (the Qwen3 SGLang H20 table). On the compute-poor H20 a
    # 70B AWQ step costs the same at batch 1 and 16 and grows beyond; BF16 stays flat to 64.
    s = shape_of(resolve_model("meta-llama/Llama-3.3-70B-Instruct"))
    h20 = System(gpu=get_gpu("H20-96GB"), gpus_per_node=2, nodes=1, intra_link="nvlink")
    lay = Layout(tp=2)

    def step(quant: str, batch: int) -> float:
        case = ServingCase(precision="fp16", quantization=quant, kv_dtype_bytes=2.0, framework="vllm",
                           prompt_tokens=1, output_tokens=1)
        return decode_step_time(s, case, lay, h20, batch, 1.0, [])

    assert step("awq", 16) < 1.05 * step("awq", 1)
    assert step("awq", 48) > 1.5 * step("awq", 16)
    assert step("none", 48) < 1.05 * step("none", 1)
    assert step("awq", 1) < 0.5 * step("none", 1)     # 4-bit weights, 16 rows: far below the BF16 step
