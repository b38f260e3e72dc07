"""The API's CPU-heavy work: estimate, recommend and the plan bundle, as plain functions.

Each function takes the parsed workload and the server's limits and returns what the endpoint
sends (a JSON-ready dict, or the zip bytes). They run inside a worker process
(:mod:`gpuplan.api.workers`), so they must be importable top-level functions with picklable
arguments and results. Errors are GpuplanErrors with the workload field filled in.
"""

from __future__ import annotations

import functools
import io
import json
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from gpuplan.api.limits import Limits, check_workload
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.workload import Workload

# Messages of catalog lookups -> the workload field they are about (lookups raise without a field).
_FIELD_BY_MESSAGE = (("Unknown model", "model"), ("Model config", "model"), ("Unknown GPU", "hardware.gpu"),
                     ("Unknown instance type", "hardware.instance_type"),
                     ("Unknown instance family", "constraints.families"), ("Unknown cloud", "constraints.clouds"),
                     ("TP ", "parallel"), ("PP ", "parallel"))
_FIELD_BY_KIND = {"model": "model", "GPU": "hardware.gpu", "instance type": "hardware.instance_type",
                  "instance family": "constraints.families", "cloud": "constraints.clouds"}
_TOP_LEVEL = set(Workload.model_fields) | {"rank", "top", "lang"}   # workload keys and query parameters


def _compute_field(err: GpuplanError) -> str | None:
    """The workload field an error raised while computing is about: model config keys live under
    ``model.``; catalog lookups (unknown GPU, instance type...) carry no field, so their message tells."""
    field = err.field
    if field:
        head = field.split(".", 1)[0]
        return field if head in _TOP_LEVEL else f"model.{field}"
    if err.kind in _FIELD_BY_KIND:
        return _FIELD_BY_KIND[err.kind]
    for prefix, name in _FIELD_BY_MESSAGE:
        if err.message.startswith(prefix):
            return name
    return None


def _with_field(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn``; re-raise its GpuplanError with the workload field filled in. (functools.wraps keeps
    the qualified name, so the wrapped function still pickles by reference into a worker.)"""
    @functools.wraps(fn)
    def wrapped(*args: Any, **kw: Any) -> Any:
        try:
            return fn(*args, **kw)
        except GpuplanError as err:
            raise err.with_field(_compute_field(err)) from None
        except ValidationError as exc:
            # A combination the workload model accepts but a derived variant does not (e.g. task qlora
            # with constraints.quantization [none]): still the input's fault, so a 422 with the reason.
            first: Mapping[str, Any] = exc.errors()[0] if exc.errors() else {}
            msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
            raise GpuplanError(_("This combination of workload settings is not possible: {msg}.").format(msg=msg),
                               hint=_("Change the conflicting settings (see the message)."),
                               field=".".join(str(p) for p in first.get("loc", ())) or None) from None
    return wrapped


def _check_model_ref(w: Workload) -> None:
    """The web API takes bundled names and inline mappings only: it never reads files named by a client."""
    if isinstance(w.model, str):
        from gpuplan.catalog.models import get_model

        try:
            get_model(w.model)
        except GpuplanError as err:
            name = w.model.strip()
            pathlike = name.endswith(".json") or name.startswith((".", "~", "/", "\\")) or ":\\" in name
            extra = _("The web API does not read config.json paths: paste the config as an inline mapping instead.")
            hint = err.hint_for("web")
            if pathlike:
                hint = (hint + " " + extra).strip()
            raise GpuplanError(err.message, hint=hint, web_hint=hint, field="model", kind=err.kind) from None


@_with_field
def do_estimate(w: Workload, limits: Limits) -> dict:
    from gpuplan.estimate.core import estimate

    check_workload(w, limits, search=False)
    _check_model_ref(w)
    return estimate(w).to_dict()


def _recommend(w: Workload, limits: Limits, top: int):
    from gpuplan.plan import recommend

    check_workload(w, limits, search=True)
    _check_model_ref(w)
    return recommend(w, top=top)


@_with_field
def do_recommend(w: Workload, limits: Limits, top: int) -> dict:
    """The ``recommend --json`` document."""
    return _recommend(w, limits, top).to_dict()


@_with_field
def do_plan_zip(w: Workload, limits: Limits, rank: int, lang: str) -> tuple[bytes, str, dict]:
    """Recommend, pick the plan of that rank, render its bundle, run the preflight (`gpuplan check`) on it and zip it
    with the report as ``preflight.json``: (zip bytes, file name, the report without its path)."""
    try:
        from gpuplan.render.bundle import build_bundle
        from gpuplan.render.bundle.safe import slugify
    except ImportError:  # pragma: no cover - the bundle renderer ships with gpuplan
        raise GpuplanError(_("Plan bundles are not available in this build."), hint=_("Upgrade gpuplan.")) from None
    rec = _recommend(w, limits, top=rank)
    doc = rec.to_dict()
    chosen = next((p for p in rec.plans if p.rank == rank), None)
    if chosen is None:
        if not rec.plans:
            raise GpuplanError(_("No plan satisfies this workload, so there is no bundle to build."),
                               hint=_("See binding_constraints in /api/recommend and relax that constraint."),
                               web_hint=_("Relax the binding constraint shown with the result."),
                               field="constraints")
        raise GpuplanError(_("There is no plan ranked {rank} (the search found {count}).").format(
                               rank=rank, count=len(rec.all_plans)),
                           hint=_("Use a rank listed by /api/recommend."), field="rank")
    from gpuplan.plan.bundle import bundle_inputs

    resolved, est = bundle_inputs(chosen, w)
    plan = next(p for p in doc["plans"] if p["rank"] == rank)   # the contract dict, with the ops advice
    plan["ranking_basis"] = doc.get("ranking_basis")             # PLAN.md's "Ranked by", as `gpuplan plan` writes it
    slug = slugify(w.name or (w.model if isinstance(w.model, str) else None))
    tmp = Path(tempfile.mkdtemp(prefix="gpuplan-api-"))
    try:
        folder = build_bundle(plan, resolved, est, tmp / slug, lang=lang,
                              rejected=doc["rejected"], pareto=doc["pareto"])
        from gpuplan.check import check_bundle
        from gpuplan.i18n import use_lang

        with use_lang(lang):   # the findings in the caller's language, as `gpuplan plan --lang` prints them
            report = check_bundle(folder)
        check = {k: v for k, v in report.to_dict().items() if k != "path"}
        (folder / "preflight.json").write_text(json.dumps(check, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.rglob("*")):
                if not path.is_file():
                    continue
                info = zipfile.ZipInfo(f"{slug}/{path.relative_to(folder).as_posix()}", date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (path.stat().st_mode & 0o777 | 0o100000) << 16
                zf.writestr(info, path.read_bytes())
        return buf.getvalue(), f"{slug}-plan.zip", check
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def warm() -> None:
    """Load the catalogs and run one small search, so that forked workers start with warm caches."""
    from gpuplan.catalog.hardware.gpus import load_gpus
    from gpuplan.catalog.models import list_models
    from gpuplan.catalog.prices.prices import load_offers

    load_gpus()
    load_offers()
    list_models()
    try:
        _recommend(Workload.model_validate({"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"}), Limits(), 1)
    except Exception:  # noqa: BLE001 - warming is best effort; a real request reports any problem
        pass


def parse_workload_text(text: str) -> dict:
    """A workload file's text (YAML or JSON, as the CLI reads it) -> the validated workload as JSON keys
    (errors name workload fields as they are, so no _with_field here)."""
    from gpuplan.workload import parse_workload
    from gpuplan.files.workload_files import load_yaml_text

    origin = _("The uploaded file")
    if not text.strip():
        raise GpuplanError(_("{origin} is empty.").format(origin=origin),
                           hint=_("Start with `model: <name>` and `task: <inference|pretrain|full|lora|qlora>`."))
    data = load_yaml_text(text, origin=origin)
    return workload_keys(parse_workload(data, origin=origin))


def workload_keys(w: Workload) -> dict:
    """The keys of a workload that were given (defaults left out), as JSON values."""
    return w.model_dump(mode="json", exclude_unset=True)
