"""Capture the Celery messages waiting in a Redis broker, raw, with kombu (nothing executes them), and
put them in a form two senders' messages can be compared in, field by field.

:func:`capture` finds every queue that holds messages (Redis keeps a queue as a list named after
it), takes each message with ``Queue.get`` and returns it as :class:`Captured`: the queue it was
in, the exchange and routing key it was published with, its properties, its headers and its
decoded body (Celery's task protocol 2: ``[args, kwargs, embed]``).
:meth:`Captured.normalised` drops only what differs between any two sends of the same work:
the task id (and the headers and properties that repeat it), the producer's ``origin``
(``gen<pid>@<host>``), the ``reply_to`` and ``delivery_tag`` kombu draws at random.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis as redis_client
from kombu import Connection, Queue

#: what differs between two sends of the same work, whoever sends it
PER_SEND_HEADERS = ("id", "root_id", "origin")
PER_SEND_PROPERTIES = ("correlation_id", "reply_to", "delivery_tag")


@dataclass(frozen=True)
class Captured:
    queue: str
    exchange: str
    routing_key: str
    content_type: str
    content_encoding: str
    properties: dict[str, Any]
    headers: dict[str, Any]
    body: Any

    @property
    def task(self) -> str:
        return self.headers["task"]

    @property
    def args(self) -> list:
        return self.body[0]

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.body[1]

    def key(self) -> tuple[str, str]:
        """Which piece of work this is: the task's name and its url (or its arguments)."""
        return self.task, str(self.kwargs.get("url") or (self.args, sorted(self.kwargs.items())))

    def check_ids(self) -> None:
        """The task id is repeated where Celery repeats it; a first task is its own root, and has no parent."""
        task_id = self.headers["id"]
        assert self.properties["correlation_id"] == task_id, self
        assert self.headers["root_id"] == task_id and self.headers["parent_id"] is None, self

    def normalised(self, *, drop_headers: tuple[str, ...] = ()) -> dict[str, Any]:
        """Every field, less the ones of :data:`PER_SEND_HEADERS` and :data:`PER_SEND_PROPERTIES` (and ``drop_headers``)."""
        return {
            "queue": self.queue, "exchange": self.exchange, "routing_key": self.routing_key,
            "content_type": self.content_type, "content_encoding": self.content_encoding,
            "properties": {k: v for k, v in self.properties.items()
                           if k not in PER_SEND_PROPERTIES and k != "delivery_info"},
            "headers": {k: v for k, v in self.headers.items() if k not in PER_SEND_HEADERS + drop_headers},
            "args": self.args, "kwargs": self.kwargs, "kwargs_order": list(self.kwargs), "embed": self.body[2],
        }


def queues_with_messages(broker_url: str) -> list[str]:
    """The Redis lists that are queues holding messages (kombu's own bookkeeping keys aside)."""
    client = redis_client.Redis.from_url(broker_url)
    try:
        names = [key.decode() for key in client.keys("*") if client.type(key) == b"list"]
    finally:
        client.close()
    return sorted(n for n in names if not n.startswith(("_kombu", "unacked")))


def capture(broker_url: str) -> list[Captured]:
    """Take every waiting message off the broker, oldest first per queue; the queues are left empty."""
    found: list[Captured] = []
    with Connection(broker_url) as connection:
        channel = connection.channel()
        for name in queues_with_messages(broker_url):
            queue = Queue(name, channel=channel)
            while (message := queue.get(no_ack=True, accept=["json"])) is not None:
                info = message.delivery_info
                found.append(Captured(name, info.get("exchange"), info.get("routing_key"), message.content_type,
                                      message.content_encoding, dict(message.properties), dict(message.headers),
                                      message.decode()))
    return found


def differences(peer: dict[str, Any], ours: dict[str, Any], path: str = "") -> list[str]:
    """Where two normalised messages differ, one line per field: ``headers.ignore_result: False != True``."""
    if isinstance(peer, dict) and isinstance(ours, dict):
        lines = []
        for k in sorted(set(peer) | set(ours), key=str):
            where = f"{path}.{k}" if path else str(k)
            if k not in ours:
                lines.append(f"{where}: only the peer's has it ({peer[k]!r})")
            elif k not in peer:
                lines.append(f"{where}: only Ostinato's has it ({ours[k]!r})")
            else:
                lines += differences(peer[k], ours[k], where)
        return lines
    return [] if peer == ours and type(peer) is type(ours) else [f"{path}: {peer!r} != {ours!r}"]
