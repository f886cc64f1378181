"""The journal client against a real Kafka-protocol broker (Tansu) and every store.

Statuses produced as JSON and as the archive's msgpack end up in the visit
stats exactly as ``record_visit_statuses`` puts them; offsets are committed only
once the store has the batch (a failing store loses nothing); a restarted client
resumes at the committed offset; a full replay changes nothing; bad messages
are counted and skipped; ``ostinato journal-client`` runs and exits.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from datetime import UTC, datetime, timedelta

import msgpack
import pytest
from cli_helpers import ok, run
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from waiting import wait_until

from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.integrations.kafka.journal_client import JournalClient
from ostinato.integrations.kafka.journal_messages import encode_json, encode_msgpack
from ostinato.services.service_metrics import REGISTRY
from ostinato.store import open_store
from ostinato.store.sqlite import SQLiteStore
from test_servers.kafka import TansuBroker

PARTITIONS = 3
POLICY = FeedbackPolicy()
ENCODINGS = ("json", "timestamp", "swhtype", "__datetime__")
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # the clock fixture's start


@pytest.fixture(scope="module")
def broker():
    with TansuBroker() as running:
        yield running


@pytest.fixture
def topic(broker) -> str:
    name = f"visits-{uuid.uuid4().hex[:8]}"
    broker.create_topics({name: PARTITIONS})
    return name


def statuses(origins: int = 12, prefix: str = "https://forge.example/repo") -> list[VisitStatus]:
    """Three statuses per origin, oldest first: every outcome, eventful and uneventful, a non-final one."""
    kinds = [(JournalStatus.FULL, b"\x01"), (JournalStatus.PARTIAL, b"\x01"), (JournalStatus.FAILED, None),
             (JournalStatus.NOT_FOUND, None), (JournalStatus.FULL, b"\x02"), (JournalStatus.ONGOING, None)]
    result = []
    for i in range(origins):
        for visit in range(3):
            status, snap = kinds[(i + visit * 2) % len(kinds)]
            when = T0 - timedelta(days=30 - 10 * visit, hours=i, microseconds=i * 7)
            result.append(VisitStatus(f"{prefix}{i}", visit + 1, "git" if i % 4 else "hg", status, when,
                                      snap * 20 if snap else None))
    return result


def encode(status: VisitStatus, index: int) -> bytes:
    encoding = ENCODINGS[index % len(ENCODINGS)]
    if encoding == "json":
        return encode_json(status)
    return encode_msgpack(status, date_encoding=encoding, bytes_keys=index % 3 == 0)


def produce(broker: TansuBroker, topic: str, values: list[tuple[str, bytes]]) -> None:
    """(key, value) pairs; one origin's messages share a key, hence a partition, hence their order."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for key, value in values:
        producer.produce(topic, value=value, key=key.encode())
    assert producer.flush(10) == 0


def produce_statuses(broker, topic, items: list[VisitStatus]) -> None:
    produce(broker, topic, [(s.origin, encode(s, i)) for i, s in enumerate(items)])


def client(store, broker, topic, clock, group: str, **options) -> JournalClient:
    # a short session: Tansu answers a group's join after a share of it
    options = {"batch_size": 7, "batch_timeout": 0.2, "retry_delays": (0.05,), "session_timeout": 6, **options}
    return JournalClient(store, POLICY, clock, brokers=broker.bootstrap_servers, group_id=group, topics=[topic], **options)


def drain(journal: JournalClient, messages: int, timeout: float = 20.0) -> None:
    """Run batches until ``messages`` more have been read and stored."""
    target = journal.counters.consumed + messages
    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set)
    timer.start()
    try:
        while not stop.is_set() and (journal.counters.consumed < target or journal.waiting_for_store):
            journal.run_once()
    finally:
        timer.cancel()
    assert journal.counters.consumed == target and not journal.waiting_for_store, journal.counters


def committed(broker, group: str, topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        return [tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)]
    finally:
        consumer.close()


def committed_total(broker, group: str, topic: str) -> int:
    """Messages committed past, over all partitions (a partition without a commit counts 0)."""
    return sum(max(offset, 0) for offset in committed(broker, group, topic))


def keys_of(items):
    return sorted({(s.origin, s.type) for s in items})


def expected_stats(tmp_path, items, clock):
    """What record_visit_statuses makes of these statuses, on a fresh store."""
    reference = SQLiteStore(tmp_path / "reference.db")
    reference.init_schema()
    try:
        reference.record_visit_statuses(items, POLICY, now=clock.now())
        return reference.get_visit_stats(keys_of(items))
    finally:
        reference.close()


class FlakyStore:
    """A store whose record_visit_statuses fails the first ``failures`` calls, and remembers what it was given."""

    def __init__(self, store, failures: int = 0):
        self._store, self.failures, self.calls = store, failures, []

    def record_visit_statuses(self, items, policy, *, now=None):
        self.calls.append(list(items))
        if self.failures:
            self.failures -= 1
            raise ConnectionError("database went away")
        return self._store.record_visit_statuses(items, policy, now=now)

    def __getattr__(self, name):
        return getattr(self._store, name)


# -- tests ----------------------------------------------------------------------
@pytest.mark.long
def test_statuses_from_json_and_msgpack_end_up_in_the_visit_stats(store, broker, topic, clock, tmp_path):
    items = statuses()
    produce_statuses(broker, topic, items)
    passes = REGISTRY.get_sample_value("ostinato_loop_seconds_count", {"loop": "journal_client"}) or 0.0
    with client(store, broker, topic, clock, "g1") as journal:
        drain(journal, len(items))
        assert journal.assignment == [(topic, p) for p in range(PARTITIONS)]  # the group's only member: all
    counters = journal.counters
    assert (counters.consumed, counters.recorded, counters.rejected) == (len(items), len(items), 0)
    assert counters.batches >= len(items) // 7
    # each batch stored is one timed pass of the loop (service metrics)
    assert REGISTRY.get_sample_value("ostinato_loop_seconds_count", {"loop": "journal_client"}) == passes + counters.batches
    assert store.get_visit_stats(keys_of(items)) == expected_stats(tmp_path, items, clock)
    assert committed_total(broker, "g1", topic) == len(items)


def lags(topic: str) -> list[float | None]:
    return [REGISTRY.get_sample_value("ostinato_journal_lag_messages", {"topic": topic, "partition": str(p)})
            for p in range(PARTITIONS)]


def test_the_lag_behind_the_journal_is_exported(store, broker, topic, clock):
    """``ostinato_journal_lag_messages``: per partition, the messages not stored and committed yet, as of
    the last commit; what the alert on a journal client behind reads (deploy/prometheus)."""
    items = statuses(20)
    produce_statuses(broker, topic, items)
    with client(store, broker, topic, clock, "g-lag", batch_size=1) as journal:
        drain(journal, 1)
        behind = [lag for lag in lags(topic) if lag is not None]
        assert behind and max(behind) > 0, behind  # one message of a partition of many committed
        drain(journal, len(items) - 1)
        journal.run_once(timeout=0.5)
    assert [lag for lag in lags(topic) if lag is not None] == [0.0] * PARTITIONS  # caught up


def test_offsets_are_committed_only_once_the_store_has_the_batch(store, broker, topic, clock, tmp_path):
    items = statuses(4)
    produce_statuses(broker, topic, items)
    flaky = FlakyStore(store, failures=2)
    with client(flaky, broker, topic, clock, "g2", batch_size=100, batch_timeout=3.0) as journal:
        assert journal.run_once() == 0 and journal.waiting_for_store
        assert committed(broker, "g2", topic) == [-1001] * PARTITIONS  # nothing committed
        assert journal.run_once() == 0  # second failure: still the same batch
        # the first batch: all the statuses, or on a loaded machine those of the partitions fetched first
        # (the client's first read ends with what the group's first answer brought)
        first = journal.counters.consumed
        drain(journal, len(items) - first)  # the third try stores it, then the rest comes
    assert 0 < len(flaky.calls[0]) == first
    assert flaky.calls[0] == flaky.calls[1] == flaky.calls[2]  # the same batch, three times
    by_origin = lambda s: (s.origin, s.date)
    stored = [s for call in flaky.calls[2:] for s in call]  # what the store took: each status once
    assert sorted(stored, key=by_origin) == sorted(items, key=by_origin)
    assert journal.counters.store_failures == 2 and journal.counters.recorded == len(items)
    assert committed_total(broker, "g2", topic) == len(items)
    assert store.get_visit_stats(keys_of(items)) == expected_stats(tmp_path, items, clock)


def test_a_client_that_dies_before_the_store_took_its_batch_loses_nothing(store, broker, topic, clock, tmp_path):
    items = statuses(5)
    produce_statuses(broker, topic, items)
    with client(FlakyStore(store, failures=10**6), broker, topic, clock, "g3", batch_size=100) as doomed:
        while doomed.counters.store_failures < 2:
            doomed.run_once()
    assert committed(broker, "g3", topic) == [-1001] * PARTITIONS
    with client(store, broker, topic, clock, "g3") as journal:  # the next start reads them all again
        drain(journal, len(items))
    assert store.get_visit_stats(keys_of(items)) == expected_stats(tmp_path, items, clock)


class CommitFailsOnce:
    """A real consumer whose first commit fails (a broker hiccup)."""

    def __init__(self, config):
        self._consumer, self.failed = Consumer(config), False

    def commit(self, *args, **kwargs):
        if not self.failed:
            self.failed = True
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        return self._consumer.commit(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._consumer, name)


def test_a_failed_commit_is_tried_again_without_storing_twice(store, broker, topic, clock):
    items = statuses(4)
    produce_statuses(broker, topic, items)
    seen = FlakyStore(store)
    with client(seen, broker, topic, clock, "g7", batch_size=100, batch_timeout=1.0,
                consumer_factory=CommitFailsOnce) as journal:
        # the first batch is stored and its commit fails (on a loaded machine it may hold only the partitions
        # fetched first: the rest comes in the next batches)
        assert journal.run_once() > 0
        assert journal.counters.commit_failures == 1 and committed_total(broker, "g7", topic) == 0
        for _ in range(50):  # the commit is tried again with the next batch; then the partitions' ends
            journal.run_once(timeout=0.2)
            if journal.caught_up and committed_total(broker, "g7", topic) == len(items):
                break
        assert committed_total(broker, "g7", topic) == len(items) and journal.caught_up
    stored = [(s.origin, s.visit) for call in seen.calls for s in call]
    assert sorted(stored) == sorted((s.origin, s.visit) for s in items)  # each status stored once


def test_a_restarted_client_resumes_at_the_committed_offset(store, broker, topic, clock, tmp_path):
    first, second = statuses(6), statuses(6, prefix="https://other.example/r")
    produce_statuses(broker, topic, first)
    with client(store, broker, topic, clock, "g4") as journal:
        drain(journal, len(first))
    produce_statuses(broker, topic, second)
    seen = FlakyStore(store)
    with client(seen, broker, topic, clock, "g4") as journal:
        drain(journal, len(second))
        assert journal.run_once(timeout=0.5) == 0  # nothing more: the first statuses are not read again
    assert journal.counters.consumed == len(second)
    by_origin = lambda s: (s.origin, s.date)
    assert sorted((s for call in seen.calls for s in call), key=by_origin) == sorted(second, key=by_origin)
    assert store.get_visit_stats(keys_of(first + second)) == expected_stats(tmp_path, first + second, clock)


def test_replaying_the_whole_topic_changes_nothing(store, broker, topic, clock):
    items = statuses(8)
    produce_statuses(broker, topic, items)
    with client(store, broker, topic, clock, "g5") as journal:
        drain(journal, len(items))
    before = store.get_visit_stats(keys_of(items))
    clock.advance(timedelta(days=3))
    with client(store, broker, topic, clock, "g5-replay", batch_size=5) as replay:
        drain(replay, len(items))
    assert replay.counters.recorded == len(items) and replay.counters.changed == 0
    assert store.get_visit_stats(keys_of(items)) == before


def test_bad_messages_are_counted_logged_and_skipped(store, broker, topic, clock, tmp_path, caplog):
    good = statuses(3)
    no_type = msgpack.packb({"origin": "u", "visit": 1, "status": "full", "date": T0, "snapshot": None, "metadata": None},
                            datetime=True)  # the archive's messages before visit types were journalled
    bad = [b"\xc1 not msgpack", b'{"origin": "u", "visit": 1', no_type,
           json.dumps({"origin": "u", "visit": 1, "type": "git", "status": "full", "date": "yesterday"}).encode()]
    values = [(s.origin, encode(s, i)) for i, s in enumerate(good)]
    values[2:2] = [("bad", value) for value in bad]  # one partition, between good ones
    produce(broker, topic, values)
    caplog.set_level(logging.WARNING, logger="ostinato.integrations.kafka.journal_client")
    with client(store, broker, topic, clock, "g6") as journal:
        drain(journal, len(values))
    counters = journal.counters
    assert (counters.consumed, counters.recorded, counters.rejected) == (len(values), len(good), len(bad))
    assert committed_total(broker, "g6", topic) == len(values)  # committed past the bad ones
    rejected = [r for r in caplog.records if r.getMessage().startswith("rejected message")]
    assert sorted(r.field for r in rejected) == ["date", "record", "record", "type"]
    assert all(r.topic == topic and r.offset >= 0 for r in rejected)
    assert f"rejected message {topic}[" in rejected[0].getMessage()
    assert store.get_visit_stats(keys_of(good)) == expected_stats(tmp_path, good, clock)


def test_a_bad_change_field_is_dropped_its_status_kept_and_each_kind_logged_once(store, broker, topic, clock, caplog):
    def seen(i: int, **fields) -> VisitStatus:
        return VisitStatus(f"https://forge.example/seen{i}", 1, "git", JournalStatus.FULL, T0, b"\x01" * 20, **fields)

    good = [seen(0, change_times=(T0 - timedelta(days=3), T0 - timedelta(hours=1))), seen(1)]
    late = [{"change_times": [(T0 - timedelta(hours=1)).isoformat(), (T0 + timedelta(hours=3, minutes=i)).isoformat()]}
            for i in range(3)]
    bad = [*late, {"change_times": ["soon"]}, {"newest_change_at": (T0 + timedelta(days=1)).isoformat(),
                                               "change_times": [(T0 - timedelta(hours=2)).isoformat()]}]
    values = [(s.origin, encode(s, i)) for i, s in enumerate(good)]
    for i, fields in enumerate(bad, start=2):
        values.append((f"seen{i}", json.dumps({**json.loads(encode_json(seen(i))), **fields}).encode()))
    produce(broker, topic, values)
    caplog.set_level(logging.WARNING, logger="ostinato.integrations.kafka.journal_client")
    before = REGISTRY.get_sample_value("ostinato_journal_fields_dropped_total",
                                       {"field": "change_times", "kind": "change_times: a time at most 1h after the "
                                                                         "status's date"}) or 0
    with client(store, broker, topic, clock, "g-drop") as journal:
        drain(journal, len(values))
    counters = journal.counters
    assert (counters.consumed, counters.recorded, counters.rejected) == (len(values), len(values), 0)
    too_late = "change_times: a time at most 1h after the status's date"
    assert counters.fields_dropped[too_late] == 3 and sum(counters.fields_dropped.values()) == 5
    assert set(counters.fields_dropped) == {too_late, next(k for k in counters.fields_dropped if k.startswith("change_times: an ISO")),
                                            "newest_change_at: a time at most 1h after the status's date"}
    warnings = [r for r in caplog.records if r.getMessage().startswith("dropped ")]
    assert sorted(r.kind for r in warnings) == sorted(counters.fields_dropped)  # one line per kind
    assert REGISTRY.get_sample_value("ostinato_journal_fields_dropped_total", {"field": "change_times", "kind": too_late}) == before + 3
    # every status stored, the good times kept, the bad ones not
    keys = [(f"https://forge.example/seen{i}", "git") for i in range(len(values))]
    assert len(store.get_visit_stats(keys)) == len(values)
    found = {c.url: c for c in store.get_visit_changes(keys)}
    assert found[good[0].origin].change_times == good[0].change_times
    assert found["https://forge.example/seen6"].change_times == (T0 - timedelta(hours=2),)  # only the newest dropped
    assert found["https://forge.example/seen6"].newest_change_at == T0 - timedelta(hours=2)
    assert sorted(found) == [good[0].origin, "https://forge.example/seen6"]


def test_a_status_the_store_cannot_keep_is_rejected_and_the_rest_recorded(pg_store, broker, topic, clock, tmp_path):
    import random

    letters = random.Random(3)
    # a URL the message allows but PostgreSQL's index cannot hold (3,000 bytes that do not compress)
    noise = "https://forge.example/" + "".join(letters.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(3000))
    good = statuses(4)
    bad = VisitStatus(noise, 1, "git", JournalStatus.FULL, T0, b"\x05" * 20)
    items = good[:5] + [bad] + good[5:]
    produce_statuses(broker, topic, items)
    with client(pg_store, broker, topic, clock, "g-index", batch_size=20) as journal:
        drain(journal, len(items))
    counters = journal.counters
    assert (counters.recorded, counters.rejected) == (len(good), 1)
    assert committed_total(broker, "g-index", topic) == len(items)  # committed past it: no poison pill
    assert pg_store.get_visit_stats(keys_of(good)) == expected_stats(tmp_path, good, clock)
    assert pg_store.get_visit_stats([(noise, "git")]) == []


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_cli_reads_to_the_end_and_exits(store_url, broker, topic, tmp_path, monkeypatch):
    monkeypatch.delenv("OSTINATO_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    items = statuses(5)
    produce_statuses(broker, topic, items)
    produce(broker, topic, [("bad", b"garbage")])
    args = ("journal-client", "--brokers", broker.bootstrap_servers, "--group-id", "cli", "--topic", topic,
            "--batch-timeout", "200ms", "--session-timeout", "6s")
    out = json.loads(ok(store_url, *args, "--once", "--json").stdout)
    assert (out["consumed"], out["recorded"], out["rejected"], out["uncommitted_batch"]) == (len(items) + 1, len(items), 1, False)
    again = json.loads(ok(store_url, *args, "--once", "--json").stdout)  # resumes at the end: nothing to read
    assert again["consumed"] == 0
    produce_statuses(broker, topic, statuses(2, prefix="https://late.example/r"))
    text = ok(store_url, *args, "--max-messages", "4").stdout
    assert "stopped: 4 messages read, 4 statuses recorded" in text
    with open_store(store_url) as reopened:
        assert len(reopened.get_visit_stats(keys_of(items))) == len(keys_of(items))


def test_cli_refuses_bad_options_naming_them(broker, fresh_url):
    result = run(fresh_url, "journal-client", "--brokers", broker.bootstrap_servers, "--group-id", "x",
                 "--consumer-option", "nonsense")
    assert result.exit_code == 2 and "--consumer-option:" in result.output
    result = run(fresh_url, "journal-client", "--brokers", broker.bootstrap_servers, "--group-id", "x",
                 "--batch-timeout", "0")
    assert result.exit_code == 2 and "--batch-timeout:" in result.output


def test_a_missing_broker_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("OSTINATO_TANSU_BIN", str(tmp_path / "no-tansu"))
    with pytest.raises(RuntimeError, match="OSTINATO_TANSU_BIN=.*no-tansu is not an executable file"):
        TansuBroker()


def test_ostinato_run_runs_the_journal_client_when_brokers_are_set(broker, topic, sqlite_store, clock):
    from ostinato.config import Settings
    from ostinato.services.embedded_scheduler import EmbeddedScheduler

    items = statuses(origins=4)
    produce_statuses(broker, topic, items)
    settings = Settings().with_values({"journal_brokers": broker.bootstrap_servers, "journal_group_id": f"g-{topic}",
                                       "journal_topics": topic})
    scheduler = EmbeddedScheduler(sqlite_store, settings, clock, normal=False, priority=False, journal=True)
    scheduler.start()
    try:
        wait_until(lambda: scheduler.journal_client.counters.consumed >= len(items), timeout=30,
                   what=f"the journal client to consume {len(items)} statuses")
    finally:
        scheduler.stop(5)
    assert scheduler.journal_client.counters.consumed == len(items)
    keys = sorted({(s.origin, s.type) for s in items})
    stats = sqlite_store.get_visit_stats(keys)
    assert len(stats) == len(keys) and all(s.last_status_date is not None for s in stats)


def test_the_journal_client_needs_brokers_from_an_option_or_the_settings(tmp_path, monkeypatch):
    monkeypatch.delenv("OSTINATO_JOURNAL_BROKERS", raising=False)
    url = f"sqlite:///{tmp_path}/t.db"
    ok(url, "db", "init")
    result = run(url, "journal-client", "--once")
    assert result.exit_code == 2 and "brokers: expected Kafka bootstrap servers" in result.output
