"""Fill swh-scheduler 3.6.0's database with tests/e2e/swh_compat_data.py, through its public Python API.

Run by tests/e2e/test_swh_compat_celery.py with the peer environment's interpreter
(``.bench-venvs/swh-scheduler-3.6.0``), never imported by Ostinato::

    python swh_compat_peer.py DSN NOW

It creates the task types, the tasks, the listers and the listed origins with
``get_scheduler("postgresql", db=DSN)``, and prints one JSON line: the ids of the
listers it made. The peer's own commands (``swh scheduler start-runner``,
``schedule-recurrent``) then dispatch them.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import swh_compat_data as data


def fill(dsn: str, now: datetime) -> dict[str, str]:
    from swh.scheduler import get_scheduler
    from swh.scheduler.model import ListedOrigin, Task, TaskArguments, TaskType

    scheduler = get_scheduler("postgresql", db=dsn)
    for name, backend, retries, delay in data.TASK_TYPES:
        scheduler.create_task_type(TaskType(
            type=name, description=name, backend_name=backend, default_interval=timedelta(days=64),
            min_interval=timedelta(hours=12), max_interval=timedelta(days=64), backoff_factor=2.0,
            max_queue_length=None, num_retries=retries,
            retry_delay=timedelta(seconds=delay) if delay is not None else None))
    for spec in data.tasks(now):
        scheduler.create_tasks([Task(type=spec["type"], policy=spec["policy"], priority=spec["priority"],
                                     arguments=TaskArguments(args=spec["args"], kwargs=spec["kwargs"]),
                                     next_run=datetime.fromisoformat(spec["next_run"]))])
    listers = {name: scheduler.get_or_create_lister(name=name, instance_name=instance)
               for name, instance in data.LISTERS}
    scheduler.record_listed_origins([
        ListedOrigin(lister_id=listers[o["lister"]].id, url=o["url"], visit_type=o["visit_type"],
                     extra_loader_arguments=o["extra_loader_arguments"],
                     last_update=datetime.fromisoformat(o["last_update"]) if o["last_update"] else None)
        for o in data.origins(now)])
    return {name: str(lister.id) for name, lister in listers.items()}


if __name__ == "__main__":
    print(json.dumps(fill(sys.argv[1], datetime.fromisoformat(sys.argv[2]))))
