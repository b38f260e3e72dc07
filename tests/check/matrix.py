"""The check matrix: real `gpuplan plan` bundles (the recommender's plan, its estimate, the renderer) for training
launchers, serving engines x platforms, diffusion and speech, in mainland and other regions. Built once per session
by the fixture in conftest.py; `ids` name the cases in test reports."""

from __future__ import annotations

from dataclasses import dataclass, field

QWEN7B = "Qwen/Qwen2.5-7B-Instruct"
SERVING = {"prompt_tokens": 1024, "output_tokens": 256,
           "serving": {"requests_per_s": 2, "peak_requests_per_s": 6, "peak_hours_per_day": 4, "ttft_ms": 2000}}
BURSTY = {"prompt_tokens": 512, "output_tokens": 256,
          "serving": {"requests_per_day": 2000, "peak_requests_per_s": 2, "peak_hours_per_day": 2, "ttft_ms": 3000}}


@dataclass(frozen=True)
class Case:
    id: str
    workload: dict
    regions: tuple[str, ...] = ("cn-shanghai", "ap-southeast-1")
    platform: str | None = None      # constraints.platforms
    extra: dict = field(default_factory=dict)


def _train(name: str, task: str, framework: str | None = None, **kw) -> dict:
    w = {"name": name, "model": QWEN7B, "task": task, "dataset": {"tokens": 1.0e8}, "seq_len": 2048, **kw}
    if framework:
        w["framework"] = framework
    return w


def _serve(name: str, engine: str, traffic: dict = SERVING, model: str = QWEN7B) -> dict:
    return {"name": name, "model": model, "task": "inference", "framework": engine, **traffic}


CASES: tuple[Case, ...] = (
    # training x launchers
    Case("lora-torchrun", _train("lora-torchrun", "lora", hardware={"instance_type": "ecs.gn8is.2xlarge"},
                                 parallel={"tp": 1, "pp": 1})),
    Case("full-deepspeed", _train("full-deepspeed", "full", "deepspeed", parallel={"zero": 3})),
    Case("full-fsdp", _train("full-fsdp", "full", "fsdp", parallel={"fsdp": "full_shard", "offload": "none"})),
    Case("full-megatron", _train("full-megatron", "full", "megatron")),
    Case("qlora", _train("qlora", "qlora", model="Qwen/Qwen2.5-14B-Instruct")),
    Case("pretrain-two-node", _train("pretrain-two-node", "pretrain", "deepspeed",
                                     hardware={"instance_type": "ecs.gn7e-c16g1.32xlarge", "nodes": 2}),
         regions=("cn-shanghai",)),
    # serving x engines x platforms
    Case("vllm-ecs", _serve("vllm-ecs", "vllm"), platform="ecs"),
    Case("sglang-ecs", _serve("sglang-ecs", "sglang"), platform="ecs"),
    Case("vllm-ack", _serve("vllm-ack", "vllm"), platform="ack"),
    Case("sglang-ack", _serve("sglang-ack", "sglang"), platform="ack"),
    Case("vllm-eas", _serve("vllm-eas", "vllm"), platform="pai-eas"),
    Case("sglang-eas", _serve("sglang-eas", "sglang"), platform="pai-eas", regions=("cn-hangzhou",)),
    Case("vllm-fc", _serve("vllm-fc", "vllm", BURSTY), platform="function-compute"),
    Case("sglang-fc", _serve("sglang-fc", "sglang", BURSTY), platform="function-compute", regions=("cn-hangzhou",)),
    # diffusion and speech
    Case("sdxl-ecs", {"name": "sdxl-ecs", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                      "input": {"image_size": 1024, "steps": 30}, "serving": {"requests_per_s": 1, "ttft_ms": 20000}},
         platform="ecs"),
    Case("sdxl-ack", {"name": "sdxl-ack", "model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                      "input": {"image_size": 1024, "steps": 30},
                      "serving": {"requests_per_s": 0.5, "peak_requests_per_s": 2, "peak_hours_per_day": 6,
                                  "ttft_ms": 20000}}, platform="ack", regions=("cn-hangzhou",)),
    Case("wan-video", {"name": "wan-video", "model": "Wan-AI/Wan2.1-T2V-1.3B-Diffusers", "task": "inference",
                       "input": {"frames": 81, "height": 480, "width": 832}, "dataset": {"items": 200},
                       "constraints": {"deadline_hours": 24}}, regions=("cn-shanghai",)),
    Case("whisper", {"name": "whisper", "model": "openai/whisper-large-v3", "task": "inference",
                     "input": {"audio_seconds": 30}}),
    # an encoder service (embeddings): vLLM's pooling runner on several T4 nodes behind the load balancer
    Case("bge-m3-ecs", {"name": "bge-m3-ecs", "model": "BAAI/bge-m3", "task": "inference", "prompt_tokens": 512,
                        "serving": {"requests_per_s": 200}, "hardware": {"instance_type": "ecs.gn6i-c4g1.xlarge"}},
         platform="ecs", regions=("cn-shanghai",)),
)


def expanded() -> list[tuple[str, Case, str]]:
    """(bundle id, case, region) for every case and region."""
    return [(f"{c.id}@{r}", c, r) for c in CASES for r in c.regions]


def workload_for(case: Case, region: str) -> dict:
    w = dict(case.workload)
    constraints = {"regions": [region]}
    if case.platform:
        constraints["platforms"] = [case.platform]
    w["constraints"] = constraints
    return w
