"""The catch-up pass on every store: a calendar schedule the scheduler runs, after an outage,
runs what its rule keeps (the latest fire time, all of them up to a budget, or none) and the
ledger of fire times records what was skipped; a schedule only late runs as before."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.firings import CatchUp, FiringStatus
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind, ScheduleTiming

H, M = timedelta(hours=1), timedelta(minutes=1)
TIMING = ScheduleTiming()


def hourly(rule: CatchUp) -> Schedule:
    return Schedule("hourly", ScheduleKind.CALENDAR, "job", T0 - 30 * M, cron_schedule="0 * * * *",
                    cron_max_schedule_duration=30 * M, catch_up=rule)


def run_once(store, at, tag):
    picked = store.pick_schedules(node="n", owner_name="a", tags=[tag], now=at)
    for schedule, run in picked:
        store.end_schedule_run(schedule.name, run.owner_tag, status=RunStatus.SUCCEEDED, ended=at + M, timing=TIMING)
    return picked


def test_a_schedule_only_late_runs_and_skips_nothing(store):
    store.create_schedule(hourly(CatchUp.skip()), T0 - 30 * M, TIMING)
    assert store.catch_up_schedules(T0 + 40 * M, TIMING) == []  # 12:00 is 40 min late, 13:00 not due yet
    assert len(run_once(store, T0 + 40 * M, "t1")) == 1
    assert store.get_schedule("hourly").fired_through == T0 and store.list_firings("hourly") == []


@pytest.mark.parametrize("rule, runs, skipped", [
    (CatchUp(), 1, (T0, T0 + 2 * H, 3)),
    (CatchUp.all(2), 2, (T0, T0 + H, 2)),
    (CatchUp.skip(), 0, (T0, T0 + 3 * H, 4)),
])
def test_after_an_outage_the_rule_decides_and_the_skipped_are_recorded(store, rule, runs, skipped):
    store.create_schedule(hourly(rule), T0 - 30 * M, TIMING)
    back = T0 + 3 * H + 20 * M  # 12:00 to 15:00 were missed
    [record] = store.catch_up_schedules(back, TIMING, sender="n/a")
    assert (record.nominal_at, record.last_at, record.firings) == skipped and record.status is FiringStatus.SKIPPED
    assert store.catch_up_schedules(back, TIMING) == []  # done once
    ran = 0
    for step in range(6):
        ran += len(run_once(store, back + step * 2 * M, f"t{step}"))
    assert ran == runs
    assert store.get_schedule("hourly").fired_through == T0 + 3 * H  # 15:00 handled: next is 16:00
    [listed] = store.list_firings("hourly")
    assert listed == record
