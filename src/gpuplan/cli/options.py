"""The workload options shared by the workload commands (estimate, recommend, compare, plan, calibrate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

WorkloadArg = Annotated[Optional[Path], typer.Argument(help=N_("Workload YAML/JSON file (flags override it)."))]


def workload_flags(
    model: Optional[str], task: Optional[str], precision: Optional[str], quantization: Optional[str],
    seq_len: Optional[int], prompt_tokens: Optional[int], output_tokens: Optional[int], batch_size: Optional[int],
    gpu: Optional[str], gpus: Optional[int], tp: Optional[int], pp: Optional[int], zero: Optional[int],
    budget: Optional[float], deadline_hours: Optional[float], region: Optional[list[str]], objective: Optional[str],
    framework: Optional[str], instance_type: Optional[str], grad_checkpointing: Optional[str],
) -> dict[str, Any]:
    return {"model": model, "task": task, "precision": precision, "quantization": quantization, "seq_len": seq_len,
            "prompt_tokens": prompt_tokens, "output_tokens": output_tokens, "batch_size": batch_size, "gpu": gpu,
            "gpus": gpus, "tp": tp, "pp": pp, "zero": zero, "budget": budget, "deadline_hours": deadline_hours,
            "region": region or None, "objective": objective, "framework": framework, "instance_type": instance_type,
            "grad_checkpointing": grad_checkpointing}


def _load(path: Path | None, flags: dict[str, Any]):
    from gpuplan.workload_loading import load_workload

    if path is None:
        if not flags.get("model"):
            raise GpuplanError(_("No workload given."), hint=_("Pass a workload file or at least --model NAME "
                                                            "(e.g. `gpuplan estimate --model qwen2.5-7b --task lora --gpu A10`)."))
        return load_workload({}, **flags)
    return load_workload(path, **flags)


_M = Annotated[Optional[str], typer.Option(help=N_("Model id, alias, config.json path."))]
_T = Annotated[Optional[str], typer.Option(help=N_("inference | pretrain | full | lora | qlora"))]
_P = Annotated[Optional[str], typer.Option(help=N_("fp32 | fp16 | bf16 | fp8"))]
_Q = Annotated[Optional[str], typer.Option(help=N_("none | int8 | int4 | gptq-int4 | awq | fp8 | bnb-nf4 ..."))]
_I = Annotated[Optional[int], typer.Option()]
_F = Annotated[Optional[float], typer.Option()]
_S = Annotated[Optional[str], typer.Option()]
_R = Annotated[Optional[list[str]], typer.Option("--region", help=N_("Region (repeatable)."))]
