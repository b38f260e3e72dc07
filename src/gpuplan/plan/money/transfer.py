"""What a job's nodes move over the network and how long it takes: the model download over the public bandwidth
Terraform gives each node, a batch job's input staged from OSS onto the data disk, the final checkpoint (training) or
the job's output (batch) uploaded to OSS, and the auto-release time built from them: first boot + download + input
+ the job x (1 + margin) + upload.

The first boot is the plan's own start-up, driver install and image pull (its ``fixed_costs``: one figure for the
cost and the release); the download runs at the rate of the source the bundle fetches from (:func:`node_start`).

Figures: data/ops.yaml ``bundle_network`` (public bandwidth 100 Mbit/s pay-by-traffic, inbound = outbound above
10 Mbit/s: https://www.alibabacloud.com/help/en/ecs/user-guide/network-bandwidth ; the driver install's 10-20
minutes from Alibaba's auto-install page; the OSS intranet rate is an assumption) and ``training.auto_release``
(margin, minimum hours).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MB = 1e6
MBIT = 1e6 / 8


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class Transfers:
    """Seconds and bytes of one node's start-up, download, input, upload; ``release_hours`` 0 = no auto-release.
    ``upload_*``: the final checkpoint of a training job, the output of a batch job."""

    bandwidth_mbit: int
    internet_charge_type: str
    oss_mb_s: float
    boot_s: float              # the plan's start-up (fixed_costs.boot_s)
    image_pull_s: float        # the plan's image pull (fixed_costs.image_pull_s)
    driver_install_s: float    # the driver install and its reboot (fixed_costs.driver_install_s: node_start)
    download_bytes: float | None
    download_s: float | None
    upload_bytes: float | None
    upload_s: float | None
    job_s: float | None
    margin: float
    release_hours: int
    input_bytes: float | None = None
    input_s: float | None = None
    job_high_s: float | None = None   # the run at the high end of the plan's 80 % time range (None: no range)
    operator_s: float = 0.0    # the operator's launch steps after apply (ops.yaml training.auto_release.operator_s)

    @property
    def release_run_s(self) -> float:
        """The run the release waits for: the high end of the plan's time range (the end its deadline is checked
        at), and never less than the estimate x (1 + margin)."""
        return max((self.job_s or 0.0) * (1 + self.margin), self.job_high_s or 0.0)

    @property
    def release_at_high_end(self) -> bool:
        """The release waits for the high end of the time range (not the estimate x (1 + margin))."""
        return bool(self.job_high_s) and (self.job_high_s or 0.0) >= (self.job_s or 0.0) * (1 + self.margin)

    @property
    def bootstrap_s(self) -> float:
        """First boot until the job can start: start-up, driver install and reboot, image pull."""
        return self.boot_s + self.driver_install_s + self.image_pull_s


# Bytes per parameter of a pre-quantized checkpoint a service downloads instead of the publisher's (AWQ / GPTQ / FP8
# repositories): the fallback when the model's block shape is unknown (an inline model); with it, the estimate's own
# weight_bytes counts the quantized blocks and the 16-bit embeddings. bitsandbytes quantizes the published checkpoint
# at load time, so its download is the published one.
PREQUANTIZED_BYTES_PER_PARAM = {"int8": 1.0, "fp8": 1.0, "gptq-int8": 1.0, "int4": 0.5, "awq": 0.5, "gptq-int4": 0.5}
# the publisher's own format when it is not 16-bit (ModelSpec.native_dtype: config.json's quantization_config for
# DeepSeek-V3 / Kimi-K2 FP8 and gpt-oss MXFP4, its torch_dtype float32 for fp32 checkpoints such as bge-m3)
PUBLISHED_BYTES_PER_PARAM = {"fp8": 1.0, "mxfp4": 0.5, "fp32": 4.0}


def download_bytes(params: float | None, quantization: str | None, training: bool, model: Any = None) -> float | None:
    """Bytes of the weights each node downloads: a training job fetches the published checkpoint it trains from, a
    service the checkpoint of its weight format (a pre-quantized repository, else the published one). ``model``: the
    ModelSpec when known - its published format (``native_dtype``: FP8 is 1 byte per block weight, not 2; MXFP4
    experts 4.25 bits; fp32 4 bytes) and its block shape, counted by the estimate's weight_bytes (one rule for the
    weights a GPU holds and the weights a node fetches)."""
    if not params:
        return None
    native = getattr(model, "native_dtype", None)
    scheme = quantization if (not training and quantization in PREQUANTIZED_BYTES_PER_PARAM) else native
    if scheme is None:
        return float(params) * 2.0
    if scheme == "fp32":
        return float(params) * 4.0
    shape = _block_shape(model)
    if shape is not None and abs(shape.params_total - float(params)) <= 0.02 * float(params):
        from gpuplan.estimate.shapes import weight_bytes

        return weight_bytes(shape, "bf16", scheme)[0]
    per_param = PREQUANTIZED_BYTES_PER_PARAM.get(scheme) or PUBLISHED_BYTES_PER_PARAM.get(scheme, 2.0)
    return float(params) * per_param


def _block_shape(model: Any) -> Any:
    """The estimate's Shape of a language model (None for a vision / diffusion / speech profile or no model)."""
    if model is None or not hasattr(model, "num_layers"):
        return None
    from gpuplan.estimate.engine_defaults import is_llm
    from gpuplan.estimate.shapes import shape_of

    if not is_llm(model):
        return None
    try:
        return shape_of(model)
    except Exception:  # noqa: BLE001 - a partial inline shape: the per-parameter table
        return None


@dataclass(frozen=True)
class NodeStart:
    """What one node of a plan does at start that the bundle makes it do, by platform (data/ops.yaml ``node_start``):
    the driver install (ECS: node-bootstrap.sh, ``bundle_network.driver_install_s``; 0 where the platform brings the
    driver) and the weights' source and rate (``hub``: fetch-model.sh from ModelScope / Hugging Face over the node's
    public bandwidth; ``oss``: the copy staged in OSS, over the VPC). The plan's fixed costs and the bundle's PLAN.md,
    fetch-model.sh comment and auto-release all read these: one figure for each."""

    platform: str
    driver_install_s: float
    weights_from: str          # hub | oss
    download_bytes_s: float

    def download_s(self, n_bytes: float | None) -> float | None:
        return transfer_s(n_bytes, self.download_bytes_s) if n_bytes else None


def node_start(ops: Mapping[str, Any], platform: str | None = "ecs", *, staged_in_oss: bool = False) -> NodeStart:
    """The start of one node of ``platform`` as the bundle sets it up; ``staged_in_oss``: the weights come from your
    OSS copy (the bundle's ``model_oss_prefix`` / MODEL_OSS) instead of the platform's default source."""
    net, start = ops["bundle_network"], ops["node_start"]
    plat = platform or "ecs"
    if plat not in start["driver_installed_by"]:
        from gpuplan.errors import GpuplanError
        from gpuplan.i18n import _

        raise GpuplanError(_("unknown platform {platform}").format(platform=plat),
                           hint=_("one of: {names}").format(names=", ".join(start["driver_installed_by"])))
    driver = float(net["driver_install_s"]) if start["driver_installed_by"][plat] == "bundle" else 0.0
    source = "oss" if staged_in_oss else str(start["weights_from"][plat])
    rate = float(net["oss_intranet_mb_s"]) * MB if source == "oss" else float(net["public_bandwidth_mbit"]) * MBIT
    return NodeStart(plat, driver, source, rate)


def plan_staged(plan: Mapping[str, Any] | None) -> bool:
    """Whether a plan (plan.json's plan) counted its weights staged in OSS (plan/money/staging.py decided)."""
    ws = (plan or {}).get("weights_staging") or {}
    return ws.get("weights_from") == "oss"


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def fixed_parts_s(fixed: Mapping[str, Any] | None) -> dict[str, float]:
    """The seconds of a plan's ``fixed_costs`` (boot, driver install, image pull, download, idle tail), by part."""
    out = {}
    for key, value in (fixed or {}).items():
        s = _seconds(value)
        if key.endswith("_s") and s is not None:
            out[key] = s
    return out


def plan_fixed_s(plan: dict) -> float:
    """The plan's own once-per-job seconds (``fixed_costs``: boot, driver, image pull, download, idle tail), which its
    ``time_s`` includes and the auto-release counts separately."""
    return sum(fixed_parts_s(plan.get("fixed_costs")).values())


def transfer_s(n_bytes: float, bytes_per_s: float) -> float:
    """Seconds to move ``n_bytes`` at ``bytes_per_s`` (no protocol overhead counted)."""
    return n_bytes / bytes_per_s if bytes_per_s > 0 else math.inf


def release_hours(*, bootstrap_s: float, download_s: float, job_s: float, upload_s: float, margin: float,
                  min_hours: int, input_s: float = 0.0, job_high_s: float = 0.0, operator_s: float = 0.0) -> int:
    """Whole hours after `terraform apply` at which ECS may release the node: first boot, the operator's own launch
    steps (``operator_s``), model download, the batch job's input staging, the job at the high end of its time range
    (``job_high_s``; at least the estimate with its margin) and the upload, rounded up."""
    total_s = bootstrap_s + operator_s + download_s + input_s + max(job_s * (1 + margin), job_high_s) + upload_s
    return max(min_hours, math.ceil(total_s / 3600))


def job_transfers(ops: dict, *, training: bool, billing: str | None, model_bytes: float | None,
                  checkpoint_bytes: float | None, time_s: float | None, fixed: Mapping[str, Any] | None = None,
                  batch: bool = False, input_bytes: float | None = None, output_bytes: float | None = None,
                  first_boot: Mapping[str, Any] | None = None, platform: str | None = "ecs",
                  staged_in_oss: bool = False, time_high_s: float | None = None) -> Transfers:
    """The download/upload times and the auto-release hours of one plan: the first boot (the plan's start-up and
    image pull from ``fixed``, its ``fixed_costs``, plus the driver install), the model download over the node's
    public bandwidth, a batch job's input from OSS, the run (the plan's time without its own once-per-job
    seconds) at the high end of its time range (``time_high_s``, the plan's ``intervals.time_s[1]``: the end its
    deadline is checked at; at least the estimate with its margin), and the upload to OSS (the final checkpoint, or
    the batch job's output).
    ``release_hours`` is 0 for services and subscriptions (never released): training and batch jobs are released.
    ``first_boot``: the start-up and image pull seconds (``boot_s``, ``image_pull_s``) of a plan that carries no
    fixed costs (a service), computed by the functions its costs would use; by default ``fixed``'s. The driver
    install and the download's rate are :func:`node_start`'s for ``platform`` (the figures the plan's costs count;
    ``staged_in_oss``: the plan counted its weights staged in OSS, plan/money/staging.py).
    ``ops``: data/ops.yaml (``bundle_network``, ``node_start``, ``training.auto_release``), loaded by the caller."""
    net = ops["bundle_network"]
    cfg = ops["training"]["auto_release"]
    mbit = int(net["public_bandwidth_mbit"])
    oss = float(net["oss_intranet_mb_s"])
    start = node_start(ops, platform, staged_in_oss=staged_in_oss)
    parts = fixed_parts_s(fixed)
    down = start.download_s(model_bytes)
    up_bytes = checkpoint_bytes if training else (output_bytes if batch else None)
    up = transfer_s(up_bytes, oss * MB) if up_bytes else None
    in_bytes = input_bytes if batch and not training else None
    stage = transfer_s(in_bytes, oss * MB) if in_bytes else None
    job = max(0.0, time_s - sum(parts.values())) if time_s else None
    job_high = max(0.0, time_high_s - sum(parts.values())) if time_high_s and job else None
    boot_parts = fixed_parts_s(first_boot) if first_boot is not None else parts
    boot, pull = boot_parts.get("boot_s", 0.0), boot_parts.get("image_pull_s", 0.0)
    driver = boot_parts.get("driver_install_s", start.driver_install_s)   # a plan.json written before it was counted
    hours = 0
    if (training or batch) and billing != "subscription" and job:
        hours = release_hours(bootstrap_s=boot + driver + pull, download_s=down or 0.0, input_s=stage or 0.0,
                              job_s=job, upload_s=up or 0.0, margin=float(cfg["margin"]),
                              min_hours=int(cfg["min_hours"]), job_high_s=job_high or 0.0,
                              operator_s=float(cfg.get("operator_s", 0.0)))
    return Transfers(bandwidth_mbit=mbit, internet_charge_type=str(net["internet_charge_type"]), oss_mb_s=oss,
                     boot_s=boot, image_pull_s=pull, driver_install_s=driver, download_bytes=model_bytes,
                     download_s=down, upload_bytes=up_bytes, upload_s=up, job_s=job, margin=float(cfg["margin"]),
                     release_hours=hours, input_bytes=in_bytes, input_s=stage, job_high_s=job_high,
                     operator_s=float(cfg.get("operator_s", 0.0)) if hours else 0.0)
