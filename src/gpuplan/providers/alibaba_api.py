"""Alibaba Cloud ECS OpenAPI access for the live refresh: the SDK (imported lazily) and credentials, clients
per region, calls with retries and a deadline (:class:`_Ctx`), the documented-shape checks of every answer, and
API errors turned into gpuplan's messages. The calls themselves are in gpuplan.providers.alibaba."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuplan.providers.base import ConfigError, RefreshFailed
from gpuplan.providers.retry import THROTTLED, TIMEOUT, call_with_retries, classify, error_code
from gpuplan.i18n import _

CLOUD = "alibaba"
HOME_REGION = "cn-hangzhou"  # region used for the global calls (DescribeRegions, DescribeInstanceTypes)

NO_CREDENTIALS = (
    "No Alibaba Cloud credentials found: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET "
    "(plus ALIBABA_CLOUD_SECURITY_TOKEN for STS), or configure a profile with `aliyun configure`."
)
NO_SDK = "The Alibaba Cloud SDK is not installed."
NO_SDK_HINT = "Install it with: pip install 'gpuplan[aliyun]'  (alibabacloud_ecs20140526)"


# --------------------------------------------------------------------------- SDK and credentials


def _sdk() -> tuple[Any, Any, Any]:
    try:
        from alibabacloud_ecs20140526 import models as ecs_models
        from alibabacloud_ecs20140526.client import Client as EcsClient
        from alibabacloud_tea_openapi import models as open_api_models
    except ImportError:
        raise ConfigError(NO_SDK, hint=NO_SDK_HINT) from None
    return EcsClient, ecs_models, open_api_models


def resolve_credential() -> Any:
    """A credential client from the environment or Alibaba Cloud's default credential chain.

    Order: ``ALIBABA_CLOUD_ACCESS_KEY_ID``/``_SECRET`` (+ ``_SECURITY_TOKEN``), then the SDK's default
    chain (CLI profile ``~/.aliyun/config.json``, ``~/.alibabacloud/credentials.ini``, an ECS RAM role
    only when ``ALIBABA_CLOUD_ECS_METADATA_DISABLED=false`` is set, credentials URI). The values stay inside the
    SDK object: they are never printed, logged or written. Raises ConfigError (exit 2) when none work.
    """
    _sdk()
    import logging

    from alibabacloud_credentials import models as cred_models
    from alibabacloud_credentials.client import Client as CredentialClient
    from alibabacloud_credentials.utils import auth_util

    logging.getLogger("credentials").setLevel(logging.CRITICAL)  # the SDK's own handler prints chain noise
    if os.environ.get("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "").strip().lower() != "false":
        # Off ECS, probing the metadata service (100.100.100.200) only costs time; on ECS with a RAM
        # role, set ALIBABA_CLOUD_ECS_METADATA_DISABLED=false to let the chain use it.
        auth_util.environment_ecs_metadata_disabled = "true"

    key_id = os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID", "")
    secret = os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "")
    token = os.environ.get("ALIBABA_CLOUD_SECURITY_TOKEN", "")
    if key_id and secret:
        cfg = cred_models.Config(type="sts" if token else "access_key", access_key_id=key_id,
                                 access_key_secret=secret, security_token=token or None)
        return CredentialClient(cfg)
    chain = CredentialClient()
    try:
        chain.get_credential()
    except Exception:  # noqa: BLE001 - the chain's own message may name files; ours says what to set
        raise ConfigError(NO_CREDENTIALS) from None
    return chain


def default_client_factory(read_timeout_ms: int = 10_000, connect_timeout_ms: int = 5_000) -> Callable[[str], Any]:
    """A factory of real ECS clients sharing one credential (resolved now, on the calling thread)."""
    EcsClient, _models, open_api_models = _sdk()
    credential = resolve_credential()

    def make(region_id: str) -> Any:
        cfg = open_api_models.Config(credential=credential, region_id=region_id,
                                     read_timeout=read_timeout_ms, connect_timeout=connect_timeout_ms)
        return EcsClient(cfg)

    return make


def endpoint_of(client: Any, region_id: str) -> str:
    ep = getattr(client, "_endpoint", None)
    return ep if isinstance(ep, str) and ep else f"ecs.{region_id}.aliyuncs.com"


def source_url(client: Any, region_id: str, action: str) -> str:
    """Where a row came from: the endpoint and API action, as a URL (no credentials, no signature)."""
    scheme = getattr(client, "_protocol", None) or "https"
    return f"{str(scheme).lower()}://{endpoint_of(client, region_id)}/?Action={action}"


# --------------------------------------------------------------------------- response checks


class Malformed(Exception):
    """The API answered 200 but not in the documented shape."""


def _body(response: Any, action: str) -> dict[str, Any]:
    body = getattr(response, "body", None)
    data = body.to_map() if body is not None and hasattr(body, "to_map") else None
    if not isinstance(data, dict):
        raise Malformed(f"{action}: empty response body")
    return data


def _path(data: Any, *keys: str, action: str, required: bool = True) -> Any:
    cur = data
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            if required:
                raise Malformed(f"{action}: missing {'.'.join(keys)}")
            return None
        cur = cur[k]
    return cur


def _list(data: Any, *keys: str, action: str) -> list[dict[str, Any]]:
    value = _path(data, *keys, action=action, required=False)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise Malformed(f"{action}: {'.'.join(keys)} is not a list of objects")
    return value


def _number(value: Any, what: str, action: str) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise Malformed(f"{action}: {what} is not a number: {value!r}") from None
    if f != f or f < 0:  # NaN or negative
        raise Malformed(f"{action}: {what} is not a valid number: {value!r}")
    return f


# --------------------------------------------------------------------------- the provider


@dataclass
class _Ctx:
    ecs_models: Any
    clients: dict[str, Any]
    sleep: Callable[[float], None]
    attempts: int
    warnings: list[str]
    lock: threading.Lock
    deadline: float | None = None  # time.monotonic() after which no retry starts
    notify: Callable[[str], None] = lambda text: None

    def call(self, region: str, method: str, request: Any, action: str) -> dict[str, Any]:
        import time

        client = self.clients[region]
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise RefreshFailed(_("The refresh ran out of time before {action} in {region}; the previous cache was kept.").format(action=action, region=region), hint=_("Check the network, or give it longer with --timeout."))

        def retrying(attempt: int, kind: str, delay_s: float) -> None:
            self.notify(f"{action} in {region}: {kind}; retry {attempt}/{self.attempts - 1} in {delay_s:.1f} s")

        try:
            response = call_with_retries(lambda: getattr(client, method)(request), attempts=self.attempts,
                                         sleep=self.sleep, deadline=self.deadline, on_retry=retrying)
        except (Malformed, RefreshFailed):
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a clear message (never the SDK's text)
            raise _api_failure(exc, action, region) from None
        try:
            return _body(response, action)
        except Malformed:
            raise
        except Exception as exc:  # noqa: BLE001 - SDK model parsing of an odd body
            raise Malformed(f"{action}: unreadable response ({type(exc).__name__})") from None

    def warn(self, text: str) -> None:
        with self.lock:
            self.warnings.append(text)


class ItemError(Exception):
    """A permanent per-item API error (e.g. a type not sold with that billing): skipped with a warning."""


_ITEM_CODES = ("InvalidInstanceType", "InvalidSystemDiskCategory", "PriceNotFound", "InvalidParam",
               "InvalidParameter", "Invalid.", "InvalidResourceType", "Zone.NotOnSale", "OperationDenied.NoStock")
_AUTH_CODES = ("InvalidAccessKeyId", "SignatureDoesNotMatch", "IncompleteSignature", "InvalidSecurityToken",
               "Forbidden", "NoPermission", "InvalidAccessKeySecret")


def _api_failure(exc: Exception, action: str, region: str) -> Exception:
    kind = classify(exc)
    code = error_code(exc)
    where = f"{action} in {region}"
    if kind == THROTTLED:
        return RefreshFailed(_("Alibaba Cloud throttled the refresh ({code}) at {where}, even after retries; the previous cache was kept.").format(code=code or 'Throttling', where=where),
                             hint=_("Wait a minute and run it again, or refresh fewer regions (--region)."))
    if kind == TIMEOUT:
        return RefreshFailed(_("Alibaba Cloud did not answer in time at {where}; the previous cache was kept.").format(where=where),
                             hint=_("Check the network and run it again."))
    if kind is not None:
        return RefreshFailed(_("Alibaba Cloud failed ({code} error) at {where}, even after retries; the previous cache was kept.").format(code=code or kind, where=where), hint=_("Try again later."))
    if code.startswith(_AUTH_CODES):
        return ConfigError(_("Alibaba Cloud refused the credentials ({code}) at {where}.").format(code=code, where=where),
                           hint=_("Check ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET; the RAM user needs ecs:Describe* rights."))
    if code.startswith(_ITEM_CODES):
        return ItemError(f"{where}: {code}")
    return RefreshFailed(_("Alibaba Cloud rejected {where} ({code}); the previous cache was kept.").format(where=where, code=code or type(exc).__name__), hint=_("Run again; report it if it persists."))
