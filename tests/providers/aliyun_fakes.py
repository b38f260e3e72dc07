"""Shared fakes for the live-refresh tests (fixtures are registered by conftest.py).

Safety first: the Alibaba credential chain must never try the ECS metadata service (100.100.100.200)
and no test may open a socket to anything but loopback. The SDK reads its environment switches at
import time, so they are set here, before any test imports it, and a socket guard fails any test
that tries to reach a non-loopback address.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

os.environ["ALIBABA_CLOUD_ECS_METADATA_DISABLED"] = "true"
os.environ["ALIBABA_CLOUD_CLI_PROFILE_DISABLED"] = "true"

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "aliyun"
AK_ID = "AKID-test-0000"
AK_SECRET = "secret-test-DO-NOT-LEAK-7f3a"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in _LOOPBACK:
            raise AssertionError(f"test tried to reach {host!r}: no network in tests")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real credentials, profile files or cache folder can leak into a test."""
    for name in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
                 "ALIBABA_CLOUD_CREDENTIALS_FILE", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CREDENTIALS_URI",
                 "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                 "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    try:  # the SDK keeps import-time copies of these; pin them too
        from alibabacloud_credentials.utils import auth_constant as ac
        from alibabacloud_credentials.utils import auth_util as au
    except ImportError:
        return
    monkeypatch.setattr(au, "environment_ecs_metadata_disabled", "true")
    monkeypatch.setattr(au, "environment_cli_profile_disabled", "true")
    for attr in ("environment_access_key_id", "environment_access_key_secret", "environment_security_token",
                 "environment_credentials_file", "environment_credentials_uri", "environment_oidc_token_file"):
        monkeypatch.setattr(au, attr, None, raising=False)
    monkeypatch.setattr(au, "enable_oidc_credential", False, raising=False)
    monkeypatch.setattr(ac, "HOME", str(home), raising=False)


def load_fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _fill_region(obj: Any, region: str) -> Any:
    text = json.dumps(obj).replace("{region}", region)
    return json.loads(text)


class FakeTransport:
    """Stands in for ``client.call_api``: answers like the documented API, from the JSON fixtures.

    ``fail`` maps an action to a list of exceptions (or callables returning a body) consumed one per
    call before the normal answer; ``override`` maps an action to a body returned instead.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail: dict[str, list[Any]] = {}
        self.always_fail: dict[str, BaseException] = {}
        self.override: dict[str, Any] = {}
        self.delay_s = 0.0
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def answer(self, action: str, query: dict[str, Any]) -> Any:
        region = str(query.get("RegionId") or "cn-hangzhou")
        if action in self.override:
            return copy.deepcopy(self.override[action])
        if action == "DescribeRegions":
            return load_fixture("describe_regions.json")
        if action == "DescribeInstanceTypes":
            page = "2" if query.get("NextToken") else "1"
            return load_fixture(f"describe_instance_types_page{page}.json")
        if action == "DescribeAvailableResource":
            mode = ("spot" if query.get("SpotStrategy") == "SpotAsPriceGo"
                    else "prepaid" if query.get("InstanceChargeType") == "PrePaid" else "postpaid")
            return _fill_region(load_fixture(f"describe_available_resource_{mode}.json"), region)
        if action == "DescribePrice":
            key = f"{query.get('InstanceType')}|{query.get('PriceUnit')}"
            table = load_fixture("describe_price.json")
            if key not in table:
                from alibabacloud_tea_openapi.exceptions import ClientException

                raise ClientException(status_code=400, code="InvalidInstanceType.ValueNotSupported",
                                      message="The specified InstanceType does not exist.", request_id="x")
            return table[key]
        if action == "DescribeSpotPriceHistory":
            table = load_fixture("describe_spot_price_history.json")
            body = table.get(str(query.get("InstanceType")),
                             {"RequestId": "x", "Currency": "CNY", "SpotPrices": {"SpotPriceType": []}})
            return _fill_region(body, region)
        raise AssertionError(f"unexpected action {action}")

    def __call__(self, params: Any, request: Any, runtime: Any) -> dict[str, Any]:
        action = params.action
        query = dict(request.query or {})
        with self._lock:
            self.calls.append((action, query))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            pending = self.fail.get(action)
            injected = pending.pop(0) if pending else None
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            if action in self.always_fail:
                raise self.always_fail[action]
            if isinstance(injected, BaseException):
                raise injected
            body = injected() if callable(injected) else self.answer(action, query)
            return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": body}
        finally:
            with self._lock:
                self.active -= 1

    def actions(self, name: str) -> list[dict[str, Any]]:
        return [q for a, q in self.calls if a == name]


def sdk_factory(transport: FakeTransport):
    """A client_factory that builds the real SDK client with explicit fake credentials and the fake transport."""
    from alibabacloud_ecs20140526.client import Client as EcsClient
    from alibabacloud_tea_openapi import models as open_api_models

    def make(region_id: str) -> Any:
        client = EcsClient(open_api_models.Config(access_key_id=AK_ID, access_key_secret=AK_SECRET,
                                                  region_id=region_id))
        client.call_api = transport
        return client

    return make


@pytest.fixture
def transport() -> FakeTransport:
    pytest.importorskip("alibabacloud_ecs20140526")
    return FakeTransport()


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"
