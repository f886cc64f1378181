"""The chaos harness's journal: loaders publish their visit statuses to Kafka, journal clients feed them back.

Each simulated visit (``chaos_jobs.load``, in the orchestrator's workers) publishes its status to a
Tansu broker the harness starts (:func:`publish`, JSON keyed by origin, as a loader writes the journal),
waits for the broker's acknowledgement, and only then writes it to the harness's ``journal.jsonl`` with
the partition and offset the broker gave it. Two ``ostinato journal-client`` processes, one consumer
group, feed the topic back into the visit stats; the harness kills them like every other service.

The checks, after the services have settled:

- :func:`unconsumed`: statuses the broker acknowledged at an offset the group has not committed yet.
  The clients commit a batch only once the store has it, so a committed offset means stored;
- :func:`statuses_lost`: origins whose visit stats do not show their newest published status
  (``last_status_date``, the newest status applied, older than it): a status the store lost, whatever path
  was to bring it;
- :func:`visit_record` and :func:`handed_out_twice`: every visit's start and end, from the loaders'
  own record (``visits.log``); an origin visited again within the grab's in-flight timeout of a previous
  visit was handed out twice (its grab must keep it from every other grab until its status comes back,
  or the timeout passes).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostinato.store.postgresql import PostgresStore

TOPIC = "chaos.visit_status"
PARTITIONS = 4
GROUP = "chaos-journal"
#: the variable that hands the broker's address to the loaders (the orchestrator's environment)
BROKERS_ENV = "CHAOS_JOURNAL_BROKERS"
#: how long a loader waits for the broker to acknowledge its status before the visit fails
ACK_TIMEOUT = 30.0

_producer: Any = None
_producer_lock = threading.Lock()


def publish(url: str, status: dict[str, Any]) -> tuple[int, int] | None:
    """Send one status and wait for the broker's acknowledgement; its (partition, offset), or None when the
    harness runs without a broker. Raises when the broker does not acknowledge it (the visit then fails)."""
    brokers = os.environ.get(BROKERS_ENV)
    if not brokers:
        return None
    from confluent_kafka import Producer  # the kafka extra, installed with the test environment

    global _producer
    with _producer_lock:
        if _producer is None:
            _producer = Producer({"bootstrap.servers": brokers, "linger.ms": 2, "enable.idempotence": True,
                                  "message.timeout.ms": int(ACK_TIMEOUT * 1000)})
    outcome: dict[str, Any] = {}

    def delivered(error, message) -> None:
        outcome["error"] = error
        outcome["at"] = (message.partition(), message.offset())

    _producer.produce(TOPIC, json.dumps(status).encode(), key=url.encode(), on_delivery=delivered)
    deadline = time.monotonic() + ACK_TIMEOUT + 5
    while "at" not in outcome:  # a delivery report may be served by another worker's poll: wait for ours
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url}: the broker did not acknowledge the visit status")
        _producer.poll(0.05)
    if outcome["error"] is not None:
        raise RuntimeError(f"{url}: the broker refused the visit status: {outcome['error']}")
    return outcome["at"]


def client_argv(python: list[str], brokers: str) -> list[str]:
    """One journal client of the harness's group (short session timeout: a killed one hands over soon)."""
    return [*python, "journal-client", "--brokers", brokers, "--group-id", GROUP, "--topic", TOPIC,
            "--session-timeout", "6s", "--batch-timeout", "200ms"]


# -- checks ---------------------------------------------------------------------------------
def published(record_dir: Path) -> list[dict[str, Any]]:
    """The statuses the broker acknowledged, each with its ``partition`` and ``offset``."""
    path = record_dir / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def committed_offsets(brokers: str) -> dict[int, int]:
    """The group's committed offset of each partition (-1001 where it has none)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": brokers, "group.id": GROUP})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)}
    finally:
        consumer.close()


def unconsumed(statuses: list[dict[str, Any]], offsets: dict[int, int]) -> list[dict[str, Any]]:
    return [s for s in statuses if s.get("offset") is not None and s["offset"] >= offsets.get(s["partition"], -1)]


def wait_consumed(brokers: str, statuses: list[dict[str, Any]], timeout: float) -> dict[int, int]:
    """Wait until the group has committed past every published status (or the timeout); the offsets."""
    deadline = time.monotonic() + timeout
    while True:
        offsets = committed_offsets(brokers)
        if not unconsumed(statuses, offsets) or time.monotonic() > deadline:
            return offsets
        time.sleep(1.0)


def statuses_lost(store, statuses: list[dict[str, Any]]) -> list[str]:
    """Origins whose visit stats are older than their newest published status."""
    newest: dict[tuple[str, str], datetime] = {}
    for status in statuses:
        key, date = (status["origin"], status["type"]), datetime.fromisoformat(status["date"])
        if key not in newest or date > newest[key]:
            newest[key] = date
    seen = {key: row[2] for key, row in stats_rows(store, sorted(newest), "last_status_date").items()}
    return [url for (url, kind), date in newest.items()
            if seen.get((url, kind)) is None or seen[(url, kind)] < date]


@dataclass(frozen=True)
class Visit:
    url: str
    pid: int
    start: float
    end: float | None  # None: its process died during the visit


def visit_record(record_dir: Path) -> list[Visit]:
    starts: dict[str, tuple[str, int, float]] = {}
    ends: dict[str, float] = {}
    path = record_dir / "visits.log"
    for line in path.read_text().splitlines() if path.exists() else []:
        parts = line.split()
        if parts[0] == "start" and len(parts) == 5:
            starts[parts[1]] = (parts[2], int(parts[3]), float(parts[4]))
        elif parts[0] == "end" and len(parts) == 3:
            ends[parts[1]] = float(parts[2])
    return [Visit(url, pid, start, ends.get(token)) for token, (url, pid, start) in starts.items()]


def handed_out_twice(visits: list[Visit], in_flight_timeout: float, slack: float = 5.0) -> list[tuple[Visit, Visit]]:
    """Consecutive visits of one origin that began within the in-flight timeout (less a slack for the time a
    grabbed origin waits in the queue) of each other: the second grab came while the first still held it."""
    by_url: dict[str, list[Visit]] = defaultdict(list)
    for visit in visits:
        by_url[visit.url].append(visit)
    pairs = []
    for runs in by_url.values():
        runs.sort(key=lambda v: v.start)
        pairs += [(a, b) for a, b in zip(runs, runs[1:], strict=False) if b.start - a.start < in_flight_timeout - slack]
    return pairs


def revisited(visits: list[Visit]) -> int:
    """Origins visited more than once (after an in-flight timeout, or handed out twice)."""
    counts: dict[str, int] = defaultdict(int)
    for visit in visits:
        counts[visit.url] += 1
    return sum(1 for n in counts.values() if n > 1)


def stats_rows(store: PostgresStore, keys: list[tuple[str, str]], columns: str = "*") -> dict[tuple[str, str], tuple]:
    """The visit-stats rows of ``keys`` (url and visit type first, then ``columns``; by default every column,
    as stored), by key."""
    rows: dict[tuple[str, str], tuple] = {}
    with store.db.pool.connection() as conn:
        for start in range(0, len(keys), 5000):
            chunk = keys[start:start + 5000]
            cursor = conn.execute(
                f"SELECT {'*' if columns == '*' else 'url, visit_type, ' + columns} FROM origin_visit_stats "
                "WHERE (url, visit_type) IN (SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY url, visit_type",
                ([k[0] for k in chunk], [k[1] for k in chunk]))
            for row in cursor.fetchall():
                values = tuple(row.values()) if isinstance(row, dict) else tuple(row)
                rows[(values[0], values[1])] = values
    return rows
