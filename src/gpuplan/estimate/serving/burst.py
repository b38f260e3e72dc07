"""A finite batch of requests all queued at once: the time until the last one has finished.

An offline job of N prompts (and ``vllm bench serve`` / SGLang ``bench_serving`` at request rate inf, the
usual published throughput) does not run at the replica's steady rate to the end
(estimate/serving/replica.py): its queue empties, and the last sequences finish one by one while each step
still reads every weight. With ``B`` batch slots (max_num_seqs, no more than the KV cache holds):

- **Queue phase** (N > B): B sequences decode while requests wait; the N - B waiting requests pass through at
  the steady rate with B running, ``rate(B)`` (each: its prompt's compute plus its share of the decode steps).
- **Drain**: the last ``K = min(N, B)`` sequences (their prompts read first) finish.
  - Every output ``output_tokens`` long (benchmarks with fixed lengths, ``ignore_eos``): they finish
    together after ``output_tokens`` steps of a batch of K, as the steady model has it.
  - Outputs of varying length (``max_output_tokens`` above ``output_tokens``): the lengths are taken as
    exponential with mean ``m = output_tokens`` (the maximum-entropy law for a known mean), cut at
    ``max_output_tokens``. The law is memoryless, so the K sequences still running when the queue empties
    have the same law: at step ``s`` of the drain ``K·e^(-s/m)`` of them still run (at least the last one),
    at context ``prompt + s``, until the longest is done, ``m·H_K`` steps on average (``H_K`` the K-th
    harmonic number), no more than the cap. The integral is taken at DRAIN_POINTS midpoints: bounded work.

The job's time is the K prompts, the queue phase and the drain; with N much larger than B the drain is a
small share and the time tends to N / rate(B). docs/formulas.md "A finite batch of requests".
"""

from __future__ import annotations

import math

from gpuplan.estimate.serving.decode import decode_step
from gpuplan.estimate.serving.replica import ReplicaModel

EULER_GAMMA = 0.5772156649015329
DRAIN_POINTS = 48

__all__ = ["DRAIN_POINTS", "burst_s", "drain_steps"]


def drain_steps(k: float, mean_tokens: float, max_tokens: float | None) -> float:
    """Decode steps until the last of ``k`` running sequences finishes: the mean length when every output is
    as long (``max_tokens`` unset or not above the mean), else the expected longest of k exponential lengths
    (mean ``mean_tokens``), no more than ``max_tokens``."""
    m = max(1.0, float(mean_tokens))
    if not max_tokens or max_tokens <= m:
        return m
    k = max(1.0, float(k))
    harmonic = math.log(k) + EULER_GAMMA + 1.0 / (2.0 * k)
    return max(m, min(float(max_tokens), m * harmonic))


def _drain_s(model: ReplicaModel, k: float, max_tokens: float | None) -> float:
    m = max(1.0, float(model.output_tokens))
    steps = drain_steps(k, m, max_tokens)
    if steps <= m:                          # fixed lengths: k sequences together for m steps
        return m * model.step_s(k)
    width = steps / DRAIN_POINTS
    total = 0.0
    for i in range(DRAIN_POINTS):
        s = (i + 0.5) * width
        running = max(1.0, k * math.exp(-s / m))
        total += decode_step(model.consts, running, model.prompt_tokens + s)
    return total * width / model.speed


def burst_s(model: ReplicaModel, requests: float, batch_limit: int, max_output_tokens: int | None = None) -> float:
    """Seconds one replica takes for ``requests`` requests queued at once with ``batch_limit`` slots, until the last
    has its final token (0 when there is nothing to do or no slot)."""
    n = float(requests)
    b = float(min(batch_limit, model.slots()) if model.slots() > 0 else batch_limit)
    if n <= 0 or b < 1 or model.output_tokens <= 0:
        return 0.0
    k = min(n, b)
    rate = model.rate(b)
    queue_s = (n - b) / rate if n > b and rate > 0 else 0.0
    return k * model.prefill_marginal_s / model.speed + queue_s + _drain_s(model, k, max_output_tokens)
