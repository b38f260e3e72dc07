"""The logits of a training step's loss, at its peak: the model's own cross-entropy over the whole [tokens x vocab]
logits (memory.logits_bytes_per_vocab_token, per framework), or the chunked fused linear cross-entropy of the
bundle's train.py (workload ``fused_loss``; ``--loss chunked``), which never holds more than one chunk's logits
(memory.chunked_loss). docs/formulas.md, "Logits"."""

from __future__ import annotations

from gpuplan.estimate.memory.common import logits_bytes_per_token
from gpuplan.estimate.params import table
from gpuplan.estimate.shapes import Shape


def chunked_loss_applies(model) -> bool:
    """Whether the bundle's train.py runs the chunked loss for this model: a decoder in transformers' own code (not
    remote code: data/model_sources.yaml) whose forward hands the LM head's output straight to the loss (the families
    of memory.chunked_loss.model_loss_families soft-cap or scale their logits first). train.py's use_chunked_loss
    checks the same at launch and stops a run the plan sized otherwise."""
    from gpuplan.catalog.configs.remote_code import needs_remote_code

    if getattr(model, "kind", "decoder") != "decoder":
        return False
    if getattr(model, "family", None) in table("memory", "chunked_loss")["model_loss_families"]:
        return False
    return not needs_remote_code(str(getattr(model, "id", "") or ""), getattr(model, "arch", None))


def runs_chunked_loss(model, fused_loss: bool, model_parallel: int) -> bool:
    """The training loop computes the chunked loss: asked for (workload fused_loss), a model it applies to, and no
    tensor, pipeline or context parallelism (those layouts launch Megatron, which computes the whole logits)."""
    return fused_loss and model_parallel == 1 and chunked_loss_applies(model)


def chunked_loss_bytes(s: Shape, tokens: float, precision: str, trainable_head: bool) -> float:
    """Peak of the chunked loss over ``tokens`` tokens (derived from train.py's ChunkedLinearCrossEntropy, not fitted):
    one chunk of min(tokens, chunk_tokens) tokens holds its logits in the compute dtype (2 bytes, fp32: 4) and their
    fp32 copy (4) per vocabulary entry, both reused in place for the softmax and its gradient; beside them the LM
    head's gradient accumulated over the chunks in the compute dtype (vocab x hidden; none for a frozen head: LoRA)
    and the gradient of the hidden states (tokens x hidden, counted at 4 bytes: fp32 residual stream under autocast)."""
    tab = table("memory", "chunked_loss")
    compute_b = 4.0 if precision == "fp32" else 2.0
    chunk = min(float(tokens), float(tab["chunk_tokens"]))
    head_grad = s.vocab * s.hidden * compute_b if trainable_head else 0.0
    return chunk * s.vocab * (compute_b + float(tab["fp32_bytes_per_vocab_entry"])) + head_grad \
        + tokens * s.hidden * float(tab["grad_hidden_bytes"])


def loss_logits_bytes(s: Shape, tokens: float, *, chunked: bool, framework: str, precision: str, tp: int = 1,
                      compiled: bool = False, trainable_head: bool = True) -> float:
    """The logits pipeline at the loss peak for ``tokens`` tokens on one GPU (vocab-parallel under TP)."""
    if chunked:
        return chunked_loss_bytes(s, tokens, precision, trainable_head)
    return tokens * logits_bytes_per_token(s, framework, tp, compiled)
