"""Request and response models of the REST API.

The request body of every POST is the workload itself (:class:`gpuplan.workload.Workload`, the
same strict pydantic model the CLI and the Python API parse), so a workload file can be posted
as it is. Responses are the CLI's ``--json`` documents; their JSON Schemas come from
:mod:`gpuplan.schemas` and are published in the OpenAPI document.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpuplan.schemas import ESTIMATE_SCHEMA, RECOMMEND_SCHEMA


class ErrorResponse(BaseModel):
    """Every error: one line, a hint on how to fix it, and the workload field at fault (or null)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"error": "Unknown model 'qwen7'.", "hint": "Did you mean 'qwen-7b', 'qwen2-7b', 'qwen-72b'? Pick one from the list on the page.",
         "field": "model"}]})

    error: str = Field(description="what is wrong, in one line")
    hint: str = Field("", description="how to fix it")
    field: str | None = Field(None, description="dotted workload field (e.g. constraints.max_gpus), when known")


class Health(BaseModel):
    status: str = "ok"
    version: str


def _strip_schema_keyword(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.1 media-type schemas are JSON Schema, but a nested ``$schema`` confuses some tools."""
    return {k: v for k, v in schema.items() if k != "$schema"}


def _recommend_schema() -> dict[str, Any]:
    """RECOMMEND_SCHEMA with the rejection codes the recommender really emits (feasibility.CODES
    has "sla", which gpuplan.schemas does not list yet)."""
    from gpuplan.plan.search.feasibility import CODES

    schema = copy.deepcopy(_strip_schema_keyword(RECOMMEND_SCHEMA))
    code = schema["properties"]["rejected"]["items"]["properties"]["code"]
    code["enum"] = list(dict.fromkeys([*code["enum"], *CODES]))
    return schema


ERROR_CONTENT = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "Host header not served (a loopback-bound server answers localhost only)",
          "content": ERROR_CONTENT},
    413: {"description": "Request body too large", "content": ERROR_CONTENT},
    415: {"description": "Body must be JSON (Content-Type: application/json)", "content": ERROR_CONTENT},
    422: {"description": "Invalid workload or parameter: the field and the reason", "content": ERROR_CONTENT},
    429: {"description": "Too many requests from this client at once (see Retry-After)", "content": ERROR_CONTENT},
    503: {"description": "Busy, or the request ran past the time budget (see Retry-After)", "content": ERROR_CONTENT},
}

ESTIMATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The `gpuplan estimate --json` document",
          "content": {"application/json": {"schema": _strip_schema_keyword(ESTIMATE_SCHEMA)}}},
    **ERROR_RESPONSES,
}

RECOMMEND_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The `gpuplan recommend --json` document (plans may be empty: see binding_constraints)",
          "content": {"application/json": {"schema": _recommend_schema()}}},
    **ERROR_RESPONSES,
}

PLAN_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The plan bundle of the chosen plan as a zip (plan.json, PLAN.md, launch files), with the "
                         "preflight's report (`gpuplan check`: ok, findings by file and line, notes) as preflight.json",
          "headers": {"X-Gpuplan-Check": {"description": "passed or failed: the preflight's verdict on the bundle",
                                          "schema": {"type": "string", "enum": ["passed", "failed"]}},
                      "X-Gpuplan-Check-Findings": {"description": "how many findings preflight.json lists",
                                                   "schema": {"type": "string"}}},
          "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}},
    **ERROR_RESPONSES,
}

LIST_RESPONSES: dict[int | str, dict[str, Any]] = {400: ERROR_RESPONSES[400], 422: ERROR_RESPONSES[422]}

YAML_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The workload file (YAML), as `gpuplan recommend FILE` reads it",
          "content": {"application/yaml": {"schema": {"description": "YAML text of a workload mapping"},
                                           "example": "model: Qwen/Qwen2.5-7B-Instruct\ntask: lora\ndataset:\n"
                                                      "  tokens: 100000000.0\n"}}},
    **ERROR_RESPONSES,
}

PARSE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The workload keys of the file (validated; defaults left out)",
          "content": {"application/json": {"schema": {
              "type": "object", "required": ["schema_version", "workload"],
              "properties": {"schema_version": {"type": "integer"}, "workload": {"type": "object"}}},
              "example": {"schema_version": 1, "workload": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora",
                                                            "dataset": {"tokens": 1e8}}}}}},
    **ERROR_RESPONSES,
}

PARSE_REQUEST: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "application/yaml": {"schema": {"type": "string"},
                         "example": "model: Qwen/Qwen2.5-7B-Instruct\ntask: lora\ndataset: {tokens: 1e8}\n"},
    "application/json": {"schema": {"type": "object"},
                         "example": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"}}}}}

# Named request examples of every POST that takes a workload (shown by OpenAPI tools).
WORKLOAD_EXAMPLES: dict[str, dict[str, Any]] = {
    "lora": {"summary": "LoRA fine-tune of a 7B model on 100M tokens within 3 days",
             "value": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "seq_len": 2048,
                       "dataset": {"tokens": 1e8}, "constraints": {"deadline_hours": 72}}},
    "serving": {"summary": "Serve a 7B chat model at 10 requests/s with TTFT and TPOT targets",
                "value": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 1024,
                          "output_tokens": 256,
                          "serving": {"requests_per_s": 10, "ttft_ms": 1000, "tpot_ms": 50}}},
    "fixed_hardware": {"summary": "One estimate on fixed hardware (for /api/estimate)",
                       "value": {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "hardware": {"gpu": "A10"}}},
    "diffusion": {"summary": "Serve SDXL images",
                  "value": {"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                            "serving": {"requests_per_s": 1}}},
}
