"""The record every bundle template renders from: :class:`Ctx`, the checked facts of one bundle (gathered and
checked by :func:`gpuplan.render.bundle.context_build.build_context`), and the ports, folders and dtype names it uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuplan.render.bundle.node import nccl
from gpuplan.render.bundle.node.environment import Environment

PORTS = {"vllm": 8000, "sglang": 30000, "rdzv": 29500, "node_exporter": 9100, "dcgm_exporter": 9400}
DATA_DIR = "/mnt/data"
SHARED_DIR = "/mnt/shared"

# vLLM / SGLang --dtype for the workload's precision (KV cache and quantization flags: serving.py)
# (https://docs.vllm.ai/en/latest/configuration/engine_args.html , https://docs.sglang.ai/backend/server_arguments.html).
TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "bfloat16"}
VLLM_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "auto"}

@dataclass(frozen=True)
class Ctx:
    """The checked facts one bundle is rendered from."""

    name: str
    slug: str
    lang: str
    task: str
    training: bool
    lora: bool
    qlora: bool
    framework: str
    model: str
    precision: str
    quantization: str
    kv_cache_dtype: str
    optimizer: str
    instance_type: str
    gpu: str
    nodes: int
    job_nodes: int
    gpus_per_node: int
    gpus_total: int
    vcpus: int | None
    memory_gib: float | None
    rdma: str | None
    interconnect: str
    tp: int
    pp: int
    dp: int
    zero: int
    fsdp: str
    offload: str
    micro_batch: int
    grad_accum: int
    checkpointing: bool
    seq_len: int
    prompt_tokens: int
    output_tokens: int
    max_model_len: int
    max_num_seqs: int
    gpu_mem_util: float
    replicas: int
    lora_rank: int
    lora_alpha: float
    lora_dropout: float
    lora_targets: str
    lora_adapter_dtype: str    # float32 | model: what the estimate sized (estimate.memory.common.adapter_param_bytes)
    kbit_upcast: bool          # QLoRA: embeddings, head and norms upcast to fp32, as sized (estimate.memory.kbit_upcast)
    billing: str
    region: str
    currency: str
    instance_price_per_hour: float | None
    spot_price_limit: float | None
    subscription_months: int
    data_disk_level: str
    data_disk_gib: int
    shared_kind: str | None
    shared_capacity_tib: float | None
    shared_capacity_gib: int | None          # the plan's shared file system capacity (plan.storage.shared)
    oss: bool
    step_time_s: float | None
    checkpoint_minutes: int
    save_steps: int
    deepspeed: bool
    nccl_vars: tuple[nccl.NcclVar, ...]
    llamafactory_template: str
    launcher: str | None = None          # training: torchrun | fsdp | deepspeed | megatron (plan.candidates)
    rdma_interfaces: int = 1             # ERIs per node for the family's full eRDMA rate (families.yaml)
    vpp: int = 1                         # virtual pipeline stages per rank (Megatron interleaving)
    sp: bool = False                     # sequence parallelism, as the estimate counted it (Megatron, TP > 1)
    cp: int = 1                          # context parallelism (Megatron context_parallel_size)
    smoke_model_type: str = "llama"      # transformers model_type of the tiny model `launch.sh --smoke` builds
    ports: dict[str, int] = field(default_factory=lambda: dict(PORTS))
    data_dir: str = DATA_DIR
    shared_dir: str = SHARED_DIR
    model_kind: str = "decoder"   # catalog kind: decoder, encoder-decoder, diffusion, speech, vision, encoder
    video: bool = False           # a video-diffusion model (pipeline.video): generate_videos.py, not generate_images.py
    model_input: dict = field(default_factory=dict)
    job_time_s: float | None = None   # training and batch jobs: the plan's estimated run time
    job_time_high_s: float | None = None   # its high end (the plan's intervals.time_s[1]): what the release waits for
    sla_ttft_s: float | None = None   # serving SLA (workload.serving.ttft_ms / tpot_ms)
    sla_tpot_s: float | None = None   # non-LLM input (image_size, steps, audio_seconds)
    ckpt_granularity: str = "none"    # training: activation recomputation none | selective | full
    loss: str = "model"               # training: train.py --loss, the plan's (memory.loss): chunked | model
    train_tokens: float | None = None  # training: tokens over all epochs (the plan's budget)
    packed: bool = True                # training: samples packed into seq_len rows (plan.parallel.packed)
    dataset: Any = None                # training: the workload's dataset (the run length: recipe.optimizer_steps)
    # Serving and infrastructure (render/bundle/serving.py, deploy.py, infra.py, transfer.py)
    platform: str = "ecs"                # ecs | ack | function-compute | pai-eas
    engine: str = "vllm"                 # the deployed engine: vllm | sglang (others are served by vLLM)
    engine_planned: str = "vllm"         # the engine the plan named (PLAN.md says when it is not rendered)
    ep: int = 1                          # expert parallel (vLLM --enable-expert-parallel, SGLang --ep-size)
    dp_attention: bool = False           # SGLang --enable-dp-attention
    pd: dict | None = None               # prefill/decode pools (plan.serving.disaggregation), SGLang only
    bf16: bool = True                    # the GPU has BF16 (data/gpus.yaml bf16_dense_tflops, CC >= 8.0)
    gpu_cc: float | None = None          # compute capability (data/gpus.yaml)
    hub: str = "huggingface"             # where weights come from: modelscope (mainland regions) | huggingface
    model_bytes: float | None = None     # bytes each node downloads (the served or trained checkpoint)
    checkpoint_bytes: float | None = None   # one training checkpoint (the plan's storage advice)
    plan_fixed: dict = field(default_factory=dict)   # the plan's own once-per-job seconds (boot, pull, download, tail)
    first_boot: dict = field(default_factory=dict)   # start-up and image pull seconds (the plan's, or its costs' rule)
    weights_staged: bool = False         # the plan counted the weights staged in OSS (plan.weights_staging): MODEL_OSS
    batch_job: bool = False              # a batch inference job (plan.job): released like a training job
    job_input_bytes: float | None = None    # batch: its input on the data disk (plan.storage.budget.dataset_bytes)
    job_output_bytes: float | None = None   # batch: its output on the data disk (plan.storage.budget.output_bytes)
    matmul_tf32: bool = True             # the workload's tf32 (unset = true): fp32 matmuls on the TF32 tensor cores
    online: bool = False                 # serving traffic given (workload.serving): a server, not a batch job
    embed_job: bool = False              # an encoder-only model run by embed.py (context_serving.runs_embed_script)
    env: Environment | None = None       # the node environment (render/bundle/node/environment.py, plan.json)
    trust_remote_code: bool = False      # the model's code is not in transformers (data/model_sources.yaml)
    checkpoints_kept: int = 2            # training: checkpoint rotation (plan.storage.checkpoints_kept)
    epochs: float = 1.0                  # training: the workload's epochs (the run length without a token budget)

    @property
    def spot(self) -> bool:
        return self.billing == "spot"

    @property
    def multi_node(self) -> bool:
        """One job (training) or one replica (serving) spans several nodes."""
        return self.job_nodes > 1

    @property
    def erdma(self) -> bool:
        return self.rdma == "erdma" and self.multi_node

    @property
    def checkpoint_dir(self) -> str:
        base = self.shared_dir if self.shared_kind else self.data_dir
        return f"{base}/checkpoints/{self.slug}"

    @property
    def serve_port(self) -> int:
        """Port of the deployed server's API (vLLM 8000, SGLang 30000, the image server 8000)."""
        return self.ports["sglang"] if self.engine == "sglang" and self.model_kind in ("decoder", "encoder-decoder") \
            else self.ports["vllm"]

    @property
    def copies_per_node(self) -> int:
        """Independent model copies (engine processes, Kubernetes pods) per node: DP replicas of a TP x PP
        group. Expert parallel and SGLang DP attention share one engine across the DP ranks: one copy."""
        if self.training or self.multi_node or self.ep > 1 or self.dp_attention:
            return 1
        return max(1, min(self.dp, self.gpus_per_node // max(1, self.tp * self.pp)))

    @property
    def torch_dtype(self) -> str:
        return TORCH_DTYPE.get(self.precision, "bfloat16")

    @property
    def lora_dtype(self) -> str:
        """The LoRA adapters' torch dtype the launchers pin (train.py --adapter_dtype, ms-swift --lora_dtype)."""
        return "float32" if self.lora_adapter_dtype == "float32" else self.torch_dtype

    @property
    def tf32(self) -> bool:
        """An fp32 run on a GPU with TF32 tensor cores (compute capability 8.0+): the launchers turn TF32 on, the rate
        the estimate times fp32 matmuls at (estimate/clocks.peak_flops); PyTorch's default leaves matmuls on the FP32
        cores (torch.backends.cuda.matmul.allow_tf32 = False), 8x slower on an A100. A workload's ``tf32: false``
        (``matmul_tf32``) keeps that default, the rate its plan was timed at."""
        return self.precision == "fp32" and (self.gpu_cc or 0.0) >= 8.0 and self.matmul_tf32

    @property
    def mixed_precision(self) -> str:
        """accelerate's mixed_precision value: bf16 | fp16 | no."""
        return {"bf16": "bf16", "fp16": "fp16", "fp8": "bf16"}.get(self.precision, "no")
