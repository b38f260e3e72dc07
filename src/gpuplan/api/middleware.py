"""One small ASGI middleware that guards every request before FastAPI sees it.

- **Host check**: on a loopback-bound server only ``localhost``/``127.0.0.1``/``[::1]`` Host headers
  are served (a web page on another site cannot reach the API through DNS rebinding).
- **Body limits** for POST/PUT/PATCH: the body is read up to ``max_body_bytes`` (413 beyond, before
  any parsing: a declared Content-Length is refused before a byte is read), must be JSON (415
  otherwise: this also stops cross-site form posts; ``/api/workload/parse`` also takes YAML text)
  and may nest at most ``max_json_depth`` levels (422).
- **Security headers** on every response: a strict Content-Security-Policy (the page loads only
  its own script and style: nothing from a CDN), no sniffing, no framing, no referrer.

Request bodies are never logged.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from gpuplan.i18n import _, lang_from_request, use_lang, use_surface

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                 b"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)

_BODY_METHODS = {"POST", "PUT", "PATCH"}
# Paths that also take a workload file's text (YAML); every other body must be JSON.
YAML_PATHS = frozenset({"/api/workload/parse"})
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})


def _host_name(raw: str) -> str:
    raw = raw.strip().lower()
    if raw.startswith("["):  # [::1]:8000
        return raw[1:raw.find("]")] if "]" in raw else raw
    return raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw


def max_nesting(body: bytes, limit: int) -> int:
    """Deepest bracket nesting of a JSON text (strings skipped); stops once past ``limit``."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return 0  # cannot be deeper than the number of brackets
    depth = deepest = 0
    in_str = escaped = False
    for ch in body:
        if in_str:
            if escaped:
                escaped = False
            elif ch == 0x5C:  # backslash
                escaped = True
            elif ch == 0x22:  # quote
                in_str = False
        elif ch == 0x22:
            in_str = True
        elif ch in (0x5B, 0x7B):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in (0x5D, 0x7D):
            depth -= 1
    return deepest


class GuardMiddleware:
    def __init__(self, app: Any, *, max_body_bytes: int, max_json_depth: int,
                 allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth
        self.allowed_hosts = frozenset(allowed_hosts) if allowed_hosts is not None else None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        # The page's language: ?lang=zh|en, else Accept-Language. Errors (and text made while computing)
        # come out in it; JSON keys never change. Hints suggest actions on the page, not CLI commands.
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        lang = lang_from_request((query.get("lang") or [None])[0], headers.get("accept-language"))
        with use_lang(lang), use_surface("web"):
            await self._guarded(scope, receive, send, headers)

    async def _guarded(self, scope: dict, receive: Any, send: Any, headers: dict[str, str]) -> None:

        async def send_secure(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + list(SECURITY_HEADERS)
            await send(message)

        if self.allowed_hosts is not None and _host_name(headers.get("host", "")) not in self.allowed_hosts:
            await _reply(send_secure, 400, _("Unexpected Host header."),
                         _("This server only answers requests addressed to localhost; start it with "
                           "--host 0.0.0.0 to serve other names."))
            return
        if scope.get("method") not in _BODY_METHODS:
            await self.app(scope, receive, send_secure)
            return

        declared = headers.get("content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_body_bytes
            except ValueError:
                too_big = False
            if too_big:
                await _reply(send_secure, 413, _("The request body is larger than {limit} bytes.").format(
                    limit=self.max_body_bytes), _("A workload is a few hundred bytes: send only the workload keys."))
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await _reply(send_secure, 413, _("The request body is larger than {limit} bytes.").format(
                    limit=self.max_body_bytes), _("A workload is a few hundred bytes: send only the workload keys."))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        yaml_ok = scope.get("path") in YAML_PATHS and ctype in YAML_TYPES
        if body and ctype != "application/json" and not ctype.endswith("+json") and not yaml_ok:
            await _reply(send_secure, 415, _("The request body must be JSON."),
                         _("Send Content-Type: application/json with one JSON object of workload keys."))
            return
        if not yaml_ok and max_nesting(body, self.max_json_depth) > self.max_json_depth:
            await _reply(send_secure, 422, _("The request body nests deeper than {depth} levels.").format(
                depth=self.max_json_depth), _("A workload nests three or four levels deep."), field=None)
            return

        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send_secure)


async def _reply(send: Any, status: int, message: str, hint: str, field: str | None = None) -> None:
    payload = json.dumps({"error": message, "hint": hint, "field": field}, ensure_ascii=False).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})
