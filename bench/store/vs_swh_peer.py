"""The swh-scheduler side of bench/store/vs_swh.py: runs in the peer's own virtual environment.

``bench/store/vs_swh.py`` starts this script with the peer venv's Python and sends it
one JSON object per line on stdin (``{"op": NAME, ...parameters}``); it answers
each with one JSON line on stdout. It drives the peer only through its public
Python API (``swh.scheduler.get_scheduler("postgresql", db=DSN)`` and
``swh.scheduler.journal_client.process_journal_objects``), builds its input
from ``bench/store/vs_swh_data.py`` (the same records as the Ostinato side), converts
them to the peer's model objects outside the timed region, and times only the
peer's own calls.

Nothing of the peer is imported by the project: this file runs only in the
benchmark's separate environment (``.bench-venvs/swh-scheduler-3.6.0``).
"""

from __future__ import annotations

import platform
import sys
import time
from datetime import datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.peer_protocol import serve
from bench.store.vs_swh_data import LISTER_INSTANCE, LISTER_NAME, TASK_TYPE, TASK_TYPE_FIELDS, VISIT_TYPE, Dataset, TaskData


class Peer:
    def __init__(self, dsn: str, n: int, tasks: int, seed: int, now: str) -> None:
        import psycopg
        from swh.scheduler import get_scheduler

        self.now = datetime.fromisoformat(now)
        self.data = Dataset(n, seed, self.now)
        self.tasks = TaskData(tasks, seed, self.now)
        self.scheduler = get_scheduler("postgresql", db=dsn)
        self.lister = self.scheduler.get_or_create_lister(name=LISTER_NAME, instance_name=LISTER_INSTANCE)
        self.grabbed_runs: list[tuple[int, str]] = []  # (task id, backend id) of the task runs scheduled
        self.versions = {
            "python": platform.python_version(),
            "psycopg": psycopg.__version__,
            "psycopg_impl": psycopg.pq.__impl__,
            **{name: metadata.version(name) for name in ("swh.scheduler", "swh.core", "swh.journal", "swh.model")},
        }

    # -- the origin-visit scheduler
    def record_listed(self, k: int, batch: int) -> dict[str, Any]:
        from swh.scheduler.model import ListedOrigin

        origins = [ListedOrigin(lister_id=self.lister.id, **record) for record in self.data.listed_batch(k, batch)]
        start = time.perf_counter()
        recorded = self.scheduler.record_listed_origins(origins)
        return {"seconds": time.perf_counter() - start, "count": len(origins), "written": len(recorded)}

    def feed(self, k: int, batch: int) -> dict[str, Any]:
        from swh.scheduler.journal_client import process_journal_objects

        messages = self.data.status_batch(k, batch)
        start = time.perf_counter()
        process_journal_objects({"origin_visit_status": messages}, scheduler=self.scheduler)
        return {"seconds": time.perf_counter() - start, "count": len(messages)}

    def grab(self, policy: str, count: int, dry_run: bool) -> dict[str, Any]:
        # tablesample=None: the whole table (the recurrent-visit service's configuration for git
        # samples 0.1 % of it, which returns nothing on tables of this size).
        start = time.perf_counter()
        visits = self.scheduler.grab_next_visits(VISIT_TYPE, count, policy=policy, timestamp=self.now,
                                                 tablesample=None, dry_run=dry_run)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "count": len(visits), "urls": [v.url for v in visits]}

    def metrics(self) -> dict[str, Any]:
        start = time.perf_counter()
        rows = self.scheduler.update_metrics(timestamp=self.now)
        seconds = time.perf_counter() - start
        mine = [m for m in rows if m.lister_id == self.lister.id and m.visit_type == VISIT_TYPE]
        row = {}
        if mine:
            m = mine[0]
            row = {"origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
                   "origins_never_visited": m.origins_never_visited,
                   "origins_with_pending_changes": m.origins_with_pending_changes}
        return {"seconds": seconds, "count": len(rows), "row": row}

    # -- the generic task scheduler
    def create_task_type(self) -> dict[str, Any]:
        from swh.scheduler.model import TaskType

        self.scheduler.create_task_type(TaskType(**TASK_TYPE_FIELDS))
        return {"count": 1}

    def create_tasks(self, k: int, batch: int) -> dict[str, Any]:
        from swh.scheduler.model import Task, TaskArguments

        tasks = [Task(type=t["type"], arguments=TaskArguments(args=t["arguments"]["args"], kwargs=t["arguments"]["kwargs"]),
                      next_run=t["next_run"]) for t in self.tasks.batch(k, batch)]
        start = time.perf_counter()
        created = self.scheduler.create_tasks(tasks)
        return {"seconds": time.perf_counter() - start, "count": len(created)}

    def grab_tasks(self, count: int) -> dict[str, Any]:
        """What the peer's runner does per batch: grab_ready_tasks, then mass_schedule_task_runs."""
        from swh.scheduler.model import TaskRun

        start = time.perf_counter()
        tasks = self.scheduler.grab_ready_tasks(TASK_TYPE, timestamp=self.now, num_tasks=count)
        grab_s = time.perf_counter() - start
        runs = [TaskRun(task=t.id, backend_id=f"bench-{t.id}", scheduled=self.now) for t in tasks]
        runs_s = 0.0
        if runs:
            start = time.perf_counter()
            self.scheduler.mass_schedule_task_runs(runs)
            runs_s = time.perf_counter() - start
        self.grabbed_runs.extend((r.task, r.backend_id) for r in runs)
        return {"seconds": grab_s + runs_s, "grab_seconds": grab_s, "runs_seconds": runs_s, "count": len(tasks)}

    def end_runs(self, count: int, ended: str) -> dict[str, Any]:
        """End ``count`` scheduled runs, alternately uneventful and eventful; return each task's interval after.

        Not timed: it checks what the peer does with a task's interval (its README: "taking into
        account the backoff factor")."""
        at = datetime.fromisoformat(ended)
        probe = self.grabbed_runs[:count]
        statuses = {}
        for j, (task_id, backend_id) in enumerate(probe):
            status = ("uneventful", "eventful")[j % 2]
            self.scheduler.end_task_run(backend_id, status=status, timestamp=at)
            statuses[task_id] = status
        result: dict[str, dict[str, list[Any]]] = {"uneventful": {}, "eventful": {}}
        for task in self.scheduler.get_tasks(list(statuses)):
            entry = result[statuses[task.id]]
            interval = task.current_interval or timedelta(0)
            entry.setdefault("interval_s", []).append(interval.total_seconds())
            entry.setdefault("next_run_after_end_s", []).append((task.next_run - at).total_seconds())
            entry.setdefault("status", []).append(task.status)
        return {"count": len(probe), "tasks": result}


if __name__ == "__main__":
    sys.exit(serve(Peer))
