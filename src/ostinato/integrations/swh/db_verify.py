"""After an import, every row of the swh-scheduler source compared with what the store holds
(``ostinato import swh-scheduler --verify``; see docs/reference/swh-import.md).

Each source row is mapped as the import maps it (``db_mapping``) and compared, field by field,
with the store's record of the same identity, read through the store's own verbs: tasks by id,
runs by id, listers by name and instance, listings walked in the store's order and looked up in
the source by (url, visit type), visit stats by (url, visit type), metrics by (lister, visit
type). A cooldown over by ``now`` counts as none on both sides. The answer counts the rows
compared and keeps the first differences, each naming the row and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from datetime import datetime
from typing import Any

from ...domain.origins import StoredListedOrigin
from ...store.interface import OriginStore, Store, TaskStore
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

#: differences kept in full (all are counted)
KEPT = 20
_PAGE = 10_000


@dataclass
class Verification:
    compared: dict[str, int] = field(default_factory=dict)
    differences: int = 0
    first: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.differences == 0

    def differ(self, where: str, what: str) -> None:
        self.differences += 1
        if len(self.first) < KEPT:
            self.first.append(f"{where}: {what}")

    def compare(self, table: str, where: str, expected: Any, got: Any, *, same: Callable[[str, Any, Any], bool] | None = None,
                again: bool = False) -> None:
        """One row: ``expected`` (the source, mapped) against ``got`` (the store's), field by field (``again``:
        another view of a row already counted)."""
        if not again:
            self.compared[table] = self.compared.get(table, 0) + 1
        if got is None:
            self.differ(where, "missing from the store")
            return
        for name, want, have in _fields(expected, got):
            if not (same(name, want, have) if same else want == have):
                self.differ(where, f"{name}: source {want!r}, store {have!r}")


def _fields(expected: Any, got: Any) -> Iterable[tuple[str, Any, Any]]:
    if is_dataclass(expected):
        for f in fields(expected):
            yield from _fields_of(f.name, getattr(expected, f.name), getattr(got, f.name))
    else:
        yield "value", expected, got


def _fields_of(name: str, want: Any, have: Any) -> Iterable[tuple[str, Any, Any]]:
    if is_dataclass(want) and is_dataclass(have):
        for f in fields(want):
            yield f"{name}.{f.name}", getattr(want, f.name), getattr(have, f.name)
    else:
        yield name, want, have


def _free_alike(now: datetime) -> Callable[[str, Any, Any], bool]:
    """Equality, where a cooldown over by ``now`` and none are alike."""
    def same(name: str, want: Any, have: Any) -> bool:
        if name == "cooldown_until":
            want = want if want is not None and want > now else None
            have = have if have is not None and have > now else None
        return want == have
    return same


def verify_import(source: SwhSchedulerSource, store: Store, *, now: datetime, cooldowns: Cooldowns,
                  with_runs: bool = False, batch_size: int = _PAGE) -> Verification:
    """Compare every row of ``source`` with ``store`` (see the module's documentation): its tasks
    role, then its origins role."""
    check = Verification()
    _verify_tasks(check, source, store, with_runs=with_runs, batch_size=batch_size)
    _verify_origins(check, source, store, now=now, cooldowns=cooldowns, batch_size=batch_size)
    return check


def _verify_tasks(check: Verification, source: SwhSchedulerSource, tasks: TaskStore, *, with_runs: bool,
                  batch_size: int) -> None:
    """Task types, tasks and (when asked) task runs."""
    for row in source.all("task_type"):
        check.compare("task_type", f"task type {row[0]}", task_type_of(row), tasks.get_task_type(row[0]))
    for rows in source.batches("task", batch_size):
        stored = {t.id: t for t in tasks.get_tasks([row[0] for row in rows])}
        for row in rows:
            check.compare("task", f"task {row[0]}", task_of(row), stored.get(row[0]))
    if with_runs:
        for rows in source.batches("task_run", batch_size):
            runs = {r.id: r for r in tasks.list_task_runs(after_id=rows[0][0] - 1, limit=len(rows))}
            for row in rows:
                check.compare("task_run", f"task run {row[0]}", task_run_of(row), runs.get(row[0]))


def _verify_origins(check: Verification, source: SwhSchedulerSource, origins: Store, *, now: datetime,
                    cooldowns: Cooldowns, batch_size: int) -> None:
    """Listers, listings, visit stats and metrics."""
    lister_rows = source.all("listers")
    listers = {(l.name, l.instance_name): l for l in origins.list_listers()}
    lister_ids: dict[Any, int] = {}
    for row in lister_rows:
        stored_lister = listers.get((row[1], row[2]))
        expected = lister_of(row)
        if stored_lister is not None:
            lister_ids[row[0]] = stored_lister.id
            expected = replace(expected, id=stored_lister.id)
        check.compare("listers", f"lister {row[1]}/{row[2]}", expected, stored_lister)
    _verify_listings(check, source, origins, lister_ids, batch_size)
    queues = Queues(dict(source.all("queue_positions")), {vt: at for vt, at in source.all("queue_anchors") if at})
    same = _free_alike(now)
    for rows in source.batches("origin_visit_stats", batch_size):
        keys = [(r[0], r[1]) for r in rows]
        # the newest last_update is what the listings say (checked with them), not a field of the source's stats
        stored_stats = {(s.url, s.visit_type): replace(s, last_update=None) for s in origins.get_visit_stats(keys)}
        theirs = {(s.url, s.visit_type): s for s in origins.get_protocol_visit_stats(keys)}  # as the face answers
        for row in rows:
            check.compare("origin_visit_stats", f"visit stats {row[0]} ({row[1]})", visit_stats_of(row, queues, cooldowns),
                          stored_stats.get((row[0], row[1])), same=same)
            check.compare("origin_visit_stats", f"the protocol's visit stats {row[0]} ({row[1]})", protocol_stats_of(row),
                          theirs.get((row[0], row[1])), again=True)
    metrics = {(m.lister_id, m.visit_type): m for m in origins.get_origin_metrics()}
    for row in source.all("scheduler_metrics"):
        expected_metrics = metrics_of(row, lister_ids) if row[0] in lister_ids else None
        stored_metrics = (metrics.get((expected_metrics.lister_id, expected_metrics.visit_type))
                          if expected_metrics else None)
        if stored_metrics is not None:  # the store names the lister in its answer: not a field of the source
            stored_metrics = replace(stored_metrics, lister_name=None, lister_instance_name=None)
        check.compare("scheduler_metrics", f"metrics of lister {row[0]}, {row[1]}", expected_metrics, stored_metrics)


def _verify_listings(check: Verification, source: SwhSchedulerSource, origins: OriginStore, lister_ids: Mapping[Any, int],
                     batch_size: int) -> None:
    """Every listing the store holds, page by page, against the source's rows of the same origins; then
    the count: as many as the source has (so none is missing)."""
    uuid_of = {ours: uuid for uuid, ours in lister_ids.items()}
    after = None
    seen = 0
    while True:
        page = origins.get_listed_origins(after=after, limit=batch_size)
        if not page:
            break
        after = (page[-1].origin.url, page[-1].origin.visit_type, page[-1].lister_id)
        keys = sorted({(p.origin.url, p.origin.visit_type) for p in page})
        rows = source.lookup("listed_origins_at", {"urls": [k[0] for k in keys], "visit_types": [k[1] for k in keys]})
        expected: dict[tuple, StoredListedOrigin] = {}
        for row in rows:
            if row[0] in lister_ids:
                listed = listed_origin_of(row, lister_ids)
                expected[(listed.lister_id, listed.origin.url, listed.origin.visit_type)] = listed
        for got in page:
            key = (got.lister_id, got.origin.url, got.origin.visit_type)
            want = expected.get(key)
            where = f"listing {got.origin.url} ({got.origin.visit_type}, lister {uuid_of.get(got.lister_id, got.lister_id)})"
            if want is None:
                check.differ(where, "in the store, not in the source")
                continue
            seen += 1
            check.compare("listed_origins", where, want, got)
    total = source.count("listed_origins")
    if seen != total:
        check.differ("listed_origins", f"{total} in the source, {seen} of them in the store")
