"""One serving replica under load: the latency model that both sizes a deployment and reports its figures.

A continuous-batching engine (vLLM, SGLang, TensorRT-LLM, LMDeploy, TGI) keeps ``n`` sequences decoding and
feeds new prompts into its steps (chunked prefill). With ``n`` sequences running on average:

- **Throughput.** Each request costs its prompt's compute ``P`` (prefill riding on the decode steps) plus its
  share of ``O`` decode steps of the batch: rate(n) = n / (O · step(n) + n · P) requests/s (Little's law
  over the decode phase, the prefill share taken from the replica's time).
- **TPOT.** The decode step stretched by the prefill work sharing the GPU: step(n) / (1 - rate(n) · P).
- **TTFT of one request** (never a batch's prefills summed): the wait for a batch slot (M/M/c over the
  ``max_num_seqs`` slots, each held for a request's whole life), the wait in the prefill queue (M/G/1: the
  prompts are served through the engine's per-step token budget, ``p / (budget - n)`` steps each plus their
  compute, deterministic service), then its own prefill: at least the prompt alone, and no less than the
  steps its chunks ride on. p50 and p90 come from the queue's waiting-time distribution, so they differ under
  load (plan/queueing arithmetic in estimate/serving/queue_math.py).
- **Batch limit** (``max_num_seqs``): the largest running batch whose decode step meets the TPOT target, no
  more than the KV cache holds; **capacity** at the SLA: the largest rate at which the TPOT under load and
  the p90 TTFT still meet their targets with that limit.

Static batching (eager ``generate``, compiled PyTorch) stalls the batch for each prompt: P is then the whole
prefill of one prompt and each step takes one prompt at most.

Every figure the plan shows is a method of this one object (docs/formulas.md, "Serving under load").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuplan.estimate.serving.decode import DecodeConsts, decode_step
from gpuplan.estimate.serving.queue_math import erlang_c, mg1_wait_mean_s, mg1_wait_quantile_s

QUANTILES = (0.5, 0.9)


@dataclass(frozen=True)
class LoadPoint:
    """The replica at ``running`` sequences on average (one engine copy)."""

    running: float
    rate: float              # requests/s it serves
    tpot_s: float            # mean time per output token under this load
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_mean_s: float
    prefill_utilization: float   # share of the replica's time spent on prompts
    queue_s: float = 0.0     # mean wait before a request's prefill starts

    @property
    def ok(self) -> bool:
        return math.isfinite(self.ttft_p90_s) and math.isfinite(self.tpot_s)

    def latency_s(self, output_tokens: int) -> float:
        return self.ttft_mean_s + max(0, output_tokens - 1) * self.tpot_s


@dataclass(frozen=True)
class ReplicaModel:
    consts: DecodeConsts
    ctx_tokens: float            # average context of a decode step (prompt + half the output)
    prompt_tokens: int
    output_tokens: int
    prefill_alone_s: float       # one prompt alone on the replica (the TTFT floor)
    prefill_marginal_s: float    # one prompt's compute inside running steps
    chunk_tokens: int            # prompt tokens one step takes (engine's token budget); static: the prompt
    kv_sequences: int            # sequences the KV cache holds at full context
    batch_cap: int | None = None     # the engine's own hard limit (TensorRT-LLM max_batch_size)
    continuous: bool = True
    speed: float = 1.0           # calibration factor (gpuplan calibrate): times / speed

    # ------------------------------------------------------------------ the pieces
    def step_s(self, n: float) -> float:
        """One decode step with ``n`` sequences running (no prefill in it)."""
        return decode_step(self.consts, max(1.0, n), self.ctx_tokens) / self.speed

    def _p(self) -> float:
        return self.prefill_marginal_s / self.speed

    def rate(self, n: float, step: float | None = None) -> float:
        """Requests/s served with ``n`` sequences running on average."""
        n = max(1e-9, n)
        step = self.step_s(n) if step is None else step
        return n / (self.output_tokens * step + n * self._p())

    def prefill_service_s(self, n: float, step: float | None = None) -> float:
        """Time the prefill queue is busy with one prompt: its compute plus the steps its chunks ride on."""
        budget = max(1.0, self.chunk_tokens - (n if self.continuous else 0.0))
        step = self.step_s(n) if step is None else step
        return self._p() + self.prompt_tokens / budget * step

    def first_s(self, n: float, step: float | None = None) -> float:
        """From the start of a request's prefill to its first token: half a step to join, then no less than
        the prompt alone and no less than the steps its chunks take."""
        budget = max(1.0, self.chunk_tokens - (n if self.continuous else 0.0))
        chunks = math.ceil(self.prompt_tokens / budget) if self.prompt_tokens else 1
        step = self.step_s(n) if step is None else step
        return 0.5 * step + max(self.prefill_alone_s / self.speed, chunks * step + self._p())

    def slots(self) -> int:
        """Sequences the replica can run at once: the KV cache and the engine's own limit."""
        cap = self.kv_sequences
        if self.batch_cap:
            cap = min(cap, int(self.batch_cap))
        return max(0, cap)

    # ------------------------------------------------------------------ one load point
    def point(self, n: float, batch_limit: int | None = None, others: float = 1.0) -> LoadPoint:
        """Figures with ``n`` sequences running on average and ``batch_limit`` slots (max_num_seqs). ``others``:
        the share of the arrivals that are other requests' (1 for an open stream of requests; (N - 1) / N
        when N users each wait for their answer before asking again: a lone user never waits for itself)."""
        step = self.step_s(n)
        rate = self.rate(n, step)
        p = self._p()
        util = rate * p * others
        if util >= 1.0:
            return LoadPoint(n, rate, math.inf, math.inf, math.inf, math.inf, util, math.inf)
        tpot = step / (1.0 - util)
        service = self.prefill_service_s(n, step)
        rho = rate * service * others
        first = self.first_s(n, step)
        lane = {q: mg1_wait_quantile_s(rho, service, q) for q in QUANTILES}
        lane_mean = mg1_wait_mean_s(rho, service)
        slot_mean, slot = self._slot_waits(rate * others, first + lane_mean + max(0, self.output_tokens - 1) * tpot,
                                           batch_limit)
        mean_q = lane_mean + slot_mean
        return LoadPoint(n, rate, tpot, first + lane[0.5] + slot[0.5], first + lane[0.9] + slot[0.9],
                         first + mean_q, util, mean_q)

    @staticmethod
    def _slot_waits(rate: float, hold_s: float, limit: int | None) -> tuple[float, dict[float, float]]:
        """Wait for one of ``limit`` batch slots (M/M/c, each slot held ``hold_s``): mean and quantiles."""
        if not limit or rate <= 0 or hold_s <= 0:
            return 0.0, {q: 0.0 for q in QUANTILES}
        offered = rate * hold_s
        if offered >= limit:
            return math.inf, {q: math.inf for q in QUANTILES}
        if offered < 0.5 * limit and limit >= 16:
            return 0.0, {q: 0.0 for q in QUANTILES}       # P(wait) below 1e-3 here: no need to evaluate
        mu = 1.0 / hold_s
        c = erlang_c(int(limit), offered)
        slack = limit * mu - rate
        waits = {q: (0.0 if c <= 1.0 - q else math.log(c / (1.0 - q)) / slack) for q in QUANTILES}
        return c / slack, waits

    # ------------------------------------------------------------------ searches
    def batch_limit(self, tpot_target_s: float | None) -> int:
        """max_num_seqs: the most sequences the KV cache holds (and the engine allows), fewer when a decode step
        of that many would miss the TPOT target (0: not even one sequence fits)."""
        cap = self.slots()
        if cap <= 0 or tpot_target_s is None or self.step_s(cap) <= tpot_target_s:
            return cap
        if self.step_s(1) > tpot_target_s:
            return 1
        lo, hi = 1, cap      # step_s(lo) meets the target, step_s(hi) does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.step_s(mid) <= tpot_target_s:
                lo = mid
            else:
                hi = mid
        return lo

    def at_rate(self, rate: float, batch_limit: int) -> LoadPoint | None:
        """The replica serving ``rate`` requests/s with ``batch_limit`` slots (None: beyond what it sustains)."""
        if rate <= 0:
            return self.point(1e-9, batch_limit)
        top = float(max(1, batch_limit))
        if self.rate(top) < rate:
            return None
        hi, lo = top, top / 2.0            # bracket by halving, then bisect to 2^-20 of the bracket
        while lo > 1e-9 and self.rate(lo) >= rate:
            hi, lo = lo, lo / 2.0
        for _ in range(20):
            mid = 0.5 * (lo + hi)
            if self.rate(mid) < rate:
                lo = mid
            else:
                hi = mid
        got = self.point(hi, batch_limit)
        return got if got.ok else None

    def capacity(self, batch_limit: int, ttft_target_s: float | None, tpot_target_s: float | None
                 ) -> LoadPoint | None:
        """The highest load at which the TPOT under load and the p90 TTFT meet their targets (None: no load
        meets them; without targets, the most the slots and the prefill queue sustain)."""
        if batch_limit <= 0:
            return None

        def ok(p: LoadPoint) -> bool:
            if not p.ok:
                return False
            return (ttft_target_s is None or p.ttft_p90_s <= ttft_target_s * (1 + 1e-9)) and \
                (tpot_target_s is None or p.tpot_s <= tpot_target_s * (1 + 1e-9))

        top = self.point(float(batch_limit), batch_limit if ttft_target_s is not None else None)
        if ok(top):
            return top
        if not self.point(1e-6, batch_limit).ok or (
                (ttft_target_s is not None or tpot_target_s is not None) and not ok(self.point(1e-6, batch_limit))):
            return None
        # the largest mean running batch that still meets the targets (without targets: whose queues are
        # still stable, the most the replica sustains); every condition only worsens as the load grows.
        # Bracket it by halving from the limit, then bisect the bracket to 2^-14 of its width.
        hi = float(batch_limit)
        lo = hi / 2.0
        while lo > 1e-6 and not ok(self.point(lo, batch_limit)):
            hi, lo = lo, lo / 2.0
        lo = max(lo, 1e-6)
        for _ in range(14):
            mid = 0.5 * (lo + hi)
            if ok(self.point(mid, batch_limit)):
                lo = mid
            else:
                hi = mid
        return self.point(lo, batch_limit)

    def _saturated_loop(self, n: float) -> LoadPoint:
        """``n`` users whose prompts keep the prefill queue busy (an open stream at their rate would never drain:
        prompt-only or very short requests). The queue serves one prompt per ``prefill_service_s``, so each
        user's cycle (its wait, its prefill, its decode) lasts n services: the finite-source queue at saturation,
        response time = n x service - decode time (Lazowska et al. 1984, ch. 4 asymptotic bounds)."""
        step = self.step_s(n)
        service = self.prefill_service_s(n, step)
        util = min(self._p() / service, 1.0 - 1e-9)     # the replica's share on prompts
        tpot = step / (1.0 - util)
        decode = max(0, self.output_tokens - 1) * tpot
        first = self.first_s(n, step)
        ttft = max(first, n * service - decode)
        return LoadPoint(n, n / (ttft + decode), tpot, ttft, ttft, ttft, util, ttft - first)

    def closed_loop(self, users: int) -> tuple[LoadPoint, float]:
        """``users`` requests always in flight (a concurrency benchmark): the replica runs as many as its slots
        hold, the rest wait their turn. Returns the load point and the mean extra wait of those beyond the
        slots (Little's law: queue length / throughput)."""
        slots = max(1, self.slots()) if self.continuous else max(1, users)
        running = float(min(max(1, users), slots))
        point = self.point(running, None, others=(running - 1.0) / running)
        if not point.ok:   # the open-stream queue would never drain; a closed loop does: its users take turns
            point = self._saturated_loop(running)
        else:              # and near saturation no user waits for more than every other user's prompt once
            step = self.step_s(running)
            cap = self.first_s(running, step) + (running - 1.0) * self.prefill_service_s(running, step)
            if point.ttft_p90_s > cap:
                point = replace(point, ttft_p50_s=min(point.ttft_p50_s, cap), ttft_p90_s=cap,
                                ttft_mean_s=min(point.ttft_mean_s, cap))
        extra = (users - running) / point.rate if users > running and point.rate > 0 else 0.0
        return point, extra
