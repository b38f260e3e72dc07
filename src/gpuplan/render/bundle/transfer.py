"""What a bundle's nodes move over the network and how long it takes: the model download over the public
bandwidth Terraform gives each node, the final checkpoint upload to OSS, and the auto-release time built from
them (first boot + download + the job x (1 + margin) + upload).

Figures: data/ops.yaml ``bundle_network`` (public bandwidth 100 Mbit/s pay-by-traffic, inbound = outbound above
10 Mbit/s: https://www.alibabacloud.com/help/en/ecs/user-guide/network-bandwidth ; OSS intranet rate and the
first-boot time are assumptions) and ``training.auto_release`` (margin, minimum hours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.render.bundle.context import Ctx

MB = 1e6
MBIT = 1e6 / 8


@dataclass(frozen=True)
class Transfers:
    """Seconds and bytes of one node's start-up, download and upload; ``release_hours`` 0 = no auto-release."""

    bandwidth_mbit: int
    internet_charge_type: str
    oss_mb_s: float
    bootstrap_s: float
    download_bytes: float | None
    download_s: float | None
    upload_bytes: float | None
    upload_s: float | None
    job_s: float | None
    margin: float
    release_hours: int


def transfer_s(n_bytes: float, bytes_per_s: float) -> float:
    """Seconds to move ``n_bytes`` at ``bytes_per_s`` (no protocol overhead counted)."""
    return n_bytes / bytes_per_s if bytes_per_s > 0 else math.inf


def release_hours(*, bootstrap_s: float, download_s: float, job_s: float, upload_s: float, margin: float,
                  min_hours: int) -> int:
    """Whole hours after `terraform apply` at which ECS may release the node: first boot, model download, the
    job with its margin (its estimate's uncertainty) and the checkpoint upload, rounded up."""
    total_s = bootstrap_s + download_s + job_s * (1 + margin) + upload_s
    return max(min_hours, math.ceil(total_s / 3600))


def network_settings() -> dict:
    from gpuplan.plan.ops import load_ops

    return load_ops()["bundle_network"]


def transfers(c: Ctx) -> Transfers:
    """The bundle's download/upload times and auto-release hours for this plan."""
    from gpuplan.plan.ops import load_ops

    net = network_settings()
    cfg = load_ops()["training"]["auto_release"]
    mbit = int(net["public_bandwidth_mbit"])
    oss = float(net["oss_intranet_mb_s"])
    boot = float(net["bootstrap_s"])
    down = transfer_s(c.model_bytes, mbit * MBIT) if c.model_bytes else None
    up_bytes = c.checkpoint_bytes if c.training else None
    up = transfer_s(up_bytes, oss * MB) if up_bytes else None
    job = max(0.0, c.job_time_s - c.plan_fixed_s) if c.job_time_s else None
    hours = 0
    if c.training and c.billing != "subscription" and job:
        hours = release_hours(bootstrap_s=boot, download_s=down or 0.0, job_s=job, upload_s=up or 0.0,
                              margin=float(cfg["margin"]), min_hours=int(cfg["min_hours"]))
    return Transfers(bandwidth_mbit=mbit, internet_charge_type=str(net["internet_charge_type"]), oss_mb_s=oss,
                     bootstrap_s=boot, download_bytes=c.model_bytes, download_s=down, upload_bytes=up_bytes,
                     upload_s=up, job_s=job, margin=float(cfg["margin"]), release_hours=hours)


def script_duration(seconds: float | None) -> str:
    """A duration for a comment in a generated script or Terraform file: always English and inert
    ("3.1h"), whatever the bundle's language (scripts stay English; PLAN.md carries the translation)."""
    from gpuplan.i18n import use_lang
    from gpuplan.units import fmt_duration

    if not seconds:
        return "-"
    with use_lang("en"):
        return fmt_duration(seconds).replace(" ", "")
