"""The console's history on every store: samples written, replaced, read by resolution and series,
pruned past each resolution's span; the runs ended lately; and the history pass over a simulated
day (one-minute samples, five-minute, hourly and six-hourly rollups, bounded rows, runs counted once
each, whether the pass comes every minute or every five)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT, new

from ostinato.domain.clock import ManualClock
from ostinato.domain.errors import ValidationError
from ostinato.domain.history import RESOLUTIONS, ROWS_PER_SERIES, HistorySample, interval_start
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind
from ostinato.domain.tasks import RunEvent, TaskRunStatus
from ostinato.services.history import HistoryPass

M = timedelta(minutes=1)
H = timedelta(hours=1)
MINUTE, FINE, HOURLY, SIX = (r.seconds for r in RESOLUTIONS)


def test_samples_are_replaced_read_by_resolution_and_series_and_pruned(store):
    store.record_history([HistorySample("visit_type:git", FINE, T0, {"fresh": 0.5}),
                          HistorySample("visit_type:hg", FINE, T0, {"fresh": 0.25}),
                          HistorySample("visit_type:git", HOURLY, T0, {"fresh": 0.4})])
    store.record_history([HistorySample("visit_type:git", FINE, T0, {"fresh": 0.75, "in_flight": 3})])
    got = store.read_history(FINE, T0, T0 + M)
    assert [(s.series, dict(s.figures)) for s in got] == [("visit_type:git", {"fresh": 0.75, "in_flight": 3.0}),
                                                          ("visit_type:hg", {"fresh": 0.25})]
    assert [s.series for s in store.read_history(FINE, T0, T0 + M, series=["visit_type:hg"])] == ["visit_type:hg"]
    assert store.read_history(FINE, T0 + M, T0 + H) == []
    store.record_history([HistorySample("visit_type:git", MINUTE, T0, {"fresh": 0.5})])
    assert store.prune_history(T0 + 30 * M) == 0
    assert store.prune_history(T0 + 2 * H) == 1  # the one-minute one is kept an hour
    assert store.prune_history(T0 + 25 * H) == 2  # the five-minute ones are kept a day; the hourly one a week
    assert [s.resolution for s in store.read_history(HOURLY, T0, T0 + H)] == [HOURLY]


@pytest.mark.parametrize("figures, field", [({"fresh": float("nan")}, "fresh"), ({"colour": 1}, "colour"),
                                            ({"runs": "3"}, "runs")])
def test_bad_figures_are_refused_and_nothing_is_written(store, figures, field):
    """The figure is named (by the store as ``visit_type:git.runs``; the remote client's codec names the sample)."""
    with pytest.raises(ValidationError, match=field):
        store.record_history([HistorySample("visit_type:hg", FINE, T0, {"fresh": 1.0}),
                              HistorySample("visit_type:git", FINE, T0, figures)])
    assert store.read_history(FINE, T0 - H, T0 + H) == []


def _schedule(store, name, period=H):
    store.create_schedule(Schedule(name, ScheduleKind.PERIODIC, "scrape", T0 - 3 * H, scheduling_period=period), T0)


def test_ended_runs_of_schedules_and_tasks(store):
    _schedule(store, "bills")
    store.pick_schedule(node="n", owner_name="a", tag="t1", now=T0)
    store.end_schedule_run("bills", "t1", status=RunStatus.FAILED, ended=T0 + 2 * M)
    store.create_task_type(GIT)
    store.create_tasks([new(f"https://x/{i}", next_run=T0 - H) for i in range(3)])
    runs = store.grab_ready_tasks("load-git", T0, 3)
    store.record_run_events([RunEvent(runs[0].run.id, TaskRunStatus.STARTED, T0),
                             RunEvent(runs[0].run.id, TaskRunStatus.EVENTFUL, T0 + M),
                             RunEvent(runs[1].run.id, TaskRunStatus.STARTED, T0),
                             RunEvent(runs[1].run.id, TaskRunStatus.PERMFAILED, T0 + 3 * M)])
    ended = sorted((r.series, r.failed, r.ended - T0) for r in store.ended_runs(T0 - H))
    assert ended == [("schedule:bills", True, 2 * M), ("task_type:load-git", False, M),
                     ("task_type:load-git", True, 3 * M)]
    assert [r.series for r in store.ended_runs(T0 + 2 * M + timedelta(seconds=1))] == ["task_type:load-git"]
    with pytest.raises(ValidationError, match="window"):
        store.ended_runs(T0, window=0)


def test_the_pass_over_a_simulated_day_keeps_bounded_rolled_up_samples(store):
    """Every five minutes for 26 hours: an hourly schedule runs (a run of 2 minutes at the top of each hour,
    every fourth one failing), a visit type gets listed and visited."""
    clock = ManualClock(interval_start(T0, H))
    lister = store.get_or_create_lister("github", "github.com", T0 - H)
    store.record_listed_origins(lister.id, [ListedOrigin(f"https://x/{i}", "git", last_update=T0 - H)
                                            for i in range(4)], T0 - H)
    _schedule(store, "hourly")
    history = HistoryPass(store, clock)
    start, failures = clock.now(), 0
    for step in range(26 * 12):
        now = clock.now()
        if step % 12 == 0:
            picked = store.pick_schedule(node="n", owner_name="a", tag=f"t{step}", now=now)
            assert picked is not None, now
            failed = (step // 12) % 4 == 3
            failures += failed and now >= start + 2 * H
            store.end_schedule_run("hourly", f"t{step}", status=RunStatus.FAILED if failed else RunStatus.SUCCEEDED,
                                   ended=now + 2 * M)
        clock.advance(timedelta(minutes=5))
        history.run_once()
    end = clock.now()
    fine = store.read_history(FINE, end - 25 * H, end, series=["schedule:hourly"])
    assert 24 * 12 - 1 <= len(fine) <= 24 * 12 + 1  # a day of five-minute samples, the older ones pruned
    hourly = store.read_history(HOURLY, start, end, series=["schedule:hourly"])
    assert len(hourly) == 26
    assert [s.figures["runs"] for s in hourly] == [1.0] * 26  # each run counted once, in its hour
    assert sum(s.figures["failures"] for s in hourly[2:]) == failures
    assert all(s.figures["duration_max"] == 120.0 for s in hourly)
    six = store.read_history(SIX, interval_start(start, 6 * H), end, series=["schedule:hourly"])
    assert sum(s.figures["runs"] for s in six) == 26
    git = store.read_history(HOURLY, start, end, series=["visit_type:git"])
    assert git and all(s.figures["fresh"] == 0.0 and "lag_p50" in s.figures for s in git)  # 4 pending, none visited
    rows = sum(len(store.read_history(r.seconds, end - r.span - H, end + H)) for r in RESOLUTIONS)
    assert rows <= 2 * ROWS_PER_SERIES  # two series: bounded whatever the day brought


@pytest.mark.parametrize("every", [1, 5])
def test_the_pass_counts_each_run_once_at_every_resolution_every_minute_or_every_five(store, every):
    """A schedule runs whenever it is due, each run ending 3 min 20 s after its start (one in three
    failing), for 90 minutes: passes every minute or every five minutes count each run once in its
    minute, its five minutes and its hour; the last hour has a sample a minute when the pass comes
    every minute (else one a pass, and one for each minute a run ended)."""
    clock = ManualClock(interval_start(T0, H))
    _schedule(store, "often", period=timedelta(minutes=7))
    history = HistoryPass(store, clock)
    start, ends, failed = clock.now(), [], 0
    for minute in range(90):
        now = clock.now()
        tag = f"t{minute}"
        if store.pick_schedule(node="n", owner_name="a", tag=tag, now=now) is not None:
            failing = len(ends) % 3 == 0
            ends.append(minute + 3)
            store.end_schedule_run("often", tag, status=RunStatus.FAILED if failing else RunStatus.SUCCEEDED,
                                   ended=now + 3 * M + timedelta(seconds=20))
            failed += failing
        clock.advance(M)
        if (minute + 1) % every == 0:
            history.run_once()
    end = clock.now()
    assert len(ends) >= 8 and len({m % 5 for m in ends}) > 1, ends  # runs end in several minutes of five
    for resolution in (FINE, HOURLY):
        got = store.read_history(resolution, start, end, series=["schedule:often"])
        assert sum(s.figures["runs"] for s in got) == len(ends), resolution
        assert sum(s.figures["failures"] for s in got) == failed, resolution
    minutes = store.read_history(MINUTE, end - H, end, series=["schedule:often"])
    passes = {m for m in range(30, 90) if m % every == 0}
    assert sorted(int((s.at - start) / M) for s in minutes) == sorted(passes | {m for m in ends if m >= 30})
    assert [int((s.at - start) / M) for s in minutes if s.figures["runs"]] == [m for m in ends if m >= 30]
