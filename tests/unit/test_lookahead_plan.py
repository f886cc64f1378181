"""Lookahead's plan (domain.lookahead.choose), pure: the proposal's two cases, no hold when capacity is
ample, and two schedulers drawing the same plan from the same snapshot (none leaves a schedule back)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.lookahead import Candidate, Lookahead, NodeLoad, PickOrder, PickRule, choose, period_of

NOW = datetime(2026, 1, 1, tzinfo=UTC)
H, M = timedelta(hours=1), timedelta(minutes=1)
LOOK = PickRule(lookahead=Lookahead())
WEEKLY = Candidate("weekly", NOW - H, NOW + 5 * 24 * H, 12 * H, 7 * 24 * H)
HOURLY = Candidate("hourly", NOW + 10 * M, NOW + 50 * M, M, H)


def pick(rule=LOOK, *, node="n1", room=1, startable=(), upcoming=(), nodes=(), holds=()):
    return choose(node=node, instance="a", room=room, startable=list(startable), upcoming=list(upcoming),
                  nodes=list(nodes), holds=list(holds), now=NOW, rule=rule)


def test_greedy_starts_the_long_run_lookahead_holds_the_slot_for_the_short_urgent_one():
    assert pick(PickRule(), startable=[WEEKLY], upcoming=[HOURLY]).take == ("weekly",)
    choice = pick(startable=[WEEKLY], upcoming=[HOURLY])
    assert choice.take == () and [(h.waits_for, h.due_at) for h in choice.holds] == [("hourly", NOW + 10 * M)]
    assert choice.holds[0].expires_at == NOW + 10 * M + Lookahead().hold_grace


def test_a_short_run_that_ends_before_the_urgent_one_is_due_is_started():
    short = Candidate("short", NOW - H, NOW + 5 * 24 * H, 5 * M, 7 * 24 * H)
    assert pick(startable=[short], upcoming=[HOURLY]) .take == ("short",)


def test_a_less_urgent_schedule_due_soon_is_not_waited_for():
    later = Candidate("later", NOW + 10 * M, NOW + 6 * 24 * H, M, 7 * 24 * H)
    assert pick(startable=[WEEKLY], upcoming=[later]).take == ("weekly",)


def test_another_scheduler_free_soon_serves_the_short_one():
    other = NodeLoad("n2", "a", 1, (NOW + 5 * M,), NOW)
    assert pick(startable=[WEEKLY], upcoming=[HOURLY], nodes=[other]).take == ("weekly",)


def test_the_schedule_only_this_scheduler_may_run_goes_first():
    a = Candidate("a", NOW - H, NOW, M, H)
    b = Candidate("b", NOW - H, NOW + M, M, H, frozenset({"n2"}))
    other = NodeLoad("n2", "a", 1, (), NOW)
    assert pick(PickRule(), startable=[a, b], nodes=[other]).take == ("a",)
    choice = pick(startable=[a, b], nodes=[other])
    assert choice.take == ("b",) and choice.left == ("a",)
    assert pick(node="n2", startable=[a, b], nodes=[NodeLoad("n1", "a", 1, (), NOW)]).take == ("a",)


def test_a_silent_scheduler_is_not_counted_on():
    a = Candidate("a", NOW - H, NOW, M, H)
    gone = NodeLoad("n2", "a", 1, (), NOW - 10 * M)
    assert pick(startable=[a], nodes=[gone]).take == ("a",)


@pytest.mark.parametrize("order, first", [(PickOrder.DEADLINE, "late"), (PickOrder.DUE, "due"),
                                          (PickOrder.PERIOD, "short")])
def test_orders(order, first):
    late = Candidate("late", NOW - 5 * M, NOW - 3 * H, M, 24 * H)
    due = Candidate("due", NOW - 9 * M, NOW + H, M, 24 * H)
    short = Candidate("short", NOW - M, NOW + 30 * M, M, 2 * H)
    assert pick(PickRule(order=order), startable=[late, due, short]).take[0] == first


def test_bounds_are_checked():
    for bad, field in [(Lookahead(horizon=timedelta(0)), "lookahead_horizon"), (Lookahead(k=0), "lookahead_k"),
                       (Lookahead(k=True), "lookahead_k"), (Lookahead(node_ttl=-M), "lookahead_node_ttl")]:
        with pytest.raises(ValidationError, match=field):
            PickRule(lookahead=bad).validated()


def random_snapshot(rng: random.Random, n: int):
    jobs = []
    for i in range(n):
        can = NOW + rng.choice([-1, -1, 1]) * rng.randint(0, 90) * M
        excluded = frozenset(rng.sample(["n1", "n2", "n3"], rng.choice([0, 0, 0, 1])))
        jobs.append(Candidate(f"s{i:02d}", can, can + rng.randint(-120, 600) * M, rng.choice([0, 1, 5, 30, 240]) * M,
                              rng.choice([1, 6, 24]) * H, excluded))
    return [j for j in jobs if j.can_start_by <= NOW], [j for j in jobs if j.can_start_by > NOW]


@pytest.mark.parametrize("seed", range(40))
def test_properties_on_random_snapshots(seed):
    rng = random.Random(seed)
    startable, upcoming = random_snapshot(rng, rng.randint(1, 24))
    rooms = {n: rng.randint(0, 3) for n in ("n1", "n2", "n3")}
    loads = {n: NodeLoad(n, "a", rooms[n] + busy, tuple(NOW + rng.randint(1, 300) * M for _ in range(busy)), NOW)
             for n in rooms for busy in [rng.randint(0, 2)] if rooms[n] + busy > 0}
    taken: dict[str, set[str]] = {}
    for node in loads:
        mine = [j for j in startable if node not in j.excluded]
        choice = choose(node=node, instance="a", room=rooms[node], startable=startable, upcoming=upcoming,
                        nodes=list(loads.values()), holds=[], now=NOW, rule=LOOK)
        assert len(choice.take) <= rooms[node] and set(choice.take) <= {j.name for j in mine}
        assert not set(choice.take) & set(choice.left)
        assert all(h.node == node and h.due_at > NOW for h in choice.holds)
        assert len(choice.holds) + len(choice.take) <= rooms[node]
        taken[node] = set(choice.take)
    every = [name for names in taken.values() for name in names]
    assert len(every) == len(set(every)), taken  # the same plan: no schedule started twice
    if sum(rooms.values()) >= len(startable) + len(upcoming) and startable:
        assert every, "ample capacity: something starts"


def test_schedules_never_run_each_take_a_slot():
    fresh = [Candidate(f"new{i}", NOW - M, NOW + i * M, timedelta(0), H) for i in range(5)]
    assert pick(room=2, startable=fresh).take == ("new0", "new1")


def test_late_runs_go_by_their_worth():
    """What a run buys for its slot-time (period / run), grown by how late it is for its length: a
    1-minute hourly run late by 10 minutes goes before a weekly 12-hour run late by an hour; the weekly
    one late for four days goes before a 1-minute one late by a minute (no starving the long runs), and
    before one that is not late yet."""
    short = Candidate("short", NOW - H, NOW - 10 * M, M, H)
    long = Candidate("long", NOW - 2 * H, NOW - H, 12 * H, 7 * 24 * H)
    assert pick(startable=[long, short]).take == ("short",)
    assert pick(PickRule(), startable=[long, short]).take == ("long",)  # greedy: the earliest should_start_by
    starved = Candidate("long", NOW - 5 * 24 * H, NOW - 4 * 24 * H, 12 * H, 7 * 24 * H)
    barely = Candidate("short", NOW - H, NOW - M, M, H)
    assert pick(startable=[barely, starved]).take == ("long",)
    on_time = Candidate("on-time", NOW - H, NOW + M, M, H)
    assert pick(startable=[on_time, starved]).take == ("long",)


def test_a_run_that_must_start_soon_goes_before_one_with_hours_to_spare():
    soon = Candidate("soon", NOW - H, NOW + 2 * M, 5 * M, 24 * H)
    spare = Candidate("spare", NOW - H, NOW + 5 * H, 5 * M, 24 * H)
    assert pick(startable=[spare, soon]).take == ("soon",)


def test_a_calendar_rule_s_period_is_the_gap_between_its_fire_times():
    assert period_of(None, "30 * * * *", "UTC", NOW) == H
    assert period_of(None, "Mon *-*-* 02:00", "Europe/Paris", NOW) == 7 * 24 * H
    assert period_of(6 * H, None, "UTC", NOW) == 6 * H
