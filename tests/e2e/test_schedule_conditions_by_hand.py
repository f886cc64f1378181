"""Conditions and start times on hand-computed boundary cases, through the command line and the
API alike (the formulas of docs/design/deadline-greedy.md and docs/reference/schedules.md).

Every expected time below was worked out by hand from the documented formulas and is written
as a literal ISO time; none comes from Ostinato's own functions. The schedules are imported
with their state (``ostinato schedule import`` of a JSON-lines file) once per store; each case
then reads one schedule at one moment through both faces, with the clock set to that moment:

- the command line: ``schedule condition NAME --at NOW --json`` and ``schedule show NAME --json``;
- the API: ``GET /api/v1/schedules/NAME`` and ``GET /api/v1/schedules/NAME/condition?at=NOW``.

One parametrised test per face, on the same table: a face that disagrees fails its own cases.

Settings are the defaults: retry backoff 5 min, 1 h, 4 h; ping timeout 30 s. Dates are in
January 2026 (Paris on CET, UTC+1; New York on EST, UTC-5); 2026-01-14 is a Wednesday.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from click.testing import CliRunner
from test_api_helpers import Api

from ostinato.cli import cli
from ostinato.cli.app import AppContext
from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.schedules import Reason, reason_text
from ostinato.store import open_store

IMPORTED_AT = "2026-01-20T00:00:00+00:00"


def periodic(name: str, period: int, **state: Any) -> dict[str, Any]:
    return {"name": name, "kind": "periodic", "task_type": "scrape", "created_at": "2026-01-01T00:00:00+00:00",
            "scheduling_period": period, **state}


def calendar(name: str, rule: str, tz: str, max_duration: int, **state: Any) -> dict[str, Any]:
    return {"name": name, "kind": "calendar", "task_type": "scrape", "created_at": "2026-01-01T00:00:00+00:00",
            "cron_schedule": rule, "tz": tz, "cron_max_schedule_duration": max_duration, **state}


def failed(count: int) -> dict[str, Any]:
    """Good run 2026-01-13 06:00–06:30 UTC, then ``count`` failures, the last one 2026-01-14 05:00–05:10."""
    return periodic(f"failed-{count}", 48 * 3600, cooldown_duration=3600, average_good_duration=1800,
                    last_good_start_at="2026-01-13T06:00:00+00:00", last_good_end_at="2026-01-13T06:30:00+00:00",
                    last_start_at="2026-01-14T05:00:00+00:00", last_end_at="2026-01-14T05:10:00+00:00",
                    failure_count=count)


PARIS_NIGHT = [{"start": "22:00", "end": "02:00"}]
PARIS_NOON = [{"start": "12:00", "end": "13:00"}]
OWNER = {"owner_tag": "tag-1", "owner_node": "n1", "owner_name": "default"}

SCHEDULES = [
    # deadline = last good start + period = 01-14 10:00; can = last good end + cooldown = 01-13 13:00;
    # should = deadline - average (1 h) = 01-14 09:00
    periodic("day", 86400, cooldown_duration=7200, average_good_duration=3600, failure_count=0,
             last_good_start_at="2026-01-13T10:00:00+00:00", last_good_end_at="2026-01-13T11:00:00+00:00",
             last_start_at="2026-01-13T10:00:00+00:00", last_end_at="2026-01-13T11:00:00+00:00"),
    # never succeeded: counts from created_at 01-13 12:00; deadline 01-14 12:00; average unknown = 0
    {**periodic("never", 86400), "created_at": "2026-01-13T12:00:00+00:00"},
    # 6 h period, 1 h 30 cooldown: can = 08:20 + 1:30 = 09:50; should = 14:00 - 0:20 = 13:40
    periodic("cooldown", 6 * 3600, cooldown_duration=5400, average_good_duration=1200,
             last_good_start_at="2026-01-14T08:00:00+00:00", last_good_end_at="2026-01-14T08:20:00+00:00"),
    # 06:30 New York = 11:30 UTC; last good start 01-13 06:35 EST, so the next firing is 01-14 06:30 EST
    # = 11:30 UTC; deadline 11:30 + 3 h = 14:30; should = 14:30 - 0:30 = 14:00
    calendar("cron-new-york", "30 6 * * *", "America/New_York", 3 * 3600, average_good_duration=1800,
             last_good_start_at="2026-01-13T11:35:00+00:00", last_good_end_at="2026-01-13T12:05:00+00:00"),
    # never succeeded: first firing after creation (01-13 13:00 CET) is 01-14 02:00 CET = 01:00 UTC; + 4 h
    {**calendar("cron-paris-never", "0 2 * * *", "Europe/Paris", 4 * 3600), "created_at": "2026-01-13T12:00:00+00:00"},
    # 02:00 Paris = 01:00 UTC, blackout 01:30–03:00 Paris: can moves to 03:00 CET = 02:00 UTC; the deadline
    # (01:00 + 4 h = 05:00) and should (05:00 - 0:30 = 04:30) stay
    calendar("cron-paris-blackout", "0 2 * * *", "Europe/Paris", 4 * 3600, average_good_duration=1800,
             blackout_periods=[{"start": "01:30", "end": "03:00"}],
             last_good_start_at="2026-01-13T02:00:00+00:00", last_good_end_at="2026-01-13T02:30:00+00:00"),
    # the 01-14 02:00 CET run failed (01:00–01:20 UTC): can = 01:20 + 5 min = 01:25; should stays 04:30
    calendar("cron-paris-failed", "0 2 * * *", "Europe/Paris", 4 * 3600, average_good_duration=1800,
             last_good_start_at="2026-01-13T01:00:00+00:00", last_good_end_at="2026-01-13T01:30:00+00:00",
             last_start_at="2026-01-14T01:00:00+00:00", last_end_at="2026-01-14T01:20:00+00:00", failure_count=1),
    # blackout 22:00–02:00 Paris. Raw can 22:30 UTC = 23:30 CET (evening part) -> 02:00 CET next day = 01:00 UTC;
    # should = 01-14 20:00 - 1:30 = 18:30, not moved
    periodic("blackout-evening", 86400, tz="Europe/Paris", blackout_periods=PARIS_NIGHT, cooldown_duration=3600,
             average_good_duration=5400,
             last_good_start_at="2026-01-13T20:00:00+00:00", last_good_end_at="2026-01-13T21:30:00+00:00"),
    # raw can 23:30 UTC = 00:30 CET on the 14th (morning part) -> 02:00 CET the same day = 01:00 UTC
    periodic("blackout-morning", 86400, tz="Europe/Paris", blackout_periods=PARIS_NIGHT, cooldown_duration=3600,
             average_good_duration=5400,
             last_good_start_at="2026-01-13T21:00:00+00:00", last_good_end_at="2026-01-13T22:30:00+00:00"),
    # raw can 21:00 UTC = 22:00 CET, exactly the start: inside -> 02:00 CET = 01:00 UTC
    periodic("blackout-night-start", 86400, tz="Europe/Paris", blackout_periods=PARIS_NIGHT, cooldown_duration=3600,
             average_good_duration=1800,
             last_good_start_at="2026-01-13T19:30:00+00:00", last_good_end_at="2026-01-13T20:00:00+00:00"),
    # blackout 12:00–13:00 Paris = 11:00–12:00 UTC. Raw can 11:00 UTC, exactly the start: -> 12:00 UTC
    periodic("blackout-at-start", 86400, tz="Europe/Paris", blackout_periods=PARIS_NOON, cooldown_duration=3600,
             average_good_duration=1800,
             last_good_start_at="2026-01-14T09:30:00+00:00", last_good_end_at="2026-01-14T10:00:00+00:00"),
    # raw can 10:59:59 UTC, one second before the start: a run of 30m would run into it, so its end
    periodic("blackout-before-start", 86400, tz="Europe/Paris", blackout_periods=PARIS_NOON, cooldown_duration=3600,
             average_good_duration=1800,
             last_good_start_at="2026-01-14T09:30:00+00:00", last_good_end_at="2026-01-14T09:59:59+00:00"),
    # raw can 10:30 UTC: a run of 30m ends at 11:00 UTC = 12:00 CET, as the blackout starts: it fits, stays
    periodic("blackout-fits-before-start", 86400, tz="Europe/Paris", blackout_periods=PARIS_NOON, cooldown_duration=3600,
             average_good_duration=1800,
             last_good_start_at="2026-01-14T09:00:00+00:00", last_good_end_at="2026-01-14T09:30:00+00:00"),
    # raw can 12:00 UTC = 13:00 CET, exactly the end: outside, stays
    periodic("blackout-at-end", 86400, tz="Europe/Paris", blackout_periods=PARIS_NOON, cooldown_duration=3600,
             average_good_duration=1800,
             last_good_start_at="2026-01-14T10:30:00+00:00", last_good_end_at="2026-01-14T11:00:00+00:00"),
    # raw can 11:59:59 UTC = 12:59:59 CET, one second before the end: -> 13:00 CET = 12:00 UTC
    periodic("blackout-before-end", 86400, tz="Europe/Paris", blackout_periods=PARIS_NOON, cooldown_duration=3600,
             average_good_duration=1800,
             last_good_start_at="2026-01-14T10:30:00+00:00", last_good_end_at="2026-01-14T10:59:59+00:00"),
    # blackouts 01:00–02:00 and 02:00–03:00 Paris; raw can 00:30 UTC = 01:30 CET -> 02:00 (in the next one)
    # -> 03:00 CET = 02:00 UTC; 12 h period: should = 01-14 11:40 - 0:20 = 11:20
    periodic("blackout-adjacent", 12 * 3600, tz="Europe/Paris", cooldown_duration=1800, average_good_duration=1200,
             blackout_periods=[{"start": "01:00", "end": "02:00"}, {"start": "02:00", "end": "03:00"}],
             last_good_start_at="2026-01-13T23:40:00+00:00", last_good_end_at="2026-01-14T00:00:00+00:00"),
    # 48 h period: deadline 01-15 06:00, should 01-15 05:30; raw can 01-13 07:30; retry = 05:10 + backoff
    failed(1), failed(2), failed(3), failed(5),
    # running since 08:00, last ping 08:50:00; deadline 01-15 00:00; can 01:30; should 01-14 23:30
    periodic("running-pinged", 86400, cooldown_duration=3600, average_good_duration=1800, **OWNER,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:30:00+00:00",
             owner_started_at="2026-01-14T08:00:00+00:00", owner_last_ping_at="2026-01-14T08:50:00+00:00"),
    # running since 08:00, no ping recorded: the last sign of life is the start
    periodic("running-no-ping", 86400, cooldown_duration=3600, average_good_duration=1800, **OWNER,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:30:00+00:00",
             owner_started_at="2026-01-14T08:00:00+00:00"),
    # 6 h period, average 40 min: deadline 06:00, should 05:20, can = last good end (cooldown 0s) 00:40;
    # started 05:20:01: 05:20:01 + 0:40 = 06:00:01 > 06:00
    periodic("running-late", 6 * 3600, cooldown_duration=0, average_good_duration=2400, **OWNER,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:40:00+00:00",
             owner_started_at="2026-01-14T05:20:01+00:00", owner_last_ping_at="2026-01-14T05:29:50+00:00"),
    # started 05:20:00: ends 06:00:00 on average, not after the deadline
    periodic("running-in-time", 6 * 3600, cooldown_duration=0, average_good_duration=2400, **OWNER,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:40:00+00:00",
             owner_started_at="2026-01-14T05:20:00+00:00", owner_last_ping_at="2026-01-14T05:29:50+00:00"),
    # no cooldown given: once a period, a tenth of it (36 min) before should_start_by: 05:20 - 0:36 = 04:44
    # (not before the last good end, 00:40)
    periodic("once-a-period", 6 * 3600, average_good_duration=2400,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:40:00+00:00"),
    # a run longer than the period's spare: the last good end comes after should - spare
    periodic("once-a-period-long-run", 3600, average_good_duration=3000,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:50:00+00:00"),
    periodic("paused", 86400, enabled=False, last_good_start_at="2026-01-01T00:00:00+00:00",
             last_good_end_at="2026-01-01T00:10:00+00:00"),
]


@dataclass(frozen=True)
class Case:
    id: str
    schedule: str
    now: str
    condition: str
    reason: str | None
    deadline: str | None
    can_start_by: str | None
    should_start_by: str | None


def _day(now: str, condition: str, reason: str | None) -> tuple:
    return ("day", now, condition, reason, "2026-01-14T10:00:00+00:00", "2026-01-13T13:00:00+00:00",
            "2026-01-14T09:00:00+00:00")


def _failed(count: int, can: str) -> tuple:
    return (f"failed-{count}", "2026-01-14T05:20:00+00:00", "WARNING", "last_run_failed", "2026-01-15T06:00:00+00:00",
            can, "2026-01-15T05:30:00+00:00")


def _running(name: str, now: str, condition: str, reason: str | None) -> tuple:
    return (name, now, condition, reason, "2026-01-15T00:00:00+00:00", "2026-01-14T01:30:00+00:00",
            "2026-01-14T23:30:00+00:00")


Z = "+00:00"
CASES = [Case(id_, *row) for id_, row in [
    # periodic: now + average exactly at the deadline is not late; one second more is
    ("average reaches the deadline exactly: OK", _day("2026-01-14T09:00:00" + Z, "OK", None)),
    ("average one second past the deadline: likely_late", _day("2026-01-14T09:00:01" + Z, "WARNING", "likely_late")),
    # now == last_good_start_at + scheduling_period: not yet ERROR; one second later: stale
    ("exactly at the period's end: not yet ERROR", _day("2026-01-14T10:00:00" + Z, "WARNING", "likely_late")),
    ("one second past the period's end: stale", _day("2026-01-14T10:00:01" + Z, "ERROR", "stale")),
    ("never succeeded, at creation + period: OK",
     ("never", "2026-01-14T12:00:00" + Z, "OK", None, "2026-01-14T12:00:00" + Z, "2026-01-13T12:00:00" + Z,
      "2026-01-14T12:00:00" + Z)),
    ("never succeeded, one second later: stale",
     ("never", "2026-01-14T12:00:01" + Z, "ERROR", "stale", "2026-01-14T12:00:00" + Z, "2026-01-13T12:00:00" + Z,
      "2026-01-14T12:00:00" + Z)),
    ("cooldown after the last good end",
     ("cooldown", "2026-01-14T09:00:00" + Z, "OK", None, "2026-01-14T14:00:00" + Z, "2026-01-14T09:50:00" + Z,
      "2026-01-14T13:40:00" + Z)),
    # calendar in a zone: due time + cron_max_schedule_duration
    ("cron in New York, average reaches the deadline exactly: OK",
     ("cron-new-york", "2026-01-14T14:00:00" + Z, "OK", None, "2026-01-14T14:30:00" + Z, "2026-01-14T11:30:00" + Z,
      "2026-01-14T14:00:00" + Z)),
    ("cron in New York, exactly at due + max duration: not yet ERROR",
     ("cron-new-york", "2026-01-14T14:30:00" + Z, "WARNING", "likely_late", "2026-01-14T14:30:00" + Z,
      "2026-01-14T11:30:00" + Z, "2026-01-14T14:00:00" + Z)),
    ("cron in New York, one second past: deadline_missed",
     ("cron-new-york", "2026-01-14T14:30:01" + Z, "ERROR", "deadline_missed", "2026-01-14T14:30:00" + Z,
      "2026-01-14T11:30:00" + Z, "2026-01-14T14:00:00" + Z)),
    ("cron in Paris never run, at the first firing + max duration: OK",
     ("cron-paris-never", "2026-01-14T05:00:00" + Z, "OK", None, "2026-01-14T05:00:00" + Z, "2026-01-14T01:00:00" + Z,
      "2026-01-14T05:00:00" + Z)),
    ("cron in Paris never run, one second past: deadline_missed",
     ("cron-paris-never", "2026-01-14T05:00:01" + Z, "ERROR", "deadline_missed", "2026-01-14T05:00:00" + Z,
      "2026-01-14T01:00:00" + Z, "2026-01-14T05:00:00" + Z)),
    ("cron in a blackout: can_start_by moves, should_start_by stays",
     ("cron-paris-blackout", "2026-01-14T01:30:00" + Z, "OK", None, "2026-01-14T05:00:00" + Z,
      "2026-01-14T02:00:00" + Z, "2026-01-14T04:30:00" + Z)),
    ("cron after a failure: can_start_by moves, should_start_by stays",
     ("cron-paris-failed", "2026-01-14T01:30:00" + Z, "WARNING", "last_run_failed", "2026-01-14T05:00:00" + Z,
      "2026-01-14T01:25:00" + Z, "2026-01-14T04:30:00" + Z)),
    # blackouts move can_start_by to their end, never should_start_by
    ("blackout across midnight, evening part",
     ("blackout-evening", "2026-01-14T00:00:00" + Z, "OK", None, "2026-01-14T20:00:00" + Z, "2026-01-14T01:00:00" + Z,
      "2026-01-14T18:30:00" + Z)),
    ("blackout across midnight, morning part",
     ("blackout-morning", "2026-01-14T00:00:00" + Z, "OK", None, "2026-01-14T21:00:00" + Z, "2026-01-14T01:00:00" + Z,
      "2026-01-14T19:30:00" + Z)),
    ("blackout across midnight, exactly at its start",
     ("blackout-night-start", "2026-01-14T00:00:00" + Z, "OK", None, "2026-01-14T19:30:00" + Z,
      "2026-01-14T01:00:00" + Z, "2026-01-14T19:00:00" + Z)),
    ("exactly at a blackout's start: moved to its end",
     ("blackout-at-start", "2026-01-14T11:00:00" + Z, "OK", None, "2026-01-15T09:30:00" + Z, "2026-01-14T12:00:00" + Z,
      "2026-01-15T09:00:00" + Z)),
    ("one second before a blackout's start: a run would run into it, moved to its end",
     ("blackout-before-start", "2026-01-14T11:00:00" + Z, "OK", None, "2026-01-15T09:30:00" + Z,
      "2026-01-14T12:00:00" + Z, "2026-01-15T09:00:00" + Z)),
    ("a run ending exactly at a blackout's start: not moved",
     ("blackout-fits-before-start", "2026-01-14T11:00:00" + Z, "OK", None, "2026-01-15T09:00:00" + Z,
      "2026-01-14T10:30:00" + Z, "2026-01-15T08:30:00" + Z)),
    ("exactly at a blackout's end: not moved",
     ("blackout-at-end", "2026-01-14T11:00:00" + Z, "OK", None, "2026-01-15T10:30:00" + Z, "2026-01-14T12:00:00" + Z,
      "2026-01-15T10:00:00" + Z)),
    ("one second before a blackout's end: moved to it",
     ("blackout-before-end", "2026-01-14T11:00:00" + Z, "OK", None, "2026-01-15T10:30:00" + Z,
      "2026-01-14T12:00:00" + Z, "2026-01-15T10:00:00" + Z)),
    ("adjacent blackouts: past both",
     ("blackout-adjacent", "2026-01-14T01:00:00" + Z, "OK", None, "2026-01-14T11:40:00" + Z, "2026-01-14T02:00:00" + Z,
      "2026-01-14T11:20:00" + Z)),
    # retry backoff: the last end plus 5 min, 1 h, then 4 h for the third failure and later
    ("1 failure: 5 min after the last end", _failed(1, "2026-01-14T05:15:00" + Z)),
    ("2 failures: 1 h after the last end", _failed(2, "2026-01-14T06:10:00" + Z)),
    ("3 failures: 4 h after the last end", _failed(3, "2026-01-14T09:10:00" + Z)),
    ("5 failures: still 4 h", _failed(5, "2026-01-14T09:10:00" + Z)),
    # running: silent after more than the ping timeout since the last sign of life
    ("ping exactly the timeout old: not silent", _running("running-pinged", "2026-01-14T08:50:30" + Z, "OK", None)),
    ("ping one second past the timeout: owner_silent",
     _running("running-pinged", "2026-01-14T08:50:31" + Z, "WARNING", "owner_silent")),
    ("ping 10 minutes old: owner_silent", _running("running-pinged", "2026-01-14T09:00:00" + Z, "WARNING", "owner_silent")),
    ("no ping, start exactly the timeout old: not silent",
     _running("running-no-ping", "2026-01-14T08:00:30" + Z, "OK", None)),
    ("no ping, start one second past the timeout: owner_silent",
     _running("running-no-ping", "2026-01-14T08:00:31" + Z, "WARNING", "owner_silent")),
    ("started one second too late: running_late",
     ("running-late", "2026-01-14T05:30:00" + Z, "WARNING", "running_late", "2026-01-14T06:00:00" + Z,
      "2026-01-14T00:40:00" + Z, "2026-01-14T05:20:00" + Z)),
    ("started just in time: OK, though now + average is past the deadline",
     ("running-in-time", "2026-01-14T05:30:00" + Z, "OK", None, "2026-01-14T06:00:00" + Z, "2026-01-14T00:40:00" + Z,
      "2026-01-14T05:20:00" + Z)),
    ("no cooldown given: can start a tenth of the period before it should",
     ("once-a-period", "2026-01-14T01:00:00" + Z, "OK", None, "2026-01-14T06:00:00" + Z, "2026-01-14T04:44:00" + Z,
      "2026-01-14T05:20:00" + Z)),
    # 1 h period, average 50 min: should 00:10, should - 6 min = 00:04, before the last good end 00:50
    ("no cooldown given, a long run: not before the last good end",
     ("once-a-period-long-run", "2026-01-14T00:55:00" + Z, "WARNING", "likely_late", "2026-01-14T01:00:00" + Z,
      "2026-01-14T00:50:00" + Z, "2026-01-14T00:10:00" + Z)),
    ("paused: WARNING, no deadline, no start times",
     ("paused", "2026-03-01T00:00:00" + Z, "WARNING", "paused", None, None, None)),
]]


# -- the stores, with the schedules imported through the command line ---------------------------------
def invoke(url: str, now: str, *args: str, **settings: str):
    """``ostinato ARGS`` on ``url``, with the clock at ``now`` and the given settings."""
    app = AppContext(Settings().with_values({"db": url, **settings}), ManualClock(datetime.fromisoformat(now)))
    try:
        return CliRunner().invoke(cli, list(args), obj=app)
    finally:
        app.close()


def ok(url: str, now: str, *args: str, **settings: str):
    result = invoke(url, now, *args, **settings)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result


def import_schedules(url: str, folder, schedules: list[dict[str, Any]]) -> None:
    ok(url, IMPORTED_AT, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site",
       "--no-default-interval")
    path = folder / "schedules.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in schedules), encoding="utf-8")
    assert "Imported" in ok(url, IMPORTED_AT, "schedule", "import", str(path)).output


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def imported(request, tmp_path_factory) -> Iterator[str]:
    """A store with every schedule of the table imported (with its state), once per store."""
    folder = tmp_path_factory.mktemp("by-hand")
    if request.param == "sqlite":
        url = f"sqlite:///{folder}/t.db"
        ok(url, IMPORTED_AT, "db", "init")
        import_schedules(url, folder, SCHEDULES)
        yield url
        return
    server, template = request.getfixturevalue("pg_server"), request.getfixturevalue("pg_template")
    name = f"by_hand_{uuid.uuid4().hex[:8]}"
    url = server.create_database(name, template=template)
    try:
        import_schedules(url, folder, SCHEDULES)
        yield url
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def api(imported) -> Iterator[Api]:
    store = open_store(imported)
    try:
        yield Api(store, ManualClock(datetime.fromisoformat(IMPORTED_AT)), Settings())
    finally:
        store.close()


# -- the checks --------------------------------------------------------------------------------
def instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def check(case: Case, found: dict[str, Any], fields: tuple[str, ...]) -> None:
    """``found``'s condition, reason and times are the case's (times compared as instants: the
    faces may write them in the schedule's zone)."""
    expected = {"condition": case.condition, "reason": case.reason}
    got = {"condition": found["condition"], "reason": found["reason"]}
    for name in fields:
        expected[name] = instant(getattr(case, name))
        got[name] = instant(found[name])
    assert got == expected, case.id


def check_state_kept(schedule: str, shown: dict[str, Any]) -> None:
    """The imported history came back: every state field of the record, as sent."""
    record = next(s for s in SCHEDULES if s["name"] == schedule)
    for name, value in record.items():
        if name.endswith("_at"):
            assert instant(shown[name]) == instant(value), name
        elif name != "blackout_periods":
            assert shown[name] == value, name


TIMES = ("deadline", "can_start_by", "should_start_by")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_command_line_agrees_with_the_hand_computed_case(imported, case):
    [row] = json.loads(ok(imported, case.now, "schedule", "condition", case.schedule, "--at", case.now, "--json").output)
    check(case, row, ("deadline",))
    shown = json.loads(ok(imported, case.now, "schedule", "show", case.schedule, "--json").output)
    check(case, shown, TIMES)
    check_state_kept(case.schedule, shown)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_api_agrees_with_the_hand_computed_case(api, case):
    api.clock.set(datetime.fromisoformat(case.now))
    condition = api.ok("GET", f"/api/v1/schedules/{case.schedule}/condition", params={"at": case.now})
    check(case, condition, ("deadline",))
    detail = api.ok("GET", f"/api/v1/schedules/{case.schedule}")
    check(case, detail, TIMES)
    check_state_kept(case.schedule, detail)


def test_every_schedule_of_the_table_is_checked():
    assert {s["name"] for s in SCHEDULES} == {c.schedule for c in CASES}


# -- a silent owner, on every face ---------------------------------------------------------------
SILENT = "running-pinged"
PING_10_MIN_OLD = "2026-01-14T09:00:00+00:00"


@pytest.mark.parametrize("timeout, condition, reason", [("30s", "WARNING", "owner_silent"), ("15m", "OK", None)])
def test_a_silent_owner_reads_the_same_on_every_face(tmp_path, timeout, condition, reason):
    """Last ping 10 minutes ago: with the setting schedule_ping_timeout at 30 s, owner_silent on the
    command line (condition, show, list; text and JSON), the API, the dashboard and /metrics; with
    15 min, OK everywhere (the setting is read, not a constant)."""
    url = f"sqlite:///{tmp_path}/t.db"
    ok(url, IMPORTED_AT, "db", "init")
    import_schedules(url, tmp_path, [s for s in SCHEDULES if s["name"] == SILENT])
    setting = {"schedule_ping_timeout": timeout}

    def cli_json(*args: str) -> Any:
        return json.loads(ok(url, PING_10_MIN_OLD, "schedule", *args, "--json", **setting).output)

    def cli_text(*args: str) -> str:
        return ok(url, PING_10_MIN_OLD, "schedule", *args, **setting).output

    seen = [cli_json("condition", SILENT)[0], cli_json("condition")[0], cli_json("show", SILENT), cli_json("list")[0]]
    assert [(r["condition"], r["reason"]) for r in seen] == [(condition, reason)] * 4
    for args in (("condition", SILENT), ("list",)):
        [line] = [line for line in cli_text(*args).splitlines() if SILENT in line]
        assert condition in line and ("owner_silent" in line) == (reason is not None), line
    shown = cli_text("show", SILENT)
    said = f" ({reason}): {reason_text(Reason(reason))}" if reason else ""
    assert f"Condition: {condition}{said}\n" in shown
    assert "; last ping 10 minutes ago (2026-01-14 08:50:00+00:00)\n" in shown
    assert seen[2]["deadline"] == seen[3]["deadline"] == "2026-01-15T00:00:00+00:00"

    store = open_store(url)
    try:
        api = Api(store, ManualClock(datetime.fromisoformat(PING_10_MIN_OLD)), Settings().with_values(setting))
        answers = [api.ok("GET", f"/api/v1/schedules/{SILENT}"), api.ok("GET", f"/api/v1/schedules/{SILENT}/condition"),
                   api.ok("GET", "/api/v1/schedules")["items"][0], api.ok("GET", "/api/v1/schedule-conditions")["items"][0]]
        assert [(a["condition"], a["reason"]) for a in answers] == [(condition, reason)] * 4
        metrics = api.get("/metrics").text
        assert f'ostinato_schedules{{state="{condition}"}} 1.0' in metrics
        assert ('ostinato_schedules_by_reason{reason="owner_silent"} 1.0' in metrics) == (reason is not None)
        page = api.get("/").text
        assert ("its owner stopped pinging" in page) == (reason is not None)
    finally:
        store.close()
