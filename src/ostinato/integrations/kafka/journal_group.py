"""What the journal client's consumer group tells it, and the faults it reports plainly: no committed offset,
offsets another program committed, members of another assignment protocol.

**No committed offset.** A partition the group has no committed offset for (a new group, or one whose
offsets the brokers no longer have: expired after ``offsets.retention.minutes`` with no member running,
or deleted) starts where ``auto.offset.reset`` says: ``earliest`` reads its statuses again (safe: replays
change nothing), ``latest`` skips every status written before now (a possible loss). Kafka cannot tell a
new group from a forgotten one (both simply have no offsets), so neither does the client: one line names
the group, the partitions and where they start. Under ``latest`` the client then commits each such
partition's starting position as soon as it reaches it, so that a restart resumes there instead of
skipping what was written while it was down.

**Who committed.** The client stamps its commits with the offset-commit metadata :data:`COMMIT_METADATA`
(``ostinato-journal-client/<version>``). A committed offset whose metadata names another program means
another program shares the group id (its statuses went to its store, not necessarily this one): one
warning line. Every Ostinato version commits the same thing (the next offset after what the store has),
so an offset from another Ostinato version is resumed from as is. An offset without metadata (older
Ostinato clients, admin tools, most programs) says nothing about who committed it. Kafka keeps the
metadata (``offset.metadata.max.bytes``, 4 KiB by default); Tansu 0.6.0, the test broker, drops it (its
offset store keeps the offset alone), so there this check never fires.

**Another assignment protocol.** Every member of a group must share an assignment protocol; this client
uses ``cooperative-sticky``, librdkafka's default is ``range,roundrobin`` (eager). The brokers answer a
member whose protocols share none with the group's ``INCONSISTENT_GROUP_PROTOCOL`` (Kafka and Tansu alike)
and librdkafka tries again every few seconds, for ever: the client waits one session timeout for the
other member to leave (a rolling upgrade), then stops with :class:`GroupProtocolConflict`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

from confluent_kafka import KafkaException, TopicPartition

from ...domain.errors import OstinatoError

log = logging.getLogger("ostinato.integrations.kafka.journal_client")

PartitionKey = tuple[str, int]

#: what the client's commits say about who made them (Kafka's offset-commit metadata)
COMMITTER: Final = "ostinato-journal-client"
try:
    _VERSION = version("ostinato")
except PackageNotFoundError:  # run from a source tree that was never installed
    _VERSION = "unknown"
COMMIT_METADATA: Final = f"{COMMITTER}/{_VERSION}"

_RESETS: Final = {"smallest": "earliest", "earliest": "earliest", "beginning": "earliest",
                  "largest": "latest", "latest": "latest", "end": "latest", "error": "error"}
_FORGOTTEN: Final = ("a new group, or one whose offsets the brokers no longer have: expired after "
                     "offsets.retention.minutes with no member running, or deleted")


def reset_policy(value: Any) -> str:
    """``earliest``, ``latest`` or ``error``: librdkafka's ``auto.offset.reset`` and its synonyms."""
    return _RESETS.get(str(value).strip().lower(), str(value))


def describe_keys(keys: Iterable[PartitionKey]) -> str:
    """``topic[0, 1, 2], other[0]``: the partitions, grouped by topic."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(set(keys)):
        by_topic.setdefault(topic, []).append(partition)
    return ", ".join(f"{topic}[{', '.join(map(str, partitions))}]" for topic, partitions in by_topic.items())


class GroupProtocolConflict(OstinatoError):
    """The brokers refuse this client in its group: a member of another assignment protocol holds it."""

    def __init__(self, group_id: str, strategy: str, waited: float):
        self.group_id = group_id
        super().__init__(
            f"group {group_id}: the brokers refuse this client (INCONSISTENT_GROUP_PROTOCOL) for {waited:.0f} s: "
            f"a member of this group id uses another partition assignment protocol than this client's ({strategy}), "
            "so it is a client of another version or another program (librdkafka's default is range,roundrobin); "
            "give this client a group id of its own (--group-id), or stop the other one")


@dataclass
class CommittedOffsets:
    """What the group has committed for partitions just given to the client."""

    #: partitions with no committed offset
    missing: set[PartitionKey] = field(default_factory=set)
    #: committer (the metadata of another program's commit) → its partitions
    foreign: dict[str, set[PartitionKey]] = field(default_factory=dict)
    #: another Ostinato version → its partitions (resumed from as is)
    other_versions: dict[str, set[PartitionKey]] = field(default_factory=dict)
    #: why the lookup failed, if it did
    failure: str | None = None


def look_up(consumer: Any, partitions: list[TopicPartition], timeout: float) -> CommittedOffsets:
    """The group's committed offsets (and who committed them) of ``partitions``, waiting at most ``timeout``."""
    found = CommittedOffsets()
    try:
        committed = consumer.committed([TopicPartition(tp.topic, tp.partition) for tp in partitions], timeout=timeout)
    except KafkaException as exc:
        found.failure = str(exc.args[0] if exc.args else exc)
        return found
    for tp in committed:
        key = (tp.topic, tp.partition)
        if tp.error is not None:
            found.failure = f"{describe_keys([key])}: {tp.error}"
        elif tp.offset < 0:
            found.missing.add(key)
        elif tp.metadata and tp.metadata != COMMIT_METADATA:
            into = found.other_versions if tp.metadata.startswith(f"{COMMITTER}/") else found.foreign
            into.setdefault(tp.metadata[:200], set()).add(key)
    return found


def report(group_id: str, found: CommittedOffsets, reset: str) -> None:
    """One line per fault: partitions without an offset (where they start), another program's offsets."""
    if found.failure is not None:
        log.warning("group %s: could not look up the committed offsets of the partitions given to this client "
                    "(%s); a partition without one starts at its %s message", group_id, found.failure, reset)
    if found.missing:
        where = describe_keys(found.missing)
        if reset == "earliest":
            log.warning("group %s: no committed offset for %s (%s): reading them from their earliest message "
                        "(auto.offset.reset=earliest); statuses already applied are read again, which changes "
                        "nothing but takes a while", group_id, where, _FORGOTTEN)
        elif reset == "latest":
            log.warning("group %s: no committed offset for %s (%s): starting them at their end (--from-end, "
                        "auto.offset.reset=latest), so statuses written to them before now are NOT read and never "
                        "reach the visit stats; to read them, run once with a new group id and --from-beginning "
                        "(replays change nothing); to avoid this, keep --from-beginning, the default",
                        group_id, where, _FORGOTTEN)
        else:
            log.warning("group %s: no committed offset for %s (%s), and auto.offset.reset=%s: they are not read",
                        group_id, where, _FORGOTTEN, reset)
    for committer, keys in sorted(found.foreign.items()):
        log.warning("group %s: the offsets of %s were committed by %r, not by an Ostinato journal client: another "
                    "program shares this group id. Resuming from them, but the statuses it committed past went to "
                    "its store, not necessarily this one: give each program its own group id (--group-id), and to "
                    "read them again run once with a new group id and --from-beginning (replays change nothing)",
                    group_id, describe_keys(keys), committer)
    for committer, keys in sorted(found.other_versions.items()):
        log.info("group %s: the offsets of %s were committed by %s (this is %s); they mean the same, resuming "
                 "from them", group_id, describe_keys(keys), committer, COMMIT_METADATA)
