"""The beats' ledger of fire times on every store: a schedule the beats send (mode ``send``) has each
fire time claimed once, sent once; a claim whose beat went silent is taken over after its lease and
no sooner; the catch-up rule's skips are recorded; a paused schedule is not claimed; the next
fire time tells a beat how long to sleep."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.firings import CatchUp, FiringStatus
from ostinato.domain.schedules import RunMode, Schedule, ScheduleKind, ScheduleTiming
from ostinato.domain.tasks import TaskArguments

S, M = timedelta(seconds=1), timedelta(minutes=1)
LEASE = 30 * S
TIMING = ScheduleTiming()


def every(name: str, period: timedelta, **kw) -> Schedule:
    return Schedule(name, ScheduleKind.PERIODIC, "proj.tasks.add", T0, scheduling_period=period, mode=RunMode.SEND,
                    arguments=TaskArguments((2, 2)), options={"queue": "beat"}, **kw)


def claim(store, tag, at, limit=100):
    return store.claim_firings(sender=f"node/{tag}", tag=tag, now=at, lease=LEASE, timing=TIMING, limit=limit)


def test_each_fire_time_is_claimed_once_and_recorded_sent(store):
    store.create_schedule(every("add", 10 * S), T0, TIMING)
    assert claim(store, "a", T0 + 9 * S) == [] and store.next_send_at() == T0 + 10 * S
    [first] = claim(store, "a", T0 + 10 * S)
    assert (first.schedule, first.nominal_at, first.task, first.args, first.options) == (
        "add", T0 + 10 * S, "proj.tasks.add", (2, 2), {"queue": "beat"})
    assert claim(store, "b", T0 + 10 * S) == []  # the other beat finds nothing
    store.mark_firings_sent("a", [("add", first.nominal_at)], T0 + 10 * S)
    [record] = store.list_firings("add")
    assert record.status is FiringStatus.SENT and record.sender == "node/a" and record.sent_at == T0 + 10 * S
    assert store.next_send_at() == T0 + 20 * S
    assert [c.nominal_at for c in claim(store, "b", T0 + 30 * S)] == [T0 + 20 * S, T0 + 30 * S]  # late, within the grace


def test_a_claim_is_taken_over_only_after_its_lease(store):
    store.create_schedule(every("add", M), T0, TIMING)
    [lost] = claim(store, "a", T0 + M)  # beat a dies (or pauses) before sending
    assert claim(store, "b", T0 + M + LEASE - S) == []
    assert store.next_send_at() == T0 + M + LEASE
    [taken] = claim(store, "b", T0 + M + LEASE)
    assert (taken.nominal_at, taken.tag, taken.lease_until) == (T0 + M, "b", T0 + M + 2 * LEASE)
    store.mark_firings_sent("a", [("add", lost.nominal_at)], T0 + M + LEASE)  # a wakes up: no longer its claim
    assert store.list_firings("add")[0].status is FiringStatus.CLAIMED
    store.mark_firings_sent("b", [("add", taken.nominal_at)], T0 + M + LEASE)
    assert [r.status for r in store.list_firings("add")] == [FiringStatus.SENT]
    store.release_firings("b", [("add", T0 + M)], T0 + 2 * M)  # already sent: nothing to release
    assert claim(store, "c", T0 + 2 * M - S) == []


def test_a_released_claim_is_taken_at_once(store):
    store.create_schedule(every("add", 10 * S), T0, TIMING)
    [mine] = claim(store, "a", T0 + 10 * S)
    store.release_firings("a", [("add", mine.nominal_at)], T0 + 11 * S)
    assert [c.tag for c in claim(store, "b", T0 + 11 * S)] == ["b"]


@pytest.mark.parametrize("rule, sent", [(CatchUp(), 1), (CatchUp.all(3), 3), (CatchUp.skip(), 0)])
def test_after_an_outage_the_catch_up_rule_decides(store, rule, sent):
    store.create_schedule(every("add", M, catch_up=rule), T0, TIMING)
    claims = claim(store, "a", T0 + 10 * M + 30 * S)  # 10 fire times due, the oldest 9.5 minutes old
    assert [c.nominal_at for c in claims] == [T0 + (11 - sent + i) * M for i in range(sent)]
    [skipped] = [r for r in store.list_firings("add") if r.status is FiringStatus.SKIPPED]
    assert (skipped.nominal_at, skipped.firings) == (T0 + M, 10 - sent)
    assert store.get_schedule("add").fired_through == T0 + 10 * M and store.next_send_at() == T0 + 11 * M


def test_paused_and_calendar_schedules(store):
    store.create_schedule(every("paused", 10 * S, enabled=False), T0, TIMING)
    store.create_schedule(Schedule("cron", ScheduleKind.CALENDAR, "proj.tasks.report", T0, mode=RunMode.SEND,
                                   cron_schedule="*/5 * * * *", cron_max_schedule_duration=5 * M,
                                   tz="America/New_York"), T0, TIMING)
    assert store.next_send_at() == T0 + 5 * M
    assert [(c.schedule, c.nominal_at) for c in claim(store, "a", T0 + 5 * M)] == [("cron", T0 + 5 * M)]
    assert store.pick_schedules(node="n", owner_name="x", tags=["t"], now=T0 + 5 * M) == []  # never picked


def test_a_deleted_schedule_takes_its_ledger_with_it(store):
    store.create_schedule(every("add", 10 * S), T0, TIMING)
    claim(store, "a", T0 + 10 * S)
    assert store.delete_schedule("add", T0, actor="ana") and store.list_firings("add") == []
    assert claim(store, "b", T0 + 10 * M) == []


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)  # several connections: one SQLite process serialises
def test_concurrent_beats_never_claim_a_fire_time_twice(store):
    for i in range(60):
        store.create_schedule(every(f"s{i}", (1 + i % 7) * S), T0, TIMING)
    claimed: list[tuple[str, object]] = []
    lock = threading.Lock()

    def beat(tag: str) -> None:  # the three beats share one clock, each step a second, and send what they claim
        for step in range(1, 40):
            barrier.wait()
            got = claim(store, tag, T0 + step * S, limit=7)
            store.mark_firings_sent(tag, [(c.schedule, c.nominal_at) for c in got], T0 + step * S)
            with lock:
                claimed.extend((c.schedule, c.nominal_at) for c in got)

    barrier = threading.Barrier(3)
    threads = [threading.Thread(target=beat, args=(f"b{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == len(set(claimed)) > 300
