"""bench/accuracy.py reads a maximum-throughput row's finite batch: the requests it names (dataset.items), ShareGPT's
varying output lengths (max_output_tokens = 2048 - prompt, the ShareGPT sampler's cap) and the batch limit the engine
ran (stated, else vLLM's default for its release and GPU). The row is then predicted from the estimate's job time."""

from __future__ import annotations

import pytest

BASE = {"id": "T1-x", "group": "x", "source": "s", "model": "Qwen/Qwen3-8B", "params_b": "8", "task": "inference",
        "precision": "bf16", "quantization": "none", "kv_cache_dtype": "", "framework": "vllm", "gpu": "H100-SXM-80GB",
        "gpu_count": "1", "tp": "1", "pp": "1", "dp": "1", "zero_stage": "", "fsdp": "", "grad_ckpt": "",
        "flash_attn": "", "micro_batch": "", "global_batch": "", "seq_len": "", "prompt_tokens": "216",
        "output_tokens": "197", "lora_rank": "", "metric": "max_output_tokens_per_s", "value": "4000",
        "measure_api": ""}


def row(notes: str, **more) -> dict:
    return {**BASE, "notes": notes, **more}


def test_a_sharegpt_burst_is_a_job_of_varying_lengths(acc):
    w, _s, _l = acc.row_to_case(row("vllm bench serve --dataset-name sharegpt --num-prompts 1,000 | stack: vllm 0.11.0"))
    assert w.dataset.items == 1000 and w.max_output_tokens == 2048 - 216
    assert w.serving.max_num_seqs == 1024                 # V1 on an 80 GB H100


def test_a_random_dataset_burst_keeps_fixed_lengths(acc):
    w, _s, _l = acc.row_to_case(row("dataset: random, 500 prompts, all queued at once", gpu="A100-SXM4-80GB"))
    assert w.dataset.items == 500 and w.max_output_tokens is None
    assert w.serving.max_num_seqs == 256                  # the A100 keeps 256


def test_a_stated_limit_and_an_old_release_win(acc):
    w, _s, _l = acc.row_to_case(row("320 ShareGPT prompts | --max-num-seqs 512 | stack: vllm 0.5.4"))
    assert w.serving.max_num_seqs == 512 and w.dataset.items == 320
    w, _s, _l = acc.row_to_case(row("sharegpt, num_prompts=200 | stack: vLLM 0.5.4"))
    assert w.serving.max_num_seqs == 256                  # the V0 engine's default


def test_a_rate_is_not_a_request_count(acc):
    w, _s, _l = acc.row_to_case(row("raw 3.8028030337410827 requests/s (benchmark_throughput synthetic)"))
    assert w.dataset is None


def test_a_burst_row_is_predicted_from_the_job_time(acc):
    r = row("vllm bench serve --dataset-name sharegpt --num-prompts 1000 | stack: vllm 0.11.0")
    pred, _fits, _note, est = acc.predict_with_estimate(r)
    assert pred == pytest.approx(1000 * 197 / est.performance["job_time_s"])
    assert pred < est.performance["max_output_tokens_per_s"]   # the drain costs throughput
