"""Training a text-to-video DiT (full fine-tuning or LoRA): what its backward keeps, and one pass's cost.

The clip's tokens come from its frames, height and width as at inference (:func:`video.video_shape`): the video
tokens, with the text tokens where they join the sequence. Per token and block the forward keeps for backward
``nonllm.dit_training_saved_bytes_per_hidden.stored`` x hidden bytes in 16 bits (Korthikanti et al. 2022, Table 2:
34·s·b·h per transformer layer, the 5·a·s² attention scores dropped: the fused attention kernel keeps none; + the
adaLN-Zero modulation's copies at the block's two norms); with
full recomputation (diffusers' ``enable_gradient_checkpointing``) a block keeps its input (``checkpointed`` x hidden)
and the block being recomputed holds all of its own. fp32 doubles them. A step's FLOPs are the DiT pass's: 3 passes
for full fine-tuning, 2 for adapters (training.costs.flops_per_token's rule), one more under recomputation
(nonllm._training_perf).
"""

from __future__ import annotations

from gpuplan.estimate.forward import ForwardCost
from gpuplan.estimate.nonllm.video import dit_cost, dit_sequence, video_block, video_shape
from gpuplan.estimate.params import table
from gpuplan.i18n import _

__all__ = ["dit_training_activations", "dit_training_cost"]


def dit_training_activations(model, inp: dict, *, batch: int, checkpointing: str, precision: str,
                             notes: list[str]) -> float:
    """Bytes one training micro-batch of ``batch`` clips keeps for backward (module docstring)."""
    v, s = video_block(model), video_shape(model, inp)
    per = table("nonllm", "dit_training_saved_bytes_per_hidden")
    hidden, layers = float(v["hidden"]), float(v["layers"])
    tokens = dit_sequence(v, s)[1] * batch
    scale = 2.0 if precision == "fp32" else 1.0
    stored = float(per["stored"]) * hidden * scale
    if checkpointing == "full":
        acts = tokens * (layers * float(per["checkpointed"]) * hidden * scale + stored)
        how = _("each block keeps its input, the one recomputed holds its own")
    else:
        acts = tokens * layers * stored
        how = _("every block keeps its activations")
    notes.append(_("video DiT training: {frames} frames at {width}x{height} = {tokens} tokens per clip x {batch}, "
                   "{layers:.0f} blocks of hidden {hidden:.0f}: {gib:.1f} GiB kept for backward ({how})").format(
        frames=s.frames, width=s.width, height=s.height, tokens=f"{tokens / batch:,.0f}", batch=batch, layers=layers,
        hidden=hidden, gib=acts / 2**30, how=how))
    return acts


def dit_training_cost(model, inp: dict, precision: str, weight_bytes: float) -> ForwardCost:
    """One DiT forward over one training clip (the step multiplies it by its passes)."""
    return dit_cost(model, video_shape(model, inp), precision, weight_bytes)
