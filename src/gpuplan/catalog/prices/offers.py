"""One price row: the ``Offer`` record, the columns and values of prices.csv, and the row parser every
price file goes through (the bundled snapshot, the live refresh's cache, the buyer's imports and
``--prices`` files; docs/catalog-schema.md). The overlay of those layers is :mod:`gpuplan.catalog.prices.prices`;
the user's own files (their formats and the one validator) are :mod:`gpuplan.catalog.prices.price_files`."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuplan.catalog.hardware.instances import parse_number, read_csv_rows
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.units import HOURS_PER_MONTH

PRICE_COLUMNS: tuple[str, ...] = (
    "instance_type", "region", "billing", "price", "unit", "currency", "as_of", "source", "confidence", "notes",
)
# Optional columns (added after the first schema, so older cache files without them still load):
# ``kind`` says who the price comes from, ``basis`` how it was obtained, ``rule`` how a derived or
# guessed price was computed.
OPTIONAL_PRICE_COLUMNS: tuple[str, ...] = ("kind", "rule", "basis")
# official = the provider's own page, API or price file; third-party = someone else's transcription,
# scrape or invoice read-out; inferred = arithmetic on sourced numbers (e.g. a per-GPU split);
# estimated = a rule applied where no source exists (the ``rule`` column says which); user = your file.
PRICE_KINDS = ("official", "third-party", "inferred", "estimated", "user")
# How a price was obtained (every row says one; docs/catalog-schema.md):
# quoted  = read for this very type, region and billing mode from a price list, calculator or API (the
#           provider's own, a live refresh, your quote, or a third party's copy of one: ``kind`` says whose);
# derived = computed from another row by a stated rule (a sibling size's per-GPU price, another region,
#           a currency, an invoice): the ``rule`` column names the row and the arithmetic;
# guessed = an assumption with no row behind it (a region or billing mode the source does not state,
#           a spot fraction): the ``rule`` column says what was assumed.
PRICE_BASES = ("quoted", "derived", "guessed")
# Kind and basis of a row that does not say, by origin (``Offer.origin`` before the colon): a live refresh
# reads the provider's API (official, quoted); the buyer's own rows (a ``--prices`` file: user, an imported
# file: import) are quoted by the buyer.
_DEFAULT_KIND = {"bundled": None, "cache": "official", "user": "user", "import": "user"}
_DEFAULT_BASIS = {"bundled": None, "cache": "quoted", "user": "quoted", "import": "quoted"}
# A user's price file may leave these out (defaults in catalog.prices.price_files) and may add a `cloud` column.
USER_OPTIONAL_COLUMNS = ("source", "confidence", "notes", "kind", "rule", "basis")
USER_COLUMNS = PRICE_COLUMNS + OPTIONAL_PRICE_COLUMNS + ("cloud",)
BILLINGS = ("payg", "subscription", "spot")
UNITS = ("hour", "month")
CONFIDENCES = ("confirmed", "unconfirmed")
STALE_AFTER_DAYS = 180
_CURRENCY = re.compile(r"^[A-Z]{3}$")
# The currencies a price may be in: those data/fx.yaml converts between (a price gpuplan cannot convert
# could not be compared with the others; bundled rows and the live refresh use only these two).
KNOWN_CURRENCIES = ("CNY", "USD")


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
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
    origin: str = "bundled"  # bundled | cache | import:<file name> (kept) | user:<file name> (--prices)
    kind: str = "third-party"  # one of PRICE_KINDS: who the figure comes from
    rule: str = ""             # how a derived or guessed price was computed (required unless quoted)
    basis: str = "quoted"      # one of PRICE_BASES: how the figure was obtained

    @property
    def estimated(self) -> bool:
        """True for a derived or guessed price (nobody quoted this price for this type, region and billing)."""
        return self.basis != "quoted"

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


def parse_offer_row(row: dict[str, str], cloud: str, origin: str, where: str) -> Offer:
    for col in ("instance_type", "region", "billing", "price", "unit", "currency", "as_of", "source", "confidence"):
        if not row.get(col):
            raise GpuplanError(_("{where}: column {col!r} is empty.").format(where=where, col=col),
                               hint=_("Delete the row if no price is known: no row means 'no price', never 0."))
    price = parse_number(row["price"], "price", where)
    if not price or price <= 0:
        raise GpuplanError(_("{where}: price must be > 0, got {row!r}.").format(where=where, row=row['price']),
                           hint=_("Delete the row if no price is known: no row means 'no price', never 0."))
    try:
        as_of = dt.date.fromisoformat(row["as_of"])
    except ValueError:
        raise GpuplanError(_("{where}: as_of must be a date like 2024-05-31, got {row!r}.").format(where=where, row=row['as_of']), hint="") from None
    currency = row["currency"].upper()
    if not _CURRENCY.match(currency):
        raise GpuplanError(_("{where}: currency must be a 3-letter code like CNY or USD, got {row!r}.").format(where=where, row=row['currency']),
                           hint="")
    kind = (row.get("kind") or "").lower() or _DEFAULT_KIND.get(origin.split(":")[0]) or ""
    if not kind:
        raise GpuplanError(_("{where}: column 'kind' is empty.").format(where=where),
                           hint=_("Say how the price was obtained: {PRICE_KINDS}.").format(PRICE_KINDS=', '.join(PRICE_KINDS)))
    buyer = origin.split(":")[0] in ("user", "import")
    basis = (row.get("basis") or "").lower() or (
        "derived" if kind == "estimated" and buyer else _DEFAULT_BASIS.get(origin.split(":")[0])) or ""
    if not basis:
        raise GpuplanError(_("{where}: column 'basis' is empty.").format(where=where),
                           hint=_("Say how the price was obtained: {bases}.").format(bases=", ".join(PRICE_BASES)))
    row = {**row, "kind": kind, "basis": basis}
    for col, allowed in (("billing", BILLINGS), ("unit", UNITS), ("confidence", CONFIDENCES), ("kind", PRICE_KINDS),
                         ("basis", PRICE_BASES)):
        if row[col].lower() not in allowed:
            raise GpuplanError(_("{where}: column {col!r} has unknown value {row!r}.").format(where=where, col=col, row=row[col]),
                               hint=_("Allowed: {allowed}.").format(allowed=', '.join(allowed)))
    rule = row.get("rule") or ""
    if basis != "quoted" and not rule:
        raise GpuplanError(_("{where}: a derived or guessed price needs its rule (column 'rule').").format(where=where),
                           hint=_("Write how the number was computed, e.g. 'per-GPU price of <sibling> x 8'."))
    if kind == "estimated" and basis == "quoted":
        raise GpuplanError(_("{where}: an estimated price cannot be quoted.").format(where=where),
                           hint=_("Set basis to derived or guessed and say the rule."))
    return Offer(cloud=cloud, instance_type=row["instance_type"], region=row["region"].lower(),
                 billing=row["billing"].lower(), price=float(price), unit=row["unit"].lower(), currency=currency,
                 as_of=as_of, source=row["source"], confidence=row["confidence"].lower(),
                 notes=row.get("notes", ""), origin=origin, kind=kind, rule=rule, basis=basis)


def read_price_text(path: Path, label: str) -> str:
    from gpuplan.files.safeio import read_text_bounded

    return read_text_bounded(path, label, encoding="utf-8-sig")


def parse_prices_csv(text: str, cloud: str, source: str, origin: str = "bundled") -> list[Offer]:
    """Parse a bundled or cached prices.csv; malformed -> GpuplanError naming the file and line."""
    return list(_parse_prices_cached(text, cloud, source, origin))


@lru_cache(maxsize=16)
def _parse_prices_cached(text: str, cloud: str, source: str, origin: str) -> tuple[Offer, ...]:
    # keyed by the file's text: an edited or refreshed file is parsed again (offers are frozen)
    return tuple(parse_offer_row(row, cloud, origin, f"{source}, line {line}")
                 for line, row in read_csv_rows(text, source, PRICE_COLUMNS))


