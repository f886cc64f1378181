"""The journal client (``scheduler-journal-client``, see docs/design/tasks.md), which closes the feedback loop from Kafka.

It reads visit statuses from Kafka topics (by default the archive's
``swh.journal.objects.origin_visit_status``), decodes each message
(:mod:`ostinato.integrations.kafka.journal_messages`: JSON or the archive's msgpack) and
hands them in batches to the store's ``record_visit_statuses``, the
feedback rules.

Delivery is at least once: a batch's offsets are committed only after the
store has the batch. If the store fails, nothing is committed; the batch stays
in memory and is retried (``run_forever`` backs off between tries), so nothing
is lost, and a client that dies before committing reads the batch again on its
next start. Replays are harmless: the feedback takes "now" from each status's
own date and ignores statuses not newer than the last one applied.

A bad message (undecodable, or a field ``parse_visit_status`` refuses) never
stops the client: it is logged once with its topic, partition, offset and the
field at fault, counted in ``counters.rejected`` and committed past, since it
can never succeed.

What a visit saw of its changes (``newest_change_at``, ``change_times``) is the
exception: a bad one is dropped and its status kept and stored. Drops are counted
by kind (the field and what was expected of it) in ``counters.fields_dropped`` and
``ostinato_journal_fields_dropped_total{field,kind}``, and each kind is logged once
(a loader with a wrong clock would otherwise log every message).

The client is a member of its consumer group (``subscribe``, with the cooperative-sticky
assignment librdkafka offers): any number of clients with one group id share the topics'
partitions, each partition read by one of them from the group's committed offset
(``auto.offset.reset`` where the group has none). A client that joins takes some partitions
over; one that stops hands its own over at once (it commits what the store has of them
first); one that dies or hangs loses them after the group's session timeout
(``session_timeout``), and its last batch, not committed, is read again by their next owner.
Partitions the client loses (revoked, or lost with its membership) leave its pending batch:
their statuses are for the next owner to store. Per origin, order stays safe across owners
and partitions: the feedback ignores a status not newer than the last one applied.

What the group says when partitions come (no committed offset, offsets another program committed)
and what it refuses (a member of another assignment protocol) is
:mod:`ostinato.integrations.kafka.journal_group`: each is one clear line, and the refusal stops the
client (:class:`~ostinato.integrations.kafka.journal_group.GroupProtocolConflict`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from ...domain.clock import Clock
from ...domain.errors import ValidationError
from ...domain.visits import FeedbackPolicy, VisitStatus
from ...services import service_metrics as metrics
from ...store.interface import OriginStore
from .journal_group import COMMIT_METADATA, GroupProtocolConflict, describe_keys, look_up, report, reset_policy
from .journal_messages import DEFAULT_TOPIC, decode_visit_status

log = logging.getLogger(__name__)

#: seconds between tries of a batch the store failed to take, the last one repeated
RETRY_DELAYS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)

PartitionKey = tuple[str, int]
#: the index of a change time in the field an error names (``change_times[3]``): one kind for every index
_INDEX = re.compile(r"\[\d+\]$")

__all__ = ["DEFAULT_TOPIC", "GroupProtocolConflict", "JournalClient", "JournalCounters", "RETRY_DELAYS"]


@dataclass
class JournalCounters:
    """What the client has done since it started."""

    #: messages read from Kafka (good and bad)
    consumed: int = 0
    #: statuses the store took (record_visit_statuses returned)
    recorded: int = 0
    #: of those, statuses that changed visit stats (not late, duplicate or non-final)
    changed: int = 0
    #: bad messages, logged and skipped
    rejected: int = 0
    #: batches stored and committed
    batches: int = 0
    #: record_visit_statuses calls that raised (the batch was tried again)
    store_failures: int = 0
    #: offset commits that failed (tried again with the next batch)
    commit_failures: int = 0
    #: partitions the group gave this client without a committed offset (started at auto.offset.reset)
    partitions_without_offset: int = 0
    #: partitions whose committed offset another program committed (by the offset-commit metadata)
    partitions_committed_by_others: int = 0
    #: bad newest_change_at / change_times dropped from statuses that were kept, by kind (``field: expected …``)
    fields_dropped: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Batch:
    statuses: list[VisitStatus] = field(default_factory=list)
    #: the partition of each status
    keys: list[PartitionKey] = field(default_factory=list)
    #: next offset to commit per partition: last offset read + 1
    offsets: dict[PartitionKey, int] = field(default_factory=dict)
    messages: int = 0

    def without(self, gone: set[PartitionKey]) -> _Batch | None:
        """The batch less what it read from partitions this client no longer owns (None if nothing is left)."""
        kept = [(k, s) for k, s in zip(self.keys, self.statuses, strict=True) if k not in gone]
        offsets = {k: o for k, o in self.offsets.items() if k not in gone}
        if not offsets:
            return None
        return _Batch([s for _, s in kept], [k for k, _ in kept], offsets, self.messages)


class JournalClient:
    """Consume visit statuses from Kafka into ``store.record_visit_statuses``.

    ``consumer_config`` adds or overrides librdkafka settings (security,
    timeouts…); ``from_beginning`` chooses where a partition without a committed
    offset starts: its earliest message (True) or only new messages (False);
    ``session_timeout`` (seconds) is how long the group waits for a silent member
    before handing its partitions to the others, and how long the client waits for a member of
    another assignment protocol to leave the group before it gives up (:class:`GroupProtocolConflict`).
    """

    def __init__(self, store: OriginStore, policy: FeedbackPolicy, clock: Clock, *, brokers: str, group_id: str,
                 topics: Sequence[str] = (DEFAULT_TOPIC,), batch_size: int = 1000, batch_timeout: float = 0.5,
                 from_beginning: bool = True, consumer_config: Mapping[str, Any] | None = None,
                 retry_delays: Sequence[float] = RETRY_DELAYS, refresh_interval: float = 60.0,
                 session_timeout: float = 45.0,
                 consumer_factory: Callable[[dict[str, Any]], Consumer] = Consumer):
        if not brokers or not brokers.strip():
            raise ValidationError("brokers", "HOST:PORT[,HOST:PORT…]", brokers)
        if not group_id or not group_id.strip():
            raise ValidationError("group_id", "a non-empty consumer group id", group_id)
        topics = tuple(dict.fromkeys(t.strip() for t in topics))
        if not topics or not all(topics):
            raise ValidationError("topics", "one or more topic names", list(topics))
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", "a whole number of at least 1", batch_size)
        if not batch_timeout > 0:
            raise ValidationError("batch_timeout", "a positive number of seconds", batch_timeout)
        if not 1 <= session_timeout <= 3600:
            raise ValidationError("session_timeout", "a number of seconds from 1 to 3600", session_timeout)
        if not retry_delays or min(retry_delays) < 0:
            raise ValidationError("retry_delays", "one or more non-negative numbers of seconds", list(retry_delays))
        self.store = store
        self.policy = policy.validated()
        self.clock = clock
        self.group_id = group_id
        self.topics = topics
        self.batch_size = batch_size
        self.batch_timeout = batch_timeout
        self.retry_delays = tuple(retry_delays)
        self.refresh_interval = refresh_interval
        self.session_timeout = session_timeout
        self.counters = JournalCounters()
        self.config: dict[str, Any] = {
            "bootstrap.servers": brokers,
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest" if from_beginning else "latest",
            "enable.partition.eof": True,
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": int(session_timeout * 1000),
            "heartbeat.interval.ms": max(100, int(session_timeout * 1000 / 6)),
            "topic.metadata.refresh.interval.ms": int(refresh_interval * 1000),
            **dict(consumer_config or {}),
        }
        self._reset = reset_policy(self.config["auto.offset.reset"])
        self._consumer_factory = consumer_factory
        self._consumer: Consumer | None = None
        self._assigned: set[PartitionKey] = set()
        self._at_end: set[PartitionKey] = set()
        self._missing_topics: set[str] = set()
        self._assignment_complete = False
        self._pending: _Batch | None = None
        self._uncommitted: dict[PartitionKey, int] = {}
        self._failures_in_a_row = 0
        #: partitions assigned without a committed offset, nothing committed for them since
        self._unanchored: set[PartitionKey] = set()
        #: when the brokers first refused this client (another assignment protocol), while they still do
        self._refused_since: float | None = None

    # -- life cycle ---------------------------------------------------------------
    def start(self) -> None:
        """Connect and join the group (idempotent); partitions come with the group's answer, while reading."""
        if self._consumer is None:
            self._consumer = self._consumer_factory(dict(self.config))
            self._consumer.subscribe(list(self.topics), on_assign=self._on_assign, on_revoke=self._on_revoke,
                                     on_lost=self._on_lost)

    def close(self) -> None:
        """Commit what the store already has, then leave the group (its partitions go to the others at once).
        A batch the store has not taken is not committed: their next owner reads it again."""
        if self._consumer is None:
            return
        try:
            if self._uncommitted:
                self._commit()
        finally:
            self._pending = None
            self._consumer.close()
            self._consumer = None
            self._assigned.clear()
            self._at_end.clear()
            self._unanchored.clear()
            self._assignment_complete = False

    def __enter__(self) -> JournalClient:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- state ----------------------------------------------------------------------
    @property
    def assignment(self) -> list[PartitionKey]:
        return sorted(self._assigned)

    @property
    def waiting_for_store(self) -> bool:
        """A batch is read but the store has not taken it yet (the last try failed)."""
        return self._pending is not None

    @property
    def caught_up(self) -> bool:
        """The group gave this client its partitions, and every one is read to its end and stored, and the
        offsets are committed (a member the group gave no partition is caught up at once)."""
        return (self._assignment_complete and self._pending is None and not self._uncommitted
                and self._at_end >= self._assigned)

    # -- the loop ---------------------------------------------------------------------
    def run_once(self, timeout: float | None = None, max_messages: int | None = None) -> int:
        """Read one batch (up to ``batch_size`` messages, waiting at most ``timeout``,
        by default ``batch_timeout``), store it, commit its offsets.

        Returns how many messages were read, stored (or rejected) and committed;
        0 when nothing came or when the store failed. After a store failure
        (``waiting_for_store``) the next call tries the same batch again before
        reading anything new.
        """
        self.start()
        if self._uncommitted:  # an earlier commit failed: the store has those statuses, try again
            self._commit()
        if self._pending is None:
            limit = self.batch_size if max_messages is None else max(1, min(self.batch_size, max_messages))
            self._pending = self._read(limit, self.batch_timeout if timeout is None else timeout)
        if self._pending is None:
            return 0
        with metrics.looping("journal_client"):
            return self._store_pending()

    def run_forever(self, stop: threading.Event, max_messages: int | None = None,
                    until_caught_up: bool = False) -> None:
        """Run batches until ``stop`` is set (or ``max_messages`` are handled, or, with
        ``until_caught_up``, every partition is read to its end), backing off while the store fails."""
        self.start()
        handled = 0
        while not stop.is_set():
            if max_messages is not None and handled >= max_messages:
                break
            if until_caught_up and self.caught_up:
                break
            handled += self.run_once(max_messages=None if max_messages is None else max_messages - handled)
            if self._pending is not None:
                stop.wait(self.retry_delays[min(self._failures_in_a_row, len(self.retry_delays)) - 1])
        if self._uncommitted:
            self._commit()

    # -- internals ------------------------------------------------------------------
    def _read(self, limit: int, timeout: float) -> _Batch | None:
        """Up to ``limit`` messages within ``timeout``; before the group's first answer, waiting for it (at most
        the session timeout) first, so that a client's first read is not an empty one."""
        assert self._consumer is not None
        batch = _Batch()
        joined_by = time.monotonic() + self.session_timeout
        while not self._assignment_complete and not batch.messages and time.monotonic() < joined_by:
            self._take(self._consumer.consume(limit, min(timeout, 0.2)), batch)
        if not batch.messages:
            self._take(self._consumer.consume(limit, timeout), batch)
        self.counters.consumed += batch.messages
        return batch if batch.messages else None

    def _take(self, messages: list[Any], batch: _Batch) -> None:
        for message in messages:
            key = (message.topic(), message.partition())
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    self._at_end.add(key)
                    self._anchor(key, message.offset(), batch)
                elif error.fatal():
                    raise KafkaException(error)
                elif error.code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL:
                    self._refused(error)
                elif error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                    if message.topic() not in self._missing_topics:
                        self._missing_topics.add(message.topic())
                        log.warning("topic %s not found on the brokers yet; the group looks again every %.0f s",
                                    message.topic(), self.refresh_interval)
                else:
                    log.warning("kafka: %s", error)
                continue
            self._missing_topics.discard(key[0])
            self._at_end.discard(key)
            offset = message.offset()
            batch.messages += 1
            batch.offsets[key] = max(batch.offsets.get(key, 0), offset + 1)
            try:
                batch.statuses.append(decode_visit_status(message.value(), self._dropped))
                batch.keys.append(key)
            except ValidationError as exc:
                self.counters.rejected += 1
                log.warning("rejected message %s[%d]@%d: %s", key[0], key[1], offset, exc,
                            extra={"topic": key[0], "partition": key[1], "offset": offset, "field": exc.field})

    def _dropped(self, name: str, error: ValidationError) -> None:
        """A bad change field dropped from a status that is kept: counted by kind, the first of a kind logged."""
        kind = f"{_INDEX.sub('', error.field)}: {error.expected}"
        drops = self.counters.fields_dropped
        drops[kind] = drops.get(kind, 0) + 1
        metrics.field_dropped(name, kind)
        if drops[kind] == 1:
            log.warning("dropped %s from a visit status, the status kept (%s); further drops of this kind are "
                        "counted, not logged", name, error, extra={"field": error.field, "kind": kind})

    def _anchor(self, key: PartitionKey, position: int, batch: _Batch) -> None:
        """Under ``latest``, commit the position a partition without a committed offset started at, once
        reached with nothing read: a restart then resumes there rather than at a later end, which
        would skip what was written while the client was down. (Under ``earliest`` nothing can be skipped.)"""
        if (self._reset == "latest" and key in self._unanchored and key in self._assigned and position >= 0
                and key not in batch.offsets and key not in self._uncommitted):
            self._uncommitted[key] = position

    def _refused(self, error: KafkaError) -> None:
        """The brokers refused this client's join: a member of another assignment protocol holds the group. Wait
        one session timeout for it to leave (say so once), then give up: librdkafka would try again for ever."""
        now = time.monotonic()
        if self._refused_since is None:
            self._refused_since = now
            log.warning("group %s: the brokers refuse this client (%s): a member of this group id uses another "
                        "partition assignment protocol than %s (a client of another version or another program); "
                        "waiting up to %.0f s for it to leave", self.group_id, error.str(),
                        self.config["partition.assignment.strategy"], self.session_timeout)
        elif now - self._refused_since >= self.session_timeout:
            raise GroupProtocolConflict(self.group_id, str(self.config["partition.assignment.strategy"]),
                                        now - self._refused_since)

    def _store_pending(self) -> int:
        batch = self._pending
        if batch is None:
            return 0
        if batch.statuses:
            rejected = self.counters.rejected
            try:
                changed = self._record(batch.statuses)
            except Exception:  # whatever the store's trouble, keep the batch and try again
                self.counters.store_failures += 1
                self._failures_in_a_row += 1
                log.exception("the store failed to record %d visit statuses (try %d); offsets not committed, "
                              "the batch will be tried again", len(batch.statuses), self._failures_in_a_row)
                return 0
            self.counters.recorded += len(batch.statuses) - (self.counters.rejected - rejected)
            metrics.outcomes("visit", batch.statuses)
            self.counters.changed += changed
        self._failures_in_a_row = 0
        self._pending = None
        for key, offset in batch.offsets.items():
            self._uncommitted[key] = max(self._uncommitted.get(key, 0), offset)
        self._commit()
        self.counters.batches += 1
        return batch.messages

    def _record(self, statuses: list) -> int:
        """The store's ``record_visit_statuses``; a batch the store refuses as bad input (a status it cannot
        keep, say a URL its index cannot hold, which the message alone did not show) is split until the
        statuses at fault are found: those are rejected as bad messages, the others recorded."""
        try:
            return self.store.record_visit_statuses(statuses, self.policy, now=self.clock.now())
        except ValidationError as exc:
            if len(statuses) == 1:
                self.counters.rejected += 1
                log.warning("rejected visit status of %s: the store cannot keep it: %s", statuses[0].origin[:200], exc,
                            extra={"field": exc.field})
                return 0
        half = len(statuses) // 2
        return self._record(statuses[:half]) + self._record(statuses[half:])

    def _commit(self, only: set[PartitionKey] | None = None) -> None:
        """Commit the offsets of what the store has (of the partitions ``only``, when given). A partition no
        longer ours is not committed: its next owner reads what this client stored after the group's offset
        again (harmless: the feedback ignores a status not newer than the last one applied)."""
        assert self._consumer is not None
        for key in [k for k in self._uncommitted if k not in self._assigned]:
            del self._uncommitted[key]
        keys = [k for k in self._uncommitted if only is None or k in only]
        if not keys:
            return
        offsets = [TopicPartition(key[0], key[1], self._uncommitted[key], metadata=COMMIT_METADATA) for key in keys]
        try:
            result = self._consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self.counters.commit_failures += 1
            log.warning("could not commit offsets %s (the statuses are stored; tried again with the next batch): %s",
                        _describe(offsets), exc)
            return
        failed = {(tp.topic, tp.partition) for tp in result or () if tp.error is not None}
        if failed:
            self.counters.commit_failures += 1
            log.warning("could not commit offsets of %s (tried again with the next batch)", sorted(failed))
        for key in keys:
            if key not in failed:
                self._unanchored.discard(key)
                self._report_lag(key, self._uncommitted.pop(key))

    def _report_lag(self, key: PartitionKey, committed: int) -> None:
        """The partition's lag behind its end, from the end the last fetch saw (no broker round trip)."""
        assert self._consumer is not None
        try:
            _, end = self._consumer.get_watermark_offsets(TopicPartition(key[0], key[1]), cached=True)
        except KafkaException:
            return
        if end is not None and end >= 0:
            metrics.journal_lag(key[0], key[1], end - committed)

    # -- the group's rebalances (called by librdkafka inside consume) -------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions given to this client: read from the group's committed offsets. Those offsets are looked
        up here too (librdkafka passes none: it fetches them after this callback), for a line on partitions
        without one and on offsets another program committed; the lookup waits a few seconds at most."""
        added = {(tp.topic, tp.partition) for tp in partitions}
        self._assigned |= added
        self._at_end -= added
        self._assignment_complete = True
        self._refused_since = None
        if not added:
            return
        log.info("group %s: this client now reads %s", self.group_id, describe_keys(added))
        # the client's consumer (the factory's), which is librdkafka's ``consumer`` or wraps it
        found = look_up(self._consumer or consumer, partitions, timeout=min(5.0, self.session_timeout / 2))
        self.counters.partitions_without_offset += len(found.missing)
        self.counters.partitions_committed_by_others += sum(len(keys) for keys in found.foreign.values())
        self._unanchored |= found.missing
        report(self.group_id, found, self._reset)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions going to another member: commit what the store has of them, let go of the rest."""
        gone = {(tp.topic, tp.partition) for tp in partitions}
        if gone & self._uncommitted.keys():
            self._commit(only=gone)
        self._let_go(gone, "handed over")

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions taken away (the group stopped hearing this client): nothing of them may be committed."""
        gone = {(tp.topic, tp.partition) for tp in partitions}
        for key in gone:
            self._uncommitted.pop(key, None)
        self._let_go(gone, "lost (the group's session timed out)")

    def _let_go(self, gone: set[PartitionKey], how: str) -> None:
        self._assigned -= gone
        self._at_end -= gone
        self._unanchored -= gone
        if self._pending is not None:
            self._pending = self._pending.without(gone)
        if gone:
            log.info("group %s: %s %s", self.group_id, how, describe_keys(gone))


def _describe(offsets: Sequence[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset if tp.offset >= 0 else 'start'}" for tp in offsets)
