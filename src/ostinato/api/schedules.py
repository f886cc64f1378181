"""Routes of schedules: list, get, create, pause and resume, their
condition (OK / WARNING / ERROR with a reason), next start and fire times, and runs.

A schedule is created from the JSON of ``ostinato schedule export`` without its
state (``created_at`` is the clock's now). Conditions and start times come from
:func:`~ostinato.domain.schedules.assess` with the configured timing, as on the
command line: a running schedule whose owner went silent (setting
``schedule_ping_timeout``) shows ``owner_silent``, and a retry waits the setting
``schedule_retry_backoff``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError as PydanticValidationError

from ..domain.durations import parse_time
from ..domain.errors import NotFoundError, ValidationError
from ..domain.firings import firing_to_dict
from ..domain.lookahead import holds_said
from ..domain.schedule_records import schedule_from_dict, schedule_to_dict
from ..domain.schedules import (
    Condition,
    RunMode,
    Schedule,
    ScheduleKind,
    ScheduleRun,
    assess,
    get_schedule_start_times,
)
from .bodies import ScheduleBody
from .request_handling import (
    ADMIN,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    READ,
    ApiContext,
    check_object,
    context,
    in_range,
    int_cursor,
    iso,
    page,
)

router = APIRouter(prefix="/api/v1", tags=["schedules"])

#: what a client defines; the rest of schedule_to_dict is state the scheduler keeps
DEFINITION_FIELDS = {"name", "kind", "task_type", "arguments", "mode", "scheduling_period", "cooldown_duration",
                     "cron_schedule", "cron_max_schedule_duration", "tz", "enabled", "max_expected_duration",
                     "max_allowed_duration", "blackout_periods", "dont_run_on_nodes", "catch_up", "retry_backoff",
                     "options", "expected_duration", "partial_failure_threshold"}
_PAGE = 1000
#: the ledger's newest entries shown with a schedule
FIRINGS_SHOWN = 10


def all_schedules(ctx: ApiContext) -> list[Schedule]:
    found: list[Schedule] = []
    after = ""
    while True:
        batch = ctx.store.list_schedules(after=after, limit=_PAGE)
        found += batch
        if len(batch) < _PAGE:
            return found
        after = batch[-1].name


def _condition_fields(condition: Condition) -> dict[str, Any]:
    return {"condition": condition.state.value, "reason": condition.reason.value if condition.reason else None,
            "deadline": iso(condition.deadline)}


def condition_of(ctx: ApiContext, schedule: Schedule, at: datetime) -> dict[str, Any]:
    condition = assess(schedule, at, ctx.settings.schedule_timing()).condition
    return {**_condition_fields(condition), "_rank": condition.state.rank}


def schedule_detail(ctx: ApiContext, schedule: Schedule, now: datetime) -> dict[str, Any]:
    """The schedule's every field (as exported), its condition and its start times."""
    assessed = assess(schedule, now, ctx.settings.schedule_timing())
    times = assessed.start_times
    return {**schedule_to_dict(schedule), **_condition_fields(assessed.condition), "running": schedule.running,
            "can_start_by": iso(times.can_start_by) if times else None,
            "should_start_by": iso(times.should_start_by) if times else None,
            "held": holds_said(schedule, times, holds=ctx.store.list_holds(now), now=now)}


def _get(ctx: ApiContext, name: str) -> Schedule:
    found = ctx.store.get_schedule(name)
    if found is None:
        raise NotFoundError("schedule", name)
    return found


def _at(ctx: ApiContext, at: str | None) -> datetime:
    now = ctx.clock.now()
    return now if at is None else in_range(parse_time(at, now, "at"), "at")


@router.get("/schedules", dependencies=READ, summary="List schedules, by name, with their conditions")
def list_schedules(limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
                   ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    now = ctx.clock.now()
    found = ctx.store.list_schedules(after=after or "", limit=limit + 1)
    return page(found, limit, lambda s: s.name, lambda s: schedule_detail(ctx, s, now))


@router.get("/schedule-conditions", dependencies=READ, summary="Every schedule's condition, worst first")
def list_conditions(at: str | None = Query(None, description="Evaluate at this time (ISO 8601, +2h …) instead of now."),
                    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
                    after: str | None = Query(None, description="The next of the previous page (a position)."),
                    ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    when = _at(ctx, at)
    rows = [{"name": s.name, **condition_of(ctx, s, when)} for s in all_schedules(ctx)]
    rows.sort(key=lambda r: (r.pop("_rank"), r["deadline"] or "9999", r["name"]))
    start = int_cursor(after)
    shown = rows[start:start + limit]
    more = start + limit < len(rows)
    return {"items": shown, "next": str(start + limit) if more else None}


@router.post("/schedules", dependencies=ADMIN, status_code=201, summary="Create a schedule")
def create_schedule(body: ScheduleBody = Body(..., examples=[
        {"name": "bills", "kind": "periodic", "task_type": "scrape-bills", "arguments": {"args": [], "kwargs": {"state": "ca"}},
         "scheduling_period": "24h", "cooldown_duration": "2h", "tz": "America/Los_Angeles",
         "blackout_periods": [{"start": "23:00", "end": "01:00"}]},
        {"name": "nightly", "kind": "calendar", "task_type": "export", "cron_schedule": "Mon..Fri *-*-* 02:00",
         "cron_max_schedule_duration": "4h", "tz": "Europe/Paris", "mode": "submit"}]),
        ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    data = check_object(body.fields(), DEFINITION_FIELDS, "a schedule's definition; its state is the scheduler's")
    now = ctx.clock.now()
    schedule = schedule_from_dict({**data, "created_at": now.isoformat()})
    if schedule.mode is not RunMode.SEND and ctx.store.get_task_type(schedule.task_type) is None:
        raise ValidationError("task_type", "a known task type", schedule.task_type)
    created = ctx.store.create_schedule(schedule, now, ctx.settings.schedule_timing())
    return schedule_detail(ctx, created, now)


@router.get("/schedules/{name}", dependencies=READ, summary="One schedule, its condition and start times")
def get_schedule(name: str, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    """With the newest entries of its ledger of fire times: what was sent, and what the catch-up rule skipped."""
    found = _get(ctx, name)
    grace = ctx.settings.schedule_timing().catch_up_grace
    firings = [firing_to_dict(f, grace) for f in ctx.store.list_firings(name, limit=FIRINGS_SHOWN)]
    return {**schedule_detail(ctx, found, ctx.clock.now()), "firings": firings}


@router.patch("/schedules/{name}", dependencies=ADMIN, summary="Change a schedule's definition: the fields given")
def update_schedule(name: str, request: Request,
                    patch: Any = Body(..., examples=[{"scheduling_period": "30m", "cooldown_duration": "5m"}]),
                    ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    """Only the fields given change, checked as at creation; its state (runs, owner, start times) stays,
    changed under the schedule's lock with its audit event (``enabled`` as a pause or a resume would).
    A schedule declared in code (Python, a Celery ``beat_schedule``) is a 409: change it there."""
    given = check_object(patch, DEFINITION_FIELDS - {"name"}, "a schedule's definition fields, its name aside")
    found = _get(ctx, name)
    current = {k: v for k, v in schedule_to_dict(found).items() if k in DEFINITION_FIELDS}
    try:
        body = ScheduleBody.model_validate({**current, **given})
    except PydanticValidationError as refused:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in refused.errors()], body=given) from None
    merged = schedule_from_dict({**schedule_to_dict(found), **body.fields()})
    if "task_type" in given and merged.mode is not RunMode.SEND and ctx.store.get_task_type(merged.task_type) is None:
        raise ValidationError("task_type", "a known task type", merged.task_type)
    now, timing, actor = ctx.clock.now(), ctx.settings.schedule_timing(), request.state.token["name"]
    updated = ctx.store.update_schedule(merged, now, timing, fields=sorted(set(given) - {"enabled"}), actor=actor)
    if "enabled" in given and merged.enabled != updated.enabled:
        change = ctx.store.resume_schedule if merged.enabled else ctx.store.pause_schedule
        updated = change(name, now, timing, actor=actor)
    return schedule_detail(ctx, updated, now)


@router.post("/schedules/{name}/pause", dependencies=ADMIN, summary="Stop picking it (a run in progress finishes)")
def pause_schedule(name: str, request: Request, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    """Changed under the schedule's lock, with its audit event (the token's name) in the same transaction."""
    now = ctx.clock.now()
    paused = ctx.store.pause_schedule(name, now, ctx.settings.schedule_timing(), actor=request.state.token["name"])
    return schedule_detail(ctx, paused, now)


@router.post("/schedules/{name}/resume", dependencies=ADMIN, summary="Pick it again")
def resume_schedule(name: str, request: Request, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    """Changed under the schedule's lock, with its audit event (the token's name) in the same transaction."""
    now = ctx.clock.now()
    resumed = ctx.store.resume_schedule(name, now, ctx.settings.schedule_timing(), actor=request.state.token["name"])
    return schedule_detail(ctx, resumed, now)


@router.post("/schedules/{name}/run-now", dependencies=ADMIN,
             summary="Start it as soon as a scheduler can (after a run in progress; not in a blackout)")
def run_schedule_now(name: str, request: Request, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    """Its period, cooldown and retry backoff are overridden once; never two runs at once: asked while
    one runs, it starts when that one ends. One the beats send gets a fire time of its own, which the beats
    send once at their next tick (``ostinato schedule run-now`` sends it itself). 409 for a paused schedule."""
    now = ctx.clock.now()
    asked = ctx.store.request_schedule_run(name, now, ctx.settings.schedule_timing(), actor=request.state.token["name"])
    return schedule_detail(ctx, asked, now)


@router.get("/schedules/{name}/condition", dependencies=READ, summary="OK, WARNING or ERROR, with the reason")
def schedule_condition(name: str, at: str | None = Query(None, description="Evaluate at this time instead of now."),
                       ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    condition = condition_of(ctx, _get(ctx, name), _at(ctx, at))
    condition.pop("_rank")
    return {"name": name, **condition}


@router.get("/schedules/{name}/next", dependencies=READ, summary="Next start times; a calendar rule's next firings")
def schedule_next(name: str, count: int = Query(5, ge=1, le=100), ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    found = _get(ctx, name)
    now = ctx.clock.now()
    timing = ctx.settings.schedule_timing()
    times = get_schedule_start_times(found, now, backoff=timing.backoff, retry_by_length=timing.retry_by_length)
    firings = []
    if found.kind is ScheduleKind.CALENDAR:
        firings = [{"at": iso(f.at), "note": f.note} for f in found.rule.next_fire_times(now, count)]
    return {"name": name, "enabled": found.enabled, "can_start_by": iso(times.can_start_by) if times else None,
            "should_start_by": iso(times.should_start_by) if times else None, "firings": firings}


def run_to_dict(run: ScheduleRun) -> dict[str, Any]:
    return {"id": run.id, "status": run.status.value, "started_at": iso(run.started_at), "ended_at": iso(run.ended_at),
            "owner_node": run.owner_node, "owner_name": run.owner_name, "detail": dict(run.detail)}


@router.get("/schedules/{name}/runs", dependencies=READ, summary="A schedule's runs, newest first")
def schedule_runs(name: str, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
                  ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    _get(ctx, name)
    before = int_cursor(after) or None
    runs = ctx.store.list_schedule_runs(name, limit=limit + 1, before_id=before)
    return page(runs, limit, lambda r: r.id, run_to_dict)
