"""Every model issue 30 names resolves offline to the published size, and estimates end to end.

Ranges are pinned to the publishers' own figures: the papers' and model cards' parameter counts, timm's
and Ultralytics' published tables of parameters and FLOPs per image. FLOPs: forward FLOPs per sample
(2 x multiply-accumulates; the papers that print "FLOPs" for ResNet, ConvNeXt, Swin and EfficientNet
count multiply-adds, so 2 x their figure)."""

from __future__ import annotations

import pytest

from gpuplan.catalog.library import closest_models, get_model, list_models, lookup, resolve_model
from gpuplan.errors import GpuplanError
from gpuplan.estimate.core import estimate
from gpuplan.estimate.params import table

M, B, G = 1e6, 1e9, 1e9

# (name as a user types it, kind, published parameters, relative tolerance, published forward FLOPs or None)
NAMED = [
    # timm: He et al. 2016 (ResNet, arXiv:1512.03385 Table 1: 1.8 / 3.8 / 11.3 GMACs), Dosovitskiy et al. 2020
    # (ViT-B/16 86 M, 17.6 GMACs at 224), Liu et al. 2022 (ConvNeXt-T 28 M, 4.5 GMACs), Liu et al. 2021 (Swin-B 88 M,
    # 15.4 GMACs at 224), Tan & Le 2019 (EfficientNet-B0 5.3 M, 0.39 GMACs; B7 66 M, 37 GMACs at 600)
    ("timm/resnet50.a1_in1k", "vision", 25.6 * M, 0.02, 2 * 4.1 * G),
    ("resnet18", "vision", 11.7 * M, 0.02, 2 * 1.8 * G),
    ("timm/resnet152.tv_in1k", "vision", 60.2 * M, 0.02, 2 * 11.5 * G),
    ("vit_base_patch16_224", "vision", 86.6 * M, 0.02, 2 * 17.6 * G),
    ("timm/vit_large_patch16_224.augreg_in21k_ft_in1k", "vision", 304.3 * M, 0.02, 2 * 61.6 * G),
    ("convnext_tiny", "vision", 28.6 * M, 0.03, 2 * 4.5 * G),
    # Hugging Face transformers' ConvNeXt ids (Meta's weights, Liu et al. 2022 Table 1: ConvNeXt-L 198 M, 34.4
    # GFLOPs at 224 and 101.0 at 384, their "FLOPs" being multiply-adds)
    ("facebook/convnext-large-224", "vision", 198 * M, 0.02, 2 * 34.4 * G),
    ("facebook/convnext-large-384-22k-1k", "vision", 198 * M, 0.02, 2 * 101.0 * G),
    ("timm/swin_base_patch4_window7_224.ms_in22k_ft_in1k", "vision", 88 * M, 0.02, 2 * 15.4 * G),
    ("efficientnet_b0", "vision", 5.3 * M, 0.02, 2 * 0.39 * G),
    ("timm/efficientnet_b7.ra_in1k", "vision", 66 * M, 0.02, 2 * 38 * G),
    # Ultralytics' tables (docs/en/models/yolov8.md, yolo11.md; ultralytics/yolov5 README): params (M), FLOPs (B)
    ("yolov5n", "vision", 1.9 * M, 0.01, 4.5 * G),
    ("yolov5x", "vision", 86.7 * M, 0.01, 205.7 * G),
    ("yolov8n", "vision", 3.2 * M, 0.01, 8.7 * G),
    ("yolov8m", "vision", 25.9 * M, 0.01, 78.9 * G),
    ("ultralytics/yolov8x", "vision", 68.2 * M, 0.01, 257.8 * G),
    ("yolo11n.pt", "vision", 2.6 * M, 0.01, 6.5 * G),
    ("yolo11x", "vision", 56.9 * M, 0.01, 194.9 * G),
    # Whisper (Radford et al. 2022, arXiv:2212.04356 Table 1: 39 M, 74 M, 244 M, 769 M, 1550 M; the Hugging Face
    # checkpoints: 37.8 M, 72.6 M, 241.7 M, 763.9 M, 1543 M; large-v3-turbo card: 809 M)
    ("openai/whisper-tiny", "speech", 37.76 * M, 0.005, None),
    ("openai/whisper-base", "speech", 72.59 * M, 0.005, None),
    ("openai/whisper-small", "speech", 241.7 * M, 0.005, None),
    ("openai/whisper-medium", "speech", 763.9 * M, 0.005, None),
    ("openai/whisper-large", "speech", 1543.3 * M, 0.005, None),
    ("openai/whisper-large-v2", "speech", 1543.3 * M, 0.005, None),
    ("openai/whisper-large-v3", "speech", 1543.5 * M, 0.005, None),
    ("openai/whisper-large-v3-turbo", "speech", 809 * M, 0.005, None),
    # distil-large-v3 card (huggingface/distil-whisper README): 756 M, large-v3's encoder and a 2-layer decoder
    ("distil-whisper/distil-large-v3", "speech", 756 * M, 0.005, None),
    # vision-language: LLM + vision tower (Qwen-VL paper Table 1: 9.6 B; model cards: Qwen2-VL 2.21 / 8.29 / 73.4 B,
    # Qwen2.5-VL 3.75 / 8.29 / 73.4 B, InternVL2-8B and InternVL2.5-8B 8.08 B)
    ("Qwen/Qwen-VL-Chat", "decoder", 9.6 * B, 0.02, None),
    ("Qwen/Qwen2-VL-2B-Instruct", "decoder", 2.21 * B, 0.01, None),
    ("Qwen/Qwen2-VL-7B-Instruct", "decoder", 8.29 * B, 0.01, None),
    ("Qwen/Qwen2-VL-72B-Instruct", "decoder", 73.4 * B, 0.01, None),
    ("Qwen/Qwen2.5-VL-3B-Instruct", "decoder", 3.75 * B, 0.01, None),
    ("Qwen/Qwen2.5-VL-7B-Instruct", "decoder", 8.29 * B, 0.01, None),
    ("Qwen/Qwen2.5-VL-72B-Instruct", "decoder", 73.4 * B, 0.01, None),
    ("OpenGVLab/InternVL2-8B", "decoder", 8.08 * B, 0.01, None),
    ("OpenGVLab/InternVL2_5-8B", "decoder", 8.08 * B, 0.01, None),
    # InternVL3.5-30B-A3B (arXiv:2508.18265): InternViT-300M (0.30 B) + Qwen3-30B-A3B (30.53 B, tests/catalog/test_models.py)
    # = 30.8 B; LLaVA-1.5: 7.06 B (the llava-1.5-7b.json fixture's count, tests/catalog/test_models.py), 13B 13.4 B
    ("OpenGVLab/InternVL3_5-30B-A3B", "decoder", 30.8 * B, 0.01, None),
    ("llava-hf/llava-1.5-7b-hf", "decoder", 7.06 * B, 0.01, None),
    ("liuhaotian/llava-v1.5-13b", "decoder", 13.4 * B, 0.01, None),
    # DiT pipelines: all components (denoiser + text encoders + VAE); denoisers checked below
    ("PixArt-alpha/PixArt-Sigma-XL-2-1024-MS", "diffusion", 5.46 * B, 0.02, None),
    ("stabilityai/stable-diffusion-3-medium-diffusers", "diffusion", 7.7 * B, 0.02, None),
    ("black-forest-labs/FLUX.1-dev", "diffusion", 16.87 * B, 0.01, None),
    ("black-forest-labs/FLUX.1-schnell", "diffusion", 16.86 * B, 0.01, None),
    # Stable Diffusion 2 / 2.1: UNet 865,910,724 + OpenCLIP-H text tower 340,387,840 + VAE 83,653,863 (buddy-mlir's SD 2.1
    # parameter buffers; the VAE is SD 1.5's); one UNet pass: SD 1.5's 7.8e11 FLOPs at 512 px, 2.1e12 at 768 px
    ("stabilityai/stable-diffusion-2-base", "diffusion", 1_289_952_427, 1e-9, 7.8e11),
    ("stabilityai/stable-diffusion-2-1-base", "diffusion", 1_289_952_427, 1e-9, 7.8e11),
    ("stabilityai/stable-diffusion-2-1", "diffusion", 1_289_952_427, 1e-9, 2.1e12),
    # remote-code LLMs (Baichuan-13B: pytorch_model.bin.index.json total_size / 2; Baichuan2 cards; ChatGLM2/3 6.2 B;
    # GLM-4-9B 9.4 B; Qwen-7B 7.7 B)
    ("baichuan-inc/Baichuan-13B-Base", "decoder", 13.265 * B, 0.001, None),
    ("baichuan-inc/Baichuan-7B", "decoder", 7.0 * B, 0.01, None),
    ("baichuan-inc/Baichuan2-13B-Base", "decoder", 13.9 * B, 0.01, None),
    ("baichuan-inc/Baichuan2-7B-Base", "decoder", 7.5 * B, 0.01, None),
    ("THUDM/codegeex2-6b", "decoder", 6.24 * B, 0.01, None),
    ("THUDM/chatglm2-6b", "decoder", 6.24 * B, 0.01, None),
    ("THUDM/chatglm3-6b", "decoder", 6.24 * B, 0.01, None),
    # GLM-4-32B-0414: "32 billion parameters" (THUDM/GLM-4 README.md)
    ("THUDM/GLM-4-32B-0414", "decoder", 32.6 * B, 0.02, None),
    ("THUDM/glm-4-9b", "decoder", 9.4 * B, 0.01, None),
    ("Qwen/Qwen-7B-Chat", "decoder", 7.72 * B, 0.01, None),
    # base models: Pythia (Biderman et al. 2023 Table 1 / the checkpoints: exact), BLOOM model cards, OPT
    # (the checkpoints: 125,239,296 for 125m), DeBERTa-v3 cards (backbone + embedding)
    ("EleutherAI/pythia-70m", "decoder", 70_426_624, 1e-9, None),
    ("EleutherAI/pythia-160m", "decoder", 162_322_944, 1e-9, None),
    ("EleutherAI/pythia-410m", "decoder", 405_334_016, 1e-9, None),
    ("EleutherAI/pythia-1b", "decoder", 1_011_781_632, 1e-9, None),
    ("EleutherAI/pythia-1.4b", "decoder", 1_414_647_808, 1e-9, None),
    ("EleutherAI/pythia-2.8b", "decoder", 2_775_208_960, 1e-9, None),
    ("EleutherAI/pythia-6.9b", "decoder", 6_857_302_016, 1e-9, None),
    ("EleutherAI/pythia-12b", "decoder", 11_846_072_320, 1e-9, None),
    ("bigscience/bloom-560m", "decoder", 559_214_592, 1e-9, None),
    ("bigscience/bloom-1b1", "decoder", 1_065_314_304, 1e-9, None),
    ("bigscience/bloom-1b7", "decoder", 1_722_408_960, 1e-9, None),
    ("bigscience/bloom-3b", "decoder", 3_002_557_440, 1e-9, None),
    ("bigscience/bloom-7b1", "decoder", 7_069_016_064, 1e-9, None),
    ("bigscience/bloom", "decoder", 176.2 * B, 0.01, None),
    ("facebook/opt-125m", "decoder", 125_239_296, 1e-9, None),
    ("facebook/opt-1.3b", "decoder", 1.316 * B, 0.01, None),
    ("facebook/opt-2.7b", "decoder", 2.65 * B, 0.01, None),
    ("facebook/opt-6.7b", "decoder", 6.66 * B, 0.01, None),
    ("facebook/opt-13b", "decoder", 12.85 * B, 0.01, None),
    ("facebook/opt-30b", "decoder", 30.0 * B, 0.01, None),
    ("facebook/opt-66b", "decoder", 65.7 * B, 0.01, None),
    ("microsoft/deberta-v3-xsmall", "encoder", 70 * M, 0.02, None),
    ("microsoft/deberta-v3-small", "encoder", 141 * M, 0.02, None),
    ("microsoft/deberta-v3-base", "encoder", 184 * M, 0.02, None),
    ("microsoft/deberta-v3-large", "encoder", 435 * M, 0.02, None),
    # Segment Anything: the checkpoints' fp32 sizes (375 MB, 1.25 GB, 2.56 GB at 4 bytes a parameter; the FAQ's ViT-H:
    # 632 M encoder + 4 M prompt encoder and mask decoder), SAM 2 / 2.1 README Size (M)
    ("facebook/sam-vit-base", "vision", 93.7 * M, 0.02, None),
    ("facebook/sam-vit-large", "vision", 312 * M, 0.02, None),
    ("facebook/sam-vit-huge", "vision", 641 * M, 0.02, None),
    ("facebook/sam2-hiera-tiny", "vision", 38.9 * M, 0.001, None),
    ("facebook/sam2.1-hiera-large", "vision", 224.4 * M, 0.001, None),
    # DBRX (Databricks, 'Introducing DBRX', 2024-03-27: 132 B parameters, 16 experts choosing 4): its config nests the
    # experts under ffn_config
    ("databricks/dbrx-instruct", "decoder", 132 * B, 0.01, None),
    # MiniMax-M2.7: its checkpoint's weight table sums to 228,703,644,928 parameters (no MTP tensors); M2.5 the same
    # shape. Qwen3-Next-80B-A3B: "80B in total" (model card); Moonlight-16B-A3B: "16B total" (model card)
    ("MiniMaxAI/MiniMax-M2.7", "decoder", 228_703_644_928, 0.001, None),
    ("MiniMaxAI/MiniMax-M2.5", "decoder", 228_703_644_928, 0.001, None),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "decoder", 80 * B, 0.01, None),
    ("moonshotai/Moonlight-16B-A3B-Instruct", "decoder", 16 * B, 0.05, None),
    # DeepSeek-Coder (Llama layout, vocabulary 32256): 1.3B 1.346 B (open-cn-llm-leaderboard request file; a PEFT
    # printout of the instruct model: 1,347,258,368 total less 786,432 LoRA = 1,346,471,936), 6.7B 6.74 B, 33B 33.34 B
    # (leaderboard listings; the configs are derived copies, see scripts/model-configs/deepseek-ai/deepseek-coder-*)
    ("deepseek-ai/deepseek-coder-1.3b-instruct", "decoder", 1_346_471_936, 1e-9, None),
    ("deepseek-ai/deepseek-coder-1.3b-base", "decoder", 1.346 * B, 0.005, None),
    ("deepseek-ai/deepseek-coder-6.7b-instruct", "decoder", 6.74 * B, 0.005, None),
    ("deepseek-ai/deepseek-coder-6.7b-base", "decoder", 6.74 * B, 0.005, None),
    ("deepseek-ai/deepseek-coder-33b-instruct", "decoder", 33.34 * B, 0.005, None),
    # Chinese-CLIP dual encoders (image tower + text tower + projections; OFA-Sys/Chinese-CLIP README "#Params (All)":
    # 188 M, 406 M, 407 M, 958 M; its ELEVATER example prints num_params 188,262,913 for ViT-B/16)
    ("OFA-Sys/chinese-clip-vit-base-patch16", "vision", 188_262_913, 1e-9, None),
    ("OFA-Sys/chinese-clip-vit-large-patch14", "vision", 406 * M, 0.005, None),
    ("OFA-Sys/chinese-clip-vit-large-patch14-336px", "vision", 407 * M, 0.005, None),
    ("OFA-Sys/chinese-clip-vit-huge-patch14", "vision", 958 * M, 0.005, None),
    # OpenAI CLIP (transformers' summaries of the checkpoints) and SigLIP (model pages: 203 M, 878 M)
    ("openai/clip-vit-base-patch32", "vision", 151_277_313, 1e-9, None),
    ("openai/clip-vit-large-patch14", "vision", 427_616_513, 1e-9, None),
    ("google/siglip-base-patch16-224", "vision", 203 * M, 0.005, None),
    ("google/siglip-so400m-patch14-384", "vision", 878 * M, 0.005, None),
    # DistilBERT base (DistilBertModel without a head: 66,362,880, the model card's 66 M; Sanh et al. 2019)
    ("distilbert/distilbert-base-uncased", "encoder", 66_362_880, 1e-9, None),
    ("distilbert-base-cased", "encoder", 65_190_912, 1e-9, None),
]


@pytest.mark.parametrize(("name", "kind", "params", "rel", "flops"), NAMED, ids=[n[0] for n in NAMED])
def test_named_model_resolves_offline_to_its_published_size(name, kind, params, rel, flops):
    spec = resolve_model(name)
    assert spec.kind == kind
    assert spec.params_total == pytest.approx(params, rel=rel)
    if flops is not None:
        assert spec.profile.forward_flops_per_sample == pytest.approx(flops, rel=0.05)
    assert spec.source


# one inference and one training task per kind; every named model estimates end to end offline
TASKS = {
    "vision": [{"task": "inference", "batch_size": 32}, {"task": "full", "batch_size": 32}],
    "speech": [{"task": "inference", "batch_size": 8, "input": {"audio_seconds": 30}}, {"task": "full", "batch_size": 4}],
    "diffusion": [{"task": "inference", "batch_size": 1}],
    "decoder": [{"task": "inference", "prompt_tokens": 1024, "output_tokens": 256}, {"task": "lora", "seq_len": 1024,
                                                                                    "batch_size": 1}],
    "encoder": [{"task": "inference", "prompt_tokens": 512, "output_tokens": 0}, {"task": "full", "seq_len": 512,
                                                                                 "batch_size": 8}],
}


@pytest.mark.parametrize(("name", "kind"), [(n[0], n[1]) for n in NAMED], ids=[n[0] for n in NAMED])
def test_named_model_estimates_end_to_end(name, kind):
    big = resolve_model(name).params_total > 60e9
    for task in TASKS[kind]:
        est = estimate({"model": name, **task, "hardware": {"gpu": "H100", "count": 8 if big else 1}})
        d = est.to_dict()
        assert d["memory"]["per_gpu_bytes"] > 0
        perf = d["performance"]
        if kind in ("vision", "diffusion") and task["task"] == "inference":
            assert perf["images_per_s"] > 0
        elif task["task"] == "inference":
            assert (perf.get("output_tokens_per_s") or perf.get("samples_per_s") or perf.get("max_requests_per_s")
                    or 0) > 0
        else:
            assert perf["step_time_s"] > 0


def test_timm_profiles_match_the_curated_resnet50_and_vit_b():
    """One model for one figure: timm's row and the hand-derived profile of the same network agree."""
    for timm_name, curated in (("timm/resnet50", "resnet50"), ("timm/vit_base_patch16_224", "google/vit-base-patch16-224")):
        t, c = lookup(timm_name), get_model(curated)
        assert t.params_total == pytest.approx(c.params_total, rel=0.001)
        assert t.profile.forward_flops_per_sample == pytest.approx(c.profile.forward_flops_per_sample, rel=0.01)
        assert t.profile.activation_bytes_per_sample == pytest.approx(c.profile.activation_bytes_per_sample, rel=0.01)
        # ops counted on the meta device vs counted from the module code (SDPA decomposes on meta: a few more)
        assert t.profile.kernels_per_forward == pytest.approx(c.profile.kernels_per_forward, rel=0.2)


def test_timm_names_with_org_tag_and_resolution():
    assert resolve_model("timm/resnet50.a1_in1k").id == "timm/resnet50.a1_in1k"
    assert resolve_model("hf-hub:timm/convnext_tiny.fb_in22k").id == "timm/convnext_tiny.fb_in22k"
    assert resolve_model("convnext_tiny").id == "timm/convnext_tiny"
    # a resolution timm did not benchmark: the nearest row of the same architecture, scaled by image_size^2
    at320 = resolve_model("timm/vit_base_patch16_320")
    at384 = resolve_model("vit_base_patch16_384")
    assert at320.profile.reference_input["image_size"] == 320
    assert at320.profile.forward_flops_per_sample == pytest.approx(
        at384.profile.forward_flops_per_sample * (320 / 384) ** 2, rel=1e-6)
    assert lookup("not_a_timm_model") is None
    # a Hugging Face ConvNeXt id is timm's network of the same size at the id's resolution, named as given
    hf = resolve_model("facebook/convnextv2-tiny-1k-224")
    assert hf.id == "facebook/convnextv2-tiny-1k-224" and "timm/convnextv2_tiny.fb_in1k" in hf.aliases
    assert hf.params_total == resolve_model("convnextv2_tiny").params_total
    assert "21k" in resolve_model("facebook/convnext-base-224-22k").notes
    assert lookup("facebook/convnext-gigantic-224") is None


def test_timm_image_size_scales_flops_and_default_sizes_come_from_the_table():
    b7 = resolve_model("efficientnet_b7")
    assert b7.profile.reference_input["image_size"] == 600          # timm benchmarks B7 at 600 px only
    small = estimate({"model": "resnet50.a1_in1k", "task": "inference", "batch_size": 64, "hardware": {"gpu": "A100"}})
    big = estimate({"model": "resnet50.a1_in1k", "task": "inference", "batch_size": 64, "input": {"image_size": 448},
                    "hardware": {"gpu": "A100"}})
    # 4x the pixels: 4x the FLOPs per image, so clearly fewer images/s
    assert big.to_dict()["performance"]["images_per_s"] < 0.5 * small.to_dict()["performance"]["images_per_s"]


def test_whisper_from_its_config_reproduces_the_curated_large_v3_profile():
    """The generated Whisper profiles come from one formula (catalog/nonllm/speech.py); for large-v2 (the large-v3 shape with
    80 mel bins) it lands within 5 % of the hand-derived large-v3 profile."""
    formula, curated = resolve_model("openai/whisper-large-v2"), get_model("openai/whisper-large-v3")
    assert formula.profile.forward_flops_per_sample == pytest.approx(curated.profile.forward_flops_per_sample, rel=0.05)
    assert formula.profile.activation_bytes_per_sample == pytest.approx(
        curated.profile.activation_bytes_per_sample, rel=0.05)
    turbo = resolve_model("openai/whisper-large-v3-turbo")
    assert turbo.profile.components["decoder_params"] < 0.25 * turbo.params_total   # 4 decoder layers
    fast = estimate({"model": "openai/whisper-large-v3-turbo", "task": "inference", "batch_size": 1,
                     "hardware": {"gpu": "A10"}}).to_dict()["performance"]["latency_s"]
    slow = estimate({"model": "openai/whisper-large-v2", "task": "inference", "batch_size": 1,
                     "hardware": {"gpu": "A10"}}).to_dict()["performance"]["latency_s"]
    # the turbo decoder streams 8x fewer decoder weights per token; the host's work per window (audio decoding, VAD,
    # features: nonllm.faster_whisper.host_s_per_window) is the same for both
    host = table("nonllm", "faster_whisper", "host_s_per_window")
    assert fast - host < 0.5 * (slow - host)


def test_dit_denoisers_match_their_published_sizes():
    # PixArt-Sigma: DiT-XL/2, 0.6 B (arXiv:2403.04692); SD3-medium: MMDiT 2 B (model card); FLUX.1: 12 B (card)
    for name, size, rel in (("PixArt-alpha/PixArt-Sigma-XL-2-1024-MS", 0.61e9, 0.03),
                            ("stabilityai/stable-diffusion-3-medium-diffusers", 2.03e9, 0.01),
                            ("black-forest-labs/FLUX.1-schnell", 11.9e9, 0.01)):
        assert resolve_model(name).profile.components["transformer"] == pytest.approx(size, rel=rel)
    schnell, dev = resolve_model("black-forest-labs/FLUX.1-schnell"), get_model("black-forest-labs/FLUX.1-dev")
    # the config-derived FLUX FLOPs per pass agree with the hand count of FLUX.1-dev (data/models.yaml) at 512 text tokens
    assert schnell.profile.pipeline["default_steps"] == 4 and not schnell.profile.pipeline["cfg"]
    assert schnell.profile.forward_flops_per_sample < dev.profile.forward_flops_per_sample   # 256 text tokens, not 512
    assert schnell.profile.forward_flops_per_sample == pytest.approx(dev.profile.forward_flops_per_sample, rel=0.1)


def test_vlm_towers_count_in_the_weights_and_say_so():
    spec = resolve_model("Qwen/Qwen2-VL-7B-Instruct")
    assert spec.vision_params == pytest.approx(675.8e6, rel=0.01)   # Qwen2-VL paper Table 1: 675 M ViT
    assert any("vision tower" in a for a in spec.assumptions)
    lm_only = estimate({"model": "Qwen/Qwen2-7B-Instruct", "task": "inference", "prompt_tokens": 512,
                        "output_tokens": 64, "hardware": {"gpu": "A100"}})
    vlm = estimate({"model": "Qwen/Qwen2-VL-7B-Instruct", "task": "inference", "prompt_tokens": 512,
                    "output_tokens": 64, "hardware": {"gpu": "A100"}})
    assert vlm.memory.components["weights"] - lm_only.memory.components["weights"] == pytest.approx(
        2 * spec.vision_params, rel=0.02)


def test_new_names_are_listed():
    ids = {m.id for m in list_models()}
    for name in ("timm/resnet50", "ultralytics/yolov8m", "openai/whisper-medium", "Qwen/Qwen-VL-Chat",
                 "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS", "baichuan-inc/Baichuan-13B-Base", "EleutherAI/pythia-70m"):
        assert name in ids
    assert len([m for m in list_models("vision") if m.id.startswith("timm/")]) > 1000


def test_an_unknown_timm_or_yolo_name_names_the_closest_known_ones():
    assert "timm/convnext_tiny" in closest_models("timm/convnext_tinyy")
    assert closest_models("yolov8mm")[0] == "ultralytics/yolov8m"
    with pytest.raises(GpuplanError) as err:
        resolve_model("resnet5O")
    assert "Unknown model" in err.value.message and "{params_b: N}" in err.value.hint


def test_local_folders_work_for_anything_else(tmp_path):
    """A downloaded folder: config.json (Whisper, a ViT) or a diffusers pipeline (model_index.json + component configs)."""
    import json
    import shutil
    from pathlib import Path

    configs = Path(__file__).resolve().parents[2] / "scripts" / "model-configs"
    pipe = tmp_path / "my-pixart"
    shutil.copytree(configs / "PixArt-alpha" / "PixArt-Sigma-XL-2-1024-MS", pipe)
    (pipe / "source.json").unlink()
    spec = resolve_model(str(pipe))
    assert spec.kind == "diffusion" and spec.id == "my-pixart"
    assert spec.params_total == resolve_model("PixArt-alpha/PixArt-Sigma-XL-2-1024-MS").params_total
    assert resolve_model(str(pipe / "model_index.json")).params_total == spec.params_total
    whisper = tmp_path / "whisper-ft"
    whisper.mkdir()
    shutil.copy(configs / "openai" / "whisper-small" / "config.json", whisper / "config.json")
    assert resolve_model(str(whisper)).params_total == 241_734_912
    vit = tmp_path / "vit.json"
    # google/vit-base-patch16-224's config.json keys (1,000 ImageNet classes): 86,567,656 parameters
    vit.write_text(json.dumps({"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072,
                               "num_attention_heads": 12, "patch_size": 16, "image_size": 224,
                               "id2label": {str(i): str(i) for i in range(1000)}}), encoding="utf-8")
    assert resolve_model(str(vit)).params_total == get_model("google/vit-base-patch16-224").params_total
    unet = tmp_path / "sd-ft"
    (unet / "unet").mkdir(parents=True)
    (unet / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline",
                                                       "unet": ["diffusers", "UNet2DConditionModel"]}), encoding="utf-8")
    (unet / "unet" / "config.json").write_text(json.dumps({"cross_attention_dim": 768}), encoding="utf-8")
    with pytest.raises(GpuplanError) as err:
        resolve_model(str(unet))
    assert "stable-diffusion-v1-5/stable-diffusion-v1-5" in err.value.hint


@pytest.mark.parametrize("workload", [
    {"model": "yolov8m", "task": "inference", "serving": {"requests_per_s": 50}},
    {"model": "openai/whisper-medium", "task": "inference", "serving": {"requests_per_s": 2}},
    {"model": "timm/convnext_tiny.fb_in1k", "task": "full", "batch_size": 128,
     "dataset": {"samples": 1_281_167, "epochs": 1}},
])
def test_named_models_get_recommendations(workload):
    from gpuplan.plan import recommend

    rec = recommend(workload, top=2)
    assert rec.plans, rec


@pytest.mark.parametrize("cfg", [
    {"model_type": "qwen", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2,
     "vocab_size": 100, "seq_length": 64, "visual": {"width": "x", "layers": 2, "mlp_ratio": "abc"}},
    {"model_type": "internvl_chat", "downsample_ratio": 0, "vision_config": {"hidden_size": 64, "num_hidden_layers": 2},
     "llm_config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
                    "num_hidden_layers": 2, "vocab_size": 100}},
    {"model_type": "llava", "vision_config": {"hidden_size": 1e30, "num_hidden_layers": 2},
     "text_config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
                     "num_hidden_layers": 2, "vocab_size": 100}},
    {"model_type": "vit", "hidden_size": 64, "num_hidden_layers": 2, "patch_size": -3, "image_size": 32},
    {"model_type": "whisper", "d_model": "x"},
    {"model_type": "whisper", "d_model": 64, "encoder_layers": 0, "decoder_layers": 2, "vocab_size": 10},
])
def test_malformed_tower_speech_and_vit_configs_are_one_clear_error(cfg):
    with pytest.raises(GpuplanError) as err:
        resolve_model(cfg)
    assert err.value.hint


def test_gpuplan_models_lists_the_new_names_and_sums_up_timm():
    from clirun import run_cli

    code, out, _err = run_cli("models", "--kind", "vision")
    assert code == 0
    assert "ultralytics/yolov8m" in out and "timm architectures" in out
    assert "timm/xcit_tiny_12_p8_224" not in out          # timm is one line in the table view ...
    code, out, _err = run_cli("models", "--kind", "speech", "--json")
    assert code == 0 and "openai/whisper-large-v3-turbo" in out


def test_stable_diffusion_2_runs_at_its_native_size():
    """SD 2.1 (768-v) generates 768 x 768 by default and SD 2.1-base 512 x 512 (unet sample_size 96 / 64): the estimate
    and the image scripts use one size (estimate/nonllm/diffusion.image_sizes), and a 768-px image costs more."""
    from gpuplan.estimate.nonllm.diffusion import image_sizes

    assert image_sizes(resolve_model("sd2.1"), {}) == (768, 50)
    assert image_sizes(resolve_model("stabilityai/stable-diffusion-2-base"), {}) == (512, 50)
    big, small = (estimate({"model": m, "task": "inference", "hardware": {"gpu": "A10"}}).to_dict()["performance"]
                  for m in ("sd2.1", "sd2.1-base"))
    assert 2.0 < small["images_per_s"] / big["images_per_s"] < 3.5   # 2.25x the pixels, attention over 2.25x tokens



@pytest.mark.parametrize(("dim", "sample", "target"), [
    (768, 64, "stable-diffusion-v1-5/stable-diffusion-v1-5"), (1024, 96, "stabilityai/stable-diffusion-2-1"),
    (1024, 64, "stabilityai/stable-diffusion-2-1-base"), (2048, 128, "stabilityai/stable-diffusion-xl-base-1.0")])
def test_a_unet_pipeline_folder_names_the_bundled_profile_of_its_unet(tmp_path, dim, sample, target):
    """A local SD 1.x / 2.x / XL pipeline folder is one error whose hint names the curated profile of the same UNet
    (its cross_attention_dim; SD 2.x's sample_size tells the 768-px model from the 512-px base)."""
    import json

    (tmp_path / "unet").mkdir()
    (tmp_path / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionPipeline",
                                                           "unet": ["diffusers", "UNet2DConditionModel"]}))
    (tmp_path / "unet" / "config.json").write_text(json.dumps({"cross_attention_dim": dim, "sample_size": sample}))
    with pytest.raises(GpuplanError) as err:
        resolve_model(str(tmp_path))
    assert f"model: {target}." in err.value.hint
    resolve_model(target)   # and that profile is bundled
