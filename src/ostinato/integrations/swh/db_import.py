"""Copy a live swh-scheduler 3.6 database into an Ostinato store (see docs/reference/swh-import.md).

:func:`import_swh_scheduler` reads the source through :class:`~.db_source.SwhSchedulerSource`
(one read-only snapshot, server-side cursors, batches) and writes through the store's
``import_*`` verbs, table after table: task types, tasks, task runs (when asked), listers,
listed origins, visit stats, scheduler metrics. Each batch is one transaction of the target
that writes only what differs, keyed by the source's own identities (task and run ids, a
lister's name and instance, an origin's url and visit type), so an import stopped at any point
can be run again: it goes on where the target differs, and a run over an unchanged source
changes nothing (every table reports 0 changed).

A source row Ostinato cannot hold stops the import with a :class:`ValidationError` naming the
table, the row's key and the field; the batches before it stay written.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...domain.errors import ValidationError
from ...store.interface import Store
from .db_mapping import (
    Cooldowns,
    Queues,
    listed_origin_of,
    lister_of,
    metrics_of,
    protocol_stats_of,
    task_of,
    task_run_of,
    task_type_of,
    visit_stats_of,
)
from .db_source import SwhSchedulerSource

#: the roles an import writes with: its own verbs (ImportStore), and the swh protocol's stats as they are
#: (CompatStore); every Store has both (a class deriving from the two would fit no Store)
ImportAndCompat = Store


#: rows read and written per batch (one transaction of the target each)
DEFAULT_BATCH = 10_000
#: the source's tables, in the order they are imported
TABLES = ("task_type", "task", "task_run", "listers", "listed_origins", "origin_visit_stats", "scheduler_metrics")

#: ``progress(table, total)`` is called as a table starts and returns what to call with each batch's row count
Progress = Callable[[str, int], Callable[[int], None]]


@dataclass
class TableReport:
    """What the import did with one table of the source."""

    table: str
    read: int = 0
    changed: int = 0
    seconds: float = 0.0
    skipped: bool = False

    @property
    def rate(self) -> float | None:
        """Rows read and written per second."""
        return self.read / self.seconds if self.seconds > 0 else None


@dataclass
class ImportReport:
    source: str
    source_version: int
    tables: list[TableReport] = field(default_factory=list)

    @property
    def read(self) -> int:
        return sum(t.read for t in self.tables)

    @property
    def changed(self) -> int:
        return sum(t.changed for t in self.tables)

    @property
    def seconds(self) -> float:
        return sum(t.seconds for t in self.tables)


def _no_progress(table: str, total: int) -> Callable[[int], None]:
    return lambda n: None


_AT_INDEX = re.compile(r"(origin|visit stats|lister|metrics) (\d+)")


def _relocated(exc: ValidationError, table: str, rows: Sequence[tuple], key: Callable[[tuple], str]) -> ValidationError:
    """The store's error about record N of a batch, located at the source row's key instead."""
    match = _AT_INDEX.fullmatch(exc.record or "")
    if match and int(match.group(2)) < len(rows):
        return exc.at(f"{table} {key(rows[int(match.group(2))])}")
    return exc.at(f"{table}, {exc.record}" if exc.record else table)


class _Copy:
    """One import run: the source, the target, the options and the report being filled."""

    def __init__(self, source: SwhSchedulerSource, store: ImportAndCompat, *, now: datetime, cooldowns: Cooldowns,
                 batch_size: int, progress: Progress):
        self.source, self.store, self.now, self.cooldowns = source, store, now, cooldowns
        self.batch_size, self.progress = batch_size, progress
        self.report = ImportReport(source.shown, source.version)
        self.lister_ids: dict[Any, int] = {}

    def table(self, table: str, batches: Iterable[list[tuple]], convert: Callable[[tuple], Any],
              write: Callable[[list[Any]], int], key: Callable[[tuple], str]) -> TableReport:
        """Copy one table: each batch converted (an error names the row) and written."""
        entry = TableReport(table)
        self.report.tables.append(entry)
        advance = self.progress(table, self.source.count(table))
        start = time.perf_counter()
        for rows in batches:
            records = []
            for row in rows:
                try:
                    records.append(convert(row))
                except ValidationError as exc:
                    raise exc.at(f"{table} {key(row)}") from None
            try:
                entry.changed += write(records)
            except ValidationError as exc:
                raise _relocated(exc, table, rows, key) from None
            entry.read += len(rows)
            entry.seconds = time.perf_counter() - start
            advance(len(rows))
        entry.seconds = time.perf_counter() - start
        return entry

    def skip(self, table: str) -> None:
        self.report.tables.append(TableReport(table, skipped=True))

    def batches(self, name: str) -> Iterable[list[tuple]]:
        return self.source.batches(name, self.batch_size)

    def all(self, name: str) -> Iterable[list[tuple]]:
        rows = self.source.all(name)
        return [rows] if rows else []

    def run(self, with_runs: bool) -> ImportReport:
        store = self.store
        self.table("task_type", self.all("task_type"), task_type_of, store.import_task_types, lambda r: str(r[0]))
        self.table("task", self.batches("task"), task_of, store.import_tasks, lambda r: str(r[0]))
        if with_runs:
            self.table("task_run", self.batches("task_run"), task_run_of, store.import_task_runs, lambda r: str(r[0]))
        else:
            self.skip("task_run")
        lister_rows = self.source.all("listers")  # one batch: the stored listers come back in its order

        def write_listers(listers: list[Any]) -> int:
            stored, changed = store.import_listers(listers)
            self.lister_ids.update(zip((row[0] for row in lister_rows), (lister.id for lister in stored), strict=True))
            return changed

        self.table("listers", [lister_rows] if lister_rows else [], lister_of, write_listers, lambda r: f"{r[1]}/{r[2]}")
        self.table("listed_origins", self.batches("listed_origins"), lambda r: listed_origin_of(r, self.lister_ids),
                   store.import_listed_origins, lambda r: f"{r[1]} ({r[2]}, lister {r[0]})")
        queues = Queues(dict(self.source.all("queue_positions")),
                        {vt: at for vt, at in self.source.all("queue_anchors") if at is not None})
        def write_stats(pairs: list[tuple[Any, Any]]) -> int:
            changed = store.import_visit_stats([ours for ours, _ in pairs], self.now)
            # and the protocol's own fields as they are, which its face answers (Store.merge_visit_stats)
            store.merge_visit_stats([theirs for _, theirs in pairs])
            return changed

        self.table("origin_visit_stats", self.batches("origin_visit_stats"),
                   lambda r: (visit_stats_of(r, queues, self.cooldowns), protocol_stats_of(r)), write_stats,
                   lambda r: f"{r[0]} ({r[1]})")
        self.table("scheduler_metrics", self.all("scheduler_metrics"), lambda r: metrics_of(r, self.lister_ids),
                   store.import_origin_metrics, lambda r: f"lister {r[0]}, {r[1]}")
        return self.report


def import_swh_scheduler(source: SwhSchedulerSource, store: ImportAndCompat, *, now: datetime, cooldowns: Cooldowns,
                         with_runs: bool = False, batch_size: int = DEFAULT_BATCH,
                         progress: Progress | None = None) -> ImportReport:
    """Copy ``source`` into ``store`` (see the module's documentation); ``now`` (the wall clock) only
    lets a cooldown already over be stored as none."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError("batch_size", "a whole number of at least 1", batch_size)
    copy = _Copy(source, store, now=now, cooldowns=cooldowns, batch_size=batch_size,
                 progress=progress or _no_progress)
    return copy.run(with_runs)


__all__ = ["DEFAULT_BATCH", "ImportReport", "Progress", "TABLES", "TableReport", "import_swh_scheduler"]
