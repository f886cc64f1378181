"""The pick by rule on every store (domain.lookahead): the orders, the slot held for a more urgent
schedule due soon, what is left to another live scheduler, the heartbeats and the holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.errors import ValidationError
from ostinato.domain.lookahead import Lookahead, PickOrder, PickRule
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind

H = timedelta(hours=1)
M = timedelta(minutes=1)
LOOK = PickRule(lookahead=Lookahead())


def periodic(name: str, period: timedelta, run: timedelta, last_start, **kw) -> Schedule:
    """A periodic schedule whose last good run started at ``last_start`` and lasted ``run``."""
    return Schedule(name, ScheduleKind.PERIODIC, "scrape", T0 - 30 * 24 * H, scheduling_period=period,
                    last_good_start_at=last_start, last_good_end_at=last_start + run, average_good_duration=run, **kw)


def weekly_and_hourly(store, **weekly):
    """The proposal's case: a weekly 12-hour schedule that can start now, an hourly 1-minute one due in
    a few minutes and more urgent than the weekly."""
    store.create_schedule(periodic("weekly", 7 * 24 * H, 12 * H, T0 - 2 * 24 * H, cooldown_duration=H, **weekly), T0)
    store.create_schedule(periodic("hourly", H, M, T0 - 50 * M), T0)


def test_greedy_takes_the_long_run(store):
    weekly_and_hourly(store)
    assert [s.name for s, _ in store.pick_schedules(node="n1", owner_name="a", tags=["g"], now=T0,
                                                    rule=PickRule(lookahead=None))] == ["weekly"]


def test_lookahead_holds_the_slot_for_the_urgent_short_one(store):
    weekly_and_hourly(store)
    store.heartbeat_scheduler("n1", "a", slots=1, run_ends=[], now=T0)
    assert store.pick_schedules(node="n1", owner_name="a", tags=["l"], now=T0, rule=LOOK) == []
    [hold] = store.list_holds(T0)
    assert (hold.node, hold.instance, hold.waits_for) == ("n1", "a", "hourly")
    assert T0 < hold.due_at <= T0 + 10 * M and hold.expires_at > hold.due_at
    assert store.list_holds(T0, schedule="hourly") == [hold] and store.list_holds(T0, schedule="weekly") == []
    # once the hourly one can start, it is taken, and the hold is gone
    picked = store.pick_schedules(node="n1", owner_name="a", tags=["h"], now=hold.due_at, rule=LOOK)
    assert [s.name for s, _ in picked] == ["hourly"]
    assert store.list_holds(hold.due_at) == []


def test_with_ample_capacity_nothing_is_held(store):
    weekly_and_hourly(store)
    store.heartbeat_scheduler("n1", "a", slots=2, run_ends=[], now=T0)
    assert [s.name for s, _ in store.pick_schedules(node="n1", owner_name="a", tags=["x", "y"], now=T0,
                                                    rule=LOOK)] == ["weekly"]
    assert store.list_holds(T0) == []


def test_a_hold_lapses_when_it_expires(store):
    weekly_and_hourly(store)
    store.pick_schedules(node="n1", owner_name="a", tags=["l"], now=T0, rule=LOOK)
    [hold] = store.list_holds(T0)
    assert store.list_holds(hold.expires_at) == []


def test_node_aware_the_schedule_only_this_scheduler_may_run_goes_first(store):
    store.create_schedule(periodic("a", H, M, T0 - 2 * H), T0)  # the more urgent, any node
    store.create_schedule(periodic("b", H, M, T0 - 2 * H + M, dont_run_on_nodes=("n2",)), T0)
    store.heartbeat_scheduler("n2", "a", slots=1, run_ends=[], now=T0)
    greedy = [s.name for s, _ in store.pick_schedules(node="n1", owner_name="a", tags=["g"], now=T0)]
    assert greedy == ["a"]
    store.end_schedule_run("a", "g", status=RunStatus.SUCCEEDED, ended=T0)
    store.delete_schedule("a", T0, actor="t")
    store.create_schedule(periodic("a", H, M, T0 - 2 * H), T0)
    assert [s.name for s, _ in store.pick_schedules(node="n1", owner_name="a", tags=["l"], now=T0, rule=LOOK)] == ["b"]
    assert [s.name for s, _ in store.pick_schedules(node="n2", owner_name="a", tags=["m"], now=T0, rule=LOOK)] == ["a"]


def test_a_silent_scheduler_is_not_counted_on(store):
    store.create_schedule(periodic("a", H, M, T0 - 2 * H), T0)
    store.create_schedule(periodic("b", H, M, T0 - 2 * H + M, dont_run_on_nodes=("n2",)), T0)
    store.heartbeat_scheduler("n2", "a", slots=1, run_ends=[], now=T0 - 10 * M)
    assert [s.name for s, _ in store.pick_schedules(node="n1", owner_name="a", tags=["l"], now=T0, rule=LOOK)] == ["a"]
    assert [n.node for n in store.list_schedulers(T0)] == []
    assert [n.node for n in store.list_schedulers(T0, ttl=H)] == ["n2"]


@pytest.mark.parametrize("order, first", [(PickOrder.DEADLINE, "late"), (PickOrder.DUE, "due-first"),
                                          (PickOrder.PERIOD, "short-period")])
def test_orders(store, order, first):
    store.create_schedule(periodic("late", 24 * H, M, T0 - 25 * H), T0)  # should have started long ago
    store.create_schedule(periodic("due-first", 24 * H, M, T0 - 23 * H - 50 * M, cooldown_duration=M), T0)
    store.create_schedule(periodic("short-period", 2 * H, M, T0 - 2 * H + 30 * M), T0)
    picked = store.pick_schedules(node="n1", owner_name="a", tags=["t"], now=T0 + 20 * M,
                                  rule=PickRule(order=order))
    assert [s.name for s, _ in picked] == [first]
    [(schedule, run)] = picked
    assert schedule.owner_tag == run.owner_tag == "t" and run.status is RunStatus.RUNNING


def test_heartbeats_replace_and_are_checked(store):
    store.heartbeat_scheduler("n1", "a", slots=4, run_ends=[T0 + H, T0 + M], now=T0)
    store.heartbeat_scheduler("n1", "a", slots=2, run_ends=[T0 + M], now=T0 + M)
    [load] = store.list_schedulers(T0 + M)
    assert (load.node, load.instance, load.slots, load.ends, load.seen_at) == ("n1", "a", 2, (T0 + M,), T0 + M)
    with pytest.raises(ValidationError, match="slots"):
        store.heartbeat_scheduler("n1", "a", slots=0, run_ends=[], now=T0 + 2 * M)
    with pytest.raises(ValidationError, match="run_ends"):
        store.heartbeat_scheduler("n1", "a", slots=1, run_ends=[T0, T0], now=T0 + 2 * M)
    assert store.list_schedulers(T0 + M) == [load]


def test_bad_rules_are_refused_and_nothing_is_taken(store):
    weekly_and_hourly(store)
    for bad, field in [(Lookahead(horizon=-H), "lookahead_horizon"), (Lookahead(k=0), "lookahead_k"),
                       (Lookahead(hold_grace=timedelta(0)), "lookahead_hold_grace")]:
        with pytest.raises(ValidationError, match=field):
            store.pick_schedules(node="n1", owner_name="a", tags=["t"], now=T0, rule=PickRule(lookahead=bad))
    assert all(s.owner_tag is None for s in store.list_schedules()) and store.list_holds(T0) == []
