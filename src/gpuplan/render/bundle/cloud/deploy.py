"""Deployable definitions for the platform plans: Function Compute (Serverless Devs ``s.yaml`` and Terraform)
and PAI-EAS (service JSON), each with the plan's GPU, image and scaling limits. ACK plans get their Deployment and
HPA from k8s.py and autoscale.py.

Function Compute 3.0: Serverless Devs fc3 component fields (devsapp/fc3 __tests__/e2e/scaling/s2.yaml: gpuConfig
{gpuMemorySize, gpuType}, customContainerConfig {image, port}, provisionConfig {defaultTarget},
concurrencyConfig {reservedConcurrency}; src/schema.json: triggers, healthCheckConfig, diskSize 512|10240,
instanceConcurrency) and the alicloud provider's alicloud_fcv3_function / _trigger / _provision_config /
_concurrency_config (provider docs, v1.228.0+; memory_size 64-32768 MB, gpu_type fc.gpu.tesla.1|ampere.1|ada.1).
Both files carry the same numbers, the plan's (``function``: GPU type and memory, vCPU, memory), which the planner
keeps within what the CreateFunction API accepts (platforms.yaml ``function_limits``: memory 128 MB-32 GB, at most
4 GB per vCPU); ``gpuplan check`` refuses a bundle whose two files differ or leave those limits.
Minimum instances 0 is scale-to-zero (no provision config); reserved concurrency = maximum instances x
instance concurrency caps the instances FC may start. Provisioned instances are offered for the Ada series only
(https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/product-overview/instance-types-and-usage-modes).

PAI-EAS: the JSON deployment file (https://www.alibabacloud.com/help/en/pai/user-guide/parameters-of-model-services:
metadata {name, instance}, cloud.computing.instances [{type}], containers [{image, script, port}]) and the
autoscaler {min, max, scaleStrategies [{metricName: qps, threshold}]} (EAS CreateServiceAutoScaler API,
https://www.alibabacloud.com/help/en/pai/user-guide/enable-or-disable-the-horizontal-auto-scaling-feature).
"""

from __future__ import annotations

import json
import math
import re

import yaml

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.images import APP_DIR, image_ref
from gpuplan.render.bundle.safe import hcl

FC_DISK_MB = 10240                 # the larger of FC's two disk sizes (512 or 10240 MB)
FC_MAX_CONCURRENCY = 100           # fc3 schema: instanceConcurrency 1-100
FC_TIMEOUT_S = 600                 # per request; covers a cold start (image pull and weight loading)
FC_PROVISIONED_TYPES = ("fc.gpu.ada.1",)
# Function Compute and PAI-EAS load the weights from your OSS bucket, mounted read-only here: staged once in the
# region (issue 28), not downloaded again at every cold start (FC ossMountConfig; EAS "storage", Alibaba Cloud help
# "Mount storage to services", https://help.aliyun.com/zh/pai/mount-storage-to-services).
MODEL_MOUNT = "/mnt/models"
OSS_BUCKET_PLACEHOLDER = "your-bucket"
HEALTH = {"initial_delay_s": 120, "period_s": 10, "failure_threshold": 60}   # up to 12 minutes to load weights


def _peak_rps(plan: dict) -> float:
    segments = (plan.get("traffic") or {}).get("segments") or []
    return max([float(s.get("requests_per_s") or 0.0) for s in segments] or [0.0])


def fc_limits(c: Ctx, plan: dict) -> dict:
    """GPU type and memory, vCPU, memory, instance concurrency and the minimum and maximum instances."""
    fn = plan.get("function") or {}
    per_instance = float((plan.get("serverless") or {}).get("per_instance_requests_per_s")
                         or (plan.get("performance") or {}).get("max_requests_per_s") or 0.0)
    min_instances = int(fn.get("min_instances") or 0)
    needed = math.ceil(_peak_rps(plan) / per_instance) if per_instance > 0 else 1
    max_instances = max(1, min_instances, needed)
    concurrency = max(1, min(FC_MAX_CONCURRENCY, c.max_num_seqs))
    return {"gpu_type": str(fn.get("gpu_type") or c.instance_type), "gpu_memory_mb": int(fn.get("gpu_memory_mb") or 16384),
            "vcpu": float(fn.get("vcpu") or 4), "memory_mb": int(fn.get("memory_mb") or 16384),
            "min_instances": min_instances, "idle_mode": bool(fn.get("idle_mode")), "max_instances": max_instances,
            "instance_concurrency": concurrency, "reserved_concurrency": max_instances * concurrency}


def _fc_env(c: Ctx) -> dict:
    return {"MODEL_HUB": c.hub, "API_KEY": "${env('API_KEY', '')}", "HF_TOKEN": "${env('HF_TOKEN', '')}",
            "MODEL_DIR": MODEL_MOUNT}


def fc_s_yaml(c: Ctx, plan: dict) -> str:
    lim = fc_limits(c, plan)
    props: dict = {
        "region": "${vars.region}", "functionName": c.slug, "description": f"gpuplan {c.slug}",
        "runtime": "custom-container", "handler": "index.handler", "timeout": FC_TIMEOUT_S,
        "cpu": lim["vcpu"], "memorySize": lim["memory_mb"], "diskSize": FC_DISK_MB,
        "instanceConcurrency": lim["instance_concurrency"],
        "gpuConfig": {"gpuType": lim["gpu_type"], "gpuMemorySize": lim["gpu_memory_mb"]},
        "customContainerConfig": {
            "image": "${vars.image}", "port": c.serve_port,
            "healthCheckConfig": {"httpGetUrl": "/health", "initialDelaySeconds": HEALTH["initial_delay_s"],
                                  "periodSeconds": HEALTH["period_s"], "timeoutSeconds": 3,
                                  "failureThreshold": HEALTH["failure_threshold"], "successThreshold": 1}},
        "environmentVariables": _fc_env(c),
        "concurrencyConfig": {"reservedConcurrency": lim["reserved_concurrency"]},
        "triggers": [{"triggerName": "http", "triggerType": "http", "qualifier": "LATEST",
                      "triggerConfig": {"authType": "anonymous", "methods": ["GET", "POST"]}}],
    }
    if lim["min_instances"] > 0 and lim["gpu_type"] in FC_PROVISIONED_TYPES:
        props["provisionConfig"] = {"defaultTarget": lim["min_instances"], "alwaysAllocateCPU": False,
                                    "alwaysAllocateGPU": not lim["idle_mode"]}
    elif lim["min_instances"] > 0:
        props["scalingConfig"] = {"minInstances": lim["min_instances"]}
    props["ossMountConfig"] = {"mountPoints": [{
            "bucketName": "${env('MODEL_OSS_BUCKET')}", "bucketPath": "${env('MODEL_OSS_PATH', '/')}",
        "endpoint": f"http://oss-{c.region}-internal.aliyuncs.com", "mountDir": MODEL_MOUNT, "readOnly": True}]}
    props["role"] = "${env('FC_ROLE_ARN')}"
    doc = {"edition": "3.0.0", "name": c.slug, "access": "default",
           "vars": {"region": c.region, "image": f"${{env('IMAGE', '{image_ref(c)}')}}"},
           "resources": {c.slug.replace("-", "_"): {"component": "fc3", "props": props}}}
    policy = ("scale-to-zero: no instance runs (or bills) without requests" if lim["min_instances"] == 0 else
              f"keep-warm: {lim['min_instances']} instance(s) always there"
              f"{' (idle mode: an idle GPU bills at the idle rate)' if lim['idle_mode'] else ''}")
    head = (f"# Serverless Devs (fc3) definition of the Function Compute plan for {c.slug}: {lim['gpu_type']} with "
            f"{lim['gpu_memory_mb']} MB of GPU memory, {policy}, at most {lim['max_instances']} instance(s) "
            f"(reservedConcurrency = {lim['max_instances']} x instanceConcurrency {lim['instance_concurrency']}).\n"
            "# Deploy: docker build/push the Dockerfile's image (IMAGE), then `s deploy` (credentials: `s config add`).\n"
            "# API_KEY (optional, requires `Authorization: Bearer` on every request) and HF_TOKEN come from your\n"
            "# environment at deploy time; nothing secret is written here.\n")
    head += (f"# The weights ({(c.model_bytes or 0) / 1e9:.0f} GB) are staged once in your OSS bucket and mounted read-only at "
             f"{MODEL_MOUNT} (MODEL_DIR): upload them (PLAN.md) and set MODEL_OSS_BUCKET, MODEL_OSS_PATH and FC_ROLE_ARN (a "
             "RAM role that may read the bucket).\n")
    return head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def fc_terraform(c: Ctx, plan: dict) -> dict[str, str]:
    lim = fc_limits(c, plan)
    versions = ('terraform {\n  required_version = ">= 1.3"\n  required_providers {\n    alicloud = {\n'
                '      source  = "aliyun/alicloud"\n      version = ">= 1.230.0"\n    }\n  }\n}\n\n'
                'provider "alicloud" {\n  region = var.region\n}\n')
    variables = (f'variable "region" {{\n  type    = string\n  default = {hcl(c.region)}\n}}\n\n'
                 f'variable "image" {{\n  description = "The Dockerfile\'s image in ACR, same region (docker build/push, PLAN.md)."\n'
                 f'  type        = string\n  default     = {hcl(image_ref(c))}\n}}\n\n'
                 'variable "api_key" {\n  description = "Optional: callers must send Authorization: Bearer <api_key>. '
                 'Set TF_VAR_api_key; empty = open endpoint."\n  type        = string\n  default     = ""\n'
                 '  sensitive   = true\n}\n\n'
                 'variable "hf_token" {\n  description = "Hugging Face token for gated models (TF_VAR_hf_token); never '
                 'written to these files."\n  type        = string\n  default     = ""\n  sensitive   = true\n}\n')
    variables += ('\nvariable "model_oss_bucket" {\n  description = "OSS bucket holding the model files (staged once, '
                  'mounted read-only)."\n  type        = string\n}\n\n'
                  'variable "model_oss_path" {\n  type    = string\n  default = "/"\n}\n\n'
                  'variable "role_arn" {\n  description = "RAM role Function Compute assumes to read the bucket."\n'
                  '  type        = string\n}\n')
    env = [("MODEL_HUB", hcl(c.hub)), ("API_KEY", "var.api_key"), ("HF_TOKEN", "var.hf_token")]
    env.append(("MODEL_DIR", hcl(MODEL_MOUNT)))
    width = max(len(k) for k, _v in env) + 2
    env_text = "".join(f'    {json.dumps(k):<{width}} = {v}\n' for k, v in env)
    mount = ("\n  role = var.role_arn\n\n  oss_mount_config {\n    mount_points {\n"
             "      bucket_name = var.model_oss_bucket\n      bucket_path = var.model_oss_path\n"
             f"      endpoint    = {hcl(f'http://oss-{c.region}-internal.aliyuncs.com')}\n"
             f"      mount_dir   = {hcl(MODEL_MOUNT)}\n      read_only   = true\n    }}\n  }}\n")
    main = (f"# Function Compute plan for {c.slug}: {lim['gpu_type']}, {lim['gpu_memory_mb']} MB GPU memory, "
            f"{lim['min_instances']}-{lim['max_instances']} instance(s).\n"
            'resource "alicloud_fcv3_function" "this" {\n'
            f"  function_name        = {hcl(c.slug)}\n"
            f"  description          = {hcl('gpuplan ' + c.slug)}\n"
            '  runtime              = "custom-container"\n'
            '  handler              = "index.handler"\n'
            f"  timeout              = {FC_TIMEOUT_S}\n"
            f"  cpu                  = {lim['vcpu']:g}\n"
            f"  memory_size          = {lim['memory_mb']}\n"
            f"  disk_size            = {FC_DISK_MB}\n"
            f"  instance_concurrency = {lim['instance_concurrency']}\n"
            "\n  gpu_config {\n"
            f"    gpu_type        = {hcl(lim['gpu_type'])}\n"
            f"    gpu_memory_size = {lim['gpu_memory_mb']}\n  }}\n\n"
            "  custom_container_config {\n    image = var.image\n"
            f"    port  = {c.serve_port}\n\n    health_check_config {{\n"
            '      http_get_url          = "/health"\n'
            f"      initial_delay_seconds = {HEALTH['initial_delay_s']}\n"
            f"      period_seconds        = {HEALTH['period_s']}\n"
            "      timeout_seconds       = 3\n"
            f"      failure_threshold     = {HEALTH['failure_threshold']}\n"
            "      success_threshold     = 1\n    }\n  }\n\n"
            f"  environment_variables = {{\n{env_text}  }}\n" + mount + "}\n\n"
            "# At most max instances: reserved concurrency = max instances x instance concurrency.\n"
            'resource "alicloud_fcv3_concurrency_config" "this" {\n'
            "  function_name        = alicloud_fcv3_function.this.function_name\n"
            f"  reserved_concurrency = {lim['reserved_concurrency']}\n}}\n\n"
            'resource "alicloud_fcv3_trigger" "http" {\n'
            "  function_name = alicloud_fcv3_function.this.function_name\n"
            '  trigger_name  = "http"\n  trigger_type  = "http"\n  qualifier     = "LATEST"\n'
            '  trigger_config = jsonencode({\n    authType = "anonymous"\n    methods  = ["GET", "POST"]\n  })\n}\n')
    if lim["min_instances"] > 0 and lim["gpu_type"] in FC_PROVISIONED_TYPES:
        main += ('\n# Keep-warm: this many instances stay provisioned.\n'
                 'resource "alicloud_fcv3_provision_config" "this" {\n'
                 "  function_name       = alicloud_fcv3_function.this.function_name\n"
                 '  qualifier           = "LATEST"\n'
                 f"  target              = {lim['min_instances']}\n"
                 f"  always_allocate_gpu = {'false' if lim['idle_mode'] else 'true'}\n"
                 "  always_allocate_cpu = false\n}\n")
    elif lim["min_instances"] == 0:
        main += "\n# Scale-to-zero: no provision config, so no instance runs (or bills) without requests.\n"
    outputs = ('output "url" {\n  description = "The public HTTP endpoint (OpenAI-compatible under /v1)."\n'
               "  value       = alicloud_fcv3_trigger.http.http_trigger[0].url_internet\n}\n")
    return {"function-compute/terraform/versions.tf": versions, "function-compute/terraform/variables.tf": variables,
            "function-compute/terraform/main.tf": main, "function-compute/terraform/outputs.tf": outputs}


def eas_name(slug: str) -> str:
    """EAS service names: lowercase letters, digits and underscores."""
    name = re.sub(r"[^a-z0-9_]", "_", slug.lower())
    return name if len(name) >= 3 else f"{name}_svc"


def eas_service(c: Ctx, plan: dict, workload) -> dict:
    from gpuplan.render.autoscale import sizing
    from gpuplan.render.bundle.serving import deployed_script

    s = sizing(plan, workload)
    script = deployed_script(c)
    command = f"python3 {APP_DIR}/{script}" if script.endswith(".py") else f"bash {APP_DIR}/{script}"
    return {
        "metadata": {"name": eas_name(c.slug), "instance": max(s["min_replicas"], int(plan.get("replicas") or 1))},
        "cloud": {"computing": {"instances": [{"type": c.instance_type}]}},
        "containers": [{"image": image_ref(c), "script": command, "port": c.serve_port,
                        "env": [{"name": "MODEL_DIR", "value": MODEL_MOUNT}, {"name": "MODEL_HUB", "value": c.hub}]}],
        "storage": [{"mount_path": MODEL_MOUNT,
                     "oss": {"path": f"oss://{OSS_BUCKET_PLACEHOLDER}/models/{c.slug}/", "readOnly": True}}],
        "autoscaler": {"min": s["min_replicas"], "max": s["max_replicas"],
                       # EAS aims at qps / threshold instances: the plan's target utilisation of one instance's
                       # rate at the SLA, the load its replicas were sized at (the full rate left no headroom)
                       "scaleStrategies": [{"metricName": "qps", "threshold": max(
                           0.1, round(s["per_replica_rps"] * s["target_utilization"], 2))}]},
    }


def files(c: Ctx, plan: dict, workload) -> dict[str, str]:
    if c.training:
        return {}
    if c.platform == "function-compute":
        return {"function-compute/s.yaml": fc_s_yaml(c, plan), **fc_terraform(c, plan)}
    if c.platform == "pai-eas":
        return {"pai-eas/service.json": json.dumps(eas_service(c, plan, workload), indent=2, ensure_ascii=False) + "\n"}
    return {}
