"""Prometheus metrics measured inside the service processes (runner, orchestrator, schedule
scheduler, Celery listener, journal client), in a registry of their own, :data:`REGISTRY`,
served over HTTP by ``--metrics-port`` (setting ``metrics_port``, ``OSTINATO_METRICS_PORT``).

- ``ostinato_dispatches_total{loop,task_type,visit_type,policy}``: work handed to an executor:
  task runs (``loop`` runner or priority_runner; ``policy`` the task's, oneshot or recurring),
  save-code-now tasks and origin visits (``loop`` orchestrator; ``policy`` the visit policy that
  picked the origin, ``priority`` for the tasks), schedule runs (``loop`` scheduler, ``policy``
  schedule);
- ``ostinato_outcomes_total{kind,status}``: outcomes stored: ``kind`` run (a task run's status:
  started, eventful, uneventful, failed, lost…), visit (a visit status: full, partial, failed…)
  or schedule_run (the end a scheduler stored: succeeded, failed, stopped, stolen, submitted);
- ``ostinato_pick_seconds{loop}`` (histogram): time of one grab: the runner's
  ``grab_ready_tasks``, the orchestrator's ``grab_next_visits``, the scheduler's ``pick_schedules``;
- ``ostinato_queue_depth{queue}``: work waiting in an executor's queue, as last read before a
  dispatch (``queue`` the task type, ``:priority`` appended for a priority queue);
- ``ostinato_journal_lag_messages{topic,partition}``: the journal client's lag, per partition:
  messages it has not stored and committed yet (the partition's end, as its last fetch saw it,
  less the committed offset), set at each commit;
- ``ostinato_loop_seconds{loop}`` (histogram): time of one pass of a loop (the journal client's:
  storing one batch and committing its offsets);
- ``ostinato_journal_fields_dropped_total{field,kind}``: bad ``newest_change_at`` / ``change_times``
  the journal client dropped from statuses it kept, by field and kind (the field at fault and what
  was expected of it).

Durations are read on the monotonic clock: they measure time spent, they are not moments the
scheduling rules read (those come from the injected :class:`~ostinato.domain.clock.Clock`).
Counters live for the process; the API's ``/metrics`` serves the store's state instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

T = TypeVar("T")

REGISTRY = CollectorRegistry()

#: latency buckets of a grab or a pass: from a millisecond to a minute
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

DISPATCHES = Counter("ostinato_dispatches", "Work handed to an executor: task runs, visits, schedule runs.",
                     ["loop", "task_type", "visit_type", "policy"], registry=REGISTRY)
OUTCOMES = Counter("ostinato_outcomes", "Outcomes stored: task run statuses (kind run) and visit statuses (kind visit).",
                   ["kind", "status"], registry=REGISTRY)
PICK_SECONDS = Histogram("ostinato_pick_seconds", "Time of one grab of ready work from the store, per loop.",
                         ["loop"], buckets=BUCKETS, registry=REGISTRY)
QUEUE_DEPTH = Gauge("ostinato_queue_depth", "Work waiting in an executor's queue, as last read.", ["queue"],
                    registry=REGISTRY)
JOURNAL_LAG = Gauge("ostinato_journal_lag_messages", "Messages of a journal partition this client has not stored and "
                    "committed yet (the partition's end less the committed offset), as of its last commit.",
                    ["topic", "partition"], registry=REGISTRY)
FIELDS_DROPPED = Counter("ostinato_journal_fields_dropped", "Bad newest_change_at / change_times the journal client "
                         "dropped from statuses it kept, by field and kind.", ["field", "kind"], registry=REGISTRY)
LOOP_SECONDS = Histogram("ostinato_loop_seconds", "Time of one pass of a service loop.", ["loop"], buckets=BUCKETS,
                         registry=REGISTRY)


@contextmanager
def timed(histogram: Histogram, loop: str) -> Iterator[None]:
    """Observe the time the block took, on the monotonic clock, in ``histogram`` under ``loop``."""
    started = time.monotonic()
    try:
        yield
    finally:
        histogram.labels(loop).observe(time.monotonic() - started)


def picking(loop: str) -> Any:
    """Time one grab of ``loop`` (:data:`PICK_SECONDS`)."""
    return timed(PICK_SECONDS, loop)


def looping(loop: str) -> Any:
    """Time one pass of ``loop`` (:data:`LOOP_SECONDS`)."""
    return timed(LOOP_SECONDS, loop)


def dispatched(loop: str, count: int, *, task_type: str = "", visit_type: str = "", policy: str = "") -> None:
    if count:
        DISPATCHES.labels(loop, task_type, visit_type, policy).inc(count)


def dispatched_each(loop: str, items: Iterable[Any], key: Callable[[Any], tuple[str, str, str]]) -> None:
    """Count ``items`` by ``key(item)`` = (task_type, visit_type, policy)."""
    counts: dict[tuple[str, str, str], int] = {}
    for item in items:
        labels = key(item)
        counts[labels] = counts.get(labels, 0) + 1
    for (task_type, visit_type, policy), count in counts.items():
        dispatched(loop, count, task_type=task_type, visit_type=visit_type, policy=policy)


def queue_depth(queue: str, depth: int) -> None:
    QUEUE_DEPTH.labels(queue).set(depth)


def journal_lag(topic: str, partition: int, lag: int) -> None:
    JOURNAL_LAG.labels(topic, str(partition)).set(max(lag, 0))


def field_dropped(field: str, kind: str) -> None:
    FIELDS_DROPPED.labels(field=field, kind=kind).inc()


def outcomes(kind: str, items: Sequence[Any]) -> None:
    """Count stored outcomes by their ``status`` (an enum or text)."""
    counts: dict[str, int] = {}
    for item in items:
        status = getattr(item.status, "value", item.status)
        counts[str(status)] = counts.get(str(status), 0) + 1
    for status, count in counts.items():
        OUTCOMES.labels(kind, status).inc(count)


def outcome(kind: str, status: Any) -> None:
    """Count one stored outcome (``status`` an enum or text)."""
    OUTCOMES.labels(kind, str(getattr(status, "value", status))).inc()


def counting_outcomes(kind: str, report: Callable[[Sequence[Any]], T]) -> Callable[[Sequence[Any]], T]:
    """``report`` (a store verb taking a batch of outcomes), counting the batch once stored."""
    def report_and_count(items: Sequence[Any], *args: Any, **kwargs: Any) -> T:
        result = report(items, *args, **kwargs)
        outcomes(kind, items)
        return result

    return report_and_count


def serve(port: int, host: str = "127.0.0.1") -> Any:
    """Serve :data:`REGISTRY` at ``http://host:port/metrics`` from a daemon thread; returns the server."""
    server, _thread = start_http_server(port, addr=host, registry=REGISTRY)
    return server
