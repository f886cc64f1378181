"""The console's sign-in: the check every page's request passes (:func:`signed_in`), and the routes
that open and close a session, ``POST /dashboard/login`` and ``POST /dashboard/logout``.

Every page needs a token of the API, read or admin scope, checked against the store's hashed tokens
exactly as the API's bearer header is. A browser cannot send that header, so a page without a valid
session answers the sign-in form (401, no data); posting the secret to ``/dashboard/login`` opens a
session (:mod:`.signin_sessions`: a random id in the ``ostinato_dashboard`` cookie, HttpOnly,
SameSite=Strict, Secure over HTTPS; its hash, its token and its end in the store), once the form is
found to come from a page of this server (:mod:`.signin_origin`) and the address has not failed too
often. Every request checks the session joined to its token's row, so revoking the token
(``ostinato token revoke``) shuts the page at its next refresh; a session ends after 12 hours unused
and 7 days at the latest. ``/dashboard/logout`` deletes the session. Programs may send
``Authorization: Bearer <secret>`` instead. The secret never travels in a URL, nor in a cookie.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool

from ..request_handling import ApiContext, ApiError, authorize, context
from .render import HEADERS, templates
from .signin_origin import origin_problem
from .signin_sessions import (
    COOKIE,
    SESSION_LIFETIME,
    client_address,
    close_session,
    find_session,
    open_session,
    refusal,
    sign_in_limiter,
)

COOKIE_MAX_AGE = int(SESSION_LIFETIME.total_seconds())
#: the most bytes a form may carry (the sign-in form, and an admin's action)
MAX_FORM = 4096

router = APIRouter(include_in_schema=False)


def _check(request: Request, secret: str | None) -> dict[str, Any]:
    """The token whose secret this is, as the API's bearer check finds it (ApiError if none)."""
    credentials = HTTPAuthorizationCredentials(scheme="Bearer", credentials=secret) if secret else None
    return authorize(request, credentials, "read")


def _sign_in(request: Request, status: int, message: str | None, headers: dict[str, str] | None = None) -> Response:
    extra = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    return templates.TemplateResponse(request, "login.html", {"message": message}, status_code=status,
                                      headers={**HEADERS, **extra, **(headers or {})})


def signed_in(request: Request, credentials: HTTPAuthorizationCredentials | None) -> dict[str, Any] | Response:
    """The token of the request (its bearer header, else its cookie's session), or the sign-in page saying
    why not. ``request.state.form_key`` is then what the session's forms are signed with
    (:func:`.actions.csrf_token`): the cookie's session id and the session's number, or the
    bearer secret and the token's."""
    if credentials is not None:
        try:
            token = _check(request, credentials.credentials)
        except ApiError as exc:
            return _sign_in(request, exc.status, exc.message)
        request.state.form_key = (credentials.credentials, f"token {token['id']}")
        return token
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        return _sign_in(request, 401, None)
    session = find_session(context(request), session_id)
    if session is None:
        ended = _sign_in(request, 401, "the session is over (signed out, unused for 12 h, 7 days old, or its "
                                       "token revoked): sign in again")
        _forget(ended)
        return ended
    request.state.token = session["token"]
    request.state.form_key = (session_id, f"session {session['id']}")
    return session["token"]


def _forget(response: Response) -> None:
    """Clear the browser's session cookie."""
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


@router.post("/dashboard/login")
async def login(request: Request) -> Response:
    body = await request.body()
    if len(body) > MAX_FORM:
        return _sign_in(request, 400, f"the form may carry at most {MAX_FORM} bytes")
    foreign = origin_problem(request, required=False)  # another site signing this browser in as its own token
    if foreign:
        return _sign_in(request, 403, foreign)
    fields = parse_qs(body.decode("utf-8", "replace"))
    secret = (fields.get("token") or [""])[0].strip()
    if not secret:
        return _sign_in(request, 400, "token: a secret is needed (ostinato token add NAME --scope read)")
    limiter, address, now = sign_in_limiter(request), client_address(request), context(request).clock.now()
    wait = limiter.attempt(address, now)
    if wait:  # too many failures from this address: the secret is not even looked at
        return _sign_in(request, 429, refusal(request, wait), {"Retry-After": str(wait)})
    try:
        token = await run_in_threadpool(_check, request, secret)
    except ApiError as exc:  # counted as a failure
        return _sign_in(request, exc.status, exc.message)
    limiter.succeeded(address, now)
    session_id = await run_in_threadpool(open_session, context(request), token)
    response = RedirectResponse("/", status_code=303, headers=HEADERS)
    response.set_cookie(COOKIE, session_id, max_age=COOKIE_MAX_AGE, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
    return response


@router.post("/dashboard/logout")
def logout(request: Request, ctx: ApiContext = Depends(context)) -> Response:
    """Sign out: the cookie's session is deleted from the store, and the cookie from the browser."""
    session_id = request.cookies.get(COOKIE)
    if session_id:
        close_session(ctx, session_id)
    response = RedirectResponse("/", status_code=303, headers=HEADERS)
    _forget(response)
    return response
