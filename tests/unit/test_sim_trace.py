"""Recorded histories: the trace format refuses bad records by field, a trace world follows the
recorded births, changes and deaths, and the engine replays it through the same loop as a Poisson world."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ostinato.domain.errors import ValidationError
from ostinato.sim.engine import SimulationConfig, run_policy
from ostinato.sim.policies import policies_under_test
from ostinato.sim.trace import Change, build_trace, csv_decoder, parse_change, trace_lines
from ostinato.sim.trace_world import TraceWorld

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DAY = 86_400.0


def at(days: float) -> float:
    return T0.timestamp() + days * DAY


def tiny_trace():
    """a: born before the run, changes at 4 and 7, dies at 20 (after it); b: born at 5, dies at 9;
    c: one change (born and gone at once); d: born at 1, dies at 15; e: born after the run."""
    days = {"a": [-5, 4, 7, 20], "b": [5, 9], "c": [3], "d": [1, 15], "e": [13, 14]}
    return build_trace([Change(f"https://forge.example/{name}", "git", at(d)) for name, ds in days.items() for d in ds],
                       "tiny")


@pytest.mark.parametrize("record,field", [
    ({"visit_type": "git", "changed_at": "2024-01-01T00:00:00Z"}, "origin"),
    ({"origin": " ", "visit_type": "git", "changed_at": "2024-01-01T00:00:00Z"}, "origin"),
    ({"origin": "https://x", "changed_at": "2024-01-01T00:00:00Z"}, "visit_type"),
    ({"origin": "https://x", "visit_type": "git"}, "changed_at"),
    ({"origin": "https://x", "visit_type": "git", "changed_at": "2024-01-01T00:00:00"}, "changed_at"),
    ({"origin": "https://x", "visit_type": "git", "changed_at": 1700000000}, "changed_at"),
    ({"origin": "https://x", "visit_type": "git", "changed_at": "2024-01-01T00:00:00Z", "rate": 3}, "rate"),
    (["https://x", "git"], "record"),
])
def test_a_bad_record_names_its_field(record, field):
    with pytest.raises(ValidationError) as caught:
        parse_change(record)
    assert caught.value.field == field


def test_a_change_reads_as_utc_seconds_and_writes_back():
    change = parse_change({"origin": "https://x", "visit_type": "git", "changed_at": "2024-01-02T01:00:00+01:00"})
    assert change == Change("https://x", "git", at(1))
    (line,) = trace_lines([change])
    assert '"changed_at": "2024-01-02T00:00:00+00:00"' in line and line.endswith("\n")


def test_csv_rows_by_their_header_in_any_order():
    decode = csv_decoder(b"changed_at, origin,visit_type\n")
    record = decode(b'2024-01-02T00:00:00Z,"https://x/a,b",git', b"")
    assert parse_change(record) == Change("https://x/a,b", "git", at(1))
    with pytest.raises(ValidationError) as caught:
        decode(b"2024-01-02T00:00:00Z,https://x", b"")
    assert caught.value.field == "record"
    for header in (b"origin,visit_type\n", b"origin,visit_type,changed_at,origin\n", b"\xff\xfe,,\n"):
        with pytest.raises(ValidationError) as caught:
            csv_decoder(header)
        assert caught.value.field == "header"


def test_a_trace_sorts_each_origin_and_counts_an_instant_once():
    trace = build_trace([Change("b", "git", 5.0), Change("a", "git", 9.0), Change("a", "git", 1.0),
                         Change("a", "git", 9.0)], "t")
    assert trace.origins == ("a", "b") and trace.changes == 3
    assert trace.source.tolist() == [0, 0, 1] and trace.time.tolist() == [1.0, 9.0, 5.0]
    first, last, count = trace.bounds()
    assert first.tolist() == [1.0, 5.0] and last.tolist() == [9.0, 5.0] and count.tolist() == [2, 1]
    with pytest.raises(ValidationError) as caught:
        build_trace([Change("a", "git", 1.0), Change("b", "hg", 2.0)], "t")
    assert caught.value.field == "visit_type"
    with pytest.raises(ValidationError) as caught:
        build_trace([], "t")
    assert caught.value.field == "trace"


def test_a_trace_world_follows_births_changes_and_deaths():
    world = TraceWorld(tiny_trace(), start=at(0), horizon=12.0, deaths=True, share_last_update=0.0, seed=1)
    names = [world.trace.origins[i].rpartition("/")[2] for i in world.population.origins]
    assert names == ["a", "d", "b"]  # in birth order; c is born and gone at once, e after the run
    assert world.birth.tolist() == [0.0, 1.0, 5.0] and world.death.tolist() == [20.0, 15.0, 9.0]
    assert world.last_change.tolist() == [-5.0, 1.0, 5.0]  # a forge's last_update before anything runs
    assert world.born_by(0.0) == 1 and world.born_by(5.0) == 3
    # a's mean rate over the whole trace: 3 changes after its first in 25 days
    assert world.rates[0] == pytest.approx(3 / 25)
    changes = world.advance(0.0, 6.0)
    assert changes.sources.tolist() == [0] and changes.times.tolist() == [4.0]
    changes = world.advance(6.0, 12.0)  # b's change at 9 is its death, not a change
    assert changes.sources.tolist() == [0] and changes.times.tolist() == [7.0]
    assert world.last_change[0] == 7.0 and world.version.tolist() == [2, 0, 0]
    sources, times = world.recorded(0.0, 12.0)
    assert sorted(zip(sources.tolist(), times.tolist(), strict=True)) == [(0, 4.0), (0, 7.0), (1, 1.0), (2, 5.0), (2, 9.0)]
    alive = TraceWorld(tiny_trace(), start=at(0), horizon=12.0, deaths=False)
    assert alive.size == 4 and np.isinf(alive.death).all()  # c stays, quiet, from its one change


def test_a_start_that_leaves_nobody_alive_is_refused():
    with pytest.raises(ValidationError) as caught:
        TraceWorld(tiny_trace(), start=at(100), horizon=12.0)
    assert caught.value.field == "trace_start"


TRACE_CONFIG = SimulationConfig(trace=tiny_trace(), trace_start=T0, warmup=2, days=10, capacity=2.0,
                                step=timedelta(hours=6), max_gap=timedelta(days=10), seed=2)


def test_the_engine_replays_a_trace_with_its_deaths():
    config = TRACE_CONFIG.validated()
    assert config.sources == 3 and config.dead_share == 0.0
    run = run_policy(policies_under_test()["uniform"], config)
    # live source-days in the window [2, 12): a 10, d 10, b from its birth at 5 to its death at 9
    assert run.metrics.source_days == pytest.approx(24.0)
    assert run.metrics.not_found > 0  # b, visited after its death
    assert run.theory is None  # the Poisson closed forms do not hold on a recorded history
    store = run_policy(policies_under_test()["change_rate_optimal"], config)
    assert store.metrics.source_days == pytest.approx(24.0) and store.metrics.visits > 0


def test_without_a_start_the_run_ends_at_the_traces_last_change():
    config = replace(TRACE_CONFIG, trace_start=None).validated()
    assert config.trace_start == T0 + timedelta(days=20 - 12)


def test_replicas_are_shifted_copies_cut_at_the_common_end():
    from ostinato.sim.trace import REPLICA_SHIFT, replicate

    day = 86_400.0
    trace = build_trace([Change(f"https://forge.example/{o}", "git", t * day) for o in ("a", "b")
                         for t in (0.0, 100.0, 400.0, 800.0)], "two")
    copies = replicate(trace, 5, seed=3)
    assert copies.copies == 5 and copies.end <= trace.end and copies.label == "two"
    assert set(copies.origins) <= {f"https://forge.example/{o}#{c}" for o in "ab" for c in range(1, 6)}
    assert replicate(trace, 5, seed=3).time.tolist() == copies.time.tolist()
    assert replicate(trace, 5, seed=4).time.tolist() != copies.time.tolist()
    for index in range(len(copies.origins)):
        times = copies.time[copies.source == index]
        assert np.all(np.diff(times) > 0)
        shift = times[0] - 0.0  # every copy's first change is its original first one, shifted
        assert 0 <= shift < REPLICA_SHIFT and shift == int(shift)
        # the shifted times keep the recorded gaps, cut at the trace's end
        assert np.allclose(times - shift, np.array([0.0, 100.0, 400.0, 800.0])[: times.size] * day)
    with pytest.raises(ValueError):
        replicate(copies, 2, seed=0)
