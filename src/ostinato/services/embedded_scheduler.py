"""One process that runs the services over one store: runner, priority runner,
orchestrator, deadline scheduler, and either the embedded worker pool or, with
the ``executor`` setting ``celery``, dispatch to Celery workers and the
listener that records what they report. ``ostinato run``, ``ostinato runner``,
``ostinato orchestrator`` and ``ostinato listener`` are thin over
:class:`EmbeddedScheduler`.

The embedded executor's visit statuses go to the store's feedback loop
(``record_visit_statuses`` with the settings' feedback policy), and visits it
never started are handed back with ``release_visits``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import extras
from ..config import Settings
from ..domain.clock import Clock
from ..domain.visits import VisitStatus
from ..execution.worker_pool import EmbeddedExecutor
from ..store import Store
from .deadline_scheduler import DeadlineScheduler
from .orchestrator import Orchestrator
from .revisit_steering import ThresholdSteering
from .runner import TaskRunner, recover_dead_executors
from .service_metrics import counting_outcomes

if TYPE_CHECKING:  # Celery is imported only when the executor is celery
    from ..integrations.celery.executor import CeleryExecutor
    from ..integrations.celery.listener import CeleryListener

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
    visits_dispatched: int = 0
    visits_finished: int = 0
    schedule_runs: int = 0


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
        orchestrate: bool = False,
        visit_types: Sequence[str] | None = None,
        schedules: bool = False,
        listen: bool = False,
        journal: bool = False,
    ):
        settings.import_modules()
        self.store = store
        self.settings = settings
        self.clock = clock
        feedback = settings.feedback_policy()

        def record_visits(statuses: Sequence[VisitStatus]) -> int:
            return store.record_visit_statuses(statuses, feedback, now=clock.now())

        report_visits = counting_outcomes("visit", record_visits)
        report_runs = counting_outcomes("run", store.record_run_events)

        self.celery_app = None
        self.listener: CeleryListener | None = None
        self.executor: EmbeddedExecutor | CeleryExecutor
        if settings.executor == "celery":
            extras.require("celery", "the setting executor = celery")
            from ..integrations.celery.app import make_celery_app
            from ..integrations.celery.executor import CeleryExecutor
            from ..integrations.celery.listener import CeleryListener

            self.celery_app = make_celery_app(settings.celery_broker())
            self.executor = CeleryExecutor(self.celery_app, clock, node=settings.node, report=report_runs,
                                           release_visits=store.release_visits,
                                           queue_depth_cache=settings.queue_depth_cache.total_seconds())
            if listen:
                self.listener = CeleryListener(store, self.celery_app, clock, feedback,
                                               worker_lost_after=settings.worker_lost_after)
        else:
            self.executor = EmbeddedExecutor(report_runs, clock, node=settings.node, workers=settings.workers,
                                             report_visits=report_visits, release_visits=store.release_visits)
        options: dict[str, Any] = dict(task_types=task_types, batch_size=settings.batch_size,
                                       lost_run_timeout=settings.lost_run_timeout)
        self.runners: list[TaskRunner] = []
        if normal:
            self.runners.append(TaskRunner(store, self.executor, clock, priority=False, **options))
        if priority:
            self.runners.append(TaskRunner(store, self.executor, clock, priority=True, **options))
        self.orchestrator: Orchestrator | None = None
        if orchestrate:
            self.orchestrator = Orchestrator(
                store, self.executor, clock, visit_types=visit_types or settings.visit_types or None,
                ratios=settings.policy_ratios, threshold=settings.orchestrator_threshold,
                grab_options=settings.grab_options(), batch_size=settings.batch_size,
                steering=ThresholdSteering(store, settings.revisit_model(), capacity=settings.revisit_capacity,
                                           every=settings.revisit_steer_every),
            )
        #: the deadline-greedy scheduler, for `ostinato run` (instance "run" on this node)
        self.deadline_scheduler = (DeadlineScheduler(store, clock, node=settings.node, instance="run",
                                                     capacity=settings.workers, timing=settings.schedule_timing(),
                                                     rule=settings.schedule_pick_rule(),
                                                     remote=None if isinstance(self.executor, EmbeddedExecutor)
                                                     else self.executor)
                                   if schedules else None)
        #: the journal client, when the journal_brokers setting names Kafka brokers
        self.journal_client = None
        if journal and settings.journal_brokers:
            from ..integrations.kafka.journal_client import JournalClient  # confluent-kafka: only when it is used

            self.journal_client = JournalClient(store, feedback, clock, brokers=settings.journal_brokers,
                                                group_id=settings.journal_group_id, topics=settings.journal_topics)
        self._listener_threads: list[threading.Thread] = []
        self._listener_stop = threading.Event()
        self.summary_every = 10
        self._started_at = time.monotonic()

    def start(self) -> None:
        self._started_at = time.monotonic()
        if isinstance(self.executor, EmbeddedExecutor):
            recover_dead_executors(self.store, self.clock, self.settings.node, self.executor.executor_id)
        self.executor.start()
        if self.listener is not None:
            self._listener_threads = self.listener.start(self._listener_stop)
        if self.journal_client is not None:
            thread = threading.Thread(target=self._run_journal_client, name="ostinato-journal-client", daemon=True)
            thread.start()
            self._listener_threads.append(thread)
        if self.deadline_scheduler is not None:
            self.deadline_scheduler.start()

    def run_once(self, *, wait: float = 60.0) -> int:
        """One pass of every runner and of the orchestrator, then wait (at most ``wait`` s) for
        the dispatched runs and visits to end. Returns how many runs and visits were dispatched."""
        runs_before, visits_before = self._finished()
        runs = sum(runner.run_once() for runner in self.runners)
        visits = 0
        if self.orchestrator is not None:
            passed = self.orchestrator.run_once().values()
            runs += sum(d.tasks for d in passed)
            visits = sum(sum(d.visits.values()) for d in passed)
        started = 0
        if self.deadline_scheduler is not None:
            started = self.deadline_scheduler.run_once()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            runs_now, visits_now = self._finished()
            if (runs_now is None or runs_before is None
                    or (runs_now - runs_before >= runs and visits_now - visits_before >= visits)):
                break
            time.sleep(0.05)
        if self.deadline_scheduler is not None:
            self.deadline_scheduler.wait_runs(max(deadline - time.monotonic(), 0.0))
        return runs + visits + started

    def _finished(self) -> tuple[int | None, int]:
        """Runs and visits whose end was recorded so far (None: this process cannot tell)."""
        if isinstance(self.executor, EmbeddedExecutor):
            return self.executor.completed, self.executor.visits_completed
        if self.listener is not None:
            return self.listener.runs_recorded, self.listener.visits_recorded
        return None, 0

    def run_until(self, stop: threading.Event) -> None:
        poll = self.settings.poll_interval.total_seconds()
        started: list[threading.Thread] = []
        services: list[TaskRunner | Orchestrator] = [*self.runners]
        if self.orchestrator is not None:
            services.append(self.orchestrator)
        for service in services:
            thread = threading.Thread(target=service.run_forever, args=(stop, poll), name=f"ostinato-{service.name}", daemon=True)
            thread.start()
            started.append(thread)
        if self.deadline_scheduler is not None:
            thread = threading.Thread(target=self._run_schedules, args=(stop,), name="ostinato-scheduler", daemon=True)
            thread.start()
            started.append(thread)
        seen = self._outcomes()
        while not stop.wait(self.summary_every):
            now = self._outcomes()
            delta = {name: now.get(name, 0) - seen.get(name, 0) for name in now}
            seen = now
            if any(delta.values()):
                log.info("last %ds: %s", self.summary_every, ", ".join(f"{n} {s}" for s, n in sorted(delta.items()) if n))
        for thread in started:
            thread.join()

    def _run_journal_client(self) -> None:
        assert self.journal_client is not None
        try:
            with self.journal_client:
                self.journal_client.run_forever(self._listener_stop)
        except Exception:
            log.exception("journal client: stopped by an error")

    def _run_schedules(self, stop: threading.Event) -> None:
        scheduler = self.deadline_scheduler
        assert scheduler is not None
        while not stop.is_set():
            try:
                scheduler.run_once()
                wait = scheduler.sleep_for(self.clock.now())
            except Exception:
                log.exception("scheduler: pass failed; retrying in 5s")
                wait = 5.0
            stop.wait(min(wait, self.settings.poll_interval.total_seconds() * 5))
        scheduler.stop_runs()

    def _outcomes(self) -> dict[str, int]:
        if not isinstance(self.executor, EmbeddedExecutor):
            listener = self.listener
            return ({"runs ended": listener.runs_recorded, "visits ended": listener.visits_recorded}
                    if listener is not None else {"sent to Celery": self.executor.sent})
        counts = {f"{status.value} runs": n for status, n in self.executor.outcomes.items()}
        counts.update({f"{status.value} visits": n for status, n in self.executor.visit_outcomes.items()})
        return counts

    def stop(self, grace: float = 30.0) -> Summary:
        self.executor.stop(grace)
        self._listener_stop.set()
        if self._listener_threads:
            for thread in self._listener_threads:
                thread.join(10)
        orchestrator = self.orchestrator
        runs_finished, visits_finished = self._finished()
        return Summary(
            dispatched=sum(r.dispatched for r in self.runners)
            + (orchestrator.dispatched - orchestrator.visits_dispatched if orchestrator else 0),
            finished=runs_finished or 0,
            seconds=time.monotonic() - self._started_at,
            visits_dispatched=orchestrator.visits_dispatched if orchestrator else 0,
            visits_finished=visits_finished,
            schedule_runs=self.deadline_scheduler.started if self.deadline_scheduler else 0,
        )
