"""Online resolution of Hugging Face / ModelScope ids (gpuplan.catalog.hub) through a fake fetcher.

No test touches the network: the fetcher is injected, and resolution through resolve_model runs
with GPUPLAN_ONLINE unset (offline) or with the default fetcher replaced."""

import json

import pytest

from gpuplan.catalog import hub
from gpuplan.catalog.models import param_count_from_shape, resolve_model
from gpuplan.errors import GpuplanError

# microsoft/Phi-3-mini-4k-instruct config.json (the keys the shape needs; published size 3.82B).
PHI3_MINI = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
             "max_position_embeddings": 4096, "tie_word_embeddings": False}


class FakeFetcher:
    def __init__(self, payload):
        self.payload, self.urls = payload, []

    def __call__(self, url):
        self.urls.append(url)
        if isinstance(self.payload, Exception):
            raise self.payload
        return self.payload


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPUPLAN_ONLINE", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)

    def no_network(url, timeout_s=15.0):  # the default fetcher must never run in tests
        raise AssertionError(f"network access attempted: {url}")

    monkeypatch.setattr(hub, "urllib_fetcher", no_network)


def test_fetch_parses_caches_and_says_where_the_shape_came_from(tmp_path):
    fake = FakeFetcher(json.dumps(PHI3_MINI).encode())
    spec = hub.resolve_remote("someone/phi3-mini-clone", fetcher=fake, online=True)
    assert fake.urls == ["https://huggingface.co/someone/phi3-mini-clone/resolve/main/config.json"]
    assert param_count_from_shape(spec) / 1e9 == pytest.approx(3.82, rel=0.01)
    assert "downloaded from https://huggingface.co/someone/phi3-mini-clone" in spec.assumptions[0]
    assert (tmp_path / "hub" / "hf" / "someone__phi3-mini-clone.json").is_file()
    # second time: from the cache, offline, without calling the fetcher
    again = hub.resolve_remote("someone/phi3-mini-clone", fetcher=FakeFetcher(RuntimeError("no")), online=False)
    assert again.num_layers == 32 and "cached at" in again.assumptions[0]


def test_modelscope_prefix_uses_the_modelscope_file_api_and_unwraps_it():
    wrapped = json.dumps({"Code": 200, "Data": json.dumps(PHI3_MINI)})
    fake = FakeFetcher(wrapped)
    spec = hub.resolve_remote("modelscope:LLM-Research/Phi-3-mini-4k-instruct", fetcher=fake, online=True)
    assert fake.urls[0].startswith("https://modelscope.cn/api/v1/models/LLM-Research/Phi-3-mini-4k-instruct/repo")
    assert spec.hidden_size == 3072


def test_hf_endpoint_mirror_is_honoured(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.com/")
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    hub.resolve_remote("a/b", fetcher=fake, online=True)
    assert fake.urls == ["https://hf-mirror.com/a/b/resolve/main/config.json"]


def test_offline_by_default_an_unknown_id_is_one_clear_error_naming_the_switch():
    with pytest.raises(GpuplanError) as err:
        resolve_model("someorg/not-in-the-library-7b")
    assert "Unknown model" in err.value.message
    assert "GPUPLAN_ONLINE=1" in err.value.hint


def test_resolve_model_goes_online_only_when_switched_on(monkeypatch):
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    monkeypatch.setattr(hub, "urllib_fetcher", fake)
    monkeypatch.setenv("GPUPLAN_ONLINE", "1")
    assert resolve_model("Qwen/Qwen2.5-7B-Instruct").id == "Qwen/Qwen2.5-7B-Instruct"
    assert fake.urls == []  # a library model never touches the network
    spec = resolve_model("someorg/phi3-like")
    assert fake.urls and spec.id == "someorg/phi3-like" and spec.num_attention_heads == 32


@pytest.mark.parametrize(("payload", "needle"), [
    (b"not json", "not valid JSON"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps({"model_type": "llama"}).encode(), "num_hidden_layers"),
    (OSError("connection refused"), "Could not download"),
])
def test_bad_downloads_are_gpuplan_errors(payload, needle):
    with pytest.raises(GpuplanError) as err:
        hub.resolve_remote("x/y", fetcher=FakeFetcher(payload), online=True)
    assert needle in err.value.message or needle in err.value.hint


@pytest.mark.parametrize("ref", ["../etc/passwd", "a/b/c", "no-slash", "/abs/path", "a/..", "hf:", "x" * 200 + "/y"])
def test_only_hub_shaped_ids_are_fetched(ref):
    assert hub.parse_repo_id(ref) is None
