"""Autoscaling files for a serving plan: an ACK HorizontalPodAutoscaler and an ESS scaling group.

- ``autoscale/hpa.yaml``: ``autoscaling/v2`` HPA for the bundle's Deployment (``k8s/deployment.yaml``,
  named by the job slug), min/max replicas from the traffic (off-peak / peak rate over one replica's
  rate). Metric: vLLM's waiting-request queue per pod (``vllm:num_requests_waiting``, exposed to the
  HPA as ``vllm_num_requests_waiting`` by a Prometheus metrics adapter), target = the requests one
  replica can absorb within the TTFT slack, ``mu x (TTFT SLA - TTFT)``; and GPU utilization from the
  DCGM exporter (``DCGM_FI_DEV_GPU_UTIL``) at 80 % as a backstop. Queue length reacts before latency
  degrades; GPU utilization alone saturates early under vLLM's continuous batching.
  https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/ ;
  https://docs.vllm.ai/en/latest/serving/metrics.html
- ``autoscale/ess/*.tf``: alicloud_ess_scaling_group + alicloud_ess_scaling_configuration + two
  alicloud_ess_scaling_rule (+1 / -1) and two alicloud_ess_alarm on a CloudMonitor custom metric
  (the same queue length, pushed by the node), sized like the HPA.
  https://registry.terraform.io/providers/aliyun/alicloud/latest/docs/resources/ess_scaling_group

YAML is built as data and dumped with ``yaml.safe_dump``; every user string in HCL goes through
``render.bundle.safe.hcl``. No credentials are written.
"""

from __future__ import annotations

import math

import yaml

from gpuplan.i18n import tr
from gpuplan.render.bundle.safe import check_id, hcl, slugify

DEFAULT_TTFT_SLACK_S = 2.0
GPU_UTIL_TARGET = 80
QUEUE_SOURCE = "vllm:num_requests_waiting"     # the series vLLM exports (launch-notes 7.1)
QUEUE_METRIC = "vllm_num_requests_waiting"     # its name in the custom metrics API (adapter rule below)
# The waiting-request series of each deployed server: vLLM (launch-notes 7.1), SGLang (collector.py, with
# --enable-metrics), the bundle's image server (serve_images.py).
QUEUE_SOURCES = {"vllm": QUEUE_SOURCE, "sglang": "sglang:num_queue_reqs", "image-server": "gpuplan_image_requests_waiting"}


def queue_source(engine: str = "vllm") -> str:
    return QUEUE_SOURCES.get(engine, QUEUE_SOURCE)


def queue_metric(engine: str = "vllm") -> str:
    """The series' name in the custom metrics API (':' is not allowed there)."""
    return queue_source(engine).replace(":", "_")


def _slug(workload) -> str:
    model = workload.model if isinstance(workload.model, str) else "model"
    return slugify(workload.name or model.rsplit("/", 1)[-1])


def sizing(plan: dict, workload, copies: int | None = None) -> dict:
    """min/max replicas and the queue target from the plan's traffic and per-replica rate. A replica is one
    instance (its ``parallel.dp`` model copies) unless ``copies`` says how many model copies one scaled unit
    holds (a Kubernetes pod per copy: 1)."""
    from gpuplan.plan.traffic import replicas_for, traffic_profile

    perf = plan.get("performance") or {}
    dp = int((plan.get("parallel") or {}).get("dp") or 1)
    per_unit = dp if copies is None else max(1, copies)
    mu = float(perf.get("max_requests_per_s") or 0.0) * per_unit
    traffic = traffic_profile(workload.serving)
    peak = max(1, int(plan.get("replicas") or 1)) * max(1, dp // per_unit)
    if traffic is not None and mu > 0:
        lo = replicas_for(traffic.offpeak_rps, mu)
        hi = max(peak, replicas_for(traffic.peak_rps, mu))
    else:
        lo, hi = 1, peak
    ttft = float(perf.get("ttft_s") or 0.0)
    sla = workload.serving.ttft_ms / 1000.0 if workload.serving and workload.serving.ttft_ms else None
    slack = max(0.5, (sla - ttft) if sla else DEFAULT_TTFT_SLACK_S)
    queue = max(1, math.floor(mu * slack)) if mu > 0 else 4
    lo = min(lo, hi)
    hi = max(hi, lo + 1)   # min = max would leave the HPA nothing to scale
    return {"min_replicas": lo, "max_replicas": hi, "queue_target": queue, "per_replica_rps": mu,
            "ttft_slack_s": slack, "nodes_per_replica": int((plan.get("parallel") or {}).get("nodes_per_replica") or 1)}


def hpa_manifest(plan: dict, workload, engine: str = "vllm", copies: int | None = None) -> dict:
    s = sizing(plan, workload, copies)
    slug = _slug(workload)
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": slug, "labels": {"app.kubernetes.io/name": slug, "app.kubernetes.io/managed-by": "gpuplan"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": slug},
            "minReplicas": s["min_replicas"], "maxReplicas": s["max_replicas"],
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": queue_metric(engine)},
                                          "target": {"type": "AverageValue", "averageValue": str(s["queue_target"])}}},
                {"type": "Pods", "pods": {"metric": {"name": "DCGM_FI_DEV_GPU_UTIL"},
                                          "target": {"type": "AverageValue", "averageValue": str(GPU_UTIL_TARGET)}}},
            ],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 600,
                              "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
            },
        },
    }


def adapter_rules(engine: str = "vllm") -> dict:
    """prometheus-adapter rule (https://github.com/kubernetes-sigs/prometheus-adapter/blob/master/docs/config.md):
    the per-pod waiting-request series (vLLM ``vllm:num_requests_waiting``) as a custom metric
    (``vllm_num_requests_waiting``)."""
    source, metric = queue_source(engine), queue_metric(engine)
    return {"rules": [{
        "seriesQuery": f'{{__name__="{source}",namespace!="",pod!=""}}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "name": {"matches": f"^{source}$", "as": metric},
        "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
    }]}


def _ess_tf(plan: dict, workload, engine: str = "vllm") -> dict[str, str]:
    s = sizing(plan, workload)
    slug = _slug(workload)
    itype = check_id(plan.get("instance_type") or "", "instance type")
    region = check_id(plan.get("region") or "cn-shanghai", "region")
    name_tag = workload.name or slug
    versions = f'''# ESS scaling group for {slug}: {s["min_replicas"]}-{s["max_replicas"]} x {itype} in {region}.
# The alicloud provider reads credentials from the environment (ALIBABA_CLOUD_ACCESS_KEY_ID /
# ALIBABA_CLOUD_ACCESS_KEY_SECRET) or a RAM role; never write keys into these files.
terraform {{
  required_version = ">= 1.3"
  required_providers {{
    alicloud = {{
      source  = "aliyun/alicloud"
      version = ">= 1.223.0"
    }}
  }}
}}

provider "alicloud" {{
  region = var.region
}}
'''
    variables = f'''variable "region" {{
  type    = string
  default = {hcl(region)}
}}

variable "instance_type" {{
  type    = string
  default = {hcl(itype)}
}}

variable "vswitch_ids" {{
  description = "vSwitches (zones) the group may launch GPU instances in"
  type        = list(string)
}}

variable "security_group_id" {{
  type = string
}}

variable "image_id" {{
  description = "GPU image with the driver installed (see ops advice: image, driver, CUDA)"
  type        = string
}}

variable "user_data" {{
  description = "cloud-init that starts the model server and pushes the queue-length metric"
  type        = string
  default     = ""
}}

variable "cloud_monitor_group_id" {{
  description = "CloudMonitor application group that receives the custom queue-length metric"
  type        = number
}}

variable "min_size" {{
  type    = number
  default = {s["min_replicas"] * s["nodes_per_replica"]}
}}

variable "max_size" {{
  type    = number
  default = {s["max_replicas"] * s["nodes_per_replica"]}
}}

variable "scale_in_step" {{
  description = "instances removed per scale-in (negative: a literal -N in a resource trips some HCL loaders)"
  type        = number
  default     = -{s["nodes_per_replica"]}
}}

variable "queue_scale_out" {{
  description = "waiting requests per instance above which one instance is added"
  type        = number
  default     = {s["queue_target"]}
}}
'''
    main = f'''locals {{
  name = "{slug}"
  tags = {{
    "gpuplan-job"  = {hcl(name_tag)}
    "gpuplan-slug" = "{slug}"
  }}
}}

resource "alicloud_ess_scaling_group" "this" {{
  scaling_group_name = local.name
  min_size           = var.min_size
  max_size           = var.max_size
  default_cooldown   = 300
  vswitch_ids        = var.vswitch_ids
  removal_policies   = ["NewestInstance", "OldestInstance"]
  tags               = local.tags
}}

resource "alicloud_ess_scaling_configuration" "this" {{
  scaling_group_id           = alicloud_ess_scaling_group.this.id
  scaling_configuration_name = local.name
  instance_type              = var.instance_type
  image_id                   = var.image_id
  security_group_id          = var.security_group_id
  system_disk_category       = "cloud_essd"
  system_disk_size           = 100
  user_data                  = var.user_data
  active                     = true
  enable                     = true
  force_delete               = true
  tags                       = local.tags
}}

resource "alicloud_ess_scaling_rule" "out" {{
  scaling_group_id  = alicloud_ess_scaling_group.this.id
  scaling_rule_name = "${{local.name}}-out"
  scaling_rule_type = "SimpleScalingRule"
  adjustment_type   = "QuantityChangeInCapacity"
  adjustment_value  = {s["nodes_per_replica"]}
  cooldown          = 300
}}

resource "alicloud_ess_scaling_rule" "in" {{
  scaling_group_id  = alicloud_ess_scaling_group.this.id
  scaling_rule_name = "${{local.name}}-in"
  scaling_rule_type = "SimpleScalingRule"
  adjustment_type   = "QuantityChangeInCapacity"
  adjustment_value  = var.scale_in_step
  cooldown          = 600
}}

# Scale out when the average waiting-request queue per instance exceeds the target for 2 minutes.
resource "alicloud_ess_alarm" "queue_high" {{
  name                   = "${{local.name}}-queue-high"
  scaling_group_id       = alicloud_ess_scaling_group.this.id
  alarm_actions          = [alicloud_ess_scaling_rule.out.ari]
  metric_type            = "custom"
  metric_name            = "{queue_metric(engine)}"
  cloud_monitor_group_id = var.cloud_monitor_group_id
  period                 = 60
  statistics             = "Average"
  threshold              = var.queue_scale_out
  comparison_operator    = ">"
  evaluation_count       = 2
}}

# Scale in when the queue has been empty for 10 minutes.
resource "alicloud_ess_alarm" "queue_low" {{
  name                   = "${{local.name}}-queue-low"
  scaling_group_id       = alicloud_ess_scaling_group.this.id
  alarm_actions          = [alicloud_ess_scaling_rule.in.ari]
  metric_type            = "custom"
  metric_name            = "{queue_metric(engine)}"
  cloud_monitor_group_id = var.cloud_monitor_group_id
  period                 = 300
  statistics             = "Average"
  threshold              = 0
  comparison_operator    = "<="
  evaluation_count       = 2
}}
'''
    outputs = '''output "scaling_group_id" {
  value = alicloud_ess_scaling_group.this.id
}
'''
    return {"autoscale/ess/versions.tf": versions, "autoscale/ess/variables.tf": variables,
            "autoscale/ess/main.tf": main, "autoscale/ess/outputs.tf": outputs}


def _readme(plan: dict, workload, k8s: bool = True, lang: str = "en", engine: str = "vllm",
            copies: int | None = None) -> str:
    s = sizing(plan, workload)
    pods = sizing(plan, workload, copies)
    values = dict(rps=f"{s['per_replica_rps']:.2f}", min=s["min_replicas"], max=s["max_replicas"],
                  queue_source=queue_source(engine), queue_metric=queue_metric(engine), queue_target=s["queue_target"],
                  slack=f"{s['ttft_slack_s']:.1f}", gpu_util=GPU_UTIL_TARGET)
    pod_values = {**values, "min": pods["min_replicas"], "max": pods["max_replicas"], "queue_target": pods["queue_target"]}
    parts = [
        "# " + tr("Autoscaling", lang) + "\n",
        tr("One replica serves about {rps} requests/s at the SLA; the traffic needs {min} replica(s) off-peak and "
           "{max} at peak.", lang).format(**values) + "\n",
    ]
    bullets = []
    if k8s:
        bullets.append("- " + tr(
            "`hpa.yaml` (ACK): scales the Deployment in `k8s/deployment.yaml` between {min} and {max} pods. Scale-up "
            "metric: waiting requests per pod (the server's `{queue_source}`, exposed as `{queue_metric}` by the rule in "
            "`prometheus-adapter-rules.yaml`) above {queue_target} (= requests/s per replica x {slack} s of TTFT "
            "slack), or GPU utilization above {gpu_util} %. Both need a metrics adapter (ACK: "
            "ack-alibaba-cloud-metrics-adapter or prometheus-adapter) fed by the server's /metrics and the DCGM exporter. "
            "Pair it with the cluster autoscaler on the GPU node pool; a new GPU node takes minutes, so keep "
            "minReplicas for the off-peak rate.", lang).format(**pod_values))
    bullets.append("- " + tr(
        "`ess/` (ECS without Kubernetes): a scaling group of the same size; alarms on the queue length pushed to "
        "CloudMonitor as the custom metric `{queue_metric}` (push the value of `{queue_source}` from each node's "
        "/metrics every minute) add or remove one instance.", lang).format(**values))
    parts.append("\n".join(bullets) + "\n")
    parts.append(tr("Request rate alone is a weaker signal: it ignores prompt length. Queue length reacts before "
                    "TTFT degrades.", lang))
    text = "\n".join(parts) + "\n"
    if not k8s:
        text += "\n" + tr("One replica spans several nodes, so there is no HPA: a one-pod Deployment cannot hold it "
                          "(on ACK, scale a LeaderWorkerSet instead).", lang) + "\n"
    return text


def autoscale_files(plan: dict, workload, *, k8s: bool = True, lang: str = "en", engine: str = "vllm",
                    copies: int | None = None) -> dict[str, str]:
    """Autoscaling files for an ECS/ACK serving plan (empty for training and for FC/EAS, which scale
    natively). ``engine``: the deployed server whose queue drives the scaling; ``copies``: model copies per
    Kubernetes pod (None: one pod per instance)."""
    if (workload.task or "inference") != "inference" or plan.get("platform", "ecs") not in ("ecs", "ack"):
        return {}
    if not k8s:   # multi-node replicas: the ESS group only
        return {"autoscale/README.md": _readme(plan, workload, k8s=False, lang=lang, engine=engine),
                **_ess_tf(plan, workload, engine)}
    hpa = hpa_manifest(plan, workload, engine, copies)
    head = "# HorizontalPodAutoscaler for the Deployment in k8s/deployment.yaml (gpuplan).\n"
    adapter_head = (f"# prometheus-adapter rules: expose {queue_source(engine)} per pod as {queue_metric(engine)} "
                    "for hpa.yaml\n# (helm install prometheus-adapter prometheus-community/prometheus-adapter -f this "
                    "file).\n")
    out = {"autoscale/hpa.yaml": head + yaml.safe_dump(hpa, sort_keys=False, allow_unicode=True),
           "autoscale/prometheus-adapter-rules.yaml": adapter_head + yaml.safe_dump(adapter_rules(engine),
                                                                                     sort_keys=False, width=1000),
           "autoscale/README.md": _readme(plan, workload, lang=lang, engine=engine, copies=copies)}
    out.update(_ess_tf(plan, workload, engine))
    return out
