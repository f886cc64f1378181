"""A task type's tasks are read by a walk of task_by_type_idx (migration 0024) from the page's cursor: the
console's task type page and ``search_tasks(task_type=…)`` with its filters (the API's, the CLI's and the swh
face's searches) read about the page they ask for, never the other types' tasks nor the table.

The statements checked are those the store runs for the page and the verb (recorded as they run, then
EXPLAINed with their values), on seeded data: 200,000 tasks on PostgreSQL, 50,000 on SQLite, of which one in a
hundred is of the rare type, in every status, policy and priority."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from ostinato.api.console.gather_drill import TASKS_PAGE, gather_task_type
from ostinato.domain.tasks import TaskPolicy, TaskPriority, TaskStatus, TaskType

NOW = datetime(2026, 1, 1, tzinfo=UTC)
EVERY = 100  # one task in EVERY is of the rare type
# task i (j = i + i / EVERY, so that the rare type's tasks take every value too): its status, policy, priority
# and next run's day, each from other digits of j; the same SQL in both dialects, but for the columns that differ
SEED = f"""
INSERT INTO task (type, arguments, {{digest_column}} next_run, current_interval, status, policy, retries_left, priority)
SELECT CASE WHEN i % {EVERY} = 0 THEN 'rare' ELSE 'common' END, {{arguments}}, {{next_run}}, {{interval}},
       CASE j % 5 WHEN 0 THEN 'next_run_not_scheduled' WHEN 1 THEN 'next_run_scheduled' WHEN 2 THEN 'completed'
                  ELSE 'disabled' END,
       CASE WHEN j / 5 % 3 = 0 THEN 'oneshot' ELSE 'recurring' END, 0,
       CASE WHEN j / 15 % 4 = 0 THEN CASE j % 3 WHEN 0 THEN 'high' WHEN 1 THEN 'normal' ELSE 'low' END END
FROM (SELECT i, i + i / {EVERY} AS j FROM {{series}}) AS s
"""


def rare_ids(store) -> list[int]:
    return [r["id"] for r in store.db.read("SELECT id FROM task WHERE type = 'rare' ORDER BY id")]


def searches(store) -> list[tuple[str, Callable[[], Any]]]:
    """The reads checked: the console's page (first and a later one), and the verb with each filter."""
    ctx = SimpleNamespace(store=store, clock=SimpleNamespace(now=lambda: NOW))
    rare = rare_ids(store)
    middle, late = rare[len(rare) // 2], rare[-3]
    return [
        ("page, first", lambda: gather_task_type(ctx, "rare", None)),
        ("page, later", lambda: gather_task_type(ctx, "rare", middle)),
        ("page, last", lambda: gather_task_type(ctx, "rare", late)),
        ("page of the common type", lambda: gather_task_type(ctx, "common", middle)),
        ("status", lambda: store.search_tasks(task_type="rare", status=[TaskStatus.DISABLED], after_id=middle)),
        ("statuses", lambda: store.search_tasks(task_type="rare", status=[TaskStatus.COMPLETED, TaskStatus.NEXT_RUN_SCHEDULED])),
        ("every filter", lambda: store.search_tasks(
            task_type="rare", status=[TaskStatus.NEXT_RUN_NOT_SCHEDULED, TaskStatus.DISABLED], policy=TaskPolicy.RECURRING,
            priority=[None, TaskPriority.HIGH], before=NOW, after_id=rare[10], limit=20)),
    ]


def recorded(store, read: Callable[[], Any]) -> list[tuple[str, Any]]:
    """The statements on table task the store ran for ``read``, with their values."""
    ran: list[tuple[str, Any]] = []
    original = store.db.read

    def recording(sql: str, params: Any = None) -> Any:
        ran.append((sql, params))
        return original(sql, params)

    store.db.read = recording
    try:
        read()
    finally:
        store.db.read = original
    on_task = [(sql, params) for sql, params in ran if " FROM task\n" in sql or " FROM task " in sql]
    assert on_task, ran
    return on_task


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _types(store) -> None:
    for name in ("rare", "common"):
        store.create_task_type(TaskType(name, "", "x:y", default_interval=timedelta(days=1)))


@pytest.fixture(scope="module")
def seeded_pg(pg_server, pg_template):
    from ostinato.store.postgresql import PostgresStore

    name = "task_type_plans"
    dsn = pg_server.create_database(name, template=pg_template)
    with PostgresStore(dsn) as store:
        _types(store)
        with store.db.write() as conn:
            conn.execute(SEED.format(
                digest_column="arguments_digest,",
                arguments="jsonb_build_object('args', jsonb_build_array('https://example.org/' || i), 'kwargs', '{}'::jsonb), "
                          "decode(md5('https://example.org/' || i), 'hex')",  # a digest: no duplicate is looked for here
                next_run="%(now)s - (i % 1000) * interval '1 minute' + (j / 60 % 3) * interval '1 day'",
                interval="interval '1 day'", series="generate_series(1, 200000) AS i").replace("% ", "%% "), {"now": NOW})
            conn.execute("ANALYZE task")
        yield store
    pg_server.drop_database(name)


@pytest.mark.parametrize("case", range(7))
def test_postgresql_a_types_tasks_walk_its_index(seeded_pg, case):
    store = seeded_pg
    label, read = searches(store)[case]
    for sql, params in recorded(store, read):
        [row] = store.db.read("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
        plan = row["QUERY PLAN"][0]["Plan"]
        nodes = list(_nodes(plan))
        walks = [n for n in nodes if n.get("Relation Name") == "task"]
        assert len(walks) == 1 and walks[0]["Node Type"] == "Index Scan", (label, nodes)
        assert not any(n["Node Type"] in ("Seq Scan", "Bitmap Heap Scan", "Sort", "Incremental Sort") for n in nodes), \
            (label, nodes)
        walk = walks[0]
        limit = params["limit"]
        if label.startswith("page"):
            assert limit == TASKS_PAGE + 1
        if label == "page of the common type":  # the primary key's walk may read it too: 1 task in EVERY is not its
            assert walk["Actual Rows"] + walk.get("Rows Removed by Filter", 0) <= 2 * limit, walk
            continue
        assert walk["Index Name"] == "task_by_type_idx", (label, walk)
        # the rare type's tasks from the cursor to the page's last one (all of them if the page is not full), no other
        found = [r["id"] for r in store.db.read(sql, params)]
        last = found[-1] if len(found) == limit else float("inf")
        walked = [i for i in rare_ids(store) if params["after_id"] < i <= last]
        assert walk["Actual Rows"] == len(found) and walk["Actual Rows"] + walk.get("Rows Removed by Filter", 0) == len(walked)
        assert plan["Shared Hit Blocks"] + plan.get("Shared Read Blocks", 0) <= 2 * len(walked) + 10, (label, plan)
        assert found or label != "every filter"


@pytest.mark.parametrize("analyze", [False, True], ids=["as-the-store-leaves-it", "analyzed"])
def test_sqlite_a_types_tasks_walk_its_index(tmp_path, analyze):
    from ostinato.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "plans.db")
    store.init_schema()
    try:
        _types(store)
        with store.db.write() as conn:
            conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000) " + SEED.format(
                digest_column="", arguments="""'{"args":["u' || i || '"],"kwargs":{}}'""",
                next_run="strftime('%Y-%m-%dT%H:%M:%f000+00:00', '2026-01-01', '-' || (i % 1000) || ' minutes', "
                         "'+' || (j / 60 % 3) || ' days')",
                interval="86400.0", series="n"))
            if analyze:
                conn.execute("ANALYZE")
        for label, read in searches(store):
            for sql, params in recorded(store, read):
                plan = "\n".join(row[3] for row in store.db.read("EXPLAIN QUERY PLAN " + sql, params))
                assert "USING INDEX task_by_type_idx (type=? AND rowid>?)" in plan, (label, plan)
                assert "SCAN task" not in plan and "TEMP B-TREE" not in plan, (label, plan)
    finally:
        store.close()
