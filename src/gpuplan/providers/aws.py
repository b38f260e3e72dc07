"""Optional live price refresh for AWS EC2 GPU instances through the AWS Price List Query API.

``pricing.get_products`` (ServiceCode ``AmazonEC2``; https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html)
returns each product as a JSON string with ``product.attributes`` (instanceType, regionCode, vcpu, memory,
gpu, gpuMemory) and ``terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD``. We ask once per
(region, instance type) of the bundled AWS catalog with the filters that pick the plain Linux,
shared-tenancy, on-demand SKU (operatingSystem=Linux, tenancy=Shared, preInstalledSw=NA,
capacitystatus=Used). The Price List API has endpoints in us-east-1, eu-central-1 and ap-south-1;
we use us-east-1.

boto3 is optional and imported lazily; the client is injectable (``client_factory(region) -> client``),
and the tests use only a fake. Credentials come from boto3's standard chain; they are never printed or
written.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import json
from collections.abc import Callable, Iterable
from importlib.resources import files
from typing import Any

from gpuplan.providers.base import LIVE_PRICE, CatalogSnapshot, ConfigError, RefreshFailed, Row, fmt_num
from gpuplan.providers.retry import THROTTLED, TIMEOUT, call_with_retries, classify, error_code
from gpuplan.i18n import _

CLOUD = "aws"
SOURCE = "AWS Price List Query API (pricing.GetProducts, AmazonEC2)"
PRICING_REGION = "us-east-1"
PRICING_URL = "https://api.pricing.us-east-1.amazonaws.com/?Action=GetProducts"
DEFAULT_REGIONS = ("us-east-1",)
ALL_REGIONS = ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1",
               "ap-southeast-1", "ap-south-1")
NO_BOTO3 = "boto3 is not installed; the AWS live refresh needs it."
NO_CREDENTIALS = ("No AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                  "(or AWS_PROFILE); the pricing API needs the pricing:GetProducts permission.")


@functools.cache
def bundled_rows() -> dict[str, Row]:
    path = files("gpuplan") / "data" / "clouds" / CLOUD / "instances.csv"
    if not path.is_file():
        return {}
    return {r["instance_type"]: dict(r) for r in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))}


def default_client_factory() -> Callable[[str], Any]:
    try:
        import boto3
    except ImportError:
        raise ConfigError(NO_BOTO3, hint=_("pip install boto3")) from None

    def make(region: str) -> Any:
        return boto3.client("pricing", region_name=PRICING_REGION)

    return make


def _filters(region: str, instance_type: str) -> list[dict[str, str]]:
    pairs = {"instanceType": instance_type, "regionCode": region, "operatingSystem": "Linux",
             "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in pairs.items()]


def parse_on_demand_usd(product_json: str) -> tuple[dict[str, str], float | None]:
    """(attributes, hourly USD on-demand price) from one PriceList entry; price None if absent.

    Raises ValueError when the entry is not the documented JSON shape.
    """
    doc = json.loads(product_json)
    if not isinstance(doc, dict) or not isinstance(doc.get("product"), dict):
        raise ValueError("PriceList entry without 'product'")
    attrs = doc["product"].get("attributes") or {}
    on_demand = (doc.get("terms") or {}).get("OnDemand") or {}
    for term in on_demand.values():
        for dim in (term.get("priceDimensions") or {}).values():
            if str(dim.get("unit", "")).lower() not in ("hrs", "hours", "hour"):
                continue
            usd = (dim.get("pricePerUnit") or {}).get("USD")
            if usd is None:
                continue
            value = float(usd)
            if value > 0:
                return attrs, value
    return attrs, None


class AwsProvider:
    cloud = CLOUD
    source = SOURCE

    def __init__(self, client_factory: Callable[[str], Any] | None = None, *, attempts: int = 5,
                 sleep: Callable[[float], None] | None = None,
                 now: Callable[[], dt.datetime] | None = None) -> None:
        self._client_factory = client_factory
        self.attempts = attempts
        self._sleep = sleep
        self._now = now or (lambda: dt.datetime.now(dt.timezone.utc))

    def fetch(self, regions: list[str] | None, all_regions: bool, *, progress: bool = True,
              previous_regions: Iterable[str] = ()) -> CatalogSnapshot:
        import time

        factory = self._client_factory or default_client_factory()
        client = factory(PRICING_REGION)
        targets = list(ALL_REGIONS) if all_regions else sorted(
            dict.fromkeys(r.strip().lower() for r in (regions or []) if r.strip())) or \
            [r for r in previous_regions] or list(DEFAULT_REGIONS)
        fetched_at = self._now().replace(microsecond=0)
        as_of = fetched_at.date().isoformat()
        prices: list[Row] = []
        priced: set[str] = set()
        warnings: list[str] = []
        for region in targets:
            for itype in sorted(bundled_rows()):
                value = self._price(client, region, itype, time.sleep if self._sleep is None else self._sleep)
                if value is None:
                    warnings.append(f"no on-demand Linux price for {itype} in {region}")
                    continue
                priced.add(itype)
                prices.append({"instance_type": itype, "region": region, "billing": "payg",
                               "price": fmt_num(value, 6), "unit": "hour", "currency": "USD", "as_of": as_of,
                               "source": PRICING_URL, "confidence": "confirmed",
                               "notes": "on-demand, Linux, shared tenancy; live refresh", **LIVE_PRICE})
        instances = tuple(bundled_rows()[t] for t in sorted(priced))
        return CatalogSnapshot(cloud=CLOUD, fetched_at=fetched_at.isoformat().replace("+00:00", "Z"),
                               regions=tuple(targets), source=SOURCE, instances=instances, prices=tuple(prices),
                               warnings=tuple(warnings))

    def _price(self, client: Any, region: str, itype: str, sleep: Callable[[float], None]) -> float | None:
        token: str | None = None
        best: float | None = None
        for _page in range(50):
            kwargs: dict[str, Any] = {"ServiceCode": "AmazonEC2", "Filters": _filters(region, itype),
                                      "FormatVersion": "aws_v1", "MaxResults": 100}
            if token:
                kwargs["NextToken"] = token
            try:
                resp = call_with_retries(functools.partial(client.get_products, **kwargs), attempts=self.attempts, sleep=sleep)
            except Exception as exc:  # noqa: BLE001 - turned into one clear message
                raise _failure(exc, region) from None
            if not isinstance(resp, dict) or not isinstance(resp.get("PriceList"), list):
                raise RefreshFailed(_("The AWS pricing API sent an unexpected answer (no PriceList); the previous cache was kept."), hint=_("Run again later."))
            for entry in resp["PriceList"]:
                try:
                    attrs, value = parse_on_demand_usd(entry if isinstance(entry, str) else json.dumps(entry))
                except (ValueError, TypeError, AttributeError):
                    raise RefreshFailed(_("The AWS pricing API sent a malformed price entry; the previous cache was kept."), hint=_("Run again later.")) from None
                if attrs.get("instanceType") not in (None, itype):
                    continue
                if value is not None and (best is None or value < best):
                    best = value
            token = resp.get("NextToken")
            if not token:
                return best
        return best


def _failure(exc: Exception, region: str) -> Exception:
    name = type(exc).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError") or error_code(exc) in (
            "UnrecognizedClientException", "InvalidClientTokenId"):
        return ConfigError(NO_CREDENTIALS)
    if error_code(exc) in ("AccessDeniedException", "AccessDenied"):
        return ConfigError(_("AWS refused the pricing request (AccessDenied)."),
                           hint=_("The IAM identity needs the pricing:GetProducts permission."))
    kind = classify(exc)
    if kind == THROTTLED:
        return RefreshFailed(_("AWS throttled the pricing requests ({region}) even after retries; the previous cache was kept.").format(region=region), hint=_("Wait a minute and run it again."))
    if kind == TIMEOUT:
        return RefreshFailed(_("The AWS pricing API did not answer in time ({region}); the previous cache was kept.").format(region=region),
                             hint=_("Check the network and run it again."))
    return RefreshFailed(_("The AWS pricing API failed ({kind}); the previous cache was kept.").format(kind=error_code(exc) or kind or name), hint=_("Try again later."))
