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
GPU names: ``GPUSpec`` strings are mapped by :data:`gpuplan.providers.alibaba_rows.GPU_SPEC_TABLE`; internal names the API sometimes
returns (``GPU H``, ``G49E``, ``L20N``, ``vGPU8``; seen by SpareCores' crawler,
https://github.com/SpareCores/sc-crawler/blob/main/src/sc_crawler/vendors/_alicloud.py) are resolved only
through the bundled snapshot's row for that type or family (basis ``inferred``); anything else is
flagged as unmapped and left out, never guessed.

The SDK, credentials, retried calls and answer checks are in gpuplan.providers.alibaba_api; the mapping of
answers to catalog rows in gpuplan.providers.alibaba_rows. This module makes the calls and builds the snapshot.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

from gpuplan.providers import base
from gpuplan.providers.alibaba_api import (CLOUD, HOME_REGION, ItemError, Malformed, _Ctx, _list, _number, _path, _sdk,
                                           default_client_factory, source_url)
from gpuplan.providers.alibaba_rows import _instance_row, _map_types, _price_row
from gpuplan.providers.base import CatalogSnapshot, ConfigError, RefreshFailed, UnmappedType
from gpuplan.i18n import _

SOURCE = "Alibaba Cloud ECS OpenAPI 2014-05-26 (alibabacloud_ecs20140526)"
DEFAULT_REGIONS = ("cn-beijing", "cn-hangzhou", "cn-shanghai", "cn-shenzhen")
API_DOC = "https://api.alibabacloud.com/document/Ecs/2014-05-26"
PAGE_SIZE = 100  # DescribeInstanceTypes MaxResults cap since 2023-11-15 (API page)

# Billing modes -> DescribeAvailableResource arguments.
CHARGE_MODES: dict[str, dict[str, str]] = {
    "payg": {"instance_charge_type": "PostPaid"},
    "subscription": {"instance_charge_type": "PrePaid"},
    "spot": {"instance_charge_type": "PostPaid", "spot_strategy": "SpotAsPriceGo"},
}


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

            mapped, unmapped = _map_types(types)
            jobs = []
            for region in targets:
                for mode, table in by_region[region].items():
                    for itype in sorted(t for t in table if t in mapped):
                        jobs.append((self._spot_price if mode == "spot" else self._price, (region, itype, mode)))
            prices = [p for p in self._run(ctx, bar, jobs, "prices") if p is not None]

        price_rows = [_price_row(ctx, p, as_of) for p in prices]
        stock_rows = [
            {"instance_type": it, "region": region, "zone": zone, "billing": mode, "status": st["status"],
             "status_category": st["category"], "as_of": as_of,
             "source": source_url(clients[region], region, "DescribeAvailableResource")}
            for region, modes in by_region.items() for mode, table in modes.items()
            for it, zones in table.items() if it in mapped or it in unmapped for zone, st in zones.items()
        ]
        instance_rows = [_instance_row(types[it], mapped[it], by_region, clients, as_of) for it in sorted(mapped)]
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
