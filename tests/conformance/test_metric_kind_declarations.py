"""The origin metric cells a store keeps are the cells the kinds declared in ``domain.metric_kinds`` make of
its scheduling rows, on every store: each dialect writes the rule once in SQL (PostgreSQL's
``origin_metric_cell_query``, SQLite's view ``origin_metric_cell_of_row``), and this holds both to the one
declaration.

A seeded random history (listings by several listers, some origins listed by more than one, with and
without last_update, enabled or not; visit statuses of every outcome, recent and old, with the wall clock
and without; grabs that put origins in flight, dry runs, hand-backs; the swh protocol's stats upserts and
grabs; times to the microsecond, some on a minute or an hour) fills the store; every few steps, after
times on the edges of the pass's horizon (a last_update a DAY_LAGS_FROM before it, a visit at it):

- the full recount at ``now`` (the writer's horizon the pass's, on PostgreSQL) leaves the cells the
  declarations make of the rows under that horizon (SQLite's: under none);
- on PostgreSQL, the recount without a horizon (rolled back) leaves the cells the declarations make
  without one;
- the cells the writes kept since the last recount: on SQLite, whose writes know no horizon, every cell; on
  PostgreSQL, the cells of the kinds no horizon bears on (the others depend on each write's horizon).

The cells are read from the store's database (the remote client's: the server's); their encoding is the
dialect's (PostgreSQL: integers, SQLite: ISO 8601 text), read back into times here.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from helpers import database
from origin_history import OUTCOMES, SNAPSHOTS, TYPES, URLS, OriginHistory

from ostinato.domain.metric_kinds import METRIC_KINDS, CellRow, Horizon, declared_cells
from ostinato.domain.origin_metrics import DAY_LAGS_FROM, MetricClock
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.remote import RemoteStore

TIMES = ("last_update", "last_successful", "last_status_date", "last_scheduled", "cooldown_until",
         "last_eventful", "last_uneventful")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: PostgreSQL's cells by kind: the unit the integer counts since 1970 (see origin_metric_cell in its schema);
#: the other kinds have the one cell 0
PG_CELL_UNITS = {5: timedelta(hours=1), 10: timedelta(days=1), 6: timedelta(microseconds=1),
                 7: timedelta(minutes=1), 8: timedelta(minutes=1), 9: timedelta(minutes=1)}
Cells = Counter[tuple[int, str, int, datetime | int]]


class History(OriginHistory):
    """One random history on a store, step by step."""

    LISTING_SPAN = timedelta(days=12)
    OLD_STATUS_SPAN = OLD_PROTOCOL_SPAN = timedelta(days=10)
    DRAW_TOUCH_LAST_SEEN = DRAW_REQUESTS = False
    DRY_RUN_SHARE = 0.2

    def moment(self, span: timedelta) -> timedelta:
        """A random duration up to ``span``: to the microsecond, or (a few) a whole number of minutes or hours."""
        moment = super().moment(span)
        unit = self.rng.choice((None, None, None, timedelta(minutes=1), timedelta(hours=1)))
        return moment if unit is None else moment // unit * unit

    def edges(self) -> None:
        """Times on the edges of the horizon of a pass at ``now``: last_updates at, just before and just
        after a DAY_LAGS_FROM before it, visits at it and just after."""
        horizon, tick = MetricClock(self.now).since, timedelta(microseconds=1)
        edge = horizon - DAY_LAGS_FROM
        self.store.record_listed_origins(self.listers[0].id, [
            ListedOrigin(self.rng.choice(URLS), visit_type, last_update=edge + offset)
            for visit_type, offset in zip(TYPES, self.rng.sample((-tick, 0 * tick, tick), 2), strict=False)],
            self.now)
        batch = []
        for offset in (0 * tick, tick):
            self.visits += 1
            url, visit_type = self.key()
            outcome = self.rng.choice(OUTCOMES)
            snapshot = self.rng.choice(SNAPSHOTS) if outcome in (JournalStatus.FULL, JournalStatus.PARTIAL) else None
            batch.append(VisitStatus(url, self.visits, visit_type, outcome, horizon + offset, snapshot))
        self.store.record_visit_statuses(batch, FeedbackPolicy(), now=self.now)

    def step(self) -> None:
        self.rng.choice((self.listing, self.listing, self.statuses, self.statuses, self.grab, self.grab,
                         self.release, self.protocol_stats, self.protocol_grab))()
        self.now += self.moment(timedelta(minutes=40))


def rows_of(db) -> list[CellRow]:
    """Every scheduling row, the fields the cells read."""
    rows = db.read(f"SELECT lister_id, visit_type, listing_count, enabled, {', '.join(TIMES)} FROM origin_visit_stats")
    return [CellRow(r["lister_id"], r["visit_type"], r["listing_count"], bool(r["enabled"]),
                    *(db.read_time(r[name]) for name in TIMES)) for r in rows]


def cells_in(db, conn=None) -> Cells:
    """The store's cells that count an origin, each read back into a time (0 for the kinds without one)."""
    sql = "SELECT lister_id, visit_type, kind, cell, origins FROM origin_metric_cell WHERE origins <> 0"
    found = db.read(sql) if conn is None else conn.execute(sql).fetchall()
    cells: Cells = Counter()
    for r in found:
        cell = r["cell"]
        if db.name == "postgresql":
            unit = PG_CELL_UNITS.get(r["kind"])
            at = cell if unit is None else EPOCH + cell * unit
        else:
            at = cell if isinstance(cell, int) else db.read_time(cell)
        cells[r["lister_id"], r["visit_type"], r["kind"], at] += r["origins"]
    return cells


def differences(got: Cells, declared: Cells) -> list[str]:
    keys = sorted(set(got) | set(declared), key=repr)
    return [f"{key}: {got[key]} kept, {declared[key]} declared" for key in keys if got[key] != declared[key]]


def check(history: History, db) -> set[int]:
    """The checks of the module's docstring; the kinds the recounts counted in."""
    pg = db.name == "postgresql"
    rows = rows_of(db)
    # the cells the writes kept since the last recount
    kept, declared = cells_in(db), declared_cells(rows)
    if pg:
        free = {kind.number for kind in METRIC_KINDS if kind.horizon is Horizon.NONE}
        kept = Counter({key: n for key, n in kept.items() if key[2] in free})
        declared = Counter({key: n for key, n in declared.items() if key[2] in free})
    assert not differences(kept, declared), f"kept at {history.now}: {differences(kept, declared)[:5]}"
    # the full recount at now, under the pass's horizon on PostgreSQL
    history.store.update_origin_metrics(history.now, recount=True)
    horizon = MetricClock(history.now).since if pg else None
    recounted, declared = cells_in(db), declared_cells(rows, horizon)
    assert recounted == declared, f"recounted at {history.now}: {differences(recounted, declared)[:5]}"
    kinds = {key[2] for key in recounted}
    if pg:  # the recount without a horizon, rolled back
        with db.write(rollback=True) as conn:
            conn.execute("DELETE FROM origin_metric_cell")
            conn.execute("SELECT origin_metric_cells_recount(NULL)")
            unbounded = cells_in(db, conn)
        declared = declared_cells(rows)
        assert unbounded == declared, f"without a horizon at {history.now}: {differences(unbounded, declared)[:5]}"
        kinds |= {key[2] for key in unbounded}
    return kinds


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_cells_are_the_declared_kinds_of_the_rows(store, seed, request):
    db = request.getfixturevalue("sqlite_store").db if isinstance(store, RemoteStore) else database(store)
    history, kinds = History(store, seed), set()
    for number in range(100):
        history.step()
        if number % 10 == 9:
            history.edges()
            kinds |= check(history, db)
    pg = db.name == "postgresql"
    assert {1, 2, 3, 5, 6, 7, 8, 9, *((10,) if pg else ())} <= kinds, f"kinds the history left out: {sorted(kinds)}"
