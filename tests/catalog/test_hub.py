"""Resolution of Hugging Face / ModelScope ids the library lacks (gpuplan.catalog.configs.hub) through a fake fetcher.

No test touches the network: the fetcher is injected (or the default one replaced by a fake), and the whole
test run has GPUPLAN_OFFLINE=1 (tests/conftest.py) unless a test lifts it on purpose."""

import json
import socket
import urllib.error

import pytest

from gpuplan.catalog.configs import hub
from gpuplan.catalog.models import param_count_from_shape, resolve_model
from gpuplan.errors import GpuplanError

# microsoft/Phi-3-mini-4k-instruct config.json (the keys the shape needs; published size 3.82B).
PHI3_MINI = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
             "max_position_embeddings": 4096, "tie_word_embeddings": False}
HF_URL = "https://huggingface.co/someone/phi3-mini-clone/resolve/main/config.json"


class FakeFetcher:
    """Answers by URL prefix: a payload, or an exception to raise (a timeout, a refused connection, a 404)."""

    def __init__(self, payload, by_host: dict | None = None):
        self.payload, self.by_host, self.urls = payload, by_host or {}, []

    def __call__(self, url, timeout_s=None):
        self.urls.append(url)
        answer = next((v for k, v in self.by_host.items() if k in url), self.payload)
        if isinstance(answer, Exception):
            raise answer
        return answer


def not_found(url="https://x"):
    return urllib.error.HTTPError(url, 404, "Not Found", {}, None)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path))
    for var in ("GPUPLAN_ONLINE", "GPUPLAN_OFFLINE", "GPUPLAN_HUB", "HF_ENDPOINT", "GPUPLAN_HUB_TIMEOUT_S"):
        monkeypatch.delenv(var, raising=False)

    def no_network(url, timeout_s=15.0):  # the default fetcher must never run in tests
        raise AssertionError(f"network access attempted: {url}")

    monkeypatch.setattr(hub, "urllib_fetcher", no_network)


def test_fetch_parses_caches_and_says_where_the_shape_came_from(tmp_path):
    fake = FakeFetcher(json.dumps(PHI3_MINI).encode())
    spec = hub.resolve_remote("someone/phi3-mini-clone", fetcher=fake, online=True)
    assert fake.urls == [HF_URL]
    assert param_count_from_shape(spec) / 1e9 == pytest.approx(3.82, rel=0.01)
    assert "downloaded from https://huggingface.co/someone/phi3-mini-clone" in spec.assumptions[0]
    assert (tmp_path / "hub" / "hf" / "someone__phi3-mini-clone.json").is_file()
    # second time: a cache hit, even offline, without calling the fetcher
    again = hub.resolve_remote("someone/phi3-mini-clone", fetcher=FakeFetcher(RuntimeError("no")), online=False)
    assert again.num_layers == 32 and "cached at" in again.assumptions[0]


def test_modelscope_prefix_uses_the_modelscope_file_api_and_unwraps_it():
    wrapped = json.dumps({"Code": 200, "Data": json.dumps(PHI3_MINI)})
    fake = FakeFetcher(wrapped)
    spec = hub.resolve_remote("modelscope:LLM-Research/Phi-3-mini-4k-instruct", fetcher=fake, online=True)
    assert fake.urls == ["https://modelscope.cn/api/v1/models/LLM-Research/Phi-3-mini-4k-instruct/repo?Revision=master"
                         "&FilePath=config.json"]
    assert spec.hidden_size == 3072


@pytest.mark.parametrize(("region", "first"), [
    ("cn-hangzhou", "modelscope.cn"),      # mainland China: ModelScope first (Hugging Face is not reachable)
    ("cn-beijing", "modelscope.cn"),
    ("cn-hongkong", "huggingface.co"),     # Hong Kong is not mainland (data/compliance.yaml)
    ("ap-southeast-1", "huggingface.co"),
    (None, "huggingface.co"),
])
def test_the_region_picks_which_hub_is_asked_first(region, first):
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    hub.resolve_remote("someone/phi3-mini-clone", fetcher=fake, online=True, region=region)
    assert len(fake.urls) == 1 and first in fake.urls[0]


def test_the_other_hub_is_asked_when_the_first_cannot_be_reached():
    fake = FakeFetcher(json.dumps(PHI3_MINI), by_host={"huggingface.co": socket.timeout("timed out")})
    spec = hub.resolve_remote("someone/phi3-mini-clone", fetcher=fake, online=True, region="us-west-1")
    assert [u.split("/")[2] for u in fake.urls] == ["huggingface.co", "modelscope.cn"]
    assert "modelscope.cn" in spec.source


def test_gpuplan_hub_overrides_the_order(monkeypatch):
    monkeypatch.setenv("GPUPLAN_HUB", "modelscope")
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    hub.resolve_remote("someone/phi3-mini-clone", fetcher=fake, online=True, region="us-west-1")
    assert "modelscope.cn" in fake.urls[0]


def test_hf_endpoint_mirror_is_honoured(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.com/")
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    hub.resolve_remote("a/b", fetcher=fake, online=True)
    assert fake.urls == ["https://hf-mirror.com/a/b/resolve/main/config.json"]


def test_the_default_fetcher_gets_a_short_timeout(monkeypatch):
    seen = {}

    def fake(url, timeout_s=99.0):
        seen["timeout_s"] = timeout_s
        return json.dumps(PHI3_MINI).encode()

    monkeypatch.setattr(hub, "urllib_fetcher", fake)
    hub.resolve_remote("someone/x", online=True)
    assert seen["timeout_s"] == hub.DEFAULT_TIMEOUT_S == 5.0
    monkeypatch.setenv("GPUPLAN_HUB_TIMEOUT_S", "2.5")
    hub.resolve_remote("someone/y", online=True)
    assert seen["timeout_s"] == 2.5


@pytest.mark.parametrize(("env", "value", "online"), [
    ("GPUPLAN_OFFLINE", "1", False), ("GPUPLAN_OFFLINE", "true", False), ("GPUPLAN_ONLINE", "0", False),
    ("GPUPLAN_ONLINE", "1", True), ("GPUPLAN_OFFLINE", "0", True),
])
def test_environment_switches(monkeypatch, env, value, online):
    monkeypatch.setenv(env, value)
    assert hub.online_enabled() is online


def test_online_by_default_where_the_network_allows(monkeypatch):
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    monkeypatch.setattr(hub, "urllib_fetcher", fake)
    spec = resolve_model("someorg/phi3-like")
    assert fake.urls and spec.id == "someorg/phi3-like" and spec.num_attention_heads == 32
    assert resolve_model("Qwen/Qwen2.5-7B-Instruct").id == "Qwen/Qwen2.5-7B-Instruct"
    assert len(fake.urls) == 1  # a library model never touches the network


def test_offline_switch_never_calls_the_fetcher_and_the_error_says_how(monkeypatch):
    monkeypatch.setenv("GPUPLAN_OFFLINE", "1")
    fake = FakeFetcher(json.dumps(PHI3_MINI))
    monkeypatch.setattr(hub, "urllib_fetcher", fake)
    with pytest.raises(GpuplanError) as err:
        resolve_model("someorg/qwen2.5-7b-instrukt")
    assert fake.urls == []
    assert "Unknown model" in err.value.message
    assert "GPUPLAN_OFFLINE=1" in err.value.hint and "{params_b: N}" in err.value.hint
    assert "Qwen/Qwen2.5-7B-Instruct" in err.value.hint


def test_an_unreachable_hub_falls_back_to_the_unknown_model_answer(monkeypatch):
    """Without GPUPLAN_ONLINE=1 a network failure is not an error of its own: the usual answer (closest
    models, how to give a config) says the hubs could not be reached."""
    fake = FakeFetcher(urllib.error.URLError("no route to host"))
    monkeypatch.setattr(hub, "urllib_fetcher", fake)
    with pytest.raises(GpuplanError) as err:
        resolve_model("someorg/Qwen2.5-7B-Instrukt")
    assert len(fake.urls) == 2                          # Hugging Face, then ModelScope
    assert "Unknown model" in err.value.message
    assert "could not be fetched" in err.value.hint and "no route to host" in err.value.hint


def test_gpuplan_online_makes_a_failed_download_an_error(monkeypatch):
    monkeypatch.setenv("GPUPLAN_ONLINE", "1")
    monkeypatch.setattr(hub, "urllib_fetcher", FakeFetcher(OSError("connection refused")))
    with pytest.raises(GpuplanError) as err:
        resolve_model("someorg/anything")
    assert "Could not download" in err.value.message and "connection refused" in err.value.message


def test_a_repo_without_config_json_is_read_as_a_diffusers_pipeline():
    index = {"_class_name": "FluxPipeline", "transformer": ["diffusers", "FluxTransformer2DModel"],
             "vae": ["diffusers", "AutoencoderKL"]}
    transformer = {"_class_name": "FluxTransformer2DModel", "attention_head_dim": 128, "guidance_embeds": False,
                   "in_channels": 64, "joint_attention_dim": 4096, "num_attention_heads": 24, "num_layers": 19,
                   "num_single_layers": 38, "patch_size": 1, "pooled_projection_dim": 768}
    base = "https://huggingface.co/someone/flux-schnell-copy/resolve/main/"
    files = {"model_index.json": json.dumps(index), "transformer/config.json": json.dumps(transformer),
             "vae/config.json": json.dumps({"latent_channels": 16})}

    def fetch(url):
        assert url.startswith(base)
        if url[len(base):] in files:
            return files[url[len(base):]]
        raise not_found(url)       # config.json (no such file at the root of a pipeline repo), text encoders

    spec = hub.resolve_remote("someone/flux-schnell-copy", fetcher=fetch, online=True)
    assert spec.kind == "diffusion"
    assert spec.profile.components["transformer"] / 1e9 == pytest.approx(11.89, rel=0.01)  # FLUX: "12 B"


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
