"""The fakes must agree with the real catalog (written by another helper) where it is present."""

import pytest

from . import fakes


@pytest.mark.parametrize("smi_name", ["NVIDIA A100-SXM4-80GB", "NVIDIA A10", "NVIDIA L20"])
def test_fake_gpu_specs_match_catalog(smi_name):
    gpus = pytest.importorskip("gpuplan.catalog.hardware.gpus")
    spec, _note = gpus.resolve_gpu(smi_name)
    fake = fakes.fake_resolve_gpu_spec(smi_name)
    assert spec.id == fake.id
    for field in ("mem_bandwidth_gb_s", "bf16_dense_tflops", "pcie_gen"):
        assert getattr(spec, field) == pytest.approx(getattr(fake, field)), field
    assert (spec.nvlink_gb_s or None) == fake.nvlink_gb_s


def test_planned_instance_in_real_catalog():
    instances = pytest.importorskip("gpuplan.catalog.hardware.instances")
    inst = instances.get_instance("ecs.gn7e-c16g1.32xlarge")
    assert inst.gpu == "A100-SXM4-80GB" and inst.gpu_count == 8
    assert inst.interconnect in {"nvswitch", "nvlink"}
