"""Whisper (and any ``model_type: whisper`` config.json): parameters and the speech profile from the config.

Counts follow transformers ``modeling_whisper.py`` (WhisperForConditionalGeneration: two 1-D convolutions,
a 1500-row encoder position table and a 448-row decoder one, pre-LN blocks with biased q/v/o and a
bias-free k projection, the output projection tied to the token embedding). whisper-tiny gives
37,760,640 and large-v2 1,543,304,960, the checkpoints' own counts.

FLOPs of one 30 s window (every input is padded to 30 s = 1500 encoder frames; Radford et al. 2022,
arXiv:2212.04356 §2.2): the encoder's matmuls 2·1500·(4d² + 2·d·ffn) per layer, its attention 4·1500²·d
per layer and the convolutions; the decoder's teacher-forced pass over 448 target tokens (self- and
cross-attention, the K/V projections of the 1500 encoder frames, the vocabulary projection). Training
activations: Korthikanti et al. 2022 (arXiv:2205.05198) eq. 1 with memory-efficient attention, 34·s·d bytes
per layer, plus the cross-attention K/V of the encoder frames and the logits. These reproduce the curated
whisper-large-v3 profile (data/models.yaml) within 5 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.catalog.model_spec import ModelSpec, NonLLMProfile
from gpuplan.catalog.model_validate import config_int, validate_spec
from gpuplan.i18n import _

WINDOW_S = 30.0
SOURCE_SOURCES = ("https://arxiv.org/abs/2212.04356", "https://arxiv.org/abs/2205.05198",
                  "https://github.com/huggingface/transformers/blob/main/src/transformers/models/whisper/modeling_whisper.py")


def whisper_params(d: int, enc_layers: int, dec_layers: int, ffn_enc: int, ffn_dec: int, mels: int, vocab: int,
                   frames: int, targets: int) -> tuple[int, int]:
    """(encoder, decoder) parameters of a Whisper checkpoint (proj_out tied to the token embedding)."""
    enc = mels * d * 3 + d + d * d * 3 + d + frames * d
    enc += enc_layers * (4 * d * d + 3 * d + 2 * d + 2 * d * ffn_enc + ffn_enc + d + 2 * d) + 2 * d
    dec = vocab * d + targets * d
    dec += dec_layers * (8 * d * d + 6 * d + 6 * d + 2 * d * ffn_dec + ffn_dec + d) + 2 * d
    return enc, dec


def whisper_spec(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    """A speech ModelSpec (kind ``speech``) with its profile computed from a Whisper config.json."""
    d = config_int(cfg, "d_model", name)
    enc_l = config_int(cfg, "encoder_layers", name)
    dec_l = config_int(cfg, "decoder_layers", name)
    ffn_e = config_int(cfg, "encoder_ffn_dim", name, 4 * d)
    ffn_d = config_int(cfg, "decoder_ffn_dim", name, 4 * d)
    mels = config_int(cfg, "num_mel_bins", name, 80)
    vocab = config_int(cfg, "vocab_size", name)
    frames = config_int(cfg, "max_source_positions", name, 1500)
    targets = config_int(cfg, "max_target_positions", name, 448)
    heads = config_int(cfg, "encoder_attention_heads", name, max(1, d // 64))
    enc_p, dec_p = whisper_params(d, enc_l, dec_l, ffn_e, ffn_d, mels, vocab, frames, targets)
    conv = 2.0 * (2 * frames * mels * 3 * d + frames * 3 * d * d)
    enc_flops = 2.0 * frames * enc_l * (4 * d * d + 2 * d * ffn_e) + 4.0 * frames**2 * d * enc_l + conv
    per_token = dec_l * (6 * d * d + 2 * d * ffn_d)             # self q/k/v/o + cross q/o + MLP
    cross_kv = 2.0 * frames * dec_l * 2 * d * d                # the encoder frames' K/V, once per window
    dec_flops = (2.0 * targets * per_token + cross_kv + 4.0 * targets**2 * d * dec_l
                 + 4.0 * targets * frames * d * dec_l + 2.0 * targets * vocab * d)
    decode_per_token = 2.0 * (per_token + vocab * d) + 4.0 * frames * d * dec_l
    acts = 34.0 * frames * d * enc_l + dec_l * (34.0 * targets * d + 4.0 * frames * d) + 4.0 * targets * vocab
    profile = NonLLMProfile(
        reference_input={"audio_seconds": WINDOW_S, "encoder_frames": frames, "target_tokens": targets},
        forward_flops_per_sample=float(enc_flops + dec_flops), activation_bytes_per_sample=float(acts),
        scaling={"input": "audio_seconds", "reference": WINDOW_S, "flops_exponent": 1, "activation_exponent": 1,
                 "chunk_seconds": WINDOW_S, "rule": "cost per 30 s window is constant (inputs are padded to 30 s); "
                 "longer audio costs ceil(audio_seconds / 30) windows"},
        sources=SOURCE_SOURCES,
        components={"encoder_flops": float(enc_flops), "decoder_flops_448_tokens": float(dec_flops),
                    "decode_flops_per_token": float(decode_per_token), "encoder_params": float(enc_p),
                    "decoder_params": float(dec_p), "decoder_layers": dec_l, "d_model": d, "heads": heads,
                    "ffn_dim": ffn_e},
        # eager ops: ~13 per encoder layer (2 LayerNorms, q/k/v/o, attention, 2 adds, fc1, GELU, fc2) and ~20 per
        # decoder layer (self- and cross-attention), plus the convolutions, embeddings and the final norms
        kernels_per_forward=float(13 * enc_l + 20 * dec_l + 10),
    )
    total = float(enc_p + dec_p)
    spec = ModelSpec(
        id=name, family="whisper", kind="speech", arch="whisper", num_layers=enc_l, num_decoder_layers=dec_l,
        hidden_size=d, intermediate_size=ffn_e, num_attention_heads=heads, num_key_value_heads=heads,
        head_dim=d // heads, vocab_size=vocab, tie_word_embeddings=True, params_total=total, params_active=total,
        source="user config.json", profile=profile,
        notes=_("Whisper encoder-decoder: d_model {d}, {enc} encoder + {dec} decoder layers, {mels} mel bins; "
                "profile computed from the config (catalog/nonllm/speech.py)").format(d=d, enc=enc_l, dec=dec_l, mels=mels),
        unconfirmed=("profile.forward_flops_per_sample", "profile.activation_bytes_per_sample"),
    )
    return validate_spec(spec)
