"""A whole refresh over real HTTP to a loopback server: the SDK signs, sends and parses for real.

The server recomputes the ACS3-HMAC-SHA256 signature (Alibaba Cloud V3 request signature:
https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature) from
what it received and the test secret, and answers 403 SignatureDoesNotMatch when it differs, so a
broken signing path fails the refresh.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

import pytest

from gpuplan.providers import cache, refresh

from aliyun_fakes import AK_ID, AK_SECRET, FakeTransport


def _enc(text: str) -> str:
    return quote(text, safe="-_.~")


def expected_signature(method: str, path: str, query: str, headers: dict[str, str], signed: list[str],
                       secret: str) -> str:
    pairs = sorted(parse_qsl(query, keep_blank_values=True))
    canonical_query = "&".join(f"{_enc(k)}={_enc(v)}" for k, v in pairs)
    canonical_headers = "".join(f"{h}:{headers[h].strip()}\n" for h in signed)
    canonical = "\n".join([method, path or "/", canonical_query, canonical_headers, ";".join(signed),
                           headers["x-acs-content-sha256"]])
    to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
    return hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    answers = FakeTransport()
    seen: list[dict[str, str]] = []

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        url = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        auth = headers.get("authorization", "")
        fields = dict(part.split("=", 1) for part in auth.removeprefix("ACS3-HMAC-SHA256 ").split(","))
        signed = fields.get("SignedHeaders", "").split(";")
        good = expected_signature("POST", url.path, url.query, headers, signed, AK_SECRET)
        type(self).seen.append({"action": headers.get("x-acs-action", ""), "auth": auth,
                                "version": headers.get("x-acs-version", ""), "raw": self.path + json.dumps(headers)})
        if fields.get("Credential") != AK_ID or not hmac.compare_digest(fields.get("Signature", ""), good):
            self._reply(403, {"Code": "SignatureDoesNotMatch", "Message": "bad signature", "RequestId": "sig"})
            return
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        try:
            body = self.answers.answer(headers["x-acs-action"], query)
        except Exception:  # noqa: BLE001 - the fake's 'not sold' answer
            self._reply(400, {"Code": "InvalidInstanceType.ValueNotSupported", "Message": "no", "RequestId": "n"})
            return
        self._reply(200, body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    pytest.importorskip("alibabacloud_ecs20140526")
    _Handler.seen = []
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


def _factory(port: int, secret: str = AK_SECRET):
    from alibabacloud_ecs20140526.client import Client as EcsClient
    from alibabacloud_tea_openapi import models as open_api_models

    def make(region_id: str):
        return EcsClient(open_api_models.Config(access_key_id=AK_ID, access_key_secret=secret, region_id=region_id,
                                                protocol="http", endpoint=f"127.0.0.1:{port}",
                                                read_timeout=5000, connect_timeout=2000))

    return make


def test_refresh_over_loopback_http_with_real_signing(server: HTTPServer, tmp_path: Path) -> None:
    out = io.StringIO()
    rc = refresh(["cn-shanghai"], False, cache_dir=tmp_path, client_factory=_factory(server.server_port),
                 progress=False, out=out, max_workers=2)
    assert rc == 0, out.getvalue()
    actions = {s["action"] for s in _Handler.seen}
    assert actions == {"DescribeRegions", "DescribeInstanceTypes", "DescribeAvailableResource", "DescribePrice",
                       "DescribeSpotPriceHistory"}
    assert all(s["version"] == "2014-05-26" for s in _Handler.seen)
    assert all(s["auth"].startswith(f"ACS3-HMAC-SHA256 Credential={AK_ID},") for s in _Handler.seen)
    assert not any(AK_SECRET in s["raw"] for s in _Handler.seen)  # the secret signs, it is never sent
    with (cache.current_dir(tmp_path, "alibaba") / "prices.csv").open(newline="") as fh:
        rows = {(r["instance_type"], r["billing"]): r for r in csv.DictReader(fh)}
    assert rows[("ecs.gn7i-c8g1.2xlarge", "payg")]["price"] == "9.53"
    assert rows[("ecs.gn7i-c8g1.2xlarge", "payg")]["source"] == \
        f"http://127.0.0.1:{server.server_port}/?Action=DescribePrice"


def test_a_wrong_secret_is_refused_by_signature_check(server: HTTPServer, tmp_path: Path) -> None:
    out = io.StringIO()
    rc = refresh(["cn-shanghai"], False, cache_dir=tmp_path, client_factory=_factory(server.server_port, "wrong"),
                 progress=False, out=out)
    assert rc == 2
    assert "refused the credentials (SignatureDoesNotMatch)" in out.getvalue()
    assert not (tmp_path / "clouds").exists()
