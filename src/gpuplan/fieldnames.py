"""Human labels for field names: catalog record keys (`gpuplan show`) and workload keys.

JSON keeps the keys; text output shows the label in the output's language (``--lang zh``: the
Chinese label, with the key beside it where the user may need it to edit a workload file).
"""

from __future__ import annotations

from gpuplan.i18n import N_, current_lang, tr

# record and workload keys -> English label (a msgid; the Chinese text is in the .po)
FIELD_LABELS: dict[str, str] = {
    # GPUs
    "id": N_("Id"), "name": N_("Name"), "vendor": N_("Vendor"), "architecture": N_("Architecture"),
    "compute_capability": N_("Compute capability"), "form_factor": N_("Form factor"),
    "memory_gib": N_("Memory (GiB)"), "memory_type": N_("Memory type"),
    "driver_memory_mib": N_("Memory visible to the driver (MiB)"), "mem_bandwidth_gb_s": N_("Memory bandwidth (GB/s)"),
    "fp32_tflops": N_("FP32 TFLOPS"), "tf32_dense_tflops": N_("TF32 dense TFLOPS"),
    "fp16_dense_tflops": N_("FP16 dense TFLOPS"), "bf16_dense_tflops": N_("BF16 dense TFLOPS"),
    "fp8_dense_tflops": N_("FP8 dense TFLOPS"), "int8_dense_tops": N_("INT8 dense TOPS"),
    "fp4_dense_tflops": N_("FP4 dense TFLOPS"), "nvlink_gb_s": N_("NVLink (GB/s)"), "pcie_gen": N_("PCIe generation"),
    "tdp_w": N_("Power (W)"), "mig_instances": N_("MIG instances"), "aliases": N_("Aliases"), "sources": N_("Sources"),
    "unconfirmed": N_("Unconfirmed values"), "notes": N_("Notes"), "mig": N_("MIG"),
    "capacity_bytes": N_("Usable memory (bytes)"),
    # instance types and families
    "cloud": N_("Cloud"), "family": N_("Family"), "kind": N_("Kind"), "gpu": N_("GPU"), "gpu_basis": N_("GPU basis"),
    "description": N_("Description"), "cpu": N_("CPU"), "status": N_("Status"), "instance_type": N_("Instance type"),
    "gpu_count": N_("GPUs"), "gpu_memory_gib": N_("GPU memory (GiB)"), "vcpus": N_("vCPU"),
    "network_gbit_s": N_("Network (Gbit/s)"), "network_burst_gbit_s": N_("Network burst (Gbit/s)"),
    "pps": N_("Packets per second"), "rdma": N_("RDMA"), "rdma_gbit_s": N_("RDMA (Gbit/s)"),
    "interconnect": N_("Interconnect"), "disk_iops": N_("Disk IOPS"), "disk_bandwidth_mb_s": N_("Disk bandwidth (MB/s)"),
    "local_disk_gib": N_("Local disk (GiB)"), "region_notes": N_("Region notes"), "is_vgpu": N_("vGPU"),
    "gpus": N_("GPU summary"), "gpu_name": N_("GPU name"), "gpu_summary": N_("GPU summary"), "prices": N_("Prices"),
    # models
    "arch": N_("Architecture"), "num_layers": N_("Layers"), "hidden_size": N_("Hidden size"),
    "intermediate_size": N_("FFN size"), "num_attention_heads": N_("Attention heads"),
    "num_key_value_heads": N_("KV heads"), "head_dim": N_("Head size"), "vocab_size": N_("Vocabulary"),
    "tie_word_embeddings": N_("Tied embeddings"), "attention": N_("Attention"), "mlp": N_("MLP"),
    "norm": N_("Normalisation"), "position": N_("Position encoding"), "qkv_bias": N_("QKV bias"),
    "max_position_embeddings": N_("Max positions"), "moe": N_("Mixture of experts"), "mla": N_("MLA"),
    "params_total": N_("Parameters"), "params_active": N_("Active parameters"), "source": N_("Source"),
    "modelscope_id": N_("ModelScope id"), "o_bias": N_("Output projection bias"), "mlp_bias": N_("MLP bias"),
    "norm_bias": N_("Norm bias"), "qk_norm": N_("QK norm"), "attention_sinks": N_("Attention sinks"),
    "norms_per_layer": N_("Norms per layer"), "position_offset": N_("Position offset"),
    "type_vocab_size": N_("Token types"), "pooler": N_("Pooler"), "embedding_norm": N_("Embedding norm"),
    "num_decoder_layers": N_("Decoder layers"), "relative_attention_num_buckets": N_("Relative attention buckets"),
    "sliding_window": N_("Sliding window"), "linear_attention": N_("Linear-attention layers"),
    "attn_output_gate": N_("Attention output gate"), "profile": N_("Profile"), "synthetic": N_("Synthetic"), "native_dtype": N_("Native weight format"),
    "vision_params": N_("Vision tower parameters"), "vision_patches_per_token": N_("Vision patches per image token"), "sustained_tensor_fraction": N_("Sustained tensor rate (share of peak)"),
    "assumptions": N_("Assumptions"),
    # workload keys (assumptions, errors)
    "model": N_("Model"), "task": N_("Task"), "precision": N_("Precision"), "quantization": N_("Quantization"),
    "kv_cache_dtype": N_("KV cache type"), "framework": N_("Framework"), "batch_size": N_("Batch size"),
    "seq_len": N_("Sequence length"), "prompt_tokens": N_("Prompt tokens"), "output_tokens": N_("Output tokens"),
    "flash_attention": N_("FlashAttention"), "attention_kernel": N_("Attention kernel"), "objective": N_("Objective"),
    "optimizer": N_("Optimizer"),
    "gradient_accumulation": N_("Gradient accumulation"), "grad_checkpointing": N_("Activation checkpointing"),
    "framework_version": N_("Framework version"), "input": N_("Input"),
    "optimizer_in_backward": N_("Optimizer step in backward"), "activation_offloading": N_("Activation offloading"),
    "fused_loss": N_("Chunked fused loss"), "head": N_("Output head"),
    "packed": N_("Packed sequences"), "compile": N_("torch.compile"), "tf32": N_("TF32 matmuls"), "lora": N_("LoRA"),
    "parallel": N_("Parallel layout"), "dataset": N_("Dataset"), "serving": N_("Serving"), "hardware": N_("Hardware"),
    "constraints": N_("Constraints"), "deadline_hours": N_("Deadline (hours)"), "budget": N_("Budget"),
    "currency": N_("Currency"), "regions": N_("Regions"), "billing": N_("Billing"), "max_gpus": N_("Max GPUs"),
    "families": N_("Instance families"), "include_status": N_("Instance status"), "clouds": N_("Clouds"),
    "platforms": N_("Platforms"), "tokens": N_("Tokens"), "samples": N_("Samples"),
    "tokens_per_sample": N_("Tokens per sample"), "bytes_per_sample": N_("Bytes per sample"), "epochs": N_("Epochs"),
    "size_gib": N_("Size (GiB)"), "num_files": N_("Files"), "items": N_("Items"), "audio_hours": N_("Audio hours"),
    "count": N_("Count"), "nodes": N_("Nodes"), "image_size": N_("Image size"), "steps": N_("Steps"),
    "audio_seconds": N_("Audio seconds"), "tokens_per_window": N_("Tokens per 30 s window"), "rank": N_("Rank"), "alpha": N_("Alpha"), "targets": N_("Targets"),
    "dropout": N_("Dropout"), "adapter_dtype": N_("Adapter dtype"), "tp": N_("Tensor parallel"), "pp": N_("Pipeline parallel"), "dp": N_("Data parallel"),
    "ep": N_("Expert parallel"), "sp": N_("Sequence parallel"), "cp": N_("Context parallel"), "zero": N_("ZeRO stage"),
    "fsdp": N_("FSDP"), "offload": N_("Offload"), "microbatches": N_("Micro-batches"),
    "dp_attention": N_("Data-parallel attention"), "vp": N_("Virtual pipeline stages"),
    "schedule": N_("Pipeline schedule"), "tp_comm_overlap": N_("TP communication overlap"),
    "loss_parallel": N_("Loss on vocab-split logits"), "ep_dispatcher": N_("MoE token dispatcher"),
    "requests_per_s": N_("Requests per second"), "peak_requests_per_s": N_("Peak requests per second"),
    "requests_per_day": N_("Requests per day"), "peak_hours_per_day": N_("Peak hours per day"),
    "ttft_ms": N_("TTFT target (ms)"), "tpot_ms": N_("TPOT target (ms)"),
    "target_utilization": N_("Target utilisation"),
}

# Values that are words, not ids (shown translated in text; JSON keeps them).
VALUE_WORDS = (N_("True"), N_("False"))
_ENUM_WORDS = {("objective", "cost"): N_("lowest cost"), ("objective", "time"): N_("fastest"),
               ("objective", "balanced"): N_("balanced"), ("quantization", "none"): N_("none"),
               ("kv_cache_dtype", "auto"): N_("auto (the model's dtype)"),
               ("task", "inference"): N_("inference (serving)"), ("task", "pretrain"): N_("pre-training"),
               ("task", "full"): N_("full fine-tuning"), ("task", "lora"): N_("LoRA"), ("task", "qlora"): N_("QLoRA"),
               ("head", "lm"): N_("language-model head (vocabulary logits)"),
               ("head", "classifier"): N_("task head (no vocabulary logits)")}


def field_label(key: str, lang: str | None = None, *, with_key: bool = False) -> str:
    """The label of a field in ``lang`` (default: the current language); English keeps the key itself.
    ``with_key`` adds the key after a Chinese label, for fields the user writes in a workload file."""
    lang = lang or current_lang()
    label = FIELD_LABELS.get(key)
    if lang == "en" or label is None:
        return key
    text = tr(label, lang)
    return tr("{label} ({key})", lang).format(label=text, key=key) if with_key else text


def value_text(value: object, lang: str | None = None, key: str | None = None) -> str:
    """A value in text: booleans and enum words (``objective: cost``) in the language, anything else as it is.
    English keeps the value itself."""
    if isinstance(value, bool):
        return tr(str(value), lang)
    word = _ENUM_WORDS.get((key or "", str(value)))
    if word is not None and (lang or current_lang()) != "en":
        return tr(word, lang)
    return str(value)
