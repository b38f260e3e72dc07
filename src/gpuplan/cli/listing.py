"""Catalog listings: gpus, instances, models, show, schema, and `catalog refresh|status|import|forget`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from gpuplan.cli.common import JsonOpt, LangOpt, WideOpt, _console, _emit_json, _Exit, app, catalog_app, run_guarded
from gpuplan.cli.options import _R
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

_SHOW_KINDS = (N_("instance"), N_("family"), N_("gpu"), N_("model"))   # `show`'s title: "{kind}: {name}"


@app.command(help=N_("List the GPUs in the catalog (dense tensor figures, with sources)."))
def gpus(as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    def body(lg: str) -> None:
        from gpuplan.catalog.hardware.gpus import load_gpus

        items = list(load_gpus().values())
        if as_json:
            _emit_json({"schema_version": 1, "gpus": [g.to_dict() for g in items]})
            return
        from gpuplan.render.text import gpus_table

        _console().print(gpus_table(items, lg))
    run_guarded(body, as_json, lang)


@app.command(help=N_("List instance types, filtered by family, GPU, GPU memory or region."))
def instances(
    family: Annotated[Optional[str], typer.Option(help=N_("Instance family, e.g. gn7i."))] = None,
    gpu: Annotated[Optional[str], typer.Option(help=N_("GPU name, e.g. A10 or A100-80GB."))] = None,
    min_gpu_memory: Annotated[Optional[float], typer.Option("--min-gpu-memory", help=N_("Minimum GiB per GPU."))] = None,
    region: Annotated[Optional[str], typer.Option(help=N_("Keep types with a known price in this region."))] = None,
    cloud: Annotated[str, typer.Option(help=N_("alibaba, aws or tencent."))] = "alibaba",
    as_json: JsonOpt = False, lang: LangOpt = None, wide: WideOpt = False,
) -> None:
    def body(lg: str) -> None:
        from gpuplan.catalog.hardware.query import filter_instances
        from gpuplan.catalog.prices.prices import basis_label, load_offers
        from gpuplan.plan.record import price_mark

        if min_gpu_memory is not None and not (0 < min_gpu_memory <= 4096):
            raise GpuplanError(_("--min-gpu-memory {min_gpu_memory} is out of range.").format(min_gpu_memory=min_gpu_memory), hint=_("Give GiB per GPU, e.g. 48."))
        items = filter_instances(cloud=cloud, family=family, gpu=gpu, min_gpu_memory_gib=min_gpu_memory, region=region)
        from gpuplan.catalog.hardware.regions import default_region

        shown = (region or default_region(cloud) or "").strip().lower()   # one region's prices, never a mix
        offers = [o for o in load_offers(cloud=cloud) if o.billing == "payg" and (not shown or o.region == shown)]
        price: dict[str, tuple[str, str]] = {}      # table: (price with its mark, region and date)
        payg_text: dict[str, str] = {}               # JSON: one string
        for o in sorted(offers, key=lambda o: o.as_of):
            where = _("{region}, {date}, {basis}").format(region=o.region, date=o.as_of.isoformat(),
                                                          basis=basis_label(o))
            payg_text[o.instance_type] = f"{o.currency} {o.price_per_hour:,.2f}/h ({where})"
            mark = price_mark("estimated" if o.estimated else o.kind)   # ~ for a derived or guessed price
            price[o.instance_type] = (f"{o.currency} {o.price_per_hour:,.2f}/h{mark}", where)
        if as_json:
            recs = []
            for i in items:
                d = i.to_dict()
                d["price_payg"] = payg_text.get(i.instance_type)
                recs.append(d)
            _emit_json({"schema_version": 1, "instances": recs})
            return
        if not items:
            _console().print(_("No instance types match."))
            return
        from gpuplan.render.fit import print_fitted
        from gpuplan.render.text import instances_table

        console = _console()
        print_fitted(console, instances_table(items, lg, prices=price, width=console.width, wide=wide), wide)
    run_guarded(body, as_json, lang)


_TIMM_EXAMPLES = ("timm/resnet50", "timm/vit_base_patch16_224", "timm/convnext_tiny", "timm/efficientnet_b0")


@app.command(help=N_("List the bundled models."))
def models(kind: Annotated[Optional[str], typer.Option(help=N_("decoder, encoder, vision, diffusion, speech..."))] = None,
           as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    def body(lg: str) -> None:
        from gpuplan.catalog.models import list_models

        items = list_models(kind) if kind else list_models()
        if as_json:
            _emit_json({"schema_version": 1, "models": [m.to_dict() for m in items]})
            return
        from gpuplan.render.text import models_table

        # timm's 1,100 architectures are one line, not 1,100 table rows (all of them are in --json)
        timm = [m for m in items if m.arch.startswith("timm-")]
        console = _console()
        console.print(models_table([m for m in items if not m.arch.startswith("timm-")], lg))
        if timm:
            console.print(_("… and {n} timm architectures, each a model name as it is or behind timm/ with a pretrained "
                            "tag ({examples}): the list is in `gpuplan models --json` and docs/model-library.md.").format(
                n=len(timm), examples=", ".join(m.id for m in timm if m.id in _TIMM_EXAMPLES)), soft_wrap=True)
    run_guarded(body, as_json, lang)


@app.command(help=N_("Show one GPU, instance type, family or model with its sources."))
def show(name: Annotated[str, typer.Argument(help=N_("A GPU, instance type, family or model."))],
         as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    def body(lg: str) -> None:
        from gpuplan.catalog.lookup import find_any

        kind, record = find_any(name)
        if as_json:
            _emit_json({"schema_version": 1, "kind": kind, kind: record})
            return
        from gpuplan.render.text import record_table

        _console().print(record_table(_("{kind}: {name}").format(kind=_(kind), name=name), record, lg))
    run_guarded(body, as_json, lang)


@app.command(help=N_("Print the JSON Schema of the workload (or of an output)."
         "\n\nThe output is always JSON (``--json`` is accepted like on every command). Keys and structure "
         "never change; ``--lang zh`` gives the properties Chinese titles and Chinese error messages."))
def schema(which: Annotated[str, typer.Argument(help=N_("workload, estimate or recommend"))] = "workload",
           as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    def body(lg: str) -> None:
        from gpuplan.schemas import localized_schema, schema_for

        _emit_json(localized_schema(schema_for(which), lg if lang else "en"))   # the locale alone keeps English
    run_guarded(body, as_json, lang)


@catalog_app.command("refresh", help=N_("Fetch live instance types, stock and prices (Alibaba Cloud OpenAPI) into the local cache."))
def catalog_refresh(
    region: _R = None,
    all_regions: Annotated[bool, typer.Option("--all-regions", help=N_("Every region the account can see."))] = False,
    cloud: Annotated[str, typer.Option(help=N_("alibaba or aws."))] = "alibaba",
    timeout: Annotated[float, typer.Option("--timeout", help=N_("Give up after this many seconds (no retry starts "
                                                             "later)."))] = 180.0,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    def body(lg: str) -> int:
        from gpuplan.providers import refresh

        if not (1 <= timeout <= 3600):
            raise GpuplanError(_("--timeout {timeout:g} is out of range.").format(timeout=timeout), hint=_("Give 1 to 3600 seconds."))
        return refresh(regions=list(region) if region else None, all_regions=all_regions, cloud=cloud,
                       as_json=as_json, timeout_s=timeout)

    raise _Exit(run_guarded(body, as_json, lang) or 0)


@catalog_app.command("status", help=N_("Show, per source, the date and coverage of the catalog and prices in use."))
def catalog_status(as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    def body(lg: str) -> int:
        from gpuplan.providers import print_status

        return print_status(as_json=as_json)

    raise _Exit(run_guarded(body, as_json, lang) or 0)


_FORMAT_NAMES = {"csv": N_("price CSV"), "describe-price": N_("DescribePrice answer"), "bill": N_("bill export")}
_FileArg = Annotated[Optional[Path], typer.Argument(help=N_("Your price file: a price CSV (its columns: "
                                                       "docs/catalog-schema.md), a DescribePrice JSON answer, or "
                                                       "an Alibaba bill export."))]
_TypeOpt = Annotated[Optional[str], typer.Option("--instance-type", help=N_("The instance type a DescribePrice answer "
                                                 "was asked for (with --remove: forget this type's prices)."))]


@catalog_app.command("import", help=N_("Keep your own prices (a console quote, a DescribePrice answer, a bill): "
                                               "they win over the bundled and refreshed prices in every answer until "
                                               "you remove them."))
def catalog_import(
    file: _FileArg = None,
    fmt: Annotated[str, typer.Option("--format", help=N_("auto, csv, describe-price or bill."))] = "auto",
    instance_type: _TypeOpt = None,
    region: Annotated[Optional[str], typer.Option("--region", help=N_("The region a DescribePrice answer was asked "
                                                                   "for."))] = None,
    billing: Annotated[Optional[str], typer.Option("--billing", help=N_("payg, subscription or spot (what a "
                                                                     "DescribePrice answer was asked for)."))] = None,
    date: Annotated[Optional[str], typer.Option("--date", help=N_("The quote's date (default: the file's, else "
                                                               "today)."))] = None,
    currency: Annotated[Optional[str], typer.Option("--currency", help=N_("CNY or USD, for a bill without a currency "
                                                                       "column."))] = None,
    remove: Annotated[bool, typer.Option("--remove", help=N_("Forget imported prices: all, those of FILE, or those "
                                                          "of --instance-type."))] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help=N_("Check the file and show the prices; keep "
                                                            "nothing."))] = False,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Keep your own prices (a console quote, a DescribePrice answer, a bill): they win over the bundled and
    refreshed prices in every answer until you remove them."""
    def body(lg: str) -> int:
        if remove:
            return _forget(file.name if file else None, instance_type, as_json)
        if file is None:
            raise GpuplanError(_("Give the price file to import."),
                               hint=_("gpuplan catalog import quote.csv (or --remove to forget imported prices)"))
        from gpuplan.catalog.prices.alibaba_quotes import QuoteContext
        from gpuplan.catalog.prices.price_files import import_prices

        ctx = QuoteContext(instance_type=instance_type, region=region, billing=billing, date=date, currency=currency)
        result = import_prices(file, fmt=fmt, ctx=ctx, dry_run=dry_run)
        if as_json:
            _emit_json({"schema_version": 1, **result.to_dict()})
            return 0
        console = _console()
        done = (_("Checked {n} price(s) from {file} ({format}); nothing kept (--dry-run).") if dry_run
                else _("Imported {n} price(s) from {file} ({format}), kept in {stored}; they win over the bundled "
                       "and refreshed prices in every answer."))
        console.print(done.format(n=len(result.file.offers), file=result.file.path.name,
                                  format=_(_FORMAT_NAMES[result.file.format]), stored=result.stored), highlight=False)
        from gpuplan.catalog.prices.prices import price_note

        for o in result.file.offers:
            console.print(f"  {o.instance_type}  {o.billing}  {price_note(o)}", highlight=False)
        for note in result.file.notes:
            console.print(f"  - {note}", highlight=False)
        return 0

    raise _Exit(_guard_cache(lambda: run_guarded(body, as_json, lang), as_json))


@catalog_app.command("forget", help=N_("Forget imported prices: all, one imported file's, or one instance type's."))
def catalog_forget(
    name: Annotated[Optional[str], typer.Argument(help=N_("The imported file's name (as `catalog status` lists it); "
                                                       "all imported prices when left out."))] = None,
    instance_type: _TypeOpt = None,
    as_json: JsonOpt = False, lang: LangOpt = None,
) -> None:
    """Forget imported prices (all, one imported file's, or one instance type's): the same as
    `gpuplan catalog import --remove`."""
    raise _Exit(_guard_cache(lambda: run_guarded(lambda lg: _forget(name, instance_type, as_json), as_json, lang),
                             as_json))


def _forget(name: str | None, instance_type: str | None, as_json: bool) -> int:
    from gpuplan.providers.imported import imports_dir, remove

    removed = remove(file_name=name, instance_type=instance_type)
    if as_json:
        _emit_json({"schema_version": 1, "removed": removed, "imports": str(imports_dir())})
        return 0
    console = _console()
    if not removed:
        console.print(_("No imported price matched; nothing removed (see `gpuplan catalog status`)."), highlight=False)
        return 0
    console.print(_("Removed {n} imported price(s); the bundled or refreshed prices apply again:").format(
        n=len(removed)), highlight=False)
    for r in removed:
        console.print(f"  {r['import']}: {r['instance_type']} {r['region']} {r['billing']} {r['currency']} "
                      f"{r['price']}/{r['unit']} ({r['as_of']})", highlight=False)
    return 0


def _guard_cache(run, as_json: bool) -> int:
    """Exit 1 with one line when the cache cannot be written or locked (nothing was changed)."""
    from gpuplan.providers.cache import CacheBusy

    try:
        return run() or 0
    except (CacheBusy, OSError) as exc:
        message = _("could not write your imported prices ({reason}); nothing was changed.").format(
            reason=getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
        if as_json:
            _emit_json({"error": message, "hint": "", "exit_code": 1})
        else:
            print(_("error: {message}").format(message=message), file=sys.stderr)
        return 1
