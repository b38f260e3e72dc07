"""Weights fetched once, in the region, and used (issue 28): the ModelScope id of every library model comes from one
table (ms-swift's registry, sourced ids, organisation rules; data/model_sources.yaml) and nothing is guessed; every
launcher and server loads the local copy fetch-model.sh made."""

from __future__ import annotations

import json

import pytest
import yaml

from gpuplan.catalog.models import list_models
from gpuplan.render.bundle import render_bundle
from gpuplan.render.bundle.node.model_sources import model_sources, modelscope_id, needs_remote_code

from .env_matrix import MATRIX
from .scenarios import inputs


def test_the_ids_the_issue_names():
    # ms-swift v4.5.2 swift/model/models/llama.py: Model('LLM-Research/Meta-Llama-3-70B', 'meta-llama/Meta-Llama-3-70B')
    assert modelscope_id("meta-llama/Meta-Llama-3-70B").id == "LLM-Research/Meta-Llama-3-70B"
    assert modelscope_id("meta-llama/Llama-3.1-8B").id == "LLM-Research/Meta-Llama-3.1-8B"   # HF renamed it
    assert modelscope_id("THUDM/chatglm3-6b").id == "ZhipuAI/chatglm3-6b"                      # THUDM -> zai-org
    assert modelscope_id("Qwen/Qwen2.5-7B-Instruct").id == "Qwen/Qwen2.5-7B-Instruct"
    assert modelscope_id("deepseek-ai/DeepSeek-R1").id == "deepseek-ai/DeepSeek-R1"
    unknown = modelscope_id("tiiuae/falcon-7b")
    assert unknown.id is None and unknown.rule is None          # not guessed
    assert modelscope_id("/data/models/mine").id is None


def test_the_curated_catalog_agrees_with_the_table():
    for m in list_models():
        if m.modelscope_id:
            assert modelscope_id(m.id).id == m.modelscope_id, m.id


def test_every_library_model_has_an_id_or_is_declared_unknown():
    ids = model_sources()["modelscope"]
    for m in list_models():
        if "/" not in m.id or ":" in m.id:
            continue
        got = modelscope_id(m.id)
        assert (got.id is None) == (got.rule is None), m.id
        if got.rule == "ms-swift":
            assert got.id in ids["ids"].values()
    known = sum(1 for m in list_models() if "/" in m.id and modelscope_id(m.id).id)
    assert known >= 150


def test_remote_code_models():
    assert needs_remote_code("Qwen/Qwen-7B-Chat", "qwen1") and needs_remote_code("internlm/internlm2-chat-7b", "llama")
    assert not needs_remote_code("Qwen/Qwen2.5-7B-Instruct", "qwen2")
    assert not needs_remote_code("deepseek-ai/DeepSeek-R1", "deepseekv3")   # transformers implements deepseek_v3


@pytest.mark.parametrize("name", list(MATRIX))
def test_every_launcher_and_server_loads_the_local_copy(name):
    files = MATRIX[name]()
    weights = json.loads(files["plan.json"])["weights"]
    local = weights["local_dir"]
    assert "fetch-model.sh" in files and f"DEFAULT_MODEL={weights['repo']}" in files["fetch-model.sh"]
    if "launch.sh" in files:
        assert f'MODEL_DIR="${{MODEL_DIR:-{local}}}"' in files["launch.sh"]
        assert 'MODEL="$MODEL" MODEL_DIR="$MODEL_DIR" ./fetch-model.sh; MODEL="$MODEL_DIR"' in files["launch.sh"]
    for script in ("serve.sh", "serve-sglang.sh"):
        if script in files:
            assert 'SERVE_PATH="$MODEL_DIR"' in files[script] and "--use_hf" not in files[script]
    for path in ("k8s/deployment.yaml",):
        if path in files:
            dep = next(d for d in yaml.safe_load_all(files[path]) if d["kind"] == "Deployment")
            spec = dep["spec"]["template"]["spec"]
            main = spec["containers"][0]
            assert local in main["args"] and spec["initContainers"][0]["command"][-1].endswith("fetch-model.sh")
    for py in ("generate_images.py", "serve_images.py", "transcribe.py"):
        if py in files:
            assert "local_weights(" in files[py] and local in files[py]


def test_the_70b_megatron_bundle_fetches_the_modelscope_id(tmp_path):
    plan, w, est = inputs("two_node")
    files = render_bundle(plan, w.model_copy(update={"model": "meta-llama/Meta-Llama-3-70B"}), est)
    assert 'MODELSCOPE_ID="${MODELSCOPE_ID:-LLM-Research/Meta-Llama-3-70B}"' in files["fetch-model.sh"]
    assert json.loads(files["plan.json"])["weights"]["modelscope_id"] == "LLM-Research/Meta-Llama-3-70B"
