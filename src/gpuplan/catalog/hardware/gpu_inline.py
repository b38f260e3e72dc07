"""A GPU the catalog lacks, described in the workload: ``hardware: {gpu: {name: ..., memory_gib: 24, ...}}``.

The spec is the user's input (pydantic); :func:`inline_gpu` turns it into the same frozen
:class:`~gpuplan.catalog.hardware.gpus.GpuSpec` the catalog yields, so every estimator reads it the same way, and
lists each value it had to assume (a dtype left out, the usable memory, the links) for the result's
assumptions. ``estimate`` runs on it; ``recommend`` searches the catalog's instances only, so an inline GPU
there must name a catalog card (plan/search/scope.py says so).

Assumptions for what is left out (docs/workload.md "An inline GPU"):

* ``fp16_dense_tflops`` <-> ``bf16_dense_tflops``: one gives the other (every NVIDIA tensor core since
  Ampere runs both at one rate; give ``bf16_dense_tflops: 0`` for a card without BF16, e.g. Turing: a rate
  of 0 means the GPU has no such path);
* ``fp32_tflops``: a quarter of the 16-bit rate (the spread is 1/2 on GeForce Ada to 1/16 on A100/H100);
* ``tf32``, ``fp8``, ``int8``: no such path unless given;
* ``sustained_tensor_fraction``: 1 (the datasheet rates hold under load; a catalog card's comes from
  data/efficiency.yaml ``sustained_tensor``, keyed by catalog id, which an inline name does not match);
* usable memory: ``memory_gib`` x 15/16 (catalog/hardware/gpus.UNKNOWN_DRIVER_MEMORY_FACTOR) unless
  ``driver_memory_mib`` is given; PCIe gen 4, no NVLink unless given.
"""


# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when the models are built (a cold `estimate` builds them).
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuplan.i18n import _

FP32_SHARE_OF_16BIT = 0.25   # assumed when fp32_tflops is left out (see the module docstring)


class GpuInlineSpec(BaseModel):
    """A GPU given by its figures (dense TFLOPS per dtype, memory, bandwidth)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=100, description="the card's name, shown in the results")
    memory_gib: float | None = Field(None, gt=0, le=4096, description="memory per GPU (the datasheet's GB); required")
    mem_bandwidth_gb_s: float | None = Field(None, gt=0, le=100_000, description="memory bandwidth, GB/s; required")
    bf16_dense_tflops: float | None = Field(None, ge=0, le=100_000, description="dense BF16 tensor TFLOPS (no sparsity)")
    fp16_dense_tflops: float | None = Field(None, ge=0, le=100_000, description="dense FP16 tensor TFLOPS (FP32 accumulate)")
    fp32_tflops: float | None = Field(None, ge=0, le=100_000, description="non-tensor FP32 TFLOPS")
    tf32_dense_tflops: float | None = Field(None, ge=0, le=100_000)
    fp8_dense_tflops: float | None = Field(None, ge=0, le=100_000)
    int8_dense_tops: float | None = Field(None, ge=0, le=100_000)
    driver_memory_mib: int | None = Field(None, gt=0, le=4_194_304, description="memory.total as nvidia-smi prints it")
    nvlink_gb_s: float | None = Field(None, ge=0, le=100_000)
    pcie_gen: int | None = Field(None, ge=1, le=7)
    architecture: str | None = Field(None, max_length=40)
    form_factor: Literal["PCIe", "SXM", "OAM", "NVL"] | None = None
    sustained_tensor_fraction: float | None = Field(
        None, gt=0, le=1.5, description="share of the datasheet tensor rates the card sustains under a long GEMM "
                                        "load, relative to an A100's share (a power-limited card's clock drops: the "
                                        "catalog's A10 0.59; an RTX 3090 outruns its datasheet: 1.27)")

    @model_validator(mode="after")
    def _some_rate(self) -> "GpuInlineSpec":
        missing = [k for k in ("memory_gib", "mem_bandwidth_gb_s") if getattr(self, k) is None]
        if missing:
            raise ValueError(_("an inline GPU needs {keys} (e.g. name: TITAN RTX, memory_gib: 24, fp16_dense_tflops: "
                               "130, mem_bandwidth_gb_s: 672)").format(keys=" and ".join(missing)))
        if not (self.bf16_dense_tflops or self.fp16_dense_tflops or self.fp32_tflops):
            raise ValueError(_("an inline GPU needs at least one compute rate: bf16_dense_tflops, fp16_dense_tflops "
                               "or fp32_tflops"))
        return self


def inline_gpu(spec: GpuInlineSpec):
    """(GpuSpec, the values assumed) for an inline GPU spec. A rate of 0 means the GPU has no such path."""
    from gpuplan.catalog.hardware.gpus import UNKNOWN_DRIVER_MEMORY_FACTOR, GpuSpec

    notes: list[str] = []

    def rate(key: str) -> float | None:   # 0 = "no such path" (a null does not survive the defaults' round trip)
        value = getattr(spec, key)
        return None if not value else float(value)

    bf16, fp16 = rate("bf16_dense_tflops"), rate("fp16_dense_tflops")
    if fp16 is None and bf16 is not None and spec.fp16_dense_tflops is None:
        fp16 = bf16
        notes.append(_("GPU {name}: fp16_dense_tflops not given, assumed equal to bf16 ({value:g})").format(
            name=spec.name, value=bf16))
    if bf16 is None and fp16 is not None and spec.bf16_dense_tflops is None:
        bf16 = fp16
        notes.append(_("GPU {name}: bf16_dense_tflops not given, assumed equal to fp16 ({value:g}); give "
                       "bf16_dense_tflops: 0 for a card without BF16").format(name=spec.name, value=fp16))
    fp32 = rate("fp32_tflops")
    if fp32 is None:
        fp32 = (fp16 or bf16 or 0.0) * FP32_SHARE_OF_16BIT
        notes.append(_("GPU {name}: fp32_tflops not given, assumed a quarter of the 16-bit rate ({value:g})").format(
            name=spec.name, value=fp32))
    missing = [k for k in ("tf32_dense_tflops", "fp8_dense_tflops", "int8_dense_tops") if rate(k) is None]
    if missing:
        notes.append(_("GPU {name}: no {keys} given: those paths are treated as absent").format(
            name=spec.name, keys=", ".join(missing)))
    if spec.driver_memory_mib is None:
        notes.append(_("GPU {name}: usable memory assumed {share:.1%} of {gib:g} GiB (give driver_memory_mib, "
                       "nvidia-smi's memory.total, to set it)").format(
            name=spec.name, share=UNKNOWN_DRIVER_MEMORY_FACTOR, gib=spec.memory_gib))
    if spec.sustained_tensor_fraction is None:
        notes.append(_("GPU {name}: sustained_tensor_fraction not given, assumed 1 (the datasheet tensor rates hold "
                       "under a long GEMM load; a power-limited card runs it at a lower clock: data/efficiency.yaml "
                       "sustained_tensor lists the catalog's)").format(name=spec.name))
    gpu = GpuSpec(
        id=spec.name, name=spec.name, vendor="user", architecture=spec.architecture or "unknown",
        compute_capability=None, form_factor=spec.form_factor or "PCIe", memory_gib=float(spec.memory_gib or 0.0),
        memory_type=None, driver_memory_mib=spec.driver_memory_mib,
        mem_bandwidth_gb_s=float(spec.mem_bandwidth_gb_s or 0.0),
        fp32_tflops=fp32, tf32_dense_tflops=rate("tf32_dense_tflops"), fp16_dense_tflops=fp16, bf16_dense_tflops=bf16,
        fp8_dense_tflops=rate("fp8_dense_tflops"), int8_dense_tops=rate("int8_dense_tops"), fp4_dense_tflops=None,
        nvlink_gb_s=spec.nvlink_gb_s, pcie_gen=spec.pcie_gen or 4, tdp_w=None, mig_instances=0, aliases=(),
        sources=("workload hardware.gpu (user-supplied figures)",), unconfirmed=(),
        notes=_("described in the workload, not in the catalog"),
        sustained_tensor_fraction=1.0 if spec.sustained_tensor_fraction is None else spec.sustained_tensor_fraction,
    )
    return gpu, notes


def parse_gpu_spec_arg(text: str) -> dict:
    """``--gpu-spec``: a YAML/JSON file holding the spec (or ``{gpu: {...}}``), or ``key=value,...`` inline
    (``name=TITAN RTX,memory_gib=24,fp16_dense_tflops=130,mem_bandwidth_gb_s=672``). Validation is the
    workload's (GpuInlineSpec): this only reads the text."""
    import os

    from gpuplan.errors import GpuplanError

    text = str(text).strip()
    if os.path.isfile(os.path.expanduser(text)):
        from gpuplan.files.workload_files import read_workload_documents

        doc = read_workload_documents(os.path.expanduser(text))
        if isinstance(doc, dict) and isinstance(doc.get("hardware"), dict):
            doc = doc["hardware"]
        if isinstance(doc, dict) and isinstance(doc.get("gpu"), dict):
            doc = doc["gpu"]
        if not isinstance(doc, dict):
            raise GpuplanError(_("{path} must hold one GPU spec mapping.").format(path=text),
                               hint=_("E.g. name: TITAN RTX, memory_gib: 24, fp16_dense_tflops: 130, mem_bandwidth_gb_s: 672."),
                               field="hardware.gpu")
        return dict(doc)
    out: dict = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise GpuplanError(_("--gpu-spec {part!r} is not key=value.").format(part=part),
                               hint=_("Give a file, or key=value pairs: name=TITAN RTX,memory_gib=24,"
                                      "fp16_dense_tflops=130,mem_bandwidth_gb_s=672."), field="hardware.gpu")
        value = value.strip()
        try:
            out[key.strip()] = None if value.lower() in ("null", "none") else (
                float(value) if key.strip() != "name" else value)
        except ValueError:
            out[key.strip()] = value
    return out
