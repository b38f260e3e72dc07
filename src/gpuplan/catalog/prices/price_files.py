"""The buyer's own price files: their three formats, the one validator, and ``gpuplan catalog import``.

Formats (``detect_format`` picks one; ``--format`` forces it):

- ``csv``: the user price-file schema (docs/catalog-schema.md): ``cloud, instance_type, region, billing,
  price, currency, unit (hour | month), date, source`` (``as_of`` may stand for ``date``; ``cloud`` defaults
  to alibaba; ``notes``, ``confidence``, ``kind``, ``rule`` and ``basis`` are optional);
- ``describe-price``: an ECS DescribePrice answer saved from Alibaba's API explorer, with the type, region
  and billing it was asked for from flags or fields saved next to it (:mod:`gpuplan.catalog.prices.alibaba_quotes`);
- ``bill``: an Alibaba bill export (费用明细 CSV), the hourly price derived from amount and usage.

Every format goes through :func:`check_rows`, also used by ``--prices FILE``: the whole file is checked
(unknown cloud, instance type or region with a did-you-mean, a price that is not > 0, a bad or future
date, a currency gpuplan cannot convert) and one error names the line(s); nothing is used or stored
unless every row passes. Imported rows are kept with :mod:`gpuplan.providers.imported`, ``kind`` user,
``basis`` quoted, and a ``source`` saying they are the buyer's own (file and import date).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpuplan.catalog.prices.alibaba_bills import bill_rows, is_bill
from gpuplan.catalog.prices.alibaba_quotes import QuoteContext, RawRow, describe_price_rows
from gpuplan.catalog.hardware.instances import DEFAULT_CLOUD, available_clouds, get_instance, load_instances, read_csv_rows
from gpuplan.catalog.prices.offers import (BILLINGS, KNOWN_CURRENCIES, PRICE_COLUMNS, USER_COLUMNS, USER_OPTIONAL_COLUMNS,
                                    Offer, parse_offer_row)
from gpuplan.errors import GpuplanError, did_you_mean
from gpuplan.i18n import N_, _

FORMATS = ("auto", "csv", "describe-price", "bill")
# The source of a kept row: the buyer's own, with the file and the day it was imported (msgids: shown translated).
SOURCE_OWN = N_("your own price: {file}, imported {date}")
SOURCE_OWN_QUOTE = N_("your own DescribePrice quote: {file}, imported {date}")
SOURCE_OWN_BILL = N_("your own bill: {file}, the price derived from the bill's amount and usage, imported {date}")
_SOURCES = {"csv": SOURCE_OWN, "describe-price": SOURCE_OWN_QUOTE, "bill": SOURCE_OWN_BILL}
_CURRENCY_ALIASES = {"RMB": "CNY", "人民币": "CNY", "CNH": "CNY", "美元": "USD", "US$": "USD"}
_DEFAULTS = {"confidence": "confirmed", "notes": "", "kind": "user", "rule": "", "basis": ""}
FUTURE_DAYS = 1   # a quote dated tomorrow is a time-zone difference; later is a mistake


@dataclass(frozen=True)
class PriceFile:
    """A checked price file: its offers, its format, and what the reader took from where or left out."""

    path: Path
    format: str
    offers: tuple[Offer, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _decode(data: bytes, path: Path) -> str:
    for encoding in ("utf-8-sig", "gb18030"):   # the China site's CSV export may be GBK
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise GpuplanError(_("The price file {path!r} is neither UTF-8 nor GB18030 text.").format(path=str(path)),
                       hint=_("Save it as UTF-8."))


def detect_format(text: str) -> str:
    """``describe-price`` for JSON, ``bill`` for a CSV with a bill's instance-spec column, else ``csv``."""
    if text.lstrip()[:1] in ("{", "["):
        return "describe-price"
    header = next(csv.reader(io.StringIO(text)), [])
    return "bill" if is_bill([h.strip() for h in header]) else "csv"


def _csv_rows(text: str, name: str) -> list[RawRow]:
    header = [h.strip() for h in next(csv.reader(io.StringIO(text)), [])]
    allowed = USER_COLUMNS + ("date",)
    unknown = [c for c in header if c and c not in allowed]
    if unknown:
        hint = "; ".join(_("{column!r}: did you mean {close!r}?").format(column=u, close=c[0])
                         for u in unknown if (c := did_you_mean(u, allowed, n=1)))
        raise GpuplanError(_("{path}: unknown column(s) {unknown}.").format(path=name, unknown=", ".join(unknown)),
                           hint=hint or _("Allowed columns: {columns}.").format(columns=", ".join(allowed)))
    if "as_of" not in header and "date" not in header:
        raise GpuplanError(_("{source}: missing column(s) {missing}.").format(source=name, missing="date"),
                           hint=_("Each price needs the date it was quoted on (column 'date', e.g. 2026-11-30)."))
    required = [c for c in PRICE_COLUMNS if c not in USER_OPTIONAL_COLUMNS and c != "as_of"]
    out = []
    for line, row in read_csv_rows(text, name, required):
        if not row.get("as_of"):
            row["as_of"] = row.pop("date", "")
        row.pop("date", None)
        out.append(RawRow(_("{file}, line {line}").format(file=name, line=line), row))
    return out


def _region_ids(cloud: str) -> dict[str, str]:
    from gpuplan.catalog.hardware.regions import load_regions

    return load_regions(cloud)


def _check_row(raw: RawRow, origin: str, default_source: str, cache_dir: str | os.PathLike | None,
               today: dt.date) -> Offer:
    where, row = raw.where, dict(raw.row)
    cloud = (row.get("cloud") or DEFAULT_CLOUD).strip().lower()
    if cloud not in available_clouds():
        raise GpuplanError(_("{where}: unknown cloud {entry!r}.").format(where=where, entry=row.get("cloud")),
                           hint=_("Known clouds: {available_clouds}.").format(
                               available_clouds=", ".join(available_clouds())))
    for col, default in _DEFAULTS.items():
        row[col] = row.get(col) or default
    row["source"] = row.get("source") or default_source
    try:
        inst = get_instance(row.get("instance_type", ""), cloud, cache_dir)
    except GpuplanError as exc:
        raise GpuplanError(_("{where}: {message}").format(where=where, message=exc.message), hint=exc.hint) from None
    row["instance_type"] = inst.instance_type
    region = (row.get("region") or "").strip().lower()
    regions = _region_ids(cloud)
    if regions and region and region not in regions:
        close = did_you_mean(region, regions) or did_you_mean(region, regions, cutoff=0.3)
        raise GpuplanError(_("{where}: unknown {cloud} region {region!r}.").format(where=where, cloud=cloud,
                                                                                 region=row.get("region")),
                           hint=(_("Did you mean {names}?").format(names=", ".join(repr(c) for c in close)) if close
                                 else _("Known regions: {regions}.").format(regions=", ".join(sorted(regions)))))
    billing = (row.get("billing") or "").strip().lower()
    if billing and billing not in BILLINGS:
        close = did_you_mean(billing, BILLINGS, n=1)
        raise GpuplanError(_("{where}: unknown billing mode {value!r}.").format(where=where, value=row.get("billing")),
                           hint=(_("Did you mean {names}?").format(names=repr(close[0])) if close
                                 else _("Allowed: {values}.").format(values=", ".join(BILLINGS))))
    currency = (row.get("currency") or "").strip()
    currency = _CURRENCY_ALIASES.get(currency, _CURRENCY_ALIASES.get(currency.upper(), currency.upper()))
    if currency and currency not in KNOWN_CURRENCIES:
        raise GpuplanError(_("{where}: unknown currency {value!r}: gpuplan converts only {known}.").format(
            where=where, value=row.get("currency"), known=", ".join(KNOWN_CURRENCIES)),
            hint=_("Give the price in CNY or USD (the rate is data/fx.yaml's)."))
    row["currency"] = currency
    price = (row.get("price") or "").strip()
    if price.startswith("-"):
        raise GpuplanError(_("{where}: price must be > 0, got {row!r}.").format(where=where, row=price),
                           hint=_("A refund or a credit is not a price: delete the row."))
    try:
        dt.date.fromisoformat((row.get("as_of") or "").strip())
    except ValueError:
        raise GpuplanError(_("{where}: the date must look like 2026-11-30, got {value!r}.").format(
            where=where, value=row.get("as_of")), hint=_("Give the day the price was quoted or billed.")) from None
    offer = parse_offer_row(row, cloud, origin, where)
    if offer.as_of > today + dt.timedelta(days=FUTURE_DAYS):
        raise GpuplanError(_("{where}: the date {date} is in the future.").format(where=where,
                                                                                 date=offer.as_of.isoformat()),
                           hint=_("Give the day the price was quoted or billed."))
    return offer


def check_rows(rows: Iterable[RawRow], origin: str, default_source: str,
               cache_dir: str | os.PathLike | None = None, today: dt.date | None = None) -> list[Offer]:
    """The one validator of the buyer's prices: every row is checked, and any problem is one error naming
    the line(s) (the first problem with its hint, and how many more there are)."""
    today = today or dt.date.today()
    offers: list[Offer] = []
    errors: list[tuple[str, GpuplanError]] = []
    for raw in rows:
        try:
            offers.append(_check_row(raw, origin, default_source, cache_dir, today))
        except GpuplanError as exc:
            errors.append((raw.where, exc))
    if errors:
        first = errors[0][1]
        more = [w for w, _e in errors[1:]]
        message = first.message if not more else _("{message} (and {n} more problem(s): {where})").format(
            message=first.message, n=len(more), where="; ".join(more[:5]) + ("..." if len(more) > 5 else ""))
        raise GpuplanError(message, hint=first.hint, kind="price_file")
    return offers


def _known_types(cloud: str, cache_dir: str | os.PathLike | None) -> set[str]:
    return {t.lower().removeprefix("ecs.") for t in load_instances(cloud, cache_dir)}


def read_price_file(path: str | os.PathLike, *, fmt: str = "auto", ctx: QuoteContext | None = None,
                    origin: str | None = None, cache_dir: str | os.PathLike | None = None,
                    today: dt.date | None = None, source: str | None = None) -> PriceFile:
    """Read and check a buyer's price file (any of the three formats); see the module doc."""
    from gpuplan.files.safeio import load_json, read_bytes_bounded

    path = Path(path).expanduser()
    today = today or dt.date.today()
    ctx = ctx or QuoteContext()
    text = _decode(read_bytes_bounded(path, "price file"), path)
    name = path.name
    fmt = detect_format(text) if fmt == "auto" else fmt
    if fmt not in FORMATS:
        raise GpuplanError(_("Unknown price file format {fmt!r}.").format(fmt=fmt),
                           hint=_("Allowed: {values}.").format(values=", ".join(FORMATS)))
    notes: list[str] = []
    if fmt == "describe-price":
        parsed = describe_price_rows(load_json(text, origin=name), text, name, ctx, today)
        rows, notes = parsed.rows, parsed.notes
    elif fmt == "bill":
        header = [h.strip() for h in next(csv.reader(io.StringIO(text)), [])]
        parsed = bill_rows(read_csv_rows(text, name, ()), header, name, ctx, _region_ids(DEFAULT_CLOUD),
                           _known_types(DEFAULT_CLOUD, cache_dir))
        rows, notes = parsed.rows, parsed.notes
    else:
        rows = _csv_rows(text, name)
    default_source = source or f"user price file {name}"   # data, not shown: the origin names the file
    offers = check_rows(rows, origin or f"user:{name}", default_source, cache_dir, today)
    if not offers:
        raise GpuplanError(_("{file}: no price rows.").format(file=name),
                           hint=_("See docs/catalog-schema.md for the columns of this file."))
    return PriceFile(path, fmt, tuple(offers), tuple(notes))


def read_stored_import(path: Path, cache_dir: str | os.PathLike | None = None) -> list[Offer]:
    """The offers of one kept import (gpuplan.providers.imported), checked again."""
    from gpuplan.providers.imported import import_name

    name = import_name(path)
    text = _decode(path.read_bytes(), path)
    return check_rows(_csv_rows(text, str(path)), f"import:{name}", f"user price file {name}",
                      cache_dir)


@dataclass(frozen=True)
class ImportResult:
    """What ``gpuplan catalog import`` did: the checked file, where its rows are kept (None on a dry run)."""

    file: PriceFile
    stored: Path | None
    imported_on: dt.date

    def to_dict(self) -> dict[str, object]:
        return {"file": str(self.file.path), "format": self.file.format, "stored": str(self.stored or "") or None,
                "imported_on": self.imported_on.isoformat(), "notes": list(self.file.notes),
                "prices": [o.to_dict() for o in self.file.offers]}


def stored_row(offer: Offer, fmt: str, file_name: str, imported_on: dt.date) -> dict[str, str]:
    """A checked offer as the row kept in the cache: the buyer's own (source = file and import date)."""
    own_source = offer.source if not offer.source.startswith("user price file ") else ""
    notes = "; ".join(n for n in (offer.notes, _("your source: {source}").format(source=own_source)
                                  if own_source else "") if n)
    return {"cloud": offer.cloud, "instance_type": offer.instance_type, "region": offer.region,
            "billing": offer.billing, "price": f"{offer.price:.6g}", "unit": offer.unit, "currency": offer.currency,
            "as_of": offer.as_of.isoformat(),
            "source": _SOURCES[fmt].format(file=file_name, date=imported_on.isoformat()),
            "confidence": "confirmed", "notes": notes, "kind": offer.kind or "user", "rule": offer.rule,
            "basis": offer.basis}


def import_prices(path: str | os.PathLike, *, fmt: str = "auto", ctx: QuoteContext | None = None,
                  cache_dir: str | os.PathLike | None = None, today: dt.date | None = None,
                  dry_run: bool = False) -> ImportResult:
    """``gpuplan catalog import FILE``: check the whole file, then keep its rows in the user's cache (all or
    nothing); a file of the same name imported before is replaced."""
    from gpuplan.providers.imported import import_name, store, stored_name

    today = today or dt.date.today()
    name = Path(path).name
    origin = f"import:{import_name(Path(stored_name(name)))}"
    try:
        checked = read_price_file(path, fmt=fmt, ctx=ctx, origin=origin, cache_dir=cache_dir, today=today)
    except GpuplanError as exc:
        raise GpuplanError(exc.message, hint=_("{hint} Nothing was imported: fix the file and import it again.").format(
            hint=exc.hint).strip(), kind=exc.kind) from None
    rows = [stored_row(o, checked.format, name, today) for o in checked.offers]
    stored = None if dry_run else store(name, rows, cache_dir)
    kept = read_stored_import(stored, cache_dir) if stored else check_rows(
        [RawRow(_("{file}, line {line}").format(file=name, line=i + 2), r) for i, r in enumerate(rows)], origin,
        "", cache_dir, today)   # a dry run shows the rows exactly as they would be kept
    return ImportResult(PriceFile(checked.path, checked.format, tuple(kept), checked.notes), stored, today)
