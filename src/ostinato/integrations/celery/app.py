"""The Celery side shared by dispatchers, workers and the listener: the app, queue names,
message headers, the outcome message, and queue depths read from the broker.

- **Queues.** Work of a task type goes to the queue named after its
  ``backend_name``; prioritised work ("save code now") to
  ``save_code_now:<backend_name>``, the queues swh-scheduler's runners use
  (docs/reference/swh-compat-celery.md). Task runs and origin visits are Celery
  tasks named ``backend_name``; a schedule's run is the task
  :data:`SCHEDULE_RUN_TASK` sent to the same queue.
- **Headers.** Each message carries an ``ostinato`` header saying what it is
  (``kind``: ``run``, ``visit`` or ``schedule``) and what the worker needs to
  read the result (task type, visit type). The Celery task id of a run is the
  run's id, so a duplicate send is detectable.
- **Outcomes.** A worker publishes each task run's outcome and each visit's
  status as a JSON message on the durable queue :data:`OUTCOMES_QUEUE`; the
  listener records them and acknowledges only afterwards. Celery's own events
  (``task-started``, ``task-failed``, heartbeats) are fire-and-forget on Redis,
  so they carry only what may be lost: when a run started, and which workers live.
- **Depth.** :class:`QueueDepths` reads a queue's length from the broker with a
  passive queue declare (Redis: the lists' length; RabbitMQ: the message count,
  no management plugin), cached briefly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from celery import Celery

from ...domain.durations import parse_iso_time
from ...domain.errors import QueueUnavailable, ValidationError
from ...domain.limits import check_json_value, check_stored_text, check_time_range, check_whole
from ...domain.tasks import RunEvent, TaskRunStatus
from ...domain.visits import VisitStatus, parse_visit_status

if TYPE_CHECKING:
    from kombu import Connection

log = logging.getLogger(__name__)

#: the durable queue of outcomes, from workers to the listener
OUTCOMES_QUEUE = "ostinato.outcomes"
#: the Celery task that runs a schedule's job on a worker (it pings from the worker)
SCHEDULE_RUN_TASK = "ostinato.schedule-run"
#: the header that says what a message is
HEADER = "ostinato"
#: backend ids of Celery runs: ``celery:<worker hostname>`` once started, :data:`DISPATCHED_ID` before
BACKEND_PREFIX = "celery:"


def dispatcher_id(node: str) -> str:
    """The backend id of runs sent by a dispatcher of ``node`` and not started yet."""
    return f"{BACKEND_PREFIX}sent-by-{node}"


def worker_backend_id(hostname: str) -> str:
    return f"{BACKEND_PREFIX}{hostname}"


#: the prefix of a priority queue's name: swh-scheduler's (docs/reference/swh-compat-celery.md)
PRIORITY_QUEUE_PREFIX = "save_code_now:"


def queue_name(backend_name: str, *, priority: bool = False) -> str:
    """The queue of a task type's work: its backend name, or ``save_code_now:<backend_name>``."""
    return f"{PRIORITY_QUEUE_PREFIX}{backend_name}" if priority else backend_name


def make_celery_app(broker_url: str, *, name: str = "ostinato") -> Celery:
    """A Celery app for Ostinato's dispatchers and workers.

    JSON only (no pickle), one message prefetched per worker process (so a
    queue's length is the backlog), messages acknowledged when a worker takes
    them (a worker killed mid-run loses the run to the lost-run detection, which
    retries it, rather than running it twice), task events on, no result backend
    (outcomes travel on :data:`OUTCOMES_QUEUE`).
    """
    if not broker_url:
        raise ValidationError("broker_url", "a broker URL such as redis://127.0.0.1:6379/0", broker_url or None)
    app = Celery(name, broker=broker_url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=False,
        worker_prefetch_multiplier=1,
        worker_send_task_events=True,
        task_send_sent_event=False,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        # RabbitMQ: a send returns once the broker has the message on disk (publisher confirms); Redis ignores it
        broker_transport_options={"visibility_timeout": 12 * 3600, "confirm_publish": True},
        task_create_missing_queues=True,
        enable_utc=True,
    )
    return app


# -- headers -----------------------------------------------------------------
def run_header(task_type: str) -> dict[str, Any]:
    return {"kind": "run", "task_type": task_type}


def visit_header(visit_type: str) -> dict[str, Any]:
    return {"kind": "visit", "visit_type": visit_type}


def schedule_header(schedule: str) -> dict[str, Any]:
    return {"kind": "schedule", "schedule": schedule}


# -- outcomes ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Outcome:
    """What a worker reports: a run's start, a run's final event, a visit's status, or both of
    the last two (save code now)."""

    run: RunEvent | None = None
    visit_status: VisitStatus | None = None
    #: when the worker began the run (the ``task-started`` event may come later, or never)
    started: datetime | None = None

    def run_events(self) -> list[RunEvent]:
        """The run's events for ``record_run_events``: started (when known), then the final one."""
        if self.run is None:
            return []
        if self.started is None:
            return [self.run]
        return [RunEvent(self.run.run_id, TaskRunStatus.STARTED, self.started, self.run.backend_id), self.run]

    def to_message(self) -> dict[str, Any]:
        message: dict[str, Any] = {}
        if self.run is not None:
            message["run"] = {"id": self.run.run_id, "status": self.run.status.value, "at": self.run.at.isoformat(),
                              "backend_id": self.run.backend_id, "metadata": dict(self.run.metadata or {})}
            if self.started is not None:
                message["run"]["started"] = self.started.isoformat()
        if self.visit_status is not None:
            v = self.visit_status
            message["visit_status"] = {"origin": v.origin, "visit": v.visit, "type": v.type,
                                       "status": v.status.value, "date": v.date.isoformat(),
                                       "snapshot": v.snapshot.hex() if v.snapshot is not None else None}
            if v.changes is not None:
                message["visit_status"]["changes"] = v.changes
            if v.newest_change_at is not None:
                message["visit_status"]["newest_change_at"] = v.newest_change_at.isoformat()
            if v.change_times is not None:
                message["visit_status"]["change_times"] = [t.isoformat() for t in v.change_times]
        return message

    @classmethod
    def from_message(cls, message: Any) -> Outcome:
        """Read an outcome message; raise ValidationError naming the field at fault."""
        if not isinstance(message, Mapping) or not ({"run", "visit_status"} & set(message)):
            raise ValidationError("outcome", "an object with run and/or visit_status", message)
        run = started = None
        if message.get("run") is not None:
            body = message["run"]
            if not isinstance(body, Mapping):
                raise ValidationError("run", "an object with id, status and at", body)
            run_id = check_whole(body.get("id"), "run.id", 1)
            try:
                status = TaskRunStatus(body.get("status"))
            except (ValueError, TypeError):
                raise ValidationError("run.status", "a task run status", body.get("status")) from None
            if not status.is_final and status is not TaskRunStatus.STARTED:
                raise ValidationError("run.status", "started or a final status (eventful, uneventful, failed, "
                                      "permfailed, lost)", status.value)
            if not isinstance(body.get("at"), str):
                raise ValidationError("run.at", "an ISO 8601 time with a zone", body.get("at"))
            at = check_time_range(parse_iso_time(body["at"], "run.at"), "run.at")
            metadata = body.get("metadata")
            metadata = {} if metadata is None else metadata
            if not isinstance(metadata, Mapping):
                raise ValidationError("run.metadata", "an object", metadata)
            check_json_value(metadata, "run.metadata")
            if body.get("started") is not None:
                if not isinstance(body["started"], str):
                    raise ValidationError("run.started", "an ISO 8601 time with a zone", body["started"])
                started = check_time_range(parse_iso_time(body["started"], "run.started"), "run.started")
            backend_id = body.get("backend_id")
            if isinstance(backend_id, str):
                check_stored_text(backend_id, "run.backend_id")
            run = RunEvent(run_id, status, at, backend_id if isinstance(backend_id, str) else None, dict(metadata))
        visit_status = None
        if message.get("visit_status") is not None:
            try:
                visit_status = parse_visit_status(message["visit_status"])
            except ValidationError as exc:
                raise ValidationError(f"visit_status.{exc.field}", exc.expected, exc.got) from None
        return cls(run, visit_status, started)


def event_time(timestamp: Any, fallback: datetime) -> datetime:
    """A Celery event's ``timestamp`` (seconds since the epoch, worker's clock) as a time."""

    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool) and timestamp > 0:
        return datetime.fromtimestamp(timestamp, UTC)
    return fallback


# -- queue depth ---------------------------------------------------------------
class QueueDepths:
    """Queue lengths read from the broker, each reused for ``cache_seconds``.

    A queue the broker does not know is empty (Redis deletes an empty list).
    A broker that cannot be reached raises :class:`QueueUnavailable`.
    """

    def __init__(self, app: Celery, *, cache_seconds: float = 2.0, monotonic=time.monotonic):
        self._app = app
        self._cache_seconds = cache_seconds
        self._monotonic = monotonic
        self._cache: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._connection: Connection | None = None

    def depth(self, queue: str) -> int:
        now = self._monotonic()
        with self._lock:
            cached = self._cache.get(queue)
            if cached is not None and now - cached[0] < self._cache_seconds:
                return cached[1]
            count = self._read(queue)
            self._cache[queue] = (now, count)
            return count

    def forget(self, queue: str, added: int = 0) -> None:
        """Count ``added`` more messages in the cached depth (what this process just sent)."""
        with self._lock:
            cached = self._cache.get(queue)
            if cached is not None:
                self._cache[queue] = (cached[0], cached[1] + added)

    def _read(self, queue: str) -> int:
        from amqp.exceptions import ChannelError

        try:
            if self._connection is None:
                connection = self._app.connection_for_read()
                connection.ensure_connection(max_retries=1, timeout=5,
                                             interval_start=0.2, interval_step=0.2)  # type: ignore[arg-type]  # kombu takes float seconds
                self._connection = connection
            channel = self._connection.default_channel  # the stubs type it as a StdChannel, which declares nothing
            declared = channel.queue_declare(queue=queue, passive=True)  # type: ignore[attr-defined]  # a real channel does
            return int(declared.message_count)
        except ChannelError as exc:
            if getattr(exc, "reply_code", None) == 404 or "NOT_FOUND" in str(exc):
                if self._connection is not None and self._connection.transport.driver_type != "redis":
                    self._reset()  # RabbitMQ closes the channel after a failed passive declare
                return 0
            self._reset()
            raise QueueUnavailable(f"could not read the length of queue {queue!r}: {exc}") from exc
        except Exception as exc:
            self._reset()
            raise QueueUnavailable(f"could not read the length of queue {queue!r} from the broker: "
                                   f"{type(exc).__name__}: {exc}") from exc

    def _reset(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.release()
            except Exception:  # already broken
                pass

    def close(self) -> None:
        with self._lock:
            self._reset()
