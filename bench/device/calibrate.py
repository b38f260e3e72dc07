"""Measure real peak memory and speed on a GPU machine, to calibrate and check the estimators.

Runs each case in a fresh subprocess (clean allocator state), builds the model from a
config.json-shaped dict with random weights on the GPU (no downloads), and writes one JSON line per
case: torch.cuda.max_memory_allocated / max_memory_reserved over steady-state steps, step time,
tokens/s, and the stack versions. Usage (on the GPU machine):

    python bench/device/calibrate.py OUT.jsonl [CASE ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

QWEN25_7B = dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                 num_attention_heads=28, num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768,
                 tie_word_embeddings=False, rms_norm_eps=1e-6, rope_theta=1e6)
QWEN25_15B = dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                  num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768,
                  tie_word_embeddings=True, rms_norm_eps=1e-6, rope_theta=1e6)
LLAMA31_8B = dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                  num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
                  tie_word_embeddings=False, rms_norm_eps=1e-5, rope_theta=5e5)

MODELS = {"Qwen/Qwen2.5-7B-Instruct": QWEN25_7B, "Qwen/Qwen2.5-1.5B-Instruct": QWEN25_15B,
          "meta-llama/Llama-3.1-8B": LLAMA31_8B}

CASES = {
    # name: (model, task, seq/prompt, batch, options)
    "q15_full_fused_ckpt_2048": ("Qwen/Qwen2.5-1.5B-Instruct", "full", 2048, 1, {"opt": "fused", "ckpt": True}),
    "q15_full_foreach_ckpt_2048": ("Qwen/Qwen2.5-1.5B-Instruct", "full", 2048, 1, {"opt": "foreach", "ckpt": True}),
    "q15_full_fused_nockpt_2048": ("Qwen/Qwen2.5-1.5B-Instruct", "full", 2048, 1, {"opt": "fused", "ckpt": False}),
    "q7_lora_ckpt_2048": ("Qwen/Qwen2.5-7B-Instruct", "lora", 2048, 1, {"ckpt": True}),
    "q7_lora_ckpt_4096_b2": ("Qwen/Qwen2.5-7B-Instruct", "lora", 4096, 2, {"ckpt": True}),
    "q7_lora_nockpt_1024": ("Qwen/Qwen2.5-7B-Instruct", "lora", 1024, 1, {"ckpt": False}),
    "l8_lora_ckpt_2048": ("meta-llama/Llama-3.1-8B", "lora", 2048, 1, {"ckpt": True}),
    "q7_full_fused_ckpt_1024": ("Qwen/Qwen2.5-7B-Instruct", "full", 1024, 1, {"opt": "fused", "ckpt": True}),
    "q7_generate_p1_o256": ("Qwen/Qwen2.5-7B-Instruct", "inference", 1, 1, {"out": 256}),
    "q7_generate_p8192_o256": ("Qwen/Qwen2.5-7B-Instruct", "inference", 8192, 1, {"out": 256}),
}


def run_case(name: str) -> dict:
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    model_id, task, seq, batch, opt = CASES[name]
    cfg_d = dict(MODELS[model_id])
    cfg = AutoConfig.for_model(cfg_d.pop("model_type"), **cfg_d)
    cfg.use_cache = task == "inference"
    torch.manual_seed(0)
    dev = torch.device("cuda")
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    out = {"case": name, "model": model_id, "task": task, "seq": seq, "batch": batch, **opt,
           "torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0), "attn": getattr(model.config, "_attn_implementation", None)}
    vocab = cfg.vocab_size
    if task == "inference":
        model.eval()
        ids = torch.randint(0, vocab, (batch, seq), device=dev)
        n_out = opt["out"]
        with torch.no_grad():
            model.generate(ids, max_new_tokens=4, min_new_tokens=4, do_sample=False)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            model.generate(ids, max_new_tokens=n_out, min_new_tokens=n_out, do_sample=False)
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
        out.update(output_tokens_per_s=n_out * batch / dt, max_allocated=torch.cuda.max_memory_allocated(),
                   max_reserved=torch.cuda.max_memory_reserved(), out_tokens=n_out)
        return out
    if opt.get("ckpt"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    if task == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules="all-linear"))
        params = [p for p in model.parameters() if p.requires_grad]
        optim = torch.optim.AdamW(params, lr=1e-5, fused=True)
        out["opt"] = "fused"
    else:
        params = list(model.parameters())
        kw = {"fused": True} if opt.get("opt") == "fused" else {"foreach": True}
        optim = torch.optim.AdamW(params, lr=1e-5, **kw)
    out["trainable_params"] = sum(p.numel() for p in params)
    ids = torch.randint(0, vocab, (batch, seq), device=dev)

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)

    step()  # creates optimizer states
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / 3
    out.update(step_time_s=dt, tokens_per_s=batch * seq / dt, max_allocated=torch.cuda.max_memory_allocated(),
               max_reserved=torch.cuda.max_memory_reserved())
    return out


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] == "--one":
        print(json.dumps(run_case(sys.argv[2])), flush=True)
        return 0
    path = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    with open(path, "a", encoding="utf-8") as fh:
        for name in names:
            t0 = time.time()
            try:
                res = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True,
                                     timeout=float(os.environ.get("CASE_TIMEOUT", "90")))
                line = res.stdout.strip().splitlines()[-1] if res.returncode == 0 and res.stdout.strip() else \
                    json.dumps({"case": name, "error": res.stderr[-1500:]})
            except subprocess.TimeoutExpired:
                line = json.dumps({"case": name, "error": "timeout"})
            fh.write(line + "\n")
            fh.flush()
            print(f"{name}: {time.time() - t0:.1f}s {line[:300]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
