"""Every pin of every bundle installs on the node it targets (issue 28): each bundle's requirements file resolves with
pip's own resolver for the Python its plan.json `environment` declares, on Linux x86_64 (glibc 2.35, the node image's
Ubuntu 22.04), over a matrix of bundles: training under torchrun (LoRA, full), QLoRA and 8-bit optimizers
(bitsandbytes), DeepSpeed, FSDP and Megatron (ms-swift), serving with vLLM and SGLang, diffusers (batch and online)
and faster-whisper. The image's torch is kept: the resolution installs exactly the torch the environment declares.

This test uses the package index (PyPI, or the index pip is configured with). Each distinct requirements text is
resolved once and cached (~/.cache/gpuplan/pip-resolve; tests/bundle/pip_resolve.py). Without network and without a
cached resolution it FAILS with the reason: it never passes without having resolved.
`pytest -m network` selects it; `-m "not network"` leaves it out.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from .env_matrix import MATRIX
from .pip_resolve import IndexUnreachable, resolve

pytestmark = pytest.mark.network


REQUIREMENT_FILES = ("requirements.txt", "requirements-serve.txt")


@pytest.fixture(scope="module")
def matrix() -> dict[str, tuple[dict, str, str]]:
    """name -> (environment, requirements file name, its text) for every bundle of the matrix."""
    out = {}
    for name, make in MATRIX.items():
        files = make()
        env = json.loads(files["plan.json"])["environment"]
        req = env["requirements_file"]
        assert req in REQUIREMENT_FILES and req in files, (name, sorted(files))
        out[name] = (env, req, files[req])
    return out


@pytest.fixture(scope="module")
def resolutions(matrix):
    """One pip resolution per distinct (requirements text, Python), four at a time."""
    keys = sorted({(text, env["python"]) for env, _req, text in matrix.values()})
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            done = dict(zip(keys, pool.map(lambda k: resolve(*k), keys), strict=True))
    except IndexUnreachable as exc:
        pytest.fail(f"the requirements were not resolved (no package index and no cached resolution): {exc}",
                    pytrace=False)
    return done


def test_the_matrix_covers_every_stack(matrix):
    stacks = {env["stack"] for env, _req, _text in matrix.values()}
    assert stacks == {"training", "megatron", "vllm", "sglang", "diffusers", "whisper"}
    assert {env["scope"] for env, _req, _text in matrix.values()} == {"mainland", "global"}


@pytest.mark.parametrize("name", list(MATRIX))
def test_every_pin_resolves_for_the_declared_python_on_linux_x86_64(name, matrix, resolutions):
    env, req, text = matrix[name]
    r = resolutions[(text, env["python"])]
    assert r.ok, f"{name}: {req} does not resolve for Python {env['python']} on linux_x86_64:\n{r.error}"
    pins = env["requirements"]
    for package, version in pins.items():
        key = package.split("[")[0].lower()
        assert r.installed.get(key, r.sdists.get(key)) == version, (name, package, version)
    # the file is exactly the declared pins, one line each
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert lines == [f"{k}=={v}" for k, v in pins.items()]


@pytest.mark.parametrize("name", list(MATRIX))
def test_the_images_torch_is_kept(name, matrix, resolutions):
    """GPU nodes get torch from the image: the file pins the image's torch (or, for SGLang's own virtual
    environment, the torch its plan.json declares), so pip installs no other torch over it."""
    env, _req, text = matrix[name]
    r = resolutions[(text, env["python"])]
    if "torch" in r.installed:
        assert r.installed["torch"] == env["torch"], (name, r.installed["torch"], env["torch"])
    if env["venv"] is None and env["stack"] != "whisper":
        assert f"torch=={env['torch']}" in text.splitlines()
