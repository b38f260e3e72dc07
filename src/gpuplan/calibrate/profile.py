"""``gpuplan calibrate WORKLOAD``: a short real profile on this machine's GPU.

The model is built from its shape (gpuplan.estimate.tracing.trace_config.hf_config_from_spec: no weights are
downloaded, they are random) with PyTorch and transformers, on one GPU, in the workload's precision. Training runs
one warm-up step and then ``steps`` timed optimizer steps (forward, backward, AdamW) on random token ids
of the workload's batch and sequence length; inference runs one warm-up ``generate`` call and then
``steps`` timed calls of ``prompt_tokens`` in, ``output_tokens`` out. It reports tokens per second and
the peak of ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``.

This is a PyTorch / transformers run, so the calibration it yields is stored for framework
``transformers``. The runner is injected (``Runner``): tests pass a fake one; ``device="cpu"`` exercises
the same code on a tiny model without a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

INSTALL_HINT = N_("pip install 'gpuplan[trace]' on the GPU machine (torch with CUDA, transformers)")
_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class Measurement:
    """What one profile measured."""

    device_name: str  # torch.cuda.get_device_name(), e.g. "NVIDIA A100-SXM4-80GB"
    metric: str  # train_tokens_per_s_per_gpu or output_tokens_per_s
    value: float
    peak_allocated_bytes: float | None
    peak_reserved_bytes: float | None
    steps: int
    seconds: float


class Runner(Protocol):
    def __call__(self, workload: Any, model: Any, steps: int) -> Measurement: ...


def _torch() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise GpuplanError(_("gpuplan calibrate needs torch and transformers on this machine."),
                           hint=_(INSTALL_HINT)) from None
    return torch, transformers


def _build(torch: Any, model: Any, precision: str, device: str, min_positions: int) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpuplan.estimate.tracing.trace_config import hf_config_from_spec

    cfg, _notes = hf_config_from_spec(model, min_positions=min_positions)
    kw = dict(cfg)
    config = AutoConfig.for_model(kw.pop("model_type"), **kw)
    dtype = getattr(torch, _DTYPES.get(precision, "bfloat16"))
    with torch.device(device):
        net = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return net


def _sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _train(torch: Any, net: Any, w: Any, steps: int, device: str) -> tuple[float, float]:
    batch, seq = int(w.batch_size or 1), int(w.seq_len or 2048)
    vocab = int(net.config.vocab_size)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-5, fused=device.startswith("cuda"))
    net.train()
    if w.grad_checkpointing:
        net.gradient_checkpointing_enable()

    def step() -> None:
        ids = torch.randint(0, vocab, (batch, seq), device=device)
        loss = net(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # warm-up: kernels, allocator, optimizer states
    _sync(torch, device)
    start = time.perf_counter()
    for _i in range(steps):
        step()
    _sync(torch, device)
    seconds = time.perf_counter() - start
    return batch * seq * steps / seconds, seconds


def _generate(torch: Any, net: Any, w: Any, steps: int, device: str) -> tuple[float, float]:
    batch, prompt, out = int(w.batch_size or 1), int(w.prompt_tokens or 1), int(w.output_tokens or 1)
    vocab = int(net.config.vocab_size)
    net.eval()
    ids = torch.randint(0, vocab, (batch, prompt), device=device)
    kw = dict(max_new_tokens=out, min_new_tokens=out, do_sample=False, pad_token_id=0)
    with torch.inference_mode():
        net.generate(ids, **kw)  # warm-up
        _sync(torch, device)
        start = time.perf_counter()
        for _i in range(steps):
            net.generate(ids, **kw)
        _sync(torch, device)
    seconds = time.perf_counter() - start
    return batch * out * steps / seconds, seconds


def torch_runner(workload: Any, model: Any, steps: int, device: str | None = None) -> Measurement:
    """Profile ``workload`` (resolved, one GPU) on this machine with PyTorch. See the module docstring."""
    torch, _transformers = _torch()
    if device is None:
        if not torch.cuda.is_available():
            raise GpuplanError(_("gpuplan calibrate found no CUDA GPU on this machine."),
                               hint=_("Run it on the GPU machine, or calibrate from measurements you already have: "
                                      "`gpuplan calibrate --from FILE.csv`."))
        device = "cuda"
    cuda = device.startswith("cuda")
    task = workload.task or "inference"
    length = (workload.prompt_tokens or 0) + (workload.output_tokens or 0) if task == "inference" else workload.seq_len
    net = _build(torch, model, workload.precision or "bf16", device, int(length or 0))
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    if task == "inference":
        value, seconds = _generate(torch, net, workload, steps, device)
        metric = "output_tokens_per_s"
    else:
        value, seconds = _train(torch, net, workload, steps, device)
        metric = "train_tokens_per_s_per_gpu"
    return Measurement(
        device_name=torch.cuda.get_device_name(0) if cuda else "cpu", metric=metric, value=value,
        peak_allocated_bytes=float(torch.cuda.max_memory_allocated()) if cuda else None,
        peak_reserved_bytes=float(torch.cuda.max_memory_reserved()) if cuda else None,
        steps=steps, seconds=seconds)
