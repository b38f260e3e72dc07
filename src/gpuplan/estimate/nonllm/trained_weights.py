"""What a non-LLM training step holds and trains.

Full fine-tuning trains the network; a diffusion pipeline trains its denoiser only (diffusers' train_text_to_image /
train_dreambooth scripts freeze the text encoders and the VAE: ``requires_grad_(False)``): the denoiser's weights,
gradients and optimizer states, the frozen components in the weight dtype beside it.

LoRA / QLoRA (diffusers' ``train_dreambooth_lora_*`` / ``train_text_to_image_lora`` scripts, PEFT adapters on the
denoiser's attention projections ``to_q``, ``to_k``, ``to_v``, ``to_out.0``) freeze the denoiser too: its weights
stay in the weight dtype (QLoRA: its linear layers in bitsandbytes NF4, ``BitsAndBytesConfig(load_in_4bit=True,
bnb_4bit_quant_type="nf4")``), and only the adapters train, in fp32 under mixed precision
(``cast_training_params(..., dtype=torch.float32)``): weights, gradients and optimizer states of
``rank x pipeline.lora_params_per_rank`` parameters (the attention projections' d_in + d_out summed, from the
denoiser's config). The step's backward still runs through the frozen base to the adapters (input gradients): two
forwards' FLOPs, not three (training.costs.flops_per_token's LoRA rule).

The text encoders and the VAE stay on the GPU in the weight dtype and run every step unless the workload says the
prompts' embeddings and the images' latents were computed before training (``input.precomputed_conditioning``:
diffusers' ``--cache_latents`` and precomputed prompt embeddings, the text encoders and the VAE then deleted).
LoRA / QLoRA on other non-LLM models (vision, speech) is not modelled: one clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import GpuplanError
from gpuplan.estimate.memory import OPT_STATE_BYTES
from gpuplan.estimate.nonllm.diffusion import component_params
from gpuplan.estimate.profile import dense_bytes
from gpuplan.estimate.shapes import quant_bits_per_param
from gpuplan.i18n import _

ADAPTER_TASKS = ("lora", "qlora")


@dataclass(frozen=True)
class TrainedWeights:
    """Bytes one GPU holds for the model in a training step (before sharding), and what trains."""

    weights: float            # frozen and trained weights as stored
    gradients: float
    optimizer: float
    adapters: float           # LoRA adapters' weights (fp32), part of ``weights``
    trainable: float          # parameters the optimizer steps
    trained_network: float    # parameters the step runs forward and backward through (the denoiser, or all)
    quantized_bytes: float    # the QLoRA base's NF4 bytes (dequantised every pass), else 0


def adapter_params_per_rank(model, task: str) -> float:
    """A non-LLM model's LoRA parameters per rank (a diffusion pipeline's ``lora_params_per_rank``); one clear error
    for a model whose adapters are not modelled (estimate and recommend both ask before they size anything)."""
    if task not in ADAPTER_TASKS or getattr(model, "profile", None) is None:
        return 0.0
    per_rank = float((model.profile.pipeline or {}).get("lora_params_per_rank") or 0.0) \
        if model.kind == "diffusion" else 0.0
    if not per_rank:
        raise GpuplanError(
            _("LoRA / QLoRA training of {model} ({kind}) is not modelled: gpuplan times adapters on diffusion "
              "denoisers and language models.").format(model=model.id, kind=model.kind),
            hint=_("Use task: full for this model, or a diffusion or language model."), field="task")
    return per_rank


def trained_weights(model, *, task: str, precision: str, quantization: str, optimizer: str, lora_rank: int,
                    inp: dict | None) -> tuple[TrainedWeights, list[str]]:
    """The weights, gradients and optimizer states of one non-LLM training step (see the module docstring)."""
    notes: list[str] = []
    params = float(model.params_total)
    dense = dense_bytes(precision)
    mode = "fp32" if precision == "fp32" else "mixed"
    diffusion = model.kind == "diffusion"
    if diffusion:
        denoiser, text, vae = component_params(model)
        precomputed = bool((inp or {}).get("precomputed_conditioning"))
        frozen = 0.0 if precomputed else text + vae
        notes.append(_("the denoiser trains; the text encoders and the VAE are frozen, their outputs computed before "
                       "training (not on the GPU)") if precomputed else
                     _("the denoiser trains; the text encoders and the VAE are frozen and stay on the GPU in the weight "
                       "dtype, run every step (input.precomputed_conditioning: true if their outputs are cached)"))
    else:
        denoiser, frozen = params, 0.0
    if task not in ADAPTER_TASKS:
        states = OPT_STATE_BYTES.get((optimizer, mode), 12.0) * denoiser
        return TrainedWeights(weights=(denoiser + frozen) * dense, gradients=denoiser * dense, optimizer=states,
                              adapters=0.0, trainable=denoiser, trained_network=denoiser,
                              quantized_bytes=0.0), notes
    lora = float(lora_rank) * adapter_params_per_rank(model, task)
    if task == "qlora" or quantization == "bnb-nf4":
        base = denoiser * quant_bits_per_param("bnb-nf4") / 8.0
        notes.append(_("QLoRA: the denoiser's {b:.1f} B parameters in NF4 ({bits:.2f} bits each, scales included), "
                       "dequantised to {dtype} in every pass").format(b=denoiser / 1e9, bits=quant_bits_per_param("bnb-nf4"),
                                                                       dtype=precision))
        quantized = base
    else:
        base, quantized = denoiser * dense, 0.0
    # adapters in fp32: their weights are the optimizer's master copy (OPT_STATE_BYTES' mixed rows count a 4-byte one)
    moments = max(0.0, OPT_STATE_BYTES.get((optimizer, "mixed"), 12.0) - 4.0)
    notes.append(_("LoRA rank {r}: {m:.1f} M adapter parameters on the denoiser's attention projections (diffusers' "
                   "to_q, to_k, to_v, to_out.0, whatever lora.targets names: adapters elsewhere are as small), fp32 "
                   "weights, gradients and {opt} states; the base is frozen").format(r=lora_rank, m=lora / 1e6,
                                                                                     opt=optimizer))
    return TrainedWeights(weights=base + frozen * dense + lora * 4.0, gradients=lora * 4.0, optimizer=lora * moments,
                          adapters=lora * 4.0, trainable=lora, trained_network=denoiser,
                          quantized_bytes=quantized), notes
