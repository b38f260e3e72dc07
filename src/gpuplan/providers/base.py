"""What every live catalog source shares: the file schema, the result record, the Protocol, the registry.

A provider fetches one cloud's catalog from its API and returns a :class:`CatalogSnapshot` whose rows
follow the exact schema of the bundled snapshot (``data/clouds/<cloud>/instances.csv`` and
``prices.csv``, see docs/catalog-schema.md), so readers never care where
data came from (the SkyPilot habit, shared/docs/conventions.md). Writing it is the cache's job
(:mod:`gpuplan.providers.cache`); talking to the network is the provider's, through a client that is
always injectable so tests fake it at the SDK's transport seam.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpuplan.errors import GpuplanError

INSTANCE_COLUMNS: tuple[str, ...] = (
    "instance_type", "family", "kind", "gpu", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib",
    "network_gbit_s", "network_burst_gbit_s", "pps", "rdma", "rdma_gbit_s", "interconnect",
    "nvlink_gb_s", "disk_iops", "disk_bandwidth_mb_s", "local_disk_gib", "status", "gpu_basis", "cpu",
    "region_notes", "unconfirmed", "sources", "notes",
)
PRICE_COLUMNS: tuple[str, ...] = (
    "instance_type", "region", "billing", "price", "unit", "currency", "as_of", "source", "confidence",
    "notes", "kind", "rule", "basis",
)
# What a live refresh writes in the last three: the provider's own API, quoted for that very type, region
# and billing mode on the refresh date (the ``as_of`` column).
LIVE_PRICE = {"kind": "official", "rule": "", "basis": "quoted"}
# Extra file the refresh writes next to prices.csv: stock per zone (not read by the catalog loaders).
STOCK_COLUMNS: tuple[str, ...] = (
    "instance_type", "region", "zone", "billing", "status", "status_category", "as_of", "source",
)

KINDS = frozenset({"vm", "bare-metal", "vgpu", "scc"})
STATUSES = frozenset({"ga", "preview", "ticket", "not-recommended", "retired", "unconfirmed"})
BILLINGS = frozenset({"payg", "subscription", "spot"})
UNITS = frozenset({"hour", "month"})
CURRENCIES = frozenset({"CNY", "USD"})

Row = dict[str, str]


class RefreshFailed(GpuplanError):
    """The remote side failed (throttling, 5xx, timeout, malformed answer): exit 1, cache unchanged."""

    exit_code = 1


class ConfigError(GpuplanError):
    """Something the user must set or install (credentials, SDK, region name): exit 2."""

    exit_code = 2


@dataclass(frozen=True)
class UnmappedType:
    """An instance type whose GPU name the catalog does not know: flagged, never guessed."""

    instance_type: str
    gpu_spec: str
    gpu_count: float
    gpu_memory_gib: float


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class CatalogSnapshot:
    """One cloud's freshly fetched catalog, rows already in the shared file schema.

    ``regions`` are the regions this fetch covered (their prices replace any cached ones);
    ``source`` names the API; ``warnings`` are per-item problems that did not fail the refresh.
    """

    cloud: str
    fetched_at: str  # ISO 8601 UTC timestamp
    regions: tuple[str, ...]
    source: str
    instances: tuple[Row, ...]
    prices: tuple[Row, ...]
    stock: tuple[Row, ...] = ()
    unmapped: tuple[UnmappedType, ...] = ()
    warnings: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


class CatalogProvider(Protocol):
    """A live source for one cloud. ``fetch`` does all network I/O and returns a snapshot or raises."""

    cloud: str
    source: str

    def fetch(self, regions: list[str] | None, all_regions: bool, *, progress: bool = True,
              previous_regions: Iterable[str] = ()) -> CatalogSnapshot:
        ...


def blank_instance_row() -> Row:
    return {c: "" for c in INSTANCE_COLUMNS}


def fmt_num(value: float | int | None, digits: int = 4) -> str:
    """A number as the CSV writes it: integers without '.0', others rounded; None -> empty (unknown)."""
    if value is None:
        return ""
    f = float(value)
    if f.is_integer():
        return str(int(f))
    return f"{round(f, digits):g}"


def validate_rows(rows: Iterable[Row], columns: tuple[str, ...], what: str) -> None:
    """Internal invariant: every row has exactly the schema's columns (a bug if not)."""
    for row in rows:
        assert tuple(row) == columns or set(row) == set(columns), f"{what} row has wrong columns: {sorted(row)}"


REFRESHABLE_CLOUDS: tuple[str, ...] = ("alibaba", "aws")
BUNDLED_CLOUDS: tuple[str, ...] = ("alibaba", "aws", "tencent")
