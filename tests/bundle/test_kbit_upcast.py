"""QLoRA's non-quantized parameters: the launch holds what the plan sized (one rule, estimate.memory.kbit_upcast).

PEFT's prepare_model_for_kbit_training upcasts embeddings, LM head and norms to fp32; LLaMA-Factory, torchtune and
ms-swift never call it. The estimate sizes a QLoRA plan by the workload's named stack, so train.py is told to keep
them in 16-bit (--kbit_upcast no) exactly when the estimate did.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.memory import kbit_upcast
from gpuplan.render.bundle.context_build import build_context
from gpuplan.render.bundle.training import train_args

from .scenarios import inputs


@pytest.mark.parametrize("framework, upcast", [("auto", True), ("transformers", True), ("swift", False),
                                               ("llama-factory", False), ("torchtune", False)])
def test_train_py_upcasts_exactly_when_the_estimate_did(framework, upcast):
    plan, workload, est = inputs("spot_job")   # QLoRA of Qwen2.5-14B on one L20
    c = build_context(plan, workload.model_copy(update={"framework": framework}), est)
    assert c.kbit_upcast is upcast is kbit_upcast("qlora", "bnb-nf4", framework, sharded=False)
    words = train_args(c)
    assert ("--kbit_upcast" in words) is not upcast
    if not upcast:
        assert words[words.index("--kbit_upcast") + 1] == "no"


def test_sharded_qlora_never_upcasts_and_lora_is_untouched():
    assert not kbit_upcast("qlora", "bnb-nf4", "transformers", sharded=True)
    assert not kbit_upcast("lora", "none", "transformers", sharded=False)
    assert not kbit_upcast("qlora", "gptq-int4", "transformers", sharded=False)
    plan, workload, est = inputs("lora_single")
    assert "--kbit_upcast" not in train_args(build_context(plan, workload, est))
