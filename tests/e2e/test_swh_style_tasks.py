"""swh-style Celery tasks under Ostinato's dispatch: stand-ins with a swh loader's and lister's
signatures, registered under swh's task names (swh_style_tasks.py), run by an ``ostinato worker``
process over a real Redis; their results come back through Ostinato's listener and end the task
runs as swh-scheduler reads them (docs/reference/swh-compat-celery.md): ``{"status": "eventful"}``
eventful, ``"uneventful"`` uneventful, ``{"status": "failed", "error": …}`` failed with its error, a
lister's ``{"pages", "origins"}`` eventful. A loader's visit whose result is only its run's outcome
records no visit status (the archive's journal reports it); its failure is a failed visit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from swh_style_tasks import GIT_LOADER, GITLAB_LISTER
from test_celery_path import Services, final_runs, settings_for, start_worker, stop_process, wait_for

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskRunStatus, TaskType
from ostinato.domain.visits import VisitOutcome
from ostinato.store.postgresql import PostgresStore
from test_servers.redis import RedisServer

pytestmark = pytest.mark.postgresql

SAVE = "https://git.example.net/someone/{}.git"
LISTED = "https://gitlab.example.org/group/{}.git"


@pytest.fixture(scope="module")
def redis():
    with RedisServer(persistent=False) as server:
        yield server


def fill(store: PostgresStore, now: datetime) -> None:
    store.create_task_type(TaskType("load-git", "git loader", GIT_LOADER, max_queue_length=100, num_retries=0))
    store.create_task_type(TaskType("list-gitlab-full", "gitlab lister", GITLAB_LISTER, num_retries=0,
                                    default_interval=timedelta(days=1)))
    store.create_tasks([NewTask("load-git", now, TaskArguments((), {"url": SAVE.format(end)}), policy=TaskPolicy.ONESHOT)
                        for end in ("eventful", "uneventful", "failed", "raises")])
    store.create_tasks([NewTask("load-git", now, TaskArguments((), {"url": SAVE.format("urgent/eventful")}),
                                policy=TaskPolicy.ONESHOT, priority=TaskPriority.HIGH),
                        NewTask("list-gitlab-full", now, TaskArguments((), {"url": "https://gitlab.example.org/api/v4/",
                                                                             "instance": "gitlab.example.org"}))])
    lister = store.get_or_create_lister("gitlab", "gitlab.example.org", now)
    store.record_listed_origins(lister.id, [ListedOrigin(LISTED.format(end), "git", {"base_url": None},
                                                         last_update=now - timedelta(days=1))
                                            for end in ("uneventful", "failed")], now)


def test_swh_style_tasks_run_under_ostinato_and_their_results_end_the_runs(pg_dsn, redis, tmp_path, monkeypatch):
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("OSTINATO_IMPORTS", "swh_style_tasks")
    monkeypatch.setenv("STANDIN_CALLS", str(calls))
    now = datetime.now(UTC)
    with PostgresStore(pg_dsn) as store:
        fill(store, now)
        worker = start_worker(pg_dsn, redis.url, tmp_path / "worker.log")
        try:
            with Services(store, settings_for(pg_dsn, redis.url)):
                wait_for(lambda: len(final_runs(store)) == 6, 60, "the six task runs to end")
                wait_for(lambda: calls.exists() and len(calls.read_text().splitlines()) == 8, 60, "both visits")
                wait_for(lambda: store.get_visit_stats([(LISTED.format("failed"), "git")])[0].last_visit_status
                         is not None, 30, "the failed visit's status")
        finally:
            stop_process(worker)

        tasks = {t.id: t for t in store.search_tasks(limit=100)}
        ended = {tasks[r.task].arguments.kwargs["url"]: r for r in final_runs(store)}
        assert {url: r.status for url, r in ended.items()} == {
            SAVE.format("eventful"): TaskRunStatus.EVENTFUL, SAVE.format("uneventful"): TaskRunStatus.UNEVENTFUL,
            SAVE.format("failed"): TaskRunStatus.FAILED, SAVE.format("raises"): TaskRunStatus.FAILED,
            SAVE.format("urgent/eventful"): TaskRunStatus.EVENTFUL,
            "https://gitlab.example.org/api/v4/": TaskRunStatus.EVENTFUL}
        assert ended[SAVE.format("failed")].metadata["error"] == "the remote end hung up"
        assert "RuntimeError: fetch failed" in ended[SAVE.format("raises")].metadata["error"]
        assert ended["https://gitlab.example.org/api/v4/"].metadata == {"pages": 2, "origins": 40}
        node = settings_for(pg_dsn, redis.url).node
        assert {r.backend_id for r in ended.values()} == {f"celery:ostinato-{worker.pid}@{node}"}

        # the visits: the loader got the lister's fields; an uneventful one waits for the journal's status
        visits = [json.loads(line) for line in calls.read_text().splitlines() if "group/" in line]
        assert sorted(v["kwargs"]["url"] for v in visits) == [LISTED.format("failed"), LISTED.format("uneventful")]
        assert all(v["kwargs"] == {"url": v["kwargs"]["url"], "lister_name": "gitlab",
                                   "lister_instance_name": "gitlab.example.org", "base_url": None} for v in visits)
        stats = {s.url: s for s in store.get_visit_stats([(LISTED.format(e), "git") for e in ("uneventful", "failed")])}
        assert stats[LISTED.format("failed")].last_visit_status is VisitOutcome.FAILED
        assert stats[LISTED.format("uneventful")].last_status_date is None
        assert stats[LISTED.format("uneventful")].last_scheduled is not None
