"""What an admin may do from the dashboard, each action protected against other sites and recorded.

The actions, each a ``POST`` of a form on a page (a GET never changes anything):

- on a schedule's page, ``/dashboard/schedules/NAME/pause``, ``…/resume`` (as the API's pause and
  resume) and ``…/run-now`` (``Store.request_schedule_run``: a paused schedule is refused with the
  store's reason, 409; one the beats send gets a fire time of its own, which they send at their next tick);
- on a task's page, ``/dashboard/tasks/ID/disable`` and ``…/enable`` (as ``ostinato task disable``
  and ``ostinato task respawn``: pending again at its next run, retries refilled);
- on a failed, permfailed or lost run of a task, ``/dashboard/task-runs/ID/retry``: its task made
  pending again *now*, retries refilled (``Store.retry_task_run``, as ``ostinato task retry RUN``: the
  rule checked under the run's and the task's lock). Only a task that is over (disabled, or completed)
  is respawned; a task still pending already has its retry or its next run due, and one in flight is
  running (or was disabled while it ran): all are refused (409), nothing changed.

Each answers a 303 back to the page, ``?done=CODE`` saying what was done (a code the page turns into
a sentence of its own, so that a link cannot make the page say anything else), or a page saying why
not: 401 without a valid token, 403 with a read token ("needs an admin token"), 403 for a form that
did not come from this site, 404 for a missing target, 409 for a conflict, 400 for bad input.

Protection against requests forged by other sites, for a browser's session (its id in the
``ostinato_dashboard`` cookie, which is already SameSite=Strict; see :mod:`.signin_sessions`):

- the request's ``Origin`` (or, without one, its ``Referer``) must be this server's own origin
  (the scheme, host and port the request was addressed to: behind a TLS proxy, the scheme the
  proxy says, see :mod:`ostinato.api.proxies`; ``Origin: null`` is refused);
- every form carries a CSRF token (:func:`csrf_token`): HMAC-SHA256, keyed by the session's id as
  the cookie holds it (the store keeps only its hash: no secret of the server is kept anywhere),
  over the session's number and a fixed label. Another site knows neither; it is checked in
  constant time. Signing out, or revoking the token, ends the session's forms with it.

A program that sends ``Authorization: Bearer <secret>`` needs neither (no other site can make a
browser send that header), but needs an admin token all the same.

Every action an admin token asked for, checked, is recorded in the store's audit trail
(:class:`~ostinato.domain.audit.AuditEvent`): the token's name, the app clock's time, the action, its
target and how it went (done, or refused with why). The pages show a target's newest events, and
the main page the newest of all (:func:`audit_trail`, a function of the templates).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool

from ...domain.audit import AuditEvent, one_line, target_of
from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.schedules import RunMode
from ...domain.status_words import TASK_STATUS_WORDS
from ...domain.task_actions import IN_FLIGHT, RETRIED_RUNS
from ...domain.tasks import Task, TaskRun, TaskStatus
from ..request_handling import ApiContext, bearer, context
from .gather_main import gather_schedule
from .render import HEADERS, relative, templates
from .signin import MAX_FORM, signed_in
from .signin_origin import origin_problem

router = APIRouter(include_in_schema=False)

#: the form field that carries the CSRF token
CSRF_FIELD = "csrf"
#: what the HMAC of a CSRF token covers beside the session's number (a new label makes every form stale)
_CSRF_LABEL = b"ostinato dashboard form v2\x00"
#: audit events shown on a schedule's or a task's page, and on the main page
TARGET_EVENTS_SHOWN = 10
ALL_EVENTS_SHOWN = 20
#: what ``?done=CODE`` makes a page say (an unknown code says nothing)
DONE_TEXT = {
    "paused": "Paused: no scheduler starts it until it is resumed (a run in progress finishes).",
    "already-paused": "It was already paused: nothing changed.",
    "resumed": "Resumed: the schedulers start it again when it is due.",
    "already-active": "It was not paused: nothing changed.",
    "run-requested": "Run asked for: a scheduler starts it as soon as it can (after a run in progress, "
                     "outside a blackout period).",
    "fire-time-handed": "A fire time of its own, now: the beats send it once, at their next tick.",
    "disabled": "Disabled: the task does not run until it is enabled.",
    "already-disabled": "It was already disabled: nothing changed.",
    "enabled": "Enabled: the task is pending again, at its next run, its retries refilled.",
    "already-enabled": "It was not disabled or completed: nothing changed.",
    "retried": "Retry asked for: the task is pending again now, its retries refilled; a runner takes it "
               "at its next pass.",
}


# -- the session's forms ------------------------------------------------------------------
def csrf_token(key: str, session: str) -> str:
    """The CSRF token of the forms of a session: keyed by its id as the cookie holds it, over its
    number (``session 12``). A program's bearer request is signed with its secret and its token's
    number (``token 3``), though it needs no form token (see the module's docstring)."""
    digest = hmac.new(key.encode("utf-8", "surrogatepass"), _CSRF_LABEL + session.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass(frozen=True, slots=True)
class AdminForms:
    """What the templates need for an admin's buttons: the CSRF token of the session's forms."""

    csrf: str
    actor: str
    field: str = CSRF_FIELD


def admin_forms(request: Request) -> AdminForms | None:
    """The admin's forms of the page being rendered, or None: a read session sees no button.

    The page's route has checked its session (``request.state.token`` and ``request.state.form_key``,
    see :func:`.signin.signed_in`); the CSRF token is made from the session it was checked with."""
    token = getattr(request.state, "token", None)
    if token is None or token.get("scope") != "admin":
        return None
    forms = getattr(request.state, "admin_forms", None)  # asked once per run row: made once per page
    if forms is None:
        form_key = getattr(request.state, "form_key", None)
        if form_key is None:
            return None
        forms = request.state.admin_forms = AdminForms(csrf_token(*form_key), token["name"])
    return forms


@dataclass(frozen=True, slots=True)
class AuditRow:
    """An audit event as a page lists it: with how long ago it was."""

    event: AuditEvent
    ago: str

    @property
    def refused(self) -> bool:
        return self.event.outcome.startswith("refused")


def audit_trail(request: Request, target: str | None = None, limit: int | None = None) -> list[AuditRow]:
    """The newest audit events of ``target`` (of every target if None), for a page."""
    ctx: ApiContext = context(request)
    shown = limit if limit is not None else (TARGET_EVENTS_SHOWN if target is not None else ALL_EVENTS_SHOWN)
    now = ctx.clock.now()
    return [AuditRow(e, relative(e.at, now)) for e in ctx.store.list_audit(target=target, limit=shown)]


def target_url(target: str) -> str | None:
    """The dashboard's page of an audit event's target, or None if it has none."""
    kind, _, key = target.partition(":")
    if kind == "schedule" and key:
        return _schedule_url(key)
    if kind == "task" and key.isascii() and key.isdigit():
        return _task_url(int(key))
    return None


def action_done(request: Request) -> str | None:
    """What the page says after an action (its ``?done=`` code), or None."""
    return DONE_TEXT.get(request.query_params.get("done", ""))


templates.env.globals.update(admin_forms=admin_forms, audit_trail=audit_trail, action_done=action_done,
                             target_of=target_of, target_url=target_url, RETRIED_RUNS=RETRIED_RUNS)


# -- the checks of a request -----------------------------------------------------------
def csrf_problem(fields: dict[str, list[str]], form_key: tuple[str, str]) -> str | None:
    """Why the form's CSRF token is not the session's, or None (compared in constant time)."""
    given = fields.get(CSRF_FIELD) or []
    if not given or not given[0]:
        return f"{CSRF_FIELD}: the form carries no CSRF token: reload the page and try again"
    if not hmac.compare_digest(given[0].encode("utf-8", "replace"), csrf_token(*form_key).encode()):
        return f"{CSRF_FIELD}: the form's CSRF token is not this session's: reload the page and try again"
    return None


# -- pages -----------------------------------------------------------------------------------
def _refused(request: Request, status: int, message: str, back: str | None, token: dict[str, Any] | None = None) -> Response:
    """A page saying, in one line, why the action was not done (and where to go back to)."""
    return templates.TemplateResponse(request, "action_error.html",
                                      {"status": status, "message": message, "back": back,
                                       "token_name": token["name"] if token else None},
                                      status_code=status, headers=HEADERS)


def _schedule_url(name: str) -> str:
    return f"/dashboard/schedules/{quote(name, safe='')}"


def _task_url(task_id: int) -> str:
    return f"/dashboard/tasks/{task_id}"


@dataclass(frozen=True, slots=True)
class Done:
    """What an action did: the code of its page's sentence, and its outcome as recorded."""

    code: str
    outcome: str
    #: the store's verb wrote the audit event itself, in the action's transaction
    audited: bool = False


#: what an action does, given the context, the time and who acts (the token's name): a Done, or a
#: ConflictError (recorded and shown), a NotFoundError or a ValidationError (shown; nothing was there to act on)
Run = Callable[[ApiContext, datetime, str], Done]
#: the page that shows a conflict's message (None: the plain page of _refused)
ConflictPage = Callable[[Request, ApiContext, dict[str, Any], str], "Response | None"]


@dataclass(frozen=True, slots=True)
class Action:
    """One action asked for: its name, the page it comes from, and what it does."""

    name: str
    #: the page of a refusal before the target is known (401, 403, bad input)
    back: str
    #: its target and the page to go back to, found once the request is checked (a NotFoundError if none)
    where: Callable[[ApiContext], tuple[str, str]]
    run: Run
    conflict_page: ConflictPage | None = None


async def _act(request: Request, credentials: HTTPAuthorizationCredentials | None, action: Action) -> Response:
    body = await request.body()
    if len(body) > MAX_FORM:
        return _refused(request, 400, f"body: the form may carry at most {MAX_FORM} bytes", action.back)
    fields = parse_qs(body.decode("utf-8", "replace"))
    return await run_in_threadpool(_checked_then_done, request, credentials, fields, action)


def _checked_then_done(request: Request, credentials: HTTPAuthorizationCredentials | None,
                       fields: dict[str, list[str]], action: Action) -> Response:
    token = signed_in(request, credentials)
    if isinstance(token, Response):
        return token
    if token["scope"] != "admin":
        return _refused(request, 403, f"{action.name} needs an admin token: token {token['name']!r} has the "
                        f"{token['scope']} scope", action.back, token)
    if credentials is None:  # the browser's session: the form must be this site's, from this session's page
        problem = origin_problem(request) or csrf_problem(fields, request.state.form_key)
        if problem:
            return _refused(request, 403, problem, action.back, token)
    ctx = context(request)
    now = ctx.clock.now()
    try:
        target, back = action.where(ctx)
        try:
            done = action.run(ctx, now, token["name"])
        except ConflictError as exc:
            message = str(exc)
            _record(ctx, now, token, action.name, target, f"refused: {message}")
            page = action.conflict_page(request, ctx, token, message) if action.conflict_page else None
            return page or _refused(request, 409, message, back, token)
    except ValidationError as exc:
        return _refused(request, 400, str(exc), action.back, token)
    except NotFoundError as exc:
        return _refused(request, 404, str(exc), None, token)
    if not done.audited:
        _record(ctx, now, token, action.name, target, done.outcome)
    return RedirectResponse(f"{back}?done={done.code}#actions", status_code=303, headers=HEADERS)


def _record(ctx: ApiContext, now: datetime, token: dict[str, Any], action: str, target: str, outcome: str) -> None:
    ctx.store.record_audit(AuditEvent(now, token["name"], action, target, one_line(outcome)))


# -- schedules ---------------------------------------------------------------------------------
def _schedule_conflict(name: str) -> ConflictPage:
    """The schedule's own page, saying why (409)."""
    def page(request: Request, ctx: ApiContext, token: dict[str, Any], message: str) -> Response | None:
        found = ctx.store.get_schedule(name)
        if found is None:
            return None
        return templates.TemplateResponse(request, "schedule.html",
                                          {"page": gather_schedule(ctx, found), "name": name,
                                           "token_name": token["name"], "refused": message},
                                          status_code=409, headers=HEADERS)
    return page


def _schedule_action(name: str, action: str, run: Run) -> Action:
    def where(ctx: ApiContext) -> tuple[str, str]:
        if ctx.store.get_schedule(name) is None:
            raise NotFoundError("schedule", name)
        return target_of("schedule", name), _schedule_url(name)
    return Action(f"schedule.{action}", _schedule_url(name), where, run, _schedule_conflict(name))


def _pause_or_resume(name: str, enabled: bool) -> Run:
    def run(ctx: ApiContext, now: datetime, actor: str) -> Done:
        found = ctx.store.get_schedule(name)  # for the page's sentence only: the verb reads under the lock
        if found is None:
            raise NotFoundError("schedule", name)
        change = ctx.store.resume_schedule if enabled else ctx.store.pause_schedule
        change(name, now, ctx.settings.schedule_timing(), actor=actor)  # with its audit event
        if found.enabled == enabled:
            return Done("already-active" if enabled else "already-paused",
                        "done: unchanged, it was " + ("not paused" if enabled else "already paused"), audited=True)
        return Done("resumed" if enabled else "paused", "done: " + ("resumed" if enabled else "paused"), audited=True)
    return run


def _run_now(name: str) -> Run:
    def run(ctx: ApiContext, now: datetime, actor: str) -> Done:
        asked = ctx.store.request_schedule_run(name, now, ctx.settings.schedule_timing(), actor=actor)
        if asked.mode is RunMode.SEND:
            return Done("fire-time-handed", "done: a fire time of its own, handed to the beats", audited=True)
        return Done("run-requested", "done: a run asked for now", audited=True)
    return run


@router.post("/dashboard/schedules/{name}/pause")
async def pause_schedule(name: str, request: Request,
                         credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
    return await _act(request, credentials, _schedule_action(name, "pause", _pause_or_resume(name, False)))


@router.post("/dashboard/schedules/{name}/resume")
async def resume_schedule(name: str, request: Request,
                          credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
    return await _act(request, credentials, _schedule_action(name, "resume", _pause_or_resume(name, True)))


@router.post("/dashboard/schedules/{name}/run-now")
async def run_schedule_now(name: str, request: Request,
                           credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
    return await _act(request, credentials, _schedule_action(name, "run-now", _run_now(name)))


# -- tasks -------------------------------------------------------------------------------------
def _id(value: str, field: str, what: str) -> int:
    """An id of the path: a positive whole number (ValidationError naming ``field`` if not)."""
    if not value.isascii() or not value.isdigit() or len(value) > 18 or int(value) < 1:
        raise ValidationError(field, what, one_line(value, 80))
    return int(value)


def _task_id(value: str) -> int:
    return _id(value, "task", "a task's id (a positive whole number)")


def _task(ctx: ApiContext, task_id: int) -> Task:
    found = ctx.store.get_tasks([task_id])
    if not found:
        raise NotFoundError("task", task_id)
    return found[0]


def _task_action(task_id: str, action: str, run: Callable[[ApiContext, datetime, int, str], Done]) -> Action:
    def where(ctx: ApiContext) -> tuple[str, str]:
        found = _task(ctx, _task_id(task_id))
        return target_of("task", found.id), _task_url(found.id)

    def checked(ctx: ApiContext, now: datetime, actor: str) -> Done:
        return run(ctx, now, _task_id(task_id), actor)
    back = _task_url(int(task_id)) if task_id.isascii() and task_id.isdigit() and len(task_id) <= 18 else "/"
    return Action(f"task.{action}", back, where, checked)


def _disable(ctx: ApiContext, now: datetime, task_id: int, actor: str) -> Done:
    if ctx.store.disable_tasks([task_id], now, actor=actor):  # with its audit event
        return Done("disabled", "done: disabled", audited=True)
    return Done("already-disabled", "done: unchanged, it was already disabled")


def _enable(ctx: ApiContext, now: datetime, task_id: int, actor: str) -> Done:
    task = _task(ctx, task_id)
    if ctx.store.respawn_tasks([task_id], now, actor=actor):  # with its audit event
        return Done("enabled", f"done: pending again at its next run ({task.next_run.isoformat()}), retries refilled",
                    audited=True)
    if task.status in (TaskStatus.DISABLED, TaskStatus.COMPLETED):  # left alone: a run of it is still in flight
        raise ConflictError(IN_FLIGHT.format(id=task_id))
    return Done("already-enabled", f"done: unchanged, it was {TASK_STATUS_WORDS[task.status]}")


@router.post("/dashboard/tasks/{task_id}/disable")
async def disable_task(task_id: str, request: Request,
                       credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
    return await _act(request, credentials, _task_action(task_id, "disable", _disable))


@router.post("/dashboard/tasks/{task_id}/enable")
async def enable_task(task_id: str, request: Request,
                      credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
    return await _act(request, credentials, _task_action(task_id, "enable", _enable))


def _task_run(ctx: ApiContext, run_id: str) -> TaskRun:
    wanted = _id(run_id, "run", "a task run's id (a positive whole number)")
    found = ctx.store.list_task_runs(after_id=wanted - 1, limit=1)
    if not found or found[0].id != wanted:
        raise NotFoundError("task run", wanted)
    return found[0]


def _retry(run_id: str) -> Run:
    def run(ctx: ApiContext, now: datetime, actor: str) -> Done:
        wanted = _id(run_id, "run", "a task run's id (a positive whole number)")
        task = ctx.store.retry_task_run(wanted, now, actor=actor)  # checked under the run's lock, with its event
        return Done("retried", f"done: pending again now, retries refilled ({task.next_run.isoformat()})",
                    audited=True)
    return run


@router.post("/dashboard/task-runs/{run_id}/retry")
async def retry_task_run(run_id: str, request: Request,
                         credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
    """The run's task is the target recorded (its page lists the retry) and the page gone back to."""
    def where(ctx: ApiContext) -> tuple[str, str]:
        task_id = _task_run(ctx, run_id).task
        return target_of("task", task_id), _task_url(task_id)
    return await _act(request, credentials, Action("task.retry", "/", where, _retry(run_id)))


# -- a GET of an action's address changes nothing: back to the page (a refused action's page, refreshed, lands here)
def _again(url: str) -> Response:
    return RedirectResponse(url, status_code=303, headers=HEADERS)


@router.get("/dashboard/schedules/{name}/pause")
@router.get("/dashboard/schedules/{name}/resume")
@router.get("/dashboard/schedules/{name}/run-now")
def schedule_page_again(name: str) -> Response:
    return _again(_schedule_url(name))


@router.get("/dashboard/tasks/{task_id}/disable")
@router.get("/dashboard/tasks/{task_id}/enable")
def task_page_again(task_id: str) -> Response:
    return _again(f"/dashboard/tasks/{quote(task_id, safe='')}")


@router.get("/dashboard/task-runs/{run_id}/retry")
def task_run_again(run_id: str) -> Response:
    return _again(f"/dashboard/task-runs/{quote(run_id, safe='')}")


__all__ = ["ALL_EVENTS_SHOWN", "AdminForms", "AuditRow", "CSRF_FIELD", "DONE_TEXT", "TARGET_EVENTS_SHOWN",
           "action_done", "admin_forms", "audit_trail", "csrf_token", "csrf_problem", "router"]
