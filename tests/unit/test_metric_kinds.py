"""The origin metric kinds' declarations (``domain.metric_kinds``) on their own: numbers, the metrics they feed,
the cells they make and the horizon's edges. Their agreement with each store's SQL is
tests/conformance/test_metric_kind_declarations.py's."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

from ostinato.domain.metric_kinds import (
    BY_NUMBER,
    IN_FLIGHT,
    KNOWN,
    METRIC_KINDS,
    NEVER_SUCCESSFUL,
    PENDING,
    PENDING_BY_DAY,
    VISITED,
    CellRow,
    Horizon,
    cells_of,
)
from ostinato.domain.origin_metrics import DAY_LAGS_FROM, OriginMetrics

T = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
TICK = timedelta(microseconds=1)


def test_each_kind_has_its_own_number_and_feeds_a_metric():
    assert sorted(BY_NUMBER) == list(range(1, 11))
    metrics = {f.name for f in fields(OriginMetrics)}
    assert all(kind.feeds in metrics for kind in METRIC_KINDS)


def test_cells_round_up_to_their_unit_and_keep_a_time_on_it():
    row = CellRow(1, "git", 1, True, last_update=T + TICK, last_status_date=T)
    assert PENDING.cell_of(row) == T + timedelta(hours=1)
    assert VISITED.cell_of(row) == T
    assert KNOWN.cell_of(row) == 0


def test_only_origins_one_lister_lists_count():
    assert cells_of(CellRow(1, "git", 2, True)) == []
    assert [kind for kind, _ in cells_of(CellRow(1, "git", 1, False))] == [KNOWN]


def test_the_horizon_leaves_out_activity_at_or_before_it_and_counts_old_lags_by_the_day():
    row = CellRow(1, "git", 1, True, last_update=T - DAY_LAGS_FROM, last_status_date=T, last_scheduled=T + TICK,
                  cooldown_until=T + timedelta(hours=1))
    kinds = {kind for kind, _ in cells_of(row)}
    assert {PENDING, VISITED, IN_FLIGHT, NEVER_SUCCESSFUL} <= kinds and PENDING_BY_DAY not in kinds
    at_horizon = {kind for kind, _ in cells_of(row, horizon=T)}
    assert VISITED not in at_horizon and PENDING not in at_horizon
    assert {PENDING_BY_DAY, IN_FLIGHT} <= at_horizon
    assert VISITED in {kind for kind, _ in cells_of(row, horizon=T - TICK)}
    assert not Horizon.BEYOND_DAY_LAGS.keeps(T, None)
