"""Which ``input`` keys a model's estimate reads, and one clear error for a key it would ignore.

``input`` describes what one sample of a non-LLM model is: an image's side, a diffusion pipeline's steps, a video's
frames, an audio clip's length. Each model kind reads its own keys (the estimators named below); a key another kind
reads would change nothing, and a user who set it expects it to. ``estimate`` and ``recommend`` both call
:func:`refuse_unread_input` after the model is resolved, so every door (CLI, Python API, REST, page, wizard) answers
with the same refusal.
"""

from __future__ import annotations

from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

IMAGE_KEYS = ("image_size", "height", "width")          # estimate/profile.image_side, vision and diffusion
SPEECH_KEYS = ("audio_seconds", "tokens_per_window")    # estimate/nonllm/speech.py
DIFFUSION_KEYS = IMAGE_KEYS + ("steps", "precomputed_conditioning")  # nonllm/diffusion.py, nonllm/trained_weights.py
VIDEO_KEYS = DIFFUSION_KEYS + ("frames", "offload")     # estimate/nonllm/video.py

# The model kind each InputSpec key belongs to, in words (the error names it); every key has one
# (tests/estimate/test_input_keys.py).
_KEY_KIND = {"image_tokens": "vlm", "image_size": "image", "height": "image", "width": "image", "steps": "diffusion", "text_tokens": "joint",
             "precomputed_conditioning": "diffusion", "frames": "video", "offload": "video",
             "audio_seconds": "speech", "tokens_per_window": "speech"}


def read_keys(model: Any) -> tuple[str, ...]:
    """The ``input`` keys the estimate of ``model`` reads (none for a language or embedding model)."""
    if getattr(model, "profile", None) is None:
        return ("image_tokens",) if float(getattr(model, "vision_params", 0.0) or 0.0) > 0 else ()
    kind = getattr(model, "kind", "")
    if kind == "speech":
        return SPEECH_KEYS
    if kind == "vision":
        return IMAGE_KEYS
    if kind == "diffusion":
        from gpuplan.estimate.nonllm.video import is_video

        if is_video(model):
            return VIDEO_KEYS
        joint = bool((getattr(model.profile, "pipeline", None) or {}).get("max_sequence_length"))
        return DIFFUSION_KEYS + (("text_tokens",) if joint else ())
    return ()


def _kind_words(key: str) -> str:
    return {"image": _("image models (vision and diffusion)"), "diffusion": _("diffusion pipelines"),
            "video": _("video diffusion pipelines"), "speech": _("speech models (Whisper)"),
            "joint": _("joint-attention diffusion transformers (FLUX, SD3)"),
            "vlm": _("vision-language models (Qwen-VL, InternVL, LLaVA...)")}[_KEY_KIND[key]]


def refuse_unread_input(model: Any, inp: Any) -> None:
    """One error for the first ``input`` key ``model``'s estimate would ignore; nothing when all are read.

    ``inp``: the workload's InputSpec (or its dict); an unset key (None) is not a request. ``offload: none`` is the
    default every pipeline runs, so it is accepted wherever diffusion keys are."""
    if inp is None:
        return
    given = inp if isinstance(inp, dict) else inp.model_dump(exclude_none=True)
    read = read_keys(model)
    for key, value in given.items():
        if value is None or key in read:
            continue
        if key == "offload" and value == "none" and getattr(model, "kind", "") == "diffusion":
            continue
        name = getattr(model, "id", str(model))
        if read:
            hint = _("{model} reads input.{keys}; remove input.{key}.").format(
                model=name, keys=", input.".join(read), key=key)
        elif getattr(model, "profile", None) is None:
            hint = _("A language model's sample is its tokens: set seq_len (training) or prompt_tokens and "
                     "output_tokens (inference), and remove input.{key}.").format(key=key)
        else:
            hint = _("{model} takes its sample size from seq_len / prompt_tokens; remove input.{key}.").format(
                model=name, key=key)
        raise GpuplanError(
            _("input.{key} applies to {kinds}; the estimate of {model} would ignore it.").format(
                key=key, kinds=_kind_words(key), model=name),
            hint=hint, field=f"input.{key}")
