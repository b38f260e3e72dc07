"""Live catalog refresh for Alibaba Cloud ECS GPU instances, through the official V2 Python SDK.

API calls (ECS 2014-05-26; https://api.alibabacloud.com/document/Ecs/2014-05-26):

* ``DescribeRegions`` - the regions the account can use (validates ``--region``).
* ``DescribeInstanceTypes`` - every instance type, paged with ``NextToken`` (at most 100 per page since
  2023-11-15, per the API page); types with ``GPUAmount > 0`` or a ``GPUSpec`` are kept.
* ``DescribeAvailableResource`` (DestinationResource=InstanceType) - stock per zone, once per region and
  billing mode: PostPaid (pay-as-you-go), PrePaid (subscription), PostPaid + SpotAsPriceGo (spot).
  ``StatusCategory`` is WithStock / ClosedWithStock / WithoutStock / ClosedWithoutStock.
* ``DescribePrice`` - pay-as-you-go (PriceUnit=Hour) and one-month subscription (PriceUnit=Month,
  Period=1) for each GPU type sold in the region; the ``instanceType`` line of ``DetailInfos`` is used,
  so the default system disk is not counted.
* ``DescribeSpotPriceHistory`` - recent spot prices (the API's default window, the last 3 hours);
  the latest price of the cheapest zone becomes the region's spot row.

The SDK is imported lazily (extra ``gpuplan[aliyun]``). Every client comes from a ``client_factory(region)``
so tests drive the real SDK client with a fake ``call_api`` (its transport seam) or a loopback server.
GPU names: ``GPUSpec`` strings are mapped by :data:`GPU_SPEC_TABLE`; internal names the API sometimes
returns (``GPU H``, ``G49E``, ``L20N``, ``vGPU8``; seen by SpareCores' crawler,
https://github.com/SpareCores/sc-crawler/blob/main/src/sc_crawler/vendors/_alicloud.py) are resolved only
through the bundled snapshot's row for that type or family (basis ``inferred``); anything else is
flagged as unmapped and left out, never guessed.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from gpuplan.providers import base
from gpuplan.providers.base import (LIVE_PRICE, CatalogSnapshot, ConfigError, RefreshFailed, Row, UnmappedType,
                                    fmt_num)
from gpuplan.providers.retry import THROTTLED, TIMEOUT, call_with_retries, classify, error_code
from gpuplan.i18n import _

CLOUD = "alibaba"
SOURCE = "Alibaba Cloud ECS OpenAPI 2014-05-26 (alibabacloud_ecs20140526)"
HOME_REGION = "cn-hangzhou"  # region used for the global calls (DescribeRegions, DescribeInstanceTypes)
DEFAULT_REGIONS = ("cn-beijing", "cn-hangzhou", "cn-shanghai", "cn-shenzhen")
API_DOC = "https://api.alibabacloud.com/document/Ecs/2014-05-26"
PAGE_SIZE = 100  # DescribeInstanceTypes MaxResults cap since 2023-11-15 (API page)

NO_CREDENTIALS = (
    "No Alibaba Cloud credentials found: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET "
    "(plus ALIBABA_CLOUD_SECURITY_TOKEN for STS), or configure a profile with `aliyun configure`."
)
NO_SDK = "The Alibaba Cloud SDK is not installed."
NO_SDK_HINT = "Install it with: pip install 'gpuplan[aliyun]'  (alibabacloud_ecs20140526)"

IN_STOCK = ("WithStock", "ClosedWithStock")  # StatusCategory values that mean "can be bought now"

# Billing modes -> DescribeAvailableResource arguments.
CHARGE_MODES: dict[str, dict[str, str]] = {
    "payg": {"instance_charge_type": "PostPaid"},
    "subscription": {"instance_charge_type": "PrePaid"},
    "spot": {"instance_charge_type": "PostPaid", "spot_strategy": "SpotAsPriceGo"},
}


@dataclass(frozen=True)
class GpuMatch:
    gpu: str
    basis: str  # named | inferred
    note: str = ""


# GPUSpec (upper-cased, "NVIDIA " and any "*1/4"-style slice suffix removed) -> choices by per-GPU memory.
# Each choice: (min GiB, max GiB, canonical id, basis, note). Sources: Alibaba's GPU family pages
# (https://www.alibabacloud.com/help/en/ecs/user-guide/gpu-accelerated-compute-optimized-and-vgpu-accelerated-instance-families-1)
# name the parts; "NVIDIA A100 80G" is the console GPUSpec of gn7e (shared/facts S13); the A100 form
# factor is inferred from NVLink/NVSwitch in the family pages, as in the bundled snapshot.
GPU_SPEC_TABLE: dict[str, tuple[tuple[float, float, str, str, str], ...]] = {
    "A10": ((0, 1e9, "A10-24GB", "named", ""),),
    "A30": ((0, 1e9, "A30-24GB", "named", ""),),
    "A16": ((0, 1e9, "A16-16GB", "named", "one GA107 of an A16 board"),),
    "GA107": ((0, 1e9, "A16-16GB", "named", "GA107 = one GPU of an A16 board"),),
    "A100": ((0, 48, "A100-SXM4-40GB", "inferred", "form factor inferred (NVSwitch per family page)"),
             (48, 1e9, "A100-SXM4-80GB", "inferred", "form factor inferred (NVLink per family page)")),
    "A100 80G": ((0, 1e9, "A100-SXM4-80GB", "inferred", "form factor inferred (NVLink per family page)"),),
    "A100 80GB": ((0, 1e9, "A100-SXM4-80GB", "inferred", "form factor inferred (NVLink per family page)"),),
    "A800": ((0, 48, "A800-PCIe-40GB", "inferred", "form factor not stated"),
             (48, 1e9, "A800-SXM4-80GB", "inferred", "form factor not stated")),
    "H20": ((0, 1e9, "H20-96GB", "named", ""),),
    "H800": ((0, 1e9, "H800-SXM-80GB", "inferred", "form factor not stated"),),
    "L20": ((0, 1e9, "L20-48GB", "named", ""),),
    "L40S": ((0, 1e9, "L40S-48GB", "named", ""),),
    "T4": ((0, 1e9, "T4-16GB", "named", ""),),
    "V100": ((0, 24, "V100-SXM2-16GB", "named", "16 GB V100 = SXM2 (gn6v family page)"),
             (24, 1e9, "V100-SXM2-32GB", "named", "32 GB V100 = SXM2 (gn6e family page)")),
    "P100": ((0, 1e9, "P100-PCIe-16GB", "inferred", "form factor not stated"),),
    "P4": ((0, 1e9, "P4-8GB", "named", ""),),
    "M40": ((0, 1e9, "M40-12GB", "named", ""),),
}


def normalize_spec(spec: str) -> str:
    """'NVIDIA A100 80G' -> 'A100 80G'; 'NVIDIA A10*1/6' -> 'A10'; 'Nvidia  T4 ' -> 'T4'."""
    s = re.sub(r"\s+", " ", (spec or "").strip()).upper()
    s = re.sub(r"^(NVIDIA|TESLA)\s+", "", s)
    s = re.sub(r"^TESLA\s+", "", s)
    s = re.sub(r"\s*[*xX]\s*\d+\s*/\s*\d+$", "", s)
    return s.strip()


def _resolve_with_catalog(spec: str) -> str | None:
    """Fallback: the project's GPU alias resolver, if present. Returns a canonical id or None."""
    try:
        from gpuplan.catalog.gpus import resolve_gpu  # written by another module; optional here
    except ImportError:
        return None
    try:
        found = resolve_gpu(spec)
    except Exception:  # noqa: BLE001 - unknown names are 'not mapped', never an error here
        return None
    gpu_id = getattr(found, "id", found)
    return gpu_id if isinstance(gpu_id, str) and gpu_id else None


def map_gpu_spec(spec: str, gpu_memory_gib: float | None) -> GpuMatch | None:
    """The canonical GPU for an API ``GPUSpec`` (+ per-GPU memory to split 16/32 GB V100 etc.), or None."""
    key = normalize_spec(spec)
    if not key:
        return None
    mem = float(gpu_memory_gib or 0)
    for lo, hi, gpu, basis, note in GPU_SPEC_TABLE.get(key, ()):
        if mem <= 0 or lo <= mem < hi:
            return GpuMatch(gpu, basis, note)
    resolved = _resolve_with_catalog(spec)
    if resolved:
        return GpuMatch(resolved, "inferred", f"resolved by gpuplan's GPU aliases from {spec!r}")
    return None


# --------------------------------------------------------------------------- bundled snapshot


@functools.cache
def bundled_rows() -> dict[str, Row]:
    """The bundled Alibaba instances.csv by instance type (fields the API does not return come from here)."""
    import csv
    import io

    path = files("gpuplan") / "data" / "clouds" / CLOUD / "instances.csv"
    if not path.is_file():
        return {}
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
    return {r["instance_type"]: dict(r) for r in reader if r.get("instance_type")}


def bundled_family_gpu(family: str) -> Row | None:
    for row in bundled_rows().values():
        if row.get("family") == family:
            return row
    return None


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


class AlibabaProvider:
    """Fetches the GPU catalog of the chosen regions; see the module docstring for the API calls."""

    cloud = CLOUD
    source = SOURCE

    def __init__(self, client_factory: Callable[[str], Any] | None = None, *, max_workers: int = 8,
                 attempts: int = 5, sleep: Callable[[float], None] | None = None,
                 now: Callable[[], dt.datetime] | None = None, timeout_s: float | None = None) -> None:
        self._client_factory = client_factory
        self.timeout_s = timeout_s
        self.max_workers = max(1, int(max_workers))
        self.attempts = attempts
        self._sleep = sleep
        self._now = now or (lambda: dt.datetime.now(dt.timezone.utc))

    # -- public ---------------------------------------------------------------------------------
    def fetch(self, regions: list[str] | None, all_regions: bool, *, progress: bool = True,
              previous_regions: Iterable[str] = ()) -> CatalogSnapshot:
        """Fetch and return the snapshot; raises ConfigError (exit 2) or RefreshFailed (exit 1)."""
        try:
            return self._fetch(regions, all_regions, progress=progress, previous_regions=previous_regions)
        except Malformed as exc:
            raise RefreshFailed(_("Alibaba Cloud sent an unexpected answer ({exc}); the previous cache was kept.").format(exc=exc),
                                hint=_("Run again; if it persists, update gpuplan or report it.")) from None
        except ItemError as exc:
            raise RefreshFailed(_("Alibaba Cloud rejected a request ({exc}); the previous cache was kept.").format(exc=exc),
                                hint=_("Run again; report it if it persists.")) from None

    def _fetch(self, regions: list[str] | None, all_regions: bool, *, progress: bool,
               previous_regions: Iterable[str]) -> CatalogSnapshot:
        import time

        _client, ecs_models, _api = _sdk()
        deadline = time.monotonic() + self.timeout_s if self.timeout_s else None
        if self._client_factory is not None:
            factory = self._client_factory
        else:  # connect/read timeouts never longer than the whole refresh may take
            limit_ms = int(self.timeout_s * 1000) if self.timeout_s else 10_000
            factory = default_client_factory(read_timeout_ms=min(10_000, limit_ms),
                                             connect_timeout_ms=min(5_000, limit_ms))
        clients: dict[str, Any] = {HOME_REGION: factory(HOME_REGION)}
        fetched_at = self._now().replace(microsecond=0)
        as_of = fetched_at.date().isoformat()

        with _Progress(progress, "Alibaba Cloud") as bar:
            ctx = _Ctx(ecs_models, clients, self._sleep or time.sleep, self.attempts, [], threading.Lock(),
                       deadline, bar.note)
            bar.add("regions and instance types", 2)
            known = self._regions(ctx)
            bar.advance("regions and instance types")
            targets = self._targets(regions, all_regions, known, list(previous_regions))
            for r in targets:  # built here, on the calling thread (the SDK may set signal handlers)
                clients.setdefault(r, factory(r))
            types = self._instance_types(ctx)
            bar.advance("regions and instance types")
            stock = self._run(ctx, bar, [(self._availability, (r, mode)) for r in targets for mode in CHARGE_MODES],
                              "stock")
            # region -> charge mode -> instance type -> zone -> {status, category}
            by_region: dict[str, dict[str, dict[str, dict[str, dict[str, str]]]]] = defaultdict(dict)
            for region, mode, table in stock:
                by_region[region][mode] = table

            mapped, unmapped = self._map_types(types)
            jobs = []
            for region in targets:
                for mode, table in by_region[region].items():
                    for itype in sorted(t for t in table if t in mapped):
                        jobs.append((self._spot_price if mode == "spot" else self._price, (region, itype, mode)))
            prices = [p for p in self._run(ctx, bar, jobs, "prices") if p is not None]

        price_rows = [self._price_row(ctx, p, as_of) for p in prices]
        stock_rows = [
            {"instance_type": it, "region": region, "zone": zone, "billing": mode, "status": st["status"],
             "status_category": st["category"], "as_of": as_of,
             "source": source_url(clients[region], region, "DescribeAvailableResource")}
            for region, modes in by_region.items() for mode, table in modes.items()
            for it, zones in table.items() if it in mapped or it in unmapped for zone, st in zones.items()
        ]
        instance_rows = [self._instance_row(types[it], mapped[it], by_region, clients, as_of) for it in sorted(mapped)]
        flagged = tuple(
            UnmappedType(it, str(types[it].get("GPUSpec", "")), float(types[it].get("GPUAmount") or 0),
                         float(types[it].get("GPUMemorySize") or 0))
            for it in sorted(unmapped) if any(it in m for modes in by_region.values() for m in modes.values())
            or not targets)
        return CatalogSnapshot(
            cloud=CLOUD, fetched_at=fetched_at.isoformat().replace("+00:00", "Z"), regions=tuple(targets),
            source=SOURCE, instances=tuple(instance_rows), prices=tuple(price_rows), stock=tuple(stock_rows),
            unmapped=flagged, warnings=tuple(sorted(ctx.warnings)),
            extra={"api_doc": API_DOC, "billing_modes": sorted(CHARGE_MODES)},
        )

    # -- steps ----------------------------------------------------------------------------------
    def _regions(self, ctx: _Ctx) -> dict[str, str]:
        req = ctx.ecs_models.DescribeRegionsRequest(accept_language="en-US")
        data = ctx.call(HOME_REGION, "describe_regions", req, "DescribeRegions")
        rows = _list(data, "Regions", "Region", action="DescribeRegions")
        if not rows:
            raise Malformed("DescribeRegions: no regions in the answer")
        out = {}
        for r in rows:
            rid = r.get("RegionId")
            if not isinstance(rid, str) or not rid:
                raise Malformed("DescribeRegions: a region without RegionId")
            out[rid] = str(r.get("LocalName") or rid)
        return out

    @staticmethod
    def _targets(regions: list[str] | None, all_regions: bool, known: dict[str, str],
                 previous: list[str]) -> list[str]:
        from gpuplan.errors import did_you_mean

        if all_regions:
            return sorted(known)
        wanted = [r.strip().lower() for r in (regions or []) if r and r.strip()]
        if not wanted:
            wanted = [r for r in previous if r in known] or [r for r in DEFAULT_REGIONS if r in known]
        for r in wanted:
            if r not in known:
                close = did_you_mean(r, known)
                hint = (_("Did you mean {names}?").format(names=", ".join(close)) if close
                        else _("Known regions: {regions}.").format(regions=", ".join(sorted(known))))
                raise ConfigError(_("Unknown Alibaba Cloud region {r!r}.").format(r=r), hint=hint)
        return sorted(dict.fromkeys(wanted))

    def _instance_types(self, ctx: _Ctx) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        token = None
        for _page in range(200):  # hard stop against a token that never ends
            req = ctx.ecs_models.DescribeInstanceTypesRequest(max_results=PAGE_SIZE, next_token=token)
            data = ctx.call(HOME_REGION, "describe_instance_types", req, "DescribeInstanceTypes")
            if "InstanceTypes" not in data:
                raise Malformed("DescribeInstanceTypes: missing InstanceTypes")
            for it in _list(data, "InstanceTypes", "InstanceType", action="DescribeInstanceTypes"):
                name = it.get("InstanceTypeId")
                if not isinstance(name, str) or not name:
                    raise Malformed("DescribeInstanceTypes: an instance type without InstanceTypeId")
                gpus = _number(it.get("GPUAmount") or 0, f"GPUAmount of {name}", "DescribeInstanceTypes")
                if gpus > 0 or str(it.get("GPUSpec") or "").strip():
                    out[name] = it
            token = data.get("NextToken") or None
            if not token:
                return out
        raise Malformed("DescribeInstanceTypes: paging did not end")

    @staticmethod
    def _map_types(types: dict[str, dict[str, Any]]) -> tuple[dict[str, GpuMatch], set[str]]:
        mapped: dict[str, GpuMatch] = {}
        unmapped: set[str] = set()
        for name, it in types.items():
            spec = str(it.get("GPUSpec") or "")
            match = map_gpu_spec(spec, it.get("GPUMemorySize"))
            if match is None:
                row = bundled_rows().get(name) or bundled_family_gpu(_family(it, name))
                if row and row.get("gpu"):
                    how = "this type" if name in bundled_rows() else f"family {row['family']}"
                    match = GpuMatch(row["gpu"], "inferred" if row.get("gpu_basis") != "unconfirmed" else "unconfirmed",
                                     f"API GPUSpec {spec!r} is an internal name; GPU taken from the bundled "
                                     f"snapshot's entry for {how}")
            if match is None:
                unmapped.add(name)
            else:
                mapped[name] = match
        return mapped, unmapped

    def _availability(self, ctx: _Ctx, region: str, mode: str) -> tuple[str, str, dict[str, dict[str, dict[str, str]]]]:
        action = "DescribeAvailableResource"
        req = ctx.ecs_models.DescribeAvailableResourceRequest(
            region_id=region, destination_resource="InstanceType", **CHARGE_MODES[mode])
        data = ctx.call(region, "describe_available_resource", req, action)
        if "AvailableZones" not in data:
            raise Malformed(f"{action}: missing AvailableZones")
        table: dict[str, dict[str, dict[str, str]]] = defaultdict(dict)
        for zone in _list(data, "AvailableZones", "AvailableZone", action=action):
            zone_id = zone.get("ZoneId")
            if not isinstance(zone_id, str):
                raise Malformed(f"{action}: a zone without ZoneId")
            for res in _list(zone, "AvailableResources", "AvailableResource", action=action):
                if res.get("Type") != "InstanceType":
                    continue
                for sup in _list(res, "SupportedResources", "SupportedResource", action=action):
                    value = sup.get("Value")
                    if not isinstance(value, str):
                        raise Malformed(f"{action}: a supported resource without Value")
                    table[value][zone_id] = {"status": str(sup.get("Status") or ""),
                                             "category": str(sup.get("StatusCategory") or "")}
        return region, mode, dict(table)

    def _price(self, ctx: _Ctx, region: str, itype: str, mode: str) -> dict[str, Any] | None:
        action = "DescribePrice"
        unit = "Hour" if mode == "payg" else "Month"
        kwargs: dict[str, Any] = {"region_id": region, "resource_type": "instance", "instance_type": itype,
                                  "price_unit": unit, "period": 1}
        try:
            data = ctx.call(region, "describe_price", ctx.ecs_models.DescribePriceRequest(**kwargs), action)
        except ItemError as exc:
            if "SystemDiskCategory" not in str(exc):
                ctx.warn(str(exc) + f" ({itype}, {mode})")
                return None
            kwargs["system_disk"] = ctx.ecs_models.DescribePriceRequestSystemDisk(category="cloud_essd")
            try:
                data = ctx.call(region, "describe_price", ctx.ecs_models.DescribePriceRequest(**kwargs), action)
            except ItemError as exc2:
                ctx.warn(str(exc2) + f" ({itype}, {mode})")
                return None
        price = _path(data, "PriceInfo", "Price", action=action)
        if not isinstance(price, dict):
            raise Malformed(f"{action}: PriceInfo.Price is not an object")
        currency = price.get("Currency")
        if currency not in base.CURRENCIES:
            raise Malformed(f"{action}: unexpected currency {currency!r} for {itype}")
        details = _list(price, "DetailInfos", "DetailInfo", action=action)
        line = next((d for d in details if d.get("Resource") == "instanceType"), None)
        note = ""
        if line is not None:
            trade = _number(line.get("TradePrice"), f"TradePrice of {itype}", action)
            original = _number(line.get("OriginalPrice", trade), f"OriginalPrice of {itype}", action)
        else:
            trade = _number(price.get("TradePrice"), f"TradePrice of {itype}", action)
            original = _number(price.get("OriginalPrice", trade), f"OriginalPrice of {itype}", action)
            note = "whole order incl. the default system disk (no instanceType line in DetailInfos)"
        if trade <= 0:
            ctx.warn(f"{action} in {region}: zero price for {itype} ({mode}); no row written")
            return None
        return {"region": region, "instance_type": itype, "billing": mode, "price": trade, "list": original,
                "unit": "hour" if unit == "Hour" else "month", "currency": currency, "action": action, "note": note}

    def _spot_price(self, ctx: _Ctx, region: str, itype: str, mode: str) -> dict[str, Any] | None:
        action = "DescribeSpotPriceHistory"
        req = ctx.ecs_models.DescribeSpotPriceHistoryRequest(region_id=region, network_type="vpc",
                                                            instance_type=itype, ostype="linux")
        try:
            data = ctx.call(region, "describe_spot_price_history", req, action)
        except ItemError as exc:
            ctx.warn(str(exc) + f" ({itype}, spot)")
            return None
        if "SpotPrices" not in data:
            raise Malformed(f"{action}: missing SpotPrices")
        currency = data.get("Currency")
        latest: dict[str, tuple[str, float, float]] = {}
        for p in _list(data, "SpotPrices", "SpotPriceType", action=action):
            zone, ts = p.get("ZoneId"), p.get("Timestamp")
            if not isinstance(zone, str) or not isinstance(ts, str):
                raise Malformed(f"{action}: a spot price without ZoneId/Timestamp")
            price = _number(p.get("SpotPrice"), f"SpotPrice of {itype}", action)
            origin = _number(p.get("OriginPrice", 0) or 0, f"OriginPrice of {itype}", action)
            if zone not in latest or ts > latest[zone][0]:
                latest[zone] = (ts, price, origin)
        if not latest:
            return None
        if currency not in base.CURRENCIES:
            raise Malformed(f"{action}: unexpected currency {currency!r} for {itype}")
        zone, (ts, price, origin) = min(latest.items(), key=lambda kv: kv[1][1])
        if price <= 0:
            return None
        others = "; ".join(f"{z} {v[1]:g}" for z, v in sorted(latest.items()))
        return {"region": region, "instance_type": itype, "billing": "spot", "price": price, "list": origin,
                "unit": "hour", "currency": currency, "action": action,
                "note": f"latest spot price of the cheapest zone ({zone}, {ts}); per zone: {others}"}

    # -- rows -----------------------------------------------------------------------------------
    @staticmethod
    def _price_row(ctx: _Ctx, p: dict[str, Any], as_of: str) -> Row:
        notes = []
        if p["billing"] != "spot" and p["list"] and abs(p["list"] - p["price"]) > 1e-9:
            notes.append(f"list price {p['list']:g}; price is the account's TradePrice")
        if p["note"]:
            notes.append(p["note"])
        notes.append("Linux; live refresh")
        return {"instance_type": p["instance_type"], "region": p["region"], "billing": p["billing"],
                "price": fmt_num(p["price"], 6), "unit": p["unit"], "currency": p["currency"], "as_of": as_of,
                "source": source_url(ctx.clients[p["region"]], p["region"], p["action"]),
                "confidence": "confirmed", "notes": "; ".join(notes), **LIVE_PRICE}

    @staticmethod
    def _instance_row(it: dict[str, Any], match: GpuMatch, by_region: dict[str, Any], clients: dict[str, Any],
                      as_of: str) -> Row:
        name = str(it["InstanceTypeId"])
        old = bundled_rows().get(name)
        row = dict(old) if old else base.blank_instance_row()
        family = _family(it, name)
        kind = row.get("kind") or _kind(family)
        in_stock = sorted(r for r, modes in by_region.items()
                          if any(z.get("category") in IN_STOCK
                                 for m in modes.values() for z in m.get(name, {}).values()))
        listed = sorted(r for r, modes in by_region.items() if any(name in m for m in modes.values()))
        api = {
            "instance_type": name, "family": family, "kind": kind, "gpu": match.gpu,
            "vcpus": fmt_num(it.get("CpuCoreCount")), "memory_gib": fmt_num(it.get("MemorySize")),
            "gpu_basis": match.basis,
        }
        if kind != "vgpu" or not old:  # vGPU slices: the API's whole-number GPUAmount says less than the bundle
            api["gpu_count"] = fmt_num(it.get("GPUAmount"))
            api["gpu_memory_gib"] = fmt_num(it.get("GPUMemorySize"))
        bw_kbit = it.get("InstanceBandwidthRx")
        if bw_kbit:
            # Kbit/s -> Gbit/s with 1024 Kbit per Mbit, as Alibaba's tables round (16 Gbit/s = 16384000).
            api["network_gbit_s"] = fmt_num(float(bw_kbit) / 1024 / 1000, 2)
        if it.get("InstancePpsRx"):
            api["pps"] = fmt_num(it.get("InstancePpsRx"))
        if it.get("PhysicalProcessorModel"):
            api["cpu"] = str(it["PhysicalProcessorModel"])
        if it.get("LocalStorageAmount") and it.get("LocalStorageCapacity"):
            api["local_disk_gib"] = fmt_num(float(it["LocalStorageAmount"]) * float(it["LocalStorageCapacity"]))
        elif not old:
            api["local_disk_gib"] = "0"
        if (it.get("EriQuantity") or 0) and not row.get("rdma"):
            api["rdma"] = "erdma"
        row.update({k: v for k, v in api.items() if v != ""})
        status = row.get("status") or ""
        if in_stock and status in ("", "unconfirmed", "retired"):
            status = "ga"
        row["status"] = status or "unconfirmed"
        if row.get("gpu") == "" or not row.get("gpu_count"):
            row["gpu_count"] = row.get("gpu_count") or "1"
        unconf = [u for u in (row.get("unconfirmed") or "").split(";") if u and u not in api]
        if match.basis == "unconfirmed" and "gpu" not in unconf:
            unconf.append("gpu")
        row["unconfirmed"] = ";".join(unconf)
        api_sources = [source_url(clients[HOME_REGION], HOME_REGION, "DescribeInstanceTypes")]
        row["sources"] = ";".join(dict.fromkeys(api_sources + [s for s in (row.get("sources") or "").split(";") if s]))
        region_text = (f"in stock ({as_of}): {', '.join(in_stock)}" if in_stock else f"no stock found ({as_of})")
        if listed and listed != in_stock:
            region_text += f"; listed: {', '.join(listed)}"
        row["region_notes"] = region_text
        note_bits = [b for b in (match.note, (old or {}).get("notes", "")) if b]
        note_bits.append(f"live refresh {as_of}: API GPUSpec {str(it.get('GPUSpec') or '')!r}"
                         + ("" if old else "; type not in the bundled snapshot (fields the API lacks are empty)"))
        row["notes"] = "; ".join(note_bits)
        return {c: row.get(c, "") for c in base.INSTANCE_COLUMNS}

    # -- concurrency ----------------------------------------------------------------------------
    def _run(self, ctx: _Ctx, bar: _Progress, jobs: list[tuple[Callable[..., Any], tuple[Any, ...]]],
             label: str) -> list[Any]:
        """Run jobs on a bounded pool; the first fatal error cancels the rest and is raised."""
        bar.add(label, len(jobs))
        results: list[Any] = [None] * len(jobs)
        if not jobs:
            return results
        with ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="gpuplan-aliyun") as pool:
            futures: dict[Future[Any], int] = {}
            for i, (fn, args) in enumerate(jobs):
                fut = pool.submit(fn, ctx, *args)
                fut.add_done_callback(lambda _f: bar.advance(label))
                futures[fut] = i
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in done if f.exception() is not None), None)
            if failed is not None:
                for f in pending:
                    f.cancel()
                raise failed.exception()  # type: ignore[misc]
            for f, i in futures.items():
                results[i] = f.result()
        return results


def _family(it: dict[str, Any], name: str) -> str:
    fam = str(it.get("InstanceTypeFamily") or "")
    if not fam:
        m = re.match(r"^ecs\.([a-z0-9-]+?)(?:-c\d+g\d+|-\d+x)?\.", name)
        fam = m.group(1) if m else name
    return fam[4:] if fam.startswith("ecs.") else fam


def _kind(family: str) -> str:
    """vm | bare-metal | vgpu | scc from Alibaba's family naming (EGS instance naming conventions)."""
    if family.startswith("ebm"):
        return "bare-metal"
    if family.startswith("scc"):
        return "scc"
    if family.startswith(("vgn", "sgn")):
        return "vgpu"
    return "vm"


class _Progress:
    """A rich progress bar on stderr (or nothing when disabled)."""

    def __init__(self, enabled: bool, title: str) -> None:
        self.enabled = enabled
        self.title = title
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def add(self, label: str, total: int) -> None:
        if self._bar is not None:
            self._tasks[label] = self._bar.add_task(f"{self.title}: {label}", total=total)

    def note(self, text: str) -> None:
        """A line above the bar (retries, slow answers), so a slow refresh never looks stuck."""
        if self._bar is not None:
            self._bar.console.print(f"{self.title}: {text}", highlight=False, markup=False)

    def advance(self, label: str) -> None:
        if self._bar is not None and label in self._tasks:
            with self._lock:
                self._bar.advance(self._tasks[label])
