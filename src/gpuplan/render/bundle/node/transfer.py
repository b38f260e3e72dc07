"""The bundle's view of a plan's transfers (gpuplan.plan.money.transfer computes them): its download, upload and
auto-release figures from the bundle context, and durations written into scripts."""

from __future__ import annotations

from gpuplan.plan.advice.ops import load_ops
from gpuplan.plan.money.transfer import Transfers, job_transfers
from gpuplan.render.bundle.context import Ctx


def transfers(c: Ctx) -> Transfers:
    """The bundle's download/upload times and auto-release hours for this plan (the same function and figures as
    the plan's ops advice, gpuplan.plan.advice.ops.plan_transfers: fixed costs, storage budget, time)."""
    return job_transfers(load_ops(), training=c.training, billing=c.billing, model_bytes=c.model_bytes,
                         checkpoint_bytes=c.checkpoint_bytes, time_s=c.job_time_s, fixed=c.plan_fixed,
                         batch=c.batch_job, input_bytes=c.job_input_bytes, output_bytes=c.job_output_bytes,
                         first_boot=c.first_boot, platform=c.platform, staged_in_oss=c.weights_staged,
                         time_high_s=c.job_time_high_s)


def script_duration(seconds: float | None) -> str:
    """A duration for a comment in a generated script or Terraform file: always English and inert
    ("3.1h"), whatever the bundle's language (scripts stay English; PLAN.md carries the translation)."""
    from gpuplan.i18n import use_lang
    from gpuplan.units import fmt_duration

    if not seconds:
        return "-"
    with use_lang("en"):
        return fmt_duration(seconds).replace(" ", "")
