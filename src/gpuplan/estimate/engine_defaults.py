"""The stack an inference workload runs when it names none, and whether a batch job's batch per forward is searched:
one set of rules that ``gpuplan estimate`` (estimate/core.py) and ``gpuplan recommend`` (plan/recommend.py,
plan/search/search_job.py) both apply, so that ``estimate`` of a plan's machine, layout and batch gives the plan's
figures (issue 29 item 7: one function, two entry points).

- **Encoder-only models** (BERT-class, embedding and reranker models) generate nothing (``output_tokens`` 0).
  A batch job (an inference workload with a ``dataset``) runs the bundle's ``embed.py``: sentence-transformers in
  eager PyTorch, ``batch`` texts per forward, one process per GPU (``framework: transformers``); its batch is searched
  like a speech or image job's (plan/search/search_job.py) and is the script's ``--batch-size``. vLLM's own pooling
  docs say its pooling models bring no speed over Sentence Transformers (docs.vllm.ai/en/v0.16.0/models/
  pooling_models, "not guaranteed to provide any performance improvements over using Hugging Face Transformers or
  Sentence Transformers directly"), and the script's batch is one forward the estimator times as such. A service runs
  vLLM's pooling runner (serve.sh ``--runner pooling``), which batches the requests itself.
- **Vision, diffusion and speech models** run eager PyTorch (torchvision, diffusers, transformers), speech on
  faster-whisper (estimate/nonllm/speech.py), unless the workload names a framework.
"""

from __future__ import annotations

from typing import Any

from gpuplan.estimate.memory import ENGINES
from gpuplan.fieldnames import field_label, value_text
from gpuplan.i18n import _
from gpuplan.workload import Workload

ENCODER_JOB_ENGINE = "transformers"    # embed.py: sentence-transformers (render/templates/bundle/embed.py.j2)
ENCODER_SERVICE_ENGINE = "vllm"        # serve.sh --runner pooling


def assumed(key: str, value: object) -> str:
    """The resolver's "assumed <field> <value>" note in its own wording (workload_defaults.resolve_defaults), so a
    default replaced here is dropped in every language."""
    return _("assumed {key} {value}").format(key=field_label(key, with_key=True), value=value_text(value, key=key))


def is_llm(model) -> bool:
    flag = getattr(model, "is_llm", True)
    return bool(flag() if callable(flag) else flag)


def encoder_engine(job: bool) -> str:
    """The framework an encoder-only model runs on when the workload names none: embed.py for a batch job, vLLM's
    pooling server for a service."""
    return ENCODER_JOB_ENGINE if job else ENCODER_SERVICE_ENGINE


def batched_job(model, framework: str | None) -> bool:
    """True when an offline job of this model runs fixed batches per forward whose size the recommender searches and
    the bundle's script takes (``--batch-size``): vision, diffusion and speech models, and encoder-only models outside
    a continuous-batching engine (embed.py). LLM jobs run an engine that batches by itself (the estimator's serving
    batch). ``framework`` None: the default a job gets."""
    if getattr(model, "profile", None) is not None and not is_llm(model):
        return True
    return getattr(model, "kind", None) == "encoder" and (framework or ENCODER_JOB_ENGINE) not in ENGINES


def training_head(w: Workload, model) -> str:
    """The output head a training workload trains: the workload's ``head``, else a task head (``classifier``) for
    an encoder-only model fine-tuned - BERT-class fine-tuning trains one (run_glue / run_qa / run_ner,
    sentence-transformers) - and the vocabulary head (``lm``) otherwise (causal LMs; an encoder's masked-LM
    pre-training)."""
    if w.head is not None:
        return w.head
    if getattr(model, "kind", None) == "encoder" and (w.task or "inference") not in ("inference", "pretrain"):
        return "classifier"
    return "lm"


def refuse_unread_head(model, w: Workload) -> None:
    """One error when the workload names a ``head`` its model's estimate would ignore: vision, diffusion and speech
    models train their own output layers (estimate/nonllm), sized from their profile, not from ``head``. Both doors
    call it before their work (estimate/core.estimate, plan/recommend), as :func:`refuse_unread_input`."""
    if w.head is None or is_llm(model) or getattr(model, "profile", None) is None:
        return
    from gpuplan.errors import GpuplanError

    raise GpuplanError(
        _("head applies to language models and encoder-only text models; the estimate of {model} (its kind: {kind}) "
          "would ignore it.").format(model=getattr(model, "id", str(model)), kind=getattr(model, "kind", "?")),
        hint=_("{model} trains the output layers its profile names; remove head.").format(
            model=getattr(model, "id", str(model))),
        field="head")


def encoder_defaults(given: Workload, resolved: Workload, model, notes: list[str]) -> tuple[Workload, list[str]]:
    """An encoder-only model (BERT-class, embedding and reranker models) generates nothing: output_tokens 0
    and, unless the workload names one, the stack the bundle launches (:func:`encoder_engine`). The generic
    defaults' notes for those two fields are replaced. Vision, diffusion and speech models: their own stacks."""
    if (resolved.task or "inference") != "inference":
        if given.head is None and training_head(resolved, model) == "classifier":
            notes = [*notes, _("head: an encoder-only model fine-tuned trains a task head, no vocabulary logits "
                               "(head: lm for masked-LM training)")]
        if getattr(model, "profile", None) is not None and not is_llm(model) and given.grad_checkpointing is None:
            # timm's train.py, Ultralytics, the diffusers training scripts and the transformers Trainer keep every
            # activation unless told to recompute (--grad-checkpointing / --gradient_checkpointing are opt-in)
            ckpt = assumed("grad_checkpointing", resolved.grad_checkpointing)
            kept = [n for n in notes if n != ckpt]
            kept.append(assumed("grad_checkpointing", False))
            return resolved.with_updates(grad_checkpointing=False), kept
        return resolved, notes
    if getattr(model, "profile", None) is not None and not is_llm(model):
        return _profile_defaults(given, resolved, model, notes)
    if model.kind != "encoder":
        return resolved, notes
    changes: dict[str, Any] = {}
    dropped = []
    if given.output_tokens is None:
        changes["output_tokens"] = 0
        dropped.append(assumed("output_tokens", resolved.output_tokens))
    job = resolved.dataset is not None
    if given.framework in (None, "auto"):
        changes["framework"] = encoder_engine(job)
        dropped.append(assumed("framework", resolved.framework))
    if not changes:
        return resolved, notes
    kept = [n for n in notes if n not in dropped]
    kept.append(_("encoder-only model: no tokens generated; a batch job runs the bundle's embed.py "
                  "(sentence-transformers, eager PyTorch, the searched batch of texts per forward) unless framework "
                  "is set") if job else
                _("encoder-only model: no tokens generated; served by vLLM's pooling runner (serve.sh --runner "
                  "pooling, requests batched by the engine) unless framework is set"))
    return resolved.with_updates(**changes), kept


def _profile_defaults(given: Workload, resolved: Workload, model, notes: list[str]) -> tuple[Workload, list[str]]:
    """A vision, diffusion or speech model runs in eager PyTorch (torchvision, diffusers, transformers) unless
    the workload names a framework; the LLM serving defaults (prompt/output tokens, KV cache dtype) do not
    apply and are not listed as assumptions."""
    unused = {"prompt_tokens", "output_tokens", "kv_cache_dtype"}
    dropped = {assumed(k, getattr(resolved, k)) for k in unused}
    kept = [n for n in notes if n not in dropped]
    if model.kind == "speech" and given.framework in (None, "auto"):
        # the bundle transcribes with faster-whisper (CTranslate2): estimate and recommend both size and time the
        # job on its mechanism (estimate/nonllm/speech.py), pinned to the faster-whisper README's memory figures
        kept.append(_("speech: sized and timed as faster-whisper (CTranslate2, beam 5), what the bundle's "
                      "transcribe.py runs, unless framework is transformers"))
        return resolved, kept
    if given.framework in (None, "auto"):
        kept = [n for n in kept if n != assumed("framework", resolved.framework)]
        kept.append(assumed("framework", "transformers"))
        return resolved.with_updates(framework="transformers"), kept
    return resolved, kept
