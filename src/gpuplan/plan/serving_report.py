"""What an LLM serving plan gives its user: the ``serving`` block of a plan (the JSON contract in
docs/recommender.md), for every platform alike (ECS replicas, Function Compute, PAI-EAS, ACK).

- TTFT p50 / p90 under the planned load: the model's TTFT (one prompt's prefill) plus that quantile of
  the queueing wait of the M/M/c model the replicas were sized with (plan/queueing.py: c = engine
  copies x the batch limit, each slot serving one copy's capacity / batch limit); on Function Compute
  scaled to zero, plus the cold start when more than 1 - q of the requests find no warm instance.
- TPOT with the batch full (``serving_tpot_s`` of the estimate): the slowest per-token time the batch
  limit allows, what a replica gives at its capacity.
- Output tokens/s per replica: one engine copy's capacity at the SLA x the output tokens per request.
- ``sla_met``: the p90 TTFT within ``serving.ttft_ms`` and the TPOT within ``serving.tpot_ms``; null
  when no target is set. A plan that misses is never shown as met.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.plan.queueing import wait_quantile_s
from gpuplan.plan.record import Plan, rnd

ENGINES_DEFAULT = "vllm"


def serving_block(p: Plan, w, rate: float | None) -> dict[str, Any]:
    """The ``serving`` block of one LLM serving plan (``w``: the resolved workload; ``rate``: the
    planned peak requests/s, None when the workload gives none)."""
    perf = p.performance
    par = p.parallel
    est_w = getattr(p.estimate, "workload", None)
    dp = int(par.get("dp") or 1)
    copies = max(1, int(p.cost.replicas or 1)) * dp
    batch = max(1, int(perf.get("serving_batch") or perf.get("max_concurrency") or 1))
    per_copy = float(perf.get("max_requests_per_s") or 0.0)
    model_ttft = perf.get("ttft_s")
    waits = _waits(copies, batch, per_copy, rate)
    cold = _cold(p)
    ttft = {q: (None if model_ttft is None or math.isinf(wq) else
                float(model_ttft) + wq + (cold[0] if cold and cold[1] > 1.0 - q else 0.0))
            for q, wq in waits.items()}
    tpot = perf.get("serving_tpot_s") if perf.get("serving_tpot_s") is not None else perf.get("tpot_s")
    s = w.serving
    ttft_target = s.ttft_ms / 1000.0 if s and s.ttft_ms else None
    tpot_target = s.tpot_ms / 1000.0 if s and s.tpot_ms else None
    out_tokens = int(w.output_tokens or 1)
    return {
        "engine": par.get("engine") or (est_w.framework if est_w is not None and est_w.framework else ENGINES_DEFAULT),
        "engine_copies": copies,
        "instances": p.instance_count,
        "tp": int(par.get("tp") or 1), "pp": int(par.get("pp") or 1), "dp": dp,
        "ep": int(par.get("ep") or 1),
        "dp_attention": bool(par.get("dp_attention")),
        "weight_format": par.get("weight_format") or _weight_format(par),
        "kv_cache_dtype": par.get("kv_cache_dtype") or (getattr(est_w, "kv_cache_dtype", None) or "auto"),
        "max_num_seqs": batch,
        "ttft_p50_s": rnd(ttft[0.5], 4),
        "ttft_p90_s": rnd(ttft[0.9], 4),
        "tpot_s": rnd(tpot, 5),
        "output_tokens_per_s_per_replica": rnd(per_copy * out_tokens, 2),
        "utilization": rnd(p.cost.utilization, 4),
        "ttft_target_s": ttft_target,
        "tpot_target_s": tpot_target,
        "sla_met": sla_met(ttft[0.9], tpot, ttft_target, tpot_target),
    }


def sla_met(ttft_p90: float | None, tpot: float | None, ttft_target: float | None,
            tpot_target: float | None) -> bool | None:
    """True only when every target that is set is met; None when none is set; an unknown figure misses."""
    if ttft_target is None and tpot_target is None:
        return None
    ok = True
    if ttft_target is not None:
        ok = ok and ttft_p90 is not None and ttft_p90 <= ttft_target * (1 + 1e-9)
    if tpot_target is not None:
        ok = ok and tpot is not None and float(tpot) <= tpot_target * (1 + 1e-9)
    return ok


def _waits(copies: int, batch: int, per_copy: float, rate: float | None) -> dict[float, float]:
    """Queueing-wait quantiles (s) under the planned load; 0 without a rate, inf when overloaded."""
    if not rate or rate <= 0:
        return {0.5: 0.0, 0.9: 0.0}
    if per_copy <= 0:
        return {0.5: math.inf, 0.9: math.inf}
    mu = per_copy / batch
    return {q: wait_quantile_s(copies * batch, rate, mu, q) for q in (0.5, 0.9)}


def _cold(p: Plan) -> tuple[float, float] | None:
    """(cold-start seconds, share of requests that meet one) of a Function Compute plan scaled to zero."""
    if p.platform != "function-compute":
        return None
    cs = p.details.get("cold_start") or {}
    fn = p.details.get("function") or {}
    if fn.get("min_instances"):
        return None
    return float(cs.get("seconds") or 0.0), float(cs.get("probability_scale_to_zero") or 0.0)


def _weight_format(par) -> str:
    q = par.get("quantization") or "none"
    return str(par.get("precision") or "bf16") if q == "none" else str(q)
