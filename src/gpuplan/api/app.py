"""The gpuplan REST API and its one-page web app (FastAPI; install ``gpuplan[web]``).

Endpoints (the request body of every POST is the workload, exactly as in a workload file; every
response is the CLI's ``--json`` document; docs/web.md has examples):

- ``POST /api/estimate``   -> ``gpuplan estimate --json``
- ``POST /api/recommend``  -> ``gpuplan recommend --json`` (``?top=5``)
- ``POST /api/plan``       -> the plan bundle of one plan as a zip (``?rank=1&lang=en``)
- ``POST /api/workload/yaml``, ``POST /api/workload/parse`` -> the workload as a YAML file, and back
- ``GET /api/gpus``, ``/api/instances``, ``/api/models``, ``/api/options`` -> catalog listings
- ``GET /healthz``, ``GET /openapi.json``, ``GET /docs`` (an offline endpoint list), ``GET /`` (the page)

Errors are JSON ``{"error", "hint", "field"}``: 422 for invalid input (the field and the reason),
413 for an oversized body, 415 for a body that is not JSON, 429 when one client has too much in
flight, 503 when busy or past the time budget (the computation's worker process is then killed:
:mod:`gpuplan.api.workers`); nothing a client sends should produce a 500. Request bodies are never
logged. The catalog listings behind the ``GET /api/...`` routes are :mod:`gpuplan.api.listings`.
"""


import asyncio
import json
import math
from contextlib import asynccontextmanager
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal, Optional

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpuplan import __version__
from gpuplan.api import listings, work
from gpuplan.api.limits import Limits
from gpuplan.api.middleware import GuardMiddleware, LOOPBACK_HOSTS
from gpuplan.api.models import (
    ERROR_RESPONSES,
    PARSE_REQUEST,
    PARSE_RESPONSES,
    WORKLOAD_EXAMPLES,
    YAML_RESPONSES,
    ESTIMATE_RESPONSES,
    LIST_RESPONSES,
    PLAN_RESPONSES,
    RECOMMEND_RESPONSES,
    ErrorResponse,
    Health,
)
from gpuplan.api.workers import Busy, Runner
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _
from gpuplan.workload import Workload, parse_workload

STATIC_FILES = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
                "util.js": "text/javascript; charset=utf-8", "charts.js": "text/javascript; charset=utf-8",
                "form.js": "text/javascript; charset=utf-8", "facts.js": "text/javascript; charset=utf-8",
                "request.js": "text/javascript; charset=utf-8",
                "app.css": "text/css; charset=utf-8", "docs.html": "text/html; charset=utf-8",
                "docs.js": "text/javascript; charset=utf-8"}

WorkloadBody = Annotated[Workload, Body(description="A gpuplan workload (the same keys as a workload file).",
                                         openapi_examples=WORKLOAD_EXAMPLES)]


# ------------------------------------------------------------------------------------------------ JSON out

def _finite(obj: Any) -> Any:
    """Replace non-finite floats by None (JSON has no NaN/Infinity) and tuples/sets by lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_finite(v) for v in obj]
    return obj


def _default(o: Any) -> Any:
    from gpuplan.schemas import json_default

    return json_default(o)


def json_response(obj: Any, status: int = 200) -> Response:
    """Compact UTF-8 JSON; NaN/Infinity become null instead of failing."""
    try:
        body = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_default)
    except ValueError:
        body = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_default)
    return Response(body.encode("utf-8"), status_code=status, media_type="application/json")


def error_response(status: int, message: str, hint: str = "", field: str | None = None) -> Response:
    return json_response(ErrorResponse(error=message, hint=hint, field=field).model_dump(), status)


# ------------------------------------------------------------------------------------------------ static

@cache
def _static(name: str) -> bytes:
    return (resources.files("gpuplan") / "api" / "static" / name).read_bytes()


# ------------------------------------------------------------------------------------------------ app

def create_app(limits: Limits | None = None, *, allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS) -> FastAPI:
    """The FastAPI application. ``allowed_hosts=None`` accepts any Host header (when bound beyond loopback)."""
    lim = limits or Limits()
    runner = Runner(lim)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        await asyncio.to_thread(runner.start)
        try:
            yield
        finally:
            await asyncio.to_thread(runner.stop)

    app = FastAPI(title="gpuplan", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Plan cloud GPU instances for training and serving models. The request body of every "
                              "POST is a gpuplan workload; responses are the CLI's --json documents.")
    app.state.limits = lim
    app.state.runner = runner
    app.add_middleware(GuardMiddleware, max_body_bytes=lim.max_body_bytes, max_json_depth=lim.max_json_depth,
                       allowed_hosts=allowed_hosts)

    # ---------------------------------------------------------------- error handlers
    @app.exception_handler(GpuplanError)
    async def _gpuplan_error(_req: Request, err: GpuplanError) -> Response:
        return error_response(422, err.message, err.hint_for("web"), err.field)

    @app.exception_handler(Busy)
    async def _busy(_req: Request, err: Busy) -> Response:
        resp = error_response(err.status, err.message, err.hint)
        resp.headers["Retry-After"] = str(err.retry_after_s)
        return resp

    @app.exception_handler(RequestValidationError)
    async def _invalid(_req: Request, exc: RequestValidationError) -> Response:
        return _validation_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_req: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400:  # FastAPI could not decode the body (not UTF-8, ...)
            return error_response(422, _("The request body is not valid UTF-8 JSON."),
                                  _("Send one JSON object of workload keys, encoded as UTF-8."))
        resp = error_response(exc.status_code, str(exc.detail))
        for key, value in (exc.headers or {}).items():
            resp.headers[key] = value
        return resp

    @app.exception_handler(Exception)
    async def _internal(_req: Request, exc: Exception) -> Response:  # pragma: no cover - a bug, never the input
        return error_response(500, _("Internal error ({name}).").format(name=exc.__class__.__name__),
                              _("This is a gpuplan bug: please report it with the workload."))

    # ---------------------------------------------------------------- compute
    @app.post("/api/estimate", tags=["compute"], responses=ESTIMATE_RESPONSES, response_class=Response,
              summary="Memory, time and throughput on fixed hardware (gpuplan estimate --json)")
    async def api_estimate(request: Request, workload: WorkloadBody) -> Response:
        return json_response(await runner.run(_client(request), work.do_estimate, workload, lim))

    @app.post("/api/recommend", tags=["compute"], responses=RECOMMEND_RESPONSES, response_class=Response,
              summary="Ranked instance plans (gpuplan recommend --json)")
    async def api_recommend(request: Request, workload: WorkloadBody,
                            top: Annotated[int, Query(ge=1, le=lim.max_top, description="plans to return")] = 5
                            ) -> Response:
        return json_response(await runner.run(_client(request), work.do_recommend, workload, lim, top))

    @app.post("/api/plan", tags=["compute"], responses=PLAN_RESPONSES, response_class=Response,
              summary="The plan bundle of one recommended plan, as a zip")
    async def api_plan(request: Request, workload: WorkloadBody,
                       rank: Annotated[int, Query(ge=1, le=lim.max_top, description="rank of the plan in "
                                                                                     "/api/recommend")] = 1,
                       lang: Annotated[Literal["en", "zh"], Query(description="language of PLAN.md")] = "en"
                       ) -> Response:
        data, filename, check = await runner.run(_client(request), work.do_plan_zip, workload, lim, rank, lang)
        # the preflight's verdict (gpuplan check): its findings are in the zip's preflight.json
        return Response(data, media_type="application/zip",
                        headers={"Content-Disposition": f'attachment; filename="{filename}"',
                                 "X-Gpuplan-Check": "passed" if check["ok"] else "failed",
                                 "X-Gpuplan-Check-Findings": str(len(check["findings"]))})

    # ---------------------------------------------------------------- workload files
    @app.post("/api/workload/yaml", tags=["workload"], responses=YAML_RESPONSES, response_class=Response,
              summary="The workload as the YAML file the CLI reads (to download and continue in the CLI)")
    async def api_workload_yaml(workload: WorkloadBody) -> Response:
        from gpuplan.render.bundle.safe import slugify
        from gpuplan.files.workload_files import dump_workload_yaml

        slug = slugify(workload.name or (workload.model if isinstance(workload.model, str) else None))
        return Response(dump_workload_yaml(work.workload_keys(workload)).encode("utf-8"),
                        media_type="application/yaml; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{slug}.yaml"'})

    @app.post("/api/workload/parse", tags=["workload"], responses=PARSE_RESPONSES, response_class=Response,
              openapi_extra=PARSE_REQUEST,
              summary="Read a workload file (YAML or JSON text, at most the body limit) into workload keys")
    async def api_workload_parse(request: Request) -> Response:
        raw = await request.body()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise GpuplanError(_("The uploaded file is not UTF-8 text (byte {start}).").format(start=exc.start),
                               hint=_("Save it as UTF-8.")) from None
        doc = await runner.run(_client(request), work.parse_workload_text, text)
        return json_response({"schema_version": 1, "workload": doc})

    # ---------------------------------------------------------------- catalog
    @app.get("/api/gpus", tags=["catalog"], responses=LIST_RESPONSES, response_class=Response,
             summary="GPUs in the catalog (gpuplan gpus --json)")
    async def api_gpus() -> Response:
        from gpuplan.catalog.hardware.gpus import load_gpus

        return json_response({"schema_version": 1, "gpus": [g.to_dict() for g in load_gpus().values()]})

    @app.get("/api/instances", tags=["catalog"], responses=LIST_RESPONSES, response_class=Response,
             summary="Instance types, filtered (gpuplan instances --json)")
    async def api_instances(
        family: Annotated[Optional[str], Query(max_length=100)] = None,
        gpu: Annotated[Optional[str], Query(max_length=100)] = None,
        min_gpu_memory: Annotated[Optional[float], Query(gt=0, le=4096, description="GiB per GPU")] = None,
        region: Annotated[Optional[str], Query(max_length=100)] = None,
        cloud: Annotated[str, Query(max_length=40)] = "alibaba",
    ) -> Response:
        return json_response(listings.instances(family, gpu, min_gpu_memory, region, cloud))

    @app.get("/api/models", tags=["catalog"], responses=LIST_RESPONSES, response_class=Response,
             summary="Bundled models (gpuplan models --json); ?q= searches ids and aliases")
    async def api_models(
        kind: Annotated[Optional[str], Query(max_length=40)] = None,
        q: Annotated[Optional[str], Query(max_length=100, description="case-insensitive search")] = None,
        brief: Annotated[bool, Query(description="only id, aliases, kind, family and parameter counts")] = False,
    ) -> Response:
        return json_response(listings.models(kind, q, brief))

    @app.get("/api/options", tags=["catalog"], summary="Allowed values for the page's pickers",
             response_class=Response)
    async def api_options() -> Response:
        return json_response(listings.options())

    @app.get("/api/messages", tags=["catalog"], response_class=Response,
             summary="The gettext catalog of one language (msgid -> text) for the page's own labels")
    async def api_messages(lang: Annotated[Literal["en", "zh"], Query()] = "zh") -> Response:
        from gpuplan.i18n import catalog_messages

        return json_response({"lang": lang, "messages": catalog_messages(lang)})

    # ---------------------------------------------------------------- misc
    @app.get("/healthz", tags=["meta"], response_model=Health)
    async def healthz() -> Health:
        return Health(version=__version__)

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        return _static_response("index.html")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return _static_response("docs.html")

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in STATIC_FILES:
            return error_response(404, f"No static file {name!r}.")
        return _static_response(name)

    app.openapi_schema = None
    _add_error_schema(app)
    return app


def _client(request: Request) -> str:
    """Who is asking, for the per-client limits: the peer address (uvicorn replaces it by the
    X-Forwarded-For address when the peer is a trusted proxy, by default 127.0.0.1 only)."""
    return request.client.host if request.client else "unknown"


def _add_error_schema(app: FastAPI) -> None:
    """Put ErrorResponse into components (the error responses refer to it)."""
    original = app.openapi

    def openapi() -> dict:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        comps = schema.setdefault("components", {}).setdefault("schemas", {})
        comps["ErrorResponse"] = ErrorResponse.model_json_schema()
        # FastAPI's default 422 body (HTTPValidationError) is not what this API returns.
        for path in schema.get("paths", {}).values():
            for op in path.values():
                if isinstance(op, dict) and "422" in op.get("responses", {}):
                    op["responses"]["422"] = {"description": ERROR_RESPONSES[422]["description"],
                                              "content": ERROR_RESPONSES[422]["content"]}
        for name in ("HTTPValidationError", "ValidationError"):
            comps.pop(name, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _static_response(name: str) -> Response:
    return Response(_static(name), media_type=STATIC_FILES[name],
                    headers={"Cache-Control": "no-cache"})


def _validation_response(exc: RequestValidationError) -> Response:
    """FastAPI's validation errors -> one {"error", "hint", "field"}; workload errors use the CLI's wording."""
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = tuple(first.get("loc", ()))
    kind = first.get("type", "")
    if kind == "json_invalid":
        return error_response(422, _("The request body is not valid JSON."),
                              _("Send one JSON object of workload keys with Content-Type: application/json."), None)
    if loc[:1] == ("body",):
        body = getattr(exc, "body", None)
        if body is None or kind == "missing" and len(loc) == 1:
            return error_response(422, _("The request body is empty."),
                                  _("Send a workload, e.g. {example}.").format(
                                      example='{"model": "Qwen/Qwen2.5-7B-Instruct", "task": "lora"}'), None)
        try:
            parse_workload(body, origin="The request body")
        except GpuplanError as err:
            return error_response(422, err.message, err.hint_for("web"), err.field)
        field = ".".join(str(p) for p in loc[1:]) or None
        return error_response(422, _("Invalid workload: {msg}.").format(msg=first.get("msg", "invalid value")),
                              _("See /openapi.json for the workload's keys and values."), field)
    field = ".".join(str(p) for p in loc[1:]) or None
    msg = first.get("msg", "invalid value")
    tmpl = (_("Invalid query parameter {field!r}: {msg}.") if loc[:1] == ("query",)
            else _("Invalid parameter {field!r}: {msg}."))
    return error_response(422, tmpl.format(field=field, msg=msg), _("See /openapi.json for the allowed values."), field)


def app_from_env() -> FastAPI:
    """Factory for multi-worker uvicorn (``serve(workers=N)``): settings come from the environment."""
    import os

    any_host = os.environ.get("GPUPLAN_API_ALLOW_ANY_HOST") == "1"
    return create_app(allowed_hosts=None if any_host else LOOPBACK_HOSTS)
