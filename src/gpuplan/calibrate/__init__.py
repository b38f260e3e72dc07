"""``gpuplan calibrate``: measure, compare with the estimate, keep the ratio as a local overlay.

* ``calibrate_here(workload)`` profiles the workload on this machine's GPU (calibrate/profile.py);
* ``calibrate_from_file(path)`` reads measurements the user already has (calibrate/measurements.py);
* ``show()`` / ``reset()`` manage the overlay (gpuplan.estimate.calibration, which later estimates read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from gpuplan.calibrate.measurements import calibrations, evaluate, read_rows
from gpuplan.calibrate.profile import Measurement, Runner, torch_runner
from gpuplan.errors import GpuplanError
from gpuplan.estimate import calibration as overlay
from gpuplan.estimate.calibration import Calibration, check_factor, suspended, workload_class
from gpuplan.i18n import _
from gpuplan.units import GIB

PROFILE_FRAMEWORK = "transformers"  # what the real profile runs (PyTorch + transformers)
_METRIC_FIELD = {"train_tokens_per_s_per_gpu": "tokens_per_s_per_gpu", "output_tokens_per_s": "output_tokens_per_s"}


@dataclass
class CalibrationResult:
    """What one `gpuplan calibrate` did: the entries it stored, the rows it skipped, notes."""

    entries: list[Calibration]
    path: Path
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": 1, "path": str(self.path), "entries": [e.to_dict() for e in self.entries],
                "skipped": list(self.skipped), "notes": list(self.notes)}


def _store(new: list[Calibration]) -> Path:
    return overlay.save(overlay.merge(overlay.load(), new))


def calibrate_from_file(path: str | Path, today: date | None = None) -> CalibrationResult:
    """Calibrations from a measurements CSV (one per GPU, framework and workload class), stored."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise GpuplanError(_("Measurements file {path} does not exist.").format(path=p),
                           hint=_("Give a CSV with the columns of bench/data/measurements.csv."))
    results, skipped = evaluate(read_rows(p))
    entries = calibrations(results, p.name, today)
    if not entries:
        raise GpuplanError(_("No row of {path} gives a throughput gpuplan can compare with an estimate.").format(path=p),
                           hint=(_("Skipped: {rows}").format(rows="; ".join(skipped[:5])) if skipped else
                                 _("Give throughput rows (metric train_tokens_per_s_per_gpu, output_tokens_per_s, "
                                   "step_time_s, ...).")))
    return CalibrationResult(entries, _store(entries), skipped)


def _single_gpu(w: Any) -> Any:
    par = w.parallel
    if (w.hardware and (w.hardware.count or 1) > 1) or (par and ((par.tp or 1) > 1 or (par.pp or 1) > 1)):
        raise GpuplanError(_("gpuplan calibrate profiles one GPU; this workload uses several."),
                           hint=_("Calibrate a workload that fits one GPU (a smaller model or batch); the factor "
                                  "applies to every plan on that GPU model, framework and workload class."))
    return w


def calibrate_here(workload: Any, runner: Runner = torch_runner, steps: int = 5,
                   today: date | None = None) -> CalibrationResult:
    """Profile ``workload`` on this machine's GPU, compare with its estimate and store the ratio."""
    from gpuplan.catalog.hardware.gpus import resolve_gpu
    from gpuplan.catalog.models import resolve_model
    from gpuplan.estimate.core import estimate
    from gpuplan.workload_defaults import resolve_defaults

    if not 1 <= steps <= 1000:
        raise GpuplanError(_("--steps {steps} is out of range.").format(steps=steps), hint=_("Give 1 to 1000 steps."))
    resolved, _defaults = resolve_defaults(_single_gpu(workload))
    notes = []
    if resolved.framework != PROFILE_FRAMEWORK:
        notes.append(_("the profile runs PyTorch + transformers: the calibration is stored for framework {fw}, "
                       "not {given}").format(fw=PROFILE_FRAMEWORK, given=resolved.framework))
        resolved = resolved.with_updates(framework=PROFILE_FRAMEWORK)
    model = resolve_model(resolved.model)
    if not model.is_llm:
        raise GpuplanError(_("gpuplan calibrate profiles transformer language models; {model} is not one (its kind: {kind}).").format(
            model=model.id, kind=model.kind), hint=_("Use `gpuplan calibrate --from FILE.csv` with your measurements."))
    measured: Measurement = runner(resolved, model, steps)
    gpu, gpu_note = resolve_gpu(measured.device_name)
    if gpu_note:
        notes.append(gpu_note)
    on_gpu = resolved.with_updates(hardware={"gpu": gpu.id, "count": 1})
    with suspended():
        est = estimate(on_gpu)
    predicted = float(est.performance.get(_METRIC_FIELD[measured.metric]) or 0.0)
    if predicted <= 0:
        raise GpuplanError(_("The estimate for this workload has no {metric} to compare with.").format(
            metric=measured.metric), hint=_("Calibrate a training or inference workload."))
    factor = measured.value / predicted
    check_factor(factor, _("{model} on {gpu}").format(model=model.id, gpu=gpu.id))
    memory: dict[str, float] = {}
    if measured.peak_allocated_bytes is not None:
        memory = {"measured_allocated_gib": round(measured.peak_allocated_bytes / GIB, 3),
                  "estimated_allocated_gib": round(est.memory.peak_allocated_bytes / GIB, 3)}
    if measured.peak_reserved_bytes is not None:
        memory.update(measured_reserved_gib=round(measured.peak_reserved_bytes / GIB, 3),
                      estimated_reserved_gib=round(est.memory.peak_reserved_bytes / GIB, 3))
    entry = Calibration(gpu=gpu.id, framework=PROFILE_FRAMEWORK,
                        workload_class=workload_class(resolved.task or "inference", model), factor=round(factor, 4),
                        metric=measured.metric, measured=round(measured.value, 4), default=round(predicted, 4),
                        date=(today or date.today()).isoformat(), source="this machine", runs=1, model=model.id,
                        memory=memory)
    return CalibrationResult([entry], _store([entry]), notes=notes)


def show() -> list[Calibration]:
    return list(overlay.load())


def reset() -> bool:
    return overlay.reset()


__all__ = ["CalibrationResult", "calibrate_from_file", "calibrate_here", "show", "reset", "Measurement"]
