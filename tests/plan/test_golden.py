"""Golden scenarios from the guides (../shared/guides), answered by the recommender.

Exact bytes move while the estimator is calibrated; these tests assert choices, reasons and loose
ranges. Figures are printed with `pytest -s` for the report.
"""

import re

from gpuplan.catalog.hardware.instances import load_instances
from gpuplan.plan import recommend
from gpuplan.units import GIB


def _family(p) -> str:
    return load_instances()[p.instance_type].family

ALL_STATUS = ["ga", "preview", "ticket", "not-recommended", "retired", "unconfirmed"]


def test_qwen25_7b_lora_on_one_a10_fits_the_estimate_but_not_its_high_end():
    """7B LoRA at seq 2048 with checkpointing needs ~22 GiB of the A10's 22.5 usable: it fits the point estimate,
    but LoRA memory is measured to run up to ~50 % over the estimate (data/intervals.json), so one job in two would
    run out. Plans are sized at the high end of the 80 % range (issue 30): the A10 is rejected, the plans kept fit
    nine jobs in ten."""
    from gpuplan import estimate
    from gpuplan.estimate import intervals

    # 2e8 tokens: each instance's fixed costs count the 20-minute driver install and the 20-minute download at 100
    # Mbit/s the ECS bundle runs (issue 29), which a 2-GPU type pays at twice the hourly price; at 1e8 tokens the
    # 2-GPU gn7e no longer shows less than the top plan at its point price, and the ranking case below needs it to
    w = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "dataset": {"tokens": 2e8},
         "constraints": {"billing": ["payg"]}}
    e = estimate({**w, "hardware": {"gpu": "A10-24GB", "count": 1}})
    print(f"\nLoRA 7B on 1 x A10: {e.memory.per_gpu_bytes / GIB:.1f}/{e.memory.capacity_bytes / GIB:.1f} GiB, "
          f"high end {intervals.memory_high_bytes(e) / GIB:.1f} GiB, fit confidence {intervals.fit_confidence(e):.0%}")
    assert e.fits and 14 * GIB < e.memory.per_gpu_bytes
    rec = recommend(w)
    planned = [p for p in rec.all_plans if _family(p) == "gn7i" and p.gpus_total == 1]
    a10 = [r for r in rec.rejected if r["instance_type"] == "ecs.gn7i-c8g1.2xlarge"]
    # the A10 is planned only in a configuration whose range's high end fits the card (the eighth refit's LoRA band,
    # -31 % .. +23 %, lets the search find one; the earlier bands, up to +51 %, did not), else rejected for memory
    for p in planned:
        d = p.to_dict()
        assert d["intervals"]["memory_per_gpu_bytes"][1] <= 24 * 10**9 and d["fit_confidence"] >= 0.89
    assert planned or (a10 and a10[0]["code"] == "memory")
    for p in rec.all_plans:
        assert p.to_dict()["fit_confidence"] >= 0.89
    assert any("high end" in a for a in rec.assumptions)
    # the top plan never costs more than any other feasible plan at the same billing, each price counted at the
    # upper bound of its margin (the ranking basis): the 2-GPU gn7e-c16g1.8xlarge shows less at its point price,
    # but that price is derived (2 x the 1-GPU type's per-GPU price, +50 %) against the top plan's quoted copy
    # (+10 %); the top plan names it, its point price and the command that checks it
    from gpuplan.plan.rank import TIE_TOLERANCE, pessimistic_cost

    top = rec.best
    assert pessimistic_cost(top) <= min(pessimistic_cost(p) for p in rec.all_plans if p.cost_key) * (1 + TIE_TOLERANCE)
    cheaper = [p for p in rec.all_plans if p.cost_key and p.cost_key < top.cost_key * (1 - 1e-9)]
    assert all(p.cost_margin > top.cost_margin for p in cheaper)
    if cheaper:
        assert any("shows less" in w and cheaper[0].short_name in w for w in top.advice.why)


def test_qwen25_7b_lora_without_checkpointing_needs_more_than_an_a10():
    rec = recommend({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "grad_checkpointing": False,
                     "dataset": {"tokens": 1e8}, "constraints": {"billing": ["payg"]}})
    a10 = [r for r in rec.rejected if r["instance_type"] == "ecs.gn7i-c8g1.2xlarge"]
    assert a10 and a10[0]["code"] == "memory" and "usable" in a10[0]["reason"]
    note = [n for n in rec.why_not if n.startswith("gn7i (A10 24 GB)")]
    # the note says the setting that made it too small (ckpt none) and names a fix that fits at the plan's memory
    # confidence: full checkpointing when that passes at the high end of the range, else another family
    assert note and "ckpt none" in note[0] and "; fits " in note[0]
    assert "checkpointing" in note[0] or re.search(r"fits on (eb)?gn\w+", note[0])
    print("\nwhy not:", note[0])


def test_qwen_7b_full_finetune_on_1_to_4_a100_80gb_uses_zero():
    rec = recommend({"model": "Qwen/Qwen-7B-Chat", "task": "full", "seq_len": 2048, "dataset": {"tokens": 1e9},
                     "hardware": {"gpu": "A100-SXM4-80GB"}, "constraints": {"max_gpus": 4, "billing": ["payg"]}})
    assert rec.plans
    for p in rec.plans:
        print("\nQwen-7B full:", p.short_name, p.gpus_total, p.layout,
              f"{p.memory.per_gpu_bytes / GIB:.1f} GiB", f"{p.cost.time_s / 3600:.1f} h", p.cost.total_cost)
        assert 1 <= p.gpus_total <= 4
        lay = p.parallel
        # weights + grads + AdamW states (16 B/param, ~123 GB) exceed one 80 GB card: shard or offload
        assert lay["zero"] >= 1 or lay["offload"] != "none" or lay["tp"] > 1
    assert any(p.gpus_total > 1 and p.parallel["zero"] >= 1 for p in rec.plans)


def test_70b_bf16_never_on_less_than_140_gb():
    rec = recommend({"model": "meta-llama/Llama-3.1-70B-Instruct", "task": "inference",
                     "constraints": {"include_status": ALL_STATUS}})
    assert rec.all_plans
    for p in rec.all_plans:
        replica_gpus = p.parallel["tp"] * p.parallel["pp"]
        assert replica_gpus * (load_instances()[p.instance_type].gpu_memory_gib or 0) * 1e9 >= 140e9, p.instance_type


def test_70b_int4_on_l20_rate_is_far_below_the_guides_100_qps():
    # Guide B: "Qwen-70B 推理（INT4） ecs.l20 (L20 48G) 1~2卡 vLLM部署，QPS > 100".
    rec = recommend({"model": "meta-llama/Llama-3.1-70B-Instruct", "task": "inference", "quantization": "awq",
                     "prompt_tokens": 1024, "output_tokens": 512, "constraints": {"families": ["gn8is"]}})
    by_gpus = {}
    for p in rec.all_plans:
        by_gpus.setdefault(p.parallel["tp"] * p.parallel["pp"], p.performance["max_requests_per_s"])
    print("\n70B AWQ on L20, requests/s per replica by GPUs:", by_gpus)
    assert 1 in by_gpus or 2 in by_gpus        # 1-2 L20 cards do hold the INT4 weights
    assert max(by_gpus.get(1, 0), by_gpus.get(2, 0)) < 100 / 10   # an order of magnitude below the claim
    assert max(by_gpus.get(1, 0), by_gpus.get(2, 0)) > 0


def test_sdxl_inference_on_one_a10():
    rec = recommend({"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                     "constraints": {"billing": ["payg"]}})
    # among plans with a sourced price, one A10 wins; vGPU slices (sgn8ia, vgn7i-vws) carry rule-based
    # estimates (price_estimated) that the ranking marks, and may rank above it
    best = next(p for p in rec.all_plans if p.cost.price_per_hour is not None and not p.cost.price_estimated)
    assert best.platform == "ecs" and best.gpus_total == 1
    # one A10 when the high end of SDXL's memory range fits its 24 GB; since the eighth refit the diffusion band,
    # read beside the exact weights from 10 source groups (five measure the non-weight part 1.5-2.9x the estimate),
    # puts it at 24.3 GiB, above the A10's 22 usable: the cheapest 1-GPU card that holds it (an L20) wins
    from gpuplan import estimate
    from gpuplan.estimate import intervals

    e = estimate({"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                  "hardware": {"gpu": "A10-24GB", "count": 1}})
    a10_fits = intervals.memory_high_bytes(e) <= e.memory.capacity_bytes
    assert (_family(best) == "gn7i") == a10_fits


def test_unsatisfiable_budget_and_deadline_say_what_binds():
    rec = recommend({"model": "Qwen/Qwen-7B-Chat", "task": "full", "seq_len": 2048, "dataset": {"tokens": 1e9},
                     "constraints": {"budget": 100, "deadline_hours": 1}})
    assert rec.plans == []
    kinds = {b["constraint"]: b for b in rec.binding_constraints}
    assert "budget" in kinds and kinds["budget"]["short_by"] > 0
    assert "deadline_hours" in kinds and kinds["deadline_hours"]["short_by"] > 0
    d = rec.to_dict()
    assert d["schema_version"] == 1 and d["plans"] == [] and d["binding_constraints"]


def test_unsatisfiable_memory_says_so():
    rec = recommend({"model": "meta-llama/Llama-3.1-405B", "task": "full", "seq_len": 4096,
                     "constraints": {"max_gpus": 8}})
    assert rec.plans == []
    assert rec.binding_constraints[0]["constraint"] in ("memory", "max_gpus")
    assert rec.binding_constraints[0]["text"]


PLAN_FIELDS = {"platform", "instance_type", "instance_count", "gpu", "gpus_total", "parallel", "memory_per_gpu_bytes",
               "capacity_per_gpu_bytes", "billing", "region", "price_region", "instance_price_per_hour", "price_per_hour",
               "currency", "price_as_of", "price_source", "time_s", "total_cost", "replicas", "monthly_cost",
               "cost_per_million_output_tokens", "storage", "network", "host", "pareto", "why"}


def test_json_contract_fields():
    import json

    rec = recommend({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "serving": {"requests_per_s": 3}})
    d = json.loads(json.dumps(rec.to_dict()))
    assert d["schema_version"] == 1 and d["workload"]["model"] == "Qwen/Qwen2.5-7B-Instruct"
    for key in ("plans", "rejected", "binding_constraints", "assumptions", "warnings"):
        assert key in d
    for p in d["plans"]:
        assert PLAN_FIELDS <= set(p)
        assert p["platform"] == "ecs" and p["replicas"] >= 1
        assert p["time_s"] is None and p["total_cost"] is None          # serving
    for r in d["rejected"]:
        assert set(r) == {"instance_type", "code", "reason"}
    best = d["plans"][0]
    assert best["monthly_cost"] > 0 and best["cost_per_million_output_tokens"] > 0
    assert best["price_as_of"] and best["price_source"]


def test_proxy_region_is_labelled():
    rec = recommend({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                     "constraints": {"regions": ["cn-wulanchabu"], "billing": ["payg"]}})
    p = rec.best   # no price bundled for cn-wulanchabu: the sourced cn-shanghai price is the proxy
    assert p.cost.region == "cn-wulanchabu" and p.cost.price_region == "cn-shanghai"
    assert any("proxy" in w for w in p.advice.warnings)


def test_multi_node_advice_names_erdma_and_nccl():
    rec = recommend({"model": "meta-llama/Llama-3.1-70B-Instruct", "task": "full", "seq_len": 4096,
                     "dataset": {"tokens": 1e9}, "objective": "time",
                     "constraints": {"include_status": ["ga"], "billing": ["payg"]}})
    multi = [p for p in rec.all_plans if p.nodes_per_replica > 1]
    assert multi
    p = rec.best
    if p.nodes_per_replica > 1:
        assert p.advice.network["multi_node"] and p.advice.network["nccl_env"]
        assert p.advice.network["comm_fraction"] is not None
        assert p.advice.storage["shared"]["kind"] == "cpfs"


def test_quick_mode_answers_the_tree():
    from gpuplan.plan import quick

    q = quick("7B", "infer")
    assert q.bucket == "1B-10B" and q.verdict in ("holds", "works but slow", "works but expensive", "wrong")
    assert q.recommendation.best is not None
    q70 = quick("70B", "full")   # "finetune" names more than one task: refused (issue 32)
    d = q70.to_dict()
    assert d["folklore"]["gpus"] == 4 and d["verdict"] in ("holds", "works but slow", "works but expensive", "wrong")
