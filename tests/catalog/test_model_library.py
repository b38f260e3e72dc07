"""The generated model library (scripts/gen_model_library.py -> data/model_library.json): reproducible,
sourced, parsed like a user's config.json; widely used models estimate offline; unknown ids name the
closest known models."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gpuplan.catalog.configs import hub
from gpuplan.catalog.configs.hf_config import from_hf_config
from gpuplan.catalog.library import (
    closest_models,
    get_model,
    list_models,
    load_curated,
    load_generated,
    lookup,
    resolve_model,
)
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "scripts" / "model-configs"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_model_library", ROOT / "scripts" / "gen_model_library.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("GPUPLAN_ONLINE", raising=False)
    monkeypatch.setenv("GPUPLAN_OFFLINE", "1")

    def no_network(url, timeout_s=15.0):
        raise AssertionError(f"network access attempted: {url}")

    monkeypatch.setattr(hub, "urllib_fetcher", no_network)


def test_the_shipped_library_is_what_the_generator_writes():
    gen = _generator()
    entries, _skipped = gen.build()
    timm = gen.timm_table()
    shipped = (ROOT / "src" / "gpuplan" / "data" / "model_library.json").read_text(encoding="utf-8")
    assert shipped == gen.render_json(entries, timm), "run scripts/gen_model_library.py"
    assert (ROOT / "docs" / "model-library.md").read_text(encoding="utf-8") == gen.render_doc(entries, timm)


def test_every_config_folder_has_a_source_with_url_revision_and_date():
    folders = sorted(p.parent for p in CONFIGS.rglob("source.json"))
    assert len(folders) >= 60
    for folder in folders:
        src = json.loads((folder / "source.json").read_text(encoding="utf-8"))
        assert src["repo"] == folder.relative_to(CONFIGS).as_posix()
        assert src["config_url"].startswith("https://huggingface.co/")
        assert src["revision"] and src["retrieved"][:2] == "20"
        assert (folder / "config.json").is_file() or (folder / "model_index.json").is_file()


def test_library_entries_are_the_config_parser_output():
    """An entry equals what a user gets by passing the same config.json (source and notes aside)."""
    for folder in sorted(p.parent for p in CONFIGS.rglob("source.json"))[:40]:
        repo = json.loads((folder / "source.json").read_text(encoding="utf-8"))["repo"]
        spec = lookup(repo)
        if spec is None or spec in load_curated() or not (folder / "config.json").is_file():
            continue
        parsed = from_hf_config(json.loads((folder / "config.json").read_text(encoding="utf-8")), name=repo)
        assert spec.params_total == parsed.params_total
        assert (spec.num_layers, spec.hidden_size, spec.num_key_value_heads) == (
            parsed.num_layers, parsed.hidden_size, parsed.num_key_value_heads)


def test_the_library_covers_every_kind_and_a_few_hundred_models():
    models = list_models()
    assert len(models) >= 250
    kinds = {m.kind for m in models}
    assert {"decoder", "encoder", "encoder-decoder", "vision", "diffusion", "speech"} <= kinds
    assert any(m.moe is not None for m in load_generated())
    # multimodal towers are counted beside the language model (catalog/configs/towers.py) and say so
    assert any("vision tower and its projector" in " ".join(m.assumptions) and m.vision_params > 0
               for m in load_generated())


def test_curated_models_win_and_names_are_unique():
    curated = {m.id.lower() for m in load_curated()}
    assert not curated & {m.id.lower() for m in load_generated()}
    seen: dict[str, str] = {}
    for m in list_models():
        for name in (m.id, *m.aliases):
            assert seen.setdefault(name.lower(), m.id) == m.id, name


@pytest.mark.parametrize(("model_id", "published_b", "active_b"), [
    ("google/gemma-3-27b-it", 27.0, None),        # language model of the 27.4 B card (SigLIP ~0.4 B apart)
    ("moonshotai/Kimi-K2-Instruct", 1026.0, 32.9),  # card: 1 T total, 32 B activated
    ("BAAI/bge-m3", 0.568, None),                 # card: 568 M
    ("microsoft/deberta-v3-base", 0.184, None),   # card: 86 M backbone + 98 M embedding
    ("allenai/OLMo-2-1124-7B", 7.30, None),       # card: 7.30 B
    ("CohereForAI/c4ai-command-r-v01", 35.0, None),
    ("01-ai/Yi-34B-200K", 34.4, None),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 480.0, 35.0),
    ("internlm/internlm2_5-7b-chat", 7.74, None),
])
def test_parameter_counts_match_the_model_cards(model_id, published_b, active_b):
    spec = get_model(model_id)
    assert spec.params_total / 1e9 == pytest.approx(published_b, rel=0.03)
    if active_b is not None:
        assert spec.params_active / 1e9 == pytest.approx(active_b, rel=0.03)


def test_native_fp8_checkpoints_say_so():
    assert get_model("deepseek-ai/DeepSeek-V3-0324").native_dtype == "fp8"
    assert get_model("moonshotai/Kimi-K2-Instruct").native_dtype == "fp8"
    assert get_model("google/gemma-3-27b-it").native_dtype is None


# 30 widely used open models (issue 23: at least 28 of 30 must estimate offline). The diffusion and
# vision profiles SD 1.5 / SD 3.5 / FLUX.1 / ViT-B come with branch estimator's models.yaml entries.
WIDELY_USED = [
    "internlm/internlm2_5-7b-chat", "tiiuae/falcon-7b-instruct", "THUDM/GLM-4-9B-0414", "01-ai/Yi-34B-200K",
    "google/gemma-3-27b-it", "facebook/opt-13b", "EleutherAI/pythia-6.9b", "bigscience/bloom",
    "CohereForAI/c4ai-command-r-v01", "ibm-granite/granite-3.1-8b-instruct", "allenai/OLMo-2-1124-7B",
    "Qwen/Qwen2.5-VL-7B-Instruct", "moonshotai/Kimi-K2-Instruct", "microsoft/deberta-v3-base", "BAAI/bge-m3",
    "meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "microsoft/phi-4", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-30B-A3B", "google/gemma-2-9b-it", "stabilityai/stable-diffusion-xl-base-1.0",
    "openai/whisper-large-v3", "vit-large-patch16-224", "BAAI/bge-reranker-v2-m3", "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
    "deepseek-ai/DeepSeek-V3-0324",
]


def test_thirty_widely_used_models_estimate_offline():
    assert len(set(WIDELY_USED)) == 30
    failed = []
    for model_id in WIDELY_USED:
        task = {"inference": {"task": "inference", "prompt_tokens": 512, "output_tokens": 128}}["inference"]
        try:
            est = estimate({"model": model_id, **task, "hardware": {"gpu": "H20-96GB", "count": 8}})
        except GpuplanError as err:
            failed.append(f"{model_id}: {err.message}")
            continue
        assert est.memory.per_gpu_bytes > 0
    assert not failed, failed


def test_an_unknown_id_offline_names_the_closest_known_models():
    with pytest.raises(GpuplanError) as err:
        resolve_model("someorg/Qwen2.5-7B-Instrukt")
    hint = err.value.hint
    assert "Unknown model" in err.value.message
    assert "Did you mean 'Qwen/Qwen2.5-7B-Instruct'" in hint and "GPUPLAN_OFFLINE=1" in hint
    # how to give a model gpuplan does not know: its folder, an inline config mapping, {params_b: N}
    assert "config.json" in hint and "model_index.json" in hint and "{params_b: N}" in hint
    assert closest_models("meta-llama/Llama-3.1-8B-Instrct")[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert closest_models("allenai/olmo2-7b")[0].startswith("allenai/OLMo-2")
    assert closest_models("zzzz/qqqq") == []  # nothing alike: no made-up suggestion


def test_an_unknown_id_online_is_read_once_and_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    cfg = json.loads((CONFIGS / "allenai" / "OLMo-2-1124-7B" / "config.json").read_text(encoding="utf-8"))

    def fake(url, timeout_s=15.0):
        calls.append(url)
        return json.dumps(cfg).encode()

    monkeypatch.setattr(hub, "urllib_fetcher", fake)
    monkeypatch.delenv("GPUPLAN_OFFLINE")
    first = resolve_model("someone/olmo2-finetune")
    monkeypatch.setenv("GPUPLAN_OFFLINE", "1")
    again = resolve_model("someone/olmo2-finetune")  # offline now: from the cache
    assert len(calls) == 1 and first.params_total == again.params_total
    assert "cached at" in again.assumptions[0]
