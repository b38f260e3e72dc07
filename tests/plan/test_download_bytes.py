"""The weights a node downloads are the publisher's checkpoint in its own format (plan/money/transfer.download_bytes),
counted by the estimate's weight_bytes where the block shape is known: one rule for the weights a GPU holds and the
weights a node fetches, the disk a plan buys and the time its download takes.

Pinned to the repositories' published sizes (Hugging Face file listings): DeepSeek-V3's FP8 checkpoint is ~689 GB
(163 safetensors shards, including its 14 B multi-token-prediction layer, which the catalog leaves out), gpt-oss-120b's
MXFP4 experts ~65 GB and gpt-oss-20b ~13.8 GB, bge-m3's float32 pytorch_model.bin 2.27 GB, Qwen2.5-7B-Instruct-AWQ
5.58 GB. Before, every one was counted at 2 bytes per parameter (DeepSeek-V3: 1,342 GB and a 1,500 GiB disk)."""

from __future__ import annotations

import pytest

from gpuplan.catalog.models import resolve_model
from gpuplan.plan.money.transfer import download_bytes

GB = 1e9


def _bytes(model: str, quantization: str = "none", training: bool = False) -> float:
    spec = resolve_model(model)
    out = download_bytes(spec.params_total, quantization, training, spec)
    assert out is not None
    return out


@pytest.mark.parametrize("model,published_gb,rel", [
    ("deepseek-ai/DeepSeek-V3", 689 - 14 * 1.0, 0.03),     # the repository less its MTP layer (FP8, 1 byte/param)
    ("openai/gpt-oss-120b", 65.3, 0.03),
    ("openai/gpt-oss-20b", 13.8, 0.03),
    ("BAAI/bge-m3", 2.27, 0.01),
])
def test_a_checkpoint_published_outside_16_bit_downloads_its_own_size(model, published_gb, rel):
    assert _bytes(model) / GB == pytest.approx(published_gb, rel=rel)


def test_the_published_format_is_what_a_training_job_fetches_too():
    assert _bytes("deepseek-ai/DeepSeek-V3", training=True) == _bytes("deepseek-ai/DeepSeek-V3")
    assert _bytes("BAAI/bge-m3", training=True) / GB == pytest.approx(2.27, rel=0.01)


def test_a_service_on_a_pre_quantized_repository_downloads_that_repository():
    assert _bytes("Qwen/Qwen2.5-7B-Instruct", "awq") / GB == pytest.approx(5.58, rel=0.03)
    # bitsandbytes quantizes the published checkpoint at load time: the download is the 16-bit one
    assert _bytes("Qwen/Qwen2.5-7B-Instruct", "bnb-nf4", training=True) == _bytes("Qwen/Qwen2.5-7B-Instruct")
    assert _bytes("Qwen/Qwen2.5-7B-Instruct") == pytest.approx(2 * resolve_model("Qwen/Qwen2.5-7B-Instruct").params_total)


def test_an_inline_model_without_a_shape_is_counted_per_parameter():
    assert download_bytes(7e9, "none", False) == 14e9
    assert download_bytes(7e9, "awq", False) == 3.5e9
    assert download_bytes(None, "none", False) is None


def test_a_config_that_states_float32_is_read_as_fp32_and_one_that_says_nothing_as_16_bit():
    from gpuplan.catalog.configs.hf_config import _native_dtype

    assert _native_dtype({"torch_dtype": "float32"}) == "fp32"
    assert _native_dtype({"dtype": "float32"}) == "fp32"          # transformers 5 writes dtype
    assert _native_dtype({"torch_dtype": "bfloat16"}) is None
    assert _native_dtype({}) is None
    assert _native_dtype({"torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8"}}) == "fp8"


def test_the_plan_buys_a_disk_for_the_fp8_checkpoint_and_the_bundle_fetches_the_same_bytes():
    from gpuplan.plan.bundle import bundle_inputs
    from gpuplan.plan.recommend import recommend
    from gpuplan.render.bundle import render_bundle

    rec = recommend({"model": "deepseek-ai/DeepSeek-V3", "task": "inference", "serving": {"requests_per_s": 1},
                     "constraints": {"regions": ["cn-beijing"]}})
    plan = rec.best.to_dict()
    weights = plan["storage"]["budget"]["weights_bytes"]
    assert weights == pytest.approx(_bytes("deepseek-ai/DeepSeek-V3"), rel=0.001)
    assert plan["storage"]["disk"]["size_gib"] < 1000          # 1,500 GiB when counted at 2 bytes per parameter
    resolved, est = bundle_inputs(rec.best, rec.workload)
    files = render_bundle(plan, resolved, est)
    import json

    assert json.loads(files["plan.json"])["weights"]["bytes"] == pytest.approx(weights, rel=0.001)
