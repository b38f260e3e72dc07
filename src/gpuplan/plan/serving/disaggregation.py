"""Prefill/decode disaggregation: separate prefill and decode pools of the same engine copy, where it pays.

A colocated replica shares its GPUs between prompts and decode steps: the prefill work stretches every
decode step (the TPOT under load) and the decode steps slow the prompts. Split into pools (SGLang
``--disaggregation-mode prefill|decode`` behind ``sglang_router --pd-disaggregation``, the KV cache sent from
prefill to decode over RDMA):

- **Decode pool** (``y`` copies): every step is a pure decode step of ``n`` sequences, rate(n) = n / (O ·
  step(n)), TPOT = step(n); its capacity at the SLA is the rate at the batch limit (the largest batch whose
  step meets the TPOT target, no more than the KV cache holds).
- **Prefill pool** (``x`` copies): prompts are served back to back at their compute cost ``P`` (batched), an
  M/G/1 queue per copy; TTFT = the queue's wait + the prompt alone + sending its KV cache to a decode copy
  (its bytes over the node's network) + one decode step.
- Both pools sized to the utilisation target (and the prefill pool to the p90 TTFT); chosen only when
  x + y copies cost at least ``SWITCH_GAIN`` less than the colocated replicas at the same SLA, with at least
  two colocated replicas to split ("at scale"), and on SGLang, whose PD mode the bundle launches.

Every figure is read from the same replica model as the colocated plan (estimate/serving/replica.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.estimate.params import table
from gpuplan.estimate.serving.queue_math import mg1_wait_quantile_s
from gpuplan.plan.serving.queueing import DEFAULT_TARGET_UTILIZATION

PD_ENGINES = frozenset({"sglang"})        # the bundle launches SGLang's PD mode (serve-sglang.sh, router-pd.sh)
SWITCH_GAIN = 0.10                         # as plan/serving/serving_config.py: about the estimator's speed error
MIN_COLOCATED_REPLICAS = 2


@dataclass(frozen=True)
class PdSizing:
    prefill_replicas: int
    decode_replicas: int
    decode_batch_limit: int
    ttft_p50_s: float
    ttft_p90_s: float
    tpot_s: float
    kv_transfer_s: float
    decode_utilization: float
    prefill_utilization: float

    @property
    def replicas(self) -> int:
        return self.prefill_replicas + self.decode_replicas

    def to_dict(self) -> dict:
        return {"mode": "prefill-decode", "prefill_replicas": self.prefill_replicas,
                "decode_replicas": self.decode_replicas, "decode_max_num_seqs": self.decode_batch_limit,
                "kv_transfer_s": round(self.kv_transfer_s, 6), "ttft_p50_s": round(self.ttft_p50_s, 6),
                "ttft_p90_s": round(self.ttft_p90_s, 6), "tpot_s": round(self.tpot_s, 6),
                "prefill_utilization": round(self.prefill_utilization, 4),
                "decode_utilization": round(self.decode_utilization, 4),
                "transfer_backend": "mooncake", "router": "sglang_router --pd-disaggregation"}


def kv_transfer_s(est, dp: int) -> float:
    """Seconds to send one prompt's KV cache from a prefill copy to a decode copy: its bytes (the prompt's share
    of the sequence's cache, every GPU's shard) over the node's network (eRDMA / VPC bandwidth)."""
    mem = est.memory
    per_seq = float(mem.kv_bytes_per_sequence or 0.0)
    w = est.workload
    tokens = (w.prompt_tokens or 0) + (w.output_tokens or 0)
    share = (w.prompt_tokens or 0) / tokens if tokens else 1.0
    system = est.system
    gpus = system.total_gpus / max(1, dp)
    bytes_ = per_seq * share * gpus
    gbit = system.inter_node_gbit_s
    if not gbit:
        return math.inf
    comm = table("communication")
    bw = gbit / 8 * 1e9 * float(comm["rdma_efficiency"] if system.rdma else comm["tcp_efficiency"]) * system.nodes
    return bytes_ / bw


def pd_sizing(est, rate: float, dp: int, ttft_target_s: float | None, tpot_target_s: float | None,
              target_utilization: float | None = None) -> PdSizing | None:
    """The smallest prefill and decode pools of this engine copy that serve ``rate`` requests/s within the
    targets (None: none does)."""
    model = est.serving_model
    if model is None or not model.continuous or rate <= 0:
        return None
    u = target_utilization or DEFAULT_TARGET_UTILIZATION
    limit = model.batch_limit(tpot_target_s)
    if limit <= 0:
        return None
    out = max(1, model.output_tokens)
    dec_rate = limit / (out * model.step_s(limit))            # one decode copy at its batch limit
    y = max(1, math.ceil(rate / (dec_rate * u * dp) - 1e-9))
    # the decode copies run n sequences at the planned load: n / (O step(n)) = rate / (y dp)
    per_dec = rate / (y * dp)
    lo, hi = 1e-6, float(limit)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if mid / (out * model.step_s(mid)) < per_dec:
            lo = mid
        else:
            hi = mid
    tpot = model.step_s(hi)
    if tpot_target_s is not None and tpot > tpot_target_s * (1 + 1e-9):
        return None
    service = model.prefill_marginal_s / model.speed
    alone = model.prefill_alone_s / model.speed
    transfer = kv_transfer_s(est, dp)
    first = alone + transfer + model.step_s(hi)
    x = max(1, math.ceil(rate * service / (u * dp) - 1e-9))
    for _ in range(10_000):
        rho = rate / (x * dp) * service
        p90 = first + mg1_wait_quantile_s(rho, service, 0.9)
        if rho < 1.0 and (ttft_target_s is None or p90 <= ttft_target_s * (1 + 1e-9)):
            break
        x += 1
    else:
        return None
    rho = rate / (x * dp) * service
    return PdSizing(x, y, limit, first + mg1_wait_quantile_s(rho, service, 0.5),
                    first + mg1_wait_quantile_s(rho, service, 0.9), tpot, transfer,
                    per_dec / dec_rate, rho)


def better_than_colocated(pd: PdSizing | None, colocated_replicas: int, engine: str) -> bool:
    """Whether the split pools are the plan: SGLang, at least two colocated replicas to split, and at least
    SWITCH_GAIN fewer engine copies for the same SLA."""
    return (pd is not None and engine in PD_ENGINES and colocated_replicas >= MIN_COLOCATED_REPLICAS
            and pd.replicas <= colocated_replicas * (1.0 - SWITCH_GAIN))
