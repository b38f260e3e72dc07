"""NCCL buffers belong to a communicator, not to a machine: serving replicas of a TP1 model on a multi-GPU instance
are independent processes (vLLM / SGLang data-parallel copies, the recommender's replicas) and hold none; a copy
split over GPUs (tensor or pipeline parallel) opens one and holds memory.nccl_buffer_bytes. Training's data
parallelism all-reduces gradients: its GPUs keep the buffers."""

from __future__ import annotations

from gpuplan.estimate.core import estimate
from gpuplan.estimate.params import table


def _serve(count, tp):
    w = dict(model="Qwen/Qwen2.5-7B-Instruct", task="inference", framework="vllm", precision="bf16",
             prompt_tokens=1024, output_tokens=256, batch_size=8, parallel={"tp": tp},
             hardware={"gpu": "L20-48GB", "count": count})
    return estimate(w).to_dict()["memory"]


def test_tp1_replicas_hold_no_nccl_buffers():
    one, four = _serve(1, 1), _serve(4, 1)
    assert four["components"]["overhead"] == one["components"]["overhead"]
    assert four["per_gpu_bytes"] == one["per_gpu_bytes"]


def test_a_tensor_parallel_copy_holds_them():
    nccl = float(table("memory")["nccl_buffer_bytes"])
    tp2 = _serve(2, 2)["components"]["overhead"]
    tp1 = _serve(4, 1)["components"]["overhead"]
    assert tp2 - tp1 == nccl


def test_training_data_parallel_keeps_them():
    def train(count):
        w = dict(model="Qwen/Qwen2.5-0.5B", task="full", framework="fsdp", precision="bf16", seq_len=1024,
                 batch_size=1, hardware={"gpu": "A100-SXM4-80GB", "count": count})
        return estimate(w).to_dict()["memory"]["components"]["overhead"]
    assert train(2) > train(1)
