"""The batch arithmetic of a training layout, the one place every launch file takes its numbers from: micro-batch x
accumulation x DP (:func:`batch_layout`), the planned run's optimizer steps (:func:`train_iters`), and the layout mapped
onto CPU processes for the `./launch.sh --smoke` rehearsal (:func:`smoke_layout`, which keeps the plan's global batch).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.i18n import tr
from gpuplan.render.bundle.context import Ctx

SMOKE_STEPS = 6        # the rehearsal's optimizer steps (a checkpoint every 2, a kill after the first)
SMOKE_SEQ_LEN = 32     # tokens per sequence in the rehearsal (the tiny model's context)


@dataclass(frozen=True)
class Batch:
    """The batch arithmetic of one layout: every file uses these numbers."""

    micro: int          # sequences per GPU per forward pass (per DP group in Megatron)
    accum: int          # micro-batches per optimizer step (Megatron: global / (micro x DP))
    dp: int             # data-parallel size = GPUs / (TP x PP)

    @property
    def global_batch(self) -> int:
        """DeepSpeed's train_batch_size and Megatron's --global_batch_size: micro x accumulation x DP."""
        return self.micro * self.accum * self.dp


def batch_layout(c: Ctx) -> Batch:
    """The one place the batch numbers are derived from the layout."""
    return Batch(micro=c.micro_batch, accum=c.grad_accum, dp=max(1, c.gpus_total // (c.tp * c.pp * c.cp)))


def train_iters(c: Ctx) -> int | None:
    """Optimizer steps of the planned run, the plan's own count (plan/search/recipe.py ``optimizer_steps``): the token
    budget / (global batch x sequence length) when the samples are packed into full rows (`--packing true`, train.py's
    blocks), as the plan was sized (``plan.parallel.packed``); samples / global batch when they are not."""
    from gpuplan.plan.search.recipe import optimizer_steps

    if c.dataset is None:
        return None
    return optimizer_steps(c.dataset, c.seq_len, batch_layout(c).global_batch, c.packed)


@dataclass(frozen=True)
class SmokeLayout:
    """The plan's layout mapped onto CPU processes for `./launch.sh --smoke`: every parallel dimension above 1
    stays above 1 (at most 2), nodes become local torchrun groups, and the global batch stays the plan's
    (fewer data-parallel ranks accumulate more micro-batches)."""

    nodes: int
    nproc: int
    tp: int
    pp: int
    dp: int
    accum: int
    notes: tuple[str, ...]


def smoke_layout(c: Ctx) -> SmokeLayout:
    b = batch_layout(c)
    megatron = c.launcher == "megatron"
    tp, pp = (min(c.tp, 2), min(c.pp, 2)) if megatron else (1, 1)
    dp = 1 if megatron else (2 if b.dp % 2 == 0 else 1)
    world = tp * pp * dp
    # local nodes as the plan places them: a TP group stays inside one node, stages and replicas go across
    across = world // tp
    nodes = min(c.job_nodes, across) if across % min(c.job_nodes, across) == 0 else 1
    accum = b.global_batch // (b.micro * dp)
    def _(text: str) -> str:  # the catalog's keyword, so Babel extracts the literals below
        return tr(text, c.lang)

    notes = [_("model: a tiny random {model_type} (the same transformers class, {layers} layers, hidden 64) instead "
               "of {model}").format(model_type=c.smoke_model_type, layers=2 * max(1, pp), model=c.model),
             _("sequence length {seq} -> {smoke_seq} tokens, {steps} steps, learning rate 1e-3").format(
                 seq=c.seq_len, smoke_seq=SMOKE_SEQ_LEN, steps=SMOKE_STEPS)]
    if (c.tp, c.pp, b.dp) != (tp, pp, dp):
        notes.append(_("TP {tp} x PP {pp} x DP {dp} -> TP {stp} x PP {spp} x DP {sdp}: accumulation {accum} -> "
                       "{saccum}, the same global batch {global_batch}").format(
                           tp=c.tp, pp=c.pp, dp=b.dp, stp=tp, spp=pp, sdp=dp, accum=b.accum, saccum=accum,
                           global_batch=b.global_batch))
    if c.job_nodes != nodes or c.gpus_per_node != world // nodes:
        notes.append(_("{nodes} node(s) x {gpus} GPUs -> {snodes} local torchrun group(s) x {nproc} CPU processes "
                       "(gloo)").format(nodes=c.job_nodes, gpus=c.gpus_per_node, snodes=nodes, nproc=world // nodes))
    if megatron:
        notes.append(_("Megatron-Core needs CUDA: train.py --strategy tp_pp (PyTorch DTensor tensor parallel + GPipe "
                       "stages, fp32 master weights, the same recomputation) runs instead; the megatron command line "
                       "is parsed by ms-swift's own argument classes"))
    if c.qlora:
        notes.append(_("QLoRA: bitsandbytes 4-bit base on its CPU backend"))
    return SmokeLayout(nodes=nodes, nproc=world // nodes, tp=tp, pp=pp, dp=dp, accum=accum, notes=tuple(notes))
