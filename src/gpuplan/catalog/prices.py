"""Price offers: the bundled snapshot, overlaid by the live-refresh cache and the user's price files.

Data: ``data/clouds/<cloud>/prices.csv`` (schema in docs/catalog-schema.md). The Alibaba snapshot
is the cn-shanghai console price list of June 2023 as copied by a third party
(https://arthurchiao.art/blog/gpu-prices/), plus a few later third-party spot checks; every row
says ``as_of``, ``source`` and ``confidence``. A missing price is no row (None), never 0.

Overlay order (lowest first): bundled < the cached ``prices.csv`` (the live refresh's snapshot in
use, checked against its manifest; see gpuplan.providers.cache) < ``--prices`` files. A row of a higher layer replaces every lower-layer row with the same
(cloud, instance_type, region, billing); rows within one layer are all kept (e.g. two dates).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gpuplan.catalog.instances import (
    DEFAULT_CLOUD,
    available_clouds,
    cache_file,
    get_instance,
    load_instances,
    load_sources,
    parse_number,
    read_csv_rows,
)
from gpuplan.errors import GpuplanError, did_you_mean
from gpuplan.units import HOURS_PER_MONTH

PRICE_COLUMNS: tuple[str, ...] = (
    "instance_type", "region", "billing", "price", "unit", "currency", "as_of", "source", "confidence", "notes",
)
# A user's price file may leave these out (defaults below) and may add a `cloud` column.
_USER_OPTIONAL = {"source": None, "confidence": "confirmed", "notes": ""}
_USER_COLUMNS = PRICE_COLUMNS + ("cloud",)
BILLINGS = ("payg", "subscription", "spot")
UNITS = ("hour", "month")
CONFIDENCES = ("confirmed", "unconfirmed")
STALE_AFTER_DAYS = 180
_CURRENCY = re.compile(r"^[A-Z]{3}$")


@dataclass(frozen=True)
class Offer:
    """One price for one instance type, region and billing mode, with its date and source."""

    cloud: str
    instance_type: str
    region: str
    billing: str
    price: float
    unit: str
    currency: str
    as_of: dt.date
    source: str
    confidence: str
    notes: str
    origin: str = "bundled"  # bundled | cache | user:<file name>

    @property
    def price_per_hour(self) -> float:
        """Hourly price; a monthly price is spread over HOURS_PER_MONTH (730) hours."""
        return self.price if self.unit == "hour" else self.price / HOURS_PER_MONTH

    @property
    def price_per_month(self) -> float:
        """Monthly price; an hourly price times HOURS_PER_MONTH (730)."""
        return self.price if self.unit == "month" else self.price * HOURS_PER_MONTH

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.as_of).days

    def is_stale(self, today: dt.date | None = None, max_age_days: int = STALE_AFTER_DAYS) -> bool:
        return self.age_days(today) > max_age_days

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["as_of"] = self.as_of.isoformat()
        out["price_per_hour"] = self.price_per_hour
        out["price_per_month"] = self.price_per_month
        return out


def _parse_offer(row: dict[str, str], cloud: str, origin: str, where: str) -> Offer:
    for col in ("instance_type", "region", "billing", "price", "unit", "currency", "as_of", "source", "confidence"):
        if not row.get(col):
            raise GpuplanError(f"{where}: column {col!r} is empty.",
                               hint="Delete the row if no price is known: no row means 'no price', never 0.")
    price = parse_number(row["price"], "price", where)
    if not price or price <= 0:
        raise GpuplanError(f"{where}: price must be > 0, got {row['price']!r}.",
                           hint="Delete the row if no price is known: no row means 'no price', never 0.")
    try:
        as_of = dt.date.fromisoformat(row["as_of"])
    except ValueError:
        raise GpuplanError(f"{where}: as_of must be a date like 2024-05-31, got {row['as_of']!r}.", hint="") from None
    currency = row["currency"].upper()
    if not _CURRENCY.match(currency):
        raise GpuplanError(f"{where}: currency must be a 3-letter code like CNY or USD, got {row['currency']!r}.",
                           hint="")
    for col, allowed in (("billing", BILLINGS), ("unit", UNITS), ("confidence", CONFIDENCES)):
        if row[col].lower() not in allowed:
            raise GpuplanError(f"{where}: column {col!r} has unknown value {row[col]!r}.",
                               hint=f"Allowed: {', '.join(allowed)}.")
    return Offer(cloud=cloud, instance_type=row["instance_type"], region=row["region"].lower(),
                 billing=row["billing"].lower(), price=float(price), unit=row["unit"].lower(), currency=currency,
                 as_of=as_of, source=row["source"], confidence=row["confidence"].lower(),
                 notes=row.get("notes", ""), origin=origin)


def _read(path: Path, label: str) -> str:
    from gpuplan.safeio import read_text_bounded

    return read_text_bounded(path, label, encoding="utf-8-sig")


def parse_prices_csv(text: str, cloud: str, source: str, origin: str = "bundled") -> list[Offer]:
    """Parse a bundled or cached prices.csv; malformed -> GpuplanError naming the file and line."""
    return [_parse_offer(row, cloud, origin, f"{source}, line {line}")
            for line, row in read_csv_rows(text, source, PRICE_COLUMNS)]


def read_user_prices(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> list[Offer]:
    """A user's price file (``--prices``): the prices.csv schema, plus an optional ``cloud`` column
    (default alibaba); ``source`` defaults to the file, ``confidence`` to confirmed, ``notes`` to ''.
    Instance types are checked against the catalog (did-you-mean on a typo)."""
    path = Path(path).expanduser()
    text = _read(path, "price file")
    required = [c for c in PRICE_COLUMNS if c not in _USER_OPTIONAL]
    rows = read_csv_rows(text, str(path), required)
    header = [h.strip() for h in next(csv.reader(text.splitlines()), [])]
    unknown = [c for c in header if c not in _USER_COLUMNS]
    if unknown:
        close = {u: did_you_mean(u, _USER_COLUMNS, n=1) for u in unknown}
        hint = "; ".join(f"{u!r}: did you mean {c[0]!r}?" for u, c in close.items() if c)
        raise GpuplanError(f"{path}: unknown column(s) {', '.join(unknown)}.",
                           hint=hint or f"Allowed columns: {', '.join(_USER_COLUMNS)}.")
    offers = []
    for line, row in rows:
        where = f"{path}, line {line}"
        cloud = (row.get("cloud") or DEFAULT_CLOUD).lower()
        if cloud not in available_clouds():
            raise GpuplanError(f"{where}: unknown cloud {row.get('cloud')!r}.",
                               hint=f"Known clouds: {', '.join(available_clouds())}.")
        for col, default in _USER_OPTIONAL.items():
            if not row.get(col):
                row[col] = default if default is not None else f"user price file {path.name}"
        try:
            inst = get_instance(row["instance_type"], cloud, cache_dir)
        except GpuplanError as exc:
            raise GpuplanError(f"{where}: {exc.message}", hint=exc.hint) from None
        row["instance_type"] = inst.instance_type
        offers.append(_parse_offer(row, cloud, f"user:{path.name}", where))
    return offers


def _layers(cloud: str, cache_dir: str | os.PathLike | None) -> list[list[Offer]]:
    from importlib.resources import files

    bundled = files("gpuplan") / "data" / "clouds" / cloud / "prices.csv"
    layers = []
    if bundled.is_file():
        layers.append(parse_prices_csv(bundled.read_text(encoding="utf-8"), cloud,
                                       f"bundled data/clouds/{cloud}/prices.csv"))
    cached = cache_file(cloud, "prices.csv", cache_dir)
    if cached.is_file():
        layers.append(parse_prices_csv(_read(cached, "cached price file"), cloud, str(cached), origin="cache"))
    return layers


def _key(o: Offer) -> tuple[str, str, str, str]:
    return (o.cloud, o.instance_type.lower(), o.region, o.billing)


def load_offers(
    cloud: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    extra_files: Iterable[str | os.PathLike] = (),
) -> list[Offer]:
    """Every known offer (all clouds when ``cloud`` is None), overlays applied (see module doc)."""
    clouds = (cloud.lower(),) if cloud else available_clouds()
    if cloud and clouds[0] not in available_clouds():
        load_instances(cloud)  # raises the did-you-mean error for an unknown cloud
    layers: list[list[Offer]] = []
    for c in clouds:
        layers.extend(_layers(c, cache_dir))
    for path in extra_files:
        layers.append([o for o in read_user_prices(path, cache_dir) if o.cloud in clouds])
    merged: list[Offer] = []
    for layer in layers:
        replaced = {_key(o) for o in layer}
        merged = [o for o in merged if _key(o) not in replaced] + layer
    return merged


def offers_for(
    instance_type: str,
    region: str | None = None,
    billing: str | None = None,
    cloud: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    extra_files: Iterable[str | os.PathLike] = (),
) -> list[Offer]:
    """The offers of one instance type (name as in :func:`get_instance`), newest first then cheapest.
    An empty list means no price is known."""
    inst = get_instance(instance_type, cloud, cache_dir)
    out = [o for o in load_offers(inst.cloud, cache_dir, extra_files)
           if o.instance_type.lower() == inst.instance_type.lower()
           and (region is None or o.region == region.strip().lower())
           and (billing is None or o.billing == billing.strip().lower())]
    return sorted(out, key=lambda o: (-o.as_of.toordinal(), o.price_per_hour))


def source_label(offer: Offer) -> str:
    """A few words on where a price comes from, for notes ("third-party console snapshot")."""
    if offer.origin.startswith("user:"):
        return f"your price file {offer.origin[5:]}"
    if offer.origin == "cache":
        return "live refresh"
    for entry in load_sources().values():
        if offer.source in (entry.get("url"), entry.get("title")) and entry.get("label"):
            return str(entry["label"])
    return "official price" if offer.confidence == "confirmed" else "unconfirmed price"


def _money(value: float) -> str:
    return f"{value:,.2f}" if value >= 1 else f"{value:.4g}"


def price_note(offer: Offer, today: dt.date | None = None, max_age_days: int = STALE_AFTER_DAYS) -> str:
    """One line for users: "CNY 9.53/h, cn-shanghai, as of 2023-06-01 (third-party console snapshot;
    1277 days old — prices may have changed)"."""
    unit = "/h" if offer.unit == "hour" else "/month"
    age = offer.age_days(today)
    age_text = f"{age} days old" + (" — prices may have changed" if age > max_age_days else "")
    return (f"{offer.currency} {_money(offer.price)}{unit}, {offer.region}, as of {offer.as_of.isoformat()} "
            f"({source_label(offer)}; {age_text})")
