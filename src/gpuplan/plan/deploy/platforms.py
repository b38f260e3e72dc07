"""Serving platforms beside raw ECS: Function Compute GPU (serverless), PAI-EAS and ACK GPU node pools.

The question: for the user's request pattern, does an always-on replica or per-second serverless
billing cost less, and what do cold starts do to the time to first token?

This module orchestrates: the day's traffic and the replica arithmetic are in plan/serving/traffic.py, the
platforms.yaml records in plan/deploy/platform_data.py, Function Compute (serverless) plans in
plan/deploy/function_compute.py, and ACK / PAI-EAS plans on the ECS instance types in plan/deploy/managed.py.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from gpuplan.plan.deploy.function_compute import EstimateForGpu, function_compute_plans
from gpuplan.plan.deploy.managed import ack_plans, pai_eas_plans
from gpuplan.plan.record import Plan, rnd
from gpuplan.plan.serving.traffic import priced_unit, traffic_profile
from gpuplan.units import GIB

PLATFORMS = ("function-compute", "pai-eas", "ack")


def gpu_estimator(workload, model=None) -> EstimateForGpu:
    """``estimate_for_gpu(gpu_id, memory_gib, fraction)``: the workload on one GPU, or a slice of one
    (``fraction`` of its compute and bandwidth, ``memory_gib`` of memory). Cached per argument."""
    from gpuplan.catalog.hardware.gpus import get_gpu
    from gpuplan.catalog.models import resolve_model
    from gpuplan.errors import GpuplanError
    from gpuplan.estimate.core import estimate_resolved
    from gpuplan.estimate.system import Layout, System
    w = _resolved(workload)
    m = model or resolve_model(w.model)

    @functools.cache
    def run(gpu_id: str, memory_gib: float, fraction: float):
        try:
            gpu = get_gpu(gpu_id)
        except GpuplanError:
            return None
        cap = memory_gib * GIB if fraction < 1 else None
        system = System(gpu=gpu, gpus_per_node=1, nodes=1, intra_link="none", gpu_fraction=fraction,
                        capacity_override_bytes=cap)
        layout = Layout(tp=1, pp=1, dp=1, zero=0, fsdp="none", offload="none", checkpointing="none",
                        micro_batch=w.batch_size or 1, grad_accum=1, microbatches=1)
        try:
            return estimate_resolved(w, m, system, layout, with_suggestions=False)
        except GpuplanError:
            return None

    return run


def _resolved(workload):
    """A Workload with defaults filled, from a Workload, a mapping or a file path."""
    from gpuplan.workload import Workload
    from gpuplan.workload_defaults import resolve_defaults
    from gpuplan.workload_loading import load_workload

    w = workload if isinstance(workload, Workload) else load_workload(workload)
    return resolve_defaults(w)[0]


def platform_plans(workload, estimate_for_gpu: EstimateForGpu | None = None, *, ecs_plans: Iterable[Plan] = (),
                   currency: str | None = None, region: str | None = None, fx=None,
                   platforms: Iterable[str] = PLATFORMS, headroom: float = 0.02, with_ecs: bool = False) -> list[Plan]:
    """Serving plans on Function Compute, PAI-EAS and ACK for an inference workload with a request rate.
    ``with_ecs``: the ECS plans are shown beside these (an ACK pool that never scales is then left out).

    ``estimate_for_gpu(gpu_id, memory_gib, fraction)`` estimates the workload on one GPU or slice
    (default: :func:`gpu_estimator`). ``ecs_plans``: the recommender's ECS plans (ACK and EAS reuse
    their instance types, layouts, estimates, per-replica rates and prices). Returns plan records
    (``platform`` set; ``details`` holds ``traffic``, ``cold_start``, ``serverless``/``autoscaling``) and the
    ranking keys ``cost_key`` (monthly cost, None = unknown) and ``time_key`` (request latency).
    Training workloads and workloads without a request rate get no platform plans.
    """
    w = _resolved(workload)
    if (w.task or "inference") != "inference":
        return []
    traffic = traffic_profile(w.serving)
    if traffic is None or traffic.daily_requests <= 0:
        return []
    if w.serving.target_utilization:
        from dataclasses import replace as _replace

        traffic = _replace(traffic, target_utilization=w.serving.target_utilization)
    if fx is None:
        from gpuplan.plan.money.cost import load_fx

        fx = load_fx()
    cons = w.constraints
    currency = currency or (cons.currency if cons else "CNY")
    if region is None:
        region = (cons.regions[0].strip().lower() if cons and cons.regions else "cn-shanghai")
    wanted = set(platforms)
    ecs = list(ecs_plans)
    priced = _priced(w)
    out: list[Plan] = []
    if "function-compute" in wanted:
        est = estimate_for_gpu or gpu_estimator(w)
        out += function_compute_plans(w, est, traffic, region=region, currency=currency, fx=fx, headroom=headroom,
                                      priced=priced)
    if "ack" in wanted:
        out += ack_plans(ecs, traffic, currency=currency, fx=fx, priced=priced, scaling_only=with_ecs)
    if "pai-eas" in wanted:
        out += pai_eas_plans(ecs, traffic, currency=currency, priced=priced)
    return out


def _priced(w) -> tuple[str, int]:
    """What the workload's service is priced per and the tokens per request: the ECS plans' rule
    (serving.traffic.priced_unit), so an image service reads "per image" on every platform."""
    from gpuplan.catalog.models import resolve_model
    from gpuplan.plan.search.candidates import is_llm

    model = resolve_model(w.model)
    priced = priced_unit(model, bool(is_llm(model)), w.output_tokens)
    return priced, int((w.prompt_tokens if priced == "input" else w.output_tokens) or 1)


def compare(fc_plan: Plan, ecs_monthly: float) -> dict:
    """Serverless versus an always-on ECS fleet: both monthly costs, the winner and the ratio."""
    fc = rnd(fc_plan.cost.monthly_cost)
    if fc is None:
        return {"function_compute": None, "always_on": ecs_monthly, "winner": "unknown", "ratio": None}
    return {"function_compute": fc, "always_on": round(ecs_monthly, 2),
            "winner": "function-compute" if fc < ecs_monthly else "always-on", "ratio": round(fc / ecs_monthly, 4)}
