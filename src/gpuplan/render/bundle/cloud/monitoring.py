"""Monitoring files: Prometheus scrape config for the DCGM and node exporters, alert rules and a
Grafana dashboard, plus the DCGM exporter counter list (its default list with ECC counters on).

Metric names: DCGM exporter counters (https://github.com/NVIDIA/dcgm-exporter/blob/main/etc/default-counters.csv;
the ECC counters are commented out there, hence our own list) and node exporter's filesystem
metrics (https://github.com/prometheus/node_exporter). Rule format:
https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/ .
"""

from __future__ import annotations

import json

import yaml

from gpuplan import i18n
from gpuplan.i18n import N_
from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.node.weights import serves_engine

DCGM_COUNTERS = """\
# DCGM exporter counters for gpuplan (format: DCGM field, Prometheus type, help).
# The exporter's default list plus the volatile ECC counters the alert rules use.
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.
"""

IDLE_UTIL_PERCENT = 10
IDLE_MINUTES = 30

# Serving-engine metrics, exact names (launch-notes sections 7.1 and 8):
# vLLM V1 docs/design/metrics.md + vllm/v1/metrics/loggers.py (vllm-project/vllm@0328b592a3d3);
# SGLang python/sglang/srt/metrics/collector.py (sgl-project/sglang@93d04878cfb9, needs --enable-metrics).
# vLLM renamed vllm:time_per_output_token_seconds to vllm:inter_token_latency_seconds in 0.11 and
# vllm:gpu_cache_usage_perc to vllm:kv_cache_usage_perc; the rules query both names (`or`), so they
# work on the pinned image and on current releases.
VLLM = {"waiting": "vllm:num_requests_waiting", "running": "vllm:num_requests_running",
        "ttft": "vllm:time_to_first_token_seconds", "tpot": "vllm:inter_token_latency_seconds",
        "tpot_old": "vllm:time_per_output_token_seconds", "kv": "vllm:kv_cache_usage_perc",
        "kv_old": "vllm:gpu_cache_usage_perc", "generation_tokens": "vllm:generation_tokens_total"}
SGLANG = {"waiting": "sglang:num_queue_reqs", "running": "sglang:num_running_reqs",
          "ttft": "sglang:time_to_first_token_seconds", "tpot": "sglang:inter_token_latency_seconds",
          "tpot_old": "sglang:time_per_output_token_seconds", "kv": "sglang:token_usage"}
# The image server's own series (serve_images.py /metrics).
IMAGE = {"waiting": "gpuplan_image_requests_waiting", "running": "gpuplan_image_requests_running",
         "latency": "gpuplan_image_request_seconds", "requests": "gpuplan_image_requests_total"}
ENGINE_METRICS = {"vllm": VLLM, "sglang": SGLANG}
ENGINE_TITLES = {"vllm": "vLLM", "sglang": "SGLang", "image-server": "image server"}
DEFAULT_IMAGE_LATENCY_S = 60.0   # time per image request when the workload states no TTFT target
# Defaults when the workload states no SLA (the serving section's ttft_ms / tpot_ms).
DEFAULT_TTFT_S = 2.0
DEFAULT_TPOT_S = 0.1
LATENCY_QUANTILE = 0.95


# Prometheus template expressions the alert texts show, as named placeholders of their msgids
PROM = {"value": "{{ $value }}", "duration": "{{ $value | humanizeDuration }}", "instance": "{{ $labels.instance }}",
        "gpu": "{{ $labels.gpu }}", "mountpoint": "{{ $labels.mountpoint }}", "job": "{{ $labels.job }}"}


def say(c: Ctx, text: str, **values: object) -> str:
    """An alert annotation or panel title in the bundle's language (alert names, expressions and labels stay)."""
    return i18n.tr(text, c.lang).format(**PROM, **values)


def _p95(metric: str) -> str:
    return (f"histogram_quantile({LATENCY_QUANTILE}, sum by (le, instance) "
            f"(rate({metric}_bucket[5m])))")


def served_engine(c: Ctx) -> str | None:
    """The one server Prometheus scrapes: the deployed LLM engine, the image server, or None (training, batch)."""
    if c.training:
        return None
    if serves_engine(c):
        return c.engine
    return "image-server" if c.model_kind == "diffusion" and c.online else None


def serving_rules(c: Ctx) -> list[dict]:
    """Alerts on TTFT, TPOT (p95 against the SLA) and the waiting queue of the deployed engine only (an alert on
    an engine that is not running would never clear)."""
    engine = served_engine(c)
    if engine == "image-server":
        return image_rules(c)
    if engine not in ENGINE_METRICS:
        return []
    m = ENGINE_METRICS[engine]
    prefix = "Vllm" if engine == "vllm" else "Sglang"
    ttft = c.sla_ttft_s or DEFAULT_TTFT_S
    tpot = c.sla_tpot_s or DEFAULT_TPOT_S
    queue = max(1, c.max_num_seqs)
    return [
        {"alert": f"{prefix}TtftP95High",
         "expr": f"{_p95(m['ttft'])} > {ttft:g}",
         "for": "5m", "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("p95 time to first token {duration} on {instance} (SLA {sla} s)"),
                                        sla=f"{ttft:g}"),
                         "description": say(c, N_("Add a replica (see autoscale/) or lower max-num-seqs; long prompts "
                                                  "raise TTFT."))}},
        {"alert": f"{prefix}TpotP95High",
         "expr": f"({_p95(m['tpot'])} or {_p95(m['tpot_old'])}) > {tpot:g}",
         "for": "5m", "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("p95 time per output token {duration} on {instance} (SLA {sla} s)"),
                                        sla=f"{tpot:g}"),
                         "description": say(c, N_("The batch is too large for the TPOT target: add a replica or lower "
                                                  "max-num-seqs."))}},
        {"alert": f"{prefix}QueueLong",
         "expr": f"max by (instance) ({m['waiting']}) > {queue}",
         "for": "5m", "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("{value} requests waiting on {instance}")),
                         "description": say(c, N_("More than {queue} requests (one full batch) wait for a slot: scale "
                                                  "out."), queue=queue)}},
    ]


def image_rules(c: Ctx) -> list[dict]:
    """The image server's p95 request time against the TTFT target (an image arrives whole) and its queue."""
    target = c.sla_ttft_s or DEFAULT_IMAGE_LATENCY_S
    queue = max(1, c.copies_per_node)
    return [
        {"alert": "ImageLatencyP95High",
         "expr": f"{_p95(IMAGE['latency'])} > {target:g}",
         "for": "5m", "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("p95 image request time {duration} on {instance} (target {sla} s)"),
                                        sla=f"{target:g}"),
                         "description": say(c, N_("Requests wait for a free pipeline: add a replica or lower the "
                                                  "steps or image size."))}},
        {"alert": "ImageQueueLong",
         "expr": f"max by (instance) ({IMAGE['waiting']}) > {queue}",
         "for": "5m", "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("{value} requests waiting on {instance}")),
                         "description": say(c, N_("More than {queue} requests (one full batch) wait for a slot: scale "
                                                  "out."), queue=queue)}},
    ]


def memory_alert_ratio(c: Ctx) -> float:
    """Framebuffer-used share that counts as 'near full': above what the job is planned to use
    (a serving engine reserves gpu_memory_utilization of the GPU up front)."""
    planned = c.gpu_mem_util if not c.training else 0.9
    return round(min(max(planned + 0.05, 0.9), 0.99), 2)


def targets(c: Ctx, port: int, ranks0: bool = False) -> list[str]:
    """host:port per node; ``ranks0``: only the rank-0 node of each replica (the one running the API)."""
    step = c.job_nodes if ranks0 else 1
    return [f"{c.slug}-{i}:{port}" for i in range(0, c.nodes, step)]


def prometheus_config(c: Ctx) -> dict:
    engine = served_engine(c)
    engines = []
    if engine:
        # The deployed server only: vLLM serves /metrics on its API port, SGLang with --enable-metrics
        # (serve-sglang.sh), the image server on its port. One endpoint per replica's rank-0 node.
        engines = [{"job_name": engine, "metrics_path": "/metrics",
                    "static_configs": [{"targets": targets(c, c.serve_port, ranks0=True),
                                        "labels": {"instance_type": c.instance_type}}]}]
    return {
        "global": {"scrape_interval": "15s", "evaluation_interval": "30s",
                   "external_labels": {"gpuplan_job": c.slug}},
        "rule_files": ["alerts.yml"],
        "scrape_configs": [
            {"job_name": "dcgm-exporter", "static_configs": [{"targets": targets(c, c.ports["dcgm_exporter"]),
                                                               "labels": {"instance_type": c.instance_type}}]},
            {"job_name": "node-exporter", "static_configs": [{"targets": targets(c, c.ports["node_exporter"]),
                                                               "labels": {"instance_type": c.instance_type}}]},
            *engines,
        ],
    }


def alert_rules(c: Ctx) -> dict:
    ratio = memory_alert_ratio(c)
    mounts = c.data_dir + ("|" + c.shared_dir if c.shared_kind else "")
    # a subscription is paid for its period whatever the GPUs do: stopping one saves nothing and takes a replica away
    prepaid = c.billing == "subscription"
    rules = [
        {"alert": "GpuIdle",
         "expr": f"max by (instance) (DCGM_FI_DEV_GPU_UTIL) < {IDLE_UTIL_PERCENT}",
         "for": f"{IDLE_MINUTES}m",
         "labels": {"severity": "warning"} if prepaid else {"severity": "warning", "action": "stop"},
         "annotations": {
             "summary": say(c, N_("GPUs on {instance} under {share} busy for {minutes} minutes"),
                            share=f"{IDLE_UTIL_PERCENT}%", minutes=IDLE_MINUTES),
             "description": say(c, N_("The subscription is paid for its period whether the GPUs work or not: do not "
                                      "stop the instance (it saves nothing and takes a replica away). Idle capacity "
                                      "means the plan is larger than the traffic: renew fewer instances.")) if prepaid
             else say(c, N_("You are paying for idle GPUs. Stop the instance, or set IDLE_STOP_ENABLED=1 for "
                            "idle-stop.sh (cron) to power it off automatically."))}},
        {"alert": "GpuXidError",
         "expr": "max by (instance, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0",
         "for": "0m",
         "labels": {"severity": "critical"},
         "annotations": {
             "summary": say(c, N_("XID error {value} on GPU {gpu} of {instance}")),
             "description": say(c, N_("Look the code up in NVIDIA's XID catalogue; 48, 63, 64, 74, 79 and 94/95 usually "
                                      "need a reboot or a hardware ticket."))}},
        {"alert": "GpuEccDoubleBitErrors",
         "expr": "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
         "for": "0m",
         "labels": {"severity": "critical"},
         "annotations": {"summary": say(c, N_("Uncorrectable ECC errors on GPU {gpu} of {instance}")),
                         "description": say(c, N_("Checkpoint and move the job; open a ticket if it repeats."))}},
        {"alert": "GpuEccSingleBitErrorsHigh",
         "expr": "increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[1h]) > 100",
         "for": "0m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("Many corrected ECC errors on GPU {gpu} of {instance}")),
                         "description": say(c, N_("Corrected errors are harmless one by one; a burst often precedes a "
                                                  "failure."))}},
        {"alert": "GpuMemoryNearFull",
         "expr": f"max by (instance, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) > {ratio}",
         "for": "10m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("GPU {gpu} of {instance} memory above {share}"), share=f"{ratio:.0%}"),
                         "description": say(c, N_("The job uses more GPU memory than planned: expect out-of-memory "
                                                  "errors."))}},
        {"alert": "DiskNearlyFull",
         "expr": (f'node_filesystem_avail_bytes{{mountpoint=~"/|{mounts}",fstype!~"tmpfs|overlay"}} '
                  f'/ node_filesystem_size_bytes{{mountpoint=~"/|{mounts}",fstype!~"tmpfs|overlay"}} < 0.1'),
         "for": "10m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("{mountpoint} on {instance} has under {share} free"), share="10%"),
                         "description": say(c, N_("Checkpoints will fail to save; delete old ones or grow the disk."))}},
        {"alert": "ExporterDown",
         "expr": "up == 0",
         "for": "5m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": say(c, N_("{job} on {instance} is not answering"))}},
    ]
    groups = [{"name": f"gpuplan-{c.slug}", "rules": rules}]
    if serving_rules(c):
        groups.append({"name": f"gpuplan-{c.slug}-serving", "rules": serving_rules(c)})
    return {"groups": groups}


def _panel(pid: int, title: str, expr: str, unit: str, x: int, y: int) -> dict:
    return {"id": pid, "type": "timeseries", "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
            "targets": [{"refId": "A", "expr": expr, "legendFormat": "{{instance}} GPU {{gpu}}"}]}


def serving_panels(c: Ctx) -> list[dict]:
    """Latency, queue and cache panels of the deployed server."""
    engine = served_engine(c)
    if engine == "image-server":
        name = ENGINE_TITLES[engine]
        panels = [
            _panel(7, say(c, N_("p95 request time ({engine})"), engine=name), _p95(IMAGE["latency"]), "s", 0, 24),
            _panel(8, say(c, N_("Requests waiting / running ({engine})"), engine=name),
                   f"{IMAGE['waiting']} or {IMAGE['running']}", "short", 12, 24),
        ]
    elif engine in ENGINE_METRICS:
        m, name = ENGINE_METRICS[engine], ENGINE_TITLES[engine]
        kv = f"{m['kv']} or {m['kv_old']}" if "kv_old" in m else m["kv"]
        panels = [
            _panel(7, say(c, N_("p95 time to first token ({engine})"), engine=name), _p95(m["ttft"]), "s", 0, 24),
            _panel(8, say(c, N_("p95 time per output token ({engine})"), engine=name),
                   f"{_p95(m['tpot'])} or {_p95(m['tpot_old'])}", "s", 12, 24),
            _panel(9, say(c, N_("Requests waiting / running ({engine})"), engine=name),
                   f"{m['waiting']} or {m['running']}", "short", 0, 32),
            _panel(10, say(c, N_("KV cache usage ({engine})"), engine=name), kv, "percentunit", 12, 32),
        ]
    else:
        return []
    for p in panels:
        p["targets"][0]["legendFormat"] = "{{instance}}"
    return panels


def grafana_dashboard(c: Ctx) -> dict:
    panels = [
        _panel(1, say(c, N_("GPU utilisation")), "DCGM_FI_DEV_GPU_UTIL", "percent", 0, 0),
        _panel(2, say(c, N_("GPU memory used")), "DCGM_FI_DEV_FB_USED * 1024 * 1024", "bytes", 12, 0),
        _panel(3, say(c, N_("GPU temperature")), "DCGM_FI_DEV_GPU_TEMP", "celsius", 0, 8),
        _panel(4, say(c, N_("GPU power")), "DCGM_FI_DEV_POWER_USAGE", "watt", 12, 8),
        _panel(5, say(c, N_("ECC and XID errors")), "DCGM_FI_DEV_XID_ERRORS or increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])",
               "short", 0, 16),
        _panel(6, say(c, N_("Disk free")), 'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay"}', "bytes", 12, 16),
    ]
    panels[5]["targets"][0]["legendFormat"] = "{{instance}} {{mountpoint}}"
    panels += serving_panels(c)
    return {
        "title": f"gpuplan {c.slug}",
        "uid": f"gpuplan-{c.slug}"[:40],
        "tags": ["gpuplan", "gpu"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus",
                                 "label": "Prometheus", "current": {}, "hide": 0}]},
        "annotations": {"list": []},
        "panels": panels,
    }


def files(c: Ctx) -> dict[str, str]:
    head = f"# Prometheus for {c.slug}: replace the {c.slug}-N host names with the nodes' private IPs (terraform output private_ips).\n"
    return {
        "monitoring/prometheus.yml": head + yaml.safe_dump(prometheus_config(c), sort_keys=False, allow_unicode=True),
        "monitoring/alerts.yml": "# Alert rules for " + c.slug + " (promtool check rules alerts.yml).\n"
                                 + yaml.safe_dump(alert_rules(c), sort_keys=False, allow_unicode=True, width=1000),
        "monitoring/grafana-dashboard.json": json.dumps(grafana_dashboard(c), indent=2, ensure_ascii=False) + "\n",
        "monitoring/dcgm-counters.csv": DCGM_COUNTERS,
    }
