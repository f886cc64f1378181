"""The import verbs (``Store.import_*``): records written as given, idempotent, on both SQL stores.

The remote store keeps them off the wire (an import runs where the database is), so these
tests name their stores: SQLite and PostgreSQL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import T0
from helpers import GIT, HG

from ostinato.domain.errors import ConflictError, NotFoundError, ValidationError
from ostinato.domain.origin_metrics import OriginMetrics
from ostinato.domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ostinato.domain.tasks import (
    NewTask,
    Task,
    TaskArguments,
    TaskPolicy,
    TaskPriority,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
)
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import VisitOutcome, VisitStats
from ostinato.store import imports
from ostinato.store.queries import load_queries

pytestmark = pytest.mark.parametrize("store", ["sqlite", "postgresql", "read-routing"], indirect=True)
DAY = timedelta(days=1)


def task(id_: int, **kw) -> Task:
    fields = dict(id=id_, type="load-git", arguments=TaskArguments((f"https://forge.example/{id_}",), {"n": id_}),
                  next_run=T0 + timedelta(minutes=id_), current_interval=DAY, policy=TaskPolicy.RECURRING,
                  status=TaskStatus.NEXT_RUN_NOT_SCHEDULED, retries_left=2, priority=None)
    return Task(**{**fields, **kw})


def run(id_: int, task_id: int, **kw) -> TaskRun:
    fields = dict(id=id_, task=task_id, backend_id=f"celery-{id_}", scheduled=T0, started=T0 + timedelta(seconds=5),
                  ended=T0 + timedelta(seconds=9), metadata={"took": 4}, status=TaskRunStatus.EVENTFUL)
    return TaskRun(**{**fields, **kw})


def listing(lister_id: int, i: int, **kw) -> StoredListedOrigin:
    first_seen = kw.pop("first_seen", T0 - 30 * DAY)
    last_seen = kw.pop("last_seen", T0 - DAY)
    return StoredListedOrigin(lister_id, ListedOrigin(f"https://forge.example/{i}", "git", **kw), first_seen, last_seen)


def test_task_types_are_written_as_given_and_again_changes_nothing(store):
    assert store.import_task_types([GIT, HG]) == 2
    assert store.list_task_types() == [GIT, HG]
    assert store.import_task_types([GIT, HG]) == 0
    slower = replace(GIT, default_interval=2 * DAY, max_queue_length=10)
    assert store.import_task_types([slower, HG]) == 1
    assert store.get_task_type("load-git") == slower
    with pytest.raises(ValidationError, match="task type load-bad: backoff_factor"):
        store.import_task_types([replace(HG, type="load-other"), replace(GIT, type="load-bad", backoff_factor=0.0)])
    assert [t.type for t in store.list_task_types()] == ["load-git", "load-hg"]  # nothing of the batch


def test_tasks_keep_their_ids_and_states(store):
    store.import_task_types([GIT, HG])
    tasks = [task(7), task(9, status=TaskStatus.DISABLED, retries_left=0),
             task(12, policy=TaskPolicy.ONESHOT, current_interval=None, status=TaskStatus.COMPLETED,
                  priority=TaskPriority.HIGH),
             task(40, type="load-hg", status=TaskStatus.NEXT_RUN_SCHEDULED, arguments=TaskArguments((), {"u": [1, 2]}))]
    assert store.import_tasks(tasks) == 4
    assert store.get_tasks([7, 9, 12, 40]) == tasks
    assert store.import_tasks(tasks) == 0
    assert store.import_tasks([replace(tasks[0], status=TaskStatus.DISABLED), tasks[1]]) == 1
    assert store.get_tasks([7])[0].status is TaskStatus.DISABLED
    # created tasks come after every id imported
    [created] = store.create_tasks([NewTask("load-git", T0, TaskArguments(("https://forge.example/new",)))])
    assert created.id > 40


def test_a_task_id_that_holds_another_task_is_a_conflict_and_nothing_is_written(store):
    store.import_task_types([GIT, HG])
    store.import_tasks([task(3)])
    with pytest.raises(ConflictError, match="task 3 is already another task"):
        store.import_tasks([task(2), task(3, arguments=TaskArguments(("https://elsewhere.example/",)))])
    assert store.get_tasks([2]) == []
    with pytest.raises(ValidationError, match="task 5: type: expected a known task type"):
        store.import_tasks([task(5, type="load-svn")])
    with pytest.raises(ValidationError, match="task 6: current_interval"):
        store.import_tasks([task(6, current_interval=None)])  # a recurring task needs one


def test_task_runs_keep_their_ids(store):
    store.import_task_types([GIT])
    store.import_tasks([task(1), task(2, status=TaskStatus.NEXT_RUN_SCHEDULED)])
    runs = [run(10, 1), run(11, 1, status=TaskRunStatus.FAILED, metadata={}),
            run(25, 2, status=TaskRunStatus.SCHEDULED, started=None, ended=None, backend_id=None)]
    assert store.import_task_runs(runs) == 3
    assert store.list_task_runs() == runs
    assert store.import_task_runs(runs) == 0
    assert store.import_task_runs([replace(runs[2], status=TaskRunStatus.STARTED, started=T0)]) == 1
    with pytest.raises(ConflictError, match="task run 10 is already a run of another task"):
        store.import_task_runs([run(10, 2)])
    # a run grabbed afterwards comes after every id imported
    store.import_tasks([task(3, next_run=T0 - DAY)])
    [grabbed] = store.grab_ready_tasks("load-git", T0, 10)
    assert grabbed.run.id > 25


def test_listers_are_keyed_by_name_and_instance(store):
    given = [Lister(0, "gitlab", "gitlab.com", {"page": 3}, T0 - DAY, T0),
             Lister(0, "cran", "cran", {}, None, T0 - 2 * DAY)]
    stored, changed = store.import_listers(given)
    assert changed == 2 and [(l.name, l.current_state, l.last_listing_finished_at, l.updated) for l in stored] == [
        ("gitlab", {"page": 3}, T0 - DAY, T0), ("cran", {}, None, T0 - 2 * DAY)]
    again, changed = store.import_listers(given)
    assert changed == 0 and again == stored
    moved, changed = store.import_listers([replace(given[0], current_state={"page": 4}, updated=T0 + DAY)])
    assert changed == 1 and moved[0].id == stored[0].id and moved[0].current_state == {"page": 4}


def test_listed_origins_keep_their_sightings_and_make_the_scheduling_rows(store):
    (a, b), _ = store.import_listers([Lister(0, "a", "a", {}, None, T0), Lister(0, "b", "b", {}, None, T0)])
    rows = [listing(a.id, 1, last_update=T0 - 2 * DAY, extra_loader_arguments={"branch": "main"}),
            listing(a.id, 2, enabled=False, is_fork=True, forked_from_url="https://forge.example/1"),
            listing(b.id, 1, last_update=T0 - 3 * DAY, last_seen=T0)]
    assert store.import_listed_origins(rows) == 3
    assert store.get_listed_origins() == [rows[0], rows[2], rows[1]]  # by url, visit type, lister
    assert store.import_listed_origins(rows) == 0
    # the scheduling rows: origin 1 enabled, its loader gets b's listing (seen last); origin 2 disabled
    picked = store.grab_next_visits("git", [GrabRequest(VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, 10)], T0,
                                    dry_run=True)
    assert [(v.url, v.lister_id, v.last_update) for v in picked] == [("https://forge.example/1", b.id, T0 - 2 * DAY)]
    assert store.import_listed_origins([replace(rows[2], last_seen=T0 - 2 * DAY)]) == 1
    picked = store.grab_next_visits("git", [GrabRequest(VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, 10)], T0,
                                    dry_run=True)
    assert [(v.lister_id, dict(v.extra_loader_arguments)) for v in picked] == [(a.id, {"branch": "main"})]
    with pytest.raises(NotFoundError):
        store.import_listed_origins([listing(9999, 3)])


def test_visit_stats_are_written_as_given_and_a_cooldown_over_is_none(store):
    (a,), _ = store.import_listers([Lister(0, "a", "a", {}, None, T0)])
    store.import_listed_origins([listing(a.id, 1), listing(a.id, 2)])
    full = VisitStats("https://forge.example/1", "git", last_visit=T0 - 3 * DAY,
                      last_visit_status=VisitOutcome.FAILED, last_successful=T0 - 3 * DAY, last_snapshot=b"\x01" * 20,
                      failure_count=2, last_scheduled=T0 - DAY, next_visit_target=T0 + 5 * DAY,
                      last_status_date=T0 - DAY, successful_visits=1, cooldown_until=T0 + DAY)
    bare = VisitStats("https://forge.example/2", "git", last_scheduled=T0 - 2 * DAY, cooldown_until=T0 - DAY)
    unlisted = VisitStats("https://elsewhere.example/x", "hg", last_visit=T0, last_status_date=T0,
                          last_visit_status=VisitOutcome.NOT_FOUND, failure_count=1)
    assert store.import_visit_stats([full, bare, unlisted], T0) == 3
    got = store.get_visit_stats([(s.url, s.visit_type) for s in (full, bare, unlisted)])
    assert got == [full, replace(bare, cooldown_until=None), unlisted]
    assert store.import_visit_stats([full, bare, unlisted], T0) == 0
    # later, full's cooldown is over too: the same records still change nothing
    assert store.import_visit_stats([replace(full, cooldown_until=None), bare, unlisted], T0 + 2 * DAY) == 0
    assert store.import_visit_stats([replace(bare, failure_count=1)], T0) == 1
    # the listing side is untouched: origin 2 is still enabled, origin 1 is cooling down
    picked = store.grab_next_visits("git", [GrabRequest(VisitPolicy.OLDEST_SCHEDULED_FIRST, 10)], T0, dry_run=True)
    assert [v.url for v in picked] == ["https://forge.example/2"]


def test_origin_metrics_are_written_as_given(store):
    (a,), _ = store.import_listers([Lister(0, "a", "a", {}, None, T0)])
    metrics = [OriginMetrics(a.id, "git", T0, 10, 9, 4, 3), OriginMetrics(a.id, "hg", T0 - DAY, 1, 1, 1, 0)]
    assert store.import_origin_metrics(metrics) == 2
    assert store.get_origin_metrics() == [replace(m, lister_name="a", lister_instance_name="a") for m in metrics]
    assert store.import_origin_metrics(metrics) == 0
    assert store.import_origin_metrics([replace(metrics[0], origins_known=11)]) == 1
    with pytest.raises(NotFoundError):
        store.import_origin_metrics([OriginMetrics(a.id + 100, "git", T0, 1, 1, 1, 1)])


def test_both_stores_name_the_same_import_queries(store):
    names = [set(load_queries(Path(imports.__file__).parent / f"{dialect}.sql")) for dialect in ("sqlite", "postgresql")]
    assert names[0] == names[1]
