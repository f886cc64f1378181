"""The application factory: :func:`create_app` wires the routes, the error handlers,
the token checks and the metrics to one store, settings and clock.

Open without a token: ``/health``, the OpenAPI description (``/openapi.json``) and
its page (``/docs``: Swagger UI 5, which reads the OpenAPI 3.1 the server declares, its assets
served from the ``fastapi-standalone-docs`` package, so that it works offline), which describe the
API and show no data.
``/metrics`` needs a read token unless ``open_metrics`` is set (``ostinato api
serve --open-metrics``, or ``OSTINATO_API_OPEN_METRICS=1``), for a Prometheus
that scrapes without credentials on a trusted network. Everything under
``/api/v1`` needs a token: read scope for GET, admin for the rest.
The dashboard at ``/`` needs a read token too, given once in its sign-in form, which
opens a session (see :mod:`ostinato.api.console.signin` and :mod:`ostinato.api.console.signin_sessions`).
Behind a reverse proxy, the ``trusted_proxies`` setting says whose forwarding headers are
believed (:mod:`ostinato.api.proxies`).
"""

from __future__ import annotations

import importlib.resources
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config import Settings
from ..domain.clock import Clock, SystemClock
from ..domain.errors import ConflictError, NotFoundError, SchemaError, ValidationError
from ..store import Store
from . import origins, schedules, store_rpc, tasks
from .bodies import document_errors, request_error
from .console import actions, routes_drill, routes_history, routes_main, signin
from .console.signin_sessions import SignInLimiter
from .metrics import RequestMetrics, StoreCollector, make_registry
from .proxies import TrustedProxies
from .read_source import ReadSourceHeaders
from .request_handling import READ, ApiContext, ApiError, context, json_safe, validation_body

API_VERSION = "1"
#: where /docs finds Swagger UI's own files
DOCS_ASSETS = "/docs-assets"
DESCRIPTION = """Ostinato's HTTP API: what the command line does, for programs.

Authenticate with `Authorization: Bearer <secret>`, a token made by
`ostinato token add NAME --scope read|admin` (the secret is shown once). Read
tokens may GET; admin tokens may do everything. Lists are paged: `limit` (at
most 1000) and `after`, the `next` of the previous page (null on the last page).
Errors are `{"error": {"field", "expected", "got", "message"}}`, with `index`
when an item of a bulk request is at fault: 400 bad input, 401 no valid token,
403 a token of too small a scope, 404 not found, 409 conflict. Durations are
seconds (or written `90s`, `12h`, `1d12h`, `P1DT2H`), times ISO 8601 with a zone.
"""


def create_app(store: Store | Callable[[], Store], settings: Settings | None = None, clock: Clock | None = None, *,
               open_metrics: bool = False) -> FastAPI:
    """An API over ``store`` (or a factory called once, on the first request, and whose store
    is closed at shutdown), reading ``settings`` and the time from ``clock``."""
    ctx = ApiContext(store, settings or Settings(), clock or SystemClock(), open_metrics=open_metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        ctx.close()

    app = FastAPI(title="Ostinato", version=API_VERSION, description=DESCRIPTION, lifespan=lifespan, docs_url=None,
                  redoc_url=None)
    _add_docs(app)
    app.state.ostinato = ctx
    app.state.sign_in_limiter = SignInLimiter()  # the console's failed sign-ins, per client address (this process's)
    default_openapi = app.openapi
    app.openapi = lambda: document_errors(default_openapi())  # type: ignore[method-assign]  # FastAPI's documented override
    collector = StoreCollector(lambda: ctx.store, ctx.clock.now, lambda: schedules.all_schedules(ctx),
                               lambda: ctx.settings.schedule_timing())
    registry, requests, latency = make_registry(collector)
    app.state.registry = registry
    app.add_middleware(RequestMetrics, requests=requests, latency=latency)
    app.add_middleware(ReadSourceHeaders)  # where each answer's reads were served (the read_db setting)
    # the outermost: the scheme and the client a trusted proxy forwarded, for everything inside
    app.add_middleware(TrustedProxies, networks=ctx.settings.trusted_proxies)
    _add_error_handlers(app)
    for router in (tasks.router, schedules.router, origins.router, routes_history.api_router, store_rpc.router):
        app.include_router(router)
    # the console
    app.include_router(routes_main.router)  # the page at / (a read token, by a sign-in form's session)
    app.include_router(signin.router)  # its sign-in and sign-out
    app.include_router(routes_drill.router)  # its drill-down pages: visit types, listers, origins, task types, tasks
    app.include_router(actions.router)  # its admin's actions (POST forms, CSRF-checked, audited)
    app.include_router(routes_history.router)  # the history's charts

    @app.get("/health", tags=["meta"], summary="Is the API up, and its database reachable at the right schema?")
    def health(ctx: ApiContext = Depends(context)) -> Any:
        state = ctx.store.schema_state()
        body = {"status": "ok" if state.up_to_date else "schema", "schema_version": state.current,
                "schema_latest": state.latest, "dialect": ctx.store.dialect}
        return JSONResponse(body, status_code=200 if state.up_to_date else 503)

    def metrics_response() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    if open_metrics:
        @app.get("/metrics", tags=["meta"], summary="Prometheus metrics (open: no token needed)", response_class=PlainTextResponse)
        def open_metrics_route() -> Response:
            return metrics_response()
    else:
        @app.get("/metrics", tags=["meta"], dependencies=READ, summary="Prometheus metrics (a read token)", response_class=PlainTextResponse)
        def metrics_route() -> Response:
            return metrics_response()

    return app


def _add_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from a packaged copy of its assets (no CDN: it works offline).

    The copy is the one ``fastapi-standalone-docs`` ships (Swagger UI 5, which reads OpenAPI 3.1;
    Swagger UI 4 cannot), with its LICENSE: only its files are used (``static/swagger``, and
    FastAPI's favicon in ``static/fastapi``), not its patching of FastAPI."""
    assets = importlib.resources.files("fastapi_standalone_docs") / "static"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="Ostinato API",
                                   swagger_js_url=f"{DOCS_ASSETS}/swagger/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_ASSETS}/swagger/swagger-ui.css",
                                   swagger_favicon_url=f"{DOCS_ASSETS}/fastapi/favicon.png")


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(ValidationError)
    async def bad_input(request: Request, exc: ValidationError) -> JSONResponse:
        return JSONResponse(validation_body(exc), status_code=400)

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> JSONResponse:
        return JSONResponse({"error": {"field": None, "expected": f"an existing {exc.kind}", "got": json_safe(exc.key),
                                       "message": str(exc)}}, status_code=404)

    @app.exception_handler(ConflictError)
    async def conflict(request: Request, exc: ConflictError) -> JSONResponse:
        return JSONResponse({"error": {"field": None, "expected": None, "got": None, "message": str(exc)}}, status_code=409)

    @app.exception_handler(SchemaError)
    async def schema(request: Request, exc: SchemaError) -> JSONResponse:
        return JSONResponse({"error": {"field": None, "expected": None, "got": None, "message": str(exc)}}, status_code=503)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        body = request_error(list(exc.errors()), exc.body)
        body["error"]["got"] = json_safe(body["error"]["got"])
        return JSONResponse(body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # a body that cannot be read (not UTF-8, not JSON)
            return JSONResponse({"error": {"field": "body", "expected": "a JSON document in UTF-8", "got": None,
                                           "message": f"body: {exc.detail}"}}, status_code=400)
        return JSONResponse({"error": {"field": None, "expected": None, "got": None, "message": str(exc.detail)}},
                            status_code=exc.status_code, headers=getattr(exc, "headers", None))
