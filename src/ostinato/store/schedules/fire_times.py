"""The schedules role's fire times, written once over a :class:`~ostinato.store.dialect.Dialect`:
declarations applied from code, the catch-up pass of the deadline scheduler, and the ledger of
fire times (``schedule_firing``), whose primary key (schedule, fire time) is what lets a fire
time be claimed, sent or skipped only once whatever the number of processes.

The rules (which fire times are due, what a catch-up rule runs, what a declaration changes) are
``domain.firings`` and ``domain.declarations``; this flow reads, locks and writes. It is mixed
into :class:`~ostinato.store.schedules.flow.ScheduleFlow`, whose row conversions it uses.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ...domain.declarations import Declaration, DeclarationOutcome, reconcile, retire
from ...domain.firings import (
    Claim,
    FiringRecord,
    FiringStatus,
    claim_cursor,
    due_fire_times,
    plan_catch_up,
    skipped_record,
)
from ...domain.limits import MAX_TIME
from ...domain.schedules import Schedule, ScheduleTiming
from ..dialect import Connection, Dialect, Row
from ..queries import Queries

#: the channel a schedule's creation or change is announced on (see ``listen_schedule_changes``)
CHANNEL = "ostinato_schedules"


class FireTimeFlow:
    db: Dialect

    # provided by ScheduleFlow
    @property
    @abstractmethod
    def _schedules(self) -> Queries: ...  # pragma: no cover
    @abstractmethod
    def _schedule(self, row: Row) -> Schedule: ...  # pragma: no cover
    @abstractmethod
    def _schedule_params(self, schedule: Schedule, now: datetime, timing: ScheduleTiming) -> dict[str, Any]: ...  # pragma: no cover
    @abstractmethod
    def _state_params(self, schedule: Schedule, now: datetime, timing: ScheduleTiming) -> dict[str, Any]: ...  # pragma: no cover

    # -- declarations ----------------------------------------------------------
    def apply_declarations(self, declaration: Declaration, now: datetime,
                           timing: ScheduleTiming = ScheduleTiming()) -> DeclarationOutcome:
        declaration = declaration.validated()
        fingerprint, queries = declaration.fingerprint, self._schedules
        names = [s.name for s in declaration.schedules]
        with self.db.write() as conn:
            self.db.lock(conn, "ostinato.declarations")
            seen = {"source": declaration.source, "fingerprint": fingerprint, "now": self.db.time(now),
                    "schedules": len(names)}
            conn.execute(queries.force_declaration if declaration.force else queries.insert_declaration, seen)
            newest = conn.execute(queries.newest_declaration, {"source": declaration.source}).fetchone()
            outcome = DeclarationOutcome(declaration.source, fingerprint, newest["fingerprint"] == fingerprint,
                                         newest["fingerprint"], self.db.read_time(newest["first_seen_at"]))
            if not outcome.applied:
                return outcome
            stored = {r["name"]: self._schedule(r) for r in conn.execute(
                queries.declared_schedules, {"source": declaration.source, "names": self.db.array(names)}).fetchall()}
            return self._write_declared(conn, declaration, stored, outcome, now, timing)

    def _write_declared(self, conn: Connection, declaration: Declaration, stored: dict[str, Schedule],
                        outcome: DeclarationOutcome, now: datetime, timing: ScheduleTiming) -> DeclarationOutcome:
        """Create, update and pause, in the caller's transaction; the outcome says which."""
        fingerprint, declared = outcome.fingerprint, {s.name for s in declaration.schedules}
        seen: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
        paused, writes = [], []
        for schedule in declaration.schedules:
            before = stored.get(schedule.name)
            after, what = reconcile(schedule, before, fingerprint, now)
            seen[what].append(schedule.name)
            if after is not None:
                writes.append((before, after))
        for name, before in sorted(stored.items()):
            if name not in declared and before.declared_by == declaration.source:
                after = retire(before, fingerprint)
                if after is not None:
                    paused.append(name)
                    writes.append((before, after))
        for before, after in writes:
            params = self._schedule_params(after.validated(), now, timing)
            if before is None:
                conn.execute(self._schedules.insert_schedule, params)
            else:
                conn.execute(self._schedules.update_schedule, {**params, "expected_tag": before.owner_tag})
        if writes:
            self.db.notify(conn, CHANNEL)
        return replace(outcome, created=tuple(seen["created"]), updated=tuple(seen["updated"]), paused=tuple(paused),
                       unchanged=tuple(seen["unchanged"]))

    # -- catch-up of the deadline scheduler's calendar schedules ------------------
    def catch_up_schedules(self, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                           sender: str | None = None, limit: int = 100) -> list[FiringRecord]:
        """Calendar schedules whose next fire time is older than the catch-up grace: those with a
        backlog skip what their catch-up rule does not run (recorded in the ledger), so that the
        next run is for the first fire time the rule keeps."""
        skipped: list[FiringRecord] = []
        with self.db.write() as conn:
            params = {"cutoff": self.db.time(now - timing.catch_up_grace), "limit": limit}
            for row in conn.execute(self._schedules.backlogged_schedules, params).fetchall():
                schedule = self._schedule(row)
                plan = plan_catch_up(schedule.catch_up, due_fire_times(schedule, now), now, timing.catch_up_grace)
                if plan.skipped is None:
                    continue
                after = replace(schedule, fired_through=plan.fired_through)
                conn.execute(self._schedules.update_run_state,
                             {**self._state_params(after, now, timing), "expected_tag": None})
                skipped.append(skipped_record(schedule.name, plan.skipped, now, sender))
            self.insert_firings(conn, skipped)
        return skipped

    # -- the beats' claims -------------------------------------------------------
    def claim_firings(self, *, sender: str, tag: str, now: datetime, lease: timedelta,
                      timing: ScheduleTiming = ScheduleTiming(), limit: int = 100, take_over: bool = True) -> list[Claim]:
        """In one transaction: claims whose lease ended are taken over, then the schedules whose next
        fire time has come (up to ``limit``, locked: concurrent beats take others) have their fire
        times due claimed under ``tag`` until ``now + lease`` (what their catch-up rule skips is
        recorded) and their cursor moved past them. A fire time's ledger row is its one claim.
        Without ``take_over``, ended leases are left for later."""
        with self.db.write() as conn:
            claims = self._take_expired_claims(conn, sender, tag, now, now + lease, limit) if take_over else []
            if len(claims) >= limit:
                return claims
            rows = conn.execute(self._schedules.due_to_send,
                                {"now": self.db.time(now), "limit": limit - len(claims)}).fetchall()
            records, states, found = [], [], {}
            for row in rows:
                schedule = self._schedule(row)
                plan = plan_catch_up(schedule.catch_up, due_fire_times(schedule, now), now, timing.catch_up_grace)
                found[schedule.name] = schedule
                after = replace(schedule, fired_through=claim_cursor(plan) or schedule.fired_through)
                states.append({**self._state_params(after, now, timing), "expected_tag": None})
                records += [FiringRecord(schedule.name, at, FiringStatus.CLAIMED, now, sender=sender, claimed_by=tag,
                                         lease_until=now + lease) for at in plan.run]
                if plan.skipped is not None:
                    records.append(skipped_record(schedule.name, plan.skipped, now, sender))
            self.db.execute_many(conn, self._schedules.update_run_state, states)
            for record in self.insert_firings(conn, records):
                if record.status is FiringStatus.CLAIMED:
                    schedule = found[record.schedule]
                    claims.append(Claim(record.schedule, record.nominal_at, schedule.task_type,
                                        tuple(schedule.arguments.args), dict(schedule.arguments.kwargs),
                                        dict(schedule.options), tag, now + lease))
        return sorted(claims, key=lambda c: (c.nominal_at, c.schedule))

    def _take_expired_claims(self, conn: Connection, sender: str, tag: str, now: datetime, lease_until: datetime,
                             limit: int) -> list[Claim]:
        """Fire times claimed by a beat whose lease ended, now claimed by ``tag``."""
        expired = conn.execute(self._schedules.expired_claims, {"now": self.db.time(now), "limit": limit}).fetchall()
        if not expired:
            return []
        params = {**self._firing_keys([(r["schedule"], self.db.read_time(r["nominal_at"])) for r in expired]),
                  "tag": tag, "sender": sender, "now": self.db.time(now), "lease_until": self.db.time(lease_until)}
        taken = {(r["schedule"], self.db.read_time(r["nominal_at"]))
                 for r in conn.execute(self._schedules.take_claims, params).fetchall()}
        claims = []
        for row in expired:
            key = (row["schedule"], self.db.read_time(row["nominal_at"]))
            if key in taken:
                arguments = self.db.read_json(row["arguments"])
                claims.append(Claim(key[0], key[1], row["task_type"], tuple(arguments["args"]), arguments["kwargs"],
                                    self.db.read_json(row["options"]), tag, lease_until))
        return claims

    def mark_firings_sent(self, tag: str, sent: Sequence[tuple[str, datetime]], now: datetime) -> None:
        """The fire times claimed under ``tag`` that the broker took: recorded as sent."""
        if sent:
            with self.db.write() as conn:
                conn.execute(self._schedules.mark_sent, {**self._firing_keys(sent), "tag": tag, "now": self.db.time(now)})

    def release_firings(self, tag: str, firings: Sequence[tuple[str, datetime]], now: datetime) -> None:
        """Claims under ``tag`` that will not be sent here (a beat stopping): another beat may take them at once."""
        if firings:
            with self.db.write() as conn:
                conn.execute(self._schedules.release_claims,
                             {**self._firing_keys(firings), "tag": tag, "now": self.db.time(now)})

    def next_send_at(self) -> datetime | None:
        return self.db.read_time(self.db.read(self._schedules.next_send_at)[0]["at"])

    def _firing_keys(self, firings: Sequence[tuple[str, datetime]]) -> dict[str, Any]:
        return self.db.columns(schedule=[name for name, _ in firings],
                               nominal_at=[self.db.time(at) for _, at in firings])

    # -- the ledger ------------------------------------------------------------
    def insert_firings(self, conn: Connection, records: Sequence[FiringRecord]) -> list[FiringRecord]:
        """Add ledger rows in the caller's transaction; a fire time already there is left as it is.
        Returns the rows added (a claim that lost a race is not among them)."""
        if not records:
            return []
        time = self.db.time
        columns = self.db.columns(
            schedule=[r.schedule for r in records], nominal_at=[time(r.nominal_at) for r in records],
            status=[r.status.value for r in records], last_at=[time(r.last_at) for r in records],
            firings=[r.firings for r in records], claimed_by=[r.claimed_by for r in records],
            lease_until=[time(r.lease_until) for r in records], sender=[r.sender for r in records],
            handled_at=[time(r.handled_at) for r in records], sent_at=[time(r.sent_at) for r in records])
        return [self._firing(row) for row in conn.execute(self._schedules.insert_firings, columns).fetchall()]

    def list_firings(self, name: str, *, limit: int = 20, before: datetime | None = None) -> list[FiringRecord]:
        params = {"name": name, "limit": limit, "before": self.db.time(before or MAX_TIME)}
        return [self._firing(r) for r in self.db.read(self._schedules.schedule_firings, params)]

    def _firing(self, row: Row) -> FiringRecord:
        read_time = self.db.read_time
        return FiringRecord(row["schedule"], read_time(row["nominal_at"]), FiringStatus(row["status"]),
                            read_time(row["handled_at"]), read_time(row["last_at"]), row["firings"], row["sender"],
                            read_time(row["sent_at"]), row["claimed_by"], read_time(row["lease_until"]))
