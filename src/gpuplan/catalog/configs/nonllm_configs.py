"""config.json ``model_type`` values that describe no language model, and the builders that read them
(Whisper: catalog/nonllm/speech.py; SAM: catalog/nonllm/segment_anything.py; ViT-family image encoders:
catalog/nonllm/vision.py; CLIP, SigLIP and Chinese-CLIP dual encoders: catalog/nonllm/contrastive.py). Diffusers pipelines
(``model_index.json``) are read by catalog/nonllm/diffusers.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpuplan.catalog.model_spec import ModelSpec
from gpuplan.catalog.nonllm.contrastive import FAMILIES as DUAL_ENCODERS
from gpuplan.catalog.nonllm.contrastive import dual_encoder_spec
from gpuplan.catalog.nonllm.segment_anything import sam_config_spec
from gpuplan.catalog.nonllm.speech import whisper_spec
from gpuplan.catalog.nonllm.vision import VIT_CONFIG_LAYOUTS, vit_config_spec

NONLLM_BUILDERS: dict[str, Callable[[Mapping[str, Any], str], ModelSpec]] = {
    "whisper": whisper_spec,
    "sam": sam_config_spec,
    **{t: dual_encoder_spec for t in DUAL_ENCODERS},
    **{t: vit_config_spec for t in VIT_CONFIG_LAYOUTS},
}
