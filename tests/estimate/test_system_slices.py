"""A vGPU slice's memory capacity (estimate.system.system_for_instance)."""

import dataclasses

import pytest

from gpuplan.catalog.hardware.gpus import get_gpu
from gpuplan.catalog.hardware.instances import load_instances
from gpuplan.estimate.system import system_for_instance
from gpuplan.units import GIB


def _slice():
    return load_instances()["ecs.sgn8ia-m2.xlarge"]  # 1/24 of an L20-48GB, 2 GiB of GPU memory


def test_slice_capacity_is_the_published_slice_memory():
    inst = _slice()
    assert inst.gpu_count < 1 and inst.gpu_memory_gib == 2.0
    assert system_for_instance(inst).capacity_bytes == 2 * GIB


def test_slice_without_published_memory_gets_its_share_of_the_gpu():
    # mypy found `None * GiB` here: a slice row without gpu_memory_gib (a refreshed cache) was a TypeError.
    inst = dataclasses.replace(_slice(), gpu_memory_gib=None)
    share = inst.gpu_count * get_gpu(inst.gpu).memory_gib * GIB
    assert system_for_instance(inst).capacity_bytes == share == pytest.approx(2 * GIB, rel=0.01)  # 48 GB / 24
