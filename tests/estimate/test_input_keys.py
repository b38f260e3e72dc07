"""An `input` key the model's estimate would ignore is refused with one error naming the key, the model kinds that
read it and what to set instead (estimate/nonllm/input_keys.py). It had been accepted and ignored: `tokens_per_window` on
an LLM, `offload` on an image pipeline, `image_size` on an embedding model changed nothing, and said nothing."""

from __future__ import annotations

import pytest

from gpuplan import recommend
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.estimate.nonllm.input_keys import DIFFUSION_KEYS, IMAGE_KEYS, SPEECH_KEYS, VIDEO_KEYS, read_keys
from gpuplan.catalog.models import resolve_model
from clirun import run_cli

LLM = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "prompt_tokens": 512, "output_tokens": 128,
       "hardware": {"gpu": "A10-24GB"}}


@pytest.mark.parametrize("model,keys", [
    ("Qwen/Qwen2.5-7B-Instruct", ()),
    ("BAAI/bge-large-en-v1.5", ()),
    ("openai/whisper-large-v3", SPEECH_KEYS),
    ("timm/resnet50.a1_in1k", IMAGE_KEYS),
    ("stabilityai/stable-diffusion-xl-base-1.0", DIFFUSION_KEYS),
    ("Wan-AI/Wan2.1-T2V-1.3B", VIDEO_KEYS),
])
def test_each_kind_reads_its_own_keys(model, keys):
    assert read_keys(resolve_model(model)) == keys


def test_every_input_key_belongs_to_a_kind():
    """The refusal names the kinds that read a key: every InputSpec key is read by some kind and named in words."""
    from gpuplan.estimate.nonllm import input_keys
    from gpuplan.workload_parts import InputSpec

    assert set(input_keys._KEY_KIND) == set(InputSpec.model_fields) == set(VIDEO_KEYS + SPEECH_KEYS + ("text_tokens", "image_tokens"))
    for key in InputSpec.model_fields:
        assert input_keys._kind_words(key)


@pytest.mark.parametrize("workload,key", [
    ({**LLM, "input": {"tokens_per_window": 50}}, "tokens_per_window"),
    ({**LLM, "task": "lora", "seq_len": 1024, "input": {"image_size": 448}}, "image_size"),
    ({"model": "openai/whisper-base", "task": "inference", "input": {"image_size": 224}, "hardware": {"gpu": "T4"}},
     "image_size"),
    ({"model": "timm/resnet50.a1_in1k", "task": "inference", "input": {"steps": 30}, "hardware": {"gpu": "T4"}},
     "steps"),
    ({"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference", "input": {"offload": "model"},
      "hardware": {"gpu": "A10-24GB"}}, "offload"),
])
def test_an_ignored_key_is_refused_by_estimate_and_recommend(workload, key):
    with pytest.raises(GpuplanError) as e:
        estimate(workload)
    assert e.value.field == f"input.{key}"
    assert f"input.{key}" in e.value.message and "ignore" in e.value.message
    assert f"remove input.{key}" in e.value.hint
    with pytest.raises(GpuplanError) as r:
        recommend({k: v for k, v in workload.items() if k != "hardware"})
    assert (r.value.message, r.value.hint, r.value.field) == (e.value.message, e.value.hint, e.value.field)


def test_keys_the_model_reads_are_accepted():
    sdxl = estimate({"model": "stabilityai/stable-diffusion-xl-base-1.0", "task": "inference",
                     "input": {"image_size": 768, "steps": 20, "offload": "none"}, "hardware": {"gpu": "A10-24GB"}})
    assert sdxl.performance["latency_s"] > 0
    whisper = estimate({"model": "openai/whisper-base", "task": "inference",
                        "input": {"audio_seconds": 30, "tokens_per_window": 40}, "hardware": {"gpu": "T4"}})
    assert whisper.performance["latency_s"] > 0


def test_the_cli_refuses_in_english_and_chinese(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("model: Qwen/Qwen2.5-7B-Instruct\ntask: inference\nhardware: {gpu: A10-24GB}\n"
                    "input: {audio_seconds: 60}\n", encoding="utf-8")
    code, out, err = run_cli("estimate", str(path))
    assert code != 0 and "Traceback" not in err
    assert "input.audio_seconds applies to speech models (Whisper)" in err and "prompt_tokens" in err
    code, out, err = run_cli("estimate", str(path), "--lang", "zh")
    assert code != 0 and "input.audio_seconds" in err and "语音" in err

