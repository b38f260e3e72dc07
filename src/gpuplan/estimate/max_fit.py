"""The reverse question: the largest batch size, sequence length, prompt length or concurrency that fits on the
workload's fixed hardware (`gpuplan estimate --max`)."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import Estimate, _layers, estimate_resolved
from gpuplan.estimate.system import layout_from_workload, system_from_workload
from gpuplan.i18n import _
from gpuplan.workload import Workload
from gpuplan.workload_defaults import resolve_defaults
from gpuplan.workload_loading import load_workload

MAX_FIELDS = {"batch_size": "batch_size", "seq_len": "seq_len", "prompt_tokens": "prompt_tokens",
              "concurrency": "batch_size"}


def fits_cleanly(est: Estimate) -> bool:
    """The verdict `estimate` prints as "fits": everything the job would hold, the allocator's full reserve
    included (``need_bytes``), is on the card. A job whose reserve exceeds the card still runs (``memory.fits``)
    only by freeing the allocator's cache, slower and with no headroom: `estimate` says so, and `--max` does
    not count it as fitting."""
    return est.memory.required_bytes <= est.memory.capacity_bytes


def max_fit(workload: Workload | dict | str, field_name: str, *, clean: bool = True,
            **overrides: Any) -> tuple[int, Estimate | None]:
    """Largest value of ``field_name`` (batch_size | seq_len | prompt_tokens | concurrency) that fits: by the
    verdict `estimate` prints as "fits" (:func:`fits_cleanly`), or with ``clean=False`` the largest that runs
    at all (``memory.fits``, the allocator's cache freed when needed)."""
    from gpuplan.catalog.models import resolve_model, workload_region

    if field_name not in MAX_FIELDS:
        raise GpuplanError(_("Cannot maximise {field_name!r}.").format(field_name=field_name), hint=_("Choose one of {MAX_FIELDS}.").format(MAX_FIELDS=', '.join(MAX_FIELDS)))
    key = MAX_FIELDS[field_name]
    w = load_workload(workload, **overrides) if overrides or not isinstance(workload, Workload) else workload
    resolved, notes = resolve_defaults(w)
    model = resolve_model(resolved.model, region=workload_region(resolved))
    system, _layout = system_from_workload(resolved)
    layout = layout_from_workload(resolved, system.total_gpus, system.gpus_per_node, _layers(model))
    if field_name == "concurrency" or (field_name == "batch_size" and resolved.task == "inference" and
                                       resolved.framework in ("vllm", "sglang", "trtllm")):
        est = estimate_resolved(resolved, model, system, layout, with_suggestions=False)
        from gpuplan.estimate.serving.inference import max_concurrency

        return max_concurrency(est.memory), est

    def fits(v: int) -> Estimate | None:
        try:
            w2 = resolved.with_updates(**{key: v})
            lay = layout_from_workload(w2, system.total_gpus, system.gpus_per_node, _layers(model))
            e = estimate_resolved(w2, model, system, lay, with_suggestions=False)
        except GpuplanError:
            return None
        return e if (fits_cleanly(e) if clean else e.fits) else None

    lo, hi = 0, 1
    best = None
    while hi <= 10_000_000:
        e = fits(hi)
        if not e:
            break
        lo, best = hi, e
        hi *= 2
    hi = min(hi, 10_000_001)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        e = fits(mid)
        if e:
            lo, best = mid, e
        else:
            hi = mid
    return lo, best

