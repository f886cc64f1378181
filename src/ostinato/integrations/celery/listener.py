"""The ``scheduler-listener`` (see docs/design/tasks.md): what Celery workers report, into the store.

Two streams, each in its own thread, both landing in the store functions the
embedded executor uses:

- **outcomes** (:data:`~ostinato.integrations.celery.app.OUTCOMES_QUEUE`, durable):
  each message is a run's start, a run's final event (eventful, uneventful,
  failed, permfailed) and/or a visit status. Batches go to ``record_run_events`` and
  ``record_visit_statuses`` and are acknowledged only once stored, so a
  listener that dies or restarts loses nothing; a batch stored but not
  acknowledged comes back and changes nothing (both verbs are idempotent: a
  report for a run already final is ignored, a visit status is applied at its
  own date). A message that cannot be read is logged with the field at fault
  and dropped (it can never succeed).
- **Celery events** (``task-started``, ``task-failed``, worker heartbeats):
  ``task-started`` marks a run started by ``celery:<worker hostname>`` (the
  durable start message says it too; whichever comes first wins);
  ``task-failed`` (the worker's own wrapper failed, so no outcome will come)
  ends a run failed. On Redis these events are fire-and-forget: one missed
  while the listener is down only loses the ``started`` mark, never an outcome.
  Heartbeats say which workers live: runs started by a worker silent for
  ``worker_lost_after`` are marked lost (a failure, retried), so a killed
  worker's runs come back well before ``lost_run_timeout``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timedelta
from typing import Any

from celery import Celery
from kombu import Consumer, Message

from ...domain.clock import Clock
from ...domain.errors import ValidationError
from ...domain.tasks import RunEvent, TaskRunStatus
from ...domain.visits import FeedbackPolicy
from ...services import service_metrics as metrics
from ...store import Store
from .app import BACKEND_PREFIX, Outcome, dispatcher_id, event_time, worker_backend_id
from .worker import outcomes_queue

log = logging.getLogger(__name__)
_SENT_PREFIX = dispatcher_id("")


class CeleryListener:
    name = "listener"

    def __init__(self, store: Store, app: Celery, clock: Clock, feedback: FeedbackPolicy, *,
                 worker_lost_after: timedelta = timedelta(seconds=30), batch_size: int = 1000,
                 flush_interval: float = 0.2):
        self.store = store
        self.app = app
        self.clock = clock
        self.feedback = feedback
        self.worker_lost_after = worker_lost_after
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        #: since when the event stream has been followed without a break (None: it is not)
        self._events_since: datetime | None = None
        self._workers: dict[str, datetime] = {}
        self._events: list[RunEvent] = []
        self._lock = threading.Lock()
        #: what was recorded so far
        self.runs_recorded = 0
        self.visits_recorded = 0
        self.started_recorded = 0
        self.rejected = 0
        self.lost_marked = 0

    # -- the outcomes queue -------------------------------------------------------
    def consume_outcomes(self, stop: threading.Event) -> None:
        """Record outcome messages in batches until ``stop``; reconnects after broker failures."""
        while not stop.is_set():
            try:
                with self.app.connection_for_read() as connection:
                    connection.ensure_connection(max_retries=1, timeout=5,
                                                 interval_start=0.2, interval_step=0.2)  # type: ignore[arg-type]  # kombu takes float seconds
                    self._consume_outcomes(connection, stop)
            except Exception as exc:
                if stop.is_set():
                    return
                log.error("%s: outcomes: %s: %s; reconnecting in 2s", self.name, type(exc).__name__, exc)
                stop.wait(2.0)

    def _consume_outcomes(self, connection: Any, stop: threading.Event) -> None:
        pending: list[tuple[Message, Outcome | None]] = []

        def on_message(body: Any, message: Message) -> None:
            try:
                if isinstance(body, (str, bytes)):
                    body = json.loads(body)
                pending.append((message, Outcome.from_message(body)))
            except (ValidationError, ValueError) as exc:
                self.rejected += 1
                log.error("%s: dropped an outcome that cannot be read: %s", self.name, exc)
                pending.append((message, None))

        channel = connection.channel()
        with Consumer(channel, queues=[outcomes_queue()], callbacks=[on_message], accept=["json"],
                      prefetch_count=self.batch_size):
            last_flush = time.monotonic()
            while not stop.is_set():
                try:
                    connection.drain_events(timeout=self.flush_interval)
                except TimeoutError:
                    pass
                if pending and (len(pending) >= self.batch_size or time.monotonic() - last_flush >= self.flush_interval):
                    self._store_outcomes(pending, stop)
                    pending = []
                    last_flush = time.monotonic()
                elif not pending:
                    last_flush = time.monotonic()
            if pending:
                self._store_outcomes(pending, stop)

    def _store_outcomes(self, pending: list[tuple[Message, Outcome | None]], stop: threading.Event) -> None:
        outcomes = [o for _, o in pending if o is not None]
        runs = [event for o in outcomes for event in o.run_events()]
        visits = [o.visit_status for o in outcomes if o.visit_status is not None]
        backoff = 0.5
        while True:
            try:
                if runs:
                    self.store.record_run_events(runs)
                if visits:
                    self.store.record_visit_statuses(visits, self.feedback, now=self.clock.now())
                break
            except Exception:
                log.exception("%s: could not record %d outcomes; retrying in %.1fs", self.name, len(outcomes), backoff)
                if stop.wait(backoff):
                    return  # not acknowledged: they come back to the next listener
                backoff = min(backoff * 2, 10.0)
        metrics.outcomes("run", runs)
        metrics.outcomes("visit", visits)
        for message, _ in pending:
            message.ack()
        self.runs_recorded += sum(1 for o in outcomes if o.run is not None and o.run.status.is_final)
        self.visits_recorded += len(visits)

    # -- Celery events --------------------------------------------------------------
    def consume_events(self, stop: threading.Event) -> None:
        """Follow Celery's event stream until ``stop``; reconnects after broker failures."""
        handlers = {"task-started": self._on_started, "task-failed": self._on_failed,
                    "worker-online": self._on_worker, "worker-heartbeat": self._on_worker,
                    "worker-offline": self._on_worker_offline}
        while not stop.is_set():
            try:
                with self.app.connection_for_read() as connection:
                    connection.ensure_connection(max_retries=1, timeout=5,
                                                 interval_start=0.2, interval_step=0.2)  # type: ignore[arg-type]  # kombu takes float seconds
                    receiver = self.app.events.Receiver(connection, handlers=handlers)
                    self._events_since = self.clock.now()
                    # kombu calls on_iteration at least once a second, events or not
                    receiver.on_iteration = lambda receiver=receiver: setattr(receiver, "should_stop", stop.is_set())
                    for _ in receiver.itercapture(limit=None, timeout=None, wakeup=False):
                        if stop.is_set():
                            break
            except Exception as exc:
                self._events_since = None
                if stop.is_set():
                    return
                log.error("%s: events: %s: %s; reconnecting in 2s", self.name, type(exc).__name__, exc)
                stop.wait(2.0)

    def _on_started(self, event: dict[str, Any]) -> None:
        run_id = _run_id(event)
        if run_id is None:
            return
        self._seen(event.get("hostname"))
        with self._lock:
            self._events.append(RunEvent(run_id, TaskRunStatus.STARTED, event_time(event.get("timestamp"), self.clock.now()),
                                         worker_backend_id(str(event.get("hostname") or "unknown"))))

    def _on_failed(self, event: dict[str, Any]) -> None:
        run_id = _run_id(event)
        if run_id is None:
            if str(event.get("uuid", "")).startswith("visit:"):
                log.error("%s: a visit failed in the worker itself (%s); it is grabbed again after the in-flight timeout",
                          self.name, event.get("exception"))
            return
        with self._lock:
            self._events.append(RunEvent(run_id, TaskRunStatus.FAILED, event_time(event.get("timestamp"), self.clock.now()),
                                         worker_backend_id(str(event.get("hostname") or "unknown")),
                                         {"error": str(event.get("exception") or "the worker failed the task")}))

    def _on_worker(self, event: dict[str, Any]) -> None:
        self._seen(event.get("hostname"))

    def _on_worker_offline(self, event: dict[str, Any]) -> None:
        hostname = event.get("hostname")
        if isinstance(hostname, str):
            with self._lock:  # silent from now: its runs are lost once worker_lost_after has passed
                self._workers[hostname] = self.clock.now()

    def _seen(self, hostname: Any) -> None:
        if isinstance(hostname, str):
            with self._lock:
                self._workers[hostname] = self.clock.now()

    # -- flushing and reaping ------------------------------------------------------
    def flush(self) -> int:
        """Record the started and failed marks gathered from events; returns how many."""
        with self._lock:
            events, self._events = self._events, []
        if not events:
            return 0
        try:
            self.store.record_run_events(events)
        except Exception:
            log.exception("%s: could not record %d run events; retrying", self.name, len(events))
            with self._lock:
                self._events[:0] = events
            return 0
        metrics.outcomes("run", events)
        self.started_recorded += len(events)
        return len(events)

    def reap_dead_workers(self) -> list[int]:
        """Mark lost the runs started by workers silent for ``worker_lost_after``.

        Only while the event stream has been followed for that long without a
        break: a listener that cannot hear heartbeats does not judge workers."""
        now = self.clock.now()
        since = self._events_since
        if since is None or now - since < self.worker_lost_after:
            return []
        dead = []
        for backend_id in self.store.in_flight_backend_ids(BACKEND_PREFIX):
            if backend_id.startswith(_SENT_PREFIX):
                continue
            hostname = backend_id[len(BACKEND_PREFIX):]
            with self._lock:
                last = self._workers.get(hostname)
            if last is None or now - last > self.worker_lost_after:
                dead.append(backend_id)
        if not dead:
            return []
        lost = self.store.mark_lost_runs(now, timedelta(0), backend_ids=dead)
        if lost:
            self.lost_marked += len(lost)
            log.warning("%s: %d runs of silent workers %s were marked lost", self.name, len(lost), ", ".join(dead))
        return lost

    def maintain(self, stop: threading.Event, reap_every: float = 5.0) -> None:
        next_reap = time.monotonic()
        while not stop.wait(self.flush_interval):
            self.flush()
            if time.monotonic() >= next_reap:
                next_reap = time.monotonic() + reap_every
                try:
                    self.reap_dead_workers()
                except Exception:
                    log.exception("%s: could not look for runs of dead workers", self.name)
        self.flush()

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        """The three threads of the listener; they end when ``stop`` is set."""
        threads = [threading.Thread(target=target, args=(stop,), name=f"ostinato-listener-{part}", daemon=True)
                   for part, target in (("outcomes", self.consume_outcomes), ("events", self.consume_events),
                                        ("maintain", self.maintain))]
        for thread in threads:
            thread.start()
        return threads


def _run_id(event: dict[str, Any]) -> int | None:
    uuid = str(event.get("uuid", ""))
    return int(uuid) if uuid.isdigit() else None
