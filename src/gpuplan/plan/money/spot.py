"""Spot (preemptible) capacity: the price level when no spot price is known, and what interruptions
cost a job (Young's checkpoint interval, per instance).

Alibaba: spot prices "can go as low as 10% of the prices of pay-as-you-go instances", the market
price "can be up to the pay-as-you-go price", and an instance is released 5 minutes after the
interruption notice (sources below). A job that needs all of its N instances stops when any one of
them is reclaimed, so its interruption rate is N times one instance's.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.i18n import _
from gpuplan.units import HOUR_S

SPOT_SOURCE = "https://www.alibabacloud.com/help/en/ecs/user-guide/what-is-a-spot-instance"
# "SpotAsPriceGo: ... the market price is automatically used as the bid price. The market price can be
# up to the pay-as-you-go price." (Alibaba ECS API reference, RunInstances / DescribePrice, SpotStrategy)
SPOT_CAP_SOURCE = "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances"


@dataclass(frozen=True)
class SpotModel:
    """Spot assumptions. ``fraction_of_payg`` and the interruption rate are not official figures."""

    # None = the cloud's default from data/clouds/<cloud>/spot.yaml (see spot_default); a number
    # overrides it for every cloud (still marked estimated).
    fraction_of_payg: float | None = None
    # low end: "as low as 10%" (Alibaba spot page); high end: the cap, "up to the pay-as-you-go price"
    # (SPOT_CAP_SOURCE). The ranking and the budget take a guessed spot price at the high end.
    fraction_range: tuple[float, float] = (0.1, 1.0)
    interruptions_per_hour: float = 0.05  # unconfirmed assumption: one reclaim per ~20 h of ONE instance
    restart_s: float = 600.0             # re-create the instance, pull the image, load the model (assumption)
    notice_s: float = 300.0              # released 5 minutes after the interruption notice (Alibaba docs)
    long_job_warning_h: float = 24.0


DEFAULT_SPOT = SpotModel()


@dataclass(frozen=True)
class SpotDefault:
    """A cloud's bundled spot fraction of pay-as-you-go: a rule-based estimate with its evidence."""

    cloud: str
    fraction_of_payg: float
    as_of: str
    source: str
    rule: str
    kind: str = "estimated"


@functools.cache
def spot_default(cloud: str) -> SpotDefault | None:
    """``data/clouds/<cloud>/spot.yaml`` (None when the file is absent or sets no fraction)."""
    path = files("gpuplan") / "data" / "clouds" / cloud / "spot.yaml"
    try:
        doc = load_data(path) or {}
    except (OSError, FileNotFoundError, ValueError):
        return None
    if doc.get("fraction_of_payg") is None:
        return None
    return SpotDefault(cloud, float(doc["fraction_of_payg"]), str(doc.get("as_of", "")), str(doc.get("source", "")),
                       str(doc.get("rule", "")), str(doc.get("kind", "estimated")))


@dataclass(frozen=True)
class SpotRun:
    """Expected wall time of a job on spot capacity (Young 1974 / Daly 2006 checkpoint model)."""

    time_s: float
    overhead_fraction: float
    checkpoint_interval_s: float
    checkpoint_write_s: float
    expected_interruptions: float
    instances: int = 1
    interruptions_per_hour: float = 0.0   # of the whole job: instances x the rate of one instance


def job_interruption_rate(model: SpotModel, instances: int) -> float:
    """Interruptions per hour of a job that needs all of its ``instances``: each is reclaimed
    independently at ``model.interruptions_per_hour`` and any one reclaim stops the job (the minimum of
    N independent exponential clocks is exponential with N times the rate)."""
    return model.interruptions_per_hour * max(1, int(instances))


def spot_run(time_s: float, checkpoint_write_s: float, model: SpotModel = DEFAULT_SPOT,
             instances: int = 1) -> SpotRun:
    """Checkpoint every tau = sqrt(2 C M) (Young 1974, "A first order approximation to the optimum
    checkpoint interval", CACM 17(9)); each interruption loses tau/2 of work plus the restart.
    Overhead fraction = C/tau + (tau/2 + R)/M with C the checkpoint write time and M the mean time
    between interruptions of the whole job: 1 / (instances x the per-instance rate), so a job on 8
    spot nodes is interrupted 8 times as often as one node and checkpoints sqrt(8) times as often."""
    rate_h = job_interruption_rate(model, instances)
    lam = rate_h / HOUR_S
    n = max(1, int(instances))
    if lam <= 0:
        return SpotRun(time_s, 0.0, math.inf, checkpoint_write_s, 0.0, n, 0.0)
    mtbi = 1.0 / lam
    c = max(checkpoint_write_s, 1.0)
    tau = math.sqrt(2.0 * c * mtbi)
    frac = c / tau + (tau / 2.0 + model.restart_s) / mtbi
    total = time_s * (1.0 + frac)
    return SpotRun(total, frac, tau, c, total * lam, n, rate_h)


def spot_why(run: SpotRun, model: SpotModel = DEFAULT_SPOT) -> str:
    """The sentence a plan gives for its spot overhead (per instance: any one reclaim stops the job)."""
    if run.instances > 1:
        return _("spot: {n} instances at {rate} interruptions/h each (assumed) stop the job {job_rate} times/h; "
                 "checkpoint every {min} min (Young's interval); interruptions add {share} to the run time").format(
            n=run.instances, rate=f"{model.interruptions_per_hour:g}", job_rate=f"{run.interruptions_per_hour:g}",
            min=f"{run.checkpoint_interval_s / 60:.0f}", share=f"{run.overhead_fraction:.1%}")
    return _("spot: checkpoint every {min} min; interruptions add {share} to the run time (Young's "
             "interval, assumed {rate} interruptions/h)").format(
        min=f"{run.checkpoint_interval_s / 60:.0f}", share=f"{run.overhead_fraction:.1%}",
        rate=f"{model.interruptions_per_hour:g}")


def spot_summary(run: SpotRun, model: SpotModel, known_time: bool) -> dict[str, Any]:
    """The ``spot`` block of a plan's JSON."""
    return {"overhead_fraction": round(run.overhead_fraction, 4),
            "checkpoint_interval_s": round(run.checkpoint_interval_s, 1) if math.isfinite(run.checkpoint_interval_s)
            else None,
            "checkpoint_write_s": round(run.checkpoint_write_s, 1),
            "expected_interruptions": round(run.expected_interruptions, 2) if known_time else None,
            "interruptions_per_hour": model.interruptions_per_hour,
            "instances": run.instances,
            "job_interruptions_per_hour": round(run.interruptions_per_hour, 6)}


def describe_spot(model: SpotModel, cloud: str = "alibaba") -> dict[str, Any]:
    d = spot_default(cloud)
    fraction = model.fraction_of_payg if model.fraction_of_payg is not None else (d.fraction_of_payg if d else None)
    return {"fraction_of_payg": fraction, "fraction_range": list(model.fraction_range),
            "fraction_kind": "estimated", "fraction_rule": d.rule if d and model.fraction_of_payg is None else "",
            "interruptions_per_hour": model.interruptions_per_hour, "restart_s": model.restart_s,
            "notice_s": model.notice_s, "source": SPOT_SOURCE, "cap_source": SPOT_CAP_SOURCE,
            "interruptions_scale_with_instances": True,
            "unconfirmed": ["fraction_of_payg", "fraction_range", "interruptions_per_hour", "restart_s"]}
