"""Schedules declared in code: the code is the source of truth. Pure rules.

A **source** (``python:<name>`` for a :class:`ostinato.Schedules`, ``beat:<app>`` for a Celery
app's ``beat_schedule``) declares a set of schedules. At start-up the set is applied in one
transaction (``ScheduleStore.apply_declarations``): declared schedules are created or updated,
and the source's schedules no longer declared are paused (never deleted: their history stays).

Several processes may start with different versions of the code (a rolling deploy, an old
process restarted). Each set has a **fingerprint** (of every declared definition); the store
remembers when it first saw each fingerprint of a source, and **the newest declaration wins**:
a process whose set was first seen before the newest one applies nothing and runs what the
store holds. Rolling back to an older set means applying it with ``force`` (which makes it the
newest).

An operator's pause (``ostinato schedule pause``) of a declared schedule holds until the
declarations change.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .errors import ConflictError, ValidationError
from .schedules import Schedule

#: a source's name: a kind (python, beat), a colon, and a name
_SOURCE = re.compile(r"^[a-z]+:[A-Za-z0-9_.@:/-]{1,190}$")
#: the fields a declaration sets; the rest of a schedule is state (and its name, its key)
DEFINITION_FIELDS = ("kind", "task_type", "arguments", "mode", "scheduling_period", "cooldown_duration",
                     "cron_schedule", "cron_max_schedule_duration", "tz", "max_expected_duration",
                     "max_allowed_duration", "blackout_periods", "dont_run_on_nodes", "catch_up", "retry_backoff",
                     "options", "expected_duration", "partial_failure_threshold")
#: definition fields added after declarations were first fingerprinted: they count in a definition only
#: when set, so that a declaration setting none keeps its fingerprint (and its stored schedules) across
#: the upgrade that added them
_LATER_FIELDS = ("expected_duration", "partial_failure_threshold")


@dataclass(frozen=True, slots=True)
class Declaration:
    """One source's set of declared schedules (each validated), and whether to apply it even when a
    newer set was seen (``force``: a deliberate roll back)."""

    source: str
    schedules: tuple[Schedule, ...]
    force: bool = False

    def validated(self) -> Declaration:
        if not isinstance(self.source, str) or not _SOURCE.fullmatch(self.source):
            raise ValidationError("source", "a kind and a name, such as python:reports or beat:proj", self.source)
        checked, seen = [], set()
        for index, schedule in enumerate(self.schedules):
            if not isinstance(schedule, Schedule):
                raise ValidationError("schedules", "schedules", type(schedule).__name__, record=f"schedule {index}")
            try:
                item = replace(schedule, declared_by=self.source).validated()
            except ValidationError as exc:
                raise exc.at(f"schedule {schedule.name}") from None
            if item.name in seen:
                raise ValidationError("name", "each schedule declared once", item.name, record=f"schedule {item.name}")
            seen.add(item.name)
            checked.append(item)
        return Declaration(self.source, tuple(sorted(checked, key=lambda s: s.name)), bool(self.force))

    @property
    def fingerprint(self) -> str:
        """What identifies this set: a digest of the source and every declared definition."""
        body = json.dumps([self.source, [[s.name, definition_of(s), s.enabled] for s in
                                         sorted(self.schedules, key=lambda s: s.name)]],
                          sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class DeclarationOutcome:
    """What applying a declaration did: nothing when a newer one was seen (``applied`` False)."""

    source: str
    fingerprint: str
    applied: bool
    #: the newest fingerprint of the source (this one when applied) and when it was first seen
    newest: str
    newest_seen_at: datetime
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    paused: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()


def definition_of(schedule: Schedule) -> dict[str, Any]:
    """The declared part of a schedule as comparable JSON values."""
    from .schedule_records import schedule_to_dict

    data = schedule_to_dict(schedule)
    return {name: data[name] for name in DEFINITION_FIELDS if name not in _LATER_FIELDS or data[name] is not None}


def reconcile(declared: Schedule, stored: Schedule | None, fingerprint: str,
              now: datetime) -> tuple[Schedule | None, str]:
    """The schedule to write for ``declared`` given what is ``stored`` under its name (None: nothing
    to write), and what that is: ``created``, ``updated`` or ``unchanged`` (the definition is the
    same; only the fingerprint may move). The state (runs, fire times, ownership) is kept."""
    if stored is None:
        return replace(declared, created_at=now, declaration=fingerprint), "created"
    if stored.declared_by != declared.declared_by:
        owner = f"declared by {stored.declared_by}" if stored.declared_by else "added by hand"
        raise ConflictError(f"schedule {declared.name!r} exists and is {owner}, not declared by "
                            f"{declared.declared_by}: rename one of them, or delete the stored one")
    same = definition_of(stored) == definition_of(declared)
    if same and stored.declaration == fingerprint:
        return None, "unchanged"  # as declared (an operator's pause holds)
    changed = {name: getattr(declared, name) for name in DEFINITION_FIELDS}
    after = replace(stored, **changed, enabled=declared.enabled, declaration=fingerprint)
    return after, "unchanged" if same and stored.enabled == declared.enabled else "updated"


def retire(stored: Schedule, fingerprint: str) -> Schedule | None:
    """A schedule of the source that the declarations no longer name: paused, its history kept
    (None: already paused by these declarations)."""
    if not stored.enabled and stored.declaration == fingerprint:
        return None
    return replace(stored, enabled=False, declaration=fingerprint)
