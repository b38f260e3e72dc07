"""bench/plan_quality.py: its references are the arithmetic docs/plan-quality.md writes out, on the catalog's
facts (prices, GPU datasheets, model shapes); no estimator and no recommendation runs here."""

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pq():
    spec = importlib.util.spec_from_file_location("bench_plan_quality", ROOT / "bench" / "plan_quality.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_plan_quality"] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


def test_twelve_workloads_of_every_kind_on_several_gpus_and_regions(pq):
    assert len(pq.WORKLOADS) >= 12
    tasks = {wd["task"] for wd, _ref in pq.WORKLOADS.values()}
    assert {"lora", "qlora", "full", "pretrain", "inference"} <= tasks
    jobs = [wd for wd, _ref in pq.WORKLOADS.values() if wd["task"] == "inference" and "dataset" in wd]
    services = [wd for wd, _ref in pq.WORKLOADS.values() if "serving" in wd]
    assert len(jobs) >= 3 and len(services) >= 4
    regions = {r for wd, _ref in pq.WORKLOADS.values() for r in wd["constraints"]["regions"]}
    assert len(regions) >= 4


def test_reference_prices_are_the_catalogs(pq):
    rows = list(csv.DictReader((ROOT / "src/gpuplan/data/clouds/alibaba/prices.csv").open(encoding="utf-8")))
    for (inst, region), (price, currency) in pq.PRICES.items():
        got = [(float(r["price"]), r["currency"]) for r in rows
               if r["instance_type"] == inst and r["region"] == region and r["billing"] == "payg"]
        assert (price, currency) in got, (inst, region, got)


def test_gpu_facts_are_the_datasheets(pq):
    from gpuplan.catalog.hardware.gpus import load_gpus

    gpus = load_gpus()
    for key, gid in {"A10": "A10-24GB", "A100-40": "A100-SXM4-40GB", "A100-80": "A100-SXM4-80GB",
                     "L20": "L20-48GB", "H20": "H20-96GB"}.items():
        peak, bw = pq.GPU[key]
        assert peak == pytest.approx(gpus[gid].peak_tflops("bf16") * 1e12, rel=1e-3)
        assert bw == pytest.approx(gpus[gid].mem_bandwidth_gb_s * 1e9, rel=1e-3)


def test_model_shapes_are_the_catalogs(pq):
    from gpuplan.catalog.models import resolve_model

    ids = {"Qwen2.5-7B": "Qwen/Qwen2.5-7B-Instruct", "Llama-3.1-70B": "meta-llama/Llama-3.1-70B",
           "Llama-3.2-1B": "meta-llama/Llama-3.2-1B-Instruct", "Qwen2.5-32B": "Qwen/Qwen2.5-32B-Instruct",
           "Llama-3.1-8B": "meta-llama/Llama-3.1-8B", "bge-m3": "BAAI/bge-m3"}
    for key, mid in ids.items():
        m = resolve_model(mid)
        n, layers, h, v, _tied = pq.MODEL[key]
        assert (layers, h, v) == (m.num_layers, m.hidden_size, m.vocab_size)
        assert n == pytest.approx(m.params_total, rel=1e-3)


def test_the_70b_reference_is_6nd_on_32_a100s(pq):
    """6ND: 6 x (70.55B - 1.05B embedding) x 1e9 tokens + attention = 4.33e20 FLOPs; at 45 % of 32 x 312 TFLOP/s
    that is 26.8 h, plus the per-instance fixed time (boot 300 s + the driver's auto-install 1,200 s + the 20 GiB node
    image at 100 Mbit/s = 1,718 s + 141 GB of weights, which from the hub at 12.5 MB/s would idle each of the four nodes
    3.1 h, staged in OSS and copied at 100 MB/s = 1,411 s + idle tail 300 s = 1.37 h), on four 8-GPU nodes at CNY
    277.93/h."""
    ref = pq.ref_full_70b()
    assert ref.hours == pytest.approx(4.33e20 / (32 * 312e12 * 0.45) / 3600 + 1.37, rel=0.01)
    assert ref.cost_cny == pytest.approx(ref.hours * 4 * 277.93, rel=1e-9)


def test_the_fixed_time_is_the_plans(pq):
    """The references pay the plans' per-instance fixed time: an ECS node pulls the 20 GiB node image over its
    100 Mbit/s public bandwidth (28.6 min, plan/money/cost.py image_pull), not 10 GiB at 100 MB/s (1.8 min)."""
    from gpuplan.plan.money.fixed_costs import image_pull, load_fixed_costs

    for region, training in (("cn-shanghai", True), ("cn-beijing", False), ("ap-southeast-1", True)):
        assert pq.image_pull_s() == pytest.approx(image_pull(load_fixed_costs(), region, training=training).seconds,
                                                  rel=1e-9), region
    assert pq.image_pull_s() == pytest.approx(20 * 2**30 / 12.5e6, rel=1e-9)


def test_the_node_start_is_the_bundles(pq):
    """The references' driver install and weight rates are the ones an ECS node of the bundle has (data/ops.yaml,
    plan/money/transfer.py node_start): 20 min of driver install, 12.5 MB/s from the hub, 100 MB/s from OSS; a
    7B's 15 GB come from the hub on one node (20 min), a 32B's 65 GB are staged (87 min from the hub)."""
    from gpuplan.plan.advice.ops import load_ops
    from gpuplan.plan.money.transfer import node_start

    ops = load_ops()
    hub, oss = node_start(ops, "ecs"), node_start(ops, "ecs", staged_in_oss=True)
    assert pq.node_facts() == (hub.driver_install_s, hub.download_bytes_s, oss.download_bytes_s)
    assert pq.node_facts() == (1200.0, 12.5e6, 100e6)
    assert pq.weights_s(15.2e9, 1) == (pytest.approx(15.2e9 / 12.5e6), "from the hub")
    assert pq.weights_s(65.5e9, 1) == (pytest.approx(65.5e9 / 100e6), "staged in OSS")


def test_every_reference_writes_its_steps(pq):
    for name, (_wd, ref_fn) in pq.WORKLOADS.items():
        ref = ref_fn()
        assert ref.cost_cny > 0 and len(ref.steps) >= 3, name
        assert (ref.hours is None) == ("serving" in _wd), name


def test_md1_wait_quantile_matches_a_simulated_queue(pq):
    """The 72B reference's p90 TTFT rests on the M/D/1 waiting time: no wait below P(W = 0) = 1 - rho, and the
    quantiles of Lindley's recursion over 200,000 Poisson arrivals (fixed service, seeded) within 3 %."""
    import random

    rate, service = 0.54, 1.222              # 37 TP2 replicas at 20 req/s: the prefills 66 % busy
    assert pq._md1_wait_quantile_s(rate, service, 1 - rate * service - 0.01) == 0.0
    rng, wait, waits = random.Random(7), 0.0, []
    for _ in range(200_000):
        waits.append(wait)
        wait = max(0.0, wait + service - rng.expovariate(rate))
    waits.sort()
    for q in (0.5, 0.9):
        assert pq._md1_wait_quantile_s(rate, service, q) == pytest.approx(waits[int(q * len(waits))], rel=0.03)
    assert pq._md1_wait_quantile_s(1.0, service) == float("inf")


def test_72b_reference_meets_its_ttft_at_the_load_it_plans(pq):
    """Every replica of the 72B reference serves at most its TTFT-bound capacity x 0.87; the old 37 TP2 replicas
    would have queued their prompts past the 2 s p90."""
    ref = pq.ref_serve_72b()
    assert ref.cost_cny == pytest.approx(18 * 133.04 * 730)
    s2 = 2 * 72.706e9 * 1000 / (2 * 119e12 * 0.5)
    assert s2 + pq._md1_wait_quantile_s(20 / 37, s2) > 2.0
