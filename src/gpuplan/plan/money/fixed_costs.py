"""Once-per-job costs of every instance (data/plan_costs.yaml ``fixed_costs``): start-up, the image pull, the
driver install and the weights' download on the plan's platform (data/ops.yaml ``node_start``), the idle tail and the
minimum billed time; one set of figures for the plan's cost, PLAN.md and the bundle's auto-release."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpuplan.plan.money.cost import plan_costs_doc
from gpuplan.plan.money.transfer import NodeStart
from gpuplan.plan.money.transfer import node_start as transfer_node_start


@dataclass(frozen=True)
class FixedCosts:
    """Once-per-job costs of every instance (data/plan_costs.yaml): start-up, image pull, model download, the idle
    tail and the minimum billed time. Seconds and megabytes per second. The image's size and where it is pulled from
    belong to the node environment (data/environments.yaml, :func:`image_pull`)."""

    boot_s: float = 300.0
    image_pull_mb_s: float = 100.0          # your ACR in the plan's region, over the VPC
    idle_tail_s: float = 300.0
    min_billed_s: tuple[tuple[str, float], ...] = (("payg", 0.0), ("spot", 0.0))

    def breakdown(self, model_bytes: float, pull: ImagePull, start: NodeStart) -> dict[str, float]:
        """Seconds per part (each instance pays them in parallel, so the job's wall time grows by the sum). The driver
        install and the download's rate are the bundle's on the plan's platform (``start``: data/ops.yaml)."""
        return {"boot_s": self.boot_s, "driver_install_s": start.driver_install_s, "image_pull_s": pull.seconds,
                "model_download_s": start.download_s(max(0.0, model_bytes)) or 0.0, "idle_tail_s": self.idle_tail_s}

    def billed_s(self, billing: str | None, run_s: float) -> float:
        """Seconds billed for a run of ``run_s`` (per-second billing with a minimum, if any)."""
        return max(run_s, dict(self.min_billed_s).get(billing or "", 0.0))


@dataclass(frozen=True)
class ImagePull:
    """One node's pull of the plan's image: its compressed bytes (data/environments.yaml) at the rate of where it
    comes from: ``acr-vpc`` (your ACR in the plan's region over the VPC: ``image_pull_mb_s``) or ``public`` (the ECS
    node builds the bundle's image FROM the base image over its public bandwidth, data/ops.yaml bundle_network)."""

    image_bytes: float
    source: str                 # acr-vpc | public
    bytes_per_s: float

    @property
    def seconds(self) -> float:
        return self.image_bytes / self.bytes_per_s if self.bytes_per_s > 0 else 0.0


def image_pull(fixed: FixedCosts, region: str | None, *, training: bool, platform: str = "ecs") -> ImagePull:
    """The image pull one node of a plan pays (see :class:`ImagePull`)."""
    from gpuplan.plan.advice.node_env import image_pull as env_pull
    from gpuplan.plan.advice.ops import load_ops

    n_bytes, source = env_pull(region or "", "training" if training else "vllm", platform)
    if source == "acr-vpc":
        rate = fixed.image_pull_mb_s * 1e6
    else:
        rate = float(load_ops()["bundle_network"]["public_bandwidth_mbit"]) * 1e6 / 8
    return ImagePull(n_bytes, source, rate)


def node_start(platform: str = "ecs") -> NodeStart:
    """The driver install and the weights' download one node of a plan on ``platform`` pays (data/ops.yaml
    ``node_start``: :func:`gpuplan.plan.money.transfer.node_start`, which the bundle's figures use too)."""
    from gpuplan.plan.advice.ops import load_ops

    return transfer_node_start(load_ops(), platform)


def _value(doc: dict, key: str, default: float) -> float:
    v = doc.get(key)
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if v is not None else default


@functools.cache
def load_fixed_costs() -> FixedCosts:
    d = plan_costs_doc().get("fixed_costs") or {}
    mb = d.get("minimum_billing") or {}
    base = FixedCosts()
    return FixedCosts(_value(d, "boot_s", base.boot_s), _value(d, "image_pull_mb_s", base.image_pull_mb_s),
                      _value(d, "idle_tail_s", base.idle_tail_s),
                      (("payg", float(mb.get("payg_s") or 0.0)), ("spot", float(mb.get("spot_s") or 0.0))))
