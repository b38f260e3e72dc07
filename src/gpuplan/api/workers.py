"""The API's CPU-heavy work runs in worker processes that are stopped at the deadline.

A Python thread cannot be stopped, so a computation that runs away (a search far larger than
intended, a formula that loops) would keep its CPU after the client got its error. Here every
``estimate``/``recommend``/``plan`` runs in one of a fixed pool of worker processes:

- a request waits at most until its deadline (``time_budget_s`` after it arrived, queue wait
  included); past it the worker computing it is killed (SIGKILL) and a fresh one takes its place,
  so the service has its full pool again at once and the client gets a 503 with a hint;
- each client (the peer address; uvicorn puts the forwarded address there behind a trusted
  proxy) may have ``per_client_active`` computations running and ``per_client_queue`` waiting or
  running; beyond that it gets ``429`` with ``Retry-After``. One client sending expensive requests
  therefore holds at most part of the pool, and the others are still served;
- more than ``max_queue`` requests waiting or running in all -> ``503`` with ``Retry-After``.

Workers are forked from a fork server that imported gpuplan and loaded the catalogs once
(:mod:`gpuplan.api.preload`), so a replacement is ready in milliseconds with warm caches. Each
worker has its own temporary folder, removed when it is stopped. The functions run are top-level
functions (pickled by reference) with picklable arguments: :mod:`gpuplan.api.work`.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import tempfile
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _, current_lang, use_lang, use_surface

PRELOAD = ["gpuplan.api.preload"]   # imported once by the fork server: every worker starts warm


class Busy(Exception):
    """Too much work queued (503), too much from one client (429), or the deadline passed (503)."""

    def __init__(self, message: str, hint: str, status: int = 503, retry_after_s: int = 5):
        super().__init__(message)
        self.message, self.hint, self.status, self.retry_after_s = message, hint, status, retry_after_s


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")   # pragma: no cover - platforms without fork


def _serve(conn: Any, tmpdir: str, env: dict[str, str]) -> None:
    """A worker's loop: receive (function, args, language), send back ("ok", result) or the error. ``env``: the
    server's GPUPLAN_* settings when it started the worker (the fork server keeps the environment of the first
    start, which may be older), so a worker reads the cache folder and offline switch its server reads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C stops the server, and the server stops us
    for key in [k for k in os.environ if k.startswith("GPUPLAN_") and k not in env]:
        del os.environ[key]
    os.environ.update(env)
    tempfile.tempdir = tmpdir
    while True:
        try:
            fn, args, lang = conn.recv()
        except (EOFError, OSError):
            return
        try:
            with use_lang(lang), use_surface("web"):
                reply: tuple[str, Any] = ("ok", fn(*args))
        except GpuplanError as err:
            reply = ("gpuplan", (err.message, err.hint, err.field, err.web_hint, err.kind))
        except Exception as exc:  # noqa: BLE001 - a bug: reported as a 500 by the app, the worker lives on
            reply = ("bug", type(exc).__name__)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send(("bug", type(exc).__name__))
        except (BrokenPipeError, OSError):
            return


@contextlib.contextmanager
def _without_main() -> Any:
    """Start a worker without making it import the parent's ``__main__`` (multiprocessing re-imports the
    main script in each child, which breaks a script that calls ``serve()`` without a ``__main__`` guard);
    workers run gpuplan's functions only."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class _Worker:
    def __init__(self, ctx: Any):
        self.tmpdir = tempfile.mkdtemp(prefix="gpuplan-worker-")
        self.conn, child = ctx.Pipe(duplex=True)
        env = {k: v for k, v in os.environ.items() if k.startswith("GPUPLAN_")}
        self.proc = ctx.Process(target=_serve, args=(child, self.tmpdir, env), daemon=True, name="gpuplan-api-worker")
        with _without_main():
            self.proc.start()
        child.close()

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)
        self.conn.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


@dataclass
class _Ticket:
    client: str
    future: asyncio.Future


@dataclass
class _State:
    """Bookkeeping of one event loop (a TestClient may run the app in several loops over its life)."""

    loop: asyncio.AbstractEventLoop
    waiting: list[_Ticket] = field(default_factory=list)


class Runner:
    """Runs work in the worker pool under the per-request deadline and the per-client limits."""

    def __init__(self, limits: Any):
        self.limits = limits
        self.size = limits.workers
        self._ctx: Any = None
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._pollers: ThreadPoolExecutor | None = None
        self._state: _State | None = None
        self.pending = 0                          # requests waiting or running, all clients
        self._pending_by_client: dict[str, int] = {}
        self._active_by_client: dict[str, int] = {}

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        """Start the pool (blocking: the first start also starts the fork server, ~1-2 s)."""
        if self._ctx is not None:
            return
        self._ctx = _context()
        self._pollers = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="gpuplan-api-wait")
        self._idle = [_Worker(self._ctx) for _ in range(self.size)]

    def stop(self) -> None:
        for w in [*self._idle, *self._busy]:
            w.stop()
        self._idle, self._busy = [], set()
        if self._pollers is not None:
            self._pollers.shutdown(wait=False, cancel_futures=True)
            self._pollers = None
        self._ctx = None

    @property
    def alive(self) -> int:
        """Worker processes alive now (the pool's size, unless one is being replaced)."""
        return sum(w.proc.is_alive() for w in [*self._idle, *self._busy])

    def _loop_state(self) -> _State:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            self._state = _State(loop)
        return self._state

    # ------------------------------------------------------------------ admission
    async def run(self, client: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker, in the request's language; Busy or GpuplanError on failure."""
        if self._ctx is None:
            await asyncio.to_thread(self.start)
        lim = self.limits
        if self.pending >= lim.max_queue:
            raise Busy(_("The server is busy."), _("Retry in a few seconds."))
        if self._pending_by_client.get(client, 0) >= lim.per_client_queue:
            raise Busy(_("Too many requests from your address at once ({n} waiting or running).").format(
                           n=self._pending_by_client[client]),
                       _("Wait for the answers you are already waiting for, then send the next request."),
                       status=429, retry_after_s=lim.retry_after_s)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + lim.time_budget_s
        self.pending += 1
        self._pending_by_client[client] = self._pending_by_client.get(client, 0) + 1
        try:
            worker = await self._acquire(client, deadline)
            try:
                return await self._call(worker, fn, args, deadline)
            finally:
                self._release(client, worker)
        finally:
            self.pending -= 1
            left = self._pending_by_client[client] - 1
            if left:
                self._pending_by_client[client] = left
            else:
                del self._pending_by_client[client]

    def _too_late(self) -> Busy:
        return Busy(_("The request took longer than this server's {budget:g} s budget.").format(
                        budget=self.limits.time_budget_s),
                    _("Narrow the search: set constraints.regions, constraints.max_gpus or a fixed hardware.gpu."))

    async def _acquire(self, client: str, deadline: float) -> _Worker:
        state = self._loop_state()
        ticket = _Ticket(client, state.loop.create_future())
        state.waiting.append(ticket)
        self._dispatch()
        done, _pending = await asyncio.wait({ticket.future}, timeout=max(0.0, deadline - state.loop.time()))
        if not done:
            ticket.future.cancel()
            if ticket in state.waiting:
                state.waiting.remove(ticket)
            raise self._too_late()
        return ticket.future.result()

    def _dispatch(self) -> None:
        """Hand idle workers to the oldest waiting requests whose client is under its active limit."""
        state = self._state
        if state is None:
            return
        per_client = self.limits.client_active
        for ticket in list(state.waiting):
            if not self._idle:
                return
            if ticket.future.done():
                state.waiting.remove(ticket)
                continue
            if self._active_by_client.get(ticket.client, 0) >= per_client:
                continue
            state.waiting.remove(ticket)
            worker = self._idle.pop()
            self._busy.add(worker)
            self._active_by_client[ticket.client] = self._active_by_client.get(ticket.client, 0) + 1
            ticket.future.set_result(worker)

    def _release(self, client: str, worker: _Worker | None) -> None:
        left = self._active_by_client.get(client, 1) - 1
        if left > 0:
            self._active_by_client[client] = left
        else:
            self._active_by_client.pop(client, None)
        if worker is not None and worker in self._busy:
            self._busy.discard(worker)
            if worker.proc.is_alive():
                self._idle.append(worker)
            else:
                self._replace(worker)
        self._dispatch()

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker and start a fresh one in its place (forked warm from the fork server)."""
        self._busy.discard(worker)
        worker.stop()
        if self._ctx is not None:
            self._idle.append(_Worker(self._ctx))

    # ------------------------------------------------------------------ one computation
    async def _call(self, worker: _Worker, fn: Callable[..., Any], args: tuple, deadline: float) -> Any:
        loop = asyncio.get_running_loop()
        try:
            worker.conn.send((fn, args, current_lang()))
            ready = await loop.run_in_executor(self._pollers, worker.conn.poll, max(0.0, deadline - loop.time()))
            if not ready:
                self._replace(worker)
                raise self._too_late()
            status, payload = worker.conn.recv()
        except asyncio.CancelledError:   # the client went away: its computation is not wanted any more
            self._replace(worker)
            raise
        except (EOFError, OSError):
            self._replace(worker)
            raise Busy(_("The computation stopped unexpectedly."), _("Retry in a few seconds.")) from None
        if status == "ok":
            return payload
        if status == "gpuplan":
            message, hint, fld, web_hint, kind = payload
            raise GpuplanError(message, hint, field=fld, web_hint=web_hint, kind=kind)
        raise RuntimeError(f"worker: {payload}")
