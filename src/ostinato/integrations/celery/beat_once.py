"""Each fire time published once on a Redis broker, whatever happens to the beat that sent it (see
docs/reference/distributed.md#celery-beat).

A beat records a send in the store right after the broker took the message. A beat killed between
the two leaves a claim that looks unsent, and the beat that takes it over when its lease ends would
publish it again. On a Redis broker this module closes that window: a beat's messages that carry
the ``ostinato_fire_time`` header are published by one Lua script that sets a marker keyed on the
task id (derived from the schedule and the fire time) and pushes the message only if the marker
was not there, in one atomic step of the Redis server. The beat that takes a claim over then finds
the marker, pushes nothing, and records the fire time as sent. The marker lives
:data:`MARKER_TTL` (a day: longer than any lease and outage a claim waits through) until the
send is recorded, then :data:`RECORDED_TTL` (a paused beat's stale send still finds it).

Only the beat's own connection is changed (its transport class), never the app's: workers and
other producers publish as before. Other brokers (RabbitMQ), a ``global_keyprefix`` and queues
with an expiry publish as kombu does, and keep the window.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kombu import Connection
from kombu.transport import redis as kombu_redis
from kombu.utils.json import dumps

log = logging.getLogger(__name__)

#: the header that marks a beat's send (as in ``beat``)
FIRE_TIME_HEADER = "ostinato_fire_time"
#: a marker's key: this prefix and the task id
MARKER_PREFIX = "ostinato:sent:"
#: seconds a marker lives until its send is recorded in the store, and after
MARKER_TTL = 24 * 3600
RECORDED_TTL = 3600

#: KEYS: the marker, the queue; ARGV: the message, the marker's value, its time to live
_PUBLISH_ONCE = """
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'EX', tonumber(ARGV[3])) then
  redis.call('LPUSH', KEYS[2], ARGV[1])
  return 1
end
return 0
"""


def marker_key(task_id: str) -> str:
    return f"{MARKER_PREFIX}{task_id}"


class OnceChannel(kombu_redis.Channel):
    """kombu's Redis channel, but a message of a fire time is pushed only if its marker was absent."""

    #: sends found already published (by a beat that died before recording them)
    already_published = 0

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        headers = message.get("headers") or {}
        task_id, fire = headers.get("id"), headers.get(FIRE_TIME_HEADER)
        expires = getattr(self, "_expires", None)
        prefix = getattr(self, "global_keyprefix", "")
        if (not isinstance(task_id, str) or fire is None or kwargs.get("_publish_batch") is not None
                or prefix or (expires and queue in expires)):
            return super()._put(queue, message, **kwargs)
        key = self._q_for_pri(  # type: ignore[attr-defined]  # kombu's Redis channel has it; its stubs omit it
            queue, self._get_message_priority(message, reverse=False))
        sender = fire.get("sender", "") if isinstance(fire, dict) else ""
        with self.conn_or_acquire() as client:
            pushed = client.eval(_PUBLISH_ONCE, 2, marker_key(task_id), key, dumps(message), sender or "-",
                                 MARKER_TTL)
        if not pushed:
            self.already_published += 1
            log.warning("beat: task %s (%s) was already published by another beat; not sent again", task_id,
                        fire)

    def recorded(self, task_ids: Iterable[str]) -> None:
        """The sends of these task ids are recorded in the store: their markers may go sooner."""
        ids = list(task_ids)
        prefix = getattr(self, "global_keyprefix", "")
        if not ids or prefix:
            return
        with self.conn_or_acquire() as client:
            with client.pipeline(transaction=False) as pipe:
                for task_id in ids:
                    pipe.expire(marker_key(task_id), RECORDED_TTL)
                pipe.execute()


class OnceTransport(kombu_redis.Transport):
    Channel = OnceChannel


class OnceSentinelTransport(kombu_redis.SentinelTransport):
    Channel = type("OnceSentinelChannel", (OnceChannel, kombu_redis.SentinelChannel), {})


_ONCE = {"redis": OnceTransport, "rediss": OnceTransport, "sentinel": OnceSentinelTransport}


def once_connection(connection: Connection) -> Connection:
    """The beat's broker connection, made to publish each fire time once when the broker is Redis."""
    name = connection.transport_cls
    if isinstance(name, str) and name in _ONCE:
        connection.transport_cls = _ONCE[name]  # type: ignore[assignment]  # kombu takes a class as well as a name
    return connection
