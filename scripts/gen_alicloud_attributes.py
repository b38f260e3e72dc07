"""Vendor the arguments of the alicloud Terraform provider resources the bundles write, for `gpuplan check`.

Reads the provider's Go source (a checkout of https://github.com/aliyun/terraform-provider-alicloud) and writes
src/gpuplan/data/alicloud_provider_attributes.json: for each resource and data source, every argument with
required / optional / computed-only, removed or deprecated, its nested blocks, and the plan-time validation the
provider runs on a literal value (IntBetween, IntAtLeast, FloatBetween, StringInSlice, IntInSlice, validation.Any).

    python scripts/gen_alicloud_attributes.py /path/to/terraform-provider-alicloud [COMMIT VERSION]

(COMMIT and VERSION name what was read when the folder is an export without .git, e.g. `git archive HEAD alicloud`.)

Run it again when the bundles use a new resource type (add it to RESOURCES / DATA_SOURCES) or to follow a newer
provider; the JSON records the commit and version it was read from.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

RESOURCES = (
    "alicloud_vpc", "alicloud_vswitch", "alicloud_security_group", "alicloud_security_group_rule", "alicloud_instance",
    "alicloud_ecs_disk", "alicloud_ecs_disk_attachment", "alicloud_ecs_network_interface",
    "alicloud_ecs_network_interface_attachment", "alicloud_nas_file_system", "alicloud_nas_mount_target",
    "alicloud_nas_protocol_service", "alicloud_nas_fileset", "alicloud_nas_protocol_mount_target",
    "alicloud_fcv3_function", "alicloud_fcv3_trigger", "alicloud_fcv3_provision_config",
    "alicloud_fcv3_concurrency_config", "alicloud_ess_scaling_group", "alicloud_ess_scaling_configuration",
    "alicloud_ess_scaling_rule", "alicloud_ess_alarm", "alicloud_ess_scalinggroup_vserver_groups",
    "alicloud_slb_load_balancer", "alicloud_slb_server_group", "alicloud_slb_server_group_server_attachment",
    "alicloud_slb_listener", "alicloud_nlb_load_balancer", "alicloud_nlb_server_group", "alicloud_nlb_listener",
    "alicloud_nlb_server_group_server_attachment", "alicloud_alb_load_balancer", "alicloud_alb_server_group",
    "alicloud_alb_listener", "alicloud_cs_kubernetes_node_pool", "alicloud_ram_role",
    "alicloud_ram_role_policy_attachment",
)
DATA_SOURCES = ("alicloud_zones", "alicloud_images", "alicloud_instance_types", "alicloud_enhanced_nat_available_zones",
                "alicloud_nas_zones")
OUT = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "data" / "alicloud_provider_attributes.json"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _match(text: str, start: int, open_ch: str = "{", close_ch: str = "}") -> int:
    """Index just after the bracket closing the one at ``start``, skipping Go strings and comments."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch == "`":
            i = text.find("`", i + 1)
        elif ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced")


SCHEMA_FUNCS: dict[str, str] = {}   # helper functions returning a *schema.Schema (tagsSchema(), ...): their body


def _entries(body: str) -> list[tuple[str, str]]:
    """The top-level ``"name": {...}`` entries of a Go map literal body; ``"name": helper()`` entries get the body of
    the ``&schema.Schema{...}`` the helper returns (empty when it cannot be read)."""
    out, i = [], 0
    key = re.compile(r'\s*"([A-Za-z0-9_]+)"\s*:\s*(&schema\.Schema\s*)?\{')
    call = re.compile(r'\s*"([A-Za-z0-9_]+)"\s*:\s*(\w+)\(\)\s*,')
    while i < len(body):
        if body.startswith("//", i):
            i = body.find("\n", i)
            if i < 0:
                break
            continue
        m = key.match(body, i)
        c = None if m else call.match(body, i)
        if m:
            end = _match(body, m.end() - 1)
            out.append((m.group(1), body[m.end():end - 1]))
            i = end
        elif c:
            out.append((c.group(1), SCHEMA_FUNCS.get(c.group(2), "Optional: true")))
            i = c.end()
        else:
            i += 1
    return out


def _top_field(body: str, name: str) -> str | None:
    """The expression of ``Name: ...`` at depth 0 of an entry body, up to its comma."""
    depth, i = 0, 0
    pat = re.compile(rf"\b{name}\s*:")
    while i < len(body):
        ch = body[i]
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == '"':
            i += 1
            while i < len(body) and body[i] != '"':
                i += 2 if body[i] == "\\" else 1
        elif depth == 0:
            m = pat.match(body, i)
            if m and (i == 0 or not body[i - 1].isalnum()):
                j, d = m.end(), 0
                while j < len(body):
                    c = body[j]
                    if c in "{([":
                        d += 1
                    elif c in "})]":
                        if d == 0:
                            break
                        d -= 1
                    elif c == "," and d == 0:
                        break
                    elif c == '"':
                        j += 1
                        while j < len(body) and body[j] != '"':
                            j += 2 if body[j] == "\\" else 1
                    j += 1
                return body[m.end():j].strip()
        i += 1
    return None


def _validator(expr: str | None):
    """A literal-checkable form of a ValidateFunc, or None."""
    if not expr:
        return None
    e = re.sub(r"\s+", " ", expr).replace("validation.", "")
    if e.startswith("Any("):
        parts, depth, cur = [], 0, ""
        for ch in e[4:-1]:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        subs = [_validator(p.strip()) for p in parts if p.strip()]
        return {"any": subs} if subs and all(subs) else None
    m = re.fullmatch(r"IntBetween\((-?\d+), (-?\d+)\)", e)
    if m:
        return {"int_between": [int(m.group(1)), int(m.group(2))]}
    m = re.fullmatch(r"IntAtLeast\((-?\d+)\)", e)
    if m:
        return {"int_at_least": int(m.group(1))}
    m = re.fullmatch(r"FloatBetween\((-?[\d.]+), (-?[\d.]+)\)", e)
    if m:
        return {"float_between": [float(m.group(1)), float(m.group(2))]}
    m = re.fullmatch(r"IntInSlice\(\[\]int\{([-\d, ]*)\}\)", e)
    if m:
        return {"int_in": [int(x) for x in m.group(1).split(",") if x.strip()]}
    m = re.fullmatch(r"StringInSlice\(\[\]string\{(.*)\}, (true|false)\)", e)
    if m:
        items = [x.strip() for x in m.group(1).split(",") if x.strip()]
        if items and all(re.fullmatch(r'"[^"]*"', x) for x in items):
            return {"string_in": [x[1:-1] for x in items], "ignore_case": m.group(2) == "true"}
    return None


def _schema(body: str) -> dict:
    """{argument: {...}} of a ``map[string]*schema.Schema{...}`` body."""
    out = {}
    for name, entry in _entries(body):
        flag = {f: (_top_field(entry, f) or "").startswith("true") for f in ("Required", "Optional", "Computed")}
        # Only the flags that hold: {"required": true} | {"optional": true} | {"computed_only": true}
        arg: dict = {k: True for k, on in (("required", flag["Required"]), ("optional", flag["Optional"]),
                                          ("computed_only", flag["Computed"] and not flag["Required"]
                                           and not flag["Optional"])) if on}
        if _top_field(entry, "Removed"):
            arg["removed"] = True
        if _top_field(entry, "Deprecated"):
            arg["deprecated"] = True
        v = _validator(_top_field(entry, "ValidateFunc"))
        if v:
            arg["validate"] = v
        elem = _top_field(entry, "Elem") or ""
        m = re.match(r"&schema\.Resource\s*\{", elem)
        if m:
            inner = _top_field(elem[m.end():_match(elem, m.end() - 1) - 1], "Schema") or ""
            mm = re.match(r"map\[string\]\*schema\.Schema\s*\{", inner)
            if mm:
                arg["block"] = _schema(inner[mm.end():_match(inner, mm.end() - 1) - 1])
            else:
                arg["block"] = None      # built by a helper function: not vendored, not checked
        out[name] = arg
    return out


def _functions(repo: Path) -> dict[str, str]:
    """Go function name -> source text of the function, over the provider's alicloud/ package."""
    out = {}
    for path in (repo / "alicloud").glob("*.go"):
        if path.name.endswith("_test.go"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"^func (\w+)\(\) \*schema\.Resource \{", text, re.M):
            out[m.group(1)] = text[m.start():_match(text, m.end() - 1)]
        for m in re.finditer(r"^func (\w+)\(\) \*schema\.Schema \{", text, re.M):
            fn = text[m.start():_match(text, m.end() - 1)]
            r = re.search(r"return &schema\.Schema\s*\{", fn)
            if r:
                SCHEMA_FUNCS[m.group(1)] = fn[r.end():_match(fn, r.end() - 1) - 1]
    return out


def _registry(provider_go: str, section: str) -> dict[str, str]:
    start = provider_go.index(f"{section}: map[string]*schema.Resource{{")
    body = provider_go[start:_match(provider_go, provider_go.index("{", start))]
    return dict(re.findall(r'"(alicloud_[a-z0-9_]+)":\s+(\w+)\(\)', body))


def vendor(repo: Path, commit: str | None = None, version: str | None = None) -> dict:
    provider_go = (repo / "alicloud" / "provider.go").read_text(encoding="utf-8")
    funcs = _functions(repo)
    doc: dict = {
        "source": "https://github.com/aliyun/terraform-provider-alicloud",
        "commit": commit or _git(repo, "rev-parse", "HEAD"),
        "version": version or _git(repo, "describe", "--tags"),
        "generated_by": "scripts/gen_alicloud_attributes.py",
        "resource": {}, "data": {},
    }
    for kind, section, names in (("resource", "ResourcesMap", RESOURCES), ("data", "DataSourcesMap", DATA_SOURCES)):
        reg = _registry(provider_go, section)
        for name in names:
            fn = funcs[reg[name]]
            m = re.search(r"\bSchema:\s*map\[string\]\*schema\.Schema\s*\{", fn)
            if not m:
                raise SystemExit(f"{name}: schema not written as a literal map in {reg[name]}")
            doc[kind][name] = {"function": reg[name],
                               "arguments": _schema(fn[m.end():_match(fn, m.end() - 1) - 1]),
                               "timeouts": "Timeouts:" in fn}
    return doc


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print(__doc__)
        return 2
    doc = vendor(Path(argv[1]), *(argv[2:4] or (None, None)))
    OUT.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(doc['resource'])} resources, {len(doc['data'])} data sources, {doc['version']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
