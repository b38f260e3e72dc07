"""Live catalog refresh and the local cache (``gpuplan catalog refresh`` / ``gpuplan catalog status``).

Entry points for the CLI (thin wrappers; both return the exit code and print to ``out``):

* :func:`refresh` - fetch one cloud's catalog (Alibaba Cloud by default) and commit it to the cache
  as one new snapshot, under a lock (see :mod:`gpuplan.providers.cache`). 0 = written; 1 = the cloud failed (throttling, 5xx, timeout, malformed answer; the old
  cache is kept); 2 = something to set or install (credentials, SDK, region name).
* :func:`status` - per cloud and source: dates, coverage, unmapped GPU names.

Nothing here imports a cloud SDK at import time.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.providers.base import REFRESHABLE_CLOUDS, CatalogProvider, CatalogSnapshot

__all__ = ["refresh", "status", "fetch_snapshot", "freshness"]


def registry() -> dict[str, Callable[..., CatalogProvider]]:
    """Explicit registry (no importlib strings): cloud name -> provider class(client_factory=None). The
    provider modules are imported here, when first needed, so importing gpuplan.providers never imports an
    SDK (and base.py, which the providers import, knows none of them)."""
    from gpuplan.providers.alibaba import AlibabaProvider
    from gpuplan.providers.aws import AwsProvider

    return {"alibaba": AlibabaProvider, "aws": AwsProvider}


def fetch_snapshot(cloud: str = "alibaba", regions: list[str] | None = None, all_regions: bool = False,
                   client_factory: Callable[[str], Any] | None = None, progress: bool = True,
                   cache_dir: str | os.PathLike[str] | None = None, **provider_kwargs: Any) -> CatalogSnapshot:
    """Fetch without writing (raises GpuplanError subclasses)."""
    from gpuplan.providers import cache
    from gpuplan.providers.base import BUNDLED_CLOUDS, ConfigError

    name = (cloud or "").strip().lower()
    if name not in REFRESHABLE_CLOUDS:
        bundled_only = name in BUNDLED_CLOUDS
        raise ConfigError((_("No live refresh for {cloud!r} (it has only the bundled snapshot).") if bundled_only
                           else _("Unknown cloud {cloud!r}.")).format(cloud=cloud),
                          hint=_("Live refresh works for: {clouds}.").format(clouds=", ".join(REFRESHABLE_CLOUDS)))
    provider = registry()[name](client_factory, **provider_kwargs)
    previous = list(((cache.read_manifest(cache_dir, name) or {}).get("regions") or {}))
    return provider.fetch(regions, all_regions, progress=progress, previous_regions=previous)


DEFAULT_TIMEOUT_S = 180.0  # the whole refresh of the default four regions takes well under a minute


def refresh(regions: list[str] | None = None, all_regions: bool = False, cache_dir: str | os.PathLike[str] | None = None,
            client_factory: Callable[[str], Any] | None = None, progress: bool = True, out: TextIO | None = None,
            *, cloud: str = "alibaba", as_json: bool = False, timeout_s: float | None = DEFAULT_TIMEOUT_S,
            **provider_kwargs: Any) -> int:
    """Refresh ``cloud``'s cached catalog for ``regions`` (or all); returns the exit code (0, 1 or 2).

    On any failure nothing is written: the previous cache stays as it was. Text mode prints the result
    to stdout and a failure as one line (plus a hint line) to stderr; ``as_json`` prints one document
    (``{"schema_version", "ok": true, ...}`` or ``{"error", "hint", "exit_code"}``) to stdout. ``out``
    (tests) receives everything. ``timeout_s`` bounds the whole fetch: no retry starts after it.
    Credentials are never printed.
    """
    from gpuplan.providers import cache, cache_commit

    result_out = out or sys.stdout
    error_out = out or (sys.stdout if as_json else sys.stderr)

    def fail(message: str, hint: str, code: int) -> int:
        if as_json:
            print(json.dumps({"error": message, "hint": hint, "exit_code": code}, ensure_ascii=False), file=error_out)
        else:
            print(_("error: {message}").format(message=message), file=error_out)
            if hint:
                print(_("hint: {hint}").format(hint=hint), file=error_out)
        return code

    if (cloud or "").strip().lower() == "alibaba" and timeout_s:
        provider_kwargs.setdefault("timeout_s", timeout_s)
    notes: list[str] = []
    try:
        snapshot = fetch_snapshot(cloud, regions, all_regions, client_factory, progress and not as_json, cache_dir,
                                  **provider_kwargs)
        folder = cache_commit.write_snapshot(snapshot, cache_dir, notes=notes)
    except GpuplanError as exc:
        return fail(exc.message, exc.hint_for("cli"), int(getattr(exc, "exit_code", 2)))
    except cache.CacheBusy as exc:
        return fail(_("the cache is locked: {detail}; nothing was written.").format(detail=exc),
                    _("Wait for the other `gpuplan catalog refresh` to finish, or remove the .lock file if none runs."), 1)
    except OSError as exc:
        return fail(_("could not write the cache ({reason}); the previous cache was kept.").format(
                        reason=exc.strerror or type(exc).__name__),
                    _("Check the free space and permissions of the cache folder (GPUPLAN_CACHE_DIR)."), 1)
    if as_json:
        print(json.dumps({
            "schema_version": 1, "ok": True, "cloud": snapshot.cloud, "fetched_at": snapshot.fetched_at,
            "regions": list(snapshot.regions), "instance_types": len(snapshot.instances),
            "prices": len(snapshot.prices), "cache": str(folder),
            "unmapped": [{"instance_type": u.instance_type, "gpu_spec": u.gpu_spec} for u in snapshot.unmapped],
            "skipped": len(snapshot.warnings), "notes": notes,
        }, indent=2, ensure_ascii=False), file=result_out)
        return 0
    print(_("Refreshed {cloud}: {types} GPU instance types, {prices} prices in {regions} (fetched {fetched}); "
            "cache: {folder}").format(cloud=snapshot.cloud, types=len(snapshot.instances), prices=len(snapshot.prices),
                                      regions=", ".join(snapshot.regions) or _("no region"),
                                      fetched=snapshot.fetched_at, folder=folder), file=result_out)
    for u in snapshot.unmapped:
        print(_("unmapped GPU: {instance_type} reports GPUSpec {gpu_spec!r}; not in the catalog, left out").format(
            instance_type=u.instance_type, gpu_spec=u.gpu_spec), file=result_out)
    if snapshot.warnings:
        print(_("{count} item(s) skipped (see `gpuplan catalog status --json`)").format(count=len(snapshot.warnings)),
              file=result_out)
    for note in notes:
        print(_("warning: {note}").format(note=note), file=error_out)
    return 0


def status(cache_dir: str | os.PathLike[str] | None = None, as_json: bool = False, out: TextIO | None = None) -> int:
    """Print, per cloud and source, the data's date and coverage; returns 0."""
    from gpuplan.providers.status import collect, render_text

    out = out or sys.stdout
    report = collect(cache_dir)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True), file=out)
    else:
        print(render_text(report), file=out)
    return 0


# The CLI calls this name: importing the submodule gpuplan.providers.status rebinds the package's
# `status` attribute to that module, so a caller that imports it late would get the module.
print_status = status


def freshness(cloud: str, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """One line for recommendations: which price data is used and how fresh it is."""
    from gpuplan.providers.status import freshness as _freshness

    return _freshness(cloud, cache_dir)
