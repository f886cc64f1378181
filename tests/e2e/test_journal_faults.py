"""The journal client's group faults, on a real Kafka-protocol broker (Tansu): a group whose offsets the brokers
forgot (deleted with the admin API, as ``offsets.retention.minutes`` expires them) and a group id shared with
clients of another version or program.

What Tansu 0.6.0 does, observed here: it deletes a group's offsets (``delete_consumer_groups``); it refuses a
member whose assignment protocols share none with the group's with ``INCONSISTENT_GROUP_PROTOCOL`` (as Kafka
does), the member already in keeping its partitions; it refuses a commit from a client outside a group that has
members (``UNKNOWN_MEMBER_ID``, as Kafka does) and takes it once the group is empty; and it drops offset-commit
metadata, which Kafka keeps: the one test of who committed what gives the consumer Kafka's behaviour with a
shim (``KeepsCommitMetadata``), after checking that Tansu still drops it.
"""

from __future__ import annotations

import logging
import threading
import uuid

import pytest
from cli_helpers import ok, run
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from test_journal_client import PARTITIONS, POLICY, client, committed, committed_total, drain, keys_of, produce_statuses, statuses
from waiting import wait_until

from ostinato.integrations.kafka.journal_client import JournalClient
from ostinato.integrations.kafka.journal_group import COMMIT_METADATA
from ostinato.integrations.kafka.journal_messages import encode_json
from ostinato.store import open_store
from ostinato.store.sqlite import SQLiteStore
from test_servers.kafka import TansuBroker

LOGGER = "ostinato.integrations.kafka.journal_client"


@pytest.fixture(scope="module")
def broker():
    with TansuBroker() as running:
        yield running


@pytest.fixture
def topic(broker) -> str:
    name = f"faults-{uuid.uuid4().hex[:8]}"
    broker.create_topics({name: PARTITIONS})
    return name


@pytest.fixture
def group() -> str:
    return f"grp-{uuid.uuid4().hex[:6]}"


def forget(broker: TansuBroker, group: str, topic: str) -> None:
    """Make the broker forget the group's offsets, as retention or an operator does (the group has no member)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})  # kept: a collected admin drops its futures
    assert admin.delete_consumer_groups([group], request_timeout=10)[group].result(15) is None
    assert committed(broker, group, topic) == [-1001] * PARTITIONS


def produce_one_per_batch(broker: TansuBroker, topic: str, items) -> None:
    """One record per record batch: Tansu's end of a partition (ListOffsets ``latest``) is its last batch's base
    offset + 1, so ``--from-end`` would read the tail of a batch of many; with batches of one, the end is the end."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for item in items:
        producer.produce(topic, value=encode_json(item), key=item.origin.encode())
        assert producer.flush(10) == 0


def changed_on_a_fresh_store(tmp_path, clock, *passes) -> list[int]:
    """How many statuses of each pass change the visit stats, fed one after the other to a fresh store."""
    reference = SQLiteStore(tmp_path / f"reference-{uuid.uuid4().hex[:6]}.db")
    reference.init_schema()
    try:
        return [reference.record_visit_statuses(items, POLICY, now=clock.now()) for items in passes]
    finally:
        reference.close()


def stats_of_a_single_pass(tmp_path, clock, items):
    reference = SQLiteStore(tmp_path / f"single-{uuid.uuid4().hex[:6]}.db")
    reference.init_schema()
    try:
        reference.record_visit_statuses(items, POLICY, now=clock.now())
        return reference.get_visit_stats(keys_of(items))
    finally:
        reference.close()


def without_offset_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and "no committed offset" in r.getMessage()]


def run_within(timeout: float, url: str, *args):
    """``ostinato ARGS`` in a thread: a command that never returns fails the test instead of hanging it."""
    results = []
    thread = threading.Thread(target=lambda: results.append(run(url, *args)), daemon=True)
    thread.start()
    thread.join(timeout)
    assert results, f"ostinato {' '.join(args)} still runs after {timeout:.0f} s"
    return results[0]


def run_until_caught_up(journal: JournalClient, timeout: float = 30.0) -> None:
    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set)
    timer.start()
    try:
        journal.run_forever(stop, until_caught_up=True)
    finally:
        timer.cancel()
    assert journal.caught_up, journal.counters


# -- 1. a broker that forgets the group's offsets -----------------------------------------------------------
@pytest.mark.long
def test_a_forgotten_group_reads_everything_again_once_and_says_so(store, broker, topic, group, clock, tmp_path,
                                                                   caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    first, later = statuses(8), statuses(4, prefix="https://late.example/r")
    produce_statuses(broker, topic, first)
    with client(store, broker, topic, clock, group) as journal:  # a new group: the same line
        drain(journal, len(first))
    assert journal.counters.partitions_without_offset == PARTITIONS
    assert without_offset_lines(caplog) == [without_offset_lines(caplog)[0]]  # one line for all partitions
    assert committed_total(broker, group, topic) == len(first)

    forget(broker, group, topic)
    produce_statuses(broker, topic, later)  # written while the group was forgotten
    caplog.clear()
    with client(store, broker, topic, clock, group) as journal:
        drain(journal, len(first) + len(later))
        assert journal.run_once(timeout=0.5) == 0  # nothing more
    lines = without_offset_lines(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"group {group}: no committed offset for {topic}[0, 1, 2] (")
    assert "expired after offsets.retention.minutes" in lines[0] and "deleted" in lines[0]
    assert "reading them from their earliest message" in lines[0] and "read again" in lines[0]
    counters = journal.counters
    assert counters.partitions_without_offset == PARTITIONS
    assert counters.recorded == len(first) + len(later)
    # no double effect: the replayed statuses changed nothing, the later ones what they change on their own
    assert counters.changed == changed_on_a_fresh_store(tmp_path, clock, first, later)[1]
    assert store.get_visit_stats(keys_of(first + later)) == stats_of_a_single_pass(tmp_path, clock, first + later)
    assert committed_total(broker, group, topic) == len(first) + len(later)


def test_from_the_end_a_forgotten_group_skips_what_came_before_says_so_and_anchors(sqlite_store, broker, topic,
                                                                                   group, clock, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    first, missed = statuses(4), statuses(3, prefix="https://missed.example/r")
    fresh, while_down = statuses(3, prefix="https://fresh.example/r"), statuses(3, prefix="https://down.example/r")
    produce_one_per_batch(broker, topic, first)
    with client(sqlite_store, broker, topic, clock, group) as journal:
        drain(journal, len(first))
    forget(broker, group, topic)
    produce_one_per_batch(broker, topic, missed)
    caplog.clear()

    with client(sqlite_store, broker, topic, clock, group, from_beginning=False) as journal:
        run_until_caught_up(journal)
        assert journal.counters.consumed == 0  # the end: first and missed are behind it
        # each partition's starting position is committed: a restart resumes there, not at a later end
        assert committed_total(broker, group, topic) == len(first) + len(missed)
        assert all(offset >= 0 for offset in committed(broker, group, topic))
        produce_one_per_batch(broker, topic, fresh)
        drain(journal, len(fresh))
    lines = without_offset_lines(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"group {group}: no committed offset for {topic}[0, 1, 2] (")
    assert "statuses written to them before now are NOT read" in lines[0]
    assert "run once with a new group id and --from-beginning" in lines[0]
    assert journal.counters.partitions_without_offset == PARTITIONS
    # the loss the line announced, and only that one
    assert sqlite_store.get_visit_stats(keys_of(missed)) == []
    assert len(sqlite_store.get_visit_stats(keys_of(fresh))) == len(keys_of(fresh))

    produce_one_per_batch(broker, topic, while_down)
    caplog.clear()
    with client(sqlite_store, broker, topic, clock, group, from_beginning=False) as journal:
        drain(journal, len(while_down))  # written while no client ran: read, from the anchored offsets
    assert journal.counters.partitions_without_offset == 0 and without_offset_lines(caplog) == []
    assert len(sqlite_store.get_visit_stats(keys_of(while_down))) == len(keys_of(while_down))


def test_cli_names_partitions_without_offset_and_counts_them(broker, topic, group, tmp_path, monkeypatch):
    monkeypatch.delenv("OSTINATO_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path}/cli.db"
    ok(url, "db", "init")
    produce_one_per_batch(broker, topic, statuses(3))
    args = ("journal-client", "--brokers", broker.bootstrap_servers, "--group-id", group, "--topic", topic,
            "--batch-timeout", "200ms", "--session-timeout", "6s", "--once", "--json")
    result = ok(url, *args, "--from-end")
    assert '"partitions_without_offset": 3' in result.stdout and '"consumed": 0' in result.stdout
    assert f"group {group}: no committed offset for {topic}[0, 1, 2]" in " ".join(result.stderr.split())
    assert "NOT read" in result.stderr
    again = ok(url, *args, "--from-end")  # its starting positions were committed: nothing to warn about
    assert '"partitions_without_offset": 0' in again.stdout and "no committed offset" not in again.stderr


# -- 2. a group id shared with clients of another version or program ------------------------------------------
class EagerMember:
    """A member of the group with librdkafka's default assignment (range,roundrobin: eager), as swh's own journal
    client or another program would join it, consuming in a thread; it records the errors it is told."""

    def __init__(self, broker: TansuBroker, group: str, topic: str):
        self.consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                                  "session.timeout.ms": 6000, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})
        self.consumer.subscribe([topic], on_assign=lambda _, partitions: self.assigned.extend(partitions))
        self.assigned: list[TopicPartition] = []
        self.errors: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for message in self.consumer.consume(10, 0.2):
                if message.error() is not None:
                    self.errors.append(message.error().code())

    def wait(self, condition, timeout: float = 30.0) -> None:
        wait_until(condition, timeout=timeout, interval=0.05, what="the other consumer's condition",
                   detail=lambda: (self.assigned, self.errors))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.consumer.close()


def test_a_group_held_by_another_assignment_protocol_stops_the_client_with_a_clear_line(broker, topic, group,
                                                                                        tmp_path, monkeypatch):
    monkeypatch.delenv("OSTINATO_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path}/conflict.db"
    ok(url, "db", "init")
    produce_statuses(broker, topic, statuses(3))
    other = EagerMember(broker, group, topic)
    try:
        other.wait(lambda: len(other.assigned) == PARTITIONS)
        result = run_within(60, url, "journal-client", "--brokers", broker.bootstrap_servers, "--group-id", group,
                            "--topic", topic, "--batch-timeout", "200ms", "--session-timeout", "6s", "--once", "--json")
    finally:
        other.close()
    assert result.exit_code == 2, (result.output, result.exception)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: group {group}: the brokers refuse this client (INCONSISTENT_GROUP_PROTOCOL)")
    assert "another version or another program" in errors[0] and "--group-id" in errors[0]
    assert "waiting up to 6 s for it to leave" in " ".join(result.stderr.split())
    assert result.stdout == ""  # no counters: it never read
    with open_store(url) as store:
        assert store.get_visit_stats(keys_of(statuses(3))) == []


def test_a_group_held_by_this_client_refuses_the_other_protocol_and_goes_on(sqlite_store, broker, topic, group,
                                                                            clock):
    first, second = statuses(3), statuses(3, prefix="https://second.example/r")
    produce_statuses(broker, topic, first)
    with client(sqlite_store, broker, topic, clock, group) as journal:
        drain(journal, len(first))
        other = EagerMember(broker, group, topic)
        try:
            other.wait(lambda: KafkaError.INCONSISTENT_GROUP_PROTOCOL in other.errors)
            produce_statuses(broker, topic, second)
            drain(journal, len(second))
            assert other.assigned == [] and journal.assignment == [(topic, p) for p in range(PARTITIONS)]
        finally:
            other.close()
    assert committed_total(broker, group, topic) == len(first) + len(second)
    assert len(sqlite_store.get_visit_stats(keys_of(first + second))) == len(keys_of(first + second))


def test_a_client_outside_the_group_cannot_move_its_offsets_while_a_member_runs(sqlite_store, broker, topic, group,
                                                                                clock, tmp_path):
    """An older journal client that read with ``assign`` (no membership) commits as a client outside the group:
    refused while this client is a member; taken once the group is empty, and then resumed from (a rewind here:
    what is read again changes nothing)."""
    items = statuses(6)
    produce_statuses(broker, topic, items)
    outsider = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, "enable.auto.commit": False})
    try:
        with client(sqlite_store, broker, topic, clock, group) as journal:
            drain(journal, len(items))
            ends = committed(broker, group, topic)
            with pytest.raises(KafkaException) as refused:
                outsider.commit(offsets=[TopicPartition(topic, p, 0) for p in range(PARTITIONS)], asynchronous=False)
            assert refused.value.args[0].code() == KafkaError.UNKNOWN_MEMBER_ID
            assert committed(broker, group, topic) == ends
        before = sqlite_store.get_visit_stats(keys_of(items))
        outsider.commit(offsets=[TopicPartition(topic, p, 0) for p in range(PARTITIONS)], asynchronous=False)
        assert committed(broker, group, topic) == [0] * PARTITIONS
    finally:
        outsider.close()
    with client(sqlite_store, broker, topic, clock, group) as journal:
        drain(journal, len(items))  # from the outsider's offsets: everything again
    assert journal.counters.changed == 0 and journal.counters.partitions_without_offset == 0
    assert sqlite_store.get_visit_stats(keys_of(items)) == before


class KeepsCommitMetadata:
    """A real consumer that keeps offset-commit metadata as Kafka does and Tansu 0.6.0 does not: what a commit
    says goes into ``kept`` (shared by every consumer of the test), and ``committed`` reports it back for the
    offset it was committed with. Everything else is the real consumer on the real broker."""

    kept: dict[tuple[str, str, int], tuple[int, str]] = {}

    def __init__(self, config):
        self._consumer, self._group = Consumer(config), config["group.id"]

    def commit(self, *args, offsets=(), **kwargs):
        result = self._consumer.commit(*args, offsets=offsets, **kwargs)
        for tp in offsets:
            if tp.metadata is not None:
                self.kept[(self._group, tp.topic, tp.partition)] = (tp.offset, tp.metadata)
        return result

    def committed(self, partitions, timeout=None):
        answer = []
        for tp in self._consumer.committed(partitions, timeout=timeout):
            offset, metadata = self.kept.get((self._group, tp.topic, tp.partition), (None, None))
            if tp.error is None and offset == tp.offset and offset >= 0:
                tp = TopicPartition(tp.topic, tp.partition, tp.offset, metadata=metadata)
            answer.append(tp)
        return answer

    def __getattr__(self, name):
        return getattr(self._consumer, name)


def test_offsets_another_program_committed_are_named(sqlite_store, broker, topic, group, clock, caplog):
    # Tansu drops the metadata (if this fails, it keeps it now: drop the shim)
    probe = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"{group}-probe"})
    try:
        probe.commit(offsets=[TopicPartition(topic, 0, 0, metadata="probe")], asynchronous=False)
        assert probe.committed([TopicPartition(topic, 0)], timeout=10)[0].metadata is None
    finally:
        probe.close()

    items = statuses(6)
    produce_statuses(broker, topic, items)
    other = KeepsCommitMetadata({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:  # another program, then an older Ostinato, commit while the group is empty
        other.commit(offsets=[TopicPartition(topic, 0, 0, metadata="swh.journal.client/2.3")], asynchronous=False)
        other.commit(offsets=[TopicPartition(topic, 1, 0, metadata="ostinato-journal-client/0.0.9")],
                     asynchronous=False)
    finally:
        other.close()
    caplog.set_level(logging.INFO, logger=LOGGER)
    with client(sqlite_store, broker, topic, clock, group, consumer_factory=KeepsCommitMetadata) as journal:
        drain(journal, len(items))
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER and "were committed by" in r.getMessage()]
    foreign = [line for line in lines if "swh.journal.client/2.3" in line]
    assert len(foreign) == 1 and foreign[0].startswith(f"group {group}: the offsets of {topic}[0] were committed by "
                                                       "'swh.journal.client/2.3', not by an Ostinato journal client")
    assert "give each program its own group id" in foreign[0]
    older = [line for line in lines if "ostinato-journal-client/0.0.9" in line]
    assert len(older) == 1 and "they mean the same" in older[0]
    assert journal.counters.partitions_committed_by_others == 1
    assert journal.counters.partitions_without_offset == 1  # partition 2
    # this client's own commits say who made them
    assert {KeepsCommitMetadata.kept[(group, topic, p)][1] for p in range(PARTITIONS)} == {COMMIT_METADATA}
