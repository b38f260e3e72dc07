"""Micro-benchmarks for ``gpuplan doctor --bench`` (about a minute on an 8-GPU node).

torch is passed in (imported only with --bench). The same code runs on CUDA tensors on a GPU box
and on CPU tensors in CI, and the all-reduce runs NCCL across the local GPUs or gloo across two
CPU processes on 127.0.0.1, so every path is exercised without a GPU.

Definitions:
- matmul TFLOPS = 2·n³ per (n×n)·(n×n) product / seconds.
- device memory bandwidth = 2·bytes per copy (read + write) / seconds, as in STREAM "copy".
- all-reduce bus bandwidth = algbw · 2(n−1)/n with algbw = bytes / seconds, the nccl-tests
  definition (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md).
"""

from __future__ import annotations

import contextlib
import datetime
import mmap
import os
import socket
import time
from typing import Any

from gpuplan.units import GB, MIB

# Sizes (bytes / matrix edge) per device kind; the CPU ones only exercise the code path.
SIZES = {
    "cuda": {"matmul_n": 8192, "copy_bytes": 1024 * MIB, "h2d_bytes": 256 * MIB, "allreduce_bytes": 256 * MIB},
    "cpu": {"matmul_n": 256, "copy_bytes": 16 * MIB, "h2d_bytes": 16 * MIB, "allreduce_bytes": 4 * MIB},
}


def _sync(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _timed(torch: Any, device: str, fn: Any, min_time_s: float, max_iters: int) -> tuple[float, int]:
    """Run ``fn`` once to warm up, then repeat until ``min_time_s`` or ``max_iters``."""
    fn()
    _sync(torch, device)
    iters = 0
    start = time.perf_counter()
    while True:
        fn()
        iters += 1
        if iters >= max_iters or (iters % 2 == 0 and time.perf_counter() - start >= min_time_s):
            _sync(torch, device)
            elapsed = time.perf_counter() - start
            if elapsed >= min_time_s or iters >= max_iters:
                return elapsed, iters


def matmul_tflops(torch: Any, device: str, dtype: Any, n: int, min_time_s: float = 0.5,
                  max_iters: int = 200) -> float:
    """Dense n×n GEMM throughput in TFLOPS (2·n³ FLOPs per product)."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    elapsed, iters = _timed(torch, device, lambda: torch.matmul(a, b), min_time_s, max_iters)
    return 2.0 * n**3 * iters / elapsed / 1e12


def memory_bandwidth_gb_s(torch: Any, device: str, nbytes: int, min_time_s: float = 0.3,
                          max_iters: int = 200) -> float:
    """Device-to-device copy: each copy reads and writes ``nbytes`` (GB/s, 1e9)."""
    src = torch.empty(nbytes // 4, device=device, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    elapsed, iters = _timed(torch, device, lambda: dst.copy_(src), min_time_s, max_iters)
    return 2.0 * nbytes * iters / elapsed / GB


def host_device_gb_s(torch: Any, device: str, nbytes: int, min_time_s: float = 0.3,
                     max_iters: int = 100) -> float:
    """Host → device copy from pinned memory (GB/s). On CPU it times a host copy instead."""
    pin = device.startswith("cuda")
    host = torch.empty(nbytes // 4, dtype=torch.float32, pin_memory=pin).fill_(1.0)
    dev = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    elapsed, iters = _timed(torch, device, lambda: dev.copy_(host, non_blocking=pin), min_time_s, max_iters)
    return nbytes * iters / elapsed / GB


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _allreduce_worker(rank: int, world: int, port: int, nbytes: int, iters: int, backend: str,
                      timeout_s: float, queue: Any) -> None:
    """One rank of the all-reduce test (spawned; must stay importable at module level)."""
    try:
        if backend == "gloo":
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        import torch  # noqa: PLC0415
        import torch.distributed as dist  # noqa: PLC0415

        device = f"cuda:{rank}" if backend == "nccl" else "cpu"
        if backend == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=timeout_s))
        try:
            buf = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
            for _i in range(2):
                dist.all_reduce(buf)
            _sync(torch, device)
            dist.barrier()
            start = time.perf_counter()
            for _i in range(iters):
                dist.all_reduce(buf)
            _sync(torch, device)
            elapsed = time.perf_counter() - start
            dist.barrier()
        finally:
            dist.destroy_process_group()
        if rank == 0:
            queue.put(("ok", elapsed / iters))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, never a traceback
        queue.put(("error", f"rank {rank}: {type(exc).__name__}: {exc}"))


def allreduce_bus_bandwidth(world: int, nbytes: int, backend: str, iters: int = 10,
                            timeout_s: float = 60.0) -> dict[str, Any]:
    """All-reduce ``nbytes`` across ``world`` local processes (NCCL: one per GPU; gloo: CPU).

    Returns {"algbw_gb_s", "busbw_gb_s", "seconds_per_op", "world", "backend", "error"}.
    """
    import multiprocessing as mp  # noqa: PLC0415

    out: dict[str, Any] = {"world": world, "backend": backend, "bytes": nbytes,
                           "algbw_gb_s": None, "busbw_gb_s": None, "seconds_per_op": None, "error": None}
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_allreduce_worker, args=(r, world, port, nbytes, iters, backend, timeout_s, queue),
                         daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout_s
    result = None
    try:
        while result is None and time.monotonic() < deadline:
            try:
                result = queue.get(timeout=0.2)
            except Exception:  # noqa: BLE001 - queue.Empty
                if not any(p.is_alive() for p in procs) and queue.empty():
                    break
    finally:
        for p in procs:
            p.join(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=2)
    if result is None:
        out["error"] = f"all-reduce did not finish within {timeout_s:.0f} s"
    elif result[0] == "error":
        out["error"] = result[1]
    else:
        sec = float(result[1])
        algbw = nbytes / sec / GB
        out.update(seconds_per_op=sec, algbw_gb_s=algbw, busbw_gb_s=algbw * 2 * (world - 1) / world)
    return out


def disk_throughput_mb_s(directory: str, nbytes: int = 256 * MIB, block: int = 4 * MIB) -> dict[str, Any]:
    """Sequential write (fsync'd) then O_DIRECT read of a scratch file in ``directory`` (MB/s, 1e6).

    O_DIRECT bypasses the page cache so the read measures the disk, not RAM; where a filesystem
    refuses it (tmpfs, some FUSE mounts) the read is reported as None.
    """
    out: dict[str, Any] = {"path": directory, "bytes": nbytes, "write_mb_s": None, "read_mb_s": None, "error": None}
    path = os.path.join(directory, f".gpuplan-doctor-{os.getpid()}.tmp")
    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT requires
    buf.write(os.urandom(1024) * (block // 1024))
    try:
        start = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _i in range(nbytes // block):
                os.write(fd, buf)
            os.fsync(fd)
        finally:
            os.close(fd)
        out["write_mb_s"] = nbytes / (time.perf_counter() - start) / 1e6
        direct = getattr(os, "O_DIRECT", 0)
        try:
            fd = os.open(path, os.O_RDONLY | direct)
        except OSError:
            return out
        try:
            start = time.perf_counter()
            total = 0
            while True:
                n = os.readv(fd, [buf])
                if n <= 0:
                    break
                total += n
            out["read_mb_s"] = total / (time.perf_counter() - start) / 1e6 if direct else None
        except OSError:
            out["read_mb_s"] = None
        finally:
            os.close(fd)
    except OSError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        buf.close()
        with contextlib.suppress(OSError):
            os.remove(path)
    return out


def run_benchmarks(torch: Any, *, device_kind: str | None = None, gpu_count: int | None = None,
                   dtypes: tuple[str, ...] = ("bf16", "fp16"), allreduce_timeout_s: float = 90.0,
                   disk_dir: str | None = None, disk_bytes: int = 256 * MIB) -> dict[str, Any]:
    """All benchmarks, each GPU in turn for the per-GPU ones; failures are recorded, not raised."""
    kind = device_kind or ("cuda" if torch.cuda.is_available() else "cpu")
    sizes = SIZES[kind]
    devices = [f"cuda:{i}" for i in range(gpu_count or torch.cuda.device_count())] if kind == "cuda" else ["cpu"]
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    results: dict[str, Any] = {"device": kind}

    def per_device(name: str, unit: str, fn: Any) -> None:
        values, errors = [], []
        for d in devices:
            try:
                values.append(round(fn(d), 3))
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{d}: {type(exc).__name__}: {exc}")
        results[name] = {"value": min(values) if values else None, "unit": unit, "per_device": values,
                         "error": "; ".join(errors) or None}

    for key in dtypes:
        per_device(f"matmul_{key}_tflops", "TFLOPS",
                   lambda d, key=key: matmul_tflops(torch, d, dt[key], sizes["matmul_n"]))
    per_device("memory_bandwidth_gb_s", "GB/s", lambda d: memory_bandwidth_gb_s(torch, d, sizes["copy_bytes"]))
    per_device("host_to_device_gb_s", "GB/s", lambda d: host_device_gb_s(torch, d, sizes["h2d_bytes"]))
    world = len(devices) if kind == "cuda" else 2
    if world >= 2:
        ar = allreduce_bus_bandwidth(world, sizes["allreduce_bytes"], "nccl" if kind == "cuda" else "gloo",
                                     timeout_s=allreduce_timeout_s)
        results["allreduce_busbw_gb_s"] = {"value": ar["busbw_gb_s"], "unit": "GB/s", "per_device": [],
                                           "error": ar["error"], "detail": ar}
    if disk_dir:
        disk = disk_throughput_mb_s(disk_dir, disk_bytes)
        results["disk_read_mb_s"] = {"value": disk["read_mb_s"], "unit": "MB/s", "per_device": [],
                                     "error": disk["error"], "detail": disk}
    return results
