"""The optimizer the estimate counts is the one every launcher starts: the workload's `sgd` keeps a momentum buffer
(0.9, OPT_STATE_BYTES), while Hugging Face's optim="sgd" builds torch SGD without momentum unless optim_args names it
(transformers trainer_optimizer._get_sgd); `sgd-plain` is SGD without momentum everywhere."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

LORA = {"name": "lora-sgd", "model": "Qwen/Qwen2.5-0.5B-Instruct", "task": "lora", "seq_len": 1024,
        "dataset": {"tokens": 1.0e7}, "constraints": {"regions": ["cn-hangzhou"], "billing": ["payg"]}}


def _bundle(tmp: Path, optimizer: str) -> Path:
    path, _info = write_plan_bundle(Workload.model_validate({**LORA, "optimizer": optimizer}), tmp / optimizer)
    return path


def test_hf_launchers_pass_sgds_momentum(tmp_path):
    path = _bundle(tmp_path, "sgd")
    cfg = yaml.safe_load((path / "llamafactory.yaml").read_text())
    assert cfg["optim"] == "sgd" and cfg["optim_args"] == "momentum=0.9"
    assert "--optim_args 'momentum=0.9'" in (path / "swift-sft.sh").read_text() or \
        "--optim_args momentum=0.9" in (path / "swift-sft.sh").read_text()


def test_plain_sgd_passes_no_momentum(tmp_path):
    path = _bundle(tmp_path, "sgd-plain")
    cfg = yaml.safe_load((path / "llamafactory.yaml").read_text())
    assert cfg["optim"] == "sgd" and "optim_args" not in cfg
    assert "--optim_args" not in (path / "swift-sft.sh").read_text()
