"""Plan quality: does the top plan of `recommend` cost what first-principles arithmetic says the job costs?

Twelve workloads (training, serving, batch jobs; A10, A100, L20, H20; four regions). For each, a reference an
engineer would sign is written out step by step in docs/plan-quality.md: the machine an expert would buy, the
FLOPs (6ND, LoRA 4ND, prefill 2NP) or bytes (decode streams the weights and the caches) of the job, the share of
the datasheet peak a good stack reaches (with its source), the fixed per-job time, and the catalog's price. The
script prints the top plan's cost and time over the reference's and writes bench/results/plan_quality.md.
Target: every ratio within [0.80, 1.10]. The references use no gpuplan estimator: only the catalog's facts
(model shapes, GPU datasheets, prices, the exchange rate, the node's start of data/plan_costs.yaml and
data/ops.yaml).

Run: python bench/plan_quality.py [--only NAME ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

LOW, HIGH = 0.80, 1.10
HOUR = 3600.0
MONTH_H = 730.0

# ---------------------------------------------------------------------------------------------------------
# Facts the references use (each from a datasheet, a config.json or the price catalog; docs/plan-quality.md)
# ---------------------------------------------------------------------------------------------------------
# Dense 16-bit tensor peak (FLOP/s) and HBM bandwidth (bytes/s): NVIDIA datasheets (data/gpus.yaml).
GPU = {"A10": (125e12, 600e9), "A100-40": (312e12, 1555e9), "A100-80": (312e12, 2039e9), "L20": (119e12, 864e9),
       "H20": (148e12, 4000e9)}
# The A10 is a 150 W card: under a long GEMM load it does not hold the boost clock behind its 125 TFLOPS. One
# benchmark on both cards (chsasank/device-benchmarks README @7ccc883, torch.matmul bf16): A10 56 TFLOPS, A100 80GB
# 237 of 312. The A10 keeps (56/125) / (237/312) = 0.59 of the share a clock-holding A100 reaches, so the shares of
# MFU below (judged on A100s) apply to 0.59 x 125e12 on an A10 (data/efficiency.yaml sustained_tensor). The L20
# (275 W) holds its clock and reaches a larger share than the A100 in one benchmark: 107.95 of 119 at 10240^3
# (zzc0721/torch-performance-test-data issue #107) against the A100 SXM4 80GB's 264.53 of 312 (database.md): 1.07.
SUSTAINED = {"A10": (56 / 125) / (237 / 312), "L20": (107.95 / 119) / (264.53 / 312)}


def rate(gpu: str) -> float:
    """The 16-bit tensor rate a long GEMM load sustains: the datasheet peak at the sustained clock."""
    return GPU[gpu][0] * SUSTAINED.get(gpu, 1.0)


def rate_words(gpu: str) -> str:
    """How a step writes that rate: "312e12", or "74e12 (125e12 x 0.59 sustained)"."""
    if gpu not in SUSTAINED:
        return f"{GPU[gpu][0] / 1e12:.0f}e12"
    return f"{rate(gpu) / 1e12:.0f}e12 ({GPU[gpu][0] / 1e12:.0f}e12 x {SUSTAINED[gpu]:.2f} sustained)"


H20_FP8 = 296e12
# Payg prices the references buy (instance, region) -> (price per hour, currency), data/clouds/alibaba/prices.csv;
# tests/bench/test_plan_quality_refs.py checks them against the catalog.
PRICES = {
    ("ecs.gn7-c12g1.3xlarge", "ap-southeast-1"): (5.5887, "USD"),       # 1 x A100-40GB
    ("ecs.gn7i-c8g1.2xlarge", "ap-southeast-1"): (1.7237, "USD"),       # 1 x A10
    ("ecs.gn7e-c16g1.32xlarge", "cn-shanghai"): (277.93, "CNY"),        # 8 x A100-80GB
    ("ecs.gn7i-c8g1.2xlarge", "cn-shanghai"): (9.74, "CNY"),            # 1 x A10
    ("ecs.gn7e-c16g1.4xlarge", "cn-hangzhou"): (34.74, "CNY"),          # 1 x A100-80GB
    ("ecs.gn8v-4x.8xlarge", "cn-beijing"): (135.1606, "CNY"),           # 4 x H20
    ("ecs.gn8is-8x.32xlarge", "cn-shanghai"): (133.04, "CNY"),          # 8 x L20
    ("ecs.gn8v-8x.16xlarge", "cn-shanghai"): (270.3212, "CNY"),         # 8 x H20
    ("ecs.gn7i-c8g1.2xlarge", "cn-beijing"): (9.74, "CNY"),             # 1 x A10
    ("ecs.gn7-c12g1.3xlarge", "cn-shanghai"): (31.58, "CNY"),           # 1 x A100-40GB
    ("ecs.gn7-c12g1.3xlarge", "cn-beijing"): (31.58, "CNY"),            # 1 x A100-40GB
    ("ecs.gn8is.2xlarge", "cn-shanghai"): (14.63, "CNY"),               # 1 x L20
    ("ecs.gn8is.2xlarge", "cn-beijing"): (14.63, "CNY"),                # 1 x L20
}
# The one-GPU machines a job or service that fits one GPU may run on: (GPU key, instance, GPU id, GB of memory).
ONE_GPU = [("A10", "ecs.gn7i-c8g1.2xlarge", "A10-24GB", 24), ("L20", "ecs.gn8is.2xlarge", "L20-48GB", 48),
           ("A100-40", "ecs.gn7-c12g1.3xlarge", "A100-SXM4-40GB", 40)]
# Model shapes (config.json, as in data/models.yaml): parameters, layers, hidden, vocabulary, tied head.
MODEL = {
    "Qwen2.5-7B": (7.616e9, 28, 3584, 152064, False),
    "Llama-3.1-70B": (70.554e9, 80, 8192, 128256, False),
    "Llama-3.2-1B": (1.236e9, 16, 2048, 128256, True),
    "Qwen2.5-32B": (32.764e9, 64, 5120, 152064, False),
    "Llama-3.1-8B": (8.030e9, 32, 4096, 128256, False),
    "bge-m3": (0.568e9, 24, 1024, 250002, True),
    "Qwen2.5-72B": (72.706e9, 80, 8192, 152064, False),
}
# Shares of the dense peak a well-run stack reaches (model FLOPs over peak), the references' one judgement:
MFU = {
    "megatron": 0.45,     # Megatron-LM on A100: 41-52 % (Narayanan et al. 2021, Table 1)
    "full": 0.45,         # DeepSpeed / FSDP full training of 1-8B at 2-4k tokens: llm-foundry MPT tables 40-50 %
    "lora": 0.40,         # PEFT LoRA: the frozen base skips weight gradients, the rest as full training
    # bitsandbytes NF4 with gradient checkpointing (on in QLoRA's own scripts, Dettmers et al. 2023, and needed for a
    # 32B at 2,048 tokens on 80 GB): LoRA's share of the hardware, of which the model FLOPs are 4N of the 6N run
    # (forward, recomputed forward, activation gradients), x 0.98 for the dequantisation, torchtune's measured
    # QLoRA / LoRA ratio at 2 x 4,096 tokens on an A100 (README 'Optimization flags': 8,035 / 8,210 tokens/s)
    "qlora": 0.40 * 4 / 6 * 8035 / 8210,
    "prefill": 0.50,      # serving prefill / encoder forwards at hundreds of rows per GEMM
}
# NCCL bus bandwidth over PCIe Gen4 x16 with P2P: 32 GB/s x 0.70 (docs/formulas.md, "bus bandwidth")
PCIE4_BUS_BYTES_S = 32e9 * 0.70
BW_EFF = 0.80             # share of HBM bandwidth a streaming decode reaches (vLLM / CTranslate2 kernels)
UTIL = 1 / 1.15           # services keep 15 % headroom over the peak rate (the planner's target, docs/recommender.md)
# Per job and instance, what an ECS node does before and after its job, from published node-start facts
# (docs/plan-quality.md, "Fixed time"): start-up 5 min and idle tail 5 min (data/plan_costs.yaml, assumed); the
# NVIDIA driver's auto-install at first boot, 10-20 min on Alibaba's page (the upper end: data/ops.yaml
# bundle_network.driver_install_s); the image pull: an ECS node builds the bundle's image from the base image, which
# it pulls over its public bandwidth (data/environments.yaml images.*.compressed_gib at data/ops.yaml
# bundle_network.public_bandwidth_mbit / 8); the weights from the hub over that same bandwidth, or, where that
# costs an hour of instance-time or more, staged once in OSS and copied over the VPC (bundle_network.oss_intranet_mb_s).
BOOT_S, TAIL_S = 300.0, 300.0
STAGE_ABOVE_S = 3600.0


def _ops() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "src/gpuplan/data/ops.yaml").read_text(encoding="utf-8"))


def node_facts() -> tuple[float, float, float]:
    """(driver install s, public bandwidth bytes/s, OSS intranet bytes/s) of an ECS node (data/ops.yaml)."""
    net = _ops()["bundle_network"]
    return (float(net["driver_install_s"]), float(net["public_bandwidth_mbit"]) * 1e6 / 8,
            float(net["oss_intranet_mb_s"]) * 1e6)


def weights_s(model_bytes: float, instances: int) -> tuple[float, str]:
    """Seconds one node spends getting the weights, and from where: the hub at the public bandwidth, or OSS when the
    hub would keep the job's instances idle for an hour or more in all."""
    _driver, public, oss = node_facts()
    hub = model_bytes / public
    if hub * instances >= STAGE_ABOVE_S:
        return model_bytes / oss, "staged in OSS"
    return hub, "from the hub"


def image_pull_s() -> float:
    """Seconds one ECS node spends pulling the node image: compressed size over the public bandwidth."""
    import yaml

    data = ROOT / "src/gpuplan/data"
    env = yaml.safe_load((data / "environments.yaml").read_text(encoding="utf-8"))
    ops = yaml.safe_load((data / "ops.yaml").read_text(encoding="utf-8"))
    gib = max(float(img["compressed_gib"]) for img in env["images"].values())
    return gib * 2**30 / (float(ops["bundle_network"]["public_bandwidth_mbit"]) * 1e6 / 8)


def fx_cny_per_usd() -> float:
    import yaml

    doc = yaml.safe_load((ROOT / "src/gpuplan/data/fx.yaml").read_text(encoding="utf-8"))
    return float(next(r["rate"] for r in doc["rates"] if r["base"] == "USD" and r["quote"] == "CNY"))


def price_cny(inst: str, region: str) -> float:
    p, cur = PRICES[(inst, region)]
    return p * (fx_cny_per_usd() if cur == "USD" else 1.0)


def fixed_s(model_bytes: float, instances: int = 1) -> float:
    return BOOT_S + node_facts()[0] + image_pull_s() + weights_s(model_bytes, instances)[0] + TAIL_S


def matmul_params(name: str) -> float:
    """Parameters multiplied per token: all but the input embedding (a tied head still multiplies)."""
    n, _layers, h, v, tied = MODEL[name]
    return n if tied else n - v * h


@dataclass(frozen=True)
class Reference:
    machine: str
    hours: float | None       # job hours (None for a service)
    cost_cny: float           # job cost, or cost per month of a service
    steps: tuple[str, ...]
    gpus: str = ""            # "4 x A10-24GB": the time ratio is judged only on the same GPUs


def _job(machine: str, inst: str, region: str, count: int, run_s: float, model_bytes: float,
         steps: list[str], gpus: str) -> Reference:
    fx = fixed_s(model_bytes, count)
    hours = (run_s + fx) / HOUR
    price = price_cny(inst, region)
    w_s, w_from = weights_s(model_bytes, count)
    steps += [f"fixed per instance: {fx / 60:.1f} min (boot 5, driver install {node_facts()[0] / 60:.0f}, image pull "
              f"{image_pull_s() / 60:.1f}, weights {model_bytes / 1e9:.1f} GB {w_from} {w_s / 60:.1f}, idle tail 5)",
              f"{hours:.2f} h x {count} x CNY {price:,.2f}/h = CNY {hours * count * price:,.0f}"]
    return Reference(machine, hours, hours * count * price, tuple(steps), gpus)


def _service(machine: str, inst: str, region: str, count: int, steps: list[str]) -> Reference:
    price = price_cny(inst, region)
    steps.append(f"{count} x CNY {price:,.2f}/h x {MONTH_H:.0f} h = CNY {count * price * MONTH_H:,.0f} per month")
    return Reference(machine, None, count * price * MONTH_H, tuple(steps))


# ---------------------------------------------------------------------------------------------------------
# The references (docs/plan-quality.md walks through each)
# ---------------------------------------------------------------------------------------------------------

def ref_lora_7b_sg() -> Reference:
    n, layers, h = matmul_params("Qwen2.5-7B"), 28, 3584
    per_tok = 4 * n + 8 * layers * h * 2048          # forward + input gradients; attention 8·L·h·s
    flops = per_tok * 1e8
    run = flops / (GPU["A100-40"][0] * MFU["lora"])
    return _job("1 x A100-40GB (ecs.gn7-c12g1.3xlarge)", "ecs.gn7-c12g1.3xlarge", "ap-southeast-1", 1, run,
                7.616e9 * 2, [
                    "memory: bf16 base 15.2 GB + LoRA + activations at 2048 tokens fit 40 GB without recomputation "
                    "(one A10 needs full recomputation: 6N instead of 4N per token)",
                    f"FLOPs: 4N + 8Lhs = {per_tok:.3g} per token x 1e8 tokens = {flops:.3g}",
                    f"time: {flops:.3g} / (312e12 x {MFU['lora']}) = {run / HOUR:.2f} h"], "1 x A100-SXM4-40GB")


def ref_full_70b() -> Reference:
    n, layers, h = matmul_params("Llama-3.1-70B"), 80, 8192
    per_tok = 6 * n + 12 * layers * h * 2048
    flops = per_tok * 1e9
    gpus = 32
    run = flops / (gpus * GPU["A100-80"][0] * MFU["megatron"])
    return _job("4 x 8 A100-80GB (ecs.gn7e-c16g1.32xlarge), Megatron TP8 x PP4", "ecs.gn7e-c16g1.32xlarge",
                "cn-shanghai", 4, run, 70.554e9 * 2, [
                    "memory: 2 + 4 + 12 bytes per parameter (Megatron: fp32 main gradients) x 70.6B = 1.27 TB: more "
                    "than 16 x 78 GB usable, so 32 A100-80GB (TP8 x PP4, activations beside)",
                    f"FLOPs: 6N + 12Lhs = {per_tok:.3g} per token x 1e9 tokens = {flops:.3g}",
                    f"time: {flops:.3g} / (32 x 312e12 x {MFU['megatron']}) = {run / HOUR:.1f} h (deadline 168 h)"], "32 x A100-SXM4-80GB")


def ref_pretrain_1b() -> Reference:
    n, layers, h = matmul_params("Llama-3.2-1B"), 16, 2048
    per_tok = 6 * n + 12 * layers * h * 2048
    flops = per_tok * 2e10
    run = flops / (4 * rate("A10") * MFU["full"])
    grads = 1.236e9 * 2
    sync = 2 * 3 / 4 * grads / (16e9 / 8 * 0.55)    # ring all-reduce over 16 Gbit/s TCP at 55 % (nccl-tests)
    steps_n = 2e10 / 2_097_152
    return _job("4 x 1 A10 (ecs.gn7i-c8g1.2xlarge), DDP / ZeRO-1 over TCP", "ecs.gn7i-c8g1.2xlarge", "cn-shanghai",
                4, run + steps_n * sync, 1.236e9 * 2, [
                    "memory: ZeRO-1 over 4 ranks: (2 + 2 + 12/4) x 1.24B = 8.7 GB + activations: one A10 each",
                    f"FLOPs: 6N + 12Lhs = {per_tok:.3g} per token x 2e10 tokens = {flops:.3g}",
                    f"compute: {flops:.3g} / (4 x {rate_words('A10')} x {MFU['full']}) = {run / HOUR:.1f} h",
                    f"gradient sync once per 2M-token step (accumulation): 2 x 3/4 x {grads / 1e9:.2f} GB / 1.1 GB/s = "
                    f"{sync:.1f} s x {steps_n:,.0f} steps = {steps_n * sync / HOUR:.1f} h, not hidden (only the last "
                    "micro-batch's backward could hide it)"], "4 x A10-24GB")


def ref_qlora_32b() -> Reference:
    n, layers, h = matmul_params("Qwen2.5-32B"), 64, 5120
    per_tok = 4 * n + 8 * layers * h * 2048
    flops = per_tok * 5e7
    run = flops / (GPU["A100-80"][0] * MFU["qlora"])
    return _job("1 x A100-80GB (ecs.gn7e-c16g1.4xlarge)", "ecs.gn7e-c16g1.4xlarge", "cn-hangzhou", 1, run,
                32.764e9 * 2, [
                    "memory: NF4 base 32.8B x 0.52 B = 17 GB + LoRA; the activations of 64 layers at 2,048 tokens "
                    "(~55 GB) need gradient checkpointing, as QLoRA's own scripts run",
                    f"FLOPs: 4N + 8Lhs = {per_tok:.3g} per token x 5e7 tokens = {flops:.3g}",
                    f"time: {flops:.3g} / (312e12 x {MFU['qlora']:.3f}) = {run / HOUR:.1f} h (0.40 x 4/6 recomputation x 0.98 "
                    "NF4 dequantisation)"], "1 x A100-SXM4-80GB")


def ref_full_8b_h20() -> Reference:
    n, layers, h = matmul_params("Llama-3.1-8B"), 32, 4096
    per_tok = 6 * n + 12 * layers * h * 4096
    flops = per_tok * 2e9
    run = flops / (4 * GPU["H20"][0] * MFU["full"])
    return _job("4 x H20 (ecs.gn8v-4x.8xlarge), ZeRO", "ecs.gn8v-4x.8xlarge", "cn-beijing", 1, run, 8.03e9 * 2, [
        "memory: 16 bytes per parameter x 8.03B = 128 GB: ZeRO over 4 x 96 GB",
        f"FLOPs: 6N + 12Lhs = {per_tok:.3g} per token (4096 tokens) x 2e9 tokens = {flops:.3g}",
        f"time: {flops:.3g} / (4 x 148e12 x {MFU['full']}) = {run / HOUR:.1f} h"], "4 x H20-96GB")


def _md1_wait_quantile_s(rate: float, service_s: float, q: float = 0.9) -> float:
    """Waiting-time quantile of an M/D/1 queue (Poisson arrivals, fixed service): Erlang's exact formula
    P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/S)} (lam (kS - t))^k / k! e^{-lam (kS - t)}, bisected."""
    rho = rate * service_s
    if rho >= 1.0:
        return math.inf

    def cdf(t: float) -> float:
        xs = (rate * (k * service_s - t) for k in range(int(t // service_s) + 1))
        return (1 - rho) * sum(x ** k / math.factorial(k) * math.exp(-x) for k, x in enumerate(xs))

    if cdf(0.0) >= q:
        return 0.0
    lo, hi = 0.0, 10.0
    if cdf(hi) < q:
        return math.inf
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if cdf(mid) >= q else (mid, hi)
    return hi


def ref_serve_72b() -> Reference:
    n, layers, hidden = 72.706e9, 80, 8192
    prompt, out, rate_total, ttft_s = 1000, 300, 20.0, 2.0
    per_gpu = GPU["L20"][0] * MFU["prefill"]
    bus = PCIE4_BUS_BYTES_S
    lines = [
        "memory: GPTQ-Int4 weights 72.7B x 4.16/8 B + 16-bit embeddings = 40 GB: TP2 on 2 x 48 GB leaves ~45 GB of "
        "KV cache (0.33 MB per token: ~100 sequences of 1,300 tokens); TP4 and TP8 leave more",
        f"compute per request: 2N x ({prompt} + {out}) = {2 * n * (prompt + out):.3g} FLOPs (prefill and decode "
        f"alike compute-bound: Marlin W4A16 GEMMs at hundreds of rows); an L20 at {MFU['prefill']} of 119e12",
        f"TP over PCIe (bare-metal ebmgn8is keeps P2P through its PCIe switch; vLLM's custom all-reduce is off on "
        f"more than two PCIe GPUs, so NCCL, not overlapped): 2 all-reduces per layer x {layers} layers of "
        f"{prompt} x {hidden} x 2 B, each 2(t-1)/t of it over {bus / 1e9:.0f} GB/s",
        "the 2 s TTFT is a p90 under load: a prompt waits for the prompts ahead of it (M/D/1 queue of prefills, "
        "Poisson arrivals, decode riding on the same steps); a replica's capacity is the rate where prefill S + the "
        "90th-percentile wait = 2 s (its GPUs <= 100 % busy), and the peak stays <= 87 % of that capacity (the "
        "planner's 15 % headroom)"]
    best = None
    for tp in (2, 4, 8):
        comm = 2 * layers * 2 * (tp - 1) / tp * prompt * hidden * 2 / bus
        service = 2 * n * prompt / (tp * per_gpu) + comm
        work = 2 * n * (prompt + out) / (tp * per_gpu) + comm
        lo, hi = 0.0, 1.0 / service
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            ok = service + _md1_wait_quantile_s(mid, service) <= ttft_s and mid * work <= 1.0
            lo, hi = (mid, hi) if ok else (lo, mid)
        replicas = math.ceil(rate_total / (lo * UTIL))
        nodes = math.ceil(replicas * tp / 8)
        lines.append(f"TP{tp}: prefill S = {2 * n * prompt:.3g} / ({tp} x {per_gpu:.3g}) + {comm:.2f} s all-reduce "
                     f"= {service:.2f} s; capacity {lo:.3f} req/s per replica (prefills {lo * service:.0%} busy); "
                     f"{rate_total:.0f} / ({lo:.3f} x {UTIL:.2f}) = {replicas} replicas = {replicas * tp} GPUs = "
                     f"{nodes} nodes of 8")
        if best is None or nodes < best[0]:
            best = (nodes, tp, replicas)
    nodes, tp, replicas = best
    per_tp2 = rate_total / 37
    s2 = 2 * n * prompt / (2 * per_gpu)
    lines.append(f"(the old reference, 37 TP2 replicas at {per_tp2:.2f} req/s each, keeps their prefills "
                 f"{per_tp2 * s2:.0%} busy even without the all-reduce: p90 TTFT {s2 + _md1_wait_quantile_s(per_tp2, s2):.1f} s, "
                 "over the 2 s target)")
    return _service(f"{nodes} x 8 L20 (ecs.ebmgn8is.32xlarge at the CNY 133.04/h of ecs.gn8is-8x.32xlarge), "
                    f"{replicas} TP{tp} replicas", "ecs.gn8is-8x.32xlarge", "cn-shanghai", nodes, lines)


def ref_serve_r1() -> Reference:
    act = 37e9
    prefill = 2 * act * 30000
    ttft = prefill * 2 / (8 * H20_FP8 * MFU["prefill"])      # x2: MLA attention over 30k tokens ~ the GEMMs
    weights = 671e9 / 8
    step = weights / (GPU["H20"][1] * BW_EFF)
    return _service("1 x 8 H20 (ecs.gn8v-8x.16xlarge), TP8, FP8 weights", "ecs.gn8v-8x.16xlarge", "cn-shanghai", 1, [
        "memory: FP8 checkpoint 671 GB over 8 x 96 GB = 84 GB per GPU; under TP8 every rank keeps the whole MLA "
        "latent of its sequences (vLLM): FP8 cache 61 x 576 B = 35 KB per token x 8 users x 32.7k tokens = 9.2 GB "
        "per GPU; 93 GB = 87 GiB of the H20's 95.6 GiB (gpu_memory_utilization ~0.93 with the engine's ~1.5 GiB); "
        "a 16-bit cache (18.4 GB) would not fit",
        f"prefill of one 30k prompt: 2 x 37e9 x 30000 = {prefill:.3g} FLOPs x 2 (attention) / (8 x 296e12 x 0.5) = "
        f"{ttft:.1f} s",
        f"decode: {weights / 1e9:.0f} GB of weights per GPU per step / (4 TB/s x {BW_EFF}) = {step * 1e3:.0f} ms + the "
        "caches: ~20 tokens/s per user; 8 users fit one node",
    ])


def ref_serve_7b_low() -> Reference:
    n = matmul_params("Qwen2.5-7B")
    demand = 2 * 2 * n * 1000 + 600 * 2 * n        # at the 2 req/s peak: prefill + 600 output tokens/s
    lines, best = [], None
    for key, inst, _gid, gb in ONE_GPU:
        busy = demand / (rate(key) * MFU["prefill"])
        step = 7.616e9 * 2 / (GPU[key][1] * BW_EFF)
        month = price_cny(inst, "cn-shanghai") * MONTH_H
        count = math.ceil(busy / UTIL)
        lines.append(f"{key}: {demand:.3g} FLOP/s of {rate_words(key)} x {MFU['prefill']} = {busy:.0%} busy (target "
                     f"<= {UTIL:.0%}): {count} GPU(s); decode {step * 1e3:.0f} ms per step at {gb} GB")
        if best is None or count * month < best[0]:
            best = (count * month, key, inst, count)
    _cost, key, inst, count = best
    return _service(f"{count} x {key} ({inst})", inst, "cn-shanghai", count, [
        "memory: bf16 15.2 GB; an A10's 24 GB leave ~5 GB of KV cache (57 KB per token: ~60 sequences of 1,300 tokens)",
        "at the 2 req/s peak ~20 sequences run at once (10 s each): 600 output tokens/s; the GEMMs of the prefills "
        "and of the decode steps share one compute budget (chunked prefill rides the decode steps)", *lines,
        f"the cheapest: {count} x {key}"])


def ref_serve_sdxl() -> Reference:
    unet = 6.8e12 * 2          # SDXL UNet at 128 x 128 latents, classifier-free guidance: 2 passes per step
    flops = unet * 30 + 1.0e7 * 1024 * 1024
    lines, best = [], None
    for key, inst, _gid, _gb in ONE_GPU:
        per = flops / (rate(key) * 0.40)
        gpus = math.ceil(0.5 * per / UTIL)
        month = price_cny(inst, "cn-shanghai") * MONTH_H
        lines.append(f"{key} at 0.40 of {rate_words(key)} (convolution/attention mix): {per:.1f} s per image; 0.5 "
                     f"images/s x {per:.1f} s / {UTIL:.2f} = {0.5 * per / UTIL:.1f}: {gpus} x CNY {month:,.0f}/month")
        if best is None or gpus * month < best[0]:
            best = (gpus * month, key, inst, gpus)
    _cost, key, inst, gpus = best
    return _service(f"{gpus} x {key} ({inst})", inst, "cn-shanghai", gpus, [
        f"FLOPs per 1024 x 1024 image, 30 steps: 2 x 6.8e12 x 30 + VAE decode 1e7 x 1024^2 = {flops:.3g}", *lines,
        f"the cheapest: {gpus} x {key}"])


# faster-whisper (CTranslate2), what the bundle runs. Memory: CTranslate2 >= 3.10 keeps the projected encoder keys
# and values once per window, not per beam (src/layers/transformer.cc TransformerDecoder::replicate_state, PR #1088).
# Published (SYSTRAN/faster-whisper README @97a4785, 2024-11-21, v1.1.0; large-v2, 13 min of audio, beam 5, RTX 3070
# Ti 8GB, CUDA 12.4): batched fp16 at batch 8, 17 s and 6090 MiB of GPU memory.
FW_README = {"windows": 13 * 60 / 30, "batch": 8, "wall_s": 17.0, "mib": 6090, "gpu": (43.5e12, 608e9)}
FW_STEP_S = 0.003   # a C++ engine's launches per decoder step: ~25 kernels x 32 layers x ~4 us (no CUDA graphs)


def _whisper_gpu_s(batch: int, windows: float, flops: float, bw: float) -> tuple[float, float, float]:
    """(encoder s, decoder s, decoder step s) of faster-whisper on ``windows`` windows at ``batch``."""
    cross = 32 * 2 * 1500 * 1280 * 2                 # one window's cross-attention K/V (16-bit)
    self_kv = 5 * 32 * 2 * 1280 * 2 * 100            # five beams' self-attention K/V at 100 tokens
    step_bytes = 0.906e9 * 2 + batch * (cross + 5 * self_kv / 2)   # read + gather + concat: 5 passes of half of it
    step = step_bytes / (bw * BW_EFF) + FW_STEP_S
    return windows * 2.27e12 / (flops * MFU["prefill"]), windows / batch * 100 * step, step


def ref_whisper() -> Reference:
    windows = 1000 * 3600 / 30
    cross, self_kv = 32 * 2 * 1500 * 1280 * 2, 5 * 32 * 2 * 1280 * 2 * 100
    per_window = cross + self_kv + 1500 * 1280 * 2
    weights, context = 3.087e9, 0.63e9               # large-v3's 16-bit weights; CUDA context and handles
    fixed_gpu = weights + context

    def high(batch: int) -> float:                   # 50 % margin on what sits beside the (exact) weights
        return weights + 1.5 * (context + batch * per_window)

    r = FW_README
    enc_r, dec_r, _ = _whisper_gpu_s(r["batch"], r["windows"], *r["gpu"])
    host = (r["wall_s"] - enc_r - dec_r) / r["windows"]
    options = []
    for key, inst, gid, gb in ONE_GPU[:2]:
        batch = 1
        while high(2 * batch) <= gb * 1e9 * 0.92 and batch < 64:
            batch *= 2
        enc, dec, step = _whisper_gpu_s(batch, windows, rate(key), GPU[key][1])
        run = enc + dec + windows * host
        options.append((_job(f"1 x {key} ({inst}), faster-whisper batch {batch}", inst, "cn-shanghai", 1, run,
                             1.543e9 * 2, [
            f"{windows:,.0f} windows of 30 s; ~100 tokens each, beam 5 (faster-whisper's default)",
            f"memory per window: cross-attention K/V once per window (CTranslate2 >= 3.10 multiplies the beams "
            f"against one copy) 32 x 2 x 1500 x 1280 x 2 B = {cross / 1e6:.0f} MB + 5 beams' self-attention K/V at "
            f"100 tokens {self_kv / 1e6:.0f} MB + encoder output = {per_window / 1e6:.0f} MB; the faster-whisper "
            f"README's large-v2 batch 8 (6090 MiB on an 8 GB card) is 3.1 GB of weights + 0.6 GB of context + 8 x "
            f"{per_window / 1e6:.0f} MB = {(fixed_gpu + 8 * per_window) / 2**20:,.0f} MiB",
            f"batch {batch} on {gb} GB ({0.92 * gb:.1f} usable): {fixed_gpu / 1e9:.1f} GB + {batch} x "
            f"{per_window / 1e9:.2f} GB = {(fixed_gpu + batch * per_window) / 1e9:.1f} GB, "
            f"{high(batch) / 1e9:.1f} GB with 50 % more beside the weights; batch {2 * batch}: "
            f"{high(2 * batch) / 1e9:.1f} GB" + (" does not fit" if batch < 64 else " (64: the largest searched)"),
            f"decoder step: (1.81 GB of decoder weights + {batch} x ({cross / 1e6:.0f} MB cross K/V + 5 passes of "
            f"half the self K/V)) / ({GPU[key][1] / 1e9:.0f}e9 x {BW_EFF}) + {FW_STEP_S * 1e3:.0f} ms of launches "
            f"= {step * 1e3:.1f} ms x 100 steps; encoder 2.27e12 per window / ({rate_words(key)} x "
            f"{MFU['prefill']}): {(enc + dec) / windows:.3f} s of GPU per window",
            f"host per window (audio decoding, VAD, log-Mel features between the batches): the README's 17 s for "
            f"26 windows at batch 8 on an RTX 3070 Ti (43.5e12, 608e9) less the same GPU arithmetic there "
            f"({enc_r + dec_r:.1f} s) = {host:.2f} s",
            f"{windows:,.0f} x {(enc + dec) / windows + host:.3f} s = {run / HOUR:.1f} h"], f"1 x {gid}"), key))
    return _cheapest_job(options)


def _cheapest_job(options: list[tuple[Reference, str]]) -> Reference:
    """The cheapest of one-GPU job references, each one's arithmetic kept, the others' totals listed."""
    best = min(options, key=lambda o: o[0].cost_cny)[0]
    others = [f"{label}: CNY {r.cost_cny:,.0f} ({r.hours:.1f} h)" for r, label in options if r is not best]
    return Reference(best.machine, best.hours, best.cost_cny, best.steps + ("dearer: " + "; ".join(others),), best.gpus)


def ref_embeddings() -> Reference:
    n, layers, h = matmul_params("bge-m3") - 250002 * 1024, 24, 1024
    per_item = 2 * n * 512 + 4 * layers * h * 512 * 512
    flops = per_item * 1e7
    options = []
    for key, inst, gid, _gb in ONE_GPU:
        run = flops / (rate(key) * MFU["prefill"])
        options.append((_job(f"1 x {key} ({inst})", inst, "cn-shanghai", 1, run, 0.568e9 * 2, [
            "bge-m3 (XLM-R large encoder): 0.30B parameters multiplied per token (the 250k x 1024 embedding is a "
            "lookup)",
            f"FLOPs per 512-token item: 2N x 512 + 4Lhs x 512 = {per_item:.3g}; x 1e7 items = {flops:.3g}",
            f"time: {flops:.3g} / ({rate_words(key)} x {MFU['prefill']}) = {run / HOUR:.1f} h"], f"1 x {gid}"), key))
    return _cheapest_job(options)


def ref_offline_7b() -> Reference:
    n = matmul_params("Qwen2.5-7B")
    options = []
    for key, inst, gid, gb in ONE_GPU:
        prefill = 2 * n * 1000 / (rate(key) * MFU["prefill"])
        # vLLM keeps 0.9 of the memory; weights 15.2 GB and ~2 GB of activations and graphs; at most 256 sequences
        batch = min(256, int((0.9 * gb - 15.2 - 2.0) * 1e9 / (1150 * 28 * 2 * 4 * 128 * 2)))
        kv = batch * 1150 * 28 * 2 * 4 * 128 * 2
        step = (7.616e9 * 2 + kv) / (GPU[key][1] * BW_EFF)
        per_req = prefill + 300 * step / batch
        run = 1e5 * per_req
        options.append((_job(f"1 x {key} ({inst}), vLLM offline", inst, "cn-beijing", 1, run, 7.616e9 * 2, [
            f"memory: bf16 15.2 GB; KV 57 KB per token: {batch} sequences of 1,150 tokens in 0.9 x {gb} GB "
            "less weights and 2 GB (at most 256)",
            f"prefill per request: 2N x 1000 / ({rate_words(key)} x {MFU['prefill']}) = {prefill:.3f} s",
            f"decode step at batch {batch}: (15.2 GB + {kv / 1e9:.1f} GB KV) / ({GPU[key][1] / 1e9:.0f}e9 x {BW_EFF}) "
            f"= {step * 1e3:.0f} ms; per request 300 steps / {batch} = {300 * step / batch:.3f} s",
            f"1e5 requests x {per_req:.3f} s = {run / HOUR:.1f} h"], f"1 x {gid}"), key))
    return _cheapest_job(options)


WORKLOADS: dict[str, tuple[dict, object]] = {
    "lora-7b-sg": ({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "dataset": {"tokens": 1.0e8},
                    "constraints": {"regions": ["ap-southeast-1"], "billing": ["payg"]}}, ref_lora_7b_sg),
    "full-70b-week": ({"model": "meta-llama/Llama-3.1-70B", "task": "full", "seq_len": 2048,
                       "dataset": {"tokens": 1.0e9},
                       "constraints": {"deadline_hours": 168, "regions": ["cn-shanghai"], "billing": ["payg"]}},
                      ref_full_70b),
    "pretrain-1b-4nodes": ({"model": "meta-llama/Llama-3.2-1B-Instruct", "task": "pretrain", "seq_len": 2048,
                            "dataset": {"tokens": 2.0e10}, "hardware": {"gpu": "A10", "nodes": 4},
                            "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}, ref_pretrain_1b),
    "qlora-32b": ({"model": "Qwen/Qwen2.5-32B-Instruct", "task": "qlora", "seq_len": 2048, "dataset": {"tokens": 5.0e7},
                   "constraints": {"regions": ["cn-hangzhou"], "billing": ["payg"]}}, ref_qlora_32b),
    "full-8b-h20": ({"model": "meta-llama/Llama-3.1-8B", "task": "full", "seq_len": 4096, "dataset": {"tokens": 2.0e9},
                     "hardware": {"gpu": "H20"}, "constraints": {"regions": ["cn-beijing"], "billing": ["payg"]}},
                    ref_full_8b_h20),
    "serve-72b-gptq-l20": ({"model": "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "task": "inference",
                            "prompt_tokens": 1000, "output_tokens": 300,
                            "serving": {"requests_per_s": 20, "ttft_ms": 2000}, "hardware": {"gpu": "L20"},
                            "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"], "platforms": ["ecs"]}},
                           ref_serve_72b),
    "serve-r1-8-users": ({"model": "deepseek-ai/DeepSeek-R1", "task": "inference", "prompt_tokens": 30000,
                          "output_tokens": 2700, "batch_size": 8, "serving": {"requests_per_s": 0.05},
                          "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"], "platforms": ["ecs"]}},
                         ref_serve_r1),
    "serve-7b-low-traffic": ({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 1000,
                              "output_tokens": 300, "serving": {"requests_per_s": 0.2, "peak_requests_per_s": 2},
                              "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"], "platforms": ["ecs"]}},
                             ref_serve_7b_low),
    "serve-sdxl": ({"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                    "input": {"image_size": 1024, "steps": 30}, "serving": {"requests_per_s": 0.5},
                    "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"], "platforms": ["ecs"]}},
                   ref_serve_sdxl),
    "job-whisper-1000h": ({"model": "openai/whisper-large-v3", "task": "inference", "dataset": {"audio_hours": 1000},
                           "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}}, ref_whisper),
    "job-embeddings": ({"model": "BAAI/bge-m3", "task": "inference", "prompt_tokens": 512, "output_tokens": 0,
                        "dataset": {"items": 1.0e7}, "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}},
                       ref_embeddings),
    "job-offline-7b": ({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 1000,
                        "output_tokens": 300, "dataset": {"items": 1.0e5},
                        "constraints": {"regions": ["cn-beijing"], "billing": ["payg"]}}, ref_offline_7b),
}


def top_plan(wd: dict) -> dict:
    from gpuplan.plan import recommend

    t0 = time.perf_counter()
    rec = recommend(wd)
    p = rec.best
    if p is None:
        return {"plan": None, "binding": rec.binding_constraints, "s": time.perf_counter() - t0}
    c = p.cost
    par = p.parallel
    layout = " ".join(f"{k.upper()}{par[k]}" for k in ("tp", "pp", "dp") if par.get(k))
    return {"plan": f"{p.instance_count} x {p.instance_type} ({p.gpus_total} x {p.gpu}; {layout}"
                    + (f"; {par['framework']}" if par.get("framework") else "") + ")",
            "gpus": f"{p.gpus_total} x {p.gpu}",
            "hours": c.time_s / HOUR if c.time_s else None,
            "cost_cny": c.total_cost if c.total_cost is not None else c.monthly_cost,
            "currency": c.currency, "s": time.perf_counter() - t0}


def run(names: list[str]) -> list[dict]:
    rows = []
    for name in names:
        wd, ref_fn = WORKLOADS[name]
        ref: Reference = ref_fn()   # type: ignore[operator]
        got = top_plan(wd)
        cost_ratio = got["cost_cny"] / ref.cost_cny if got.get("cost_cny") else None
        time_ratio = got["hours"] / ref.hours if got.get("hours") and ref.hours else None
        # the time ratio is judged where the plan runs the reference's GPUs (more GPUs finish sooner at a like cost)
        same = got.get("gpus") == ref.gpus
        ok = cost_ratio is not None and LOW <= cost_ratio <= HIGH and (
            time_ratio is None or not same or LOW <= time_ratio <= HIGH)
        rows.append({"name": name, "reference": ref.machine, "ref_hours": ref.hours, "ref_cost_cny": ref.cost_cny,
                     "steps": list(ref.steps), **got, "cost_ratio": cost_ratio, "time_ratio": time_ratio,
                     "time_judged": same and time_ratio is not None, "within": ok})
    return rows


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def report(rows: list[dict]) -> str:
    ok = sum(r["within"] for r in rows)
    out = ["# Plan quality: top plan over a first-principles reference", "",
           f"`python bench/plan_quality.py` ({time.strftime('%Y-%m-%d')}). Target: every ratio within "
           f"[{LOW:.2f}, {HIGH:.2f}]. References: docs/plan-quality.md. Costs in CNY (payg; services per month).",
           "", f"**{ok} of {len(rows)} workloads within the target.**", "",
           "| workload | top plan | cost | reference | ratio cost | ratio time | within |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['name']} | {r.get('plan') or 'no plan'} | {_f(r.get('cost_cny'), ',.0f')}"
                   f"{' (' + _f(r.get('hours'), '.1f') + ' h)' if r.get('hours') else ''} | {r['reference']}: "
                   f"{r['ref_cost_cny']:,.0f}{' (' + _f(r['ref_hours'], '.1f') + ' h)' if r['ref_hours'] else ''} | "
                   f"{_f(r['cost_ratio'], '.2f')} | {_f(r['time_ratio'], '.2f')}"
                   f"{'' if r['time_judged'] or r['time_ratio'] is None else ' (other GPUs)'} | "
                   f"{'yes' if r['within'] else 'NO'} |")
    out += ["", "## The references' arithmetic", ""]
    for r in rows:
        out.append(f"**{r['name']}** ({r['reference']}):")
        out += [f"- {s}" for s in r["steps"]]
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="run these workloads only")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    names = args.only or list(WORKLOADS)
    rows = run(names)
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
    for r in rows:
        print(f"{r['name']:<22} cost {_f(r['cost_ratio'], '5.2f')}  time {_f(r['time_ratio'], '5.2f')}  "
              f"{'ok ' if r['within'] else 'OUT'}  {r.get('plan')}")
    if not args.only:
        out = ROOT / "bench/results/plan_quality.md"
        out.write_text(report(rows) + "\n", encoding="utf-8")
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
