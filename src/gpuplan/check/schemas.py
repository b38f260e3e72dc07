"""Configuration files against the schema of the program that reads them (src/gpuplan/data/schemas, NOTICE.md says
where each comes from): cloud-init's cloud-config schema, DeepSpeed's configuration, the PAI-DLC CreateJob body and
the Serverless Devs fc3 function props. Needs jsonschema; without it the check says so and passes."""

from __future__ import annotations

import functools
import json
from importlib.resources import files as _pkg_files

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.check.locate import line_for
from gpuplan.i18n import _

# file in the bundle -> (schema file, JSON Schema draft)
SCHEMAS = {
    "cloud-init.yaml": ("schema-cloud-config-v1.json", "Draft4Validator"),
    "ds_config.json": ("deepspeed-config.schema.json", "Draft202012Validator"),
    "pai-dlc-job.json": ("pai-dlc-job.schema.json", "Draft202012Validator"),
    "function-compute/s.yaml": ("fc3-function.schema.json", "Draft202012Validator"),
}


@functools.cache
def schema(name: str) -> dict:
    return json.loads((_pkg_files("gpuplan") / "data" / "schemas" / name).read_text(encoding="utf-8"))


def _instances(b: Bundle, rel: str) -> list[tuple[object, list]]:
    """(instance to validate, path prefix inside the file) — s.yaml validates the props of each fc3 resource."""
    if rel.endswith(".json"):
        doc, _err = b.json(rel)
        return [(doc, [])] if doc is not None else []
    docs, _err = b.yaml_docs(rel)
    if rel != "function-compute/s.yaml":
        return [(docs[0], [])] if docs else []
    resources = (docs[0] or {}).get("resources") if docs and isinstance(docs[0], dict) else None
    return [(r.get("props"), ["resources", name, "props"]) for name, r in (resources or {}).items()
            if isinstance(r, dict) and r.get("component") == "fc3"]


def check(b: Bundle) -> list[Finding]:
    present = [rel for rel in SCHEMAS if b.has(rel)]
    if not present:
        return []
    try:
        import jsonschema
    except ImportError:
        b.notes.append(_("jsonschema is not installed: cloud-init, DeepSpeed, PAI-DLC and Function Compute files were "
                         "not checked against their schemas (pip install jsonschema)."))
        return []
    out: list[Finding] = []
    for rel in present:
        name, draft = SCHEMAS[rel]
        validator = getattr(jsonschema, draft)(schema(name))
        if rel.endswith(".json"):
            _doc, err = b.json(rel)
        else:
            _docs, err = b.yaml_docs(rel)
        if err:
            out.append(err)
            continue
        if rel == "cloud-init.yaml" and not (b.text(rel) or "").startswith("#cloud-config\n"):
            out.append(Finding(rel, 1, "schema", _("cloud-init reads user data as cloud-config only when its first "
                                                   "line is #cloud-config.")))
        for instance, prefix in _instances(b, rel):
            for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))[:20]:
                path = [*prefix, *error.absolute_path]
                out.append(Finding(rel, line_for(b, rel, path), "schema", _(
                    "{path} does not match the {schema} schema at {where}: {reason}").format(
                        path=rel, schema=name, where="/".join(map(str, error.absolute_path)) or "/",
                        reason=error.message)))
    return out
