"""Issue 14, ranking half: honest ranking (price margins, fixed costs, ties), serving headroom,
batch inference jobs, truthful rejection reasons and quick's verdicts — checked as a buyer would."""

import math
import re

import pytest

from gpuplan.catalog.hardware.instances import load_instances
from gpuplan.plan import recommend
from gpuplan.plan.money.cost import price_margins
from gpuplan.plan.money.fixed_costs import image_pull, load_fixed_costs, node_start
from gpuplan.plan.serving.queueing import (
    DEFAULT_TARGET_UTILIZATION,
    erlang_c,
    size_replicas,
    wait_quantile_s,
)
from gpuplan.plan.quick import quick
from gpuplan.plan.rank import pessimistic_cost, rank
from gpuplan.units import HOUR_S


def _family(p) -> str:
    return load_instances()[p.instance_type].family


class _P:
    def __init__(self, c, t, margin=0.0, n=1, g=1):
        self.cost_key, self.time_key, self.cost_margin, self.instance_count, self.gpus_total = c, t, margin, n, g


# ----------------------------------------------------------------------------- ranking rules

def test_a_guess_beats_a_sourced_price_only_when_cheaper_after_its_margin():
    sourced = _P(100.0, 10.0)
    guess_close = _P(80.0, 10.0, margin=0.5)      # 80 x 1.5 = 120 > 100: the sourced price ranks first
    guess_far = _P(60.0, 10.0, margin=0.5)        # 60 x 1.5 = 90 < 100: cheaper even pessimistically
    assert rank([guess_close, sourced], "cost")[0] is sourced
    assert rank([sourced, guess_far], "cost")[0] is guess_far
    assert pessimistic_cost(guess_close) == pytest.approx(120.0)


def test_ties_go_to_fewer_instances_then_fewer_gpus():
    big = _P(100.0, 1.0, n=8, g=64)
    mid = _P(100.2, 2.0, n=1, g=8)                # within 0.5 %: a tie
    small = _P(100.1, 8.0, n=1, g=1)
    assert rank([big, mid, small], "cost") == [small, mid, big]
    assert rank([_P(100.0, 1.0, n=8), _P(101.0, 1.0, n=1)], "cost")[0].instance_count == 8   # 1 % is no tie


def test_margins_are_zero_for_sourced_and_positive_for_guesses():
    m = price_margins()
    assert m["official"] == 0 and m["user"] == 0
    assert 0 < m["third-party"] < m["estimated"]


# ----------------------------------------------------------------------------- the README example

def test_readme_example_top_plans_are_what_an_engineer_would_pick():
    rec = recommend("examples/qwen2.5-7b-lora.yaml")
    assert 1 <= len(rec.plans) <= 5 and [p.rank for p in rec.plans] == list(range(1, len(rec.plans) + 1))
    top = rec.plans[0]
    print("\nREADME example:", [(p.short_name, p.instance_count, p.gpus_total, p.cost.billing,
                                 round(p.cost.total_cost, 2), p.cost.price_kind) for p in rec.plans])
    # single node, a sensible GPU (the guides' A10 for 7B LoRA, or an A100 when cheaper per job)
    assert all(p.instance_count == 1 for p in rec.plans[:3])
    assert _family(top) in ("gn7i", "gn7", "gn7e") and top.gpus_total <= 4
    # a guessed price is marked as such (and carries its rule)
    for p in rec.plans:
        assert p.cost.price_is_guess == (p.cost.price_kind == "estimated")
        if p.cost.price_is_guess:
            assert p.cost.price_rule and p.cost_margin > 0
    d = rec.to_dict()
    assert len(d["plans"]) == len(rec.plans) and all(x["rank"] <= 5 for x in d["plans"])
    assert d["pareto"], "the Pareto front stays in its own list"


def test_short_jobs_prefer_fewer_nodes_because_of_fixed_costs():
    wd = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048, "dataset": {"tokens": 2e7},
          "constraints": {"billing": ["payg"], "families": ["gn7"]}}
    rec = recommend(wd)
    plans = [p for p in rec.all_plans if p.instance_type == "ecs.gn7-c13g1.26xlarge"]
    by_nodes = {p.instance_count: p for p in plans}
    assert 1 in by_nodes and 2 in by_nodes
    one, two = by_nodes[1], by_nodes[2]
    fx = load_fixed_costs()
    fixed_s = sum(fx.breakdown(7.6e9 * 2, image_pull(fx, one.cost.region, training=True), node_start()).values())
    # each node pays start-up, the driver install (20 min, data/ops.yaml), image pull, model download and the idle
    # tail; the ECS node builds the bundle's image from the 20 GiB node image (data/environments.yaml) and downloads
    # the weights from the model hub, both over its 100 Mbit/s public bandwidth (data/ops.yaml)
    assert one.cost.fixed["image_pull_s"] == pytest.approx(20 * 2 ** 30 / (100e6 / 8))
    assert one.cost.fixed["driver_install_s"] == 1200
    assert one.cost.fixed["model_download_s"] == pytest.approx(7.6e9 * 2 / (100e6 / 8), rel=0.02)
    assert one.cost.fixed_cost == pytest.approx(sum(one.cost.fixed.values()) / HOUR_S * one.cost.price_per_hour)
    assert two.cost.fixed_cost == pytest.approx(2 * one.cost.fixed_cost, rel=1e-6)
    assert sum(one.cost.fixed.values()) == pytest.approx(fixed_s, rel=0.05)
    assert two.cost.total_cost > one.cost.total_cost
    assert rec.plans[0].instance_count == 1
    d = one.to_dict()
    assert d["fixed_costs"]["boot_s"] == fx.boot_s and d["fixed_costs"]["cost"] > 0
    assert any("fixed costs per instance" in a for a in rec.assumptions)


# ----------------------------------------------------------------------------- serving headroom

def test_erlang_c_matches_textbook_values():
    # M/M/1: P(wait) = rho; M/M/2 at a = 1 (rho 0.5): C = 1/3 (Kleinrock 1975, eq. 3.40)
    assert erlang_c(1, 0.7) == pytest.approx(0.7)
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c(3, 3.0) == 1.0
    # M/M/1, lambda 0.5, mu 1: P(W > t) = 0.5 e^{-0.5 t} -> the 95th percentile is ln(10) / 0.5
    assert wait_quantile_s(1, 0.5, 1.0) == pytest.approx(math.log(10) / 0.5)


def test_replicas_keep_15_percent_headroom_of_the_capacity_at_the_sla():
    # the capacity is already the rate at which the p90 TTFT (queueing included) meets its target (issue 29)
    s = size_replicas(5.0, 1.94)
    assert s.replicas == 3 and s.utilization <= DEFAULT_TARGET_UTILIZATION      # 5 / (3 x 1.94) = 86 %
    assert size_replicas(5.0, 2.5).replicas == 3                               # 2 would run at 100 %
    assert size_replicas(5.0, 2.5, target_utilization=1.0).replicas == 2
    with pytest.raises(TypeError):
        size_replicas(5.0, 2.5, 32)     # no positional third argument: the old signature took slots there


def test_70b_serving_plans_report_utilization_under_the_target():
    rec = recommend("examples/llama-70b-int4-serving.yaml")
    ecs = [p for p in rec.plans if p.is_ecs]
    assert ecs
    for p in ecs:
        u = p.cost.utilization
        cap = p.performance["max_requests_per_s"] * p.parallel["dp"] * p.cost.replicas
        assert u == pytest.approx(5.0 / cap, rel=1e-3)
        assert u <= 1 / 1.15 + 1e-9, (p.short_name, u)                        # capacity >= 15 % above 5 req/s
        assert p.to_dict()["utilization"] == pytest.approx(u, abs=1e-4)
    tight = recommend("examples/llama-70b-int4-serving.yaml", serving={"requests_per_s": 5, "ttft_ms": 2000,
                                                                        "tpot_ms": 50, "target_utilization": 0.5})
    t_ecs = [p for p in tight.plans if p.is_ecs]
    assert t_ecs and all(p.cost.utilization <= 0.5 for p in t_ecs)
    # managed platforms (ACK, PAI-EAS, Function Compute) size with the same target (asked for alone: beside ECS,
    # an ACK pool that never scales under steady traffic is left out as the same machine plus a fee)
    only_managed = recommend("examples/llama-70b-int4-serving.yaml",
                             serving={"requests_per_s": 5, "ttft_ms": 2000, "tpot_ms": 50, "target_utilization": 0.5},
                             constraints={"platforms": ["ack", "pai-eas", "function-compute"]})
    managed = [p for p in only_managed.all_plans if not p.is_ecs and p.cost.utilization is not None]
    assert managed and all(p.cost.utilization <= 0.5 + 1e-9 for p in managed)
    assert not any(p.platform == "ack" for p in tight.all_plans)
    same = [p for p in tight.all_plans if p.is_ecs and p.instance_type == ecs[0].instance_type
            and p.cost.billing == ecs[0].cost.billing and p.parallel == ecs[0].parallel]
    assert same and same[0].cost.replicas > ecs[0].cost.replicas      # 5 / (1.94 x 0.5) -> 6 replicas, not 3


def test_a_serving_replica_spans_nodes_only_when_one_model_copy_needs_them():
    # 2 x 8-GPU nodes as one TP4 DP4 "replica" is the same deployment as two 8-GPU replicas, with a
    # network warning on top: such duplicates used to fill ranks 3-8 of the 70B example
    rec = recommend("examples/llama-70b-int4-serving.yaml")
    ecs = [p for p in rec.all_plans if p.is_ecs]
    assert ecs
    seen = set()
    for p in ecs:
        per_node = p.gpus_total // p.instance_count
        if p.instance_count // p.cost.replicas > 1:
            assert p.parallel["tp"] * p.parallel["pp"] > per_node, p.instance_type
        key = (p.instance_type, p.instance_count, p.cost.billing, p.parallel["tp"], p.parallel["pp"])
        assert key not in seen, key
        seen.add(key)


def test_why_not_names_the_closest_misses_first():
    # the 70B AWQ example: some types miss a latency target, the 2-16 GB vGPU slices miss by the whole
    # model; the near misses are what a buyer asks about, and each family's line is its closest type (the L20's
    # 48 GB holds the ~37 GiB model at the estimate, not at the high end of its memory range: a memory miss)
    rec = recommend("examples/llama-70b-int4-serving.yaml")
    lines = rec.why_not
    assert lines and ("TTFT" in lines[0] or "TPOT" in lines[0])
    codes = ["GiB usable" in line or "no room for the KV cache" in line for line in lines]
    assert codes == sorted(codes), lines          # every memory miss after every latency miss
    slices = [line for line in lines if line.startswith(("sgn", "vgn"))
              and int(re.search(r"\((\S+) (\d+) GB\)", line).group(2)) < 24]
    assert not slices, lines          # the 2-16 GB vGPU slices miss by the whole model: never a near miss
    for line in lines:   # a family's line never sends the buyer to the same family ("gn7 ...; fits on gn7")
        family = line.split(" ", 1)[0]
        assert not line.endswith(f"fits on {family}"), line
    assert any("GPUs per model copy, as in the top plan" in line for line in lines), lines


def test_sla_reason_names_the_kv_cache_and_never_says_0_ms():
    rec = recommend("examples/llama-70b-int4-serving.yaml")
    reasons = {r["instance_type"]: r for r in rec.rejected}
    a100_40 = reasons["ecs.gn7-c12g1.3xlarge"]          # 70B AWQ (~37 GiB) on one 40 GB card
    # no room for the KV cache at the estimate; at the high end of its memory range the model alone does not fit
    assert a100_40["code"] == "memory" and ("KV cache" in a100_40["reason"] or "GiB usable" in a100_40["reason"]), \
        a100_40
    no_tpot = recommend({"model": "meta-llama/Llama-3.3-70B-Instruct", "task": "inference", "precision": "fp16",
                         "quantization": "awq", "framework": "vllm", "serving": {"requests_per_s": 1, "ttft_ms": 200}})
    assert not any("/ 0 ms" in r["reason"] for r in no_tpot.rejected)
    assert any("TTFT target" in r["reason"] for r in no_tpot.rejected)


# ----------------------------------------------------------------------------- batch inference jobs

def test_whisper_1000_hours_in_48_hours_is_a_job_not_a_subscription():
    rec = recommend({"model": "openai/whisper-large-v3", "task": "inference", "input": {"audio_seconds": 30},
                     "dataset": {"audio_hours": 1000}, "constraints": {"deadline_hours": 48}})
    assert rec.plans
    for p in rec.plans:
        c = p.cost
        assert c.monthly_cost is None and c.total_cost is not None and c.time_s <= 48 * HOUR_S
        assert c.job["items"] == 120000 and c.job["audio_hours"] == 1000
        assert c.job["cost_per_audio_hour"] == pytest.approx(c.total_cost / 1000, rel=1e-4)
        assert c.cost_per_million_output_tokens is None
        assert c.billing != "subscription" or c.total_cost >= c.price_per_hour   # whole months if subscribed


def test_whisper_time_includes_the_decoder():
    """The decoder's token-by-token steps are part of the time. Pinned to a published figure:
    insanely-fast-whisper's README (github.com/Vaibhavs10/insanely-fast-whisper, read 2026-12) transcribes
    150 min of audio in ~98 s with large-v3 on an A100-80GB at batch 24, fp16 + FlashAttention 2, i.e.
    ~3.06 windows of 30 s per second; one A10 at batch 1 must be slower than that, yet faster than
    real time x 10."""
    rec = recommend({"model": "openai/whisper-large-v3", "task": "inference", "input": {"audio_seconds": 30},
                     "dataset": {"audio_hours": 10}, "hardware": {"gpu": "A10", "count": 1}})
    p = rec.best
    rate = p.cost.job["items_per_s"]
    assert 10 / 30 < rate < 150 * 60 / 30 / 98, rate
    assert any("decoder steps" in n for n in p.estimate.assumptions)


def test_sdxl_job_has_cost_per_image_and_no_llm_labels():
    rec = recommend({"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                     "input": {"image_size": 1024, "steps": 30}, "dataset": {"items": 10000},
                     "constraints": {"deadline_hours": 24}})
    p = rec.best
    assert p.cost.job["unit"] == "image" and p.cost.job["cost_per_image"] == pytest.approx(p.cost.total_cost / 1e4, rel=1e-4)
    assert p.cost.time_s <= 24 * HOUR_S
    service = recommend("examples/sdxl-inference.yaml")
    s = service.best
    assert s.cost.unit_cost["unit"] == "image" and s.cost.cost_per_million_output_tokens is None
    assert not any("tokens" in r["reason"] for r in service.rejected)


# ----------------------------------------------------------------------------- quick verdicts

def test_quick_says_works_but_slow_for_cpu_offload_at_low_mfu():
    q = quick("7B", "full")
    assert q.verdict == "works but slow", q.notes
    assert q.alternative is not None and q.alternative.time_key < q.folklore_plan.time_key
    assert any("MFU" in n or "offload" in n for n in q.notes)
    d = q.to_dict()
    assert d["alternative"]["instance_type"] == q.alternative.instance_type


def test_quick_says_wrong_when_the_tree_does_not_fit():
    q = quick("70B", "full")
    assert q.verdict == "wrong" and q.alternative is not None
