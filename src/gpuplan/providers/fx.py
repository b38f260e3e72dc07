"""The dated, sourced exchange rate used to put two clouds' prices side by side (``data/fx.yaml``).

It is an assumption, never applied silently: callers report the rate and its date, and a user's
own rate (``override``) always wins.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from importlib.resources import files

from gpuplan.files.datafiles import load_data
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _


@dataclass(frozen=True)
class FxRate:
    base: str
    quote: str
    rate: float  # units of `quote` per 1 `base`
    as_of: dt.date | None
    source: str
    confirmed: bool

    def describe(self) -> str:
        when = self.as_of.isoformat() if self.as_of else "your override"
        return f"1 {self.base} = {self.rate:g} {self.quote} ({when}; {self.source})"


@functools.cache
def _bundled() -> tuple[FxRate, ...]:
    data = load_data((files("gpuplan") / "data" / "fx.yaml")) or {}
    out = []
    for r in data.get("rates", []):
        as_of = r["as_of"] if isinstance(r["as_of"], dt.date) else dt.date.fromisoformat(str(r["as_of"]))
        out.append(FxRate(r["base"], r["quote"], float(r["rate"]), as_of, r["source"],
                          "rate" not in (r.get("unconfirmed") or [])))
    return tuple(out)


def fx_rate(base: str, quote: str, override: float | None = None) -> FxRate:
    """``quote`` per 1 ``base``: the user's ``override`` if given, else the bundled rate (or its inverse)."""
    base, quote = base.upper(), quote.upper()
    if base == quote:
        return FxRate(base, quote, 1.0, None, "same currency", True)
    if override is not None:
        if not override > 0:
            raise GpuplanError(_("Exchange rate must be > 0, got {override!r}.").format(override=override), hint=_("Pass e.g. 7.1 for USD->CNY."))
        return FxRate(base, quote, float(override), None, "user override", True)
    for r in _bundled():
        if (r.base, r.quote) == (base, quote):
            return r
        if (r.base, r.quote) == (quote, base):
            return FxRate(base, quote, 1.0 / r.rate, r.as_of, r.source, r.confirmed)
    raise GpuplanError(_("No exchange rate for {base}->{quote}.").format(base=base, quote=quote), hint=_("Pass your own rate."))
