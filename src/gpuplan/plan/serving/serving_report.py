"""What an LLM serving plan gives its user: the ``serving`` block of a plan (the JSON contract in
docs/recommender.md), for every platform alike (ECS replicas, Function Compute, PAI-EAS, ACK).

Every figure is read off the replica model the plan was sized with (estimate/serving/replica.py), at the planned load:
the peak request rate spread over the engine copies (replicas x data-parallel copies), or the stated
concurrency spread over them, or a lone request when neither is given.

- TTFT p50 / p90: one request's first token under that load: the wait for a batch slot and in the prefill
  queue (their quantiles), then its own prefill; on Function Compute scaled to zero, plus the cold start when
  more than 1 - q of the requests find no warm instance. p50 and p90 differ once the queues form.
- TPOT: the decode step with the running batch of that load, stretched by the prefill work sharing the GPUs.
- ``max_num_seqs``: the batch limit the replicas were sized with (what serve.sh / serve-sglang.sh launch).
- ``replicas_at_peak``: the replicas that serve the peak (the autoscaler's maximum); with prefill/decode
  disaggregation, ``disaggregation`` gives the two pools.
- ``sla_met``: the p90 TTFT within ``serving.ttft_ms`` and the TPOT within ``serving.tpot_ms``; null when no
  target is set. A plan that misses is never shown as met (and the recommender drops it).
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.plan.record import Plan, rnd

ENGINES_DEFAULT = "vllm"


def planned_load(p: Plan, rate: float | None, users: int = 0) -> dict[str, float | None]:
    """TTFT p50 / p90, TPOT and the mean running batch per engine copy at the plan's load (see the module
    docstring); None figures when the model is not known or the load cannot be served."""
    perf = p.performance
    sizing = dict(p.cost.sizing or {})
    if sizing.get("mode") == "prefill-decode":
        return {"ttft_p50": sizing.get("ttft_p50_s"), "ttft_p90": sizing.get("ttft_p90_s"),
                "tpot": sizing.get("tpot_s"), "running": None}
    model = getattr(p.estimate, "serving_model", None)
    copies = max(1, int(p.cost.replicas or 1)) * max(1, int(p.parallel.get("dp") or 1))
    limit = int(sizing.get("max_num_seqs") or perf.get("serving_batch") or perf.get("max_concurrency") or 1)
    if model is None:
        tpot = perf.get("serving_tpot_s") if perf.get("serving_tpot_s") is not None else perf.get("tpot_s")
        return {"ttft_p50": perf.get("ttft_s"), "ttft_p90": perf.get("ttft_p90_s") or perf.get("ttft_s"),
                "tpot": tpot, "running": None}
    if rate:
        point = model.at_rate(rate / copies, limit)
        if point is None:
            return {"ttft_p50": math.inf, "ttft_p90": math.inf, "tpot": math.inf, "running": None}
        extra = 0.0
    elif users > 1:
        point, extra = model.closed_loop(math.ceil(users / copies))
    else:
        point, extra = model.point(1e-6, limit), 0.0
    return {"ttft_p50": point.ttft_p50_s + extra, "ttft_p90": point.ttft_p90_s + extra, "tpot": point.tpot_s,
            "running": point.running}


def serving_block(p: Plan, w, rate: float | None, users: int = 0) -> dict[str, Any]:
    """The ``serving`` block of one LLM serving plan (``w``: the resolved workload; ``rate``: the planned peak
    requests/s, None when the workload gives none; ``users``: the concurrency asked for without a rate)."""
    perf = p.performance
    par = p.parallel
    est_w = getattr(p.estimate, "workload", None)
    dp = int(par.get("dp") or 1)
    copies = max(1, int(p.cost.replicas or 1)) * dp
    sizing = dict(p.cost.sizing or {})
    batch = int(sizing.get("max_num_seqs") or perf.get("serving_batch") or perf.get("max_concurrency") or 1)
    per_copy = float(perf.get("max_requests_per_s") or 0.0)
    load = planned_load(p, rate, users)
    cold = _cold(p)
    ttft = {}
    for q, key in ((0.5, "ttft_p50"), (0.9, "ttft_p90")):
        v = load[key]
        ttft[q] = None if v is None or math.isinf(v) else float(v) + (cold[0] if cold and cold[1] > 1.0 - q else 0.0)
    tpot = load["tpot"]
    tpot = None if tpot is None or math.isinf(tpot) else tpot
    s = w.serving
    ttft_target = s.ttft_ms / 1000.0 if s and s.ttft_ms else None
    tpot_target = s.tpot_ms / 1000.0 if s and s.tpot_ms else None
    out_tokens = int(w.output_tokens or 1)
    pd = {k: v for k, v in sizing.items() if k not in ("mode", "max_num_seqs", "binding", "replicas_at_peak",
                                                      "users")} if sizing.get("mode") == "prefill-decode" else None
    autoscaling = p.details.get("autoscaling") or {}
    peak = autoscaling.get("max_replicas") or sizing.get("replicas_at_peak") or p.cost.replicas or 1
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
        "replicas_at_peak": int(peak),
        "disaggregation": pd,
        "running_sequences_per_copy": rnd(load["running"], 2),
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
        ok = ok and ttft_p90 is not None and ttft_p90 <= ttft_target * (1 + 1e-6)
    if tpot_target is not None:
        ok = ok and tpot is not None and float(tpot) <= tpot_target * (1 + 1e-6)
    return ok


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
