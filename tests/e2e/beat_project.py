"""A Celery project for the tests of the beats (``celery -A beat_project …``, imported via PYTHONPATH).

The broker is ``BEAT_BROKER``; ``record`` appends one JSON line per message a worker received to
``BEAT_RECEIPTS`` (the task, its arguments, the ``ostinato_fire_time`` header, the task id, the
worker's pid and clock), which is what the tests count. ``BEAT_VARIANT`` picks the beat_schedule."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

from celery import Celery
from celery.schedules import crontab

app = Celery("beat_project", broker=os.environ.get("BEAT_BROKER", "memory://"))
app.conf.update(timezone=os.environ.get("BEAT_TIMEZONE", "UTC"), task_serializer="json", accept_content=["json"],
                worker_hijack_root_logger=False, broker_connection_retry_on_startup=True,
                ostinato_settings=json.loads(os.environ.get("BEAT_OSTINATO_SETTINGS", "{}")))


@app.task(bind=True, name="beat_project.record")
def record(self, key: str, *args, **kwargs) -> None:
    line = {"task": self.name, "key": key, "args": list(args), "kwargs": kwargs, "id": self.request.id,
            "fire": self.request.get("ostinato_fire_time"), "beat": bool(self.request.get("celery_beat_task")),
            "received": time.time(), "pid": os.getpid()}
    fd = os.open(os.environ["BEAT_RECEIPTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def _short() -> dict:
    """Second-level intervals and a minute crontab: a short real window."""
    return {
        "every-1s": {"task": "beat_project.record", "schedule": 1.0, "args": ("every-1s",)},
        "every-2s": {"task": "beat_project.record", "schedule": timedelta(seconds=2), "args": ("every-2s",),
                     "kwargs": {"size": 2}},
        "every 3 seconds": {"task": "beat_project.record", "schedule": 3, "args": ("every 3 seconds",),
                            "options": {"queue": "celery", "priority": 5}},
        "each-minute": {"task": "beat_project.record", "schedule": crontab(), "args": ("each-minute",)},
    }


def _bad() -> dict:
    """A good entry, then one Ostinato cannot honour: nothing may be written."""
    entries = _short()
    wrong = crontab(minute=0)
    wrong.tz = os.environ.get("BEAT_BAD_ZONE", "Europe/Pariss")
    entries["report"] = {"task": "beat_project.record", "schedule": wrong, "args": ("report",)}
    return entries


VARIANTS = {"short": _short, "bad": _bad, "none": dict}
app.conf.beat_schedule = VARIANTS[os.environ.get("BEAT_VARIANT", "short")]()
