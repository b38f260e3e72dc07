"""A subscription serving bundle (review of 2026-12-05, as the engineer about to pay): the period is paid whatever the
GPUs do, so the bundle neither stops idle nodes nor lets the service expire when the month ends.

The alicloud provider's renewal_status defaults to Normal (the instance expires and stops at the end of its period;
resource_alicloud_instance.go at 81c43b672: Default RenewNormal, AutoRenew sent only for "AutoRenewal")."""

from __future__ import annotations

import re

import pytest
import yaml

from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

SERVICE = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "serving": {"requests_per_s": 2},
           "constraints": {"regions": ["cn-hangzhou"], "billing": ["subscription"]}}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    path, _summary = write_plan_bundle(Workload.model_validate(SERVICE), tmp_path_factory.mktemp("sub") / "b")
    return path


def test_a_subscription_service_renews_by_default(bundle):
    main = (bundle / "terraform/main.tf").read_text()
    assert re.search(r'instance_charge_type\s*=\s*"PrePaid"', main)
    assert re.search(r"renewal_status\s*=\s*var\.renewal_status", main)
    variables = (bundle / "terraform/variables.tf").read_text()
    block = variables[variables.index('variable "renewal_status"'):]
    assert 'default     = "AutoRenewal"' in block.split("}")[0]
    assert re.search(r"renewal\\?_status decides \(AutoRenewal here", (bundle / "PLAN.md").read_text())


def test_idle_gpus_of_a_subscription_are_not_stopped(bundle):
    assert not (bundle / "idle-stop.sh").exists()
    rules = yaml.safe_load((bundle / "monitoring/alerts.yml").read_text())["groups"][0]["rules"]
    idle = next(r for r in rules if r["alert"] == "GpuIdle")
    assert "action" not in idle["labels"]
    assert "do not stop the instance" in idle["annotations"]["description"]
