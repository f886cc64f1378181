"""The audit role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`.

An event is one row of ``audit_event``; its id orders the trail (newest first), and a target's
newest events are an index walk (``audit_event_target_idx``).
"""

from __future__ import annotations

from ...domain.audit import AuditEvent
from ...domain.errors import ValidationError
from ...domain.limits import check_stored_text
from ..dialect import Connection, Dialect, Row
from .interface import AuditStore

#: greater than any id (the first page of a listing)
_NO_BOUND = 2**62


def write_audit(db: Dialect, conn: Connection, event: AuditEvent) -> AuditEvent:
    """Keep a checked ``event`` in the transaction of ``conn``: an action and its event are written
    together or not at all. The event as kept, with its id."""
    params = {"at": db.time(event.at), "actor": event.actor, "action": event.action, "target": event.target,
              "outcome": event.outcome}
    row = conn.execute(db.queries("audit").insert_audit_event, params).fetchone()
    return event.kept(int(row["id"]))


class AuditFlow(AuditStore):
    db: Dialect

    @property
    def _audit(self):
        return self.db.queries("audit")

    def record_audit(self, event: AuditEvent) -> AuditEvent:
        if not isinstance(event, AuditEvent):
            raise ValidationError("event", "an AuditEvent", type(event).__name__)
        event = event.validated()
        with self.db.write() as conn:
            return write_audit(self.db, conn, event)

    def list_audit(self, *, target: str | None = None, limit: int = 50,
                   before_id: int | None = None) -> list[AuditEvent]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError("limit", "a whole number of events, 0 or more", limit)
        if before_id is not None and (isinstance(before_id, bool) or not isinstance(before_id, int) or before_id < 0):
            raise ValidationError("before_id", "the id of the previous page's last event (0 or more), or none",
                                  before_id)
        if target is not None:
            if not isinstance(target, str):
                raise ValidationError("target", "a target such as schedule:NAME or task:ID, or none", target)
            check_stored_text(target, "target")
        params = {"limit": limit, "before_id": _NO_BOUND if before_id is None else min(before_id, _NO_BOUND)}
        if target is None:
            rows = self.db.read(self._audit.list_audit_events, params)
        else:
            rows = self.db.read(self._audit.list_audit_events_of_target, {**params, "target": target})
        return [self._audit_event(r) for r in rows]

    def _audit_event(self, row: Row) -> AuditEvent:
        return AuditEvent(at=self.db.read_time(row["at"]), actor=row["actor"], action=row["action"],
                          target=row["target"], outcome=row["outcome"], id=int(row["id"]))
