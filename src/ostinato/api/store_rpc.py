"""The store's verbs over HTTP, for the remote store client (``ostinato --url``): one
``POST /api/v1/store/<verb>`` per verb of the reviewed lists of ``remote.verbs``, role by
role of the :class:`~ostinato.store.Store` interface, as the scheduler of docs/design/tasks.md
offers its storage as an "HTTP-based RPC service".

The body is a JSON object of the method's arguments by name, the answer
``{"result": …}``, both in the codec's forms (``ostinato.remote.codec``: times
ISO 8601 with a zone, durations in seconds, dataclasses as objects of their
fields), and each verb's JSON Schema is in the OpenAPI description. Each verb needs a token of the scope
its role's list gives it, or above (``domain.access``: read, worker, admin; docs/reference/security.md).
Errors are the API's usual body, with ``type`` (and ``record``, ``kind``, ``key``) so that
the client raises what the store raised. Not served: creating or upgrading the schema, API
tokens, imports, writing audit events, and waiting for schedule changes (each role's list says why).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..domain.errors import OstinatoError, ValidationError
from ..remote.verbs import Verb, error_status_and_body, store_verbs
from .request_handling import BY_SCOPE, context

router = APIRouter(prefix="/api/v1/store", tags=["store"])
#: the largest request body read, in bytes (a bulk of listed origins or tasks fits many times)
MAX_BODY_BYTES = 256 * 1024 * 1024


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_body(raw: bytes) -> Any:
    """The JSON of a request body (an empty body is no arguments); ValidationError naming ``body``."""
    if not raw.strip():
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:  # what orjson refuses but JSON allows: integers beyond 64 bits, escaped lone surrogates
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ValidationError("body", "a JSON object of the verb's arguments", str(exc)[:200]) from None


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits (in task arguments)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _error(exc: OstinatoError) -> JSONResponse:
    status, body = error_status_and_body(exc)
    return JSONResponse(body, status_code=status)


def _route(verb: Verb) -> None:
    async def run_verb(request: Request) -> Response:
        raw = await request.body()
        try:
            if len(raw) > MAX_BODY_BYTES:
                raise ValidationError("body", f"at most {MAX_BODY_BYTES} bytes", len(raw))
            arguments = verb.decode_arguments(parse_body(raw))
        except ValidationError as exc:
            return _error(exc)
        if "actor" in arguments:  # an audited verb: the actor is who the token says, not what the client wrote
            arguments["actor"] = request.state.token["name"]
        store = context(request).store
        try:
            result = await run_in_threadpool(getattr(store, verb.name), **arguments)
        except OstinatoError as exc:
            return _error(exc)
        try:
            encoded = verb.result.encode(result, "result")
        except ValidationError as exc:  # the store answered what cannot travel: ours to fix, not the caller's
            raise RuntimeError(f"{verb.name}: the result cannot be sent ({exc})") from exc
        return Response(_dumps({"result": encoded}), media_type="application/json")

    run_verb.__name__ = f"store_{verb.name}"
    router.add_api_route(
        f"/{verb.name}", run_verb, methods=["POST"], dependencies=BY_SCOPE[verb.scope],
        operation_id=f"store_{verb.name}", summary=verb.summary[:200],
        description=f"`{verb.role.__name__}.{verb.name}` ({verb.scope} token). {verb.summary}",
        openapi_extra={"requestBody": {"required": bool(verb.required), "content": {
            "application/json": {"schema": verb.request_schema()}}}},
        responses={200: {"description": "The verb's result", "content": {
            "application/json": {"schema": verb.response_schema()}}}},
    )


for _verb in store_verbs().values():
    _route(_verb)

__all__ = ["router"]
