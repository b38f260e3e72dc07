"""Which regions sell the GPU families Alibaba sells only in some regions (``data/clouds/<cloud>/availability.yaml``).

Alibaba's docs publish no per-region list for gn8v, gn8is, ebmgn8v, ebmgn8is, ebmgn8ia: only "available
only in specific regions, including regions outside China; contact sales". The file records that
statement per family and the regions where a source shows the family in use or quoted (with the
evidence). :func:`availability` answers for one (family, region); a plan whose family is restricted and
not known in its region carries a warning that names where the family is known to come from.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from gpuplan.files.datafiles import load_data
from gpuplan.i18n import _


@dataclass(frozen=True)
class Sighting:
    """One piece of evidence that a family is sold in a region."""

    region: str
    kind: str      # official | third-party
    what: str
    as_of: str
    source: str


@dataclass(frozen=True)
class Availability:
    """Where one family is sold: ``status`` is ``general`` (no regional statement), ``seen`` (a source
    shows it in this region) or ``unconfirmed`` (restricted to some regions, none of them known to be
    this one)."""

    family: str
    region: str
    status: str
    statement: str = ""
    seen_in: tuple[Sighting, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def warn(self) -> bool:
        return self.status == "unconfirmed"

    def warning(self, price_region: str | None = None) -> str | None:
        """The plan warning (None when there is nothing to warn about)."""
        if not self.warn:
            return None
        known = sorted({s.region for s in self.seen_in})
        if known:
            return _("{family} is sold only in some regions (Alibaba: {statement}); no source shows it in {region}: "
                     "it is known from {known}; check DescribeAvailableResource or the console before planning on "
                     "{region}").format(family=self.family, statement=_(self.statement), region=self.region,
                                        known=", ".join(known))
        if price_region and price_region != self.region:
            return _("{family} is sold only in some regions (Alibaba: {statement}); no source names a region that "
                     "sells it; the price shown is the {price_region} price; check DescribeAvailableResource or the "
                     "console before planning on {region}").format(
                family=self.family, statement=_(self.statement), region=self.region, price_region=price_region)
        return _("{family} is sold only in some regions (Alibaba: {statement}); no source names a region that sells "
                 "it; check DescribeAvailableResource or the console before planning on {region}").format(
            family=self.family, statement=_(self.statement), region=self.region)

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "region": self.region, "status": self.status,
                "statement": self.statement or None, "seen_in": [s.__dict__ for s in self.seen_in],
                "sources": list(self.sources)}


@functools.cache
def _load(cloud: str) -> dict[str, Any]:
    path = files("gpuplan") / "data" / "clouds" / cloud / "availability.yaml"
    if not path.is_file():
        return {}
    return load_data(path) or {}


def restricted_families(cloud: str = "alibaba") -> tuple[str, ...]:
    """The families the cloud sells only in some regions."""
    return tuple(sorted((_load(cloud).get("families") or {})))


def availability(family: str, region: str, cloud: str = "alibaba") -> Availability:
    """Where ``family`` is sold, as seen from ``region`` (see :class:`Availability`)."""
    doc = _load(cloud)
    entry = (doc.get("families") or {}).get(family.lower().removeprefix("ecs."))
    if not entry:
        return Availability(family, region, "general")
    names = doc.get("sources") or {}
    statement = str(doc.get("statement_restricted") or "") if entry.get("statement") == "restricted" \
        else str(entry.get("statement") or "")
    seen = tuple(Sighting(str(s["region"]), str(s.get("kind", "")), str(s.get("what", "")), str(s.get("as_of", "")),
                          str(s.get("source", ""))) for s in entry.get("seen_in") or ())
    sources = tuple(str(names.get(s, s)) for s in entry.get("sources") or ())
    status = "seen" if any(s.region == region for s in seen) else "unconfirmed"
    return Availability(family, region, status, statement, seen, sources)
