"""The schedules role: schedules, the deadline-greedy pick, ownership leases, pings, steals and run history (see docs/design/deadline-greedy.md).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ...domain.declarations import Declaration, DeclarationOutcome
from ...domain.firings import Claim, FiringRecord
from ...domain.lookahead import NODE_TTL, Hold, NodeLoad, PickRule
from ...domain.schedules import RunStatus, Schedule, ScheduleRun, ScheduleTiming

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: Not served: waiting for changes (no push over HTTP) and pick_schedule (the client computes it
#: from pick_schedules).
REMOTE_SCOPES: dict[str, str] = {
    "create_schedule": "admin", "delete_schedule": "admin", "end_schedule_run": "worker", "get_schedule": "read",
    "list_schedule_runs": "read", "list_schedules": "read", "next_can_start_by": "read", "pick_schedules": "worker",
    "ping_schedule": "worker", "release_owner_schedules": "worker", "save_schedule": "admin", "steal_silent_schedules": "worker",
    "apply_declarations": "worker", "catch_up_schedules": "worker", "list_firings": "read",
    "claim_firings": "worker", "mark_firings_sent": "worker", "release_firings": "worker", "next_send_at": "read",
    "request_schedule_run": "admin", "pause_schedule": "admin", "resume_schedule": "admin",
    "update_schedule": "admin", "claim_run_now": "admin",
    "heartbeat_scheduler": "worker", "list_schedulers": "read", "list_holds": "read",
}
NOT_REMOTE: dict[str, str] = {
    "listen_schedule_changes": "no push over HTTP: the client answers False and schedulers poll",
    "pick_schedule": "computed on the client from pick_schedules",
}


class ScheduleStore(abc.ABC):
    """schedules, the deadline-greedy pick, ownership leases, pings, steals and run history (see docs/design/deadline-greedy.md)."""

    # -- schedules (see docs/design/deadline-greedy.md) ---------------------------------
    @abc.abstractmethod
    def create_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        """Store a new schedule (validated) with its start times; ConflictError if the name exists."""

    @abc.abstractmethod
    def get_schedule(self, name: str) -> Schedule | None: ...

    @abc.abstractmethod
    def list_schedules(self, *, after: str = "", limit: int = 100) -> list[Schedule]:
        """Schedules by name, paged by ``after``, the last name of the previous page."""

    @abc.abstractmethod
    def save_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        """Write a changed schedule (definition or state) and its new start times; NotFoundError if missing."""

    @abc.abstractmethod
    def update_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                        fields: Sequence[str] | None = None, actor: str) -> Schedule:
        """Give the schedule of that name the definition of ``schedule`` (the fields of
        ``domain.declarations.DEFINITION_FIELDS``, or only those named in ``fields``: another operator's
        change of the others, committed meanwhile, is kept), under the row's lock: its state (runs, owner,
        start times, paused or not) stays as the row holds it, so a run's end committed meanwhile is kept. The
        audit event ``schedule.update`` of ``actor`` (the fields changed) in the same transaction. The
        schedule as saved. NotFoundError if missing; ConflictError for one declared in code (change it
        there); ValidationError for a definition that cannot be kept; nothing written on a refusal."""

    @abc.abstractmethod
    def pause_schedule(self, name: str, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                       actor: str) -> Schedule:
        """Stop picking the schedule (a run in progress finishes as usual): changed under the row's lock,
        with the audit event ``schedule.pause`` of ``actor`` in the same transaction (outcome
        ``done: paused``, or ``done: unchanged, it was already paused``). The schedule as saved. NotFoundError for an unknown name,
        and nothing written. Over the store RPC, ``actor`` is the token's name, whatever the client sent."""

    @abc.abstractmethod
    def resume_schedule(self, name: str, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                        actor: str) -> Schedule:
        """Pick the schedule again: as :meth:`pause_schedule`, with the event ``schedule.resume``
        (outcome ``done: resumed``, or ``done: unchanged, it was not paused``)."""

    @abc.abstractmethod
    def request_schedule_run(self, name: str, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                             actor: str) -> Schedule:
        """Ask for a run of ``name`` now (``domain.run_now.request_run``), under the row's lock: it can start
        at once and should by the moment asked; asked while a run is in progress, it starts when that one ends
        (never two at once). One the beats send (mode send) gets instead a fire time of its own at ``now``,
        handed to the beats (:meth:`claim_run_now` with no lease), its state unchanged. The audit event
        ``schedule.run-now`` of ``actor`` in the same transaction. NotFoundError if missing; ConflictError,
        saying why, if paused; nothing written."""

    @abc.abstractmethod
    def claim_run_now(self, name: str, now: datetime, *, sender: str, tag: str, lease: timedelta,
                      actor: str) -> Claim:
        """A fire time of its own at ``now`` for a schedule the beats send (mode send), claimed under ``tag``
        by ``sender`` until ``now + lease``, with the audit event ``schedule.run-now`` of ``actor``, under the
        row's lock: the claimer sends it through Celery and marks it sent (``mark_firings_sent``); if it
        cannot, the claim's lease ends and a beat sends it. A ``lease`` of 0 hands it to the beats at once.
        NotFoundError if missing; ConflictError saying why for a paused schedule or one of another mode."""

    @abc.abstractmethod
    def delete_schedule(self, name: str, now: datetime, *, actor: str) -> bool:
        """Delete a schedule, its run history and its ledger of fire times, with the audit event
        ``schedule.delete`` of ``actor`` in the same transaction; False, and nothing written, if there was none."""

    @abc.abstractmethod
    def pick_schedules(self, *, node: str, owner_name: str, tags: Sequence[str], now: datetime,
                       rule: PickRule | None = None) -> list[tuple[Schedule, ScheduleRun]]:
        """The deadline-greedy pick, as one index walk, for up to ``len(tags)`` schedules at once: among
        enabled schedules not running and not excluded on ``node``, with ``can_start_by`` past,
        the lowest ``should_start_by`` first; take their ownership (one tag each) and open their
        runs, in one transaction. Concurrent pickers never take the same schedule.

        With a ``rule`` (``domain.lookahead``): its order, and with its lookahead a plan over the
        horizon from the K most urgent that can start, the K next due, the live schedulers
        (:meth:`heartbeat_scheduler`) and the holds in force; the scheduler ``node``/``owner_name``'s
        holds are replaced by the plan's in the same transaction. It may start fewer than it has
        room for: the slots it holds."""

    @abc.abstractmethod
    def heartbeat_scheduler(self, node: str, instance: str, *, slots: int, run_ends: Sequence[datetime],
                            now: datetime, ttl: timedelta = NODE_TTL) -> None:
        """A scheduler is live, with ``slots`` and runs in flight expected to end at ``run_ends``: the
        registry lookahead plans with. Schedulers silent for many ``ttl`` are forgotten."""

    @abc.abstractmethod
    def list_schedulers(self, now: datetime, *, ttl: timedelta = NODE_TTL) -> list[NodeLoad]:
        """The live schedulers (a heartbeat within ``ttl``), by node and instance."""

    @abc.abstractmethod
    def list_holds(self, now: datetime, *, schedule: str | None = None) -> list[Hold]:
        """The holds in force (of every scheduler, or for one schedule), soonest due first."""

    def pick_schedule(self, *, node: str, owner_name: str, tag: str, now: datetime) -> tuple[Schedule, ScheduleRun] | None:
        """One schedule: :meth:`pick_schedules` with one tag."""
        picked = self.pick_schedules(node=node, owner_name=owner_name, tags=[tag], now=now)
        return picked[0] if picked else None

    @abc.abstractmethod
    def ping_schedule(self, name: str, tag: str, now: datetime) -> bool:
        """The owner's ping (clears a steal mark); False when the schedule is no longer ours."""

    @abc.abstractmethod
    def end_schedule_run(self, name: str, tag: str, *, status: RunStatus, ended: datetime,
                         detail: Mapping[str, Any] | None = None, timing: ScheduleTiming = ScheduleTiming()) -> bool:
        """End our run: the schedule's state moves by the schedule rules and ownership is released.
        False (the run recorded as stolen) when the schedule was taken over meanwhile."""

    @abc.abstractmethod
    def steal_silent_schedules(self, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                               limit: int = 100) -> dict[str, list[str]]:
        """The two-step steal over owners silent for ``ping_timeout``: returns the names
        ``marked`` and those ``taken`` (their runs ended as lost, a failure, the schedule free)."""

    @abc.abstractmethod
    def release_owner_schedules(self, node: str, owner_name: str, now: datetime,
                                timing: ScheduleTiming = ScheduleTiming()) -> list[str]:
        """At start-up: runs left by an earlier process of this node and name end as lost."""

    def listen_schedule_changes(self, wake: Callable[[], None], stop: threading.Event) -> bool:
        """Call ``wake`` whenever a schedule is added or changed, until ``stop`` (blocking).
        Returns False at once where the store has no such hint (schedulers then poll)."""
        return False

    @abc.abstractmethod
    def next_can_start_by(self) -> datetime | None:
        """The earliest ``can_start_by`` of a schedule that could be picked (how long to sleep)."""

    @abc.abstractmethod
    def list_schedule_runs(self, name: str, *, limit: int = 100, before_id: int | None = None) -> list[ScheduleRun]:
        """A schedule's run history, newest first."""

    # -- fire times: declarations, catch-up, the ledger (domain.firings, domain.declarations) ----
    @abc.abstractmethod
    def apply_declarations(self, declaration: Declaration, now: datetime,
                           timing: ScheduleTiming = ScheduleTiming()) -> DeclarationOutcome:
        """A source's declared schedules, in one transaction: created or updated, and the source's
        schedules it no longer declares paused (kept with their history). Nothing is written when a
        newer set of the source was seen (unless ``force``): the newest declaration wins."""

    @abc.abstractmethod
    def catch_up_schedules(self, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                           sender: str | None = None, limit: int = 100) -> list[FiringRecord]:
        """Calendar schedules the scheduler runs whose fire times piled up (an outage): what their
        catch-up rule does not run is skipped and recorded; returns the records written."""

    @abc.abstractmethod
    def list_firings(self, name: str, *, limit: int = 20, before: datetime | None = None) -> list[FiringRecord]:
        """A schedule's ledger of fire times (claimed, sent, skipped), newest first."""

    @abc.abstractmethod
    def claim_firings(self, *, sender: str, tag: str, now: datetime, lease: timedelta,
                      timing: ScheduleTiming = ScheduleTiming(), limit: int = 100, take_over: bool = True) -> list[Claim]:
        """A beat's claim, in one transaction: fire times of schedules it sends (mode ``send``) that
        are due, and (with ``take_over``) claims whose lease ended, each claimed under ``tag`` until
        ``now + lease``; the catch-up rule's skips recorded. No fire time is ever claimed twice while
        its claim holds, and none once sent (the ledger's key is the schedule and the fire time)."""

    @abc.abstractmethod
    def mark_firings_sent(self, tag: str, sent: Sequence[tuple[str, datetime]], now: datetime) -> None:
        """Record as sent the fire times (schedule, fire time) claimed under ``tag`` that the broker took."""

    @abc.abstractmethod
    def release_firings(self, tag: str, firings: Sequence[tuple[str, datetime]], now: datetime) -> None:
        """Claims under ``tag`` that will not be sent by their beat: another may take them at once."""

    @abc.abstractmethod
    def next_send_at(self) -> datetime | None:
        """The next fire time a beat should send, or the next end of a claim's lease."""

