"""The PostgreSQL store's schedules (see docs/design/deadline-greedy.md): definitions and state,
the indexed pick that takes ownership, pings, run ends, the steal protocol and
the run history.

Mixed into :class:`~ostinato.store.postgresql.store.PostgresStore`; the state
a run's end or a steal produces is computed by ``domain.schedules``; SQL in
``schedule_queries.sql``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
import threading
from typing import Any, Callable, Mapping, Sequence

import orjson
import psycopg

from ...domain.errors import ConflictError, NotFoundError
from ...domain.schedules import (
    RunMode,
    RunStatus,
    Schedule,
    ScheduleKind,
    ScheduleRun,
    ScheduleTiming,
    StealStep,
    apply_run_end,
    last_sign_of_life,
    parse_blackout_periods,
    steal_step,
    stored_start_times,
)
from ...domain.tasks import TaskArguments
from ..common import PICK_WINDOW, pick_query, picked_schedules
from ..queries import Queries

QUERIES = Queries(Path(__file__).parent / "schedule_queries.sql")


def _schedule_params(schedule: Schedule, now: datetime, timing: ScheduleTiming) -> dict[str, Any]:
    times = stored_start_times(schedule, now, timing)
    return {
        "name": schedule.name, "kind": schedule.kind.value, "task_type": schedule.task_type,
        "arguments": schedule.arguments.to_json(), "mode": schedule.mode.value,
        "scheduling_period": schedule.scheduling_period, "cooldown_duration": schedule.cooldown_duration,
        "cron_schedule": schedule.cron_schedule, "cron_max_schedule_duration": schedule.cron_max_schedule_duration,
        "tz": schedule.tz, "enabled": schedule.enabled, "max_expected_duration": schedule.max_expected_duration,
        "max_allowed_duration": schedule.max_allowed_duration,
        "blackout_periods": orjson.dumps([b.to_dict() for b in schedule.blackout_periods]).decode(),
        "dont_run_on_nodes": list(schedule.dont_run_on_nodes), "created_at": schedule.created_at,
        "last_good_start_at": schedule.last_good_start_at, "last_good_end_at": schedule.last_good_end_at,
        "last_start_at": schedule.last_start_at, "last_end_at": schedule.last_end_at,
        "failure_count": schedule.failure_count, "average_good_duration": schedule.average_good_duration,
        "owner_started_at": schedule.owner_started_at, "owner_node": schedule.owner_node,
        "owner_name": schedule.owner_name, "owner_tag": schedule.owner_tag,
        "owner_last_ping_at": schedule.owner_last_ping_at, "steal_start_at": schedule.steal_start_at,
        "can_start_by": times.can_start_by if times else None, "should_start_by": times.should_start_by if times else None,
    }


def _row_to_schedule(row: Mapping[str, Any]) -> Schedule:
    arguments = row["arguments"]
    return Schedule(
        name=row["name"], kind=ScheduleKind(row["kind"]), task_type=row["task_type"], created_at=row["created_at"],
        arguments=TaskArguments(tuple(arguments["args"]), arguments["kwargs"]), mode=RunMode(row["mode"]),
        scheduling_period=row["scheduling_period"], cooldown_duration=row["cooldown_duration"],
        cron_schedule=row["cron_schedule"], cron_max_schedule_duration=row["cron_max_schedule_duration"],
        tz=row["tz"], enabled=row["enabled"], max_expected_duration=row["max_expected_duration"],
        max_allowed_duration=row["max_allowed_duration"],
        blackout_periods=parse_blackout_periods(row["blackout_periods"]),
        dont_run_on_nodes=tuple(row["dont_run_on_nodes"]),
        last_good_start_at=row["last_good_start_at"], last_good_end_at=row["last_good_end_at"],
        last_start_at=row["last_start_at"], last_end_at=row["last_end_at"], failure_count=row["failure_count"],
        average_good_duration=row["average_good_duration"], owner_started_at=row["owner_started_at"],
        owner_node=row["owner_node"], owner_name=row["owner_name"], owner_tag=row["owner_tag"],
        owner_last_ping_at=row["owner_last_ping_at"], steal_start_at=row["steal_start_at"],
    )


def _row_to_run(row: Mapping[str, Any]) -> ScheduleRun:
    return ScheduleRun(row["id"], row["schedule"], row["owner_tag"], row["owner_node"], row["owner_name"],
                       row["started_at"], row["ended_at"], RunStatus(row["status"]), row["detail"])


class PostgresSchedules:
    # -- definitions ---------------------------------------------------------
    def create_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        schedule = schedule.validated()
        with self._tx() as conn:
            if conn.execute(QUERIES.insert_schedule, _schedule_params(schedule, now, timing)).fetchone() is None:
                raise ConflictError(f"schedule {schedule.name!r} already exists")
            conn.execute(QUERIES.notify_schedules_changed)
        return schedule

    def get_schedule(self, name: str) -> Schedule | None:
        rows = self._read(QUERIES.get_schedule, {"name": name})
        return _row_to_schedule(rows[0]) if rows else None

    def list_schedules(self, *, after: str = "", limit: int = 100) -> list[Schedule]:
        return [_row_to_schedule(r) for r in self._read(QUERIES.list_schedules, {"after": after, "limit": limit})]

    def save_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        schedule = schedule.validated()
        with self._tx() as conn:
            row = conn.execute(QUERIES.schedule_for_update, {"name": schedule.name}).fetchone()
            if row is None:
                raise NotFoundError("schedule", schedule.name)
            conn.execute(QUERIES.update_schedule,
                         {**_schedule_params(schedule, now, timing), "expected_tag": row["owner_tag"]})
            conn.execute(QUERIES.notify_schedules_changed)
        return schedule

    def delete_schedule(self, name: str) -> bool:
        with self._tx() as conn:
            deleted = conn.execute(QUERIES.delete_schedule, {"name": name}).fetchone() is not None
            if deleted:
                conn.execute(QUERIES.delete_schedule_runs, {"name": name})
        return deleted

    # -- running -------------------------------------------------------------
    def pick_schedules(self, *, node: str, owner_name: str, tags: Sequence[str],
                       now: datetime) -> list[tuple[Schedule, ScheduleRun]]:
        if not tags:
            return []
        with self._tx() as conn:
            params = {"now": now, "node": node, "limit": len(tags), "window": PICK_WINDOW}
            startable = conn.execute(QUERIES.count_startable, params).fetchone()["n"]
            rows = conn.execute(pick_query(QUERIES, startable), params).fetchall()
            if not rows:
                return []
            names, tags = [r["name"] for r in rows], list(tags[:len(rows)])
            params = {"names": names, "tags": tags, "now": now, "node": node, "owner_name": owner_name}
            conn.execute(QUERIES.take_ownership, params)
            run_ids = {r["schedule"]: r["id"] for r in conn.execute(QUERIES.insert_schedule_runs, params)}
        return picked_schedules([_row_to_schedule(r) for r in rows], tags, run_ids, node=node, owner_name=owner_name,
                                now=now)

    def ping_schedule(self, name: str, tag: str, now: datetime) -> bool:
        with self._tx() as conn:
            return conn.execute(QUERIES.ping_schedule, {"name": name, "tag": tag, "now": now}).fetchone() is not None

    def end_schedule_run(self, name: str, tag: str, *, status: RunStatus, ended: datetime,
                         detail: Mapping[str, Any] | None = None, timing: ScheduleTiming = ScheduleTiming()) -> bool:
        with self._tx() as conn:
            row = conn.execute(QUERIES.schedule_for_update, {"name": name}).fetchone()
            if row is None or row["owner_tag"] != tag:
                conn.execute(QUERIES.end_schedule_run, {"tag": tag, "ended": ended, "status": RunStatus.STOLEN.value,
                                                        "detail": orjson.dumps({"reported": status.value}).decode()})
                return False
            self._end_run(conn, _row_to_schedule(row), status, ended, detail or {}, timing)
            return True

    def _end_run(self, conn, schedule: Schedule, status: RunStatus, ended: datetime, detail: Mapping[str, Any],
                 timing: ScheduleTiming) -> Schedule:
        tag = schedule.owner_tag
        after = apply_run_end(schedule, schedule.owner_started_at, ended, status.succeeded, alpha=timing.alpha)
        conn.execute(QUERIES.update_schedule, {**_schedule_params(after, ended, timing), "expected_tag": tag})
        conn.execute(QUERIES.end_schedule_run, {"tag": tag, "ended": ended, "status": status.value,
                                                "detail": orjson.dumps(dict(detail)).decode()})
        return after

    def steal_silent_schedules(self, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                               limit: int = 100) -> dict[str, list[str]]:
        """The two-step steal for owners with no ping for ``ping_timeout``: mark them, and
        end the runs of those still marked after ``steal_grace`` (lost: a failure), which frees them."""
        marked, taken = [], []
        with self._tx() as conn:
            for row in conn.execute(QUERIES.silent_owners, {"cutoff": now - timing.ping_timeout, "limit": limit}).fetchall():
                schedule = _row_to_schedule(row)
                step = steal_step(schedule, now, ping_timeout=timing.ping_timeout, grace=timing.steal_grace)
                if step is StealStep.MARK:
                    conn.execute(QUERIES.mark_steal, {"name": schedule.name, "tag": schedule.owner_tag, "now": now})
                    marked.append(schedule.name)
                elif step is StealStep.TAKE:
                    self._end_run(conn, schedule, RunStatus.LOST, now,
                                  {"reason": f"no sign of life from {schedule.owner_node}/{schedule.owner_name} "
                                             f"since {last_sign_of_life(schedule).isoformat()}"}, timing)
                    taken.append(schedule.name)
        return {"marked": marked, "taken": taken}

    def release_owner_schedules(self, node: str, owner_name: str, now: datetime,
                                timing: ScheduleTiming = ScheduleTiming()) -> list[str]:
        """At start-up: the runs an earlier process of this node and name left are lost."""
        released = []
        with self._tx() as conn:
            for row in conn.execute(QUERIES.owned_by_node, {"node": node}).fetchall():
                if row["owner_name"] != owner_name:
                    continue
                self._end_run(conn, _row_to_schedule(row), RunStatus.LOST, now,
                              {"reason": f"{node}/{owner_name} restarted"}, timing)
                released.append(row["name"])
        return released

    def listen_schedule_changes(self, wake: Callable[[], None], stop: threading.Event) -> bool:
        """Call ``wake`` when a schedule is added or changed (LISTEN/NOTIFY), until ``stop``;
        runs in the caller's thread. A lost connection is retried; polling remains the fallback."""
        while not stop.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    conn.execute("LISTEN ostinato_schedules")
                    while not stop.is_set():
                        for _ in conn.notifies(timeout=1.0, stop_after=1):
                            wake()
            except psycopg.Error:
                stop.wait(5.0)
        return True

    def next_can_start_by(self) -> datetime | None:
        return self._read(QUERIES.next_can_start_by)[0]["at"]

    def list_schedule_runs(self, name: str, *, limit: int = 100, before_id: int | None = None) -> list[ScheduleRun]:
        params = {"name": name, "limit": limit, "before_id": before_id if before_id is not None else 2**62}
        return [_row_to_run(r) for r in self._read(QUERIES.schedule_runs, params)]
