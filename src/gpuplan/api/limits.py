"""Limits of the REST API: request size, search size, time per request and concurrent work.

Every limit is a plain number in :class:`Limits` (override them in ``create_app(limits=...)``)
and every breach is answered with a JSON error naming the field, never with a 500:

- a body larger than ``max_body_bytes`` -> 413 (checked before the body is parsed);
- a workload that would make the search too large (``constraints.max_gpus``, ``hardware.count``,
  long lists) -> 422 with the field, checked before any work starts;
- more queued work than ``max_queue`` -> 503 at once; more than ``per_client_queue`` requests of one
  client waiting or running -> 429 at once (both with ``Retry-After``);
- work that has not finished within ``time_budget_s`` (queue wait included) -> 503 with a hint to
  narrow the search, and the worker process computing it is killed and replaced
  (:mod:`gpuplan.api.workers`), so nothing runs on after the answer.

The figures in bench/results/api_load.md show the typical costs (tens to a few hundred
milliseconds per recommend) and what hostile requests do to the latency of the others.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gpuplan.errors import GpuplanError
from gpuplan.workload import Workload
from gpuplan.i18n import _


def _default_workers() -> int:
    """At least 4 worker processes (so that one client's two runaway requests leave two for the others),
    at most 8, else one per CPU."""
    return max(4, min(8, os.cpu_count() or 1))


@dataclass(frozen=True)
class Limits:
    """Every limit of the REST API (defaults suit one user on a laptop or a small VM)."""

    max_body_bytes: int = 64 * 1024        # a workload is < 2 KiB; an inline config.json < 10 KiB
    max_json_depth: int = 32               # nesting of the request body
    max_top: int = 20                      # plans returned by /api/recommend (?top=)
    max_search_gpus: int = 256             # constraints.max_gpus and hardware.count for a search
    max_estimate_gpus: int = 100_000       # hardware.count for a fixed-hardware estimate
    max_list_items: int = 32               # regions, families, clouds, quantization, ...
    time_budget_s: float = 20.0            # wall time per request, queue wait included; then the worker is killed
    max_workers: int = 0                   # worker processes; 0 = one per CPU, at least 4, at most 8
    max_queue: int = 16                    # computations waiting or running before 503
    per_client_active: int = 0             # computations of one client at once; 0 = half the workers
    per_client_queue: int = 8              # requests of one client waiting or running before 429
    retry_after_s: int = 2                 # Retry-After of a 429

    @property
    def workers(self) -> int:
        return self.max_workers or _default_workers()

    @property
    def client_active(self) -> int:
        return self.per_client_active or max(1, self.workers // 2)


def check_workload(w: Workload, limits: Limits, *, search: bool) -> None:
    """Reject a workload whose search or lists exceed the limits (GpuplanError with the field)."""
    cons = w.constraints
    hw = w.hardware
    gpu_cap = limits.max_search_gpus if search else limits.max_estimate_gpus
    if cons is not None and cons.max_gpus is not None and cons.max_gpus > limits.max_search_gpus:
        raise GpuplanError(
            _("constraints.max_gpus {max_gpus} is above this server's search limit of {max_search_gpus}.").format(max_gpus=cons.max_gpus, max_search_gpus=limits.max_search_gpus),
            hint=_("Set constraints.max_gpus to {max_search_gpus} or less, or use the CLI for larger searches.").format(max_search_gpus=limits.max_search_gpus),
            field="constraints.max_gpus")
    if hw is not None and hw.count is not None and hw.count > gpu_cap:
        raise GpuplanError(
            _("hardware.count {count} is above this server's limit of {gpu_cap} GPUs.").format(count=hw.count, gpu_cap=gpu_cap),
            hint=_("Give {gpu_cap} GPUs or fewer, or use the CLI.").format(gpu_cap=gpu_cap), field="hardware.count")
    if cons is not None:
        for name in ("regions", "billing", "families", "quantization", "include_status", "clouds"):
            items = getattr(cons, name)
            if items is not None and len(items) > limits.max_list_items:
                raise GpuplanError(_("constraints.{name} has {items} entries (at most {max_list_items}).").format(name=name, items=len(items), max_list_items=limits.max_list_items),
                                   hint=_("Give fewer entries; leave it unset to search everything."),
                                   field=f"constraints.{name}")
    if w.lora is not None and isinstance(w.lora.targets, list) and len(w.lora.targets) > 256:
        raise GpuplanError(_("lora.targets has {targets} entries (at most 256).").format(targets=len(w.lora.targets)),
                           hint=_("Use all-linear, attn or qv, or list fewer module names."), field="lora.targets")
