"""The audit role: the trail of what people did through the dashboard (``domain.audit``).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc

from ...domain.audit import AuditEvent

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
REMOTE_SCOPES: dict[str, str] = {"list_audit": "read"}
NOT_REMOTE: dict[str, str] = {
    "record_audit": "the trail is written by the operator verbs themselves, in their own transactions, with the "
                    "actor the server authenticated: no client writes an event of its own",
}


class AuditStore(abc.ABC):
    """The trail of what people did through the dashboard: events only added, read newest first."""

    @abc.abstractmethod
    def record_audit(self, event: AuditEvent) -> AuditEvent:
        """Keep ``event`` (its ``id`` is ignored) and answer it with the id the store gave it, greater
        than every id given before. ValidationError naming the field of an event that cannot be kept
        (``AuditEvent.validated``), and nothing is written."""

    @abc.abstractmethod
    def list_audit(self, *, target: str | None = None, limit: int = 50,
                   before_id: int | None = None) -> list[AuditEvent]:
        """The newest events (greatest id first), of ``target`` only if given, at most ``limit``,
        those older than ``before_id`` if given (the id of the previous page's last event).
        ValidationError naming ``limit`` or ``before_id`` if negative."""
