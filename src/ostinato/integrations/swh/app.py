"""The HTTP application of the swh-scheduler protocol face (see docs/reference/swh-compat.md).

``POST /<route>`` for each operation (``task/create``, ``origins/grab_next``, …): the
body is the operation's arguments by name, msgpack or JSON by its ``Content-Type``;
the answer is the result, msgpack unless the request accepts JSON only. ``GET /``
says what the server is; ``GET /site-map`` lists the routes.

Errors are the protocol's: a map of ``type``, ``module``, ``args``, ``message`` and
``traceback`` (here also ``field``, ``expected`` and ``got`` for bad input), status
400 for what the caller can fix (the protocol's client raises ``StaleData`` and
``UnknownPolicy`` again by their names, anything else as its ``RemoteException``),
401/403 for a missing or too weak token, 404 for an unknown route, 500 otherwise.

Tokens are the API's (docs/reference/api.md): ``Authorization: Bearer <secret>``,
a read token for the operations that only read, an admin token for the others;
``require_token=False`` serves without (behind a boundary that keeps others out).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import perf_counter
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ...api.tokens import allows, hash_secret
from ...domain.clock import Clock, SystemClock
from ...domain.errors import ConflictError, NotFoundError, OstinatoError, ValidationError
from ...domain.visit_policies import GrabOptions
from ...domain.visits import FeedbackPolicy
from ...store import Store
from . import origins, tasks, visits  # noqa: F401 - each module registers its operations on import
from .operations import REGISTRY, Context, StaleData, UnknownPolicy
from .wire import WireError, dumps, loads

log = logging.getLogger(__name__)

#: the largest request body read, in bytes
MAX_BODY_BYTES = 256 * 1024 * 1024


def error_body(kind: str, message: str, args: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    body = {"type": kind, "module": "ostinato", "args": args if args is not None else [message], "message": message,
            "traceback": []}
    body.update(extra)
    return body


def _answer(value: Any, request: Request, status: int = 200) -> Response:
    content, media_type = dumps(value, request.headers.get("accept", ""))
    return Response(content, status_code=status, media_type=media_type)


def _exception_answer(exc: Exception, request: Request) -> Response:
    if isinstance(exc, UnknownPolicy):
        return _answer(error_body("UnknownPolicy", str(exc), [str(exc.got)]), request, 400)
    if isinstance(exc, ValidationError):
        got = exc.got if isinstance(exc.got, (str, int, float, bool, type(None))) else repr(exc.got)
        return _answer(error_body("ValueError", str(exc), field=exc.field, expected=exc.expected, got=got), request, 400)
    if isinstance(exc, StaleData):
        return _answer(error_body("StaleData", str(exc)), request, 400)
    if isinstance(exc, (ConflictError, NotFoundError)):
        return _answer(error_body(type(exc).__name__, str(exc)), request, 400)
    if isinstance(exc, OstinatoError):
        return _answer(error_body(type(exc).__name__, str(exc)), request, 500)
    log.exception("swh-rpc: an operation failed")
    return _answer(error_body(type(exc).__name__, str(exc)), request, 500)


def create_app(store: Store, clock: Clock | None = None, *, require_token: bool = True,
               reset: Callable[[], None] | None = None, feedback: FeedbackPolicy | None = None,
               grab_options: GrabOptions | None = None) -> Starlette:
    """The protocol over ``store``, of which it uses the tasks, origins, compat and tokens roles
    (:class:`~.operations.Context`); Ostinato's own policies, served under their names, with
    ``feedback`` and ``grab_options`` (the settings' ``[origins]``). ``reset`` (for a conformance
    harness only) is served as ``POST /ostinato-test/reset``, which empties the database."""
    ctx = Context.over(store, clock or SystemClock(), feedback=feedback, grab_options=grab_options)

    def authorize(request: Request, scope: str) -> Response | None:
        if not require_token:
            return None
        header = request.headers.get("authorization", "")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return _answer(error_body("PermissionError", "a bearer token is needed: Authorization: Bearer <secret>",
                                      field="authorization"), request, 401)
        token = ctx.tokens.find_api_token(hash_secret(secret.strip()), now=ctx.clock.now())
        if token is None or token["revoked_at"] is not None:
            why = "unknown token" if token is None else f"token {token['name']!r} was revoked"
            return _answer(error_body("PermissionError", why, field="authorization"), request, 401)
        if not allows(token["scope"], scope):
            return _answer(error_body("PermissionError", f"token {token['name']!r} has the {token['scope']} scope; "
                                      f"this operation needs {scope}", field="authorization"), request, 403)
        return None

    async def call(request: Request) -> Response:
        route = request.path_params["route"]
        op = REGISTRY.operations.get(route)
        if op is None:
            return _answer(error_body("NotFound", f"no operation at /{route}", field="route"), request, 404)
        refused = await run_in_threadpool(authorize, request, op.scope)
        if refused is not None:
            return refused
        raw = await request.body()
        try:
            if len(raw) > MAX_BODY_BYTES:
                raise WireError("body", f"at most {MAX_BODY_BYTES} bytes", len(raw))
            started = perf_counter()
            body = loads(raw, request.headers.get("content-type", ""))
            decoded = perf_counter()
            arguments = op.arguments(body)
            checked = perf_counter()
            store = [0.0]
            result = await run_in_threadpool(op.run, ctx.timed(store), **arguments)
            ran = perf_counter()
            content, media_type = dumps(result, request.headers.get("accept", ""))
        except Exception as exc:  # every failure is answered in the protocol's error shape
            return _exception_answer(exc, request)
        ended = perf_counter()
        # where the call's time went, in the standard Server-Timing header (milliseconds): reading the body,
        # checking the arguments, the store's verbs, and the rest of the operation with the answer's encoding
        timing = (f"decode;dur={(decoded - started) * 1000:.2f}, check;dur={(checked - decoded) * 1000:.2f}, "
                  f"store;dur={store[0] * 1000:.2f}, encode;dur={(ran - checked - store[0] + ended - ran) * 1000:.2f}")
        return Response(content, media_type=media_type, headers={"server-timing": timing})

    async def index(request: Request) -> Response:
        return PlainTextResponse("Ostinato: swh-scheduler 3.6 RPC protocol (see docs/reference/swh-compat.md)\n")

    async def site_map(request: Request) -> Response:
        rules = [{"rule": f"/{route}", "description": (op.run.__doc__ or "").strip()}
                 for route, op in sorted(REGISTRY.operations.items())]
        return JSONResponse(rules)

    async def not_found(request: Request) -> Response:
        return _answer(error_body("NotFound", f"no route {request.url.path}", field="route"), request, 404)

    async def do_reset(request: Request) -> Response:
        assert reset is not None
        await run_in_threadpool(reset)
        return _answer(None, request)

    routes = [Route("/", index, methods=["GET"]), Route("/site-map", site_map, methods=["GET"])]
    if reset is not None:
        routes.append(Route("/ostinato-test/reset", do_reset, methods=["POST"]))
    routes += [Route("/{route:path}", call, methods=["POST"]), Route("/{route:path}", not_found, methods=["GET"])]
    return Starlette(routes=routes)
