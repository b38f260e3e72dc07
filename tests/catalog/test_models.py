"""Model library: bundled shapes, parameter formulas, resolution of a workload's `model:`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.catalog.models import (
    ModelSpec,
    active_param_count,
    from_hf_config,
    list_models,
    load_models,
    param_count_from_shape,
    resolve_model,
)
from gpuplan.errors import GpuplanError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "configs"
LLMS = [m for m in load_models() if m.is_llm]


# ---- the library -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", LLMS, ids=lambda m: m.id)
def test_params_total_agrees_with_shape_within_2_percent(spec: ModelSpec):
    computed = param_count_from_shape(spec) + spec.vision_params  # a VLM's tower counts beside its shape
    assert computed == pytest.approx(spec.params_total, rel=0.02), (
        f"{spec.id}: shape gives {computed / 1e9:.3f}B, entry says {spec.params_total / 1e9:.3f}B"
    )
    assert active_param_count(spec) + spec.vision_params == pytest.approx(spec.params_active, rel=0.02)


def test_every_entry_has_a_source_and_unique_names():
    names: dict[str, str] = {}
    for spec in load_models():
        assert spec.source.strip(), spec.id
        for name in (spec.id, *spec.aliases, *([spec.modelscope_id] if spec.modelscope_id else [])):
            key = name.lower()
            assert names.setdefault(key, spec.id) == spec.id, f"{name} names {names[key]} and {spec.id}"
        assert all(a == a.lower() for a in spec.aliases), spec.id


def test_library_keeps_the_validation_models_and_the_requested_families():
    ids = {m.id for m in load_models()}
    validation = Path("/work/shared/validation/measurements-dev.csv")
    if validation.exists():  # the shared research copy (not shipped): every model it uses resolves
        import csv

        for row in csv.DictReader(validation.open()):
            assert resolve_model(row["model"]).id == row["model"]
    for wanted in ("llm-foundry:mpt-7b", "megatron-lm:gpt-175b", "nemo:gpt3-5b", "flash-attn:gpt3-1.3b",
                   "Qwen/Qwen1.5-110B-Chat", "Qwen/Qwen1.5-MoE-A2.7B-Chat", "Qwen/Qwen2-57B-A14B-Instruct",
                   "Qwen/Qwen3-235B-A22B", "mistralai/Mixtral-8x22B-Instruct-v0.1", "deepseek-ai/DeepSeek-V2-Lite",
                   "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "THUDM/glm-4-9b-chat",
                   "openai/gpt-oss-120b", "google-bert/bert-large-uncased", "resnet50", "openai/whisper-large-v3"):
        assert wanted in ids
    assert len(list_models()) >= 110
    assert {m.kind for m in list_models()} == {"decoder", "encoder", "encoder-decoder", "vision", "diffusion", "speech"}


def test_non_llm_profiles_are_complete():
    for spec in load_models():
        if spec.is_llm:
            continue
        p = spec.profile
        assert p is not None and p.forward_flops_per_sample > 0 and p.activation_bytes_per_sample > 0
        assert p.sources and p.reference_input and p.scaling.get("input")
    # ResNet-50: 25.6M params, 4.09 GMACs = 8.2 GFLOPs at 224 (torchvision)
    r50 = resolve_model("resnet-50")
    assert r50.params_total == 25_557_032
    assert r50.profile.forward_flops_per_sample == pytest.approx(8.2e9, rel=0.01)
    # ViT-L/16: 304M params, 61.6 GMACs at 224
    assert resolve_model("vit-l/16").profile.forward_flops_per_sample == pytest.approx(2 * 61.55e9, rel=0.01)
    sdxl = resolve_model("sdxl").profile
    assert sdxl.components["unet"] == pytest.approx(2.567e9, rel=0.01)
    with pytest.raises(GpuplanError):
        resolve_model("sdxl").kv_cache_bytes_per_token(2)


# ---- published counts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "total"),
    [
        ("meta-llama/Llama-2-7b-hf", 6_738_415_616),
        ("Qwen/Qwen2-7B-Instruct", 7_615_616_512),
        ("Qwen/Qwen2.5-72B-Instruct", 72_706_203_648),
        ("Qwen/Qwen3-30B-A3B", 30_532_122_624),
        ("meta-llama/Llama-3.1-8B", 8_030_261_248),
        ("THUDM/chatglm3-6b", 6_243_584_000),
        ("Qwen/Qwen-7B-Chat", 7_721_324_544),
        ("openai/gpt-oss-20b", 20_914_757_184),
        ("bigscience/bloom", 176_247_271_424),
        ("google-bert/bert-base-uncased", 109_482_240),
        ("bigscience/T0_3B", 2_849_757_184),
    ],
)
def test_exact_parameter_counts(name, total):
    assert param_count_from_shape(resolve_model(name)) == total


def test_qwen3_30b_a3b_active_is_3_3b():
    spec = resolve_model("qwen3-30b-a3b")
    assert active_param_count(spec) == 3_353_032_704  # model card: 3.3B activated


def test_deepseek_v3_671b_total_37b_active():
    spec = resolve_model("deepseek-ai/DeepSeek-V3")
    assert param_count_from_shape(spec) == pytest.approx(671e9, rel=0.02)
    assert active_param_count(spec) == pytest.approx(37e9, rel=0.02)


def test_mixtral_8x7b_46_7b_total_12_9b_active():
    spec = resolve_model("mixtral-8x7b")
    assert param_count_from_shape(spec) == pytest.approx(46.7e9, rel=0.002)
    assert active_param_count(spec) == pytest.approx(12.9e9, rel=0.002)


def test_kv_cache_bytes_per_token():
    assert resolve_model("llama-3.1-8b").kv_cache_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2 == 131072
    assert resolve_model("deepseek-ai/DeepSeek-V3").kv_cache_bytes_per_token(2) == 61 * (512 + 64) * 2
    assert resolve_model("bert-base").kv_cache_bytes_per_token(2) == 0


def test_parts_add_up_to_the_total():
    for name in ("Qwen/Qwen2.5-7B-Instruct", "deepseek-ai/DeepSeek-V3", "bigscience/T0_3B", "bert-base"):
        s = resolve_model(name)
        parts = (s.num_blocks * (s.attention_params_per_layer() + s.mlp_params_per_layer()) + s.norm_params()
                 + s.embedding_params() + s.lm_head_params() + s.pooler_params())
        assert parts == pytest.approx(param_count_from_shape(s), rel=1e-12)
    assert resolve_model("qwen2.5-0.5b").lm_head_params() == 0  # tied
    assert resolve_model("qwen2.5-7b").lm_head_params() == 152064 * 3584


def test_linear_shapes_for_lora_targets():
    llama = resolve_model("llama-3.1-8b")
    shapes = {n: (i, o, c) for n, i, o, c in llama.linear_shapes_per_layer("all-linear")}
    assert shapes["q_proj"] == (4096, 4096, 1) and shapes["k_proj"] == (4096, 1024, 1)
    assert shapes["down_proj"] == (14336, 4096, 1) and len(shapes) == 7
    assert {n for n, *_ in llama.linear_shapes_per_layer("qv")} == {"q_proj", "v_proj"}
    assert len(llama.linear_shapes_per_layer("attn")) == 4
    # LoRA parameters of all-linear rank 8 on Llama-3.1-8B: r * sum(d_in + d_out) per layer x 32
    lora = sum(8 * (i + o) * c for _, i, o, c in llama.linear_shapes_per_layer("all-linear")) * 32
    assert lora == 20_971_520
    qwen1 = resolve_model("Qwen/Qwen-7B-Chat")
    assert qwen1.linear_shapes_per_layer(["c_attn"]) == [("c_attn", 4096, 12288, 1.0)]
    assert qwen1.linear_shapes_per_layer(["q_proj", "v_proj"]) == [("c_attn", 4096, 12288, 1.0)]
    glm = {n: (i, o) for n, i, o, _ in resolve_model("chatglm3-6b").linear_shapes_per_layer(
        ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"])}
    assert glm == {"query_key_value": (4096, 4608), "dense": (4096, 4096), "dense_h_to_4h": (4096, 27392),
                   "dense_4h_to_h": (13696, 4096)}
    moe = {n: c for n, _, _, c in resolve_model("qwen3-30b-a3b").linear_shapes_per_layer("all-linear")}
    assert moe["experts.gate_proj"] == 128
    with pytest.raises(GpuplanError):
        llama.linear_shapes_per_layer(["c_attn_typo"])


def test_to_dict_is_json_serializable():
    for name in ("deepseek-v3", "sdxl", "qwen2.5-7b"):
        json.dumps(resolve_model(name).to_dict())


# ---- resolution --------------------------------------------------------------------------------


def test_names_resolve_case_insensitively_by_id_alias_and_modelscope_id():
    assert resolve_model("qwen2.5-7b").id == "Qwen/Qwen2.5-7B-Instruct"
    assert resolve_model("QWEN/qwen2.5-7b-instruct").id == "Qwen/Qwen2.5-7B-Instruct"
    assert resolve_model("llama-3.1-8b").id == "meta-llama/Llama-3.1-8B"
    assert resolve_model("LLM-Research/Meta-Llama-3-8B-Instruct").id == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert resolve_model("modelscope/Llama-2-7b-ms").id == "meta-llama/Llama-2-7b-hf"


def test_unknown_name_suggests_close_names():
    with pytest.raises(GpuplanError) as err:
        resolve_model("qwen2.5-7b-instrct")
    assert "qwen2.5-7b-instruct" in err.value.hint.lower() and "gpuplan models" in err.value.hint


@pytest.mark.parametrize(
    ("fixture", "total", "active"),
    [
        ("qwen2.5-7b-instruct.json", 7_615_616_512, None),
        ("llama-3.1-8b.json", 8_030_261_248, None),
        ("chatglm3-6b.json", 6_243_584_000, None),
        ("qwen-7b-chat.json", 7_721_324_544, None),
        ("mixtral-8x7b.json", 46_702_792_704, 12_879_925_248),
        ("qwen3-30b-a3b.json", 30_532_122_624, 3_353_032_704),
        ("gpt-oss-20b.json", 20_914_757_184, None),
        ("bert-base-uncased.json", 109_482_240, None),
        ("t0-3b.json", 2_849_757_184, None),
        ("gpt2.json", 124_439_808, None),
        ("opt-1.3b.json", 1_315_758_080, None),
        ("bloom-560m.json", 559_214_592, None),
        ("falcon-7b.json", 6_921_720_704, None),
        # text_config: Llama-2-7B with 64 extra tokens (6,738,939,904) + CLIP ViT-L/14-336 (303,507,456) + the
        # two-layer projector (20,979,712): the model card's 7.06 B
        ("llava-1.5-7b.json", 7_063_427_072, None),
    ],
)
def test_config_json_files_parse_to_published_counts(fixture, total, active):
    spec = resolve_model(str(FIXTURES / fixture))
    assert spec.params_total == total
    if active is not None:
        assert spec.params_active == active
    assert not spec.synthetic


def test_deepseek_v2_lite_config_gives_mla_and_moe():
    spec = resolve_model(FIXTURES / "deepseek-v2-lite.json")
    assert spec.attention == "mla" and spec.mla.q_lora_rank == 0 and spec.moe.first_k_dense == 1
    assert spec.params_total == pytest.approx(15.7e9, rel=0.01)  # model card: 15.7B
    assert spec.kv_cache_bytes_per_token(2) == 27 * (512 + 64) * 2


def test_config_folder_parses(tmp_path):
    folder = tmp_path / "Qwen2.5-7B-Instruct"
    folder.mkdir()
    shutil.copy(FIXTURES / "qwen2.5-7b-instruct.json", folder / "config.json")
    spec = resolve_model(str(folder))
    assert spec.params_total == 7_615_616_512 and spec.id == "Qwen2.5-7B-Instruct"


def test_inline_mapping_with_config_keys():
    spec = resolve_model({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                          "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
                          "vocab_size": 32000, "some_unknown_key": [1, 2]})
    assert spec.params_total == 6_738_415_616


def test_params_b_synthesizes_a_marked_shape():
    spec = resolve_model({"params_b": 7})
    assert spec.synthetic and spec.assumptions
    assert spec.params_total == pytest.approx(7e9, rel=0.05)
    assert spec.attention == "gqa" and spec.kv_cache_bytes_per_token(2) > 0
    for size in (0.1, 0.5, 1.5, 14, 72, 405, 1000):
        assert resolve_model({"params_b": size}).params_total == pytest.approx(size * 1e9, rel=0.1)


def test_bad_json_is_a_gpuplan_error():
    with pytest.raises(GpuplanError) as err:
        resolve_model(str(FIXTURES / "malformed.json"))
    assert "not valid JSON" in str(err.value) and err.value.hint


def test_missing_file_is_a_gpuplan_error(tmp_path):
    with pytest.raises(GpuplanError):
        resolve_model(str(tmp_path / "nope" / "config.json"))


@pytest.mark.parametrize(
    ("cfg", "missing"),
    [
        ({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000}, "hidden_size"),
        ({"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}, "num_hidden_layers"),
        ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008},
         "vocab_size"),
        ({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000},
         "intermediate_size"),
    ],
)
def test_missing_keys_are_named(cfg, missing):
    with pytest.raises(GpuplanError) as err:
        resolve_model(cfg)
    assert missing in str(err.value)


@pytest.mark.parametrize(
    "ref",
    [
        {"params_b": -7}, {"params_b": 0}, {"params_b": 1e9}, {"params_b": "7"}, {"params_b": True},
        {"params_b": 7, "hidden_size": 4096},
        {"hidden_size": 4096, "num_hidden_layers": 0, "num_attention_heads": 32, "vocab_size": 32000,
         "intermediate_size": 11008},
        {"hidden_size": 10**15, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000,
         "intermediate_size": 11008},
        {"hidden_size": -4096, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000,
         "intermediate_size": 11008},
        {"hidden_size": 65536, "num_hidden_layers": 1000, "num_attention_heads": 512, "vocab_size": 32000,
         "intermediate_size": 1_000_000},
        {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 5,
         "vocab_size": 32000, "intermediate_size": 11008},
        {"hidden_size": 4096.5, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000,
         "intermediate_size": 11008},
        {"hidden_size": "4096", "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000,
         "intermediate_size": 11008},
        42, None, "", [1, 2],
    ],
)
def test_absurd_or_malformed_refs_raise_gpuplan_error(ref):
    with pytest.raises(GpuplanError):
        resolve_model(ref)


_KEYS = ["model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
         "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings", "tie_word_embeddings",
         "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
         "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "multi_query_attention", "multi_query_group_num",
         "text_config", "params_b", "n_layer", "n_embd", "d_model", "num_experts", "attn_config",
         "expansion_ratio", "multi_query", "feed_forward_proj", "num_decoder_layers", "shared_expert_intermediate_size"]
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10), st.integers(0, 10**6), st.sampled_from([1, 2, 8, 64, 4096]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["llama", "qwen", "chatglm", "deepseek_v3", "mixtral", "t5", "bert", "mpt", "falcon", "gpt2",
                     "qwen2_moe", "gpt_oss", "bloom", "opt"]),
    st.lists(st.integers(0, 4), max_size=3), st.dictionaries(st.sampled_from(["alibi", "kv_n_heads"]), st.integers(0, 8)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=14), st.text(max_size=40),
                 st.integers(), st.none(), st.lists(st.integers(), max_size=3)))
def test_random_refs_give_a_spec_or_a_gpuplan_error(ref):
    try:
        spec = resolve_model(ref)
    except GpuplanError:
        return
    assert isinstance(spec, ModelSpec) and spec.params_total > 0


@settings(max_examples=150, deadline=None)
@given(
    layers=st.integers(1, 200), hidden_mult=st.integers(1, 128), heads_pow=st.integers(2, 6),
    kv_div=st.sampled_from([1, 2, 4, 8]), ffn=st.integers(1, 50_000), vocab=st.integers(1, 300_000),
    tie=st.booleans(),
)
def test_valid_llama_shapes_count_consistently(layers, hidden_mult, heads_pow, kv_div, ffn, vocab, tie):
    heads = 2**heads_pow
    kv = max(1, heads // kv_div)
    hidden = 64 * hidden_mult
    cfg = {"model_type": "llama", "num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
           "num_key_value_heads": kv, "intermediate_size": ffn, "vocab_size": vocab, "tie_word_embeddings": tie}
    spec = from_hf_config(cfg, "random")
    d = hidden // heads
    expected = layers * (hidden * heads * d + 2 * hidden * kv * d + heads * d * hidden + 3 * hidden * ffn + 2 * hidden)
    expected += hidden + vocab * hidden * (1 if tie else 2)
    assert spec.params_total == expected


_REAL_CONFIGS = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.json")) if p.name != "malformed.json"]


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(_REAL_CONFIGS), key=st.sampled_from(_KEYS), value=_VALUES, drop=st.sampled_from(_KEYS))
def test_perturbed_real_configs_give_a_spec_or_a_gpuplan_error(base, key, value, drop):
    cfg = {k: v for k, v in base.items() if k != drop}
    cfg[key] = value
    try:
        spec = resolve_model(cfg)
    except GpuplanError:
        return
    assert isinstance(spec, ModelSpec) and 0 < spec.params_total < 1e14
