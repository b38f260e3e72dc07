from __future__ import annotations

import json
import pathlib
import socket

import pytest

from gpuplan.doctor import plan as plan_mod

from . import fakes


@pytest.fixture(autouse=True)
def fake_catalog(monkeypatch):
    """The catalog is another helper's module: the doctor's tests use fixed published records."""
    monkeypatch.setattr(plan_mod, "resolve_gpu_spec", fakes.fake_resolve_gpu_spec)
    monkeypatch.setattr(plan_mod, "lookup_instance", fakes.fake_lookup_instance)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to reach the network (e.g. the metadata service) fails the test; 127.0.0.1
    stays open for the gloo all-reduce."""
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "localhost", "::1") and not str(host).startswith("/"):
            raise AssertionError(f"network access attempted: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def no_torch_runtime():
    """Package metadata that says nothing is installed (keeps facts independent of the venv)."""
    return lambda name: None


@pytest.fixture
def make_plan(tmp_path):
    def _make(instance_type, gpu, count=1, gpus_total=None, storage=None, ops=None, precision="bf16"):
        doc = {"schema_version": 1,
               "workload": {"precision": precision, "task": "lora"},
               "plan": {"instance_type": instance_type, "instance_count": count, "gpu": gpu,
                        "gpus_total": gpus_total or count * fakes.INSTANCES[instance_type].gpu_count}}
        if storage is not None:
            doc["plan"]["storage"] = storage
        if ops is not None:
            doc["plan"]["ops"] = ops
        d = tmp_path / f"plan-{instance_type}-{count}"
        d.mkdir()
        (d / "plan.json").write_text(json.dumps(doc))
        return pathlib.Path(d)

    return _make
