"""The dashboard's drill-down pages, read-only, behind the same sign-in as ``/`` (a read token, from
the sign-in cookie or a bearer header), served with the same headers (no script, no cache):

- ``/dashboard/visit-types/<visit type>``: its metrics summed, a row per lister;
- ``/dashboard/listers/<id>?visit_type=…``: a lister's metrics and its listed origins, paged
  (``after`` and ``after_type``, the last origin shown);
- ``/dashboard/origins?url=…&visit_type=…``: one origin, its visits, its learnt change rate and
  when its next visit comes, and why;
- ``/dashboard/task-types/<name>``: its definition, its recent failures, the schedules that run it
  and its tasks, paged (``after``, a task id; see :mod:`.gather_tasks`);
- ``/dashboard/tasks/<id>``: a task and its runs newest first (``before``, a run id, pages back),
  a failed run with its error and traceback; ``/dashboard/task-runs/<id>`` leads to a run's row.

Each page reads what it shows in bounded reads (:mod:`.gather_drill`). Something unknown is
answered 404 with its page saying so ("No lister numbered 7"); bad input 400 with one line naming
the field and what was expected.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from ...domain.errors import ValidationError
from ...domain.limits import MAX_TYPE_BYTES, MAX_URL_BYTES
from ...domain.tasks import TaskRunStatus
from ..request_handling import ApiContext, bearer, context
from . import gather_drill as drill
from . import gather_grid  # noqa: F401  (the run grids: functions of the templates)
from . import gather_tasks as tasks
from .render import HEADERS, human_duration, templates
from .signin import signed_in

router = APIRouter(include_in_schema=False)

#: a task run's status as the page writes it: a symbol and a word, readable without colour
RUN_SYMBOL = {TaskRunStatus.EVENTFUL: "✔", TaskRunStatus.UNEVENTFUL: "✔", TaskRunStatus.FAILED: "✖",
              TaskRunStatus.PERMFAILED: "✖", TaskRunStatus.LOST: "✖", TaskRunStatus.SCHEDULED: "…",
              TaskRunStatus.STARTED: "▶"}


# -- links, for the templates --------------------------------------------------------
def visit_type_href(visit_type: str) -> str:
    return f"/dashboard/visit-types/{quote(visit_type, safe='')}"


def lister_href(lister_id: int, visit_type: str | None = None, **cursor: str) -> str:
    query = {**({"visit_type": visit_type} if visit_type else {}), **cursor}
    return f"/dashboard/listers/{lister_id}" + (f"?{urlencode(query)}" if query else "")


def origin_href(url: str, visit_type: str) -> str:
    return f"/dashboard/origins?{urlencode({'url': url, 'visit_type': visit_type})}"


def task_type_href(name: str, after: int | None = None) -> str:
    return f"/dashboard/task-types/{quote(name, safe='')}" + (f"?after={after}" if after else "")


def task_href(task_id: int, before: int | None = None) -> str:
    return f"/dashboard/tasks/{task_id}" + (f"?before={before}" if before else "")


def run_href(run_id: int) -> str:
    return f"/dashboard/task-runs/{run_id}"


def rate_text(rate: float | None) -> str:
    """``0.05 changes a day (one every 20 d)``."""
    if rate is None:
        return "–"
    if rate <= 0:
        return "no change"
    return f"{rate:.3g} changes a day (one every {human_duration(timedelta(days=1 / rate))})"


templates.env.filters.update(rate=rate_text)
templates.env.globals.update(visit_type_href=visit_type_href, lister_href=lister_href, origin_href=origin_href,
                             task_type_href=task_type_href, task_href=task_href, run_href=run_href,
                             RUN_SYMBOL=RUN_SYMBOL, task_state=tasks.task_state, run_state=tasks.run_state,
                             limits=drill, limits_tasks=tasks)  # the pages' limits, read when a page is made (ORIGINS_PAGE …)


# -- serving a page ------------------------------------------------------------------
class _Missing(Exception):
    """Nothing of that name: the page answers 404 saying "No <what>"."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def _serve(request: Request, credentials: HTTPAuthorizationCredentials | None, ctx: ApiContext, template: str,
           title: str, build: Callable[[], tuple[Any, dict[str, Any]] | Response]) -> Response:
    """The page ``template`` of what ``build`` gathers (the page and more of the context; or a response
    of its own), once signed in; 404 for :class:`_Missing`, 400 for bad input, each on the same page,
    saying it in one line."""
    token = signed_in(request, credentials)
    if isinstance(token, Response):
        return token
    base = {"token_name": token["name"], "title": title, "page": None}
    status = 200
    extra: dict[str, Any] = {}
    try:
        built = build()
        if isinstance(built, Response):
            return built
        base["page"], extra = built
    except _Missing as exc:
        status, base["missing"] = 404, exc.what
    except ValidationError as exc:
        status, base["problem"] = 400, str(exc)
    base.setdefault("now", base["page"].now if base["page"] is not None else ctx.clock.now())
    return templates.TemplateResponse(request, template, {**base, **extra}, status_code=status, headers=HEADERS)


def _found(page: Any, what: str) -> tuple[Any, dict[str, Any]]:
    if page is None:
        raise _Missing(what)
    return page, {}


# -- routes --------------------------------------------------------------------------
@router.get("/dashboard/visit-types/{visit_type:path}", response_class=HTMLResponse)
def visit_type_page(visit_type: str, request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                    ctx: ApiContext = Depends(context)) -> Response:
    """A visit type: its metrics summed over listers, and a row per lister."""
    def build() -> tuple[Any, dict[str, Any]]:
        name = drill.text(visit_type, "visit_type", MAX_TYPE_BYTES)
        return _found(drill.gather_visit_type(ctx, name), f"visit type named {name}")

    return _serve(request, credentials, ctx, "visit_type.html", f"visit type {visit_type}", build)


@router.get("/dashboard/listers/{lister_id}", response_class=HTMLResponse)
def lister_page(lister_id: str, request: Request, visit_type: str | None = None, after: str | None = None,
                after_type: str | None = None, credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                ctx: ApiContext = Depends(context)) -> Response:
    """A lister: its metrics per visit type and its listed origins (of ``visit_type``, when given), paged."""
    def build() -> tuple[Any, dict[str, Any]]:
        number = drill.whole_number(lister_id, "lister_id")
        kind = drill.text(visit_type, "visit_type", MAX_TYPE_BYTES, required=False)
        url = drill.text(after, "after", MAX_URL_BYTES, required=False)
        cursor = None
        if url is not None:
            cursor = (url, drill.text(after_type, "after_type", MAX_TYPE_BYTES))
        return _found(drill.gather_lister(ctx, number, kind, cursor), f"lister numbered {number}")

    return _serve(request, credentials, ctx, "lister.html", f"lister {lister_id}", build)


@router.get("/dashboard/origins", response_class=HTMLResponse)
def origin_page(request: Request, url: str | None = None, visit_type: str | None = None,
                credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                ctx: ApiContext = Depends(context)) -> Response:
    """One origin of one visit type: its listings, visits, change rate, and its next visit and why."""
    def build() -> tuple[Any, dict[str, Any]]:
        if url is None or not url.strip():
            raise ValidationError("url", "the origin's URL, as in /dashboard/origins?url=https%3A%2F%2F…&visit_type=git")
        address = drill.text(url, "url", MAX_URL_BYTES)
        kind = drill.text(visit_type, "visit_type", MAX_TYPE_BYTES, required=False)
        return _found(drill.gather_origin(ctx, address, kind),
                      f"origin named {address}" + (f" of visit type {kind}" if kind else ""))

    return _serve(request, credentials, ctx, "origin.html", f"origin {url or ''}", build)


@router.get("/dashboard/task-types/{name:path}", response_class=HTMLResponse)
def task_type_page(name: str, request: Request, after: str | None = None,
                   credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                   ctx: ApiContext = Depends(context)) -> Response:
    """A task type: its definition and its tasks by id, paged."""
    def build() -> tuple[Any, dict[str, Any]]:
        checked = drill.text(name, "task_type", 200)
        cursor = drill.whole_number(after, "after", required=False)
        page = drill.gather_task_type(ctx, checked, cursor)
        if page is None:
            raise _Missing(f"task type named {checked}")
        return page, {"last_runs": tasks.last_runs(ctx, page.tasks),  # a task its runs disabled reads "failed"
                      "failures": tasks.type_failures(ctx, checked), "schedules": tasks.type_schedules(ctx, checked)}

    return _serve(request, credentials, ctx, "task_type.html", f"task type {name}", build)


@router.get("/dashboard/tasks/{task_id}", response_class=HTMLResponse)
def task_page(task_id: str, request: Request, before: str | None = None,
              credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
              ctx: ApiContext = Depends(context)) -> Response:
    """A task and its runs, newest first; each failed run with its error and traceback."""
    def build() -> tuple[Any, dict[str, Any]]:
        number = drill.whole_number(task_id, "task_id")
        cursor = drill.whole_number(before, "before", required=False)
        page = drill.gather_task(ctx, number, cursor)
        if page is None:
            raise _Missing(f"task numbered {number}")
        last_run = tasks.last_run_of_page(ctx, page)
        # the partials of admin actions read ``task`` (and ``run``, per row)
        return page, {"task": page.task, "last_run": last_run, "task_note": tasks.task_note(page, last_run)}

    return _serve(request, credentials, ctx, "task.html", f"task {task_id}", build)


@router.get("/dashboard/task-runs/{run_id}", response_class=HTMLResponse)
def task_run_link(run_id: str, request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
                  ctx: ApiContext = Depends(context)) -> Response:
    """A task run's row on its task's page (the main page lists failed runs by their run's id, the task
    type's grid each run): the page of its newest runs, or, when the run is older than those, the page
    of its runs that starts at it (one read of at most a page of the task's newer runs)."""
    def build() -> Response:
        number = drill.whole_number(run_id, "run_id")
        run = drill.task_of_run(ctx, number)
        if run is None:
            raise _Missing(f"task run numbered {number}")
        newer = ctx.store.list_task_runs(task_id=run.task, after_id=run.id, limit=drill.RUNS_SHOWN)
        before = run.id + 1 if len(newer) >= drill.RUNS_SHOWN else None
        return RedirectResponse(f"{task_href(run.task, before)}#run-{run.id}", status_code=303, headers=HEADERS)

    return _serve(request, credentials, ctx, "task.html", f"task run {run_id}", build)
