"""Lookahead never starts more runs than this scheduler has free slots: not on a slot whose run in flight
overran its expected end, nor twice on one slot for runs expected to last no time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ostinato.domain.lookahead import Candidate, Lookahead, NodeLoad, PickRule, choose

NOW = datetime(2026, 1, 1, tzinfo=UTC)
H, M = timedelta(hours=1), timedelta(minutes=1)


def test_an_overrunning_run_does_not_free_its_slot_and_zero_length_runs_take_one_slot_each():
    startable = [Candidate(f"s{i}", NOW - H, NOW + i * M, timedelta(0), H) for i in range(5)]
    # this scheduler: 2 slots, one busy with a run expected to have ended a minute ago
    me = NodeLoad("n1", "a", 2, (NOW - M,), NOW)
    choice = choose(node="n1", instance="a", room=1, startable=startable, upcoming=[], nodes=[me], holds=[],
                    now=NOW, rule=PickRule(lookahead=Lookahead()))
    assert choice.take == ("s0",)
