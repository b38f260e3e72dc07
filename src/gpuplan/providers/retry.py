"""Retries with exponential backoff for throttling, 5xx and timeouts; everything else fails at once.

Alibaba Cloud's throttling answers carry codes starting with ``Throttling`` (``Throttling``,
``Throttling.User``, ``Throttling.Api``; https://api.alibabacloud.com/document/Ecs/2014-05-26/errorCode)
and the V2 SDK raises ``ThrottlingException`` when the gateway sends a retry-after header. Server
errors are HTTP 5xx (``ServerException``). The SDK wraps transport errors (read/connect timeouts from
``requests``) in ``UnretryableException`` with ``inner_exception`` set. The classification below
works on names and attributes, so it needs no SDK import and also serves botocore's errors.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

THROTTLED = "throttled"
SERVER = "server"
TIMEOUT = "timeout"
NETWORK = "network"

_TIMEOUT_NAMES = ("Timeout", "ReadTimeout", "ConnectTimeout", "TimeoutError", "ReadTimeoutError",
                  "ConnectTimeoutError")
_NETWORK_NAMES = ("ConnectionError", "NewConnectionError", "EndpointConnectionError", "ProtocolError",
                  "RemoteDisconnected", "ConnectionResetError", "ConnectionRefusedError")


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "statusCode"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)  # botocore ClientError
    if isinstance(response, dict):
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(value, int):
            return value
    return None


def error_code(exc: BaseException) -> str:
    """The API error code of an SDK exception ('' if none): Alibaba's ``code`` or botocore's Error.Code."""
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code not in ("", "None"):
        return code
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", "") or "")
    return ""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 8:
        seen.append(cur)
        cur = getattr(cur, "inner_exception", None) or cur.__cause__ or cur.__context__
    return seen


def classify(exc: BaseException) -> str | None:
    """Which transient failure ``exc`` is (THROTTLED, SERVER, TIMEOUT, NETWORK), or None if permanent."""
    for e in _chain(exc):
        name = type(e).__name__
        code = error_code(e)
        status = _status(e)
        if name == "ThrottlingException" or code.startswith("Throttling") or code in (
                "RequestLimitExceeded", "TooManyRequestsException") or status == 429:
            return THROTTLED
        if name == "ServerException" or (status is not None and 500 <= status < 600) or code in (
                "ServiceUnavailable", "InternalError"):
            return SERVER
        if name in _TIMEOUT_NAMES or isinstance(e, TimeoutError):
            return TIMEOUT
        if name in _NETWORK_NAMES or isinstance(e, ConnectionError):
            return NETWORK
    return None


def backoff_s(attempt: int, base_s: float, cap_s: float, retry_after_s: float | None = None) -> float:
    """Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015):
    uniform(0, min(cap, base * 2**attempt)), never less than a server-sent retry-after."""
    delay = random.uniform(0, min(cap_s, base_s * (2 ** attempt)))
    if retry_after_s:
        delay = max(delay, min(cap_s, retry_after_s))
    return delay


def call_with_retries(fn: Callable[[], T], *, attempts: int = 5, base_s: float = 0.5, cap_s: float = 10.0,
                      sleep: Callable[[float], None] = time.sleep, deadline: float | None = None,
                      on_retry: Callable[[int, str, float], None] | None = None,
                      clock: Callable[[], float] = time.monotonic) -> T:
    """Call ``fn``; on a transient failure wait and try again, up to ``attempts`` calls in all.

    ``deadline`` (a ``clock()`` time) ends the retries early: no wait runs past it. ``on_retry(attempt,
    kind, delay_s)`` is told before each wait, so a caller can show progress instead of silence.
    The last transient exception (or any permanent one) propagates unchanged; the caller turns it
    into a user message.
    """
    for attempt in range(attempts):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised when permanent
            kind = classify(exc)
            if kind is None or attempt == attempts - 1:
                raise
            retry_after = getattr(exc, "retry_after", None)
            retry_after_s = float(retry_after) / 1000.0 if isinstance(retry_after, (int, float)) else None
            delay = backoff_s(attempt, base_s, cap_s, retry_after_s)
            if deadline is not None and clock() + delay >= deadline:
                raise
            if on_retry is not None:
                on_retry(attempt + 1, kind, delay)
            sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
