"""The dashboard at ``/``: one server-rendered page for people (Jinja templates in
``templates/``, no JavaScript), refreshing itself every :data:`REFRESH_SECONDS`.

It shows every schedule's condition worst first, each visit type's queue depth,
activity, backlog and lag histogram (an inline SVG), the task types' ready,
in-flight and failed counts, and the recent failures (see :mod:`.dashboard_data`). Each
schedule's name links to its page, ``/dashboard/schedules/<name>``: its fire times (the catch-up
rule, what was sent, caught up after an outage or skipped by the rule) and its newest runs.
It reads on a phone (a viewport, tables that reflow into cards) and without
colour (states written as words with a symbol, hatched bars labelled in text).

Authentication: the page needs a token of the API, read or admin scope, checked
against the store's hashed tokens exactly as the API's bearer header is. A browser
cannot send that header, so ``/`` without a valid session answers the sign-in form
(401, no data); posting the secret to ``/dashboard/login`` opens a session
(:mod:`.console_session`: a random id in the ``ostinato_dashboard`` cookie, HttpOnly,
SameSite=Strict, Secure over HTTPS; its hash, its token and its end in the store).
Every request checks the session joined to its token's row, so revoking the token
(``ostinato token revoke``) shuts the page at its next refresh; a session ends after
12 hours unused and 7 days at the latest. ``/dashboard/logout`` deletes the session.
Programs may send ``Authorization: Bearer <secret>`` instead. The secret never travels
in a URL, nor in a cookie.
The page is served with ``Cache-Control: no-store`` and a content security policy
that allows no script at all, nor any style but the style sheets this server serves
(``/dashboard/static/*.css``, open to all: the sign-in page needs them): no ``style``
element or attribute is obeyed, so a text slipped into a page cannot restyle it.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from ..domain.errors import ValidationError
from ..domain.run_outcomes import outcome_of
from .console_origin import origin_problem
from .console_session import (
    COOKIE,
    SESSION_LIFETIME,
    client_address,
    close_session,
    find_session,
    open_session,
    refusal,
    sign_in_limiter,
)
from .dashboard_data import STATE_SYMBOL, gather, gather_schedule
from .dashboard_svg import lag_svg
from .read_source import read_note
from .request_handling import ApiContext, ApiError, _authorize, bearer, context

COOKIE_MAX_AGE = int(SESSION_LIFETIME.total_seconds())
REFRESH_SECONDS = 30
#: the most bytes a sign-in form may carry
MAX_FORM = 4096
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # the admin forms' Origin is this site's (no-referrer: null)
}
TEMPLATES = Path(__file__).parent / "templates"
#: the style sheets the pages link, ``/dashboard/static/NAME`` (in templates/, beside the pages)
STYLE_SHEETS = ("dashboard.css", "drill.css", "actions.css")

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(TEMPLATES))


# -- formatting, for the templates ---------------------------------------------------
def human_duration(span: timedelta | None) -> str:
    """``45 s``, ``12 min``, ``3 h 5 min``, ``2 d 4 h``, ``3.2 y``; an empty string for None."""
    if span is None:
        return ""
    seconds = abs(span.total_seconds())
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    if days < 730:
        return f"{days} d {hours} h" if hours else f"{days} d"
    return f"{days / 365.25:.1f} y"


def relative(moment: datetime | None, now: datetime) -> str:
    """``12 min ago`` or ``in 3 h``; ``never`` for None."""
    if moment is None:
        return "never"
    if abs((moment - now).total_seconds()) < 1:
        return "now"
    return f"{human_duration(now - moment)} ago" if moment <= now else f"in {human_duration(moment - now)}"


def count(value: int | None, cap: int | None = None) -> str:
    """``12,345``; ``≥10,000`` when a capped count reached its cap."""
    if value is None:
        return "–"
    text = f"{value:,}"
    return f"≥{text}" if cap is not None and value >= cap else text


def percent(ratio: float | None) -> str:
    return "–" if ratio is None else f"{100 * ratio:.0f} %"


templates.env.filters.update(duration=human_duration, count=count, percent=percent)
templates.env.globals.update(relative=relative, lag_svg=lag_svg, read_note=read_note, STATE_SYMBOL=STATE_SYMBOL,
                             REFRESH_SECONDS=REFRESH_SECONDS, outcome=outcome_of)


# -- authentication ------------------------------------------------------------------
def _check(request: Request, secret: str | None) -> dict[str, Any]:
    """The token whose secret this is, as the API's bearer check finds it (ApiError if none)."""
    credentials = HTTPAuthorizationCredentials(scheme="Bearer", credentials=secret) if secret else None
    return _authorize(request, credentials, "read")


def _sign_in(request: Request, status: int, message: str | None, headers: dict[str, str] | None = None) -> Response:
    extra = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    return templates.TemplateResponse(request, "login.html", {"message": message}, status_code=status,
                                      headers={**HEADERS, **extra, **(headers or {})})


def _signed_in(request: Request, credentials: HTTPAuthorizationCredentials | None) -> dict[str, Any] | Response:
    """The token of the request (its bearer header, else its cookie's session), or the sign-in page saying
    why not. ``request.state.form_key`` is then what the session's forms are signed with
    (:func:`.dashboard_actions.csrf_token`): the cookie's session id and the session's number, or the
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


# -- routes --------------------------------------------------------------------------
@router.get("/", response_class=HTMLResponse)
def dashboard(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
              ctx: ApiContext = Depends(context)) -> Response:
    token = _signed_in(request, credentials)
    if isinstance(token, Response):
        return token
    data = gather(ctx)
    return templates.TemplateResponse(request, "dashboard.html", {"d": data, "token_name": token["name"]},
                                      headers=HEADERS)


@router.get("/dashboard/schedules/{name}", response_class=HTMLResponse)
def schedule_page(name: str, request: Request, before: str | None = None,
                  credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                  ctx: ApiContext = Depends(context)) -> Response:
    """One schedule: its condition, its fire times (sent, caught up, skipped), its run grid (its newest
    runs at a glance: ``dashboard_grid``) and its runs, newest first (``before``, a run id, pages back)."""
    token = _signed_in(request, credentials)
    if isinstance(token, Response):
        return token
    from .dashboard_drill import whole_number  # it imports this module

    try:
        cursor = whole_number(before, "before", required=False)
    except ValidationError as refused:
        return templates.TemplateResponse(request, "schedule.html", {"page": None, "name": name,
                                                                     "problem": str(refused),
                                                                     "token_name": token["name"]},
                                          status_code=400, headers=HEADERS)
    found = ctx.store.get_schedule(name)
    if found is None:
        return templates.TemplateResponse(request, "schedule.html", {"page": None, "name": name,
                                                                     "token_name": token["name"]},
                                          status_code=404, headers=HEADERS)
    page = gather_schedule(ctx, found, cursor)
    return templates.TemplateResponse(request, "schedule.html", {"page": page, "name": name,
                                                                 "token_name": token["name"]}, headers=HEADERS)


@router.get("/dashboard/static/{name}")
def style_sheet(name: str, request: Request) -> Response:
    """One of :data:`STYLE_SHEETS`, to anyone; revalidated by its ETag (a new version is seen at once)."""
    if name not in STYLE_SHEETS:
        return Response(f"no style sheet named {name}\n", status_code=404, media_type="text/plain",
                        headers={"X-Content-Type-Options": "nosniff"})
    body = (TEMPLATES / name).read_bytes()
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {"Cache-Control": "no-cache", "ETag": etag, "X-Content-Type-Options": "nosniff"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/css; charset=utf-8", headers=headers)


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
