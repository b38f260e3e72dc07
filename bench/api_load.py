"""Bounded loopback load runs against the REST API; writes bench/results/api_load.md.

Starts ``gpuplan.api.serve`` (uvicorn) in a child process on 127.0.0.1 and a free port, waits
for /healthz, warms up, then runs two scenarios, each bounded in time and in requests:

- throughput: C concurrent keep-alive clients (threads) for at most ``--seconds`` or
  ``--max-requests``; the workloads rotate over three typical requests (LoRA fine-tune with a
  dataset, vLLM serving with a request rate, full fine-tune);
- mixed (issue 24): two normal clients (127.0.0.1) as above while hostile clients from other
  loopback addresses send serving workloads with ``requests_per_s`` 1e5 and 1e7 (before the closed
  form these computed for minutes: the server kills them at its time budget), a 10 MB whitespace
  YAML to /api/workload/parse and a 10 MB JSON body to /api/recommend, for ``--mixed-seconds``.
  Latency percentiles and status counts are reported per kind of request.

The server is stopped by its process group. Nothing leaves the machine.

    python bench/api_load.py                      # both scenarios (1 and 2 uvicorn workers, 2 and 4 clients)
    python bench/api_load.py --scenario mixed --mixed-seconds 30
    python bench/api_load.py --seconds 5 --clients 2 --workers 1 --no-write
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "api_load.md"

WORKLOADS = [
    ("Qwen2.5-7B LoRA, 1e8 tokens", {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora", "dataset": {"tokens": 1e8}}),
    ("Qwen2.5-7B serving, 10 req/s", {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                                      "serving": {"requests_per_s": 10}}),
    ("Qwen2.5-7B full fine-tune, 1e9 tokens", {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "full",
                                               "dataset": {"tokens": 1e9}}),
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, workers: int) -> subprocess.Popen:
    code = (f"from gpuplan.api import serve; serve('127.0.0.1', {port}, workers={workers}, log_level='warning')")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=str(ROOT), start_new_session=True)


def wait_ready(base: str, proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("server did not become ready")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)   # its own session: uvicorn and its worker processes
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


HOSTILE = [("serving, requests_per_s 1e5", {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                                            "serving": {"requests_per_s": 1e5}}),
           ("serving, requests_per_s 1e7", {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference",
                                            "serving": {"requests_per_s": 1e7}})]
HUGE_YAML = b"model: Qwen/Qwen2.5-7B-Instruct\n" + b" \n" * 5_000_000          # 10 MB of whitespace
HUGE_JSON = b'{"model": "Qwen/Qwen2.5-7B-Instruct", "name": "' + b" " * 10_000_000 + b'"}'


def _summary(lat: list[float], statuses: dict[int, int]) -> dict:
    lat = sorted(lat)
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else lat * 100
    return {"requests": len(lat), "statuses": dict(sorted(statuses.items())),
            "p50_ms": 1000 * statistics.median(lat) if lat else None, "p95_ms": 1000 * q[94] if lat else None,
            "p99_ms": 1000 * q[98] if lat else None, "max_ms": 1000 * lat[-1] if lat else None}


def run_mixed(base: str, seconds: float, max_requests: int) -> dict[str, dict]:
    """Normal clients and hostile clients at once; latency and statuses per kind of request."""
    stop_at = time.monotonic() + seconds
    lock = threading.Lock()
    results: dict[str, tuple[list[float], dict[int, int]]] = {}

    def record(kind: str, dt: float, status: int) -> None:
        with lock:
            lat, st = results.setdefault(kind, ([], {}))
            lat.append(dt)
            st[status] = st.get(status, 0) + 1

    def loop(kind: str, address: str, send, pause_s: float = 0.0) -> None:
        transport = httpx.HTTPTransport(local_address=address)
        with httpx.Client(base_url=base, timeout=120, transport=transport) as c:
            n = 0
            while time.monotonic() < stop_at and n < max_requests:
                t0 = time.perf_counter()
                try:
                    status = send(c, n).status_code
                except httpx.HTTPError:
                    status = 0          # connection refused or reset: counted as an error
                record(kind, time.perf_counter() - t0, status)
                n += 1
                time.sleep(pause_s)

    def normal(c, n):
        return c.post("/api/recommend?top=5", json=WORKLOADS[n % len(WORKLOADS)][1])

    threads = [threading.Thread(target=loop, args=("normal recommend", "127.0.0.1", normal)) for _ in range(2)]
    for i, (name, body) in enumerate(HOSTILE):
        threads.append(threading.Thread(target=loop, args=(
            f"hostile: {name}", f"127.0.0.{2 + i}", lambda c, n, body=body: c.post("/api/recommend?top=5", json=body))))
    threads.append(threading.Thread(target=loop, args=(
        "hostile: 10 MB whitespace YAML", "127.0.0.4",
        lambda c, n: c.post("/api/workload/parse", content=HUGE_YAML, headers={"content-type": "application/yaml"}),
        0.2)))
    threads.append(threading.Thread(target=loop, args=(
        "hostile: 10 MB JSON body", "127.0.0.5",
        lambda c, n: c.post("/api/recommend", content=HUGE_JSON, headers={"content-type": "application/json"}),
        0.2)))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return {kind: _summary(lat, st) for kind, (lat, st) in sorted(results.items())}


def run_load(base: str, clients: int, seconds: float, max_requests: int) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    issued = 0
    stop_at = time.monotonic() + seconds

    def worker(idx: int) -> None:
        nonlocal issued
        with httpx.Client(base_url=base, timeout=60) as c:
            i = idx
            while time.monotonic() < stop_at:
                with lock:
                    if issued >= max_requests:
                        return
                    issued += 1
                _, body = WORKLOADS[i % len(WORKLOADS)]
                i += 1
                t0 = time.perf_counter()
                r = c.post("/api/recommend?top=5", json=body)
                r.read()
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else lat * 100
    return {"clients": clients, "requests": len(lat), "wall_s": wall, "rps": len(lat) / wall if wall else 0.0,
            "p50_ms": 1000 * statistics.median(lat) if lat else None, "p95_ms": 1000 * q[94] if lat else None,
            "max_ms": 1000 * lat[-1] if lat else None, "statuses": dict(sorted(statuses.items()))}


def in_process_ms() -> dict[str, float]:
    """Median wall time of recommend() + to_dict() + json.dumps per workload, in this process (no HTTP)."""
    import json

    from gpuplan.plan import recommend

    out = {}
    for name, body in WORKLOADS:
        for _ in range(2):
            recommend(body, top=5)
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            json.dumps(recommend(body, top=5).to_dict())
            times.append(time.perf_counter() - t0)
        out[name] = 1000 * statistics.median(times)
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of each run (bound)")
    ap.add_argument("--max-requests", type=int, default=5000, help="requests per run (bound)")
    ap.add_argument("--clients", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="uvicorn worker processes")
    ap.add_argument("--scenario", nargs="+", choices=["throughput", "mixed"], default=["throughput", "mixed"])
    ap.add_argument("--mixed-seconds", type=float, default=45.0, help="duration of the mixed run (bound)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not write the results file")
    args = ap.parse_args()
    base_ms = in_process_ms()
    mean_ms = statistics.mean(base_ms.values())
    print("in process: " + "; ".join(f"{k} {v:.0f} ms" for k, v in base_ms.items())
          + f" -> {1000 / mean_ms:.1f} req/s per core", flush=True)
    rows: list[dict] = []
    mixed: dict[str, dict] = {}
    for workers in (args.workers if "throughput" in args.scenario else []):
        with server(workers) as base:
            for clients in args.clients:
                res = run_load(base, clients, args.seconds, args.max_requests)
                res["workers"] = workers
                rows.append(res)
                print(f"workers={workers} clients={clients}: {res['requests']} requests in {res['wall_s']:.1f} s = "
                      f"{res['rps']:.1f} req/s; p50 {res['p50_ms']:.0f} ms, p95 {res['p95_ms']:.0f} ms; "
                      f"statuses {res['statuses']}", flush=True)
    if "mixed" in args.scenario:
        with server(1) as base:
            mixed = run_mixed(base, args.mixed_seconds, args.max_requests)
        for kind, res in mixed.items():
            print(f"mixed, {kind}: {res['requests']} requests; p50 {res['p50_ms']:.0f} ms, p95 {res['p95_ms']:.0f} ms, "
                  f"max {res['max_ms']:.0f} ms; statuses {res['statuses']}", flush=True)
    if not args.no_write:
        write_report(rows, mixed, args, base_ms)
    normal_ok = all(set(r["statuses"]) == {200} for r in rows) and \
        set(mixed.get("normal recommend", {"statuses": {200: 1}})["statuses"]) == {200}
    return 0 if normal_ok else 1


@contextlib.contextmanager
def server(workers: int) -> Iterator[str]:
    """A server on a free loopback port, warmed up; stopped (its whole process group) afterwards."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(port, workers)
    try:
        wait_ready(base, proc)
        with httpx.Client(base_url=base, timeout=60) as c:   # warm every worker's catalog caches
            for _ in range(3 * workers):
                for _, body in WORKLOADS:
                    c.post("/api/recommend?top=5", json=body).raise_for_status()
        yield base
    finally:
        stop_server(proc)


def write_report(rows: list[dict], mixed: dict[str, dict], args, base_ms: dict[str, float]) -> None:
    mean_ms = statistics.mean(base_ms.values())
    lines = [
        "# REST API load: POST /api/recommend, normal and hostile",
        "",
        f"Machine: {os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}; date {time.strftime('%Y-%m-%d')}; 1-minute load average when the "
        f"report was written {os.getloadavg()[0]:.1f} (other jobs share the machine: see the reference line).",
        "Server: `gpuplan.api.serve` (uvicorn) on 127.0.0.1, access log off; clients: keep-alive httpx "
        "threads in one process on the same machine (they share the CPUs with the server).",
        f"Bounds: {args.seconds:g} s or {args.max_requests} requests per run, whichever comes first; "
        f"after a warm-up of 3 requests per workload per worker.",
        "Workloads, in rotation: " + "; ".join(name for name, _ in WORKLOADS) + " (`?top=5`, whole bundled catalog).",
        "",
        "## Throughput (normal requests only)",
        "",
        "| uvicorn workers | clients | requests | req/s | p50 ms | p95 ms | max ms | statuses |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r['workers']} | {r['clients']} | {r['requests']} | {r['rps']:.1f} | {r['p50_ms']:.0f} | "
                     f"{r['p95_ms']:.0f} | {r['max_ms']:.0f} | {r['statuses']} |")
    if mixed:
        lines += ["", "## Mixed: normal clients while hostile ones run",
                  "",
                  f"{args.mixed_seconds:g} s, one uvicorn worker with its pool of worker processes (default limits: "
                  "time budget 20 s, then the computation's worker is killed and replaced; a client may run half the "
                  "pool at once). Two normal clients (127.0.0.1) rotate the workloads above; each hostile client has "
                  "its own loopback address and sends one request after the other (the 10 MB bodies every 0.2 s).",
                  "",
                  "| requests of kind | requests | p50 ms | p95 ms | p99 ms | max ms | statuses |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for kind, r in mixed.items():
            lines.append(f"| {kind} | {r['requests']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | {r['p99_ms']:.0f} | "
                         f"{r['max_ms']:.0f} | {r['statuses']} |")
        lines += ["", "Status 200 is an answer, 413 a body refused before it was read, 503 a computation stopped at "
                  "the time budget (its worker killed), 429 a client over its share, 0 a connection error."]
    lines += ["", "Reference, no HTTP: `recommend()` + `to_dict()` + `json.dumps` in one process, median of 7: "
              + "; ".join(f"{k} {v:.0f} ms" for k, v in base_ms.items())
              + f"; mean {mean_ms:.0f} ms, i.e. a ceiling of about {1000 / mean_ms:.1f} requests/s per core. "
              "The search is CPU-bound Python (one core per process); the gap to that ceiling is request "
              "parsing, validation, serialisation and the load generator itself, which runs on the same CPUs.",
              "", "On a shared virtual machine the CPU speed drifts between runs (the reference line moves with it), "
              "so compare req/s against the reference of the same run, not across runs.",
              "", "Reproduce: `python bench/api_load.py` (options: `--scenario throughput mixed`, `--seconds`, "
              "`--mixed-seconds`, `--clients`, `--workers`).", ""]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    raise SystemExit(main())
