"""A run asked for now, on every store: it starts at once and first, keeps the one-running-copy
rule (asked while a run is in progress, it starts when that one ends), waits out a blackout
period, is done by the first run that starts after it, and is refused for a paused schedule or
one the beats send, with nothing written (one the beats send gets a fire time of its own)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.blackouts import parse_blackout_periods
from ostinato.domain.errors import ConflictError, NotFoundError
from ostinato.domain.firings import FiringStatus
from ostinato.domain.schedules import RunMode, RunStatus, Schedule, ScheduleKind

H = timedelta(hours=1)
M = timedelta(minutes=1)


def hourly(name: str, **kw) -> Schedule:
    """Ran well 10 minutes ago: its next run is about 50 minutes away."""
    base = dict(name=name, kind=ScheduleKind.PERIODIC, task_type="scrape", created_at=T0 - 10 * H,
                scheduling_period=H, last_good_start_at=T0 - 11 * M, last_good_end_at=T0 - 10 * M,
                last_start_at=T0 - 11 * M, last_end_at=T0 - 10 * M, failure_count=0)
    return Schedule(**{**base, **kw})


def pick(store, tag: str, now=T0):
    picked = store.pick_schedule(node="n1", owner_name="a", tag=tag, now=now)
    return picked[0].name if picked else None


def test_a_run_asked_for_now_starts_at_once_and_before_those_due_later(store):
    store.create_schedule(hourly("resting"), T0)
    # can start now, should by T0 + 5 min: asked for now (by T0 + 1 min) is more urgent
    store.create_schedule(hourly("due", last_good_start_at=T0 - 55 * M, last_good_end_at=T0 - 54 * M), T0)
    assert store.next_can_start_by() <= T0
    asked = store.request_schedule_run("resting", T0 + M, actor="ana")
    assert asked.run_requested_at == T0 + M
    assert store.get_schedule("resting").run_requested_at == T0 + M
    assert pick(store, "t1", T0 + M) == "resting"
    assert pick(store, "t2", T0 + M) == "due"


def test_the_request_is_done_by_the_run_it_started_and_the_rule_resumes(store):
    store.create_schedule(hourly("job"), T0)
    store.request_schedule_run("job", T0, actor="ana")
    assert pick(store, "t1") == "job"
    assert store.end_schedule_run("job", "t1", status=RunStatus.SUCCEEDED, ended=T0 + M)
    after = store.get_schedule("job")
    assert after.last_start_at == T0 and after.run_requested_at == T0
    assert pick(store, "t2", T0 + 2 * M) is None  # once a period again, not back to back
    assert store.next_can_start_by() > T0 + 40 * M


def test_asked_while_running_it_starts_when_the_run_ends_never_beside_it(store):
    store.create_schedule(hourly("job", last_good_start_at=T0 - 2 * H, last_good_end_at=T0 - 2 * H), T0)
    assert pick(store, "t1") == "job"
    running = store.request_schedule_run("job", T0 + M, actor="ana")
    assert running.owner_tag == "t1"  # the run in progress keeps its ownership
    assert pick(store, "t2", T0 + 2 * M) is None  # one running copy
    assert store.ping_schedule("job", "t1", T0 + 2 * M)  # still ours
    store.end_schedule_run("job", "t1", status=RunStatus.SUCCEEDED, ended=T0 + 3 * M)
    assert pick(store, "t3", T0 + 3 * M) == "job"  # the request, after the run it arrived during
    store.end_schedule_run("job", "t3", status=RunStatus.SUCCEEDED, ended=T0 + 4 * M)
    assert pick(store, "t4", T0 + 5 * M) is None


def test_it_overrides_the_retry_backoff_but_waits_out_a_blackout(store):
    store.create_schedule(hourly("failing", failure_count=2, last_end_at=T0 - M), T0)
    assert pick(store, "t1") is None  # retry backoff of the second failure: an hour
    store.request_schedule_run("failing", T0, actor="ana")
    assert pick(store, "t1") == "failing"
    night = parse_blackout_periods([{"start": T0.strftime("%H:%M"),
                                     "end": (T0 + 2 * H).strftime("%H:%M")}])
    store.create_schedule(hourly("quiet", blackout_periods=night), T0)
    store.request_schedule_run("quiet", T0 + M, actor="ana")
    assert pick(store, "t2", T0 + M) is None
    assert pick(store, "t3", T0 + 2 * H + M) == "quiet"


def test_a_calendar_schedule_runs_now_without_losing_its_fire_time(store):
    store.create_schedule(Schedule("nightly", ScheduleKind.CALENDAR, "scrape", T0 - 2 * H, cron_schedule="0 2 * * *",
                                   cron_max_schedule_duration=H), T0)
    cursor = store.get_schedule("nightly").fired_through
    store.request_schedule_run("nightly", T0, actor="ana")
    assert pick(store, "t1") == "nightly"
    store.end_schedule_run("nightly", "t1", status=RunStatus.SUCCEEDED, ended=T0 + M)
    assert store.get_schedule("nightly").fired_through == cursor  # the next 02:00 still runs
    assert store.next_can_start_by() is not None


@pytest.mark.parametrize("change, says", [
    (dict(enabled=False), "paused: resume it first"),
    (dict(enabled=False, mode=RunMode.SEND, declared_by="beat:proj"), "paused: resume it first"),
])
def test_refused_for_a_paused_schedule(store, change, says):
    store.create_schedule(hourly("job", **change), T0)
    before = store.get_schedule("job")
    with pytest.raises(ConflictError, match=says):
        store.request_schedule_run("job", T0, actor="ana")
    assert store.get_schedule("job") == before
    with pytest.raises(NotFoundError):
        store.request_schedule_run("ghost", T0, actor="ana")


def test_a_schedule_the_beats_send_gets_a_fire_time_of_its_own_for_them_to_send(store):
    store.create_schedule(hourly("job", mode=RunMode.SEND, declared_by="beat:proj"), T0)
    before = store.get_schedule("job")
    assert store.request_schedule_run("job", T0 + M, actor="ana") == before  # its state unchanged
    [firing] = store.list_firings("job")
    assert (firing.nominal_at, firing.status, firing.lease_until) == (T0 + M, FiringStatus.CLAIMED, T0 + M)
    claims = store.claim_firings(sender="n/beat", tag="b1", now=T0 + 2 * M, lease=timedelta(seconds=30))
    assert ("job", T0 + M) in {(c.schedule, c.nominal_at) for c in claims}  # the next tick of any beat sends it
    claim = store.claim_run_now("job", T0 + 3 * M, sender="n/run-now", tag="c1", lease=timedelta(seconds=30),
                                actor="ana")
    assert (claim.schedule, claim.nominal_at, claim.tag, claim.lease_until) == ("job", T0 + 3 * M, "c1",
                                                                                  T0 + 3 * M + timedelta(seconds=30))
    store.mark_firings_sent("c1", [("job", T0 + 3 * M)], T0 + 3 * M)
    assert store.list_firings("job")[0].status is FiringStatus.SENT
    outcomes = [e.outcome for e in reversed(store.list_audit(target="schedule:job"))]
    assert outcomes == [f"done: a fire time of its own at {(T0 + M).isoformat()}, handed to the beats, which send it "
                        "at their next tick",
                        f"done: a fire time of its own at {(T0 + 3 * M).isoformat()}, claimed by n/run-now, which sends "
                        "it through Celery (a beat does if it cannot)"]
    with pytest.raises(ConflictError, match="already has a fire time"):
        store.claim_run_now("job", T0 + 3 * M, sender="n/run-now", tag="c2", lease=timedelta(seconds=30), actor="ana")
    store.create_schedule(hourly("runs-here"), T0)
    with pytest.raises(ConflictError, match="run by the schedulers"):
        store.claim_run_now("runs-here", T0, sender="n/run-now", tag="c3", lease=timedelta(seconds=30), actor="ana")
