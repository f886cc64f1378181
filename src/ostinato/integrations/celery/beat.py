"""Celery beat without a single point of failure (see docs/reference/distributed.md#celery-beat)::

    celery -A proj beat -S ostinato.integrations.celery.beat:OstinatoScheduler

as many of them as you like, all active (no leader). Each reads the app's ``beat_schedule`` at
start-up and applies it to Ostinato's store as declarations (``beat:<app>``, in one transaction;
the newest ``beat_schedule`` wins over an older process; see ``beat_entries`` for how entries are
read and refused). Then each tick:

1. **claim**, in one transaction: the due fire times of the schedules the beats send (mode
   ``send``: those of ``beat_schedule``, and any added with ``ostinato schedule add … --mode send``
   or the API, picked up without a restart), and the claims of beats whose lease ended. A claim is
   a row of the ledger keyed on (schedule, fire time): no two beats ever hold the same fire time,
   and once sent it is never claimed again. What the catch-up rule skips is recorded there;
2. **send** each claim through the app as Celery's beat does (the task's ``apply_async``, or
   ``send_task`` for a task not registered here; ``options``; the ``celery_beat_task`` header),
   with a task id derived from the schedule and the fire time and an ``ostinato_fire_time``
   header; a claim older than half its lease is not sent (it is left to another beat);
3. **record** the sends in one statement right after the broker took them. A record that fails (the
   database went away) is retried at each tick, before the lease ends when the outage is shorter.

A beat killed (or paused past its lease) after the broker accepted a message and before the record
committed would leave a claim that looks unsent: on a Redis broker, the beat's messages are published
once per task id (``beat_once``: a marker and the message in one atomic step), so the beat that takes
the claim over publishes nothing and records it sent; on other brokers that window remains, one short
statement after the sends of one claim. Settings: ``beat_lease``, ``beat_batch``, ``beat_poll``,
and the schedules' ``schedule_catch_up_grace``; the app's ``ostinato_settings`` (a mapping) is laid
over the usual ones (``ostinato.toml``, ``OSTINATO_*``), so ``ostinato_settings = {"db": …}`` works.
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from typing import Any

from celery import Celery
from celery.beat import Scheduler
from celery.schedules import crontab

from ...config import Settings
from ...domain.clock import Clock, SystemClock
from ...domain.declarations import Declaration, DeclarationOutcome
from ...domain.errors import ConflictError, SchemaError, ValidationError
from ...domain.firings import Claim
from ...store import Store, open_store, shown_url
from .beat_entries import beat_schedules
from .beat_once import FIRE_TIME_HEADER, OnceChannel, once_connection

log = logging.getLogger(__name__)

__all__ = ["FIRE_TIME_HEADER", "OstinatoScheduler", "beat_source", "send_claim", "send_task_id"]
#: how long a starting beat waits for a store it cannot reach before it gives up (seconds)
STORE_WAIT = 600.0
#: task ids of sends are derived from (schedule, fire time) in this namespace
_TASK_IDS = uuid.UUID("8d0b8c3e-6f5c-4c1e-9a59-0f6a1d9e3b21")


def send_task_id(schedule: str, fire_time: datetime) -> str:
    """The Celery task id of a fire time's send: the same whoever sends it (a consumer may dedupe by it)."""
    return str(uuid.uuid5(_TASK_IDS, f"{schedule}\n{fire_time.isoformat()}"))


def send_claim(app: Celery, claim: Claim, *, sender: str, sent_at: datetime, producer: Any = None) -> Any:
    """Send one claimed fire time through ``app``, as Celery's beat sends an entry: the task's ``apply_async``
    (``send_task`` for a task not registered here), its options, the ``celery_beat_task`` header, a task id
    derived from the schedule and the fire time, and the ``ostinato_fire_time`` header."""
    options = dict(claim.options)
    headers = dict(options.pop("headers", None) or {})
    headers["celery_beat_task"] = True
    headers[FIRE_TIME_HEADER] = {"schedule": claim.schedule, "fire_time": claim.nominal_at.isoformat(),
                                 "sent_at": sent_at.isoformat(), "sender": sender}
    task_id = send_task_id(claim.schedule, claim.nominal_at)
    task = app.tasks.get(claim.task)
    if task is not None:
        return task.apply_async(list(claim.args),  # type: ignore[arg-type]  # Celery takes a list or a tuple
                                dict(claim.kwargs), producer=producer, task_id=task_id, headers=headers, **options)
    return app.send_task(claim.task, list(claim.args), dict(claim.kwargs), producer=producer, task_id=task_id,
                         headers=headers, **options)


def beat_source(app: Celery) -> str:
    """The declarations' source of an app's ``beat_schedule``: ``beat:<the app's main name>``."""
    name = re.sub(r"[^A-Za-z0-9_.@:/-]+", "-", app.main or "celery").strip("-") or "celery"
    return f"beat:{name[:190]}"


def beat_settings(app: Celery) -> Settings:
    return Settings.load().with_values(app.conf.get("ostinato_settings") or {})


class OstinatoScheduler(Scheduler):
    """A Celery beat scheduler over Ostinato's store: any number at once, each fire time sent once."""

    def __init__(self, app: Celery, *args: Any, clock: Clock | None = None, store: Store | None = None,
                 settings: Settings | None = None, monotonic: Callable[[], float] = time.monotonic, **kwargs: Any):
        self.settings = settings or beat_settings(app)
        self.clock = clock or app.conf.get("ostinato_clock") or SystemClock()
        self.monotonic = monotonic
        self._own_store = store is None
        # Celery makes a lazy instance only to print its banner: it opens no store (a pool left to the
        # garbage collector warns from its own thread), and never reads it
        self.store: Store = store if store is not None or kwargs.get("lazy") else \
            self._waiting(lambda: open_store(self.settings.db))  # type: ignore[assignment]  # None only when lazy (never read)
        self.timing = self.settings.schedule_timing()
        self.sender = f"{self.settings.node}/beat-{os.getpid()}"
        #: sends the broker took whose record failed, by claim tag: recorded again at each tick
        self._unrecorded: dict[str, list[tuple[str, datetime]]] = {}
        self.declared: DeclarationOutcome | None = None
        self.sent = 0
        #: claims of others are taken over only from then (monotonic): after the store was lost, and at
        #: start-up, a lease later, so that the beats that sent before an outage record their sends first
        self._take_over_after = monotonic() + self.settings.beat_lease.total_seconds()
        super().__init__(app, *args, **kwargs)

    # -- start-up: beat_schedule into the store ---------------------------------------
    def setup_schedule(self) -> None:
        """Read ``beat_schedule`` (with Celery's default cleanup entry) and apply it, all or nothing. An
        entry Ostinato cannot honour stops the beat at once; a store that cannot be reached is waited for."""
        entries = dict(self.app.conf.beat_schedule or {})
        if self.app.conf.result_expires and not self.app.backend.supports_autoexpire:
            entries.setdefault("celery.backend_cleanup", {"task": "celery.backend_cleanup",
                                                          "schedule": crontab("0", "4", "*"),
                                                          "options": {"expires": 12 * 3600}})
        try:
            declaration = Declaration(beat_source(self.app), beat_schedules(self.app, entries),
                                      bool(self.app.conf.get("ostinato_force_declarations")))
            self.declared = outcome = self._apply(declaration)
        except (ValidationError, ConflictError, SchemaError) as refused:
            # one line, then out: Celery would log the exception with its traceback, then print it again
            # through its redirected stderr, a log line per character
            log.critical("beat: not started, nothing written: %s", refused)
            if self._own_store:
                self.store.close()
            raise SystemExit(1) from None
        if outcome.applied:
            log.info("beat: %s applied (%s): %d created, %d updated, %d paused, %d unchanged", outcome.source,
                     outcome.fingerprint, len(outcome.created), len(outcome.updated), len(outcome.paused),
                     len(outcome.unchanged))
        else:
            log.warning("beat: this beat_schedule (%s) is older than the one in the store (%s, first seen %s): "
                        "sending what the store holds", outcome.fingerprint, outcome.newest,
                        outcome.newest_seen_at.isoformat())

    def _apply(self, declaration: Declaration) -> DeclarationOutcome:
        def apply() -> DeclarationOutcome:
            self.store.check_schema()
            return self.store.apply_declarations(declaration, self.clock.now(), self.timing)

        return self._waiting(apply)

    def _waiting(self, action: Callable[[], Any]) -> Any:
        """``action()``, tried again (with a growing pause, for at most :data:`STORE_WAIT` seconds) while
        the store cannot be reached: a beat started during a database outage waits for the database.
        Bad input, a conflict or a schema to upgrade stop it at once."""
        pause, deadline = 0.5, self.monotonic() + STORE_WAIT
        while True:
            try:
                return action()
            except (ValidationError, ConflictError, SchemaError):
                raise
            except Exception as exc:
                if self.monotonic() > deadline:
                    raise
                log.error("beat: the store cannot be reached (%s: %s); trying again in %.1fs", type(exc).__name__,
                          exc, pause)
                time.sleep(pause)
                pause = min(pause * 2, 5.0)

    # -- the loop ------------------------------------------------------------------------
    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Claim what is due, send it, record it; returns how long to sleep (seconds)."""
        self._record_unrecorded()
        tag, now = uuid.uuid4().hex, self.clock.now()
        try:
            claims = self.store.claim_firings(sender=self.sender, tag=tag, now=now, lease=self.settings.beat_lease,
                                              timing=self.timing, limit=self.settings.beat_batch,
                                              take_over=self.monotonic() >= self._take_over_after)
        except Exception as exc:  # the store is away: nothing claimed, nothing sent
            log.error("beat: could not claim fire times (%s: %s); trying again", type(exc).__name__, exc)
            self._store_lost()
            return self.settings.beat_poll.total_seconds()
        if claims:
            self._send_claims(tag, claims, self.monotonic())
        if len(claims) >= self.settings.beat_batch:
            return 0.0
        return self._sleep()

    def _send_claims(self, tag: str, claims: list[Claim], claimed_at: float) -> None:
        sent: list[tuple[str, datetime]] = []
        unsent: list[tuple[str, datetime]] = []
        fresh_until = claimed_at + self.settings.beat_lease.total_seconds() / 2
        producer = self.producer
        for index, claim in enumerate(claims):
            if self.monotonic() > fresh_until:  # paused or slow: another beat will take what is left
                log.warning("beat: claim %s older than half its lease; leaving %d fire times to another beat",
                            tag, len(claims) - index)
                unsent += [(c.schedule, c.nominal_at) for c in claims[index:]]
                break
            try:
                self.send(claim, producer)
            except Exception as exc:  # the broker is away: the rest would fail too
                log.error("beat: could not send %s at %s (%s: %s); released for another try", claim.schedule,
                          claim.nominal_at.isoformat(), type(exc).__name__, exc)
                unsent += [(c.schedule, c.nominal_at) for c in claims[index:]]
                break
            sent.append((claim.schedule, claim.nominal_at))
        self.sent += len(sent)
        if sent:
            self._unrecorded[tag] = sent
            self._record_unrecorded()
        if unsent:
            try:
                self.store.release_firings(tag, unsent, self.clock.now())
            except Exception:  # their lease ends anyway
                log.exception("beat: could not release %d claims; they go to another beat when their lease ends",
                              len(unsent))

    def send(self, claim: Claim, producer: Any = None) -> Any:
        """Send one fire time through the app, as Celery's beat sends an entry."""
        return send_claim(self.app, claim, sender=self.sender, sent_at=self.clock.now(), producer=producer)

    def _record_unrecorded(self) -> None:
        """Record as sent what the broker took (retried at each tick while the store is away)."""
        for tag, sent in list(self._unrecorded.items()):
            try:
                self.store.mark_firings_sent(tag, sent, self.clock.now())
            except Exception as exc:
                log.error("beat: could not record %d sends (%s: %s); trying again at the next tick", len(sent),
                          type(exc).__name__, exc)
                self._store_lost()
                return
            del self._unrecorded[tag]
            self._forget_markers(sent)

    def _forget_markers(self, sent: list[tuple[str, datetime]]) -> None:
        """Recorded sends keep their broker markers (``beat_once``) for a shorter while."""
        channel = getattr(self.__dict__.get("producer"), "channel", None)
        if isinstance(channel, OnceChannel):
            try:
                channel.recorded(send_task_id(name, at) for name, at in sent)
            except Exception as exc:  # they expire anyway
                log.warning("beat: could not shorten %d send markers (%s: %s)", len(sent), type(exc).__name__, exc)

    def _store_lost(self) -> None:
        """The store failed: once it is back, wait a lease before taking over others' claims, so that a
        beat that sent before the outage records its sends first (it retries at every tick)."""
        self._take_over_after = self.monotonic() + self.settings.beat_lease.total_seconds()

    def _sleep(self) -> float:
        """Until the next fire time or the end of a claim's lease, at most ``beat_poll`` (new schedules)."""
        poll = min(self.settings.beat_poll.total_seconds(),
                   float(self.max_interval))  # type: ignore[arg-type]  # Celery's __init__ sets a number
        try:
            upcoming = self.store.next_send_at()
        except Exception:
            return poll
        if upcoming is None:
            return poll
        return max(0.0, min(poll, (upcoming - self.clock.now()).total_seconds()))

    # -- Celery's hooks ------------------------------------------------------------------
    @cached_property
    def connection(self) -> Any:
        """The broker connection of this beat's sends: on Redis, each fire time published once (``beat_once``)."""
        return once_connection(self.app.connection_for_write())

    def sync(self) -> None:
        self._record_unrecorded()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._own_store and self.store is not None:
                self.store.close()

    @property
    def info(self) -> str:
        return (f"    . ostinato -> {shown_url(self.settings.db)}, "
                f"{self.sender}, lease {self.settings.beat_lease}")
