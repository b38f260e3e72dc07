"""Kubernetes manifests as the API server and the autoscaler read them.

- Every core object (Deployment, Service, Job, HorizontalPodAutoscaler, ...) against the Kubernetes OpenAPI schema
  of the newest version kubernetes-validate ships, strict (unknown fields are errors); without kubernetes-validate the
  check says so and skips this part.
- The PodMonitor (monitoring.coreos.com/v1, a CRD the schema does not know) selects the Deployment's pods and names a
  port they have.
- The HPA (or a KEDA ScaledObject) targets the bundle's Deployment and can reach the plan's peak: ``maxReplicas`` >=
  the plan's replicas at the peak (``plan.autoscaling.max_replicas``, else ``plan.replicas``) times the pods one
  replica is; every custom metric it reads has a rule in the metrics adapter's values, and the pods are scraped.
"""

from __future__ import annotations

import re
from typing import Any

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.check.locate import yaml_line
from gpuplan.i18n import _

MANIFESTS = ("k8s/*.yaml", "autoscale/hpa.yaml", "autoscale/podmonitor.yaml", "autoscale/*scaledobject*.yaml")
ADAPTER_VALUES = "autoscale/metrics-adapter-values.yaml"
CRD_GROUPS = ("monitoring.coreos.com/", "keda.sh/")


def _docs(b: Bundle) -> tuple[list[tuple[str, int, dict]], list[Finding]]:
    docs, errors = [], []
    for pattern in MANIFESTS:
        for rel in b.glob(pattern):
            parsed, err = b.yaml_docs(rel)
            if err:
                errors.append(err)
            docs += [(rel, i, d) for i, d in enumerate(parsed) if isinstance(d, dict)]
    return docs, errors


def _validate(b: Bundle, docs: list[tuple[str, int, dict]]) -> list[Finding]:
    core = [(rel, i, d) for rel, i, d in docs if not str(d.get("apiVersion", "")).startswith(CRD_GROUPS)]
    if not core:
        return []
    try:
        import kubernetes_validate as kv
    except ImportError:
        b.notes.append(_("kubernetes-validate is not installed: Kubernetes manifests were not checked against the API "
                         "schema (pip install kubernetes-validate)."))
        return []
    version = kv.latest_version()
    out = []
    for rel, i, doc in core:
        try:
            kv.validate(doc, version, strict=True)
        except kv.ValidationError as exc:
            path = list(exc.path)
            unexpected = re.search(r"\('([^']+)' was unexpected\)", exc.message)
            if exc.validator == "additionalProperties" and unexpected:
                path.append(unexpected.group(1))   # point at the unknown key itself
            out.append(Finding(rel, yaml_line(b.text(rel) or "", path, i), "k8s-schema", _(
                "{kind} {name} does not match the Kubernetes {version} schema at {where}: {reason}").format(
                    kind=doc.get("kind"), name=(doc.get("metadata") or {}).get("name"), version=version,
                    where="/".join(map(str, path)) or "/", reason=exc.message)))
        except (kv.SchemaNotFoundError, kv.InvalidSchemaError):
            out.append(Finding(rel, yaml_line(b.text(rel) or "", ["kind"], i), "k8s-schema", _(
                "{api}/{kind} is not a Kubernetes {version} object.").format(
                    api=doc.get("apiVersion"), kind=doc.get("kind"), version=version)))
    return out


def _get(doc: Any, *path: Any) -> Any:
    for p in path:
        if isinstance(doc, dict):
            doc = doc.get(p)
        elif isinstance(doc, list) and isinstance(p, int) and p < len(doc):
            doc = doc[p]
        else:
            return None
    return doc


def _deployments(docs: list[tuple[str, int, dict]]) -> dict[str, dict]:
    return {_get(d, "metadata", "name"): d for _rel, _i, d in docs if d.get("kind") == "Deployment"}


def _pod_monitor(b: Bundle, rel: str, i: int, doc: dict, deployments: dict[str, dict]) -> list[Finding]:
    out = []
    text = b.text(rel) or ""
    want = _get(doc, "spec", "selector", "matchLabels") or {}
    endpoints = _get(doc, "spec", "podMetricsEndpoints") or []
    pods = [(_get(d, "spec", "template", "metadata", "labels") or {},
             {p.get("name") for c in _get(d, "spec", "template", "spec", "containers") or [] for p in c.get("ports") or []})
            for d in deployments.values()]
    match = [ports for labels, ports in pods if want and want.items() <= labels.items()]
    if not match:
        out.append(Finding(rel, yaml_line(text, ["spec", "selector"], i), "metrics-pipeline", _(
            "The PodMonitor selects no pod of the bundle's Deployment: nothing scrapes the metrics the HPA reads.")))
    for j, ep in enumerate(endpoints if isinstance(endpoints, list) else []):
        port = ep.get("port") if isinstance(ep, dict) else None
        if match and port not in set().union(*match):
            out.append(Finding(rel, yaml_line(text, ["spec", "podMetricsEndpoints", j, "port"], i), "metrics-pipeline",
                               _("The PodMonitor scrapes port {port}, which the Deployment's containers do not name.")
                               .format(port=port)))
    if not endpoints:
        out.append(Finding(rel, yaml_line(text, ["spec"], i), "metrics-pipeline",
                           _("The PodMonitor has no podMetricsEndpoints.")))
    return out


def _adapter_metrics(b: Bundle) -> set[str] | None:
    """The custom metric names the adapter values expose (None: no adapter values in the bundle)."""
    if not b.has(ADAPTER_VALUES):
        return None
    docs, _err = b.yaml_docs(ADAPTER_VALUES)
    doc = docs[0] if docs else {}
    rules = (_get(doc, "AlibabaCloudMetricsAdapter", "prometheus", "adapter", "rules", "custom")
             or _get(doc, "rules", "custom") or [])
    return {_get(r, "name", "as") for r in rules if isinstance(r, dict)}


def _peak_pods(b: Bundle, deployments: dict[str, dict], target: str) -> int:
    """The plan's replicas at the peak, in pods of the target Deployment."""
    peak = b.field("plan.autoscaling.max_replicas", None) or b.field("plan.replicas")
    planned = int(b.field("plan.replicas"))
    pods = int(_get(deployments.get(target), "spec", "replicas") or planned)
    per_replica = max(1, round(pods / max(1, planned)))
    return int(peak) * per_replica


def _scaler(b: Bundle, rel: str, i: int, doc: dict, deployments: dict[str, dict], scraped: bool) -> list[Finding]:
    out = []
    text = b.text(rel) or ""
    keda = doc.get("kind") == "ScaledObject"
    target = _get(doc, "spec", "scaleTargetRef", "name")
    if target not in deployments:
        out.append(Finding(rel, yaml_line(text, ["spec", "scaleTargetRef", "name"], i), "autoscale-target", _(
            "The autoscaler targets Deployment {name}, which the bundle's manifests do not define.").format(name=target)))
        return out
    key_max, key_min = ("maxReplicaCount", "minReplicaCount") if keda else ("maxReplicas", "minReplicas")
    hi, lo = _get(doc, "spec", key_max), _get(doc, "spec", key_min)
    need = _peak_pods(b, deployments, target)
    if not isinstance(hi, int) or hi < need:
        out.append(Finding(rel, yaml_line(text, ["spec", key_max], i), "autoscale-peak", _(
            "{key} is {value}, but the plan's peak needs {need} pods: the autoscaler cannot reach the stated peak.")
            .format(key=key_max, value=hi, need=need)))
    if isinstance(hi, int) and isinstance(lo, int) and lo > hi:
        out.append(Finding(rel, yaml_line(text, ["spec", key_min], i), "autoscale-peak", _(
            "{low} ({lo}) is above {high} ({hi}).").format(low=key_min, lo=lo, high=key_max, hi=hi)))
    if keda:
        if not _get(doc, "spec", "triggers"):
            out.append(Finding(rel, yaml_line(text, ["spec"], i), "metrics-pipeline",
                               _("The ScaledObject has no triggers: nothing drives the scaling.")))
        return out
    exposed = _adapter_metrics(b)
    for j, m in enumerate(_get(doc, "spec", "metrics") or []):
        kind = m.get("type") if isinstance(m, dict) else None
        if kind not in ("Pods", "Object", "External"):
            continue
        name = _get(m, kind.lower(), "metric", "name")
        line = yaml_line(text, ["spec", "metrics", j], i)
        if exposed is None:
            out.append(Finding(rel, line, "metrics-pipeline", _(
                "The HPA reads the custom metric {metric}, but the bundle ships no metrics adapter values ({values}): "
                "nothing serves it.").format(metric=name, values=ADAPTER_VALUES)))
        elif name not in exposed:
            out.append(Finding(rel, line, "metrics-pipeline", _(
                "The HPA reads the custom metric {metric}, which no rule in {values} exposes.").format(
                    metric=name, values=ADAPTER_VALUES)))
        elif not scraped:
            out.append(Finding(rel, line, "metrics-pipeline", _(
                "The HPA reads {metric}, but no PodMonitor scrapes the Deployment's pods.").format(metric=name)))
    return out


def check(b: Bundle) -> list[Finding]:
    docs, out = _docs(b)
    if not docs:
        return out
    out += _validate(b, docs)
    deployments = _deployments(docs)
    monitors = [(rel, i, d) for rel, i, d in docs if d.get("kind") == "PodMonitor"]
    for rel, i, d in monitors:
        out += _pod_monitor(b, rel, i, d, deployments)
    scraped = bool(monitors)
    for rel, i, d in docs:
        if d.get("kind") in ("HorizontalPodAutoscaler", "ScaledObject"):
            out += _scaler(b, rel, i, d, deployments, scraped)
    return out
