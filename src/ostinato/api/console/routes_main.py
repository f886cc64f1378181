"""The console's main page at ``/``, a schedule's page and the style sheets: one server-rendered page
for people (:mod:`.render`: Jinja templates, no JavaScript), refreshing itself every
:data:`~.render.REFRESH_SECONDS`.

It shows every schedule's condition worst first, each visit type's queue depth,
activity, backlog and lag histogram (an inline SVG), the task types' ready,
in-flight and failed counts, and the recent failures (see :mod:`.gather_main`). Each
schedule's name links to its page, ``/dashboard/schedules/<name>``: its fire times (the catch-up
rule, what was sent, caught up after an outage or skipped by the rule) and its newest runs.
It reads on a phone (a viewport, tables that reflow into cards) and without
colour (states written as words with a symbol, hatched bars labelled in text).

Each page needs a read token, from the sign-in form's session or a bearer header
(:mod:`.signin`). The style sheets (``/dashboard/static/*.css``) are open to all: the sign-in
page needs them.
"""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from ...domain.errors import ValidationError
from ..request_handling import ApiContext, bearer, context
from .gather_drill import whole_number
from .gather_main import gather, gather_schedule
from .render import HEADERS, STYLE_SHEETS, TEMPLATES, templates
from .signin import signed_in

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def dashboard(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
              ctx: ApiContext = Depends(context)) -> Response:
    token = signed_in(request, credentials)
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
    runs at a glance: :mod:`.gather_grid`) and its runs, newest first (``before``, a run id, pages back)."""
    token = signed_in(request, credentials)
    if isinstance(token, Response):
        return token
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
    """One of :data:`~.render.STYLE_SHEETS`, to anyone; revalidated by its ETag (a new version is seen at once)."""
    if name not in STYLE_SHEETS:
        return Response(f"no style sheet named {name}\n", status_code=404, media_type="text/plain",
                        headers={"X-Content-Type-Options": "nosniff"})
    body = (TEMPLATES / name).read_bytes()
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {"Cache-Control": "no-cache", "ETag": etag, "X-Content-Type-Options": "nosniff"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/css; charset=utf-8", headers=headers)
