"""What a training job's nodes move over the network and how long it takes: the model download over the public
bandwidth Terraform gives each node, the final checkpoint upload to OSS, and the auto-release time built from
them (first boot + download + the job x (1 + margin) + upload).

Figures: data/ops.yaml ``bundle_network`` (public bandwidth 100 Mbit/s pay-by-traffic, inbound = outbound above
10 Mbit/s: https://www.alibabacloud.com/help/en/ecs/user-guide/network-bandwidth ; OSS intranet rate and the
first-boot time are assumptions) and ``training.auto_release`` (margin, minimum hours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MB = 1e6
MBIT = 1e6 / 8


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
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


# Bytes per parameter of the checkpoint a node downloads, by weight format: 16-bit unless the repo is
# pre-quantized (bitsandbytes quantizes a 16-bit checkpoint at load time, so its download is 16-bit too).
CHECKPOINT_BYTES_PER_PARAM = {"none": 2.0, "int8": 1.0, "fp8": 1.0, "gptq-int8": 1.0, "int4": 0.5, "awq": 0.5,
                              "gptq-int4": 0.5, "bnb-nf4": 2.0, "bnb-int8": 2.0}


def download_bytes(params: float | None, quantization: str | None, training: bool) -> float | None:
    """Bytes of the weights each node downloads: a training job fetches the 16-bit checkpoint it trains from, a
    service the checkpoint of its weight format."""
    if not params:
        return None
    per_param = 2.0 if training else CHECKPOINT_BYTES_PER_PARAM.get(quantization or "none", 2.0)
    return float(params) * per_param


def plan_fixed_s(plan: dict) -> float:
    """The plan's own once-per-job seconds (``fixed_costs``: boot, image pull, download, idle tail), which its
    ``time_s`` includes and the auto-release counts separately."""
    fixed = plan.get("fixed_costs") or {}
    return sum(float(v) for k, v in fixed.items()
               if k.endswith("_s") and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def transfer_s(n_bytes: float, bytes_per_s: float) -> float:
    """Seconds to move ``n_bytes`` at ``bytes_per_s`` (no protocol overhead counted)."""
    return n_bytes / bytes_per_s if bytes_per_s > 0 else math.inf


def release_hours(*, bootstrap_s: float, download_s: float, job_s: float, upload_s: float, margin: float,
                  min_hours: int) -> int:
    """Whole hours after `terraform apply` at which ECS may release the node: first boot, model download, the
    job with its margin (its estimate's uncertainty) and the checkpoint upload, rounded up."""
    total_s = bootstrap_s + download_s + job_s * (1 + margin) + upload_s
    return max(min_hours, math.ceil(total_s / 3600))


def job_transfers(ops: dict, *, training: bool, billing: str | None, model_bytes: float | None,
                  checkpoint_bytes: float | None, time_s: float | None, fixed_s: float = 0.0) -> Transfers:
    """The download/upload times and the auto-release hours of one plan: first boot, the model download over the
    node's public bandwidth, the run (the plan's time without its own once-per-job seconds) with its margin, and
    the final checkpoint upload to OSS. ``release_hours`` is 0 for services and subscriptions (never released).
    ``ops``: data/ops.yaml (``bundle_network``, ``training.auto_release``), loaded by the caller."""
    net = ops["bundle_network"]
    cfg = ops["training"]["auto_release"]
    mbit = int(net["public_bandwidth_mbit"])
    oss = float(net["oss_intranet_mb_s"])
    boot = float(net["bootstrap_s"])
    down = transfer_s(model_bytes, mbit * MBIT) if model_bytes else None
    up_bytes = checkpoint_bytes if training else None
    up = transfer_s(up_bytes, oss * MB) if up_bytes else None
    job = max(0.0, time_s - fixed_s) if time_s else None
    hours = 0
    if training and billing != "subscription" and job:
        hours = release_hours(bootstrap_s=boot, download_s=down or 0.0, job_s=job, upload_s=up or 0.0,
                              margin=float(cfg["margin"]), min_hours=int(cfg["min_hours"]))
    return Transfers(bandwidth_mbit=mbit, internet_charge_type=str(net["internet_charge_type"]), oss_mb_s=oss,
                     bootstrap_s=boot, download_bytes=model_bytes, download_s=down, upload_bytes=up_bytes,
                     upload_s=up, job_s=job, margin=float(cfg["margin"]), release_hours=hours)
