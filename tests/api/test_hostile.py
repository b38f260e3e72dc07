"""Bounded work per request (issue 24): hostile requests cannot take the service down.

A live uvicorn server with its worker processes. One client sends four requests whose queueing
model is huge (``serving.requests_per_s`` 1e5 and 1e7: before the closed form they computed for
minutes); while they are in flight another client's ten ordinary recommends must all answer 200,
each within 5 s (the issue's bound; the machine may be a loaded 2-core box). The hostile requests
end by their deadline (200 if the computation is fast, else 503 with their worker killed), and the
pool is whole again afterwards. Also: a 10 MB YAML body is refused before it is read.
"""

from __future__ import annotations

import threading
import time

import pytest

from gpuplan.api import create_app
from gpuplan.api.limits import Limits

from .conftest import LORA, SERVE, start_uvicorn

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.slow

HOSTILE = [{"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "serving": {"requests_per_s": rate}}
           for rate in (1e5, 1e7, 1e5, 1e7)]
BUDGET_S = 12.0


@pytest.fixture(scope="module")
def server():
    app = create_app(Limits(time_budget_s=BUDGET_S, max_workers=4))
    with start_uvicorn(app) as base:
        yield app, base


def _client_from(address: str, base: str) -> "httpx.Client":
    """A client whose requests come from another loopback address (another client to the server)."""
    return httpx.Client(base_url=base, timeout=60, transport=httpx.HTTPTransport(local_address=address))


def test_normal_requests_are_served_while_hostile_ones_run(server):
    app, base = server
    runner = app.state.runner
    hostile: list = [None] * len(HOSTILE)

    def send(i: int) -> None:
        with _client_from("127.0.0.2", base) as c:
            t0 = time.monotonic()
            r = c.post("/api/recommend?top=3", json=HOSTILE[i])
            hostile[i] = (r.status_code, time.monotonic() - t0, r.headers.get("retry-after"))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(HOSTILE))]
    for th in threads:
        th.start()
    for _ in range(500):                      # until all four are in flight (waiting or computing)
        if runner.pending >= len(HOSTILE) or all(h is not None for h in hostile):
            break
        time.sleep(0.01)
    in_flight_at_start = runner.pending
    normal = []
    with _client_from("127.0.0.1", base) as c:
        for i in range(10):
            t0 = time.monotonic()
            r = c.post("/api/recommend?top=3", json=(LORA, SERVE)[i % 2])
            normal.append((r.status_code, time.monotonic() - t0))
    still_running = sum(h is None for h in hostile)
    for th in threads:
        th.join(BUDGET_S + 30)

    assert [s for s, _ in normal] == [200] * 10, normal
    assert max(t for _, t in normal) < 5.0, normal
    # Each hostile request ended by its deadline: a plan (fast queueing model) or a 503 (its worker killed).
    for status, took, retry in hostile:
        assert status in (200, 503), hostile
        assert took < BUDGET_S + 5, hostile
        if status == 503:
            assert retry is not None
    print(f"hostile in flight at start: {in_flight_at_start}, still running after the normal ones: {still_running}; "
          f"normal max {max(t for _, t in normal):.2f} s; hostile {hostile}")
    # The pool is whole again and serves at once.
    with httpx.Client(base_url=base, timeout=30) as c:
        assert c.post("/api/recommend?top=1", json=LORA).status_code == 200
    assert runner.alive == runner.size and runner.pending == 0


@pytest.mark.parametrize("chunked", [False, True])
def test_a_10_mb_yaml_body_is_refused_at_once(server, chunked):
    _app, base = server
    body = b"model: Qwen/Qwen2.5-7B-Instruct\n" + b" \n" * 5_000_000
    content = (body[i:i + 65536] for i in range(0, len(body), 65536)) if chunked else body
    t0 = time.monotonic()
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/api/workload/parse", content=content, headers={"content-type": "application/yaml"})
    assert r.status_code == 413 and time.monotonic() - t0 < 5.0
    assert "larger than" in r.json()["error"]


def test_one_client_beyond_its_queue_gets_429(server):
    """Nine requests at once from one address: the queue of that client holds eight, the ninth gets 429."""
    app, base = server
    statuses: list = []
    lock = threading.Lock()

    def send() -> None:
        with _client_from("127.0.0.3", base) as c:
            r = c.post("/api/recommend?top=1", json=LORA)
            with lock:
                statuses.append((r.status_code, r.headers.get("retry-after")))

    threads = [threading.Thread(target=send) for _ in range(app.state.limits.per_client_queue + 4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    codes = sorted(s for s, _ in statuses)
    assert set(codes) <= {200, 429} and 200 in codes, codes
    assert all(r is not None and int(r) >= 1 for s, r in statuses if s == 429)
