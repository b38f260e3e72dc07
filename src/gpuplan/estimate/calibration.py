"""The local calibration overlay written by ``gpuplan calibrate``: measured / estimated throughput per
(GPU model, framework, workload class), kept in the user's config folder and applied to later estimates.

An entry's ``factor`` multiplies every throughput figure of a matching estimate and divides every time
(step time, TTFT, TPOT, job time): the estimator's mechanisms stay as they are, and the figures for the
calibrated workload land on the measurement. The estimate's assumptions say so ("calibrated on this
machine, 2026-12-03: ...").

File: ``<config folder>/calibration.json`` (``$GPUPLAN_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/gpuplan`` or
``~/.config/gpuplan``; macOS ``~/Library/Application Support/gpuplan``; Windows ``%APPDATA%\\gpuplan``).
``GPUPLAN_CALIBRATION=off`` ignores it (bench/accuracy.py does, so its figures stay reproducible).
Nothing here imports torch or touches the network; the file is read once per change (mtime).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

CONFIG_ENV = "GPUPLAN_CONFIG_DIR"
SWITCH_ENV = "GPUPLAN_CALIBRATION"  # "off" ignores the overlay
FILE_NAME = "calibration.json"
SCHEMA_VERSION = 1
FACTOR_RANGE = (0.05, 20.0)  # a measurement 20x off the estimate is a wrong row, not a calibration
_NOT_SCALED = {"peak_tflops_per_gpu", "hfu_assumed", "comm_fraction"}


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class Calibration:
    """One overlay entry: how far the estimate for this GPU, framework and workload class was from a
    measurement of it."""

    gpu: str  # GpuSpec.id
    framework: str  # the resolved workload framework (vllm, deepspeed, transformers, ...)
    workload_class: str  # task for LLMs (inference, pretrain, full, lora, qlora); "<kind> <task>" otherwise
    factor: float  # measured / estimated throughput
    metric: str  # what was measured (train_tokens_per_s_per_gpu, output_tokens_per_s, step_time_s, ...)
    measured: float
    default: float  # the estimate without calibration, same metric
    date: str  # YYYY-MM-DD
    source: str  # "this machine" or the CSV file name
    runs: int = 1  # measurements folded into the factor (geometric mean)
    model: str = ""
    memory: dict[str, float] = field(default_factory=dict)  # measured / estimated peak memory (GiB), if any

    def key(self) -> tuple[str, str, str]:
        return (self.gpu, self.framework, self.workload_class)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def note(self) -> str:
        """The assumption line later estimates print."""
        where = _("on this machine") if self.source == "this machine" else _("from {source}").format(source=self.source)
        return _("calibrated {where}, {date}: {metric} {measured} measured vs {default} default "
                 "(x{factor:.2f}, {runs} run(s); gpuplan calibrate --show)").format(
            where=where, date=self.date, metric=self.metric, measured=fmt_value(self.measured),
            default=fmt_value(self.default), factor=self.factor, runs=self.runs)


def fmt_value(value: float) -> str:
    """3,120 / 41.3 / 0.512: thousands separated, three significant digits below 100."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def default_config_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """``$GPUPLAN_CONFIG_DIR``, else the platform's config folder + ``gpuplan`` (XDG Base Directory spec)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    if platform == "darwin":
        return home / "Library" / "Application Support" / "gpuplan"
    if platform.startswith("win"):
        return Path(env.get("APPDATA") or str(home / "AppData" / "Roaming")) / "gpuplan"
    xdg = env.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else home / ".config") / "gpuplan"


def overlay_path() -> Path:
    return default_config_dir() / FILE_NAME


_SUSPENDED = [0]


def enabled() -> bool:
    return not _SUSPENDED[0] and os.environ.get(SWITCH_ENV, "").strip().lower() not in ("off", "0", "false", "no")


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Estimates without the overlay (what `gpuplan calibrate` compares a measurement with)."""
    _SUSPENDED[0] += 1
    try:
        yield
    finally:
        _SUSPENDED[0] -= 1


_CACHE: dict[str, Any] = {"stamp": None, "entries": ()}


def _stamp(path: Path) -> tuple[str, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_mtime_ns, st.st_size)


_PINNED: list[tuple[Calibration, ...]] = []


@contextlib.contextmanager
def pinned() -> Iterator[None]:
    """Read the overlay once for a batch of estimates (one recommendation runs thousands): inside, load()
    returns that snapshot without touching the file system."""
    _PINNED.append(load())
    try:
        yield
    finally:
        _PINNED.pop()


def load() -> tuple[Calibration, ...]:
    """The overlay's entries (empty when there is no file); a damaged file is one clear error."""
    if _PINNED:
        return _PINNED[-1]
    path = overlay_path()
    stamp = _stamp(path)
    if stamp is None:
        return ()
    if stamp == _CACHE["stamp"]:
        return _CACHE["entries"]
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        entries = tuple(Calibration(**{**e, "memory": dict(e.get("memory") or {})}) for e in raw["entries"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GpuplanError(_("The calibration overlay {path} is damaged ({exc}).").format(path=path, exc=exc),
                           hint=_("Run `gpuplan calibrate --reset` to remove it, then calibrate again.")) from None
    _CACHE.update(stamp=stamp, entries=entries)
    return entries


def save(entries: tuple[Calibration, ...] | list[Calibration]) -> Path:
    """Write the overlay atomically (a temporary file renamed over the old one)."""
    path = overlay_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": SCHEMA_VERSION, "entries": [e.to_dict() for e in sorted(entries, key=Calibration.key)]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    _CACHE.update(stamp=None, entries=())
    return path


def reset() -> bool:
    """Remove the overlay; False when there was none."""
    path = overlay_path()
    _CACHE.update(stamp=None, entries=())
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def lookup(gpu: str, framework: str, workload_class: str) -> Calibration | None:
    """The overlay entry for this GPU, framework and workload class, or None (or when switched off)."""
    if not enabled():
        return None
    for entry in load():
        if entry.key() == (gpu, framework, workload_class):
            return entry
    return None


def calibration_notes(assumption_lists: Iterable[Iterable[str]]) -> list[str]:
    """The overlay notes that appear in any of these estimates' assumptions (a recommendation lists the
    calibrations its plans used), each once, in overlay order."""
    seen = {a for lst in assumption_lists for a in lst}
    return [note for note in (e.note() for e in load()) if note in seen] if enabled() else []


def workload_class(task: str, model: Any) -> str:
    """What a calibration is valid for besides GPU and framework: the task for LLMs, "<kind> <task>" else."""
    kind = getattr(model, "kind", "decoder")
    return task if kind in ("decoder", "encoder", "encoder-decoder") and getattr(model, "profile", None) is None \
        else f"{kind} {task}"


def scale_performance(perf: dict[str, Any], factor: float) -> dict[str, Any]:
    """Throughputs (keys with "per_s", mfu, tflops_per_gpu) x factor; times (keys ending _s or _hours) / factor."""
    out = dict(perf)
    for key, value in perf.items():
        if key in _NOT_SCALED or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        if "per_s" in key or key in ("mfu", "tflops_per_gpu"):
            out[key] = value * factor
        elif key.endswith(("_s", "_hours")):
            out[key] = value / factor
    return out


def merge(old: tuple[Calibration, ...], new: list[Calibration]) -> list[Calibration]:
    """The overlay after adding ``new``: an entry replaces the old one with the same key."""
    keys = {e.key() for e in new}
    return [e for e in old if e.key() not in keys] + list(new)


def check_factor(factor: float, what: str) -> None:
    lo, hi = FACTOR_RANGE
    if not (math.isfinite(factor) and lo <= factor <= hi):
        raise GpuplanError(
            _("{what}: the measurement is {factor:.3g}x the estimate, outside {lo:g}..{hi:g}; not stored.").format(
                what=what, factor=factor, lo=lo, hi=hi),
            hint=_("Check that the measurement and the workload describe the same run (GPU count, batch, "
                   "sequence length, units)."))
