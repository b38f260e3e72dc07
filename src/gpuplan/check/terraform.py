"""Terraform as ``terraform plan`` with the alicloud provider would read it, without the provider:

- every resource and data source type exists, every argument is one the provider accepts (not removed), every
  required argument is set, and literal values pass the provider's own plan-time validation (IntBetween,
  StringInSlice, ...): data/alicloud_provider_attributes.json, vendored from the provider's Go source
  (scripts/gen_alicloud_attributes.py; the JSON names the commit);
- every ``var.``, ``local.``, ``data.`` and resource reference is declared;
- ``auto_release_hours = 0`` (documented as "never") sets no release time: the expression must have a null branch;
- several instances of a service stand behind a load balancer whose health check asks the serve port.
"""

from __future__ import annotations

import functools
import json
import re
from importlib.resources import files as _pkg_files

from gpuplan.check import hcl
from gpuplan.check.bundle import Bundle, Finding
from gpuplan.i18n import _

META = {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection", "dynamic"}
LOAD_BALANCERS = ("alicloud_slb_load_balancer", "alicloud_alb_load_balancer", "alicloud_nlb_load_balancer")
REF = re.compile(r"(?<![\w.$])(var|local|data|alicloud_[a-z0-9_]+)\.([a-z0-9_]+)(?:\.([a-z0-9_]+))?")
BUILTIN = {"path", "count", "each", "self", "terraform"}


@functools.cache
def provider_schema() -> dict:
    return json.loads((_pkg_files("gpuplan") / "data" / "alicloud_provider_attributes.json").read_text(encoding="utf-8"))


def _valid(value, rule: dict) -> bool:
    if "any" in rule:
        return any(_valid(value, r) for r in rule["any"])
    if isinstance(value, bool):
        return True
    if "int_between" in rule:
        lo, hi = rule["int_between"]
        return isinstance(value, int) and lo <= value <= hi
    if "int_at_least" in rule:
        return isinstance(value, int) and value >= rule["int_at_least"]
    if "float_between" in rule:
        lo, hi = rule["float_between"]
        return isinstance(value, (int, float)) and lo <= value <= hi
    if "int_in" in rule:
        return value in rule["int_in"]
    if "string_in" in rule:
        allowed = rule["string_in"]
        if rule.get("ignore_case"):
            return str(value).lower() in {a.lower() for a in allowed}
        return value in allowed
    return True


def _arguments(rel: str, blk: hcl.Block, schema: dict, where: str) -> list[Finding]:
    out = []
    for name, (expr, line) in blk.attrs.items():
        spec = schema.get(name)
        if name in META:
            continue
        if spec is None or spec.get("computed_only"):
            out.append(Finding(rel, line, "tf-argument", _("{where} has no argument {name} in the alicloud provider "
                                                           "(it would fail at terraform plan).").format(where=where, name=name)))
            continue
        if spec.get("removed"):
            out.append(Finding(rel, line, "tf-argument", _("{where}: the alicloud provider removed the argument {name}.")
                               .format(where=where, name=name)))
        value = hcl.literal(expr)
        if value is not None and spec.get("validate") and not _valid(value, spec["validate"]):
            out.append(Finding(rel, line, "tf-value", _("{where}: {name} = {value} fails the provider's validation "
                                                        "({rule}).").format(where=where, name=name, value=expr,
                                                                             rule=json.dumps(spec["validate"]))))
    for child in blk.blocks:
        if child.kind in META or child.kind == "timeouts":
            continue
        spec = schema.get(child.kind)
        if spec is None or "block" not in spec:
            out.append(Finding(rel, child.line, "tf-argument", _("{where} has no block {name} in the alicloud provider.")
                               .format(where=where, name=child.kind)))
        elif spec["block"] is not None:
            out += _arguments(rel, child, spec["block"], f"{where}.{child.kind}")
    for name, spec in schema.items():
        if spec.get("required") and name not in blk.attrs and not any(c.kind == name for c in blk.blocks):
            out.append(Finding(rel, blk.line, "tf-required", _("{where} lacks the required argument {name}.")
                               .format(where=where, name=name)))
    return out


def _provider(rel: str, blocks: list[hcl.Block]) -> list[Finding]:
    out = []
    schema = provider_schema()
    for kind, section in (("resource", "resource"), ("data", "data")):
        for key, blk in hcl.resources(blocks, kind).items():
            rtype = blk.labels[0]
            if not rtype.startswith("alicloud_"):
                continue
            where = f"{'data.' if kind == 'data' else ''}{key}"
            entry = schema[section].get(rtype)
            if entry is None:
                out.append(Finding(rel, blk.line, "tf-type", _(
                    "{type} is not a {kind} of the alicloud provider gpuplan checks against ({version}).").format(
                        type=rtype, kind=kind, version=schema["version"])))
                continue
            out += _arguments(rel, blk, entry["arguments"], where)
    return out


def _declared(blocks: list[hcl.Block]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"var": set(), "local": set(), "data": set(), "resource": set()}
    for blk in blocks:
        if blk.kind == "variable" and blk.labels:
            out["var"].add(blk.labels[0])
        elif blk.kind == "locals":
            out["local"].update(blk.attrs)
        elif blk.kind in ("data", "resource") and len(blk.labels) >= 2:
            out[blk.kind].add(".".join(blk.labels[:2]))
    return out


def _expressions(blk: hcl.Block):
    for expr, line in blk.attrs.values():
        yield expr, line
    for child in blk.blocks:
        yield from _expressions(child)


def _references(files: dict[str, list[hcl.Block]]) -> list[Finding]:
    declared = _declared([b for blocks in files.values() for b in blocks])
    out = []
    for rel, blocks in files.items():
        for blk in blocks:
            for expr, line in _expressions(blk):
                code = re.sub(r'"(?:[^"\\$]|\\.|\$(?!\{))*"', '""', expr)   # literal strings without ${...}
                for root, name, sub in REF.findall(code):
                    if root in BUILTIN:
                        continue
                    key = {"var": ("var", name), "local": ("local", name), "data": ("data", f"{name}.{sub}")}.get(
                        root, ("resource", f"{root}.{name}"))
                    if key[1] not in declared[key[0]]:
                        shown = f"{root}.{name}" + (f".{sub}" if root == "data" else "")
                        out.append(Finding(rel, line, "tf-reference", _("{ref} is not declared in this module.")
                                           .format(ref=shown)))
    return out


def _defaults(blocks: list[hcl.Block]) -> dict[str, object]:
    return {b.labels[0]: hcl.literal(b.attrs["default"][0]) for b in blocks
            if b.kind == "variable" and b.labels and "default" in b.attrs}


def _auto_release(rel: str, blocks: list[hcl.Block]) -> list[Finding]:
    out = []
    for key, blk in hcl.resources(blocks).items():
        if not key.startswith("alicloud_instance.") or "auto_release_time" not in blk.attrs:
            continue
        expr, line = blk.attrs["auto_release_time"]
        if "var." in expr and "timeadd" in expr and "null" not in expr:
            out.append(Finding(rel, line, "auto-release", _(
                "auto_release_time is computed from a variable with no null branch: auto_release_hours = 0 "
                "(\"never\") would set the release time to now and the apply fails. Set no release time for 0.")))
    return out


def _count(blk: hcl.Block, defaults: dict) -> int:
    if "count" not in blk.attrs:
        return 1
    expr = blk.attrs["count"][0]
    value = hcl.literal(expr)
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"var\.(\w+)", expr.strip())
    default = defaults.get(m.group(1)) if m else None
    return default if isinstance(default, int) else 1


def _serve_port(b: Bundle) -> int | None:
    m = re.search(r"^EXPOSE (\d+)", b.text("Dockerfile") or "", re.M)
    return int(m.group(1)) if m else None


def _load_balancer(b: Bundle, rel_dir: str, files: dict[str, list[hcl.Block]]) -> list[Finding]:
    """Several instances of a server need one address with a health check on the serve port."""
    blocks = [blk for bl in files.values() for blk in bl]
    res = hcl.resources(blocks)
    defaults = _defaults(blocks)
    rel_main = f"{rel_dir}/main.tf" if f"{rel_dir}/main.tf" in files else next(iter(files))
    if rel_dir == "terraform":
        inst = res.get("alicloud_instance.gpu") or next((v for k, v in res.items() if k.startswith("alicloud_instance.")), None)
        if inst is None:
            return []
        per_replica = int(b.field("plan.parallel.nodes_per_replica", 1) or 1)
        replicas = _count(inst, defaults) // max(1, per_replica)
        anchor, line = rel_main, inst.line
    else:   # an ESS scaling group
        group = next((v for k, v in res.items() if k.startswith("alicloud_ess_scaling_group.")), None)
        if group is None:
            return []
        expr = group.attrs.get("max_size", ("1", None))[0]
        m = re.fullmatch(r"var\.(\w+)", expr.strip())
        value = defaults.get(m.group(1)) if m else hcl.literal(expr)
        replicas = value if isinstance(value, int) else 1
        anchor, line = rel_main, group.line
    if replicas <= 1:
        return []
    lbs = [k for k in res if k.split(".")[0] in LOAD_BALANCERS]
    if not lbs:
        return [Finding(anchor, line, "load-balancer", _(
            "{n} instances of the service have no load balancer in front of them (add an SLB/ALB/NLB with a health "
            "check): clients would need every instance's address.").format(n=replicas))]
    port = _serve_port(b)
    listeners = [v for k, v in res.items() if k.split(".")[0] in ("alicloud_slb_listener", "alicloud_nlb_listener",
                                                                   "alicloud_alb_listener")]
    checked = []
    for lst in listeners:
        uri = lst.attrs.get("health_check_uri") or lst.attrs.get("health_check_domain")
        backend = hcl.literal(lst.attrs.get("health_check_connect_port", lst.attrs.get("backend_port", ("", 0)))[0])
        if lst.labels[0] != "alicloud_slb_listener" or (uri and (port is None or backend == port)):
            checked.append(lst)
    if not checked:
        return [Finding(anchor, line, "load-balancer", _(
            "The load balancer has no listener whose health check asks the serve port {port}: it would send requests "
            "to instances that are still loading the model.").format(port=port))]
    return []


def check(b: Bundle) -> list[Finding]:
    dirs = sorted({rel.rsplit("/", 1)[0] for rel in b.glob("**/*.tf") if "/" in rel})
    out: list[Finding] = []
    server = not b.training and any(b.has(f) for f in ("serve.sh", "serve_images.py"))
    for d in dirs:
        files = {rel: hcl.parse(b.text(rel) or "") for rel in b.glob(f"{d}/*.tf")}
        for rel, blocks in files.items():
            out += _provider(rel, blocks) + _auto_release(rel, blocks)
        out += _references(files)
        if server and d in ("terraform", "autoscale/ess"):
            out += _load_balancer(b, d, files)
    return out
