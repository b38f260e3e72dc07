"""`gpuplan catalog refresh` for Alibaba Cloud, driving the real SDK client with a fake transport."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import sys
from pathlib import Path

import pytest

from gpuplan.providers import cache, refresh, status
from gpuplan.providers.alibaba_rows import map_gpu_spec, normalize_spec
from gpuplan.providers.base import INSTANCE_COLUMNS, PRICE_COLUMNS

from aliyun_fakes import AK_ID, AK_SECRET, FakeTransport, sdk_factory

NOW = dt.datetime(2026, 11, 30, 8, 0, 0, tzinfo=dt.timezone.utc)


def run_refresh(transport: FakeTransport, cache_dir: Path, regions=("cn-shanghai",), **kw) -> tuple[int, str]:
    out = io.StringIO()
    kw.setdefault("sleep", lambda s: None)
    kw.setdefault("now", lambda: NOW)
    rc = refresh(list(regions), False, cache_dir=cache_dir, client_factory=sdk_factory(transport), progress=False,
                 out=out, **kw)
    return rc, out.getvalue()


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def snapshot_files(cache_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(cache_dir)): p.read_bytes() for p in sorted(cache_dir.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------- mapping


@pytest.mark.parametrize(
    ("spec", "mem", "expected"),
    [
        ("NVIDIA A10", 24, "A10-24GB"),
        ("NVIDIA A10*1/6", 4, "A10-24GB"),
        ("NVIDIA A100 80G", 80, "A100-SXM4-80GB"),
        ("NVIDIA A100", 40, "A100-SXM4-40GB"),
        ("NVIDIA L20", 48, "L20-48GB"),
        ("NVIDIA V100", 16, "V100-SXM2-16GB"),
        ("NVIDIA V100", 32, "V100-SXM2-32GB"),
        ("NVIDIA T4", 16, "T4-16GB"),
        ("NVIDIA H20", 96, "H20-96GB"),
        ("NVIDIA A30", 24, "A30-24GB"),
        ("NVIDIA P4", 8, "P4-8GB"),
    ],
)
def test_gpuspec_strings_map_to_canonical_ids(spec: str, mem: float, expected: str) -> None:
    match = map_gpu_spec(spec, mem)
    assert match is not None and match.gpu == expected


@pytest.mark.parametrize("spec", ["G49", "G49E", "GPU H", "GPU H-e", "L20N", "vGPU8", "NVIDIA G59", ""])
def test_internal_gpu_names_are_not_guessed(spec: str) -> None:
    assert map_gpu_spec(spec, 48) is None


def test_normalize_spec() -> None:
    assert normalize_spec("  NVIDIA   A100 80G ") == "A100 80G"
    assert normalize_spec("NVIDIA A10*1/12") == "A10"


# ------------------------------------------------------------------------------------------- happy path


def test_refresh_writes_the_bundled_schema(transport: FakeTransport, cache_dir: Path) -> None:
    rc, out = run_refresh(transport, cache_dir)
    assert rc == 0, out
    folder = cache.current_dir(cache_dir, "alibaba")
    cols, prices = read_rows(folder / "prices.csv")
    assert tuple(cols) == PRICE_COLUMNS
    by_key = {(r["instance_type"], r["billing"]): r for r in prices}
    payg = by_key[("ecs.gn7i-c8g1.2xlarge", "payg")]
    # the instanceType line of DetailInfos (9.53), not the order total with the system disk (9.86)
    assert payg["price"] == "9.53" and payg["unit"] == "hour" and payg["currency"] == "CNY"
    assert payg["as_of"] == "2026-11-30" and payg["confidence"] == "confirmed" and payg["region"] == "cn-shanghai"
    assert payg["source"] == "https://ecs.cn-shanghai.aliyuncs.com/?Action=DescribePrice"
    # every refreshed row is an official quote of the refresh date, and the loader reads it so
    assert {(r["kind"], r["basis"], r["rule"], r["as_of"]) for r in prices} == {("official", "quoted", "", "2026-11-30")}
    from gpuplan.catalog.prices.prices import offers_for
    live = offers_for("ecs.gn7i-c8g1.2xlarge", region="cn-shanghai", billing="payg", cache_dir=cache_dir)[0]
    assert (live.origin, live.kind, live.basis, live.as_of.isoformat(), live.price) == (
        "cache", "official", "quoted", "2026-11-30", 9.53)
    assert by_key[("ecs.gn7i-c8g1.2xlarge", "subscription")]["price"] == "4575.66"
    assert by_key[("ecs.gn7i-c8g1.2xlarge", "subscription")]["unit"] == "month"
    spot = by_key[("ecs.gn7i-c8g1.2xlarge", "spot")]
    assert spot["price"] == "1.95"  # latest price of the cheapest zone (e), not the older 2.1
    assert spot["source"].endswith("Action=DescribeSpotPriceHistory")
    gn7e = by_key[("ecs.gn7e-c16g1.4xlarge", "payg")]
    assert gn7e["price"] == "34.74" and "list price 40" in gn7e["notes"]
    assert ("ecs.gn8v.4xlarge", "payg") in by_key
    assert not any(r["instance_type"] == "ecs.g7.large" for r in prices)  # no GPU
    assert not any(r["instance_type"] == "ecs.gn9x-c4g1.xlarge" for r in prices)  # unmapped GPU

    cols, instances = read_rows(folder / "instances.csv")
    assert tuple(cols) == INSTANCE_COLUMNS
    inst = {r["instance_type"]: r for r in instances}
    gn7i = inst["ecs.gn7i-c8g1.2xlarge"]
    assert (gn7i["gpu"], gn7i["gpu_count"], gn7i["gpu_memory_gib"], gn7i["vcpus"], gn7i["memory_gib"]) == (
        "A10-24GB", "1", "24", "8", "30")
    assert gn7i["network_gbit_s"] == "16"  # 16384000 Kbit/s
    assert gn7i["interconnect"] == "pcie"  # kept from the bundled snapshot (the API does not say)
    assert "Action=DescribeInstanceTypes" in gn7i["sources"] and "alibabacloud.com" in gn7i["sources"]
    assert "cn-shanghai" in gn7i["region_notes"]
    gn8v = inst["ecs.gn8v.4xlarge"]  # GPUSpec 'GPU H' -> via the bundled row, marked inferred
    assert gn8v["gpu"] == "H20-96GB" and gn8v["gpu_basis"] == "inferred" and "GPU H" in gn8v["notes"]
    assert "ecs.gn9x-c4g1.xlarge" not in inst and "ecs.g7.large" not in inst
    vgpu = inst["ecs.sgn7i-vws-m2.xlarge"]
    assert vgpu["kind"] == "vgpu" and vgpu["gpu_count"] == "0.0833"  # the slice, not the API's whole 1

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["cloud"] == "alibaba" and manifest["fetched_at"] == "2026-11-30T08:00:00Z"
    assert manifest["regions"]["cn-shanghai"]["prices"] == len(prices)
    assert manifest["counts"] == {"instance_types": len(instances), "prices": len(prices),
                                  "stock_rows": manifest["counts"]["stock_rows"]}
    assert [u["gpu_spec"] for u in manifest["unmapped"]] == ["NVIDIA G59"]
    assert "unmapped GPU: ecs.gn9x-c4g1.xlarge" in out


def test_the_catalog_loaders_read_the_cache(transport: FakeTransport, cache_dir: Path) -> None:
    instances_mod = pytest.importorskip("gpuplan.catalog.hardware.instances")
    prices_mod = pytest.importorskip("gpuplan.catalog.prices.prices")
    assert run_refresh(transport, cache_dir)[0] == 0
    inst = instances_mod.load_instances("alibaba", cache_dir)
    assert inst["ecs.gn8v.4xlarge"].gpu == "H20-96GB"
    cached = [o for o in prices_mod.load_offers("alibaba", cache_dir) if o.origin == "cache"]
    assert {(o.instance_type, o.billing) for o in cached} >= {("ecs.gn7i-c8g1.2xlarge", "spot")}
    # the cache replaces the bundled 2023 cn-shanghai pay-as-you-go price of the same type
    gn7i = [o for o in prices_mod.load_offers("alibaba", cache_dir)
            if o.instance_type == "ecs.gn7i-c8g1.2xlarge" and o.region == "cn-shanghai" and o.billing == "payg"]
    assert [(o.price, o.origin) for o in gn7i] == [(9.53, "cache")]


def test_requests_carry_the_documented_parameters(transport: FakeTransport, cache_dir: Path) -> None:
    assert run_refresh(transport, cache_dir)[0] == 0
    pages = transport.actions("DescribeInstanceTypes")
    assert [p.get("MaxResults") for p in pages] == ["100", "100"]  # the SDK flattens query values to strings
    assert pages[1]["NextToken"] == "e71d8a535bd9cc11"
    modes = {(q.get("InstanceChargeType"), q.get("SpotStrategy")) for q in transport.actions("DescribeAvailableResource")}
    assert modes == {("PostPaid", None), ("PrePaid", None), ("PostPaid", "SpotAsPriceGo")}
    assert all(q["DestinationResource"] == "InstanceType" and q["RegionId"] == "cn-shanghai"
               for q in transport.actions("DescribeAvailableResource"))
    prices = transport.actions("DescribePrice")
    assert {(q["InstanceType"], q["PriceUnit"]) for q in prices} == {
        ("ecs.gn7i-c8g1.2xlarge", "Hour"), ("ecs.gn7i-c8g1.2xlarge", "Month"), ("ecs.gn7e-c16g1.4xlarge", "Hour"),
        ("ecs.gn7e-c16g1.4xlarge", "Month"), ("ecs.gn8v.4xlarge", "Hour"), ("ecs.sgn7i-vws-m2.xlarge", "Hour")}
    assert all(q["ResourceType"] == "instance" and q["RegionId"] == "cn-shanghai" for q in prices)
    spot = transport.actions("DescribeSpotPriceHistory")
    assert spot == [{"InstanceType": "ecs.gn7i-c8g1.2xlarge", "NetworkType": "vpc", "OSType": "linux",
                     "RegionId": "cn-shanghai"}]


def test_a_second_region_is_merged_and_the_first_kept(transport: FakeTransport, cache_dir: Path) -> None:
    assert run_refresh(transport, cache_dir, regions=["cn-shanghai"])[0] == 0
    assert run_refresh(FakeTransport(), cache_dir, regions=["cn-beijing"])[0] == 0
    _, prices = read_rows(cache.current_dir(cache_dir, "alibaba") / "prices.csv")
    assert {r["region"] for r in prices} == {"cn-shanghai", "cn-beijing"}
    manifest = json.loads((cache.current_dir(cache_dir, "alibaba") / "manifest.json").read_text())
    assert set(manifest["regions"]) == {"cn-shanghai", "cn-beijing"}


def test_concurrency_is_bounded(transport: FakeTransport, cache_dir: Path) -> None:
    transport.delay_s = 0.01
    assert run_refresh(transport, cache_dir, max_workers=2)[0] == 0
    assert 1 <= transport.max_active <= 2


def test_unknown_region_exits_2_with_a_suggestion(transport: FakeTransport, cache_dir: Path) -> None:
    rc, out = run_refresh(transport, cache_dir, regions=["cn-shangai"])
    assert rc == 2
    assert "Unknown Alibaba Cloud region 'cn-shangai'" in out and "cn-shanghai" in out
    assert not (cache_dir / "clouds").exists()


def test_status_reports_source_date_and_coverage(transport: FakeTransport, cache_dir: Path) -> None:
    assert run_refresh(transport, cache_dir)[0] == 0
    out = io.StringIO()
    assert status(cache_dir=cache_dir, as_json=True, out=out) == 0
    report = json.loads(out.getvalue())
    ali = report["clouds"]["alibaba"]
    assert ali["prices_from"] == "cache"
    assert ali["cache"]["fetched_at"] == "2026-11-30T08:00:00Z"
    assert ali["cache"]["regions"] == {"cn-shanghai": "2026-11-30T08:00:00Z"}
    assert ali["cache"]["unmapped"][0]["instance_type"] == "ecs.gn9x-c4g1.xlarge"
    assert ali["cache"]["inconsistent_files"] == []
    assert ali["bundled"]["regions"] == ["ap-southeast-1", "cn-beijing", "cn-hangzhou", "cn-shanghai", "us-east-1"]
    text = io.StringIO()
    status(cache_dir=cache_dir, out=text)
    assert "unmapped GPU: ecs.gn9x-c4g1.xlarge reports GPUSpec 'NVIDIA G59'" in text.getvalue()
    assert "prices used: cache" in text.getvalue()


# ------------------------------------------------------------------------------------------- failures


def _client_exception(code: str, status_code: int = 400):
    from alibabacloud_tea_openapi.exceptions import ClientException

    return ClientException(status_code=status_code, code=code, message="denied", request_id="req-1")


def _server_exception():
    from alibabacloud_tea_openapi.exceptions import ServerException

    return ServerException(status_code=503, code="ServiceUnavailable", message="unavailable", request_id="req-2")


def _timeout_exception():
    # What the SDK raises when `requests` times out: UnretryableException wrapping the ReadTimeout.
    import requests
    from darabonba.exceptions import UnretryableException
    from darabonba.policy.retry import RetryPolicyContext

    return UnretryableException(RetryPolicyContext(retries_attempted=1,
                                                   exception=requests.exceptions.ReadTimeout("read timed out")))


def _malformed_price_body():
    return {"RequestId": "bad", "PriceInfo": {"Price": {"Currency": "CNY", "TradePrice": "n/a",
                                                        "DetailInfos": {"DetailInfo": []}}}}


FAILURES = {
    "throttling": (lambda t: t.always_fail.__setitem__("DescribePrice", _client_exception("Throttling.User")),
                   "throttled"),
    "server_error": (lambda t: t.always_fail.__setitem__("DescribeAvailableResource", _server_exception()),
                     "ServiceUnavailable"),
    "timeout": (lambda t: t.always_fail.__setitem__("DescribeSpotPriceHistory", _timeout_exception()),
                "did not answer in time"),
    "malformed": (lambda t: t.override.__setitem__("DescribePrice", _malformed_price_body()),
                  "unexpected answer"),
    "malformed_shape": (lambda t: t.override.__setitem__("DescribeInstanceTypes",
                                                         {"RequestId": "bad", "InstanceTypes": "oops"}),
                        "unexpected answer"),
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_a_failed_refresh_keeps_the_old_cache(name: str, transport: FakeTransport, cache_dir: Path) -> None:
    assert run_refresh(transport, cache_dir)[0] == 0
    before = snapshot_files(cache_dir)
    broken = FakeTransport()
    setup, words = FAILURES[name]
    setup(broken)
    sleeps: list[float] = []
    rc, out = run_refresh(broken, cache_dir, sleep=sleeps.append, now=lambda: NOW + dt.timedelta(days=1))
    assert rc == 1, out
    assert words in out and "previous cache was kept" in out
    assert out.count("\n") <= 2 and "Traceback" not in out  # one error line (+ one hint line)
    assert snapshot_files(cache_dir) == before  # byte for byte, manifest included
    if name in ("throttling", "server_error", "timeout"):
        # each failing call: 5 attempts, 4 backoffs, then give up (parallel calls may each do so)
        assert len(sleeps) >= 4 and len(sleeps) % 4 == 0


def test_throttling_then_success_is_retried(transport: FakeTransport, cache_dir: Path) -> None:
    from alibabacloud_tea_openapi.exceptions import ThrottlingException

    transport.fail["DescribeRegions"] = [
        _client_exception("Throttling.User"),
        ThrottlingException(status_code=429, code="Throttling", message="slow down", retry_after=1500),
    ]
    sleeps: list[float] = []
    rc, out = run_refresh(transport, cache_dir, sleep=sleeps.append)
    assert rc == 0, out
    assert len(sleeps) == 2 and sleeps[1] >= 1.5  # the server's x-acs-retry-after (ms) is honoured


def test_a_per_item_error_skips_only_that_price(transport: FakeTransport, cache_dir: Path) -> None:
    transport.fail["DescribePrice"] = [_client_exception("InvalidInstanceType.ValueNotSupported")] * 1
    rc, out = run_refresh(transport, cache_dir, max_workers=1)
    assert rc == 0 and "skipped" in out


def test_rejected_credentials_exit_2(transport: FakeTransport, cache_dir: Path) -> None:
    transport.always_fail["DescribeRegions"] = _client_exception("InvalidAccessKeyId.NotFound", 404)
    rc, out = run_refresh(transport, cache_dir)
    assert rc == 2 and "refused the credentials (InvalidAccessKeyId.NotFound)" in out


# ------------------------------------------------------------------------------------------- credentials


def test_without_credentials_refresh_exits_2_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("alibabacloud_ecs20140526")
    out = io.StringIO()
    rc = refresh(["cn-shanghai"], False, cache_dir=tmp_path / "c", progress=False, out=out)
    assert rc == 2
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in lines[0] and "ALIBABA_CLOUD_ACCESS_KEY_SECRET" in lines[0]
    assert not (tmp_path / "c").exists()


def test_environment_credentials_are_used_and_never_leak(monkeypatch: pytest.MonkeyPatch, transport: FakeTransport,
                                                         cache_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gpuplan.providers import alibaba_api

    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", AK_ID)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", AK_SECRET)
    credential = alibaba_api.resolve_credential()
    assert credential.get_credential().access_key_id == AK_ID  # the env pair, not the chain
    caplog.set_level(logging.DEBUG)
    rc, out = run_refresh(transport, cache_dir)
    assert rc == 0
    blobs = [out, caplog.text] + [b.decode("utf-8", "replace") for b in snapshot_files(cache_dir).values()]
    for blob in blobs:
        assert AK_SECRET not in blob and AK_ID not in blob


def test_missing_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    monkeypatch.setitem(sys.modules, "alibabacloud_ecs20140526", None)
    out = io.StringIO()
    rc = refresh(["cn-shanghai"], False, cache_dir=cache_dir, progress=False, out=out)
    assert rc == 2 and "gpuplan[aliyun]" in out.getvalue()
