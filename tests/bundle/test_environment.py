"""One declared node environment per bundle (issue 28): plan.json `environment` names the image every launcher and
platform runs in and the Python inside it; mainland bundles name only hosts a mainland node reaches (Alibaba
registries, Alibaba's PyPI mirror, ModelScope, OSS); the rehearsal's Python is the node's."""

from __future__ import annotations

import json
import re
import sys

import pytest
import yaml

from gpuplan.plan.advice.node_env import forbidden_hosts
from gpuplan.render.bundle.node.environment import environments, mirror_region, node_environment, scope_of

from .env_matrix import MATRIX

# A forbidden host (data/environments.yaml, the list gpuplan check reads) in a URL or an image reference (followed by
# "/" or ":"), not a word such as Ubuntu's `docker.io` package.
FORBIDDEN = re.compile(r"(?<![\w.-])((?:[\w-]+\.)*(?:" + "|".join(re.escape(h) for h in forbidden_hosts()) + r"))(?=[/:])")


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, str]]:
    return {name: make() for name, make in MATRIX.items()}


@pytest.mark.parametrize("name", list(MATRIX))
def test_plan_json_declares_the_environment_everything_runs_in(name, rendered):
    files = rendered[name]
    doc = json.loads(files["plan.json"])
    env, region = doc["environment"], doc["plan"]["region"]
    assert set(env) >= {"image", "python", "cuda", "torch", "registry", "pip_index", "weights_source"}
    assert re.fullmatch(r"3\.\d+", env["python"]) and env["torch"] and env["cuda"]
    # the Dockerfile builds FROM the declared base, and what it builds is the declared image (ACR, plan's region)
    assert f"FROM {env['base_image']}\n" in files["Dockerfile"]
    assert env["image"].startswith(f"registry.{region}.aliyuncs.com/") and env["registry"] in env["image"]
    # every platform definition runs that image
    for path, text in files.items():
        if path in ("k8s/job.yaml", "k8s/deployment.yaml"):
            for d in yaml.safe_load_all(text):
                for c in (d.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []) + \
                        (d.get("spec", {}).get("template", {}).get("spec", {}).get("initContainers") or []):
                    assert c["image"] == env["image"], (name, path, c["name"])
        if path == "pai-dlc-job.json":
            assert all(s["Image"] == env["image"] for s in json.loads(text)["JobSpecs"])
    if scope_of(region) == "mainland":
        assert env["weights_source"] == "modelscope" and env["pip_index"].startswith("https://mirrors.aliyun.com/")
        assert env["base_image"].split("/")[0].endswith(".cr.aliyuncs.com")
        assert f"-i {env['pip_index']}" in files["Dockerfile"]
    else:
        assert env["weights_source"] == "huggingface"


@pytest.mark.parametrize("name", [n for n in MATRIX if not n.endswith("singapore")])
def test_a_mainland_bundle_names_no_host_a_mainland_node_cannot_reach(name, rendered):
    files = rendered[name]
    assert json.loads(files["plan.json"])["environment"]["scope"] == "mainland"
    env = json.loads(files["plan.json"])["environment"]
    # PLAN.md names NVIDIA's registry only as the source of the documented copy, to run from outside the mainland
    sources = [c["source"] for c in env["copied_images"]]
    hits = [(path, m.group(1)) for path, text in files.items() if path != "plan.json"
            for m in FORBIDDEN.finditer(text)
            if not (path == "PLAN.md" and any(text.startswith(src, m.start()) for src in sources))]
    assert not hits, hits
    assert set(env["forbidden_hosts"]) >= {"docker.io", "nvcr.io", "huggingface.co", "nvidia.github.io"}
    if "node-bootstrap.sh" in files:   # the NVIDIA Container Toolkit from Alibaba's mirror of NVIDIA's repository
        assert env["nvidia_container_toolkit_repo"] == "https://mirrors.aliyun.com/libnvidia-container"
        assert "NCT_REPO=https://mirrors.aliyun.com/libnvidia-container" in files["node-bootstrap.sh"]
    # the DCGM exporter: the one documented copy in your ACR, and PLAN.md says how to make it
    if "cloud-init.yaml" in files:
        (copy,) = env["copied_images"]
        assert copy["image"].startswith(env["registry"] + "/") and copy["source"].startswith("nvcr.io/")
        assert copy["image"] in files["cloud-init.yaml"]
        assert f"docker pull {copy['source']} && docker tag {copy['source']} {copy['image']}" in files["PLAN.md"]


def test_hong_kong_is_not_mainland_for_the_environment_either():
    """One rule (catalog.hardware.regions.is_mainland): cn-hongkong reaches Hugging Face and PyPI."""
    e = node_environment(region="cn-hongkong", slug="x", stack="training")
    assert e.scope == "global" and e.pip_index == "https://pypi.org/simple" and e.weights_source == "huggingface"
    assert node_environment(region="cn-shenzhen", slug="x", stack="training").scope == "mainland"


def test_outside_the_mainland_the_same_image_comes_from_its_nearest_copy():
    assert mirror_region("cn-shanghai") == "cn-hangzhou" and mirror_region("cn-zhangjiakou") == "cn-beijing"
    assert mirror_region("ap-southeast-1") == "us-west-1"
    e = node_environment(region="ap-southeast-1", slug="x", stack="training")
    assert e.base_image.startswith("modelscope-registry.us-west-1.cr.aliyuncs.com/") and e.pip_index == \
        "https://pypi.org/simple"


def test_every_stack_and_image_carries_its_sources():
    data = environments()
    for image in data["images"].values():
        assert image["sources"] and image["python"] and image["cuda"] and image["torch"]
        assert f"py{image['python'].replace('.', '')}" in image["tag"] and f"cuda{image['cuda']}" in image["tag"]
        assert f"torch{image['torch']}" in image["tag"]
    for stack in data["stacks"].values():
        assert stack["image"] in data["images"] and stack["requirements"]


def test_the_node_image_runs_the_rehearsals_python():
    """The CPU rehearsal (`./launch.sh --smoke` in the tests) runs the Python minor version the node image declares
    (ModelScope's py311 image was chosen for it; data/environments.yaml)."""
    declared = {img["python"] for img in environments()["images"].values()}
    assert declared == {f"{sys.version_info.major}.{sys.version_info.minor}"}, \
        f"the node image runs Python {declared}, this rehearsal runs {sys.version.split()[0]}"
