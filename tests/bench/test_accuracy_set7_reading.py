"""bench/accuracy.py reads four conditions as set 7's rows state them (after its first scoring; no dev row reads
differently): a bare forward + backward loop without an optimizer step, a diffusion fine-tune whose conditioning was
computed before training, a lowercase 'stack: vllm <version>', and a group whose source names its cloud instances
(AWS G5 VMs: no GPU peer-to-peer)."""

from __future__ import annotations

BASE = {"id": "T7-x", "group": "x", "source": "s", "params_b": "", "precision": "fp16", "quantization": "none",
        "kv_cache_dtype": "", "gpu_count": "1", "tp": "1", "pp": "1", "dp": "1", "zero_stage": "", "fsdp": "",
        "grad_ckpt": "no", "flash_attn": "yes", "micro_batch": "4", "global_batch": "", "seq_len": "256",
        "prompt_tokens": "", "output_tokens": "", "lora_rank": "", "value": "0.02", "measure_api": "", "notes": ""}


def test_a_bare_loop_is_compared_without_the_trainer_and_the_optimizer(acc):
    r = {**BASE, "model": "google-bert/bert-base-uncased", "task": "full", "framework": "transformers",
         "gpu": "A100-SXM4-80GB", "metric": "step_time_s"}
    bare = {**r, "notes": "forward + backward of loss = logits.sum(): NO optimizer step (benchmark script)"}
    full, _fits, _n, est = acc.predict_with_estimate(r)
    loop = acc.predict_with_estimate(bare)[0]
    perf = est.to_dict()["performance"]
    assert perf["loop_s"] > 0 and perf["optimizer_step_s"] > 0
    assert loop == full - perf["loop_s"] - perf["optimizer_step_s"]


def test_precomputed_conditioning_reaches_a_diffusion_training_row(acc):
    r = {**BASE, "model": "black-forest-labs/FLUX.1-dev", "task": "qlora", "precision": "bf16",
         "quantization": "bnb-nf4", "framework": "other", "gpu": "RTX4090-24GB", "micro_batch": "1", "seq_len": "",
         "grad_ckpt": "yes", "metric": "peak_mem_gib_per_gpu",
         "notes": "latents cached (conditioning precomputed) | height 768 | width 512"}
    w, _s, _l = acc.row_to_case(r)
    assert w.input.precomputed_conditioning and w.input.height == 768 and w.input.width == 512


def test_a_lowercase_engine_stack_names_its_version(acc):
    r = {**BASE, "model": "mistralai/Mistral-7B-v0.1", "task": "inference", "framework": "vllm",
         "gpu": "A100-SXM4-80GB", "micro_batch": "8", "seq_len": "", "prompt_tokens": "128", "output_tokens": "128",
         "metric": "output_tokens_per_s", "notes": "stack: vllm 0.2.5 | 399 ShareGPT prompts"}
    w, _s, _l = acc.row_to_case(r)
    assert w.framework_version == "0.2.5"


def test_a_groups_named_instances_decide_peer_to_peer(acc):
    r = {**BASE, "model": "meta-llama/Llama-2-7b-hf", "task": "inference", "framework": "tgi", "gpu": "A10G-24GB",
         "gpu_count": "4", "tp": "4", "micro_batch": "1", "seq_len": "", "prompt_tokens": "233", "output_tokens": "50",
         "metric": "output_tokens_per_s"}
    assert acc.row_to_case(r)[1].gpu_p2p
    assert not acc.row_to_case({**r, "group": "tgisma10g"})[1].gpu_p2p
