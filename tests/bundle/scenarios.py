"""The bundle test scenarios: hand-written plans (the recommend --json contract) for real catalog
instance types, and the workloads whose estimates they carry.

Estimates are frozen in fixtures/<scenario>.estimate.json so the golden files only change when
the bundle renderer does; UPDATE_GOLDEN=1 recomputes them with gpuplan.estimate.core.estimate().
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuplan.workload import Workload

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

PRICE_SOURCE = "https://www.alibabacloud.com/product/ecs-pricing-list/en"

WORKLOADS: dict[str, dict] = {
    # Single-GPU LoRA: Qwen2.5-7B on one A10 (ecs.gn7i-c8g1.2xlarge), pay-as-you-go.
    "lora_single": {"name": "qwen7b-lora-demo", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora",
                    "hardware": {"instance_type": "ecs.gn7i-c8g1.2xlarge"}, "dataset": {"tokens": 2.0e8},
                    "seq_len": 2048},
    # Two-node full fine-tuning, ZeRO-3, over eRDMA (2 x ecs.ebmgn7ex.32xlarge, 16 x A100-SXM4-80GB).
    "two_node": {"name": "llama8b-full-2node", "model": "meta-llama/Llama-3.1-8B", "task": "full",
                 "hardware": {"instance_type": "ecs.ebmgn7ex.32xlarge", "nodes": 2}, "parallel": {"zero": 3},
                 "batch_size": 2, "gradient_accumulation": 4, "dataset": {"tokens": 1.0e9}},
    # vLLM service: Qwen2.5-7B-Instruct on one L20 (ecs.gn8is.4xlarge), fp8 KV cache, 2 replicas.
    "vllm_service": {"name": "qwen7b-chat-api", "model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                     "hardware": {"instance_type": "ecs.gn8is.4xlarge"}, "batch_size": 32, "kv_cache_dtype": "fp8",
                     "prompt_tokens": 1024, "output_tokens": 512, "serving": {"requests_per_s": 5}},
    # Spot job: QLoRA of Qwen2.5-14B on one L20 (ecs.gn8is.4xlarge), spot billing.
    "spot_job": {"name": "qwen14b-qlora-spot", "model": "Qwen/Qwen2.5-14B-Instruct", "task": "qlora",
                 "hardware": {"instance_type": "ecs.gn8is.4xlarge"}, "dataset": {"tokens": 5.0e7}},
    # Image batch job: FLUX.1-schnell (its 4 steps, 1024 px, bfloat16) on one A100-80GB (ecs.gn7e-c16g1.4xlarge).
    "image_job": {"name": "flux-schnell-images", "model": "black-forest-labs/FLUX.1-schnell", "task": "inference",
                  "hardware": {"instance_type": "ecs.gn7e-c16g1.4xlarge"}, "batch_size": 2,
                  "dataset": {"items": 20000}},
    # Not golden: two nodes without RDMA (ecs.gn7e-c16g1.32xlarge has no eRDMA): NCCL over TCP.
    "two_node_tcp": {"name": "llama8b-tcp", "model": "meta-llama/Llama-3.1-8B", "task": "pretrain",
                     "hardware": {"instance_type": "ecs.gn7e-c16g1.32xlarge", "nodes": 2}, "parallel": {"zero": 2},
                     "dataset": {"tokens": 5.0e8}},
}

LANG = {"vllm_service": "zh"}
GOLDEN_SCENARIOS = ("lora_single", "two_node", "vllm_service", "spot_job", "image_job")


def _storage(level: str, size: int, shared: dict | None = None, notes: tuple = ()) -> dict:
    return {"read_mb_s": 12.5, "provisioned_read_mb_s": 25.0, "checkpoint_bytes": 0, "checkpoint_write_mb_s": 0.0,
            "dataset_bytes": None,
            "disk": {"kind": "essd", "level": level, "size_gib": size, "iops": 1800 + 50 * size,
                     "throughput_mb_s": 120 + 0.5 * size, "effective_throughput_mb_s": 120 + 0.5 * size,
                     "instance_cap_mb_s": None, "formula": "ESSD formula"},
            "shared": shared, "notes": list(notes),
            "sources": ["https://www.alibabacloud.com/help/en/ecs/user-guide/essds"]}


CPFS_STORAGE = {"kind": "cpfs", "capacity_gib": 10240, "capacity_tib": 10, "read_mb_s": 4000, "write_mb_s": 2000,
                "why": "2 nodes read the same dataset and write shared checkpoints"}

PLANS: dict[str, dict] = {
    "lora_single": {
        "platform": "ecs", "instance_type": "ecs.gn7i-c8g1.2xlarge", "instance_count": 1, "gpu": "A10-24GB",
        "gpus_total": 1, "parallel": {"tp": 1, "pp": 1, "dp": 1, "zero": 0},
        "billing": "payg", "region": "cn-shanghai", "price_region": "cn-shanghai",
        "instance_price_per_hour": 11.14, "price_per_hour": 11.14, "currency": "CNY", "price_as_of": "2023-10-20",
        "price_source": PRICE_SOURCE, "time_s": 199293.0, "total_cost": 616.72, "replicas": None,
        "monthly_cost": None, "cost_per_million_output_tokens": None,
        "storage": _storage("PL1", 120), "network": {"multi_node": False, "rdma": None, "intra_node": "pcie",
                                                     "nccl_env": {}, "text": "single node: no inter-node network needed",
                                                     "sources": []},
        "host": {"text": "8 vCPU, 30 GiB RAM per node; the job needs about 10 GiB"}, "pareto": True,
        "why": ["cheapest feasible plan: 1 x ecs.gn7i-c8g1.2xlarge (1 x A10-24GB per replica), payg, CNY 616.72",
                "throughput: 1,287 tokens/s, MFU 32%, communication 0% of a step"],
    },
    "two_node": {
        "platform": "ecs", "instance_type": "ecs.ebmgn7ex.32xlarge", "instance_count": 2, "gpu": "A100-SXM4-80GB",
        "gpus_total": 16, "parallel": {"tp": 1, "pp": 1, "dp": 16, "zero": 3},
        "billing": "payg", "region": "cn-beijing", "price_region": "cn-shanghai",
        "instance_price_per_hour": 252.5, "price_per_hour": 505.0, "currency": "CNY", "price_as_of": "2023-10-20",
        "price_source": PRICE_SOURCE, "time_s": 42519.8, "total_cost": 5964.7, "replicas": None,
        "monthly_cost": None, "cost_per_million_output_tokens": None,
        "storage": _storage("PL1", 200, {"kind": "extreme_nas", "capacity_gib": 2100, "capacity_tib": 2.051,
                                         "read_mb_s": 600.0, "write_mb_s": 600.0,
                                         "why": "2 nodes read the same dataset and write shared checkpoints"},
                            ("keep the raw dataset in OSS (cold) and stage the working set on the fast tier",)),
        "network": {"multi_node": True, "rdma": "erdma", "intra_node": "nvlink", "comm_fraction": 0.46,
                    "nccl_env": {"NCCL_IB_DISABLE": "0", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "INFO"},
                    "rdma_types": [], "text": "2 nodes over eRDMA (160 Gbit/s)",
                    "sources": ["https://help.aliyun.com/en/ecs/user-guide/erdma-usage/"]},
        "host": {"text": "128 vCPU, 1024 GiB RAM per node; the job needs about 31 GiB"}, "pareto": True,
        "why": ["cheapest feasible plan: 2 x ecs.ebmgn7ex.32xlarge (16 x A100-SXM4-80GB per replica), payg, CNY 5,964.70",
                "throughput: 19,433 tokens/s, MFU 19%, communication 46% of a step"],
    },
    "vllm_service": {
        "platform": "ecs", "instance_type": "ecs.gn8is.4xlarge", "instance_count": 2, "gpu": "L20-48GB",
        "gpus_total": 2, "parallel": {"tp": 1, "pp": 1, "dp": 1}, "billing": "payg", "region": "cn-hangzhou",
        "price_region": "cn-hangzhou", "instance_price_per_hour": 20.5, "price_per_hour": 41.0, "currency": "CNY",
        "price_as_of": "2024-06-01", "price_source": PRICE_SOURCE, "time_s": None, "total_cost": None, "replicas": 2,
        "monthly_cost": 29930.0, "cost_per_million_output_tokens": 7.52,
        "storage": _storage("PL0", 100), "network": {"multi_node": False, "rdma": "erdma", "nccl_env": {},
                                                     "text": "single node: no inter-node network needed",
                                                     "sources": []},
        "host": None, "pareto": False, "why": ["one replica (1 x L20-48GB, TP1) sustains 2.73 req/s within the SLA under load "
                                              "(batch limit 604 sequences per model copy); 2 replica(s) for a peak of 5 "
                                              "req/s: 92% utilised (target <= 95%)"],
    },
    "spot_job": {
        "platform": "ecs", "instance_type": "ecs.gn8is.4xlarge", "instance_count": 1, "gpu": "L20-48GB",
        "gpus_total": 1, "parallel": {"tp": 1, "pp": 1, "dp": 1, "zero": 0}, "billing": "spot",
        "region": "cn-hangzhou", "price_region": "cn-hangzhou", "instance_price_per_hour": 6.15,
        "price_per_hour": 6.15, "currency": "CNY", "price_as_of": "2024-06-01", "price_source": PRICE_SOURCE,
        "time_s": 30000.0, "total_cost": 51.25, "replicas": None, "monthly_cost": None,
        "cost_per_million_output_tokens": None, "storage": _storage("PL1", 150),
        "network": {"multi_node": False, "rdma": "erdma", "nccl_env": {},
                    "text": "single node: no inter-node network needed", "sources": []},
        "host": None, "pareto": True,
        "why": ["spot: checkpoint every 30 min; interruptions add 1.4% to the run time (Young's interval, assumed 0.05 "
                "interruptions/h)"],
    },
    "image_job": {
        "platform": "ecs", "instance_type": "ecs.gn7e-c16g1.4xlarge", "instance_count": 1, "gpu": "A100-SXM4-80GB",
        "gpus_total": 1, "parallel": {"tp": 1, "pp": 1, "dp": 1}, "billing": "payg", "region": "cn-shanghai",
        "price_region": "cn-shanghai", "instance_price_per_hour": 34.74, "price_per_hour": 34.74, "currency": "CNY",
        "price_as_of": "2023-06-01", "price_source": PRICE_SOURCE, "time_s": 44751.0, "total_cost": 431.85,
        "replicas": None, "monthly_cost": None, "cost_per_million_output_tokens": None,
        "job": {"items": 20000.0, "unit": "image", "items_per_s": 0.519, "replicas": 1, "batch": 2},
        # the 80 % ranges a recommend plan carries (diffusion time -27 % .. +128 %): the auto-release waits for the high end
        "intervals": {"time_s": [35900.0, 98200.0], "total_cost": [346.4, 947.6]},
        "storage": _storage("PL0", 100), "network": {"multi_node": False, "rdma": None, "nccl_env": {},
                                                     "text": "single node: no inter-node network needed",
                                                     "sources": []},
        "host": None, "pareto": True, "why": ["batch job: 20,000 images at 0.519/s per replica x 1 replica(s) = 10.7 h"],
    },
    "two_node_tcp": {
        "platform": "ecs", "instance_type": "ecs.gn7e-c16g1.32xlarge", "instance_count": 2, "gpu": "A100-SXM4-80GB",
        "gpus_total": 16, "billing": "subscription", "region": "cn-shanghai", "price_region": "cn-shanghai",
        "instance_price_per_hour": None, "price_per_hour": None, "currency": "CNY", "price_as_of": None,
        "price_source": None, "time_s": None, "total_cost": None, "replicas": None, "monthly_cost": None,
        "cost_per_million_output_tokens": None,
        "storage": _storage("PL2", 800, {"kind": "nas", "capacity_tib": 1}),
        "network": {"multi_node": True, "rdma": None, "nccl_env": {}, "text": "2 nodes over the VPC network (TCP)",
                    "sources": []}, "host": None, "pareto": False, "why": [],
    },
}

REJECTED = {
    "two_node": [{"instance_type": "ecs.gn7e-c16g1.32xlarge", "code": "network",
                  "reason": "gn7e (A100 80 GB) x 2 nodes: no eRDMA/RoCE, communication takes 75% of each step over "
                            "the VPC network"},
                 {"instance_type": "ecs.gn8is-8x.32xlarge", "code": "memory",
                  "reason": "gn8is (L20 48 GB): needs 52.0 GiB per GPU (at seq 4096, ckpt full, ZeRO-3, 8 GPUs); "
                            "44.1 GiB usable"}],
}
PARETO = {
    "two_node": [{"instance_type": "ecs.ebmgn7ex.32xlarge", "instance_count": 1, "billing": "payg",
                  "time_s": 85000.0, "total_cost": 5960.0, "pareto": True},
                 {"instance_type": "ecs.ebmgn8v.48xlarge", "instance_count": 2, "billing": "payg",
                  "time_s": 30000.0, "total_cost": 9800.0, "pareto": True},
                 {"instance_type": "ecs.gn7e-c16g1.32xlarge", "instance_count": 2, "billing": "payg",
                  "time_s": 90000.0, "total_cost": 12000.0, "pareto": False}],
}


def estimate_dict(name: str) -> dict:
    """The frozen estimate of a scenario (recomputed and saved when UPDATE_GOLDEN=1 or missing)."""
    path = FIXTURES / f"{name}.estimate.json"
    if UPDATE or not path.exists():
        from gpuplan.estimate.core import estimate

        doc = estimate(WORKLOADS[name]).to_dict()
        FIXTURES.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return json.loads(path.read_text(encoding="utf-8"))


def inputs(name: str) -> tuple[dict, Workload, dict]:
    """(plan, resolved workload, estimate) for a scenario."""
    est = estimate_dict(name)
    return PLANS[name], Workload.model_validate(est["workload"]), est
