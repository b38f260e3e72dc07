"""The recommender's training-memory memo (estimate_resolved(memo=...), training_memory_key): a memory taken from
the memo is the memory the estimator computes for those inputs, on every system, layout and pass."""

from __future__ import annotations

import itertools
import json
import random

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.catalog.models import resolve_model
from gpuplan.estimate.core import estimate_resolved
from gpuplan.estimate.shapes import shape_of
from gpuplan.estimate.system import Layout, System
from gpuplan.workload import parse_workload
from gpuplan.workload_defaults import resolve_defaults

WORKLOADS = [
    {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "framework": "transformers"},
    {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "qlora", "quantization": "bnb-nf4", "seq_len": 4096},
    {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "lora": {"rank": 64, "targets": ["q_proj", "v_proj"]}},
    {"model": "qwen2.5-14b", "task": "full", "seq_len": 2048, "framework": "deepspeed"},
    {"model": "qwen2.5-14b", "task": "pretrain", "seq_len": 4096, "framework": "megatron", "optimizer": "adamw-8bit"},
]


def _systems():
    a100, h20 = get_gpu("A100-80GB"), get_gpu("H20")
    return [
        System(gpu=a100, gpus_per_node=8, nodes=1, intra_link="nvswitch"),
        System(gpu=a100, gpus_per_node=8, nodes=1, intra_link="pcie"),                   # links differ only
        System(gpu=a100, gpus_per_node=8, nodes=2, intra_link="nvswitch", inter_node_gbit_s=100, rdma="erdma"),
        System(gpu=a100, gpus_per_node=4, nodes=2, intra_link="nvswitch", inter_node_gbit_s=32),
        System(gpu=a100, gpus_per_node=8, nodes=1, intra_link="nvswitch", capacity_override_bytes=40 * 2**30),
        System(gpu=h20, gpus_per_node=8, nodes=1, intra_link="nvswitch"),
        System(gpu=h20, gpus_per_node=1, nodes=1, intra_link="none"),
        System(gpu=h20, gpus_per_node=1, nodes=2, intra_link="none", inter_node_gbit_s=32),
    ]


def _layouts():
    out = []
    for tp, pp, zero, mb, ckpt in itertools.product((1, 2), (1, 2), (0, 3), (1, 4), ("full", "none")):
        out.append(Layout(tp=tp, pp=pp, dp=8 // (tp * pp), zero=zero, fsdp="full_shard" if zero == 3 else "none",
                          micro_batch=mb, grad_accum=2, microbatches=2 if pp > 1 else 1, checkpointing=ckpt))
    out.append(Layout(dp=8, zero=2, offload="cpu", micro_batch=2))
    out.append(Layout(dp=16, zero=3, fsdp="hybrid_shard"))
    return out


def _dump(est) -> str:
    return json.dumps(est.to_dict(), sort_keys=True, default=str)


def test_memo_gives_the_memory_the_estimator_computes():
    rng = random.Random(7)
    calls, checked = 0, 0
    for data in WORKLOADS:
        w, _ = resolve_defaults(parse_workload(data))
        model = resolve_model(w.model)
        shape = shape_of(model)
        points = [(sy, lay, memory_only, explain) for sy in _systems() for lay in _layouts()
                  for memory_only, explain in ((True, False), (False, False), (False, True))]
        rng.shuffle(points)
        memo: dict = {}
        for sy, lay, memory_only, explain in points + points[: len(points) // 3]:   # some asked for again
            got = estimate_resolved(w, model, sy, lay, shape=shape, with_suggestions=False, memory_only=memory_only,
                                    explain=explain, memo=memo)
            want = estimate_resolved(w, model, sy, lay, shape=shape, with_suggestions=False,
                                     memory_only=memory_only, explain=explain)
            assert _dump(got) == _dump(want), (data, sy, lay, memory_only, explain)
            calls += 1
            checked += got.memory.per_gpu_bytes > 0
        # systems that differ only in their links share a memory; the memo did its job
        assert len(memo) < len(points)
    assert checked == calls > 1000


def test_memory_inputs_that_differ_are_different_keys():
    from gpuplan.estimate.memory import training_memory_key
    from gpuplan.estimate.memory.run import TrainingInputs

    w, _ = resolve_defaults(parse_workload(WORKLOADS[0]))
    shape = shape_of(resolve_model(w.model))
    t = TrainingInputs(task="lora", precision="bf16", quantization="none", optimizer="adamw",
                       framework="transformers", flash=True, seq_len=2048)
    fast, slow, small, two = _systems()[0], _systems()[1], _systems()[4], _systems()[2]
    lay = Layout(dp=8)
    key = training_memory_key(shape, t, lay, fast, True)
    assert training_memory_key(shape, t, lay, slow, True) == key          # links change times, not bytes
    assert training_memory_key(shape, t, lay, small, True) != key         # a smaller usable memory
    assert training_memory_key(shape, t, lay, two, True) != key           # two nodes
    assert training_memory_key(shape, t, lay, fast, False) != key         # no notes
    assert training_memory_key(shape, t, Layout(dp=8, micro_batch=2), fast, True) != key
    other = TrainingInputs(task="lora", precision="bf16", quantization="none", optimizer="adamw",
                           framework="transformers", flash=True, seq_len=4096)
    assert training_memory_key(shape, other, lay, fast, True) != key
