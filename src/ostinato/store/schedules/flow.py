"""The schedules role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`
(see docs/design/deadline-greedy.md): definitions and state, the indexed pick that takes
ownership, pings, run ends, the two-step steal and the run history.

The state a run's end or a steal produces is computed by ``domain.schedules``; the
ownership a pick gives is written by the pick's SQL alone, which returns the rows as
written. SQL in ``sqlite.sql`` and ``postgresql.sql`` beside this file.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ...domain.audit import AuditEvent, applied_fields, target_of, update_outcome
from ...domain.blackouts import parse_blackout_periods
from ...domain.declarations import DEFINITION_FIELDS
from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.firings import CatchUp, CatchUpKind, Claim, FiringRecord, FiringStatus, cursor_of, fire_time_after
from ...domain.lookahead import PickRule
from ...domain.run_items import ItemCounts
from ...domain.run_now import request_run, send_now_refusal
from ...domain.schedule_watch import StealStep, steal_step
from ...domain.schedules import (
    RunMode,
    RunStatus,
    Schedule,
    ScheduleKind,
    ScheduleRun,
    ScheduleTiming,
    apply_run_end,
    last_sign_of_life,
    stored_start_times,
)
from ...domain.tasks import TaskArguments
from ..audit.flow import write_audit
from ..dialect import Connection, Dialect, Row
from ..queries import Queries
from .fire_times import CHANNEL, FireTimeFlow
from .interface import ScheduleStore
from .picks import PickFlow

#: the schedule pick's choice of walk: when fewer schedules than this can start now (the steady
#: state: most periodic schedules sit in their cooldown), it reads all of them through the wake
#: index (can_start_by order) and sorts them by should_start_by; when more can, it walks the pick
#: index (should_start_by order), which meets one that can start within a few rows. Either way the
#: cost is bounded by the window or the batch, not by the number of schedules.
PICK_WINDOW = 1000

#: the columns a run's end moves (besides the start times), times then the rest
_STATE_TIMES = ("last_good_start_at", "last_good_end_at", "last_start_at", "last_end_at", "owner_started_at",
                "owner_last_ping_at", "steal_start_at", "fired_through", "run_requested_at")
_STATE_VALUES = ("failure_count", "owner_node", "owner_name", "owner_tag", "last_items_done", "last_items_failed")
#: the definition's times and durations (the rest of the row)
_TIMES = ("created_at", *_STATE_TIMES)
_DURATIONS = ("scheduling_period", "cooldown_duration", "cron_max_schedule_duration", "max_expected_duration",
              "max_allowed_duration", "average_good_duration", "expected_duration", "duration_spread")


def next_fire_at(schedule: Schedule) -> datetime | None:
    """The next fire time a beat should send, kept beside a schedule the beats send (None otherwise:
    paused, run by the scheduler, or a rule that fires no more)."""
    if not schedule.enabled or schedule.mode is not RunMode.SEND:
        return None
    return fire_time_after(schedule, cursor_of(schedule))


def pick_query(queries: Queries, startable: int) -> str:
    """The pick query for ``startable`` schedules that can start (counted up to :data:`PICK_WINDOW`)."""
    return queries.pick_few_schedules if startable < PICK_WINDOW else queries.pick_schedule


class ScheduleFlow(PickFlow, FireTimeFlow, ScheduleStore):
    db: Dialect

    @property
    def _schedules(self) -> Queries:
        return self.db.queries("schedules")

    # -- definitions ---------------------------------------------------------
    def create_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        schedule = schedule.validated()
        with self.db.write() as conn:
            if conn.execute(self._schedules.insert_schedule, self._schedule_params(schedule, now, timing)).fetchone() is None:
                raise ConflictError(f"schedule {schedule.name!r} already exists")
            self.db.notify(conn, CHANNEL)
        return schedule

    def get_schedule(self, name: str) -> Schedule | None:
        rows = self.db.read(self._schedules.get_schedule, {"name": name})
        return self._schedule(rows[0]) if rows else None

    def list_schedules(self, *, after: str = "", limit: int = 100) -> list[Schedule]:
        return [self._schedule(r) for r in self.db.read(self._schedules.list_schedules, {"after": after, "limit": limit})]

    def save_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        schedule = schedule.validated()
        with self.db.write() as conn:
            row = self._locked(conn, schedule.name)
            conn.execute(self._schedules.update_schedule,
                         {**self._schedule_params(schedule, now, timing), "expected_tag": row["owner_tag"]})
            self.db.notify(conn, CHANNEL)
        return schedule

    def update_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                        fields: Sequence[str] | None = None, actor: str) -> Schedule:
        schedule = schedule.validated()
        wanted = DEFINITION_FIELDS if fields is None else tuple(fields)
        if unknown := sorted(set(wanted) - set(DEFINITION_FIELDS)):
            raise ValidationError("fields", "names of a schedule's definition fields", unknown)
        event = AuditEvent(now, actor, "schedule.update", target_of("schedule", schedule.name), "done").validated()
        with self.db.write() as conn:
            row = self._locked(conn, schedule.name)
            held = self._schedule(row)
            if held.declared_by:
                raise ConflictError(f"schedule {schedule.name!r} is declared by {held.declared_by}: change it there "
                                    "(its next start-up would undo this)")
            updated, changed = applied_fields(held, schedule, sorted(wanted))
            updated = updated.validated()
            if changed:
                conn.execute(self._schedules.update_schedule,
                             {**self._schedule_params(updated, now, timing), "expected_tag": row["owner_tag"]})
                self.db.notify(conn, CHANNEL)
            write_audit(self.db, conn, dataclasses.replace(event, outcome=update_outcome(changed)))
        return updated

    def _locked(self, conn: Connection, name: str) -> Row:
        """The schedule's row, locked until the transaction ends (NotFoundError if there is none)."""
        row = conn.execute(self._schedules.schedule_for_update, {"name": name}).fetchone()
        if row is None:
            raise NotFoundError("schedule", name)
        return row

    def pause_schedule(self, name: str, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                       actor: str) -> Schedule:
        return self._set_enabled(name, False, now, timing, actor)

    def resume_schedule(self, name: str, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                        actor: str) -> Schedule:
        return self._set_enabled(name, True, now, timing, actor)

    def _set_enabled(self, name: str, enabled: bool, now: datetime, timing: ScheduleTiming, actor: str) -> Schedule:
        """Pause or resume under the row's lock: the state saved is the one read under it, so a run's
        end committed meanwhile is kept; the audit event in the same transaction."""
        action, done, same = (("schedule.resume", "done: resumed", "done: unchanged, it was not paused") if enabled
                              else ("schedule.pause", "done: paused", "done: unchanged, it was already paused"))
        event = AuditEvent(now, actor, action, target_of("schedule", name), done).validated()
        with self.db.write() as conn:
            row = self._locked(conn, name)
            schedule = self._schedule(row)
            if schedule.enabled == enabled:
                write_audit(self.db, conn, dataclasses.replace(event, outcome=same))
                return schedule
            schedule = dataclasses.replace(schedule, enabled=enabled)
            conn.execute(self._schedules.update_schedule,
                         {**self._schedule_params(schedule, now, timing), "expected_tag": row["owner_tag"]})
            write_audit(self.db, conn, event)
            self.db.notify(conn, CHANNEL)
        return schedule

    def request_schedule_run(self, name: str, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                             actor: str) -> Schedule:
        event = AuditEvent(now, actor, "schedule.run-now", target_of("schedule", name), "done: a run asked for now")
        event = event.validated()
        with self.db.write() as conn:
            row = self._locked(conn, name)
            schedule = self._schedule(row)
            if schedule.mode is RunMode.SEND:  # the beats send it: a fire time of its own, theirs to send at once
                self._own_fire_time(conn, schedule, now, "run-now", uuid.uuid4().hex, timedelta(0), event)
                return schedule
            asked = request_run(schedule, now)
            conn.execute(self._schedules.update_run_state,
                         {**self._state_params(asked, now, timing), "expected_tag": row["owner_tag"]})
            write_audit(self.db, conn, event)
            self.db.notify(conn, CHANNEL)
        return asked

    def claim_run_now(self, name: str, now: datetime, *, sender: str, tag: str, lease: timedelta,
                      actor: str) -> Claim:
        event = AuditEvent(now, actor, "schedule.run-now", target_of("schedule", name), "done").validated()
        with self.db.write() as conn:
            return self._own_fire_time(conn, self._schedule(self._locked(conn, name)), now, sender, tag, lease, event)

    def _own_fire_time(self, conn: Connection, schedule: Schedule, now: datetime, sender: str, tag: str,
                       lease: timedelta, event: AuditEvent) -> Claim:
        """A fire time of its own at ``now`` for a schedule the beats send, claimed under ``tag`` until
        ``now + lease`` (0: handed to the beats at once), with its audit event, in ``conn``'s transaction."""
        refusal = send_now_refusal(schedule)
        if refusal is not None:
            raise ConflictError(refusal)
        record = FiringRecord(schedule.name, now, FiringStatus.CLAIMED, now, sender=sender, claimed_by=tag,
                              lease_until=now + lease)
        if not self.insert_firings(conn, [record]):
            raise ConflictError(f"schedule {schedule.name!r} already has a fire time at {now.isoformat()}: nothing "
                                "changed, ask again")
        sends = (f"claimed by {sender}, which sends it through Celery (a beat does if it cannot)"
                 if lease > timedelta(0) else "handed to the beats, which send it at their next tick")
        write_audit(self.db, conn, dataclasses.replace(
            event, outcome=f"done: a fire time of its own at {now.isoformat()}, {sends}"))
        return Claim(schedule.name, now, schedule.task_type, tuple(schedule.arguments.args),
                     dict(schedule.arguments.kwargs), dict(schedule.options), tag, now + lease)

    def delete_schedule(self, name: str, now: datetime, *, actor: str) -> bool:
        event = AuditEvent(now, actor, "schedule.delete", target_of("schedule", name), "done: deleted").validated()
        with self.db.write() as conn:
            deleted = conn.execute(self._schedules.delete_schedule, {"name": name}).fetchone() is not None
            if deleted:
                conn.execute(self._schedules.delete_schedule_runs, {"name": name})
                conn.execute(self._schedules.delete_schedule_firings, {"name": name})
                write_audit(self.db, conn, event)
        return deleted

    # -- running -------------------------------------------------------------
    def pick_schedules(self, *, node: str, owner_name: str, tags: Sequence[str], now: datetime,
                       rule: PickRule | None = None) -> list[tuple[Schedule, ScheduleRun]]:
        if not tags:
            return []
        rule = None if rule is None else rule.validated()
        if rule is not None and not rule.plain:
            with self.db.write() as conn:
                taken, rows, runs = self._pick_by_rule(conn, node=node, owner_name=owner_name, tags=tags, now=now,
                                                       rule=rule, window=PICK_WINDOW)
            run_of = {r["schedule"]: r for r in runs}
            return [(self._schedule(row), self._run(run_of[name])) for name, row in zip(taken, rows, strict=True)]
        queries = self._schedules
        params = {"now": self.db.time(now), "node": node, "limit": len(tags), "window": PICK_WINDOW}
        with self.db.write() as conn:
            startable = conn.execute(queries.count_startable, params).fetchone()["n"]
            names = [r["name"] for r in conn.execute(pick_query(queries, startable), params).fetchall()]
            if not names:
                return []
            params.update(self.db.columns(names=names, tags=tags[:len(names)]), owner_name=owner_name)
            owned = {r["name"]: r for r in conn.execute(queries.take_ownership, params).fetchall()}
            opened = {r["schedule"]: r for r in conn.execute(queries.insert_schedule_runs, params).fetchall()}
        return [(self._schedule(owned[name]), self._run(opened[name])) for name in names]

    def ping_schedule(self, name: str, tag: str, now: datetime) -> bool:
        with self.db.write() as conn:
            return conn.execute(self._schedules.ping_schedule,
                                {"name": name, "tag": tag, "now": self.db.time(now)}).fetchone() is not None

    def end_schedule_run(self, name: str, tag: str, *, status: RunStatus, ended: datetime,
                         detail: Mapping[str, Any] | None = None, timing: ScheduleTiming = ScheduleTiming(),
                         items: ItemCounts | None = None) -> bool:
        if items is not None:  # checked before anything is written
            if not isinstance(items, ItemCounts):
                raise ValidationError("items", "the items done and failed (items_done, items_failed)", items)
            items = items.validated()
            detail = {**(detail or {}), **items.to_detail()}
        with self.db.write() as conn:
            row = conn.execute(self._schedules.schedule_for_update, {"name": name}).fetchone()
            if row is None or row["owner_tag"] != tag:
                self._close_run(conn, tag, RunStatus.STOLEN, ended, {"reported": status.value})
                return False
            self._end_run(conn, self._schedule(row), status, ended, detail or {}, timing, items)
            return True

    def _end_run(self, conn: Connection, schedule: Schedule, status: RunStatus, ended: datetime,
                 detail: Mapping[str, Any], timing: ScheduleTiming, items: ItemCounts | None = None) -> None:
        """The schedule's state moved by the run's end (ownership released) and its run closed;
        only the run-state columns are written, never the definition."""
        started = schedule.owner_started_at
        assert started is not None, f"schedule {schedule.name!r} is running without its run's start"
        after = apply_run_end(schedule, started, ended, status.succeeded, alpha=timing.alpha, items=items)
        conn.execute(self._schedules.update_run_state,
                     {**self._state_params(after, ended, timing), "expected_tag": schedule.owner_tag})
        self._close_run(conn, schedule.owner_tag, status, ended, detail)

    def _close_run(self, conn: Connection, tag: str | None, status: RunStatus, ended: datetime,
                   detail: Mapping[str, Any]) -> None:
        conn.execute(self._schedules.end_schedule_run, {"tag": tag, "ended": self.db.time(ended), "status": status.value,
                                                        "detail": self.db.json(dict(detail))})

    def steal_silent_schedules(self, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                               limit: int = 100) -> dict[str, list[str]]:
        """The two-step steal for owners with no ping for ``ping_timeout``: mark them, and
        end the runs of those still marked after ``steal_grace`` (lost: a failure), which frees them."""
        marked, taken = [], []
        with self.db.write() as conn:
            params = {"cutoff": self.db.time(now - timing.ping_timeout), "limit": limit}
            for row in conn.execute(self._schedules.silent_owners, params).fetchall():
                schedule = self._schedule(row)
                step = steal_step(schedule, now, ping_timeout=timing.ping_timeout, grace=timing.steal_grace)
                if step is StealStep.MARK:
                    conn.execute(self._schedules.mark_steal,
                                 {"name": schedule.name, "tag": schedule.owner_tag, "now": self.db.time(now)})
                    marked.append(schedule.name)
                elif step is StealStep.TAKE:
                    last = last_sign_of_life(schedule)
                    assert last is not None, f"schedule {schedule.name!r} is running without its run's start"
                    self._end_run(conn, schedule, RunStatus.LOST, now,
                                  {"reason": f"no sign of life from {schedule.owner_node}/{schedule.owner_name} "
                                             f"since {last.isoformat()}"}, timing)
                    taken.append(schedule.name)
        return {"marked": marked, "taken": taken}

    def release_owner_schedules(self, node: str, owner_name: str, now: datetime,
                                timing: ScheduleTiming = ScheduleTiming()) -> list[str]:
        """At start-up: the runs an earlier process of this node and name left are lost."""
        released = []
        with self.db.write() as conn:
            for row in conn.execute(self._schedules.owned_by_node, {"node": node}).fetchall():
                if row["owner_name"] != owner_name:
                    continue
                self._end_run(conn, self._schedule(row), RunStatus.LOST, now,
                              {"reason": f"{node}/{owner_name} restarted"}, timing)
                released.append(row["name"])
        return released

    def listen_schedule_changes(self, wake: Callable[[], None], stop: threading.Event) -> bool:
        """Call ``wake`` when a schedule is added or changed, until ``stop``; False at once where the
        database has no notifications (SQLite: schedulers poll)."""
        return self.db.listen(CHANNEL, wake, stop)

    def next_can_start_by(self) -> datetime | None:
        return self.db.read_time(self.db.read(self._schedules.next_can_start_by)[0]["at"])

    def list_schedule_runs(self, name: str, *, limit: int = 100, before_id: int | None = None) -> list[ScheduleRun]:
        params = {"name": name, "limit": limit, "before_id": before_id if before_id is not None else 2**62}
        return [self._run(r) for r in self.db.read(self._schedules.schedule_runs, params)]

    # -- rows in and out -----------------------------------------------------
    def _state_params(self, schedule: Schedule, now: datetime, timing: ScheduleTiming) -> dict[str, Any]:
        """The run-state columns and the start times stored beside them (``update_run_state``)."""
        times = stored_start_times(schedule, now, timing)
        time = self.db.time
        params: dict[str, Any] = {name: time(getattr(schedule, name)) for name in _STATE_TIMES}
        params.update({name: getattr(schedule, name) for name in _STATE_VALUES})
        params.update(name=schedule.name, average_good_duration=self.db.interval(schedule.average_good_duration),
                      duration_spread=self.db.interval(schedule.duration_spread),
                      can_start_by=time(times.can_start_by) if times else None,
                      should_start_by=time(times.should_start_by) if times else None,
                      next_fire_at=time(next_fire_at(schedule)))
        return params

    def _schedule_params(self, schedule: Schedule, now: datetime, timing: ScheduleTiming) -> dict[str, Any]:
        """Every column: the definition, and the run state with its start times."""
        params = self._state_params(schedule, now, timing)
        params.update({name: self.db.interval(getattr(schedule, name)) for name in _DURATIONS})
        params.update(
            kind=schedule.kind.value, task_type=schedule.task_type, arguments=schedule.arguments.to_json(),
            mode=schedule.mode.value, cron_schedule=schedule.cron_schedule, tz=schedule.tz, enabled=schedule.enabled,
            blackout_periods=self.db.json([b.to_dict() for b in schedule.blackout_periods]),
            dont_run_on_nodes=self.db.array(schedule.dont_run_on_nodes), created_at=self.db.time(schedule.created_at),
            catch_up=schedule.catch_up.kind.value, catch_up_budget=schedule.catch_up.budget,
            retry_backoff=None if schedule.retry_backoff is None else self.db.json(
                [b.total_seconds() for b in schedule.retry_backoff]),
            options=self.db.json(dict(schedule.options)), declared_by=schedule.declared_by,
            declaration=schedule.declaration, partial_failure_threshold=schedule.partial_failure_threshold,
        )
        return params

    def _schedule(self, row: Row) -> Schedule:
        db = self.db
        arguments = db.read_json(row["arguments"])
        backoff = db.read_json(row["retry_backoff"])
        return Schedule(
            name=row["name"], kind=ScheduleKind(row["kind"]), task_type=row["task_type"],
            arguments=TaskArguments(tuple(arguments["args"]), arguments["kwargs"]), mode=RunMode(row["mode"]),
            cron_schedule=row["cron_schedule"], tz=row["tz"], enabled=bool(row["enabled"]),
            blackout_periods=parse_blackout_periods(db.read_json(row["blackout_periods"])),
            dont_run_on_nodes=tuple(db.read_array(row["dont_run_on_nodes"])), failure_count=row["failure_count"],
            partial_failure_threshold=row["partial_failure_threshold"], last_items_done=row["last_items_done"],
            last_items_failed=row["last_items_failed"],
            owner_node=row["owner_node"], owner_name=row["owner_name"], owner_tag=row["owner_tag"],
            catch_up=CatchUp(CatchUpKind(row["catch_up"]), row["catch_up_budget"]),
            retry_backoff=None if backoff is None else tuple(timedelta(seconds=b) for b in backoff),
            options=db.read_json(row["options"]), declared_by=row["declared_by"], declaration=row["declaration"],
            **{name: db.read_time(row[name]) for name in _TIMES},
            **{name: db.read_interval(row[name]) for name in _DURATIONS},
        )

    def _run(self, row: Row) -> ScheduleRun:
        read_time = self.db.read_time
        return ScheduleRun(row["id"], row["schedule"], row["owner_tag"], row["owner_node"], row["owner_name"],
                           read_time(row["started_at"]), read_time(row["ended_at"]), RunStatus(row["status"]),
                           self.db.read_json(row["detail"]))
