"""The swh-scheduler side of bench/beat/celery_dispatch.py, and what both sides share.

``bench/beat/celery_dispatch.py`` starts this script with the peer venv's Python
(``.bench-venvs/swh-scheduler-3.6.0``) and drives it over the JSON-lines protocol
of ``bench/common/peer_protocol.py``: swh-scheduler 3.6.0 through its public API, its
backend, its Celery app (``build_app``) and its runner (``run_ready_tasks``).
The task type, the tasks' arguments and their ``next_run`` are defined here, so
that both sides dispatch the same work. Standard library only at import: the
peer's modules are imported where they are used.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.peer_protocol import serve

TASK_TYPE = "bench-dispatch"
#: the Celery task name (Ostinato: the callable's import path, also the queue's name)
BACKEND_NAME = "celery_dispatch:noop"
URL_PREFIX = "https://forge.example.org/task/"
#: the peer's runner sends tasks whose name does not start with "swh." to Celery's default queue
PEER_QUEUE = "celery"


def task_url(i: int) -> str:
    return f"{URL_PREFIX}{i}"


def next_run_of(i: int, now: datetime) -> datetime:
    """Ready at ``now``: spread over the day before it."""
    return now - timedelta(seconds=1 + (i * 7919) % 86_400)


class PeerDriver:
    """swh-scheduler 3.6.0 through its public API: its backend, its Celery app, its runner."""

    def __init__(self, dsn: str, broker_url: str) -> None:
        from importlib import metadata

        from swh.scheduler import get_scheduler
        from swh.scheduler.celery_backend.config import build_app

        self.scheduler = get_scheduler("postgresql", db=dsn)
        self.app = build_app({"task_broker": broker_url})
        self.task_type: Any = None
        self.versions = {name: metadata.version(name) for name in ("swh.scheduler", "swh.core", "celery", "kombu", "redis",
                                                                   "psycopg")}

    def create_task_type(self, max_queue_length: int | None) -> dict[str, Any]:
        from swh.scheduler.model import TaskType as PeerTaskType

        self.task_type = PeerTaskType(type=TASK_TYPE, description="benchmark: dispatch", backend_name=BACKEND_NAME,
                                      default_interval=timedelta(days=1), max_queue_length=max_queue_length,
                                      num_retries=0)
        self.scheduler.create_task_type(self.task_type)
        return {"count": 1}

    def create_tasks(self, start: int, stop: int, now: str) -> dict[str, Any]:
        from swh.scheduler.model import Task
        from swh.scheduler.model import TaskArguments as PeerArguments

        at = datetime.fromisoformat(now)
        tasks = [Task(type=TASK_TYPE, arguments=PeerArguments(args=[task_url(i)], kwargs={}), next_run=next_run_of(i, at),
                      policy="oneshot") for i in range(start, stop)]
        return {"count": len(self.scheduler.create_tasks(tasks))}

    def dispatch(self) -> dict[str, Any]:
        """One call of the peer's runner (it loops until nothing is ready), timed; its parts timed too."""
        from swh.scheduler.celery_backend.runner import run_ready_tasks

        spent: dict[str, float] = {}
        calls: dict[str, int] = {}

        def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
                    calls[name] = calls.get(name, 0) + 1
            return wrapper

        # instance attributes shadow the methods: the runner calls these through the instances
        for name in ("peek_ready_tasks", "mass_schedule_task_runs", "set_status_tasks"):
            setattr(self.scheduler, name, timed(name, getattr(self.scheduler, name)))
        self.app.send_task = timed("send_task", self.app.send_task)  # type: ignore[method-assign]  # wrapped on this instance, to time the calls
        start = time.perf_counter()
        runs = run_ready_tasks(self.scheduler, self.app, task_types=[self.task_type])
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "count": len(runs), "spent": spent, "calls": calls}



if __name__ == "__main__":
    sys.exit(serve(PeerDriver))
