"""The kinds of the origin metric cells, declared once: which cells a scheduling row counts in.

The stores keep the origin metrics (:mod:`ostinato.domain.origin_metrics`) as cells per (lister, visit
type, kind, cell): the number of origins one lister lists whose scheduling row (``origin_visit_stats``)
counts in that cell. Each :class:`MetricKind` here says, as data, what one kind is:

- its ``number``, the ``kind`` column of ``origin_metric_cell``, and its ``name``;
- ``feeds``: the :class:`~ostinato.domain.origin_metrics.OriginMetrics` field a pass reads it into;
- ``counts``: the predicate over a row's fields (:class:`CellRow`) that puts the row in the kind;
- how the row's cell is made: from no time (``at`` None: the one cell 0), from the time of the field
  ``at`` as it is (``unit`` None: the end of the cooldown), or from the ``unit`` at or after it (the hour,
  day or minute boundary at or after the time, the time itself when it is on one);
- ``horizon``: how the writer's horizon (:attr:`MetricClock.since
  <ostinato.domain.origin_metrics.MetricClock.since>` of the write) bears on it (:class:`Horizon`).

Only rows with ``listing_count = 1`` count (origins several listers list are counted apart, over their
listings, by every pass). :func:`cells_of` and :func:`declared_cells` are the rule in Python.

What stays with each dialect (store/postgresql and store/sqlite, schema_origins.sql; the rule is written
there once per dialect, ``origin_metric_cell_query`` and ``origin_metric_cell_of_row``, and held to these
declarations by tests/conformance/test_metric_kind_declarations.py):

- the encoding of a cell: PostgreSQL's are integers (microseconds since 1970 for the end of a cooldown;
  minutes, hours or days since 1970 for a time rounded up to them; 0), SQLite's are the times as ISO 8601
  text in UTC (and the integer 0);
- the horizon: only PostgreSQL's writes carry one (``ostinato.metrics_horizon``; the full recount's
  ``horizon``). With it, activity at or before the horizon is left out (no later pass counts it), and a
  ``last_update`` a :data:`~ostinato.domain.origin_metrics.DAY_LAGS_FROM` before it is counted by the day
  (:data:`PENDING_BY_DAY`) rather than by the hour (``origin_metric_pending_kind``). SQLite's triggers know
  no horizon: its rows count in every activity cell and in the hour cell of their pending changes, and its
  pass prunes what is over and reads lags in days from the hour cells. Its rule is these declarations
  without a horizon (:data:`PENDING_BY_DAY` then never counts);
- what a pass reads from the cells (the window of activity, in flight at ``now``, lags from the pending
  cells) and when it prunes them: the metric queries of store/origins;
- the grab's own count of what it puts in flight on PostgreSQL (its triggers then stand aside).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from enum import Enum

from .origin_metrics import DAY_LAGS_FROM, OriginMetrics

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MINUTE, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)


@dataclass(frozen=True, slots=True)
class CellRow:
    """The fields of a scheduling row (``origin_visit_stats``) the cells read."""

    lister_id: int
    visit_type: str
    listing_count: int
    enabled: bool
    last_update: datetime | None = None
    last_successful: datetime | None = None
    last_status_date: datetime | None = None
    last_scheduled: datetime | None = None
    cooldown_until: datetime | None = None
    last_eventful: datetime | None = None
    last_uneventful: datetime | None = None


class Horizon(Enum):
    """How the writer's horizon bears on a kind (on PostgreSQL: see the module's docstring)."""

    #: counted whatever the horizon
    NONE = "none"
    #: activity: left out when its time is at or before the horizon
    AFTER = "after"
    #: pending by the hour: left out when its time is a DAY_LAGS_FROM or more before the horizon
    WITHIN_DAY_LAGS = "within day lags"
    #: pending by the day: counted only when its time is a DAY_LAGS_FROM or more before the horizon
    BEYOND_DAY_LAGS = "beyond day lags"

    def keeps(self, at: datetime | None, horizon: datetime | None) -> bool:
        """Whether a row whose kind's time is ``at`` counts under ``horizon`` (None: no horizon)."""
        if self is Horizon.NONE or at is None:
            return self is not Horizon.BEYOND_DAY_LAGS
        if self is Horizon.AFTER:
            return horizon is None or at > horizon
        if self is Horizon.WITHIN_DAY_LAGS:
            return horizon is None or at > horizon - DAY_LAGS_FROM
        return horizon is not None and at <= horizon - DAY_LAGS_FROM


def _pending(r: CellRow) -> bool:
    """Changes listed and not yet archived: a last_update newer than the last successful visit."""
    return bool(r.enabled) and r.last_update is not None and (
        r.last_successful is None or r.last_update > r.last_successful)


def _in_flight(r: CellRow) -> bool:
    """Grabbed, its grab newer than its last status, under a cooldown."""
    return r.last_scheduled is not None and r.cooldown_until is not None and (
        r.last_status_date is None or r.last_scheduled > r.last_status_date)


@dataclass(frozen=True, slots=True)
class MetricKind:
    """One kind of metric cell (see the module's docstring)."""

    number: int
    name: str
    #: the OriginMetrics field a pass reads this kind into
    feeds: str
    #: whether a row (listed by one lister) counts in this kind
    counts: Callable[[CellRow], bool]
    #: the CellRow field the cell is made from; None: the one cell 0
    at: str | None = None
    #: the cell: the boundary of this unit at or after the time (None: the time itself)
    unit: timedelta | None = None
    horizon: Horizon = Horizon.NONE

    def time_of(self, row: CellRow) -> datetime | None:
        """The time this kind reads from ``row`` (None for a kind with the one cell 0)."""
        return None if self.at is None else getattr(row, self.at)

    def cell_of(self, row: CellRow) -> datetime | int:
        """The cell ``row`` counts in, as a time (0 for a kind without one); for a row this kind counts."""
        at = self.time_of(row)
        if at is None:
            return 0
        if self.unit is None:
            return at
        return _EPOCH + -((_EPOCH - at) // self.unit) * self.unit


KNOWN = MetricKind(1, "known", "origins_known", lambda r: True)
ENABLED = MetricKind(2, "enabled", "origins_enabled", lambda r: bool(r.enabled))
NEVER_VISITED = MetricKind(3, "never visited", "origins_never_visited",
                           lambda r: bool(r.enabled) and r.last_successful is None and r.last_status_date is None)
NEVER_SUCCESSFUL = MetricKind(4, "never successful", "origins_never_successful",
                              lambda r: bool(r.enabled) and r.last_successful is None
                              and r.last_status_date is not None)
PENDING = MetricKind(5, "pending changes", "origins_with_pending_changes", _pending, "last_update", HOUR,
                     Horizon.WITHIN_DAY_LAGS)
IN_FLIGHT = MetricKind(6, "in flight", "visits_in_flight", _in_flight, "cooldown_until", None, Horizon.AFTER)
VISITED = MetricKind(7, "visited", "visits_last_hour", lambda r: r.last_status_date is not None,
                     "last_status_date", MINUTE, Horizon.AFTER)
EVENTFUL = MetricKind(8, "eventful", "eventful_visits_last_hour", lambda r: r.last_eventful is not None,
                      "last_eventful", MINUTE, Horizon.AFTER)
UNEVENTFUL = MetricKind(9, "uneventful", "uneventful_visits_last_hour", lambda r: r.last_uneventful is not None,
                        "last_uneventful", MINUTE, Horizon.AFTER)
#: PostgreSQL only: pending changes whose lag every later pass counts in days (see the module's docstring)
PENDING_BY_DAY = MetricKind(10, "pending changes by the day", "origins_with_pending_changes", _pending,
                            "last_update", DAY, Horizon.BEYOND_DAY_LAGS)

#: every kind, by number
METRIC_KINDS: tuple[MetricKind, ...] = (KNOWN, ENABLED, NEVER_VISITED, NEVER_SUCCESSFUL, PENDING, IN_FLIGHT,
                                        VISITED, EVENTFUL, UNEVENTFUL, PENDING_BY_DAY)
BY_NUMBER = {kind.number: kind for kind in METRIC_KINDS}

_FIELDS = {f.name for f in fields(OriginMetrics)}
assert len(BY_NUMBER) == len(METRIC_KINDS), "metric kinds of the same number"
assert all(kind.feeds in _FIELDS for kind in METRIC_KINDS), "a metric kind feeds no OriginMetrics field"


def cells_of(row: CellRow, horizon: datetime | None = None) -> list[tuple[MetricKind, datetime | int]]:
    """The cells ``row`` counts in, under the writer's ``horizon`` (None: none, as SQLite's writes)."""
    if row.listing_count != 1:
        return []
    return [(kind, kind.cell_of(row)) for kind in METRIC_KINDS
            if kind.counts(row) and kind.horizon.keeps(kind.time_of(row), horizon)]


def declared_cells(rows: Iterable[CellRow], horizon: datetime | None = None
                   ) -> Counter[tuple[int, str, int, datetime | int]]:
    """(lister, visit type, kind number, cell) → origins, over ``rows``: what the stores' cells hold."""
    cells: Counter[tuple[int, str, int, datetime | int]] = Counter()
    for row in rows:
        for kind, cell in cells_of(row, horizon):
            cells[row.lister_id, row.visit_type, kind.number, cell] += 1
    return cells
