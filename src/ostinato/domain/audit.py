"""The audit trail: who did what to which object, when, and how it went.

An :class:`AuditEvent` is one action a person took through the dashboard (pause, resume or run now
a schedule; disable, enable or retry a task): the name of the API token that asked (``actor``),
the server clock's time (``at``), the action (``schedule.pause``), its target (``schedule:bills``,
``task:12``, see :func:`target_of`) and its outcome, one line (``done``, or why it was refused).
The stores only add events and read the newest back; this module holds the checks of what they keep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .limits import TIME_RANGE, check_stored_text, check_time_range

#: an API token's name is at most 200 characters: its UTF-8 at most 800 bytes
MAX_ACTOR_BYTES = 800
#: ``schedule:`` and a schedule's name (200 characters), ``task:`` and an id
MAX_TARGET_BYTES = 300
MAX_OUTCOME_BYTES = 1000
#: an action: lowercase words joined by ``.``, ``-`` or ``_`` (``schedule.run-now``)
_ACTION = re.compile(r"[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*")
_MAX_ACTION = 64
#: a target: a kind and a key (``schedule:bills``, ``task:12``)
_TARGET = re.compile(r"[a-z][a-z0-9_-]*:\S.*")


def target_of(kind: str, key: Any) -> str:
    """The target an event names: ``schedule:bills``, ``task:12``."""
    return f"{kind}:{key}"


def one_line(text: Any, max_bytes: int = MAX_OUTCOME_BYTES) -> str:
    """``text`` as an outcome can keep it: one line (line breaks and tabs as spaces), at most
    ``max_bytes`` of UTF-8 (cut with ``…``), unpaired surrogates and NUL characters replaced."""
    flat = " ".join(str(text).replace("\x00", " ").split())
    flat = flat.encode("utf-8", "replace").decode("utf-8")
    if len(flat.encode("utf-8")) <= max_bytes:
        return flat
    cut = flat.encode("utf-8")[:max_bytes - len("…".encode())].decode("utf-8", "ignore")
    return cut + "…"


def _check_line(value: Any, field: str, max_bytes: int, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ValidationError(field, f"{what} (non-empty, no surrounding spaces)", value)
    if any(c in value for c in "\n\r\t\x0b\x0c\x85\u2028\u2029"):
        raise ValidationError(field, f"{what} on one line", value[:80])
    return check_stored_text(value, field, max_bytes)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One action of a person, as the audit trail keeps it."""

    #: when it was done: the server's clock
    at: datetime
    #: the name of the API token that asked
    actor: str
    #: ``schedule.pause``, ``schedule.resume``, ``schedule.run-now``, ``task.disable``, ``task.enable``, ``task.retry``
    action: str
    #: ``schedule:NAME``, ``task:ID`` (:func:`target_of`)
    target: str
    #: ``done`` with what changed, or ``refused: why``: one line
    outcome: str
    #: given by the store when it keeps the event; newer events have greater ids
    id: int | None = None

    def validated(self) -> AuditEvent:
        """The same event, checked: a ValidationError names the first field at fault."""
        if not isinstance(self.at, datetime) or self.at.tzinfo is None:
            raise ValidationError("at", f"a time with a zone, {TIME_RANGE}", self.at)
        check_time_range(self.at, "at")
        _check_line(self.actor, "actor", MAX_ACTOR_BYTES, "the name of the API token that acted")
        if not isinstance(self.action, str) or len(self.action) > _MAX_ACTION or not _ACTION.fullmatch(self.action):
            raise ValidationError("action", f"an action such as schedule.pause (lowercase words joined by . - or _, "
                                  f"at most {_MAX_ACTION} characters)", self.action)
        _check_line(self.target, "target", MAX_TARGET_BYTES, "a target such as schedule:NAME or task:ID")
        if not _TARGET.fullmatch(self.target):
            raise ValidationError("target", "a target such as schedule:NAME or task:ID", self.target)
        _check_line(self.outcome, "outcome", MAX_OUTCOME_BYTES, "what came of it, such as done")
        if self.id is not None and (isinstance(self.id, bool) or not isinstance(self.id, int) or self.id < 1):
            raise ValidationError("id", "the store's id of the event (a positive whole number), or none", self.id)
        return self

    def kept(self, event_id: int) -> AuditEvent:
        """The event with the id the store gave it."""
        return replace(self, id=event_id)


def applied_fields(held: Any, given: Any, fields: Any) -> tuple[Any, list[str]]:
    """An operator's update: ``held`` (a dataclass as stored, read under its lock) with those of ``fields``
    that differ in ``given`` taken from it, and their names, in the order of ``fields``."""
    changed = [f for f in fields if getattr(given, f) != getattr(held, f)]
    return replace(held, **{f: getattr(given, f) for f in changed}), changed


def update_outcome(changed: list[str]) -> str:
    """The outcome an update's audit event keeps: the fields it changed, or that it changed none."""
    return one_line(f"done: changed {', '.join(changed)}" if changed else "done: unchanged")


__all__ = ["AuditEvent", "MAX_ACTOR_BYTES", "MAX_OUTCOME_BYTES", "MAX_TARGET_BYTES", "applied_fields", "one_line",
           "target_of", "update_outcome"]
