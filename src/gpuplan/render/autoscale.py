"""Autoscaling files for a serving plan: an ACK HorizontalPodAutoscaler with its metrics pipeline, and an ESS
scaling group (render/autoscale_ess.py).

- ``autoscale/hpa.yaml``: ``autoscaling/v2`` HPA for the bundle's Deployment (``k8s/deployment.yaml``, named by the
  job slug). ``maxReplicas`` is the plan's replica count at the peak (ACK: ``autoscaling.max_replicas``; ECS:
  ``replicas``) times the pods one replica is, the one number that sized and priced the plan; ``minReplicas`` the
  plan's off-peak count. Metrics, both per pod and both from the engine's own ``/metrics``: the waiting-request
  queue (vLLM ``vllm:num_requests_waiting``, SGLang ``sglang:num_queue_reqs``, the image server's
  ``gpuplan_image_requests_waiting``) above the requests one replica absorbs within the TTFT slack,
  ``mu x (TTFT SLA - TTFT)``; and the running requests (``vllm:num_requests_running``, ``sglang:num_running_reqs``)
  above the target utilisation of the batch (``max_num_seqs``). Queue length reacts before latency degrades.
  https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/ ; metric names: vLLM
  vllm/v1/metrics/loggers.py, SGLang python/sglang/srt/metrics/collector.py (/work/shared/facts/serving-deploy-notes.md).
- ``autoscale/podmonitor.yaml``: a ``monitoring.coreos.com/v1`` PodMonitor so Managed Service for Prometheus (ACK's
  ack-arms-prometheus, or any Prometheus Operator) scrapes every pod's ``/metrics`` with ``namespace``/``pod`` labels.
- ``autoscale/metrics-adapter-values.yaml``: Helm values for ACK's ``ack-alibaba-cloud-metrics-adapter`` component
  (``AlibabaCloudMetricsAdapter.prometheus.{enabled,url,adapter.rules.custom}``), one prometheus-adapter rule per
  series, so the custom metrics API serves what the HPA asks for. ACK documents this pipeline (PodMonitor ->
  Managed Service for Prometheus -> ack-alibaba-cloud-metrics-adapter -> HPA) for LLM inference:
  https://www.alibabacloud.com/help/en/ack/cloud-native-ai-suite/user-guide/configuring-elastic-scaling-for-single-machine-multi-machine-inference ;
  https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/horizontal-pod-scaling-based-on-prometheus-service-metrics-1 ;
  rule format https://github.com/kubernetes-sigs/prometheus-adapter/blob/master/docs/config.md .

YAML is built as data and dumped with ``yaml.safe_dump``. No credentials are written.
"""

from __future__ import annotations

import math

import yaml

from gpuplan.i18n import tr
from gpuplan.render.bundle.safe import slugify

DEFAULT_TTFT_SLACK_S = 2.0
QUEUE_SOURCE = "vllm:num_requests_waiting"     # the series vLLM exports (launch-notes 7.1)
QUEUE_METRIC = "vllm_num_requests_waiting"     # its name in the custom metrics API (adapter rule below)
# The waiting-request series of each deployed server: vLLM (launch-notes 7.1), SGLang (collector.py, with
# --enable-metrics), the bundle's image server (serve_images.py).
QUEUE_SOURCES = {"vllm": QUEUE_SOURCE, "sglang": "sglang:num_queue_reqs", "image-server": "gpuplan_image_requests_waiting"}
# The requests in the running batch (the image server runs one request per pipeline: no batch to fill).
RUNNING_SOURCES = {"vllm": "vllm:num_requests_running", "sglang": "sglang:num_running_reqs"}
# The finished-requests counter whose per-second increase is an instance's request rate (the ESS group scales in on it:
# the running sequences grow faster than the rate near capacity, so half of them is no bound on half the rate).
RATE_SOURCES = {"vllm": "vllm:request_success_total", "sglang": "sglang:num_requests_total"}

# Where the adapter reads Prometheus: replace with your Managed Service for Prometheus HTTP API address (ARMS
# console, "Settings > HTTP API address"; add prometheusHeader.Authorization when token auth is on).
PROMETHEUS_URL_PLACEHOLDER = "http://your-prometheus-http-api:9090"


def queue_source(engine: str = "vllm") -> str:
    return QUEUE_SOURCES.get(engine, QUEUE_SOURCE)


def custom_metric(source: str) -> str:
    """A series' name in the custom metrics API (':' is not allowed there)."""
    return source.replace(":", "_")


def queue_metric(engine: str = "vllm") -> str:
    return custom_metric(queue_source(engine))


def rate_metric(engine: str) -> str:
    """The custom metric a node pushes for its request rate (requests finished per second over the last minute)."""
    return custom_metric(RATE_SOURCES[engine]).removesuffix("_total") + "_per_s"


def _slug(workload) -> str:
    model = workload.model if isinstance(workload.model, str) else "model"
    return slugify(workload.name or model.rsplit("/", 1)[-1])


def peak_replicas(plan: dict) -> int:
    """The plan's replica count at the peak: ``autoscaling.max_replicas`` where the plan follows traffic (ACK), else
    ``replicas`` (always-on platforms size for the peak). The number the plan's cost was computed with."""
    auto = plan.get("autoscaling") or {}
    return max(1, int(auto.get("max_replicas") or plan.get("replicas") or 1))


def sizing(plan: dict, workload, copies: int | None = None) -> dict:
    """min/max scaled units and the metric targets. A unit is one instance (its ``parallel.dp`` model copies) unless
    ``copies`` says how many model copies one unit holds (a Kubernetes pod per copy: 1). max = the plan's peak
    replicas in units; min = the plan's off-peak replicas (ACK's ``autoscaling.min_replicas``, else the off-peak
    rate over one replica's rate at the plan's target utilisation)."""
    from gpuplan.plan.serving.traffic import replicas_for, traffic_profile

    perf = plan.get("performance") or {}
    par = plan.get("parallel") or {}
    dp = int(par.get("dp") or 1)
    per_unit = dp if copies is None else max(1, copies)
    units_per_replica = max(1, dp // per_unit)
    mu = float(perf.get("max_requests_per_s") or 0.0) * per_unit
    traffic = traffic_profile(workload.serving)
    hi = peak_replicas(plan) * units_per_replica
    auto_min = (plan.get("autoscaling") or {}).get("min_replicas")
    if auto_min:
        lo = int(auto_min) * units_per_replica
    elif traffic is not None and mu > 0:
        lo = replicas_for(traffic.offpeak_rps, mu, target_utilization=traffic.target_utilization)
    else:
        lo = hi
    ttft = float(perf.get("ttft_s") or 0.0)
    sla = workload.serving.ttft_ms / 1000.0 if workload.serving and workload.serving.ttft_ms else None
    slack = max(0.5, (sla - ttft) if sla else DEFAULT_TTFT_SLACK_S)
    queue = max(1, math.floor(mu * slack)) if mu > 0 else 4
    from gpuplan.plan.serving.queueing import DEFAULT_TARGET_UTILIZATION

    u = (traffic.target_utilization if traffic is not None else None) or DEFAULT_TARGET_UTILIZATION
    # the running sequences to hold a unit at: the target utilisation of what one copy runs at the SLA (the load its
    # requests/s were read at); a plan without that figure falls back to the batch limit
    at_sla = float(perf.get("serving_running") or 0.0)
    seqs = (at_sla if at_sla > 0 else float(par.get("max_num_seqs") or 0)) * per_unit
    running = max(1, math.floor(u * seqs)) if seqs > 0 else None
    return {"min_replicas": max(1, min(lo, hi)), "max_replicas": hi, "queue_target": queue, "per_replica_rps": mu,
            "ttft_slack_s": slack, "running_target": running, "target_utilization": u, "running_at_sla": at_sla > 0,
            # requests/s per unit to hold: the target utilisation of what one copy serves at the SLA (the plan's rule)
            "rate_target": u * mu if mu > 0 else None,
            "nodes_per_replica": int(par.get("nodes_per_replica") or 1)}


def _labels(slug: str) -> dict:
    return {"app.kubernetes.io/name": slug, "app.kubernetes.io/managed-by": "gpuplan"}


def _pods_metric(name: str, target: int | str) -> dict:
    return {"type": "Pods", "pods": {"metric": {"name": name},
                                     "target": {"type": "AverageValue", "averageValue": str(target)}}}


def milli(value: float) -> str:
    """A Kubernetes quantity in thousandths ("2470m" = 2.47)."""
    return f"{max(1, round(value * 1000))}m"


def hpa_manifest(plan: dict, workload, engine: str = "vllm", copies: int | None = None) -> dict:
    s = sizing(plan, workload, copies)
    slug = _slug(workload)
    metrics = [_pods_metric(queue_metric(engine), s["queue_target"])]
    if engine in RUNNING_SOURCES and s["running_target"]:
        metrics.append(_pods_metric(custom_metric(RUNNING_SOURCES[engine]), s["running_target"]))
    if engine in RATE_SOURCES and s["rate_target"]:
        # the request rate: linear in the traffic, so the HPA (the largest of its metrics' replica counts) never
        # scales below the pods the plan sized the traffic at, which the running requests alone would (they grow
        # faster than the rate near capacity, so at half load they ask for fewer than half the pods)
        metrics.append(_pods_metric(rate_metric(engine), milli(s["rate_target"])))
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": slug, "labels": _labels(slug)},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": slug},
            "minReplicas": s["min_replicas"], "maxReplicas": s["max_replicas"],
            "metrics": metrics,
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 600,
                              "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
            },
        },
    }


def scaled_sources(engine: str = "vllm") -> list[str]:
    """The engine series the HPA scales on (each needs an adapter rule and a scrape)."""
    return [queue_source(engine), *([RUNNING_SOURCES[engine]] if engine in RUNNING_SOURCES else []),
            *([RATE_SOURCES[engine]] if engine in RATE_SOURCES else [])]


def adapter_rules(engine: str = "vllm") -> list[dict]:
    """prometheus-adapter rules: each per-pod engine series (``vllm:num_requests_waiting``) as a custom metric
    (``vllm_num_requests_waiting``), summed over the pod's engine ranks; a finished-requests counter as its rate per
    second over 2 minutes (``vllm_request_success_per_s``)."""
    rates = set(RATE_SOURCES.values())
    return [{
        "seriesQuery": f'{{__name__="{source}",namespace!="",pod!=""}}',
        "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
        "name": {"matches": f"^{source}$",
                 "as": rate_metric(engine) if source in rates else custom_metric(source)},
        "metricsQuery": ("sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)" if source in rates
                         else "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"),
    } for source in scaled_sources(engine)]


def adapter_values(engine: str = "vllm") -> dict:
    """Helm values of ACK's ack-alibaba-cloud-metrics-adapter: the Prometheus it reads and the rules."""
    return {"AlibabaCloudMetricsAdapter": {"prometheus": {
        "enabled": True, "url": PROMETHEUS_URL_PLACEHOLDER,
        "adapter": {"rules": {"custom": adapter_rules(engine)}}}}}


def pod_monitor(workload, port: int) -> dict:
    """Scrape every pod of the Deployment on its API port (vLLM serves /metrics there; SGLang with
    --enable-metrics; the image server too)."""
    slug = _slug(workload)
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": {"name": slug, "labels": _labels(slug)},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": slug}},
                     "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}]}}


def _readme(plan: dict, workload, k8s: bool = True, lang: str = "en", engine: str = "vllm",
            copies: int | None = None, nodes_per_pool: int | None = None) -> str:
    s = sizing(plan, workload)
    pods = sizing(plan, workload, copies)
    values = dict(rps=f"{s['per_replica_rps']:.2f}", min=s["min_replicas"], max=s["max_replicas"],
                  queue_source=queue_source(engine), queue_metric=queue_metric(engine), queue_target=s["queue_target"],
                  slack=f"{s['ttft_slack_s']:.1f}")
    pod_values = {**values, "min": pods["min_replicas"], "max": pods["max_replicas"], "queue_target": pods["queue_target"]}
    parts = [
        "# " + tr("Autoscaling", lang) + "\n",
        tr("One replica serves about {rps} requests/s at the SLA; the traffic needs {min} replica(s) off-peak and "
           "{max} at peak.", lang).format(**values) + "\n",
    ]
    bullets = []
    if k8s:
        bullets.append("- " + tr(
            "`hpa.yaml` (ACK): scales the Deployment in `k8s/deployment.yaml` between {min} and {max} pods ({max} = the "
            "plan's replicas at the peak). Scale-up metric: waiting requests per pod (the server's `{queue_source}`, "
            "exposed as `{queue_metric}`) above {queue_target} (= requests/s per replica x {slack} s of TTFT slack).",
            lang).format(**pod_values))
        if engine in RUNNING_SOURCES and pods["running_target"]:
            bullets.append("- " + (tr(
                "Second metric: running requests per pod (`{source}`) above {target} (= {share} of the sequences one "
                "replica runs at the SLA): the load its requests/s were sized at. The batch limit (max-num-seqs) is "
                "higher, and the waiting queue stays empty until a pod runs that many, so neither would scale in "
                "time.", lang) if pods["running_at_sla"] else tr(
                "Second metric: running requests per pod (`{source}`) above {target} (= {share} of max-num-seqs): the "
                "batch is nearly full.", lang)).format(source=RUNNING_SOURCES[engine], target=pods["running_target"],
                                                      share=f"{pods['target_utilization']:.0%}"))
        if engine in RATE_SOURCES and pods["rate_target"]:
            bullets.append("- " + tr(
                "Third metric: requests per second per pod (the rate of `{source}` over 2 minutes, as `{metric}`) above "
                "{target} (= {share} of what one replica serves at the SLA, the plan's sizing rule). The HPA takes the "
                "largest replica count its metrics ask for, and this one is linear in the traffic: it keeps the pods "
                "the traffic needs when the running requests, which grow faster than the rate near capacity, would "
                "ask for fewer.", lang).format(source=RATE_SOURCES[engine], metric=rate_metric(engine),
                                                target=f"{pods['rate_target']:.2f}",
                                                share=f"{pods['target_utilization']:.0%}"))
        bullets.append("- " + tr(
            "The metrics pipeline, in order: enable Managed Service for Prometheus on the cluster (ACK add-on "
            "ack-arms-prometheus) and `kubectl apply -f autoscale/podmonitor.yaml` (scrapes every pod's /metrics); "
            "install the ACK add-on ack-alibaba-cloud-metrics-adapter with `autoscale/metrics-adapter-values.yaml` "
            "(set `prometheus.url` to your Prometheus HTTP API address); check `kubectl get --raw "
            "/apis/custom.metrics.k8s.io/v1beta1` lists `{queue_metric}`; then `kubectl apply -f autoscale/hpa.yaml`.",
            lang).format(**values))
        if nodes_per_pool:
            bullets.append("- " + tr(
                "The GPU node pool must be able to grow to {nodes} node(s) (node pool auto scaling, maximum instances "
                "at least {nodes}), or the HPA asks for pods no node can hold; a new GPU node takes minutes, so "
                "minReplicas covers the off-peak rate.", lang).format(nodes=nodes_per_pool))
    if engine in RUNNING_SOURCES and engine in RATE_SOURCES and s["running_target"] and s["per_replica_rps"]:
        from gpuplan.render.autoscale_ess import scale_in_rate

        bullets.append("- " + tr(
            "`ess/` (ECS without Kubernetes), an alternative to `terraform/`'s fixed instances (or both fleets bill: "
            "apply `terraform/` with `-var instance_count=0` for the network, security group and RAM role, then "
            "`ess/` with its `vswitch_id` and `security_group_id` outputs): a scaling group of the same size behind a load balancer (`ess/lb.tf`: every "
            "instance it starts joins the vServer group, health-checked on /health), each with the plan's data disk, "
            "public bandwidth and RAM role. Its `user_data` must install and start the bundle's unit (the files are "
            "not on a new instance: bake them into a custom image or fetch them from OSS) and push three custom "
            "metrics to CloudMonitor from the node's /metrics every minute: `{queue_metric}` (the value of "
            "`{queue_source}`), `{running_metric}` (`{running_source}`) and `{rate_metric}` (the increase of "
            "`{rate_source}` over the minute / 60). An instance is added when the queue passes {queue_target} or the "
            "running requests pass {running_target} per instance, and removed when the requests per second stay "
            "below {rate_low} per instance (half the target rate: removing one of two or more instances at most "
            "doubles the others' rate; half the running requests would be no such bound, they grow faster than the "
            "rate near capacity).", lang).format(
            **values, running_metric=custom_metric(RUNNING_SOURCES[engine]), running_source=RUNNING_SOURCES[engine],
            running_target=s["running_target"], rate_metric=rate_metric(engine), rate_source=RATE_SOURCES[engine],
            rate_low=f"{scale_in_rate(s):g}"))
    else:
        bullets.append("- " + tr(
            "`ess/` (ECS without Kubernetes): a scaling group of the same size behind a load balancer (`ess/lb.tf`: "
            "every instance it starts joins the vServer group, health-checked on /health); alarms on the queue length "
            "pushed to CloudMonitor as the custom metric `{queue_metric}` (push the value of `{queue_source}` from each "
            "node's /metrics every minute) add or remove one instance.", lang).format(**values))
    parts.append("\n".join(bullets) + "\n")
    parts.append(tr("Request rate alone is a weaker signal: it ignores prompt length. Queue length reacts before "
                    "TTFT degrades.", lang))
    text = "\n".join(parts) + "\n"
    if not k8s:
        text += "\n" + tr("One replica spans several nodes, so there is no HPA: a one-pod Deployment cannot hold it "
                          "(on ACK, scale a LeaderWorkerSet instead).", lang) + "\n"
    return text


def autoscale_files(plan: dict, workload, *, k8s: bool = True, lang: str = "en", engine: str = "vllm",
                    copies: int | None = None, port: int = 8000, node: dict | None = None) -> dict[str, str]:
    """Autoscaling files for an ECS/ACK serving plan (empty for training and for FC/EAS, which scale
    natively). ``engine``: the deployed server whose queue drives the scaling; ``copies``: model copies per
    Kubernetes pod (None: one pod per instance); ``port``: the server's API port (metrics and load balancer)."""
    from gpuplan.render.autoscale_ess import ess_tf

    if (workload.task or "inference") != "inference" or plan.get("platform", "ecs") not in ("ecs", "ack"):
        return {}
    slug = _slug(workload)
    ess = ess_tf(plan, sizing(plan, workload), slug=slug, name_tag=workload.name or slug, metric=queue_metric(engine),
                 port=port, running_metric=custom_metric(RUNNING_SOURCES[engine]) if engine in RUNNING_SOURCES else None,
                 rate_metric=rate_metric(engine) if engine in RATE_SOURCES else None, node=node)
    if not k8s:   # multi-node replicas: the ESS group only
        return {"autoscale/README.md": _readme(plan, workload, k8s=False, lang=lang, engine=engine), **ess}
    hpa = hpa_manifest(plan, workload, engine, copies)
    nodes = peak_replicas(plan) * int((plan.get("parallel") or {}).get("nodes_per_replica") or 1)
    head = ("# HorizontalPodAutoscaler for the Deployment in k8s/deployment.yaml (gpuplan). It reads custom metrics:\n"
            "# apply podmonitor.yaml and install the metrics adapter with metrics-adapter-values.yaml first (README.md).\n")
    monitor_head = ("# PodMonitor: Managed Service for Prometheus (ACK add-on ack-arms-prometheus) or any Prometheus "
                    "Operator\n# scrapes /metrics of every pod of the Deployment (labels namespace and pod, which the "
                    "adapter rules use).\n")
    adapter_head = ("# Helm values for the ACK add-on ack-alibaba-cloud-metrics-adapter: expose "
                    + ", ".join(scaled_sources(engine)) + " per pod\n# as custom metrics for hpa.yaml. Set "
                    "prometheus.url to your Managed Service for Prometheus HTTP API address\n# (and "
                    "prometheusHeader.Authorization when token authentication is on).\n")
    out = {"autoscale/hpa.yaml": head + yaml.safe_dump(hpa, sort_keys=False, allow_unicode=True),
           "autoscale/podmonitor.yaml": monitor_head + yaml.safe_dump(pod_monitor(workload, port), sort_keys=False),
           "autoscale/metrics-adapter-values.yaml": adapter_head + yaml.safe_dump(adapter_values(engine),
                                                                                  sort_keys=False, width=1000),
           "autoscale/README.md": _readme(plan, workload, lang=lang, engine=engine, copies=copies, nodes_per_pool=nodes)}
    out.update(ess)
    return out
