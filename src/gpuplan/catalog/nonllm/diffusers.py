"""A diffusers pipeline (``model_index.json`` and its components' config.json files) -> a diffusion ModelSpec.

Denoisers read: the DiT transformers of PixArt-α/Σ (``PixArtTransformer2DModel``, ``Transformer2DModel`` with
``norm_type: ada_norm_single``), Stable Diffusion 3 / 3.5 (``SD3Transformer2DModel``, dual-attention layers
included) and FLUX.1 (``FluxTransformer2DModel``). Parameters are counted from each config with the module
layout of diffusers' ``transformer_2d.py`` / ``pixart_transformer_2d.py``, ``transformer_sd3.py`` and
``transformer_flux.py``; text encoders from ``CLIPTextModel(WithProjection)`` and ``T5EncoderModel`` configs;
the VAE (``AutoencoderKL``) by its latent channels (the published counts, below).

FLOPs of one denoiser pass at the pipeline's default resolution: every image token (and, for the joint
MMDiT blocks of SD3 and FLUX, every text token) meets the per-token weights of each block (2 FLOPs per
weight), plus attention 4·s²·d per block (Peebles & Xie 2023, arXiv:2212.09748 §3.2 count the same terms).
Training activations 34·s·d bytes per block (Korthikanti et al. 2022); inference keeps one block's
transients, ~20·s·d·2 bytes. UNet pipelines (Stable Diffusion 1.x/2.x/XL) map to the curated SD 1.5 / SDXL
profiles (their UNet FLOPs are counted block by block in data/models.yaml).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuplan.catalog.model_spec import ModelSpec, NonLLMProfile
from gpuplan.catalog.model_validate import validate_spec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.files.safeio import read_text_bounded

Reader = Callable[[str], "Mapping[str, Any] | None"]   # relative path in the pipeline folder -> parsed JSON

# AutoencoderKL parameters by latent channels (block_out_channels 128/256/512/512, 2 layers per block):
# the SD/SDXL VAE (vae/diffusion_pytorch_model.safetensors of stable-diffusion-v1-5: 83,653,863) and the
# 16-channel SD3/FLUX VAE (83,819,683), as in data/models.yaml.
VAE_PARAMS = {4: 83_653_863, 16: 83_819_683}
# Pipeline defaults (diffusers pipeline __call__ signatures; FLUX.1-schnell's model card runs 4 steps).
# class -> (default steps, classifier-free guidance, text tokens of the longest encoder)
PIPELINES: dict[str, tuple[int, bool, int]] = {
    "PixArtSigmaPipeline": (20, True, 300),
    "PixArtAlphaPipeline": (20, True, 120),
    "StableDiffusion3Pipeline": (28, True, 256),
    "FluxPipeline": (28, False, 512),
}
# UNet pipelines -> the curated profile of the same UNet (by the UNet's cross_attention_dim; SD 2.x by its sample_size:
# 96 latent pixels = the 768-px model, else the 512-px base)
UNET_PROFILES = {768: "stable-diffusion-v1-5/stable-diffusion-v1-5", 2048: "stabilityai/stable-diffusion-xl-base-1.0",
                 1024: "stabilityai/stable-diffusion-2-1-base"}
UNET_PROFILES_768PX = {1024: "stabilityai/stable-diffusion-2-1"}
SOURCES = ("https://github.com/huggingface/diffusers/tree/main/src/diffusers/models/transformers",
           "https://arxiv.org/abs/2212.09748", "https://arxiv.org/abs/2205.05198")


def _i(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise GpuplanError(_("Diffusers config: {key} must be a non-negative number, not {value!r}.").format(
            key=key, value=value), hint=_("Give the pipeline's config files unchanged."), field="model")
    return int(value)


def clip_text_params(cfg: Mapping[str, Any]) -> tuple[int, int]:
    """(parameters, per-token matmul parameters) of a CLIP text tower (CLIPTextModel[WithProjection])."""
    d, f, layers = _i(cfg, "hidden_size"), _i(cfg, "intermediate_size"), _i(cfg, "num_hidden_layers")
    vocab, pos = _i(cfg, "vocab_size", 49408), _i(cfg, "max_position_embeddings", 77)
    block = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    proj = d * _i(cfg, "projection_dim", 0) if "WithProjection" in str(cfg.get("_class_name", "")) or \
        any("WithProjection" in str(a) for a in cfg.get("architectures") or ()) else 0
    return vocab * d + pos * d + layers * block + 2 * d + proj, layers * (4 * d * d + 2 * d * f)


def t5_encoder_params(cfg: Mapping[str, Any]) -> tuple[int, int]:
    """(parameters, per-token matmul parameters) of a T5 encoder (T5EncoderModel: gated-GELU for v1.1)."""
    d, f, layers = _i(cfg, "d_model"), _i(cfg, "d_ff"), _i(cfg, "num_layers")
    heads, dkv = _i(cfg, "num_heads"), _i(cfg, "d_kv", 64)
    gated = str(cfg.get("feed_forward_proj", "relu")).startswith("gated") or bool(cfg.get("is_gated_act"))
    mats = (3 if gated else 2) * d * f
    block = 4 * d * heads * dkv + mats + 2 * d
    buckets = _i(cfg, "relative_attention_num_buckets", 32)
    return _i(cfg, "vocab_size", 32128) * d + layers * block + d + buckets * heads, layers * (4 * d * heads * dkv + mats)


def _dit(cfg: Mapping[str, Any], cls: str, tokens_img: int, tokens_txt: int) -> dict[str, Any]:
    """params, per-pass FLOPs, training activations, inference activations and ops of a DiT denoiser."""
    heads, hd = _i(cfg, "num_attention_heads"), _i(cfg, "attention_head_dim")
    d = heads * hd
    p = _i(cfg, "patch_size", 2)
    cin = _i(cfg, "in_channels", 4)
    cout = _i(cfg, "out_channels", cin if cls != "PixArt" else 2 * cin) or cin
    layers = _i(cfg, "num_layers")
    singles = 0                                                 # FLUX's single-stream blocks (below)
    t_embed = 256 * d + d + d * d + d                           # Timesteps -> TimestepEmbedding (two linears)
    if cls == "PixArt":
        cap = _i(cfg, "caption_channels", 4096)
        block = 16 * d * d + 19 * d                              # self- and cross-attention (biased), GELU MLP, 6d table
        extra = cin * p * p * d + d + cap * d + d + d * d + d + t_embed + 6 * d * d + 6 * d + 2 * d + d * p * p * cout + p * p * cout
        if cfg.get("use_additional_conditions"):
            extra += 2 * (256 * (d // 3) + d // 3 + (d // 3) ** 2 + d // 3)
        params = layers * block + extra
        s = tokens_img
        flops = layers * (2.0 * s * 14 * d * d + 2.0 * tokens_txt * 2 * d * d + 4.0 * s * s * d + 4.0 * s * tokens_txt * d)
        flops += 2.0 * tokens_txt * (cap * d + d * d)
        ops = 45 * layers + 30
    elif cls == "SD3":
        joint, pooled = _i(cfg, "joint_attention_dim", 4096), _i(cfg, "pooled_projection_dim", 2048)
        dual = set(cfg.get("dual_attention_layers") or ())
        full = 36 * d * d + 40 * d                                 # two streams: adaLN 6d, q/k/v, out, GELU MLP
        last = 24 * d * d + 30 * d                                 # context stream of the last block: no out / MLP
        # a dual-attention (MMDiT-X) block adds a second image self-attention and 3 more adaLN outputs (9d, not 6d)
        params = (layers - 1) * full + last + len(dual) * (4 * d * d + 4 * d + 3 * d * d + 3 * d)
        params += cin * p * p * d + d + t_embed + pooled * d + d + d * d + d + joint * d + d
        params += 2 * d * d + 2 * d + d * p * p * cout + p * p * cout
        s = tokens_img + tokens_txt
        flops = layers * (2.0 * s * 12 * d * d + 4.0 * s * s * d)
        flops += len(dual) * (2.0 * tokens_img * 4 * d * d + 4.0 * tokens_img ** 2 * d)
        ops = 85 * layers + 20 * len(dual) + 50
    else:  # FLUX
        singles = _i(cfg, "num_single_layers", 38)
        joint, pooled = _i(cfg, "joint_attention_dim", 4096), _i(cfg, "pooled_projection_dim", 768)
        double = 36 * d * d + 40 * d + 4 * hd                     # two streams + RMS q/k norms
        single = 15 * d * d + 9 * d + 2 * hd                       # adaLN 3d, q/k/v, MLP 4d, fused out (5d -> d)
        params = layers * double + singles * single + cin * d + d + joint * d + d + t_embed + pooled * d + d + d * d + d
        params += (t_embed if cfg.get("guidance_embeds") else 0) + 2 * d * d + 2 * d + d * cin + cin
        s = tokens_img + tokens_txt
        flops = (layers + singles) * (2.0 * s * 12 * d * d + 4.0 * s * s * d)
        layers += singles
        ops = 85 * (layers - singles) + 42 * singles + 100
    s_all = tokens_img + (tokens_txt if cls != "PixArt" else 0)
    # self-attention groups [latent-pixel share, joined text tokens, heads, layers] (PixArt's text is cross-attention;
    # an SD3.5 dual-attention block adds an image-only self-attention)
    groups = [[1.0 / (p * p), float(0 if cls == "PixArt" else tokens_txt), float(heads), float(layers)]]
    if cls == "SD3" and cfg.get("dual_attention_layers"):
        groups.append([1.0 / (p * p), 0.0, float(heads), float(len(cfg.get("dual_attention_layers") or ()))])
    # LoRA on diffusers' default targets (to_q, to_k, to_v, to_out.0), d_in + d_out = 2d each: PixArt's self- and
    # cross-attention (8 per block), SD3's image stream (4; a dual-attention block's second attention 4 more),
    # FLUX's double-stream blocks (4) and single-stream blocks (to_q, to_k, to_v: 3)
    if cls == "PixArt":
        lora = 16.0 * d * layers
    elif cls == "SD3":
        lora = 8.0 * d * (layers + len(set(cfg.get("dual_attention_layers") or ())))
    else:
        lora = 8.0 * d * (layers - singles) + 6.0 * d * singles
    return {"self_attention": groups, "lora_params_per_rank": lora,"params": float(params), "flops": float(flops), "acts": 34.0 * s_all * d * layers,
            "infer_acts": 20.0 * s_all * d * 2.0, "ops": float(ops), "tokens": float(s_all), "hidden": float(d),
            "layers": float(layers)}


def _denoiser_kind(cfg: Mapping[str, Any]) -> str | None:
    cls = str(cfg.get("_class_name", ""))
    if cls == "PixArtTransformer2DModel" or (cls == "Transformer2DModel" and cfg.get("norm_type") == "ada_norm_single"):
        return "PixArt"
    return {"SD3Transformer2DModel": "SD3", "FluxTransformer2DModel": "FLUX"}.get(cls)


def pipeline_spec(index: Mapping[str, Any], read: Reader, name: str, source: str = "user model_index.json") -> ModelSpec:
    """A diffusion ModelSpec from a pipeline's model_index.json and its components' configs (``read``)."""
    pipe_cls = str(index.get("_class_name", ""))
    if "unet" in index:
        unet = read("unet/config.json") or {}
        raw = unet.get("cross_attention_dim")
        dim = raw if isinstance(raw, int) else 0
        table = UNET_PROFILES_768PX if unet.get("sample_size") == 96 and dim in UNET_PROFILES_768PX else UNET_PROFILES
        target = table.get(dim)
        raise GpuplanError(
            _("{name} is a UNet pipeline ({cls}); gpuplan reads the DiT transformers of PixArt, SD3 and FLUX from "
              "config files.").format(name=name, cls=pipe_cls or "UNet2DConditionModel"),
            hint=(_("Use the bundled profile of the same UNet: model: {target}.").format(target=target) if target else
                  _("Use a bundled diffusion model (`gpuplan models --kind diffusion`).")), field="model")
    tcfg = read("transformer/config.json")
    kind = _denoiser_kind(tcfg or {})
    if tcfg is None or kind is None:
        raise GpuplanError(_("{name}: no transformer gpuplan can read (PixArt, SD3 or FLUX) in the pipeline.").format(name=name),
                           hint=_("Use a bundled diffusion model (`gpuplan models --kind diffusion`)."), field="model")
    steps, cfg_on, txt_tokens = PIPELINES.get(pipe_cls, (28, True, 256))
    if kind == "FLUX" and not tcfg.get("guidance_embeds", True):
        steps, txt_tokens = 4, 256                                  # FLUX.1-schnell: timestep-distilled
    if kind == "FLUX":
        cfg_on = False
    vae = read("vae/config.json") or {}
    vae_scale = 2 ** max(0, len(vae.get("block_out_channels") or (1, 2, 3, 4)) - 1)
    side = _i(tcfg, "sample_size", 128) * vae_scale if kind != "FLUX" else 1024
    patch = _i(tcfg, "patch_size", 2) if kind != "FLUX" else 2
    tokens_img = (side // vae_scale // patch) ** 2
    text_params, text_flops, text_ops = 0.0, 0.0, 0.0
    comps: dict[str, float] = {}
    for key in sorted(k for k in index if k.startswith("text_encoder")):
        tc = read(f"{key}/config.json")
        if not tc:
            continue
        is_t5 = "d_model" in tc
        n, per_token = t5_encoder_params(tc) if is_t5 else clip_text_params(tc)
        comps[key] = float(n)
        text_params += n
        text_flops += 2.0 * per_token * (txt_tokens if is_t5 else 77)
        text_ops += 14 * _i(tc, "num_layers" if is_t5 else "num_hidden_layers", 12) + 10
    clip_tokens = 77 if kind == "SD3" else 0
    dit = _dit(tcfg, kind, tokens_img, txt_tokens + clip_tokens if kind != "PixArt" else txt_tokens)
    comps["transformer"] = dit["params"]
    latent = _i(vae, "latent_channels", 16 if kind != "PixArt" else 4)
    comps["vae"] = float(VAE_PARAMS.get(latent, VAE_PARAMS[16]))
    total = sum(comps.values())
    passes = 2 if cfg_on else 1
    profile = NonLLMProfile(
        reference_input={"image_size": side, "steps": 1, "tokens": int(dit["tokens"])},
        forward_flops_per_sample=dit["flops"], activation_bytes_per_sample=dit["acts"],
        scaling={"input": "image_size", "reference": side, "flops_exponent": 2, "activation_exponent": 2,
                 "per_step": True, "rule": "image tokens grow with image_size^2 (text tokens do not; attention faster)"},
        sources=SOURCES, components=comps, kernels_per_forward=dit["ops"],
        pipeline={"cfg": cfg_on, "default_steps": steps, "vae_upcast": False, "vae_scale": vae_scale,
                  "vae_decode_flops_per_pixel": 1.0e7, "vae_decode_live_channels": 768, "vae_decode_kernels": 180,
                  "inference_activation_bytes_per_sample": dit["infer_acts"],
                  "text_encoder_flops_per_prompt": text_flops, "text_encoder_kernels": text_ops,
                  # what a context-parallel (Ulysses) split exchanges per attention layer (estimate/nonllm/diffusion.py)
                  "attention_hidden": dit["hidden"], "attention_layers": dit["layers"],
                  "self_attention": dit["self_attention"], "lora_params_per_rank": dit["lora_params_per_rank"],
                  # the T5 prompt length a joint-attention transformer (SD3, FLUX) adds to its tokens
                  # (estimate/profile.joint_tokens; PixArt's text is cross-attention)
                  **({"max_sequence_length": txt_tokens} if kind != "PixArt" else {})},
    )
    spec = ModelSpec(
        id=name, family={"PixArt": "pixart", "SD3": "stable-diffusion", "FLUX": "flux"}[kind], kind="diffusion",
        arch={"PixArt": "pixart-dit", "SD3": "sd3-mmdit", "FLUX": "flux-dit"}[kind], params_total=total,
        params_active=total, source=source, profile=profile,
        unconfirmed=("profile.forward_flops_per_sample", "profile.activation_bytes_per_sample", "profile.components.vae"),
        notes=_("{pipe}: {kind} transformer {tp:.2f} B, text encoders {te:.2f} B, VAE {vae:.0f} M; {steps} steps, "
                "{passes} pass(es) per step; profile computed from the pipeline's configs (catalog/nonllm/diffusers.py)").format(
            pipe=pipe_cls or kind, kind=kind, tp=dit["params"] / 1e9, te=text_params / 1e9, vae=comps["vae"] / 1e6,
            steps=steps, passes=passes),
    )
    return validate_spec(spec)


def folder_reader(folder: Path) -> Reader:
    def read(rel: str) -> Mapping[str, Any] | None:
        path = folder / rel
        if not path.is_file():
            return None
        try:
            data = json.loads(read_text_bounded(path, "model config"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise GpuplanError(_("Cannot read {path}: {exc}.").format(path=path, exc=exc),
                               hint=_("Give the pipeline's config files unchanged."), field="model") from None
        return data if isinstance(data, Mapping) else None
    return read


def load_pipeline_folder(folder: str | os.PathLike) -> ModelSpec:
    """A local diffusers pipeline folder (model_index.json + component configs) -> ModelSpec."""
    p = Path(os.path.expanduser(os.fspath(folder)))
    read = folder_reader(p)
    index = read("model_index.json")
    if index is None:
        raise GpuplanError(_("{p} holds no model_index.json.").format(p=p), hint=_("Point at the pipeline's folder."),
                           field="model")
    return pipeline_spec(index, read, p.name or "diffusers-pipeline", source=str(p / "model_index.json"))
