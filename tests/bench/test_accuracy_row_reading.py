"""bench/accuracy.py reads three conditions as rows state them (found on held-out set 5 after its first scoring;
no dev row reads differently): FSDP shards are data-parallel ranks even where a JAX mesh prints "DP 1 FSDP n"; an
encoder benchmark may give its input length only as the sequence length; torchao's llama generate.py is gpt-fast's
compiled decode loop."""

from __future__ import annotations

BASE = {"id": "T2-x", "group": "x", "source": "s", "params_b": "", "precision": "bf16", "quantization": "none",
        "kv_cache_dtype": "", "gpu_count": "1", "tp": "1", "pp": "1", "dp": "1", "zero_stage": "", "fsdp": "",
        "grad_ckpt": "", "flash_attn": "", "micro_batch": "1", "global_batch": "", "seq_len": "", "prompt_tokens": "",
        "output_tokens": "", "lora_rank": "", "value": "1", "measure_api": "", "notes": ""}


def test_fsdp_shards_count_as_data_parallel_ranks(acc):
    r = {**BASE, "model": "meta-llama/Llama-2-7b-hf", "task": "pretrain", "framework": "other", "gpu": "H100-SXM-80GB",
         "gpu_count": "8", "dp": "1", "fsdp": "full_shard", "micro_batch": "2", "seq_len": "4096",
         "metric": "step_time_s"}
    _w, system, layout = acc.row_to_case(r)
    assert layout.dp == 8 and system.total_gpus == 8 and layout.zero == 3


def test_an_encoder_rows_sequence_length_is_its_prompt(acc):
    r = {**BASE, "model": "google-bert/bert-base-uncased", "task": "inference", "framework": "transformers",
         "gpu": "A100-SXM4-80GB", "micro_batch": "32", "seq_len": "384", "metric": "total_tokens_per_s"}
    w, _s, _l = acc.row_to_case(r)
    assert w.prompt_tokens == 384


def test_torchao_llama_generate_is_gpt_fast(acc):
    r = {**BASE, "model": "meta-llama/Llama-2-7b-chat-hf", "task": "inference", "framework": "other",
         "gpu": "A100-SXM4-80GB", "prompt_tokens": "6", "output_tokens": "200", "metric": "output_tokens_per_s",
         "notes": "stack: torchao @92dd5f5 torchao/_models/llama/generate.py (gpt-fast-style model)"}
    assert acc.stack_name(r) == "gpt-fast"


def test_an_engine_memory_row_is_scored_beside_the_weights_and_the_batch_kv_cache(acc):
    """An engine row's residual subtracts what gpuplan.estimate.intervals holds exact (the weights and the batch's
    KV cache in the paged pool, at most 95 % of the estimate), so the bands are fitted as they are applied. LMDeploy
    0.0 TurboMind (held-out set 5, lmdkvint8: blocks for the launched sessions only) at batch 48 on an A100-80GB."""
    r = {**BASE, "model": "internlm/internlm-chat-7b", "task": "inference", "framework": "lmdeploy",
         "gpu": "A100-SXM4-80GB", "micro_batch": "48", "prompt_tokens": "1024", "output_tokens": "1024",
         "metric": "peak_mem_gib_per_gpu", "value": "62.0635", "notes": "stack: lmdeploy 0.0.1"}
    from gpuplan.estimate import intervals

    row = acc.score(r)
    _pred, _fits, _note, est = acc.predict_with_estimate(r)
    assert row.exact is not None and est.memory.engine_reserved_bytes
    weights = est.memory.components["weights"]
    assert intervals.exact_bytes(est) == weights + est.memory.kv_batch_bytes > weights
    assert row.exact == intervals.exact_bytes(est) / 2**30
    w = min(row.exact, 0.95 * row.predicted)
    assert row.residual == __import__("math").log((row.measured - w) / (row.predicted - w))


def test_a_row_that_states_strict_fp32_matmuls_is_estimated_with_tf32_off(acc):
    """'tf32 off' in an fp32 row's notes is the workload's tf32: false (PyTorch's default matmuls, as transformers'
    torch.compile page ran ViT-B on an A100); a 16-bit row ignores it, and an fp32 row without it keeps TF32."""
    r = {**BASE, "model": "google/vit-base-patch16-224", "task": "inference", "framework": "transformers",
         "gpu": "A100-40GB", "micro_batch": "16", "metric": "images_per_s", "precision": "fp32",
         "notes": "torch 2.0 defaults | tf32 off (matmuls on the FP32 cores)"}
    assert acc.row_to_case(r)[0].tf32 is False
    assert acc.row_to_case({**r, "notes": "torch 2.0 defaults"})[0].tf32 is None
    assert acc.row_to_case({**r, "precision": "bf16"})[0].tf32 is None


def test_an_engine_startup_log_is_scored_against_its_memory_components(acc):
    """vLLM's startup log prints the weights it loaded and the KV pool it allocated on one GPU ("Model loading took
    ... GiB", "Available KV cache memory: ... GiB"; held-out set 12's cssa100 rows): the bench compares them with the
    estimate's components, outside the bands of whole figures."""
    r = {**BASE, "model": "Qwen/Qwen3-8B", "task": "inference", "framework": "vllm", "gpu": "A100-SXM4-80GB",
         "micro_batch": "8", "prompt_tokens": "1024", "output_tokens": "128", "notes": "stack: vllm 0.10.2"}
    weights = acc.score({**r, "metric": "weights_mem_gib_per_gpu", "value": "15.27"})
    assert weights.kind == "memory" and weights.icls is None
    assert abs(weights.error) < 0.01                                      # 8.19 B bf16 parameters: 15.26 GiB
    kv = acc.score({**r, "metric": "kv_cache_gib_per_gpu", "value": "55"})
    assert kv.icls is None and 40 < kv.predicted < 60     # 0.9 x 80 GiB less weights, activations, CUDA context
    hf = acc.score({**r, "framework": "transformers", "metric": "kv_cache_gib_per_gpu", "value": "5"})
    assert hf.predicted is None and "no KV pool" in hf.note


def test_a_speech_rows_stated_new_tokens_are_its_tokens_per_window(acc):
    """optimum-benchmark's Whisper rows generate exactly 10 or 100 new tokens (held-out set 13, obwhisper): the bench
    passes the row's output_tokens as input.tokens_per_window; an LLM row's output_tokens stay what they are."""
    r = {**BASE, "model": "openai/whisper-base", "task": "inference", "framework": "transformers", "gpu": "T4-16GB",
         "precision": "fp32", "output_tokens": "10", "metric": "latency_s", "notes": "audio_seconds 30"}
    w, _s, _l = acc.row_to_case(r)
    assert w.input.tokens_per_window == 10
    llm = {**r, "model": "Qwen/Qwen2.5-7B-Instruct", "prompt_tokens": "128", "notes": ""}
    w, _s, _l = acc.row_to_case(llm)
    assert w.output_tokens == 10 and (w.input is None or w.input.tokens_per_window is None)
