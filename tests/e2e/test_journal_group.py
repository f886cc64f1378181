"""Journal clients as a consumer group, on a real broker (Tansu) and PostgreSQL: three clients, each its own
process, share a topic's partitions; one is killed with SIGKILL in the middle of a batch (read, not yet
stored, not committed), another joins later. At the end every status is applied, none is lost (the group
committed every partition to its end), and the visit stats equal those one client makes of the same
messages, field by field, for origins keyed as the archive keys them (one partition each); for origins
whose statuses were spread over two partitions, the newest status is the one applied in both (the
feedback ignores a status not newer than the last one applied, whichever partition brings it)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from waiting import wait_until

from ostinato.domain.clock import ManualClock
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.integrations.kafka.journal_client import JournalClient
from ostinato.integrations.kafka.journal_messages import encode_json
from ostinato.store.postgresql import PostgresStore
from test_servers.kafka import TansuBroker

PARTITIONS = 4
ORIGINS = 160          # each keyed: all its statuses in one partition, in order
SPREAD = 8             # each spread: its statuses alternate between partitions 0 and 1
VISITS = 3
T0 = datetime(2026, 1, 1, tzinfo=UTC)
MEMBER = Path(__file__).with_name("journal_member.py")


def status(url: str, visit: int, kind: int) -> VisitStatus:
    outcome = [JournalStatus.FULL, JournalStatus.PARTIAL, JournalStatus.FAILED, JournalStatus.NOT_FOUND][kind % 4]
    snapshot = bytes([visit + kind % 3]) * 20 if outcome in (JournalStatus.FULL, JournalStatus.PARTIAL) else None
    return VisitStatus(url, visit, "git", outcome, T0 - timedelta(days=10 - visit, minutes=kind), snapshot)


def produce(broker: TansuBroker, topic: str) -> tuple[dict[int, int], list[tuple[str, str]]]:
    """The messages, and each partition's end offset (from the delivery reports: Tansu's watermarks are not ends)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    ends: dict[int, int] = {}

    def delivered(error, message) -> None:
        assert error is None, error
        ends[message.partition()] = max(ends.get(message.partition(), 0), message.offset() + 1)

    for visit in range(1, VISITS + 1):
        for i in range(ORIGINS):
            url = f"https://forge.example/keyed/{i}"
            producer.produce(topic, encode_json(status(url, visit, i + visit)), key=url.encode(), on_delivery=delivered)
        for i in range(SPREAD):
            url = f"https://forge.example/spread/{i}"
            producer.produce(topic, encode_json(status(url, visit, i)), partition=visit % 2, on_delivery=delivered)
    assert producer.flush(20) == 0
    keys = [(f"https://forge.example/keyed/{i}", "git") for i in range(ORIGINS)]
    keys += [(f"https://forge.example/spread/{i}", "git") for i in range(SPREAD)]
    return ends, keys


def group_offsets(broker: TansuBroker, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets, read without joining it (``committed`` on a consumer of its id)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)}
    finally:
        consumer.close()


class Member:
    """A journal client in its own process, its stdout lines in a queue."""

    def __init__(self, dsn: str, broker: TansuBroker, topic: str, group: str):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.process = subprocess.Popen([sys.executable, str(MEMBER), dsn, broker.bootstrap_servers, topic, group],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, prefix: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.process.poll() is None, f"member exited: {self.seen[-20:]}"
                continue
            self.seen.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line {prefix!r} within {timeout} s: {self.seen[-20:]}")

    def drain(self) -> list[str]:
        """Every line it printed so far."""
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def single_client_stats(broker: TansuBroker, topic: str, dsn: str, keys):
    """What one client alone makes of the same messages (a group of its own, read to the end)."""
    store = PostgresStore(dsn)
    try:
        with JournalClient(store, FeedbackPolicy(), ManualClock(T0), brokers=broker.bootstrap_servers,
                           group_id=f"single-{uuid.uuid4().hex[:6]}", topics=[topic], batch_size=50,
                           batch_timeout=0.2, session_timeout=6) as journal:
            stop = threading.Event()
            timer = threading.Timer(90, stop.set)  # a deadline; cancelled after, or it would hold the exit of pytest
            timer.start()
            try:
                journal.run_forever(stop, until_caught_up=True)
            finally:
                timer.cancel()
            assert journal.caught_up and not stop.is_set()
        return {(s.url, s.visit_type): s for s in store.get_visit_stats(keys)}
    finally:
        store.close()


@pytest.fixture(scope="module")
def broker():
    with TansuBroker() as running:
        yield running


@pytest.mark.long
def test_three_clients_share_the_partitions_one_killed_mid_batch_one_added_nothing_lost(broker, pg_server, pg_template,
                                                                                         pg_dsn):
    topic, group = f"visits-{uuid.uuid4().hex[:8]}", f"grp-{uuid.uuid4().hex[:6]}"
    broker.create_topics({topic: PARTITIONS})
    ends, keys = produce(broker, topic)
    assert sum(ends.values()) == (ORIGINS + SPREAD) * VISITS
    members = [Member(pg_dsn, broker, topic, group) for _ in range(3)]
    try:
        victim = members[1]
        victim.wait_for("recording")  # read, in the store's hands, not committed
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(timeout=10)
        survivors = [members[0], members[2]]
        printed = [len(m.drain()) for m in survivors]
        wait_until(lambda: any(line.startswith("recorded") for m, n in zip(survivors, printed, strict=True)
                               for line in m.drain()[n:]), timeout=60, what="a survivor to record a batch after the kill")
        members.append(Member(pg_dsn, broker, topic, group))  # one more joins later, the group going on without the victim
        offsets: dict[int, int] = {}

        def committed_to_the_end() -> bool:
            offsets.update(group_offsets(broker, group, topic))
            return all(offsets.get(p, -1) >= end for p, end in ends.items())

        wait_until(committed_to_the_end, timeout=120, interval=0.5, what="the group to commit every partition to its end",
                   detail=lambda: f"{offsets} against {ends}; " + "; ".join(" | ".join(m.seen[-5:]) for m in members))
    finally:
        for member in members:
            member.stop()
    assert victim.process.returncode == -signal.SIGKILL
    for member in members:  # every line it printed read (its output ends with it)
        member.reader.join(10)
        assert not member.reader.is_alive()
    lines = [m.drain() for m in members]
    # the partitions were shared: several members had some, each recorded batches
    sharing = [i for i, seen in enumerate(lines) if any(line.startswith("assigned [") and line != "assigned []"
                                                        for line in seen)]
    assert len(sharing) >= 2, lines
    assert sum(line.startswith("recorded") for seen in lines for line in seen) > 0, lines
    # every status applied: the visit stats equal a single client's, field by field
    reference = f"single_{uuid.uuid4().hex[:8]}"
    try:
        expected = single_client_stats(broker, topic, pg_server.create_database(reference, template=pg_template), keys)
    finally:
        pg_server.drop_database(reference)
    store = PostgresStore(pg_dsn)
    try:
        got = {(s.url, s.visit_type): s for s in store.get_visit_stats(keys)}
    finally:
        store.close()
    assert set(got) == set(expected) == set(keys)
    for key in keys:
        if "/spread/" in key[0]:
            continue
        want, have = asdict(expected[key]), asdict(got[key])
        # the reference is fed at once; the group over a minute: when a status was fed is no status's own
        for moment in ("last_scheduled",):
            want.pop(moment, None), have.pop(moment, None)
        assert have == want, key
    # the spread origins: their newest status applied, whichever partition brought it when. What the statuses
    # before it taught (the change rate, the counts) follows the order they came in, which no client fixes
    # across partitions, one client alone no more than a group: those fields may differ, and do
    for i in range(SPREAD):
        key = (f"https://forge.example/spread/{i}", "git")
        newest = status(key[0], VISITS, i)
        assert got[key].last_status_date == expected[key].last_status_date == newest.date, key
        assert got[key].last_visit_status == expected[key].last_visit_status, key

