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

from gpuplan.render.bundle.context import Ctx

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


def memory_alert_ratio(c: Ctx) -> float:
    """Framebuffer-used share that counts as 'near full': above what the job is planned to use
    (a serving engine reserves gpu_memory_utilization of the GPU up front)."""
    planned = c.gpu_mem_util if not c.training else 0.9
    return round(min(max(planned + 0.05, 0.9), 0.99), 2)


def targets(c: Ctx, port: int) -> list[str]:
    return [f"{c.slug}-{i}:{port}" for i in range(c.nodes)]


def prometheus_config(c: Ctx) -> dict:
    return {
        "global": {"scrape_interval": "15s", "evaluation_interval": "30s",
                   "external_labels": {"gpuplan_job": c.slug}},
        "rule_files": ["alerts.yml"],
        "scrape_configs": [
            {"job_name": "dcgm-exporter", "static_configs": [{"targets": targets(c, c.ports["dcgm_exporter"]),
                                                               "labels": {"instance_type": c.instance_type}}]},
            {"job_name": "node-exporter", "static_configs": [{"targets": targets(c, c.ports["node_exporter"]),
                                                               "labels": {"instance_type": c.instance_type}}]},
        ],
    }


def alert_rules(c: Ctx) -> dict:
    ratio = memory_alert_ratio(c)
    mounts = c.data_dir + ("|" + c.shared_dir if c.shared_kind else "")
    rules = [
        {"alert": "GpuIdle",
         "expr": f"max by (instance) (DCGM_FI_DEV_GPU_UTIL) < {IDLE_UTIL_PERCENT}",
         "for": f"{IDLE_MINUTES}m",
         "labels": {"severity": "warning", "action": "stop"},
         "annotations": {
             "summary": "GPUs on {{ $labels.instance }} under 10% busy for 30 minutes",
             "description": "You are paying for idle GPUs. Stop the instance, or set IDLE_STOP_ENABLED=1 for "
                            "idle-stop.sh (cron) to power it off automatically."}},
        {"alert": "GpuXidError",
         "expr": "max by (instance, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0",
         "for": "0m",
         "labels": {"severity": "critical"},
         "annotations": {
             "summary": "XID error {{ $value }} on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
             "description": "Look the code up in NVIDIA's XID catalogue; 48, 63, 64, 74, 79 and 94/95 usually "
                            "need a reboot or a hardware ticket."}},
        {"alert": "GpuEccDoubleBitErrors",
         "expr": "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
         "for": "0m",
         "labels": {"severity": "critical"},
         "annotations": {"summary": "Uncorrectable ECC errors on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
                         "description": "Checkpoint and move the job; open a ticket if it repeats."}},
        {"alert": "GpuEccSingleBitErrorsHigh",
         "expr": "increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL[1h]) > 100",
         "for": "0m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": "Many corrected ECC errors on GPU {{ $labels.gpu }} of {{ $labels.instance }}",
                         "description": "Corrected errors are harmless one by one; a burst often precedes a failure."}},
        {"alert": "GpuMemoryNearFull",
         "expr": f"max by (instance, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) > {ratio}",
         "for": "10m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": "GPU {{ $labels.gpu }} of {{ $labels.instance }} memory above " + f"{ratio:.0%}",
                         "description": "The job uses more GPU memory than planned: expect out-of-memory errors."}},
        {"alert": "DiskNearlyFull",
         "expr": (f'node_filesystem_avail_bytes{{mountpoint=~"/|{mounts}",fstype!~"tmpfs|overlay"}} '
                  f'/ node_filesystem_size_bytes{{mountpoint=~"/|{mounts}",fstype!~"tmpfs|overlay"}} < 0.1'),
         "for": "10m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": "{{ $labels.mountpoint }} on {{ $labels.instance }} has under 10% free",
                         "description": "Checkpoints will fail to save; delete old ones or grow the disk."}},
        {"alert": "ExporterDown",
         "expr": "up == 0",
         "for": "5m",
         "labels": {"severity": "warning"},
         "annotations": {"summary": "{{ $labels.job }} on {{ $labels.instance }} is not answering"}},
    ]
    return {"groups": [{"name": f"gpuplan-{c.slug}", "rules": rules}]}


def _panel(pid: int, title: str, expr: str, unit: str, x: int, y: int) -> dict:
    return {"id": pid, "type": "timeseries", "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
            "targets": [{"refId": "A", "expr": expr, "legendFormat": "{{instance}} GPU {{gpu}}"}]}


def grafana_dashboard(c: Ctx) -> dict:
    panels = [
        _panel(1, "GPU utilisation", "DCGM_FI_DEV_GPU_UTIL", "percent", 0, 0),
        _panel(2, "GPU memory used", "DCGM_FI_DEV_FB_USED * 1024 * 1024", "bytes", 12, 0),
        _panel(3, "GPU temperature", "DCGM_FI_DEV_GPU_TEMP", "celsius", 0, 8),
        _panel(4, "GPU power", "DCGM_FI_DEV_POWER_USAGE", "watt", 12, 8),
        _panel(5, "ECC and XID errors", "DCGM_FI_DEV_XID_ERRORS or increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])",
               "short", 0, 16),
        _panel(6, "Disk free", 'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay"}', "bytes", 12, 16),
    ]
    panels[5]["targets"][0]["legendFormat"] = "{{instance}} {{mountpoint}}"
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
        "monitoring/grafana-dashboard.json": json.dumps(grafana_dashboard(c), indent=2) + "\n",
        "monitoring/dcgm-counters.csv": DCGM_COUNTERS,
    }
