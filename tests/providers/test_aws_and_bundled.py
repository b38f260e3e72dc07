"""Bundled AWS/Tencent catalogs (schema, canonical ids, sources) and the optional AWS live refresh (fake client)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from importlib.resources import files
from pathlib import Path

import pytest
import yaml

from gpuplan.providers import cache, refresh
from gpuplan.providers.base import INSTANCE_COLUMNS, PRICE_COLUMNS
from gpuplan.providers.fx import fx_rate

CANONICAL_GPUS = set("""A10-24GB A10G-24GB A30-24GB A100-PCIe-40GB A100-SXM4-40GB A100-PCIe-80GB A100-SXM4-80GB
A800-PCIe-40GB A800-PCIe-80GB A800-SXM4-80GB H100-SXM-80GB H100-PCIe-80GB H100-NVL-94GB H800-SXM-80GB H800-PCIe-80GB
H20-96GB H200-SXM-141GB H200-NVL-141GB B200-SXM-180GB L20-48GB L40S-48GB L40-48GB L4-24GB T4-16GB V100-SXM2-16GB
V100-SXM2-32GB V100-PCIe-16GB V100-PCIe-32GB P100-PCIe-16GB P100-SXM2-16GB P4-8GB A16-16GB M40-12GB RTX4090-24GB
RTX3090Ti-24GB RTX3090-24GB RTXA6000-48GB RTX6000Ada-48GB Blackwell-Pro-72GB Blackwell-Pro-48GB""".split())
URL = re.compile(r"^https?://\S+$")


def _csv(cloud: str, name: str) -> tuple[list[str], list[dict[str, str]]]:
    text = (files("gpuplan") / "data" / "clouds" / cloud / name).read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    return list(reader.fieldnames or []), list(reader)


@pytest.mark.parametrize("cloud", ["aws", "tencent"])
def test_bundled_instances_follow_the_schema(cloud: str) -> None:
    cols, rows = _csv(cloud, "instances.csv")
    assert tuple(cols) == INSTANCE_COLUMNS
    assert rows
    for r in rows:
        assert r["gpu"] in CANONICAL_GPUS, r["instance_type"]
        assert r["sources"] and all(URL.match(s) for s in r["sources"].split(";")), r["instance_type"]
        assert all(u in INSTANCE_COLUMNS for u in filter(None, r["unconfirmed"].split(";")))
        if r["gpu_basis"] == "unconfirmed":
            assert "gpu" in r["unconfirmed"].split(";")
    fams = yaml.safe_load((files("gpuplan") / "data" / "clouds" / cloud / "families.yaml").read_text())
    assert {f["family"] for f in fams} >= {r["family"] for r in rows}
    assert all(f["sources"] and f["gpu"] in CANONICAL_GPUS for f in fams)


def test_aws_gpu_ids_match_the_families() -> None:
    _, rows = _csv("aws", "instances.csv")
    by_type = {r["instance_type"]: r for r in rows}
    expected = {"g5.xlarge": "A10G-24GB", "g6.xlarge": "L4-24GB", "g6e.xlarge": "L40S-48GB",
                "p4d.24xlarge": "A100-SXM4-40GB", "p4de.24xlarge": "A100-SXM4-80GB", "p5.48xlarge": "H100-SXM-80GB",
                "p5e.48xlarge": "H200-SXM-141GB", "p5en.48xlarge": "H200-SXM-141GB", "g4dn.xlarge": "T4-16GB",
                "p3.2xlarge": "V100-SXM2-16GB", "p3dn.24xlarge": "V100-SXM2-32GB", "p6-b200.48xlarge": "B200-SXM-180GB"}
    assert {t: by_type[t]["gpu"] for t in expected} == expected
    # AWS P5 page: 8 x H100, 192 vCPU, 2 TiB, 3200 Gbit/s EFA
    p5 = by_type["p5.48xlarge"]
    assert (p5["gpu_count"], p5["vcpus"], p5["memory_gib"], p5["rdma"], p5["rdma_gbit_s"]) == ("8", "192", "2048", "efa", "3200")


@pytest.mark.parametrize("cloud", ["aws", "tencent"])
def test_bundled_prices_are_dated_and_sourced(cloud: str) -> None:
    from gpuplan.catalog.prices.prices import OPTIONAL_PRICE_COLUMNS, PRICE_BASES, PRICE_KINDS

    cols, rows = _csv(cloud, "prices.csv")
    assert tuple(cols) == PRICE_COLUMNS and set(OPTIONAL_PRICE_COLUMNS) <= set(cols)
    types = {r["instance_type"] for r in _csv(cloud, "instances.csv")[1]}
    assert rows
    for r in rows:
        assert r["instance_type"] in types
        dt.date.fromisoformat(r["as_of"])
        # a URL, or (third-party rows whose repository could not be identified) the document's title and date
        assert URL.match(r["source"]) or (r["kind"] == "third-party" and "not identified" in r["source"])
        assert float(r["price"]) > 0 and r["currency"] in ("USD", "CNY")
        assert r["confidence"] in ("confirmed", "unconfirmed") and r["kind"] in PRICE_KINDS
        assert r["kind"] != "estimated" or r["rule"]
        assert r["basis"] in PRICE_BASES and (r["basis"] == "quoted") == (not r["rule"])


def test_fx_rate_is_dated_sourced_and_overridable() -> None:
    # ECB reference rates of 2026-10-30: EUR/CNY 7.4326 / EUR/USD 1.1172 = 6.6529 CNY per USD
    r = fx_rate("USD", "CNY")
    assert r.rate == pytest.approx(7.4326 / 1.1172, abs=1e-4) and r.as_of == dt.date(2026, 10, 30)
    assert URL.match(r.source)
    assert fx_rate("CNY", "USD").rate == pytest.approx(1 / 6.6529)
    assert fx_rate("USD", "CNY", override=7.2).rate == 7.2


# ------------------------------------------------------------------------------------------- AWS live


def _product(itype: str, usd: str) -> str:
    return json.dumps({
        "product": {"productFamily": "Compute Instance", "attributes": {
            "instanceType": itype, "regionCode": "us-east-1", "operatingSystem": "Linux", "tenancy": "Shared",
            "vcpu": "192", "memory": "2048 GiB", "gpu": "8"}},
        "terms": {"OnDemand": {"ABC.JRTCKXETXF": {"priceDimensions": {"ABC.JRTCKXETXF.6YS6EN2CT7": {
            "unit": "Hrs", "pricePerUnit": {"USD": usd}, "description": f"${usd} per On Demand Linux {itype}"}}}}},
    })


class FakePricing:
    def __init__(self, prices: dict[str, str], error: Exception | None = None) -> None:
        self.prices = prices
        self.error = error
        self.calls: list[dict] = []

    def get_products(self, **kwargs):
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        itype = next(f["Value"] for f in kwargs["Filters"] if f["Field"] == "instanceType")
        entries = [_product(itype, self.prices[itype])] if itype in self.prices else []
        return {"FormatVersion": "aws_v1", "PriceList": entries}


def test_aws_refresh_with_a_fake_pricing_client(tmp_path: Path) -> None:
    fake = FakePricing({"p5.48xlarge": "55.04", "g6e.xlarge": "1.861"})
    out = io.StringIO()
    rc = refresh(["us-east-1"], False, cache_dir=tmp_path, client_factory=lambda region: fake, progress=False,
                 out=out, cloud="aws", now=lambda: dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc))
    assert rc == 0, out.getvalue()
    with (cache.current_dir(tmp_path, "aws") / "prices.csv").open(newline="") as fh:
        rows = {r["instance_type"]: r for r in csv.DictReader(fh)}
    assert rows["p5.48xlarge"]["price"] == "55.04" and rows["p5.48xlarge"]["currency"] == "USD"
    assert rows["p5.48xlarge"]["as_of"] == "2026-11-30" and rows["p5.48xlarge"]["confidence"] == "confirmed"
    first = fake.calls[0]
    assert first["ServiceCode"] == "AmazonEC2"
    assert {f["Field"]: f["Value"] for f in first["Filters"]}["operatingSystem"] == "Linux"


def test_aws_refresh_without_credentials_exits_2(tmp_path: Path) -> None:
    class NoCredentialsError(Exception):  # botocore's name is what is matched
        pass

    out = io.StringIO()
    rc = refresh(None, False, cache_dir=tmp_path, client_factory=lambda r: FakePricing({}, NoCredentialsError()),
                 progress=False, out=out, cloud="aws")
    assert rc == 2 and "AWS_ACCESS_KEY_ID" in out.getvalue() and len(out.getvalue().splitlines()) == 1


def test_aws_malformed_answer_keeps_cache(tmp_path: Path) -> None:
    class Broken(FakePricing):
        def get_products(self, **kwargs):
            return {"PriceList": ["{not json"]}

    out = io.StringIO()
    rc = refresh(None, False, cache_dir=tmp_path, client_factory=lambda r: Broken({}), progress=False, out=out,
                 cloud="aws")
    assert rc == 1 and "malformed" in out.getvalue()
    assert not (tmp_path / "clouds").exists()


def test_unknown_cloud_is_refused(tmp_path: Path) -> None:
    out = io.StringIO()
    assert refresh(None, False, cache_dir=tmp_path, progress=False, out=out, cloud="tencent") == 2
    assert "alibaba" in out.getvalue()
