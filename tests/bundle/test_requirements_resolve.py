"""Every pin of every bundle installs on the node it targets (issue 28), proven by pip's own resolver.

The pins come from one place, data/environments.yaml (``gpuplan.plan.advice.node_env.pin_sets()``: each stack with its
optional parts, for its image's Python). ``python scripts/gen_pin_metadata.py`` resolves every set with pip for that
Python on Linux x86_64 (glibc 2.35, the node image's Ubuntu 22.04) against PyPI and commits the resolution as
tests/bundle/resolved/<key>.json. These tests check, offline and in seconds:

- every bundle of a matrix (training under torchrun (LoRA, full), QLoRA and 8-bit optimizers, DeepSpeed, FSDP and
  Megatron, serving with vLLM and SGLang, diffusers batch and online, faster-whisper; mainland and Singapore) writes
  one of those sets, and every set has a recorded resolution (a new set fails, with the command that records it; with
  network it is resolved live first, to say whether it resolves);
- each recorded resolution proves its pins for the declared Python: the pins are installed at their versions, every
  distribution's Requires-Python admits the Python, every Requires-Dist that applies on Linux x86_64 CPython is met
  within the set, every wheel's tags fit the node (scripts/pip_resolve.py ``verify``, packaging only);
- the metadata `gpuplan check` ships (src/gpuplan/data/pin_metadata.json) is the resolutions' own, and the static
  check passes every recorded set pip resolved and refuses every set pip refused (the two proofs agree);
- ``GPUPLAN_RESOLVE_LIVE=1`` resolves every set again with pip against the index (``-m network``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from gpuplan.plan.advice.node_env import pin_sets

from .env_matrix import MATRIX

ROOT = Path(__file__).resolve().parents[2]
RESOLVED = Path(__file__).parent / "resolved"
RECORD_CMD = "python scripts/gen_pin_metadata.py"
REQUIREMENT_FILES = ("requirements.txt", "requirements-serve.txt")


def _load_resolver():
    spec = importlib.util.spec_from_file_location("pip_resolve", ROOT / "scripts" / "pip_resolve.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("pip_resolve", mod)
    spec.loader.exec_module(mod)
    return mod


PR = _load_resolver()
SETS = {name: (python, [f"{k}=={v}" for k, v in pins]) for name, (python, pins) in pin_sets().items()}
RECORDS = {p.stem: json.loads(p.read_text()) for p in sorted(RESOLVED.glob("*.json"))}


def _record(python: str, lines: list[str]) -> dict:
    key = PR.requirements_key(python, lines)
    if key in RECORDS:
        return RECORDS[key]
    hint = f"no recorded resolution for Python {python}: {' '.join(lines)} (key {key}); record it: {RECORD_CMD}"
    try:
        live = PR.record(lines, python)
    except (PR.IndexUnreachable, OSError) as exc:
        pytest.fail(f"{hint}\n(not resolved live either: {exc})", pytrace=False)
    verdict = "pip resolves it" if live["ok"] else "pip REFUSES it:\n" + live["error"]
    pytest.fail(f"{hint}\nresolved live just now: {verdict}", pytrace=False)


@pytest.fixture(scope="module")
def bundles() -> dict[str, tuple[dict, str]]:
    """name -> (environment, requirements text) for every bundle of the matrix."""
    out = {}
    for name, make in MATRIX.items():
        files = make()
        env = json.loads(files["plan.json"])["environment"]
        req = env["requirements_file"]
        assert req in REQUIREMENT_FILES and req in files, (name, sorted(files))
        out[name] = (env, files[req])
    return out


def test_the_matrix_covers_every_stack(bundles):
    stacks = {env["stack"] for env, _text in bundles.values()}
    assert stacks == {"training", "megatron", "vllm", "sglang", "diffusers", "whisper", "embeddings"}
    assert {env["scope"] for env, _text in bundles.values()} == {"mainland", "global"}


@pytest.mark.parametrize("name", list(MATRIX))
def test_every_bundle_writes_a_declared_set_with_a_recorded_resolution(name, bundles):
    env, text = bundles[name]
    lines = PR.pin_lines(text)
    # the file is exactly the declared pins, one line each, and the set is one data/environments.yaml declares
    assert lines == [f"{k}=={v}" for k, v in env["requirements"].items()]
    assert (env["python"], lines) in SETS.values(), (name, lines)
    rec = _record(env["python"], lines)
    assert rec["ok"] and not PR.verify(rec, env["python"], env["requirements"])


@pytest.mark.parametrize("name", list(SETS))
def test_the_recorded_resolution_proves_the_pins(name):
    python, lines = SETS[name]
    rec = _record(python, lines)
    assert rec["ok"], f"{name}: pip refused {lines} for Python {python}:\n{rec['error']}"
    pins = dict(line.split("==") for line in lines)
    problems = PR.verify(rec, python, pins)
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_the_verifier_finds_what_pip_would_refuse():
    """verify() is not vacuous: each broken record below is refused for its reason."""
    python, lines = SETS["megatron"]
    rec = json.loads(json.dumps(_record(python, lines)))
    pins = dict(line.split("==") for line in lines)
    bridge = next(i for i in rec["install"] if i["name"] == "mcore-bridge")
    bridge["version"] = "1.6.0"
    assert any("ms-swift" in p and "mcore-bridge" in p for p in PR.verify(rec, python, pins))
    rec = json.loads(json.dumps(_record(python, lines)))
    core = next(i for i in rec["install"] if i["name"] == "megatron-core")
    core["requires_python"] = ">=3.12"
    assert any("megatron-core" in p and "requires Python >=3.12" in p for p in PR.verify(rec, python, pins))
    rec = json.loads(json.dumps(_record(python, lines)))
    torch = next(i for i in rec["install"] if i["name"] == "torch")
    torch["wheel"] = torch["wheel"].replace("cp311-cp311", "cp312-cp312")
    assert any("has no tag" in p for p in PR.verify(rec, python, pins))
    assert PR.verify(rec, "3.10", pins)


def test_every_recorded_set_is_a_set_some_bundle_writes_or_a_refused_one():
    keys = {PR.requirements_key(p, ln) for p, ln in SETS.values()}
    for key, rec in RECORDS.items():
        assert key == rec["key"] == PR.requirements_key(rec["python"], rec["requirements"])
        assert key in keys or rec.get("expect") == "refused", (key, rec.get("name"))
        assert rec["ok"] == (rec.get("expect") != "refused"), (rec.get("name"), rec["error"])


def test_the_shipped_metadata_is_the_resolutions():
    from gpuplan.check.pins import metadata

    shipped = metadata()["packages"]
    for python, lines in SETS.values():
        got = {i["name"]: i for i in _record(python, lines)["install"]}
        for line in lines:
            pkg, version = line.split("==")
            item = got[PR.norm(pkg.split("[")[0])]
            ship = shipped[item["name"]][version]
            # the same release's Requires-Dist, in any order: an sdist's metadata is built on the resolving machine,
            # and DeepSpeed 0.19.8's setup.py lists its "all" extra from a set (order changes between builds)
            assert (ship["requires_python"], sorted(ship["requires_dist"])) == (
                item["requires_python"], sorted(item["requires_dist"])), line


@pytest.mark.parametrize("key", list(RECORDS))
def test_the_static_check_agrees_with_the_resolver(key, tmp_path):
    """gpuplan check (shipped metadata, offline) passes every set pip resolved and refuses every set pip refused."""
    from gpuplan.check import check_bundle

    rec = RECORDS[key]
    (tmp_path / "plan.json").write_text(json.dumps({"schema_version": 1, "plan": {"region": "cn-shanghai"},
                                                    "workload": {"task": "inference"},
                                                    "environment": {"python": rec["python"]}}))
    (tmp_path / "requirements.txt").write_text("\n".join(rec["requirements"]) + "\n")
    report = check_bundle(tmp_path, only=("pins",))
    assert report.ok == rec["ok"], (rec.get("name"), [f.render() for f in report.findings], rec["error"][-300:])


@pytest.mark.parametrize("name", list(MATRIX))
def test_the_images_torch_is_kept(name, bundles):
    """GPU nodes get torch from the image: the file pins the image's torch (or, for SGLang's own virtual
    environment, the torch its plan.json declares), so pip installs no other torch over it."""
    env, text = bundles[name]
    rec = _record(env["python"], PR.pin_lines(text))
    versions = {i["name"]: i["version"] for i in rec["install"]}
    if "torch" in versions:
        assert versions["torch"] == env["torch"], (name, versions["torch"], env["torch"])
    if env["venv"] is None and env["stack"] != "whisper":
        assert f"torch=={env['torch']}" in text.splitlines()


@pytest.mark.network
@pytest.mark.skipif(os.environ.get("GPUPLAN_RESOLVE_LIVE") != "1", reason="GPUPLAN_RESOLVE_LIVE=1 resolves live")
@pytest.mark.parametrize("key", list(RECORDS))
def test_live_resolution_still_agrees(key):
    """pip, asked again now, resolves (or refuses) each recorded set the same way and installs the same pins."""
    rec = RECORDS[key]
    try:
        live = PR.record(rec["requirements"], rec["python"])
    except PR.IndexUnreachable as exc:
        pytest.fail(f"GPUPLAN_RESOLVE_LIVE=1 but the package index is unreachable: {exc}", pytrace=False)
    assert live["ok"] == rec["ok"], live["error"]
    if live["ok"]:
        pins = dict(line.split("==") for line in rec["requirements"])
        assert not PR.verify(live, rec["python"], pins)
