"""Run now a schedule the beats send: a fire time of its own, claimed in the store (with its audit event),
sent once through the beat's Celery app by the command itself, then recorded as sent, as a beat does with
a fire time of the schedule's rule. Whether or not a beat runs: if the send fails, the claim is released
and the beats send it at their next tick; if the command dies between the send and the record, the claim's
lease ends and a beat takes it over (on a Redis broker it then publishes nothing: ``beat_once``)."""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

from celery import Celery
from celery.app.utils import find_app

from ...domain.clock import Clock
from ...domain.errors import ValidationError
from ...domain.firings import Claim
from ...store import Store
from .beat import send_claim
from .beat_once import once_connection


def load_app(name: str) -> Celery:
    """The Celery app ``name`` names (``proj``, ``proj.celery:app``), as ``celery -A`` finds it, the current
    directory importable; ValidationError naming ``app`` if it cannot be loaded."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        app = find_app(name)
    except Exception as exc:  # an import error of the project's, or no app in the module
        raise ValidationError("app", "a Celery app, as celery -A takes it (the project importable from here)",
                              f"{name} ({type(exc).__name__}: {exc})") from None
    if not isinstance(app, Celery):
        raise ValidationError("app", "a Celery app", name)
    return app


def app_name(declared_by: str | None) -> str | None:
    """The app a schedule's beats run, from its source (``beat:proj`` → ``proj``); None if not a beat's."""
    return declared_by.split(":", 1)[1] if declared_by and declared_by.startswith("beat:") else None


def send_now(store: Store, app: Celery, name: str, clock: Clock, *, actor: str, sender: str,
             lease: Any) -> Claim:
    """Claim a fire time of its own for ``name``, send it through ``app``, record it sent; the claim."""
    tag = uuid.uuid4().hex
    claim = store.claim_run_now(name, clock.now(), sender=sender, tag=tag, lease=lease, actor=actor)
    key = [(claim.schedule, claim.nominal_at)]
    try:
        with once_connection(app.connection_for_write()) as connection:
            producer = app.amqp.Producer(connection, auto_declare=False)
            send_claim(app, claim, sender=sender, sent_at=clock.now(), producer=producer)
    except BaseException:
        store.release_firings(tag, key, clock.now())  # the beats send it at their next tick
        raise
    store.mark_firings_sent(tag, key, clock.now())
    return claim


__all__ = ["app_name", "load_app", "send_now"]
