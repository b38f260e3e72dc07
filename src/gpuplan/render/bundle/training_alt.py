"""The training bundle's data files: the sample dataset every launcher reads and LLaMA-Factory's dataset_info.json
(nccl.env: node/nccl.py)."""

from __future__ import annotations

import json

from gpuplan.render.bundle.context import Ctx


SAMPLE_TOPICS = ("checkpoint", "micro-batch", "gradient accumulation", "tensor parallelism", "pipeline stage",
                 "ZeRO-3", "FSDP", "LoRA adapter")


def sample_data(c: Ctx) -> str:
    """A small dataset in the messages format every launcher reads (ms-swift, LLaMA-Factory sharegpt,
    train.py). Replace data/train.jsonl with your own rows in the same format."""
    rows = []
    for i in range(64):
        topic = SAMPLE_TOPICS[i % len(SAMPLE_TOPICS)]
        answer = (f"A {topic} is part of how the job {c.slug} trains; this is sample row {i} of the "
                  f"gpuplan bundle, replace data/train.jsonl with your data.")
        if c.task == "pretrain":
            msgs = [{"role": "assistant", "content": answer}]
        else:
            msgs = [{"role": "user", "content": f"What is a {topic}? (sample {i})"},
                    {"role": "assistant", "content": answer}]
        rows.append(json.dumps({"messages": msgs}, ensure_ascii=False))
    return "\n".join(rows) + "\n"


def dataset_info() -> dict:
    """LLaMA-Factory data/dataset_info.json: the bundle's data file in OpenAI messages (sharegpt) form."""
    return {"train": {"file_name": "train.jsonl", "formatting": "sharegpt", "columns": {"messages": "messages"},
                      "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                               "assistant_tag": "assistant", "system_tag": "system"}}}
