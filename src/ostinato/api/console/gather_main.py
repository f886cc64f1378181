"""What the dashboard shows, gathered from the store in one pass of bounded reads.

- schedules: every schedule's condition (:func:`~ostinato.domain.schedules.assess`), reason,
  owner, last good run and next ``should_start_by``, worst first (ERROR, WARNING,
  OK), and within a state the earliest deadline (the most overdue) first;
- visit types: the origin metrics of the last ``ostinato metrics update``, summed
  over listers (queue depth = visits in flight, visits and eventful ratio of the
  hour before the count, never visited, pending changes, the lag histogram and
  its quantiles);
- task types: tasks ready, runs in flight, failed runs among the newest runs
  (:meth:`Store.task_activity`, counts capped);
- recent failures: the newest failed or lost task runs, and the failed or lost
  runs of the schedules whose last run failed.

One schedule's page (:func:`gather_schedule`) adds when the scheduler starts it next and why
(``domain.next_start``: its fire time, a retry after a failure, a run asked for now, a blackout
period…), its fire times: the catch-up rule, the newest entries of its ledger (what was sent, what
was caught up from a backlog, what the catch-up rule skipped; ``domain.firings``) and its newest runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...domain.firings import FiringRecord, FiringStatus, caught_up, cursor_of, describe_catch_up, fire_time_after, has_fire_times
from ...domain.lookahead import holds_said
from ...domain.next_start import NextStart, next_start
from ...domain.origin_metrics import VisitTypeTotals as VisitTypeRow
from ...domain.origin_metrics import totals_by_visit_type as visit_type_rows
from ...domain.run_items import DEFAULT_PARTIAL_FAILURE_THRESHOLD
from ...domain.run_outcomes import outcome_of
from ...domain.schedules import Reason, RunStatus, Schedule, ScheduleRun, State, assess, reason_text
from ...domain.status_words import RUN_STATUS_WORDS
from ..request_handling import ApiContext
from ..schedules import all_schedules

#: what each state is written as, with a symbol, so that the page reads without colour
STATE_SYMBOL = {State.ERROR: "✖", State.WARNING: "▲", State.OK: "✔"}
#: the most task runs the failures section looks back over, and shows
RUNS_WINDOW = 10_000
FAILURES_SHOWN = 20
#: the last lines of a failure's traceback shown there
TRACEBACK_SHOWN = 12
#: counts of ready tasks and runs in flight stop here
COUNT_CAP = 10_000
#: schedules whose recent failed runs are listed, and runs read per schedule
FAILING_SCHEDULES_SHOWN = 20
RUNS_PER_SCHEDULE = 5
#: a schedule's page: the ledger's newest entries, and its newest runs
FIRINGS_SHOWN = 30
RUNS_SHOWN = 10
_SCHEDULE_FAILED = {RunStatus.FAILED, RunStatus.LOST}


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    name: str
    state: State
    reason: Reason | None
    task_type: str
    enabled: bool
    #: "name@node" of the scheduler running it, None when idle
    owner: str | None
    owner_last_ping_at: datetime | None
    last_good_end_at: datetime | None
    should_start_by: datetime | None
    deadline: datetime | None

    @property
    def symbol(self) -> str:
        return STATE_SYMBOL[self.state]

    @property
    def reason_text(self) -> str:
        return reason_text(self.reason)


@dataclass(frozen=True, slots=True)
class TaskTypeRow:
    task_type: str
    ready: int
    in_flight: int
    failed: int


@dataclass(frozen=True, slots=True)
class Failure:
    #: "task run" or "schedule run"
    kind: str
    #: the task type or the schedule's name
    subject: str
    run_id: int
    status: str
    at: datetime | None
    #: its error and what it returned, on one short line
    detail: str
    #: the last lines of its traceback (``domain.run_outcomes``), shown as they were printed
    traceback: list[str]


@dataclass(slots=True)
class Dashboard:
    now: datetime
    schedules: list[ScheduleRow]
    visit_types: list[VisitTypeRow]
    task_types: list[TaskTypeRow]
    failures: list[Failure]
    count_cap: int = COUNT_CAP
    runs_window: int = RUNS_WINDOW

    @property
    def state_counts(self) -> dict[State, int]:
        counts = {state: 0 for state in (State.ERROR, State.WARNING, State.OK)}
        for row in self.schedules:
            counts[row.state] += 1
        return counts

    @property
    def worst(self) -> State:
        for state in (State.ERROR, State.WARNING):
            if self.state_counts[state]:
                return state
        return State.OK


@dataclass(frozen=True, slots=True)
class FiringRow:
    """One entry of a schedule's ledger of fire times, as its page says it."""

    #: "sent", "caught up", "skipped", "claimed" or "catching up"
    what: str
    first: datetime
    #: a run of skipped fire times: the last, and how many (None: too many to count)
    last: datetime | None
    count: int | None
    handled_at: datetime
    sent_at: datetime | None
    sender: str | None


@dataclass(frozen=True, slots=True)
class SchedulePage:
    now: datetime
    row: ScheduleRow
    schedule: Schedule
    #: None when the schedule has no fire times (a periodic one the scheduler runs)
    catch_up: str | None
    fired_through: datetime | None
    next_fire_time: datetime | None
    firings: list[FiringRow]
    runs: list[ScheduleRun]
    #: the run list's cursor: it lists the runs before this id (None: the newest)
    runs_before: int | None = None
    #: the cursor of the page of older runs, None when none are older
    older_before: int | None = None
    #: when the scheduler starts it next, and why (None: paused, sent by the beats, or no further firing)
    next_start: NextStart | None = None
    #: the setting schedule_partial_failure_threshold, for a schedule without its own
    partial_failure_threshold: float = DEFAULT_PARTIAL_FAILURE_THRESHOLD
    #: lookahead: why it is held back, or that a slot is kept for it (domain.lookahead.holds_said)
    held: str | None = None

    @property
    def skipped(self) -> int | None:
        """Fire times skipped among the entries shown (None: a run too long to count)."""
        counts = [f.count for f in self.firings if f.what == "skipped"]
        return None if None in counts else sum(c or 0 for c in counts)

    @property
    def caught_up(self) -> int:
        return sum(1 for f in self.firings if f.what in ("caught up", "catching up"))


def firing_row(firing: FiringRecord, grace: timedelta) -> FiringRow:
    late = caught_up(firing, grace)
    what = {FiringStatus.SKIPPED: "skipped", FiringStatus.SENT: "caught up" if late else "sent",
            FiringStatus.CLAIMED: "catching up" if late else "claimed"}[firing.status]
    return FiringRow(what, firing.nominal_at, firing.last_at if firing.status is FiringStatus.SKIPPED else None,
                     firing.firings, firing.handled_at, firing.sent_at, firing.sender)


def gather_schedule(ctx: ApiContext, schedule: Schedule, before: int | None = None) -> SchedulePage:
    """One schedule's page, at the clock's now: its row of the dashboard, its fire times and runs (the
    newest, or those before the run ``before``)."""
    now = ctx.clock.now()
    timing = ctx.settings.schedule_timing()
    [row] = schedule_rows(ctx, [schedule], now)
    fires = has_fire_times(schedule)
    upcoming = fire_time_after(schedule, cursor_of(schedule)) if fires and schedule.enabled else None
    firings = [firing_row(f, timing.catch_up_grace) for f in ctx.store.list_firings(schedule.name, limit=FIRINGS_SHOWN)]
    runs = ctx.store.list_schedule_runs(schedule.name, limit=RUNS_SHOWN + 1, before_id=before)
    held = holds_said(schedule, assess(schedule, now, timing).start_times, holds=ctx.store.list_holds(now), now=now)
    return SchedulePage(now, row, schedule, describe_catch_up(schedule.catch_up) if fires else None,
                        schedule.fired_through, upcoming, firings, runs[:RUNS_SHOWN], before,
                        runs[RUNS_SHOWN - 1].id if len(runs) > RUNS_SHOWN else None, next_start(schedule, now, timing),
                        timing.partial_failure_threshold, held)


def gather(ctx: ApiContext) -> Dashboard:
    """Everything the page shows, at the clock's now."""
    now = ctx.clock.now()
    schedules = all_schedules(ctx)
    activity = ctx.store.task_activity(now, count_cap=COUNT_CAP, runs_window=RUNS_WINDOW, failures_limit=FAILURES_SHOWN)
    task_types = [TaskTypeRow(t.type, activity.ready.get(t.type, 0), activity.in_flight.get(t.type, 0),
                              activity.failed.get(t.type, 0)) for t in ctx.store.list_task_types()]
    failures = [Failure("task run", task_type, run.id, RUN_STATUS_WORDS[run.status], run.ended or run.started or run.scheduled,
                        *_detail(run.metadata)) for task_type, run in activity.recent_failures]
    failures += schedule_failures(ctx, schedules)
    failures.sort(key=lambda f: f.at or datetime.min.replace(tzinfo=now.tzinfo), reverse=True)
    return Dashboard(now, schedule_rows(ctx, schedules, now), visit_type_rows(ctx.store.get_origin_metrics()),
                     task_types, failures)


def schedule_rows(ctx: ApiContext, schedules: list[Schedule], now: datetime) -> list[ScheduleRow]:
    """Every schedule, worst first; within a state, the earliest deadline (the most overdue) first."""
    timing = ctx.settings.schedule_timing()
    rows = []
    for s in schedules:
        assessed = assess(s, now, timing)
        condition, times = assessed.condition, assessed.start_times
        owner = f"{s.owner_name}@{s.owner_node}" if s.running else None
        rows.append(ScheduleRow(s.name, condition.state, condition.reason, s.task_type, s.enabled, owner,
                                s.owner_last_ping_at if s.running else None, s.last_good_end_at,
                                times.should_start_by if times else None, condition.deadline))
    far = datetime.max.replace(tzinfo=now.tzinfo)
    rows.sort(key=lambda r: (r.state.rank, r.deadline or far, r.name))
    return rows




def schedule_failures(ctx: ApiContext, schedules: list[Schedule]) -> list[Failure]:
    """The failed or lost runs among the last few of each schedule whose last run failed (the
    most recently ended first, at most :data:`FAILING_SCHEDULES_SHOWN` schedules)."""
    failing = sorted((s for s in schedules if s.failure_count), key=lambda s: s.last_end_at or s.created_at, reverse=True)
    found = []
    for s in failing[:FAILING_SCHEDULES_SHOWN]:
        for run in ctx.store.list_schedule_runs(s.name, limit=RUNS_PER_SCHEDULE):
            if run.status in _SCHEDULE_FAILED:
                found.append(Failure("schedule run", s.name, run.id, run.status.value, run.ended_at or run.started_at,
                                     *_detail(run.detail)))
    return found


def _detail(detail: Any, limit: int = 160) -> tuple[str, list[str]]:
    """A run's detail or metadata: its error and result as one short line, and the last
    :data:`TRACEBACK_SHOWN` lines of its traceback (its page shows them all)."""
    if not detail:
        return "", []
    if not isinstance(detail, Mapping):
        text = str(detail)
        return (text if len(text) <= limit else text[:limit - 1] + "…"), []
    outcome = outcome_of(detail)
    parts = ([f"error: {outcome.error}"] if outcome.error else []) + [f"{k}: {v}" for k, v in outcome.result.items()]
    text = "; ".join(parts)
    return (text if len(text) <= limit else text[:limit - 1] + "…"), outcome.traceback[-TRACEBACK_SHOWN:]
