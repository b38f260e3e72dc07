"""JSON Schemas for `gpuplan schema`: the workload (from the pydantic model) and the outputs."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

_NUM = {"type": ["number", "null"]}
_INT = {"type": ["integer", "null"]}

MEMORY_SCHEMA = {
    "type": "object",
    "required": ["per_gpu_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "engine_reserved_bytes",
                 "capacity_bytes", "fits", "shortfall_bytes", "components", "host_bytes"],
    "properties": {
        "per_gpu_bytes": {"type": "integer"}, "peak_allocated_bytes": {"type": "integer"},
        "peak_reserved_bytes": {"type": "integer"}, "engine_reserved_bytes": _INT,
        "capacity_bytes": {"type": "integer"}, "fits": {"type": "boolean"}, "shortfall_bytes": {"type": "integer"},
        "host_bytes": {"type": "integer"},
        "fit_confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "components": {"type": "object", "required": ["weights", "gradients", "optimizer", "activations", "kv_cache",
                                                      "adapters", "logits", "overhead"],
                       "additionalProperties": {"type": "integer"}},
    },
}

PERFORMANCE_KEYS = ["step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "samples_per_s", "mfu", "tflops_per_gpu",
                    "comm_fraction", "total_time_s", "gpu_hours", "ttft_s", "tpot_s", "output_tokens_per_s",
                    "max_concurrency", "max_requests_per_s"]

# 80 % prediction intervals: {dotted path of a figure: [low, high]} (gpuplan.estimate.intervals)
INTERVALS_SCHEMA = {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "number"},
                                                               "minItems": 2, "maxItems": 2}}

ESTIMATE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gpuplan estimate --json",
    "type": "object",
    "required": ["schema_version", "workload", "memory", "performance", "intervals", "suggestions", "assumptions",
                 "warnings"],
    "properties": {
        "schema_version": {"const": 1},
        "workload": {"type": "object"},
        "memory": MEMORY_SCHEMA,
        "intervals": INTERVALS_SCHEMA,
        "performance": {"type": "object", "required": PERFORMANCE_KEYS,
                        "properties": {k: _NUM for k in PERFORMANCE_KEYS}},
        "suggestions": {"type": "array", "items": {"type": "string"}},
        "assumptions": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
}

PLAN_KEYS = ["platform", "instance_type", "instance_count", "gpu", "gpus_total", "parallel", "memory_per_gpu_bytes",
             "capacity_per_gpu_bytes", "billing", "region", "price_region", "instance_price_per_hour",
             "price_per_hour", "currency", "price_as_of", "price_source", "time_s", "total_cost", "replicas",
             "monthly_cost", "cost_per_million_output_tokens", "storage", "network", "host", "pareto", "why",
             "intervals"]

# LLM serving plans: what the configuration is and what the user gets (plan/serving/serving_report.py)
SERVING_KEYS = ["engine", "engine_copies", "instances", "tp", "pp", "dp", "ep", "dp_attention", "weight_format",
                "kv_cache_dtype", "max_num_seqs", "replicas_at_peak", "disaggregation", "ttft_p50_s", "ttft_p90_s",
                "tpot_s", "output_tokens_per_s_per_replica", "utilization", "ttft_target_s", "tpot_target_s",
                "sla_met"]
_NUM_OR_NULL = {"type": ["number", "null"]}
PLAN_PROPERTIES = {
    "serving": {"oneOf": [{"type": "null"}, {"type": "object", "required": SERVING_KEYS, "properties": {
        "engine": {"type": "string"}, "engine_copies": {"type": "integer", "minimum": 1},
        "dp_attention": {"type": "boolean"}, "weight_format": {"type": "string"},
        "kv_cache_dtype": {"type": "string"}, "sla_met": {"type": ["boolean", "null"]},
        "max_num_seqs": {"type": "integer", "minimum": 1}, "replicas_at_peak": {"type": "integer", "minimum": 1},
        "disaggregation": {"type": ["object", "null"], "properties": {
            "prefill_replicas": {"type": "integer", "minimum": 1},
            "decode_replicas": {"type": "integer", "minimum": 1}}},
        **{k: _NUM_OR_NULL for k in ("ttft_p50_s", "ttft_p90_s", "tpot_s", "output_tokens_per_s_per_replica",
                                     "utilization", "ttft_target_s", "tpot_target_s")}}}]},
    "aliases": {"type": "array", "items": {"type": "string"}},
    "deadline_slack": _NUM_OR_NULL,
    "intervals": INTERVALS_SCHEMA,
    "fit_confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
}

RECOMMEND_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gpuplan recommend --json",
    "type": "object",
    "required": ["schema_version", "workload", "plans", "rejected", "binding_constraints", "assumptions", "warnings"],
    "properties": {
        "schema_version": {"const": 1},
        "workload": {"type": "object"},
        "plans": {"type": "array", "items": {"type": "object", "required": PLAN_KEYS,
                                             "properties": PLAN_PROPERTIES}},
        "ranking_basis": {"type": "string"},
        "rejected": {"type": "array", "items": {"type": "object", "required": ["instance_type", "code", "reason"],
                                                "properties": {"code": {"enum": [
                                                    "memory", "host_memory", "network", "budget", "deadline", "status",
                                                    "no_price", "region", "layout", "sla"]}}}},
        "binding_constraints": {"type": "array"},
        "assumptions": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
}


def schema_for(which: str) -> dict[str, Any]:
    which = (which or "workload").lower()
    if which == "workload":
        from gpuplan.workload import workload_json_schema

        return workload_json_schema()
    if which == "estimate":
        return ESTIMATE_SCHEMA
    if which == "recommend":
        return RECOMMEND_SCHEMA
    raise GpuplanError(_("Unknown schema {which!r}.").format(which=which), hint=_("Use `gpuplan schema workload|estimate|recommend`."))


def localized_schema(schema: dict[str, Any], lang: str) -> dict[str, Any]:
    """The schema with each property's ``title`` as the field's label in ``lang`` (English: unchanged).
    Keys, types and structure are never touched."""
    if lang == "en":
        return schema
    import copy

    from gpuplan.fieldnames import FIELD_LABELS, field_label

    out = copy.deepcopy(schema)
    stack: list[Any] = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for key, sub in props.items():
                    if isinstance(sub, dict) and key in FIELD_LABELS:
                        sub["title"] = field_label(key, lang, with_key=True)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def json_default(o: Any) -> Any:
    """`json.dumps(default=...)` for the CLI and the API: dates, dataclasses, sets, paths."""
    import dataclasses
    import datetime
    from pathlib import Path

    if isinstance(o, (datetime.date, datetime.datetime)):
        return o.isoformat()
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)
