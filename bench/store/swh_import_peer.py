"""Fill an swh-scheduler 3.6 database through the peer's own Python API: runs in the peer's virtual
environment (``.bench-venvs/swh-scheduler-3.6.0``, see ``test_servers.swh_peer``).

Used by ``bench/store/swh_import.py`` and ``tests/e2e/test_swh_import.py`` to make the importer's
source the way the archive's services make theirs: listers through ``get_or_create_lister`` and
``update_lister``, listed origins through ``record_listed_origins``, visit stats through the
journal client's ``process_journal_objects``, grabs through ``grab_next_visits``, task types and
tasks through ``create_task_type`` and ``create_tasks``, runs through ``grab_ready_tasks``,
``mass_schedule_task_runs``, ``start_task_run`` and ``end_task_run``, ``disable_tasks``, and the
metrics through ``update_metrics``. The records come from ``bench/store/swh_import_data.py``.

    .bench-venvs/swh-scheduler-3.6.0/bin/python bench/store/swh_import_peer.py --dsn DSN --origins N --tasks M --now ISO

Progress goes to stderr, one line per step; the last line of stdout is a JSON summary.
Nothing of the peer is imported by the project: this file runs only in the peer's environment.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.store.swh_import_data import LISTERS, TASK_TYPES, SourceData


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Filler:
    def __init__(self, dsn: str, data: SourceData, batch: int):
        from swh.scheduler import get_scheduler

        self.scheduler = get_scheduler("postgresql", db=dsn)
        self.data, self.batch = data, batch
        self.listers: list[Any] = []
        self.timings: dict[str, float] = {}

    def step(self, name: str, total: int, run: Any) -> None:
        start = time.perf_counter()
        done = 0
        for count in run():
            done += count
            _say(f"{name}: {done}/{total}")
        self.timings[name] = time.perf_counter() - start

    def fill_listers(self):
        now = self.data.now
        for spec in LISTERS:
            lister = self.scheduler.get_or_create_lister(name=spec["name"], instance_name=spec["instance_name"])
            if spec["state"] is not None or spec["finished"]:
                lister = self.scheduler.update_lister(lister.evolve(
                    current_state=spec["state"] or {},
                    last_listing_finished_at=now - timedelta(hours=3) if spec["finished"] else None))
            self.listers.append(lister)
            yield 1

    def fill_origins(self):
        from swh.scheduler.model import ListedOrigin

        for start in range(0, self.data.n, self.batch):
            listings = self.data.listing_batch(start, start + self.batch)
            self.scheduler.record_listed_origins(
                [ListedOrigin(lister_id=self.listers[lister].id, **record) for lister, record in listings])
            yield min(self.batch, self.data.n - start)

    def fill_visits(self):
        from swh.scheduler.journal_client import process_journal_objects

        for start in range(0, self.data.n, self.batch):
            statuses = self.data.visit_batch(start, start + self.batch)
            if statuses:
                process_journal_objects({"origin_visit_status": statuses}, scheduler=self.scheduler)
            yield min(self.batch, self.data.n - start)

    def fill_grabs(self):
        at = self.data.now - timedelta(hours=1)
        count = max(1, self.data.n // 50)
        for visit_type in ("git", "cran"):
            for policy in ("origins_without_last_update", "oldest_scheduled_first"):
                self.scheduler.grab_next_visits(visit_type, count, policy=policy, timestamp=at)
                yield 1
        self.scheduler.visit_scheduler_queue_position_set("hg", 3 * 86400)  # a head and no origin
        yield 1

    def fill_tasks(self):
        from swh.scheduler.model import Task, TaskArguments, TaskType

        for spec in TASK_TYPES:
            self.scheduler.create_task_type(TaskType(**spec))
        self.task_ids: list[int] = []
        for start in range(0, self.data.m, self.batch):
            tasks = [Task(type=t["type"], arguments=TaskArguments(**t["arguments"]), next_run=t["next_run"],
                          policy=t["policy"], priority=t["priority"]) for t in self.data.task_batch(start, start + self.batch)]
            self.task_ids.extend(t.id for t in self.scheduler.create_tasks(tasks))
            yield len(tasks)

    def fill_runs(self):
        from swh.scheduler.model import TaskRun

        now = self.data.now
        # one-shot tasks first: the first endings (eventful, uneventful) complete some of them
        grabbed = list(self.scheduler.grab_ready_priority_tasks("index-mimetype", timestamp=now,
                                                                num_tasks=max(1, self.data.m // 50)))
        grabbed += self.scheduler.grab_ready_tasks("load-git", timestamp=now, num_tasks=max(1, self.data.m // 5))
        runs = [TaskRun(task=t.id, backend_id=f"celery-{t.id}", scheduled=now - timedelta(hours=2)) for t in grabbed]
        if runs:
            self.scheduler.mass_schedule_task_runs(runs)
        for k, run in enumerate(runs):
            end = self.data.run_end(k)
            if end != "scheduled":
                self.scheduler.start_task_run(run.backend_id, metadata={"worker": f"w{k % 4}"},
                                              timestamp=now - timedelta(minutes=90))
            if end not in ("scheduled", "started"):
                self.scheduler.end_task_run(run.backend_id, status=end, metadata={"took": k % 60},
                                            timestamp=now - timedelta(minutes=80))
            if k % 1000 == 999:
                yield 1000
        yield len(runs) % 1000
        disabled = [task_id for j, task_id in enumerate(self.task_ids) if self.data.disabled(j)]
        if disabled:
            self.scheduler.disable_tasks(disabled)

    def fill_metrics(self):
        self.scheduler.update_metrics(timestamp=self.data.now)
        yield 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--origins", type=int, required=True)
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--now", required=True, help="ISO 8601 time with a zone")
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args(argv)
    data = SourceData(args.origins, args.tasks, datetime.fromisoformat(args.now))
    filler = Filler(args.dsn, data, args.batch)
    filler.step("listers", len(LISTERS), filler.fill_listers)
    filler.step("listed origins", data.n, filler.fill_origins)
    filler.step("visit statuses (origins)", data.n, filler.fill_visits)
    filler.step("grabs", 5, filler.fill_grabs)
    filler.step("tasks", data.m, filler.fill_tasks)
    filler.step("runs", max(1, data.m // 5), filler.fill_runs)
    filler.step("metrics", 1, filler.fill_metrics)
    versions = {name: metadata.version(name) for name in ("swh.scheduler", "swh.core", "psycopg")}
    print(json.dumps({"timings": filler.timings, "versions": versions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
