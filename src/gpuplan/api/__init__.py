"""REST API and one-page web app (``pip install 'gpuplan[web]'``; ``gpuplan serve``).

FastAPI and uvicorn are imported only when the server is created, so ``import gpuplan`` and the
CLI never need them.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

if TYPE_CHECKING:  # pragma: no cover
    from gpuplan.api.limits import Limits

__all__ = ["create_app", "serve", "is_loopback"]

WEB_HINT = N_("Install the web extra: pip install 'gpuplan[web]' (FastAPI and uvicorn).")


def create_app(limits: "Limits | None" = None, **kw: Any):
    """The FastAPI application (see :mod:`gpuplan.api.app`)."""
    try:
        from gpuplan.api.app import create_app as _create
    except ImportError as exc:
        raise GpuplanError(_("The web API needs {name}, which is not installed.").format(name=exc.name or 'FastAPI'), hint=_(WEB_HINT)) from None
    return _create(limits, **kw)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(host: str = "127.0.0.1", port: int = 8000, *, workers: int = 1, log_level: str = "info",
          limits: "Limits | None" = None) -> None:
    """Run the API and the page with uvicorn until interrupted (what ``gpuplan serve`` calls).

    Binds to loopback by default. Bound elsewhere (``--host 0.0.0.0``) the Host-header check is
    off: put it behind a proxy you trust, since the API has no authentication.
    """
    if not (0 <= int(port) <= 65535):
        raise GpuplanError(_("Port {port} is out of range.").format(port=port), hint=_("Use a port between 1 and 65535, e.g. 8000."))
    try:
        import uvicorn
    except ImportError:
        raise GpuplanError(_("The web server needs uvicorn, which is not installed."), hint=_(WEB_HINT)) from None
    import os

    from gpuplan.api.middleware import LOOPBACK_HOSTS

    # A shared server never fetches model configs named in requests unless the operator says so
    # (GPUPLAN_ONLINE=1): model ids from the network must not trigger downloads by default (catalog/configs/hub.py).
    if os.environ.get("GPUPLAN_ONLINE", "").strip().lower() not in ("1", "true", "yes", "on"):
        os.environ.setdefault("GPUPLAN_OFFLINE", "1")
    allowed = LOOPBACK_HOSTS if is_loopback(host) else None
    if workers > 1:
        # uvicorn starts workers from an import string; the factory reads its settings from the environment.

        os.environ["GPUPLAN_API_ALLOW_ANY_HOST"] = "0" if allowed else "1"
        uvicorn.run("gpuplan.api.app:app_from_env", factory=True, host=host, port=int(port), workers=workers,
                    log_level=log_level, access_log=True)
        return
    app = create_app(limits, allowed_hosts=allowed)
    uvicorn.run(app, host=host, port=int(port), log_level=log_level, access_log=True)
