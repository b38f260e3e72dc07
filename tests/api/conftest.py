"""Fixtures for the API tests: a TestClient, and a real uvicorn server on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from gpuplan.api import create_app  # noqa: E402
from gpuplan.api.limits import Limits  # noqa: E402

LORA = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "dataset": {"tokens": 1.0e8}}
SERVE = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "serving": {"requests_per_s": 10}}


@pytest.fixture(scope="session")
def client():
    from fastapi.testclient import TestClient

    with TestClient(create_app(), base_url="http://localhost") as c:
        yield c


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_uvicorn(app) -> Iterator[str]:
    """uvicorn serving ``app`` on 127.0.0.1:<free port> in a thread; yields the base URL."""
    uvicorn = pytest.importorskip("uvicorn")
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@pytest.fixture(scope="session")
def live_server():
    """The default app served by uvicorn on a free loopback port; yields the base URL."""
    with start_uvicorn(create_app(Limits())) as base:
        yield base
