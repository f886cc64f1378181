"""One process that does it all on the embedded default: runner, priority runner
and the embedded worker pool, sharing one store. ``ostinato run`` and
``ostinato runner`` are thin over :class:`EmbeddedScheduler`.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Sequence

from ..config import Settings
from ..domain.clock import Clock
from ..execution.embedded import EmbeddedExecutor
from ..store import Store
from .runner import TaskRunner, recover_dead_executors

log = logging.getLogger(__name__)


def prepare_embedded_schema(store: Store) -> None:
    """On the embedded default (SQLite) create or upgrade the schema; elsewhere only check it.

    A shared PostgreSQL is upgraded on purpose, with `ostinato db upgrade`.
    """
    if store.dialect == "sqlite":
        state = store.schema_state()
        if state.current is None:
            store.init_schema()
            log.info("created the schema (version %d)", state.latest)
        elif state.current < state.latest:
            applied = store.upgrade_schema()
            log.info("upgraded the schema to version %d (applied %s)", state.latest, ", ".join(map(str, applied)))
    store.check_schema()


@dataclass
class Summary:
    dispatched: int
    finished: int
    seconds: float


class EmbeddedScheduler:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Clock,
        *,
        task_types: Sequence[str] | None = None,
        normal: bool = True,
        priority: bool = True,
    ):
        for module in settings.imports:
            importlib.import_module(module)
        self.store = store
        self.settings = settings
        self.clock = clock
        self.executor = EmbeddedExecutor(store.record_run_events, clock, node=settings.node, workers=settings.workers)
        options = dict(task_types=task_types, batch_size=settings.batch_size, lost_run_timeout=settings.lost_run_timeout)
        self.runners = []
        if normal:
            self.runners.append(TaskRunner(store, self.executor, clock, priority=False, **options))
        if priority:
            self.runners.append(TaskRunner(store, self.executor, clock, priority=True, **options))
        self._threads: list[threading.Thread] = []
        self.summary_every = 10
        self._started_at = time.monotonic()

    def start(self) -> None:
        self._started_at = time.monotonic()
        recover_dead_executors(self.store, self.clock, self.settings.node, self.executor.executor_id)
        self.executor.start()

    def run_once(self, *, wait: float = 60.0) -> int:
        """One pass of every runner, then wait (at most ``wait`` s) for the dispatched runs to end."""
        dispatched = sum(runner.run_once() for runner in self.runners)
        deadline = time.monotonic() + wait
        while self.executor.completed < dispatched and time.monotonic() < deadline:
            time.sleep(0.05)
        return dispatched

    def run_until(self, stop: threading.Event) -> None:
        poll = self.settings.poll_interval.total_seconds()
        for runner in self.runners:
            thread = threading.Thread(target=runner.run_forever, args=(stop, poll), name=f"ostinato-{runner.name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        seen = dict(self.executor.outcomes)
        while not stop.wait(self.summary_every):
            now = dict(self.executor.outcomes)
            delta = {status.value: now.get(status, 0) - seen.get(status, 0) for status in now}
            seen = now
            if any(delta.values()):
                log.info("last %ds: %s", self.summary_every, ", ".join(f"{n} {s}" for s, n in sorted(delta.items()) if n))
        for thread in self._threads:
            thread.join()

    def stop(self, grace: float = 30.0) -> Summary:
        self.executor.stop(grace)
        return Summary(
            dispatched=sum(r.dispatched for r in self.runners),
            finished=self.executor.completed,
            seconds=time.monotonic() - self._started_at,
        )
