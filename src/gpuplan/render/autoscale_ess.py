"""The ESS scaling group of an ECS serving plan (``autoscale/ess/*.tf``): alicloud_ess_scaling_group +
alicloud_ess_scaling_configuration + two alicloud_ess_scaling_rule (+1 / -1 replica) and two alicloud_ess_alarm on a
CloudMonitor custom metric (the waiting-request queue the node pushes), sized from the plan like the HPA
(:func:`gpuplan.render.autoscale.sizing`), and a Classic Load Balancer whose vServer group every instance the group
starts joins (``lb.tf``, render/bundle/cloud/lb.py).
https://registry.terraform.io/providers/aliyun/alicloud/latest/docs/resources/ess_scaling_group

Every user string in HCL goes through ``render.bundle.safe.hcl``. No credentials are written.
"""

from __future__ import annotations

from gpuplan.render.bundle.cloud import lb
from gpuplan.render.bundle.safe import check_id, hcl


def ess_tf(plan: dict, s: dict, *, slug: str, name_tag: str, metric: str, port: int = 8000,
           running_metric: str | None = None, rate_metric: str | None = None, node: dict | None = None) -> dict[str, str]:
    """``s``: the HPA's sizing (render/autoscale.py ``sizing``), counted in instances; ``metric``: the queue-length
    custom metric the node pushes to CloudMonitor; ``running_metric``: the running-sequences metric it pushes too
    (an engine that reports one), ``rate_metric``: its finished requests per second. With them the group adds an
    instance when the running sequences per instance pass the sizing's target, and removes one when the request rate
    per instance stays below half the target utilisation of what one instance serves at the SLA: removing one of
    n >= 2 instances raises the others' rate by n/(n-1) <= 2, so a scale-in never lands above the target. (Half the
    running sequences is no such bound: they grow faster than the rate near capacity.) Without them, an empty queue
    for 10 minutes scales in (an engine whose queue is its only load signal). ``node``: what every instance the group
    starts needs like the plan's nodes (``disk_gib``: the data disk the unit mounts, ``bandwidth_mbit``: the public
    bandwidth its downloads were timed at, ``role``: the RAM role terraform/ creates for OSS reads)."""
    nd = node or {}
    itype = check_id(plan.get("instance_type") or "", "instance type")
    region = check_id(plan.get("region") or "cn-shanghai", "region")
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
    running_vars, scale_in = "", _queue_low(metric)
    if running_metric and rate_metric and s.get("running_target") and s.get("per_replica_rps"):
        target = int(s["running_target"])
        running_vars = (f'variable "running_scale_out" {{\n  description = "running sequences per instance above which '
                        f'one instance is added (the target utilisation of what one instance runs at the SLA)"\n'
                        f'  type        = number\n  default     = {target}\n}}\n\n'
                        f'variable "rate_scale_in" {{\n  description = "requests per second per instance below which '
                        f'one instance is removed (half the target utilisation of one instance\'s SLA rate: the rest '
                        f'then stay under it)"\n  type        = number\n'
                        f'  default     = {scale_in_rate(s)}\n}}\n')
        scale_in = _running_alarms(running_metric, rate_metric)
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
  description = "cloud-init that installs and starts the model server (the bundle's unit) and pushes the custom metrics every minute (README.md)"
  type        = string
  default     = ""
}}

variable "data_disk_gib" {{
  description = "Data disk of every instance (the model cache the unit mounts at {nd.get("data_dir", "/mnt/data")}), as terraform/ sizes it."
  type        = number
  default     = {int(nd.get("disk_gib") or 100)}
}}

variable "public_bandwidth_mbit" {{
  description = "Public bandwidth per instance (the registry, the model hub, mirrors.aliyun.com); 0 = none: then the image and weights must come over the VPC."
  type        = number
  default     = {int(nd.get("bandwidth_mbit") or 100)}
}}

variable "role_name" {{
  description = "RAM role of the instances (terraform/ creates it: {nd.get("role") or "its node role"}), for OSS reads; null = none."
  type        = string
  default     = {hcl(nd["role"]) if nd.get("role") else "null"}
}}

variable "key_name" {{
  description = "SSH key pair of the instances; null = none."
  type        = string
  default     = null
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
{running_vars}'''
    queue_high = _queue_high(metric)
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
  internet_charge_type       = "PayByTraffic"
  internet_max_bandwidth_out = var.public_bandwidth_mbit
  role_name                  = var.role_name
  key_name                   = var.key_name
  active                     = true
  enable                     = true
  force_delete               = true
  tags                       = local.tags

  data_disk {{
    category             = "cloud_essd"
    performance_level    = "{nd.get("disk_level") or "PL1"}"
    size                 = var.data_disk_gib
    delete_with_instance = true
  }}
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

{queue_high}
{scale_in}'''
    outputs = '''output "scaling_group_id" {
  value = alicloud_ess_scaling_group.this.id
}
'''
    return {"autoscale/ess/versions.tf": versions, "autoscale/ess/variables.tf": variables,
            "autoscale/ess/main.tf": main, "autoscale/ess/outputs.tf": outputs, "autoscale/ess/lb.tf": ess_lb_tf(port)}


def ess_lb_tf(port: int) -> str:
    """The group's instances behind one load balancer: the CLB, a vServer group on the serve port (HTTP health check
    of /health) and the attachment that puts every instance the group starts into it."""
    return ("# Every instance the scaling group starts joins the load balancer's vServer group (render/bundle/cloud/lb.py).\n"
            + lb.variables_hcl() + "\n"
            + lb.load_balancer_hcl(name="local.name", vswitch="var.vswitch_ids[0]", port=port) + "\n"
            'resource "alicloud_ess_scalinggroup_vserver_groups" "api" {\n'
            "  scaling_group_id = alicloud_ess_scaling_group.this.id\n\n"
            "  vserver_groups {\n"
            "    loadbalancer_id = alicloud_slb_load_balancer.api.id\n\n"
            "    vserver_attributes {\n"
            "      vserver_group_id = alicloud_slb_server_group.api.id\n"
            f"      port             = {port}\n"
            "      weight           = 100\n"
            "    }\n  }\n}\n\n" + lb.outputs_hcl(port))


def _alarm(name: str, comment: str, *, rule: str, metric: str, period: int, threshold: str, operator: str) -> str:
    """One CloudMonitor alarm on a custom metric the nodes push, averaged over the group, firing a scaling rule after
    two periods."""
    return (f"# {comment}\n"
            f'resource "alicloud_ess_alarm" "{name}" {{\n'
            f'  name                   = "${{local.name}}-{name.replace("_", "-")}"\n'
            "  scaling_group_id       = alicloud_ess_scaling_group.this.id\n"
            f"  alarm_actions          = [alicloud_ess_scaling_rule.{rule}.ari]\n"
            '  metric_type            = "custom"\n'
            f'  metric_name            = "{metric}"\n'
            "  cloud_monitor_group_id = var.cloud_monitor_group_id\n"
            f"  period                 = {period}\n"
            '  statistics             = "Average"\n'
            f"  threshold              = {threshold}\n"
            f'  comparison_operator    = "{operator}"\n'
            "  evaluation_count       = 2\n"
            "}\n")


def _queue_high(metric: str) -> str:
    return _alarm("queue_high", "Scale out when the average waiting-request queue per instance exceeds the target for 2 "
                  "minutes.", rule="out", metric=metric, period=60, threshold="var.queue_scale_out", operator=">")


def _queue_low(metric: str) -> str:
    return _alarm("queue_low", "Scale in when the queue has been empty for 10 minutes.", rule="in", metric=metric,
                  period=300, threshold="0", operator="<=")


def scale_in_rate(s: dict) -> float:
    """Requests per second per instance below which one instance is removed: half the target utilisation of what
    one replica serves at the SLA, over the instances a replica spans (only its head node serves)."""
    u = float(s.get("target_utilization") or 0.0)
    return round(u * float(s["per_replica_rps"]) / 2.0 / max(1, int(s.get("nodes_per_replica") or 1)), 3)


def _running_alarms(metric: str, rate: str) -> str:
    return (_alarm("running_high", "Scale out when the running sequences per instance pass the SLA load for 2 minutes "
                   "(the queue stays empty until an\n# engine's batch limit is reached, above the SLA).", rule="out",
                   metric=metric, period=60, threshold="var.running_scale_out", operator=">") + "\n"
            + _alarm("rate_low", "Scale in when the requests per second per instance stay below half the target rate "
                     "for 10 minutes: removing one of\n# n >= 2 instances raises the others' rate by n/(n-1) <= 2.",
                     rule="in", metric=rate, period=300, threshold="var.rate_scale_in", operator="<"))
