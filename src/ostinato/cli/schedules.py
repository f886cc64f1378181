"""``ostinato schedule …`` (see docs/design/deadline-greedy.md) and ``ostinato scheduler``.

add | list | show | update | condition | next | runs | pause | resume | run-now | delete | export | import.
A periodic schedule is added with ``--every PERIOD [--cooldown D]``, a calendar
one with ``--calendar EXPR --max-duration D`` (cron, systemd calendar event or
RRULE). ``condition`` with no name lists every schedule worst first;
``--at`` evaluates at another moment. ``export``/``import`` carry the full
state as JSON lines, for backup and migration.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import IO, Any

import click

from .. import extras
from ..domain.blackouts import parse_blackout_periods
from ..domain.calendars import MAX_PREVIEW
from ..domain.durations import format_duration, parse_duration
from ..domain.errors import NotFoundError, ValidationError, known_names
from ..domain.firings import (
    CatchUp,
    cursor_of,
    describe_catch_up,
    describe_firing,
    fire_time_after,
    firing_to_dict,
    has_fire_times,
)
from ..domain.lookahead import holds_said
from ..domain.next_start import next_start
from ..domain.run_items import failed_share
from ..domain.schedule_records import schedule_from_dict, schedule_to_dict
from ..domain.schedules import (
    RunMode,
    Schedule,
    ScheduleKind,
    ScheduleRun,
    ScheduleTiming,
    assess,
    describe_start_rule,
    get_schedule_start_times,
    reason_text,
    run_requested,
)
from ..services.deadline_scheduler import DeadlineScheduler
from .app import AppContext, cli, command_group, pass_app, readable, stop_on_signals
from .origins import read_json_lines
from .output import (
    DurationType,
    TimeType,
    WholeNumberType,
    echo_json,
    format_elapsed,
    format_time,
    format_when,
    outcome_lines,
    plural,
    print_rows,
)
from .services import metrics_options
from .tasks import build_arguments

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
_PAGE = 1000


@command_group("schedule", "Schedules: periodic or calendar, run by the deadline-greedy scheduler.")
def schedule() -> None:
    pass


def blackout_windows(values: tuple[str, ...]) -> list[dict[str, str]]:
    """The ``--blackout HH:MM-HH:MM`` options as the periods a schedule keeps (ValidationError if one is not)."""
    periods = []
    for value in values:
        start, sep, end = value.partition("-")
        if not sep:
            raise ValidationError("blackout", "HH:MM-HH:MM (a daily window in the schedule's zone)", value)
        periods.append({"start": start.strip(), "end": end.strip()})
    return periods


#: the options of ``schedule add`` by the schedule's field they set: an error names what the user typed
ADD_FLAGS = {"scheduling_period": "--every", "cooldown_duration": "--cooldown", "cron_schedule": "--calendar",
             "cron_max_schedule_duration": "--max-duration", "tz": "--tz", "mode": "--mode", "catch_up": "--catch-up",
             "retry_backoff": "--retry-backoff", "max_expected_duration": "--max-expected",
             "max_allowed_duration": "--max-allowed", "blackout_periods": "--blackout",
             "dont_run_on_nodes": "--dont-run-on", "task_type": "TASK_TYPE", "name": "NAME",
             "expected_duration": "--expected-duration", "partial_failure_threshold": "--partial-failure-threshold"}


@schedule.command("add")
@click.argument("name")
@click.argument("task_type")
@click.argument("args", nargs=-1)
@click.option("--every", "period", type=DurationType("--every"), help="Periodic: scheduling_period (how stale the data may get).")
@click.option("--cooldown", type=DurationType("--cooldown", allow_zero=True),
              help="Periodic: cooldown_duration, the wait after a good run (0s: back to back). Without it, a run "
                   "starts once a period, a tenth of it before it must.")
@click.option("--calendar", "calendar_rule", help="Calendar: cron, systemd calendar event or RRULE.")
@click.option("--max-duration", type=DurationType("--max-duration"), help="Calendar: cron_max_schedule_duration.")
@click.option("--tz", default="UTC", show_default=True, help="IANA zone of the calendar rule and blackout periods.")
@click.option("--mode", type=click.Choice([m.value for m in RunMode]), default="run", show_default=True,
              help="run: the scheduler runs the job; submit: it queues a one-shot task for the runner; send: the "
                   "Celery beats send TASK_TYPE (a Celery task's name) at each fire time.")
@click.option("--catch-up", "catch_up", default="latest", show_default=True, metavar="latest|skip|all:N",
              help="After an outage, run the latest missed fire time only, skip them, or run up to N of them.")
@click.option("--retry-backoff", metavar="D[,D…]", help="This schedule's retry backoff after failure 1, 2, 3 or more.")
@click.option("--max-expected", type=DurationType("--max-expected"), help="max_expected_duration: longer logs an error.")
@click.option("--max-allowed", type=DurationType("--max-allowed"), help="max_allowed_duration: longer stops the run (a failure).")
@click.option("--expected-duration", type=DurationType("--expected-duration"),
              help="expected_duration: how long a run is expected to last, in place of the moving average.")
@click.option("--partial-failure-threshold", type=float, metavar="SHARE",
              help="partial_failure_threshold: the failed share of a good run's items (0 to 1) above which it warns "
                   "(default: the setting schedule_partial_failure_threshold).")
@click.option("--blackout", multiple=True, metavar="HH:MM-HH:MM", help="A daily blackout period (repeatable).")
@click.option("--dont-run-on", multiple=True, metavar="NODE", help="A node that must not run it (repeatable).")
@click.option("--paused", is_flag=True, help="Add it paused.")
@click.option("--args-json", help="Positional arguments as a JSON array.")
@click.option("--kwargs-json", help="Keyword arguments as a JSON object.")
@json_option
@pass_app
def schedule_add(app: AppContext, name, task_type, args, period, cooldown, calendar_rule, max_duration, tz, mode,
                 catch_up, retry_backoff, max_expected, max_allowed, expected_duration, partial_failure_threshold,
                 blackout, dont_run_on, paused, args_json, kwargs_json, as_json) -> None:
    """Add schedule NAME running TASK_TYPE with ARGS (key=value for keyword arguments).

    Examples: ostinato schedule add bills scrape-bills state=ca --every 24h --cooldown 2h;
    ostinato schedule add nightly export --calendar "Mon..Fri *-*-* 02:00" --max-duration 4h --tz Europe/Paris
    """
    if (period is None) == (calendar_rule is None):
        raise ValidationError("schedule", "either --every (periodic) or --calendar (calendar)", None)
    store = app.store()
    if mode != RunMode.SEND.value and store.get_task_type(task_type) is None:
        raise ValidationError("task_type", "a known task type (see `ostinato task-type list`)", task_type)
    try:
        new = Schedule(
            name=name, kind=ScheduleKind.PERIODIC if period is not None else ScheduleKind.CALENDAR,
            task_type=task_type, created_at=app.clock.now(), arguments=build_arguments(args, args_json, kwargs_json),
            mode=RunMode(mode), scheduling_period=period, cooldown_duration=cooldown, cron_schedule=calendar_rule,
            cron_max_schedule_duration=max_duration, tz=tz, enabled=not paused, max_expected_duration=max_expected,
            max_allowed_duration=max_allowed, blackout_periods=parse_blackout_periods(blackout_windows(blackout)),
            dont_run_on_nodes=tuple(dont_run_on), catch_up=CatchUp.parse(catch_up),
            retry_backoff=None if retry_backoff is None else tuple(
                parse_duration(v.strip(), f"retry_backoff[{i}]", allow_zero=True)
                for i, v in enumerate(retry_backoff.split(","))),
            expected_duration=expected_duration, partial_failure_threshold=partial_failure_threshold,
        )
        created = store.create_schedule(new, app.clock.now(), app.settings.schedule_timing())
    except ValidationError as exc:
        raise readable(exc, ADD_FLAGS) from None
    if as_json:
        echo_json(schedule_to_dict(created))
    else:
        show_schedule(app, created)


def schedule_named(app: AppContext, name: str, *, read: bool = False) -> Schedule:
    """The schedule NAME (NotFoundError if none); ``read``: for a command that only reads (the ``read_db`` standby)."""
    found = (app.read_store() if read else app.store()).get_schedule(name)
    if found is None:
        raise _not_found(app, name)
    return found


def _not_found(app: AppContext, name: str) -> NotFoundError:
    """The error of a schedule NAME that does not exist, with the closest names of those that do."""
    known = [s.name for s in _all(app, read=True)]
    return NotFoundError("schedule", repr(name) + known_names(name, known, none="none added yet"))


def _all(app: AppContext, *, read: bool = False) -> list[Schedule]:
    store, found, after = (app.read_store() if read else app.store()), [], ""
    while True:
        page = store.list_schedules(after=after, limit=_PAGE)
        found += page
        if len(page) < _PAGE:
            return found
        after = page[-1].name


def _summary(schedule: Schedule, now: datetime, timing: ScheduleTiming) -> dict[str, Any]:
    assessed = assess(schedule, now, timing)
    condition, times = assessed.condition, assessed.start_times
    return {
        "name": schedule.name, "kind": schedule.kind.value,
        "timing": (f"every {format_duration(schedule.scheduling_period)}" if schedule.kind is ScheduleKind.PERIODIC
                   else f"{schedule.cron_schedule} ({schedule.tz})"),
        "task_type": schedule.task_type, "enabled": schedule.enabled, "condition": condition.state.value,
        "reason": condition.reason.value if condition.reason else None,
        "reason_text": reason_text(condition.reason) or None,
        "owner": f"{schedule.owner_node}/{schedule.owner_name}" if schedule.running else None,
        "last_good_start_at": schedule.last_good_start_at, "deadline": condition.deadline,
        "can_start_by": times.can_start_by if times else None,
        "should_start_by": times.should_start_by if times else None,
    }


@schedule.command("list")
@json_option
@pass_app
def schedule_list(app: AppContext, as_json: bool) -> None:
    """Every schedule, by name, with its condition and next start times."""
    now, timing = app.clock.now(), app.settings.schedule_timing()
    rows = [_summary(s, now, timing) for s in _all(app, read=True)]
    print_rows(rows, as_json, [("name", "name"), ("timing", "timing"), ("condition", "condition"), ("reason", "reason"),
                               ("owner", "running on"), ("should_start_by", "should start by")],
               title=None if as_json else plural(len(rows), "schedule"))


@schedule.command("show")
@click.argument("name")
@json_option
@pass_app
def schedule_show(app: AppContext, name: str, as_json: bool) -> None:
    """One schedule: its definition, state, condition and start times."""
    found = schedule_named(app, name, read=True)
    if as_json:
        summary = _summary(found, app.clock.now(), app.settings.schedule_timing())
        grace = app.settings.schedule_timing().catch_up_grace
        firings = [firing_to_dict(f, grace) for f in app.read_store().list_firings(name, limit=_SHOWN_FIRINGS)]
        echo_json({**schedule_to_dict(found), **{k: v for k, v in summary.items()
                                                   if k in ("condition", "reason", "deadline", "can_start_by",
                                                            "should_start_by")},
                   "start_rule": describe_start_rule(found) if found.kind is ScheduleKind.PERIODIC else None,
                   "next_fire_time": _next_fire_time(found), "firings": firings, "held": _held(app, found)})
    else:
        show_schedule(app, found)


def _definition_lines(found: Schedule) -> list[str]:
    """The rest of its definition, every field said (``none`` where unset): zone, blackouts, nodes, durations,
    retry backoff."""
    def duration(value: Any, unset: str) -> str:
        return format_duration(value) if value else unset

    blackouts = ", ".join(f"{b.start:%H:%M}-{b.end:%H:%M}" for b in found.blackout_periods) or "none"
    backoff = ", ".join(format_duration(d) for d in found.retry_backoff) if found.retry_backoff else \
        "the schedule_retry_backoff setting"
    return [f"  Zone: {found.tz}; blackout periods: {blackouts}",
            f"  Not run on: {', '.join(found.dont_run_on_nodes) or 'no node excluded'}",
            f"  Expected to take at most: {duration(found.max_expected_duration, 'not set')}; stopped after: "
            f"{duration(found.max_allowed_duration, 'never')}",
            f"  Retry backoff after failure 1, 2, 3…: {backoff}",
            f"  Expected run: {duration(found.expected_duration, 'the moving average of good durations')}; "
            f"partial failure above: {_share(found.partial_failure_threshold) or 'the setting'} of its items failed"]


def _share(value: float | None) -> str | None:
    return None if value is None else f"{value:.0%}" if value * 100 == round(value * 100) else f"{value:.2%}"


def show_schedule(app: AppContext, found: Schedule) -> None:
    """A schedule as ``schedule show`` writes it: its definition, condition, start times, runs and fire times."""
    now = app.clock.now()
    summary = _summary(found, now, app.settings.schedule_timing())
    lines = [f"Schedule {found.name} ({found.kind.value}, {'enabled' if found.enabled else 'paused'}): {summary['timing']}",
             f"  Job: {found.task_type} {found.arguments.to_json()} ({found.mode.value})",
             *([f"  Runs: {describe_start_rule(found)}"] if found.kind is ScheduleKind.PERIODIC else
               [f"  Must complete within {format_duration(found.cron_max_schedule_duration)} of each firing"]),
             *_definition_lines(found),
             f"  Condition: {summary['condition']}"
             + (f" ({summary['reason']}): {summary['reason_text']}" if summary["reason"] else "")]
    if found.mode is not RunMode.SEND:  # runs: sent by the beats, a schedule has fire times and no runs
        start = next_start(found, now, app.settings.schedule_timing())
        for label, value in [("Can start by", summary["can_start_by"]), ("Should start by", summary["should_start_by"]),
                             ("Last good start", found.last_good_start_at), ("Last good end", found.last_good_end_at),
                             ("Last end", found.last_end_at)]:
            why = f": {start.words}" if label == "Can start by" and start is not None else ""
            lines.append(f"  {label}: {format_when(value, now) if value else 'never'}{why}")
        lines.append(f"  Failures in a row: {found.failure_count or 0}; average good duration: "
                     f"{format_elapsed(found.average_good_duration) or 'unknown'}"
                     + (f" ± {format_elapsed(found.duration_spread)}" if found.duration_spread is not None else ""))
        if found.last_items_done is not None:
            share = failed_share(found.last_items_done, found.last_items_failed)
            lines.append(f"  Last good run's items: {found.last_items_done} done, {found.last_items_failed} failed"
                         + (f" ({_share(share)} failed)" if share is not None else ""))
        if (held := _held(app, found)) is not None:
            lines.append(f"  Lookahead: {held}")
        if found.run_requested_at is not None:
            lines.append(f"  Run asked for now: {format_when(found.run_requested_at, now)}, "
                         f"{'pending' if run_requested(found) else 'done'}")
    if found.mode is not RunMode.SEND:
        recent = app.store().list_schedule_runs(found.name, limit=_SHOWN_RUNS)
        lines.append(f"  Last runs (newest first; `schedule runs {found.name}` for more):" if recent else "  Runs: none yet")
        lines += _run_lines(recent, now, "    ")
    if found.running:
        pinged = f"last ping {format_when(found.owner_last_ping_at, now)}" if found.owner_last_ping_at else "no ping yet"
        lines.append(f"  Running on {found.owner_node}/{found.owner_name} since {format_when(found.owner_started_at, now)}; "
                     f"{pinged}")
    lines += _fire_time_lines(app, found, now)
    click.echo("\n".join(lines))


def _held(app: AppContext, found: Schedule) -> str | None:
    """Why the schedule is held back by lookahead, or that a slot is kept for it (None: neither)."""
    now = app.clock.now()
    return holds_said(found, assess(found, now, app.settings.schedule_timing()).start_times,
                      holds=app.read_store().list_holds(now), now=now)


_SHOWN_FIRINGS = 10
_SHOWN_RUNS = 5


def _next_fire_time(schedule: Schedule) -> datetime | None:
    return fire_time_after(schedule, cursor_of(schedule)) if has_fire_times(schedule) and schedule.enabled else None


def _fire_time_lines(app: AppContext, found: Schedule, now: datetime) -> list[str]:
    """Fire times: the catch-up rule, the last handled, the next, and the ledger's last entries (what
    was sent, and what the catch-up rule skipped)."""
    if not has_fire_times(found):
        return []
    lines = [f"  Catch-up after an outage: {describe_catch_up(found.catch_up)}"]
    if found.declared_by:
        lines.append(f"  Declared by {found.declared_by} ({found.declaration})")
    handled, upcoming = found.fired_through, _next_fire_time(found)
    lines.append(f"  Fire times handled through: {format_when(handled, now) if handled else 'none yet'}; "
                 f"next: {format_when(upcoming, now) if upcoming else 'none'}")
    grace = app.settings.schedule_timing().catch_up_grace
    for firing in app.store().list_firings(found.name, limit=_SHOWN_FIRINGS):
        lines.append(f"    {describe_firing(firing, lambda t: format_when(t, now), grace)}")
    return lines


@schedule.command("condition")
@click.argument("name", required=False)
@click.option("--at", type=TimeType(), help="Evaluate at this moment instead of now.")
@json_option
@pass_app
def schedule_condition(app: AppContext, name: str | None, at: datetime | None, as_json: bool) -> None:
    """The condition (OK / WARNING / ERROR, with its reason) of NAME, or of every schedule worst first."""
    when, timing = at or app.clock.now(), app.settings.schedule_timing()
    found = [schedule_named(app, name, read=True)] if name else _all(app, read=True)
    rows = []
    for item in found:
        condition = assess(item, when, timing).condition
        rows.append({"name": item.name, "condition": condition.state.value,
                     "reason": condition.reason.value if condition.reason else None,
                     "reason_text": reason_text(condition.reason) or None, "deadline": condition.deadline,
                     "_rank": condition.state.rank})
    rows.sort(key=lambda r: (r.pop("_rank"), r["deadline"] or datetime.max.replace(tzinfo=when.tzinfo), r["name"]))
    print_rows(rows, as_json, [("name", "name"), ("condition", "condition"), ("reason", "reason"),
                               ("reason_text", "in words"), ("deadline", "deadline")])
    if any(r["condition"] == "ERROR" for r in rows):
        raise SystemExit(1 if not as_json else 0)


@schedule.command("next")
@click.argument("name")
@click.option("--count", "-n", type=WholeNumberType(1, field="--count", maximum=MAX_PREVIEW), default=5, show_default=True,
              help=f"How many firings (at most {MAX_PREVIEW:,}).")
@json_option
@pass_app
def schedule_next(app: AppContext, name: str, count: int, as_json: bool) -> None:
    """The next firings of a calendar schedule's rule (a periodic one: its start times)."""
    found = schedule_named(app, name)
    now = app.clock.now()
    if found.kind is ScheduleKind.PERIODIC:
        times = get_schedule_start_times(found, now, backoff=app.settings.schedule_timing().backoff)
        assert times is not None, "a periodic schedule always has start times (None: a calendar rule's end)"
        echo_json({"can_start_by": times.can_start_by, "should_start_by": times.should_start_by}) if as_json else \
            click.echo(f"can start by {format_time(times.can_start_by)}, should start by {format_time(times.should_start_by)}")
        return
    firings = found.rule.next_fire_times(now, count)
    rows = [{"at": f.at, "note": f.note} for f in firings]
    print_rows(rows, as_json, [("at", "at"), ("note", "daylight-saving note")])


@schedule.command("runs")
@click.argument("name")
@click.option("--limit", type=WholeNumberType(1), default=20, show_default=True)
@json_option
@pass_app
def schedule_runs(app: AppContext, name: str, limit: int, as_json: bool) -> None:
    """A schedule's run history, newest first."""
    schedule_named(app, name, read=True)
    runs = app.read_store().list_schedule_runs(name, limit=limit)
    if as_json:
        echo_json([{"id": r.id, "status": r.status.value, "started_at": r.started_at, "ended_at": r.ended_at,
                    "owner": f"{r.owner_node}/{r.owner_name}", "detail": dict(r.detail)} for r in runs])
        return
    click.echo("\n".join(_run_lines(runs, app.clock.now(), "")) if runs else "No runs yet")


def _run_lines(runs: Sequence[ScheduleRun], now: datetime, indent: str) -> list[str]:
    """Each run on a line (status, start, how long, owner), its error, traceback and result under it."""
    lines = []
    for r in runs:
        took = f", took {format_elapsed(r.ended_at - r.started_at)}" if r.ended_at else ", running"
        lines.append(f"{indent}{r.id}: {r.status.value}, started {format_when(r.started_at, now)}{took}, "
                     f"on {r.owner_node}/{r.owner_name}")
        lines.extend(outcome_lines(r.detail, indent + "    "))
    return lines


def _set_enabled(app: AppContext, name: str, enabled: bool) -> None:
    """Through the store's own verb: changed under the schedule's lock, with its audit event."""
    found = schedule_named(app, name)  # an unknown name is answered with the closest ones
    change = app.store().resume_schedule if enabled else app.store().pause_schedule
    change(name, app.clock.now(), app.settings.schedule_timing(), actor=app.actor)
    if found.enabled == enabled:
        click.echo(f"{name} was {'not paused' if enabled else 'already paused'}: unchanged")
    else:
        click.echo(f"{'Resumed' if enabled else 'Paused'} {name}")


@schedule.command("pause")
@click.argument("name")
@pass_app
def schedule_pause(app: AppContext, name: str) -> None:
    """Stop picking NAME (a run in progress finishes)."""
    _set_enabled(app, name, False)


@schedule.command("resume")
@click.argument("name")
@pass_app
def schedule_resume(app: AppContext, name: str) -> None:
    """Pick NAME again (paused by `schedule pause` or `schedule add --paused`); it starts when it can."""
    _set_enabled(app, name, True)


@schedule.command("run-now")
@click.argument("name")
@click.option("--app", "celery_app", metavar="MODULE",
              help="The Celery app of a schedule the beats send, as celery -A takes it (default: its beat's).")
@pass_app
def schedule_run_now(app: AppContext, name: str, celery_app: str | None) -> None:
    """Start NAME as soon as a scheduler can, whatever its period, cooldown or retry backoff say.

    Never beside a run in progress: asked while one runs, it starts when that one ends. A blackout
    period is still waited out. Its next runs then follow its rule again. A schedule the beats send
    (mode send) is sent once, now, through its Celery app, as a fire time of its own."""
    found = app.store().get_schedule(name)
    if found is not None and found.mode is RunMode.SEND:
        _send_now(app, found, celery_app)
        return
    now = app.clock.now()
    timing = app.settings.schedule_timing()
    try:
        asked = app.store().request_schedule_run(name, now, timing, actor=app.actor)
    except NotFoundError:
        raise _not_found(app, name) from None
    start = next_start(asked, now, timing)
    if asked.running:
        when = f"is running on {asked.owner_node}/{asked.owner_name}: the run asked for starts when that one ends"
    elif start is not None and start.at > now:  # each later start by its cause (the domain lifts the backoff)
        waits = "is in a blackout period" if start.blackout else f"waits for {start.why}"
        when = f"{waits}: the run asked for starts {format_when(start.at, now)}"
    else:
        when = "starts as soon as a scheduler picks it (`ostinato scheduler` on this database)"
    click.echo(f"Asked {name} to run now: it {when}")


def _send_now(app: AppContext, found: Schedule, celery_app: str | None) -> None:
    """Send a beat-sent schedule once now, through its Celery app (``integrations.celery.run_now``)."""
    extras.require("celery", "schedule run-now of a schedule the beats send")
    from ..integrations.celery.run_now import app_name, load_app, send_now

    module = celery_app or app_name(found.declared_by)
    if module is None:
        raise ValidationError("--app", "the Celery app that sends it (celery -A's MODULE): it was not declared "
                              "by a beat", found.name)
    claim = send_now(app.store(), load_app(module), found.name, app.clock, actor=app.actor,
                     sender=f"{app.settings.node}/run-now-{os.getpid()}", lease=app.settings.beat_lease)
    click.echo(f"Sent {found.name} once now through Celery ({module}): task {claim.task}, "
               f"fire time {claim.nominal_at.isoformat()}")


@schedule.command("delete")
@click.argument("name")
@pass_app
def schedule_delete(app: AppContext, name: str) -> None:
    """Delete NAME and its run history."""
    if not app.store().delete_schedule(name, app.clock.now(), actor=app.actor):
        raise _not_found(app, name)
    click.echo(f"Deleted {name}")


@schedule.command("export")
@click.option("--out", type=click.File("w"), default="-", help="Where to write (default: stdout).")
@pass_app
def schedule_export(app: AppContext, out: IO[str]) -> None:
    """Every schedule with its full state, one JSON object per line."""
    for item in _all(app):
        out.write(json.dumps(schedule_to_dict(item), ensure_ascii=False) + "\n")


@schedule.command("import")
@click.argument("file", metavar="FILE|-", type=click.File("rb"))
@click.option("--replace", "replace_existing", is_flag=True, help="Overwrite schedules that exist.")
@pass_app
def schedule_import(app: AppContext, file: IO[bytes], replace_existing: bool) -> None:
    """Schedules from `ostinato schedule export` (every line checked before anything is written)."""
    items = read_json_lines(file, schedule_from_dict)
    seen: set[str] = set()
    for number, item in enumerate(items, 1):  # each schedule is its own write: a repeated one would stop midway
        if item.name in seen:
            raise ValidationError("name", "each schedule once in the file", item.name, record=f"schedule {number}")
        seen.add(item.name)
    store, now, timing = app.store(), app.clock.now(), app.settings.schedule_timing()
    existing = {s.name for s in _all(app)}
    clashes = [s.name for s in items if s.name in existing]
    if clashes and not replace_existing:
        raise ValidationError("name", "schedules that do not exist yet (or --replace)", clashes[0])
    for item in items:
        (store.save_schedule if item.name in existing else store.create_schedule)(item, now, timing)
    click.echo(f"Imported {plural(len(items), 'schedule')}")


@cli.command("scheduler")
@click.option("--node", help="This machine's name (default: the node setting, the host name).")
@click.option("--name", "instance", default="default", show_default=True,
              help="This scheduler's name on the node (unique per node: its stale runs are cleared at start-up).")
@click.option("--capacity", type=WholeNumberType(1), default=4, show_default=True, help="Schedules run at once.")
@click.option("--once", is_flag=True, help="One pass: start what is due, wait for it, exit.")
@metrics_options
@pass_app
def scheduler_command(app: AppContext, node: str | None, instance: str, capacity: int, once: bool) -> None:
    """Run schedules: the deadline-greedy scheduler (any number of them, on any nodes).

    With the executor setting celery, runs are sent to Celery workers, which
    ping them and record their ends; --capacity is then how many may be out at once.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    scheduler = run_scheduler(app, node or app.settings.node, instance, once, capacity)
    click.echo(f"stopped: {plural(scheduler.started, 'schedule run')} started, {scheduler.finished} ended")


def run_scheduler(app: AppContext, node: str, instance: str, once: bool, capacity: int) -> DeadlineScheduler:
    app.settings.import_modules()  # the runs on this scheduler's threads call the registered callables
    remote = None
    if app.settings.executor == "celery":  # runs go to Celery workers, which ping them
        extras.require("celery", "the setting executor = celery")
        from ..integrations.celery.app import make_celery_app
        from ..integrations.celery.executor import CeleryExecutor

        store = app.store()
        remote = CeleryExecutor(make_celery_app(app.settings.celery_broker()), app.clock, node=node,
                                report=store.record_run_events, release_visits=store.release_visits)
    scheduler = DeadlineScheduler(app.store(), app.clock, node=node, instance=instance, capacity=capacity,
                                  timing=app.settings.schedule_timing(), remote=remote,
                                  rule=app.settings.schedule_pick_rule())
    if once:
        scheduler.start()
        scheduler.run_once()
        scheduler.wait_runs()
        return scheduler
    stop = threading.Event()
    with stop_on_signals(stop, "stopping the scheduler"):
        scheduler.run_forever(stop)
    return scheduler


__all__ = ["run_scheduler", "schedule"]
