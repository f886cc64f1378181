"""The Celery project of the beat comparison and the beat benchmark (``bench/beat/beat_compare.py``,
``bench/beat/beat_lateness.py``, ``bench/beat/beat_chaos.py``), imported by the driver, the beats and the
worker alike, so that stock Celery beat and Ostinato's beats read the same ``beat_schedule``.

- ``BEAT_BROKER``: the broker; ``BEAT_RECEIPTS``: the file the worker appends one JSON line to per
  message received (the entry's key, the ``ostinato_fire_time`` header or, for stock beat, the
  ``sim_sent_at`` header the comparison's driver stamps, the task id, the worker's clock);
- ``BEAT_SET``: ``compare`` (34 entries: intervals from 1 s to 1 day, crontabs in five zones, two
  of which change to summer time in the window), ``chaos`` (short intervals and minute crontabs),
  or ``bulk:N`` (N one-minute entries for the lateness benchmark);
- ``BEAT_CLOCK``: a file holding the simulated time (ISO 8601) the peers' beats read, when set.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from celery import Celery
from celery.beat import PersistentScheduler
from celery.schedules import crontab, schedule
from celery.signals import before_task_publish

TIMEZONE = "Europe/Paris"


class SimulatedCelery(Celery):
    """A Celery app whose ``now()`` is a simulated time (``sim_now``) when one is set: how the
    comparison drives stock Celery beat, which reads the time only through it."""

    sim_now: datetime | None = None

    def now(self) -> datetime:
        if self.sim_now is None:
            return super().now()
        return self.sim_now.astimezone(self.timezone)


app = SimulatedCelery("beat_app", broker=os.environ.get("BEAT_BROKER", "memory://"))
app.conf.update(timezone=TIMEZONE, task_serializer="json", accept_content=["json"], worker_hijack_root_logger=False,
                broker_connection_retry_on_startup=True, beat_max_loop_interval=60,
                ostinato_settings=json.loads(os.environ.get("BEAT_OSTINATO_SETTINGS", "{}")))


#: the fire time the stamped stock scheduler is sending for, in its thread
_sending = threading.local()


@before_task_publish.connect
def _published_at(headers=None, **_) -> None:
    """Every message says when it left its sender (the wall clock), whichever beat sent it, and, from
    the stamped stock scheduler, which fire time it was sent for."""
    if headers is not None:
        headers.setdefault("published_at", time.time())
        due = getattr(_sending, "fire_time", None)
        if due is not None:
            headers["stock_fire_time"] = due.isoformat()


class StampedScheduler(PersistentScheduler):
    """Celery's default beat scheduler (``celery beat`` without ``-S``), unchanged but for a header
    saying which fire time each send is for: the entry's next time after its last run, which is
    what made it due (for the lateness benchmark, which cannot tell it from the send time when
    stock beat falls more than a minute behind)."""

    def apply_entry(self, entry, producer=None):
        # remaining_estimate reads the clock again: the sum lands microseconds off the (whole-second) fire time
        due = entry.schedule.now() + entry.schedule.remaining_estimate(entry.last_run_at)
        _sending.fire_time = (due + timedelta(microseconds=500_000)).replace(microsecond=0)
        try:
            return super().apply_entry(entry, producer=producer)
        finally:
            _sending.fire_time = None


@app.task(bind=True, name="beat_app.record", ignore_result=True)
def record(self, key: str) -> None:
    fire = self.request.get("ostinato_fire_time") or {}
    line = {"key": key, "fire_time": fire.get("fire_time") or self.request.get("sim_sent_at")
            or self.request.get("stock_fire_time"),
            "sent_at": fire.get("sent_at"), "sender": fire.get("sender"), "id": self.request.id,
            "published_at": self.request.get("published_at"), "received": time.time(), "pid": os.getpid()}
    fd = os.open(os.environ["BEAT_RECEIPTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def _entry(key: str, value) -> dict:
    return {"task": "beat_app.record", "schedule": value, "args": (key,)}


def _zoned(zone: str, **fields) -> crontab:
    rule = crontab(**fields)
    rule.tz = ZoneInfo(zone)  # a crontab's own zone: Celery's beat honours it, and so does Ostinato
    return rule


def compare_set() -> dict:
    """34 entries: 20 intervals (numbers, timedeltas and schedules, 1 s to 1 day) and 14 crontabs, in
    the app's zone (Europe/Paris) and in four others."""
    intervals = {f"every-{s}s": s for s in (1, 2, 3, 5, 7, 10, 15, 30, 45, 60, 90)}
    intervals.update({"every-5m": timedelta(minutes=5), "every-10m": timedelta(minutes=10),
                      "every-15m": schedule(timedelta(minutes=15)), "every-30m": timedelta(minutes=30),
                      "every-1h": timedelta(hours=1), "every-2h": timedelta(hours=2), "every-6h": timedelta(hours=6),
                      "every-12h": timedelta(hours=12), "every-1d": timedelta(days=1)})
    crontabs = {
        "cron-each-minute": crontab(),
        "cron-every-5m": crontab(minute="*/5"),
        "cron-hourly": crontab(minute=0),
        "cron-0230-paris": crontab(minute=30, hour=2),
        "cron-0300-paris": crontab(minute=0, hour=3),
        "cron-15-past-1to4": crontab(minute=15, hour="1-4"),
        "cron-every-10m-at-2": crontab(minute="*/10", hour=2),
        "cron-two-hourly": crontab(minute=0, hour="*/2"),
        "cron-first-monday": crontab(minute=0, hour=9, day_of_month="1-7", day_of_week="mon"),
        "cron-0100-london": _zoned("Europe/London", minute=0, hour=1),
        "cron-every-20m-london": _zoned("Europe/London", minute="*/20"),
        "cron-hourly-new-york": _zoned("America/New_York", minute=0),
        "cron-half-hourly-kolkata": _zoned("Asia/Kolkata", minute="0,30"),
        "cron-hourly-lord-howe": _zoned("Australia/Lord_Howe", minute=0),
    }
    return {key: _entry(key, value) for key, value in {**intervals, **crontabs}.items()}


def chaos_set() -> dict:
    entries = {f"every-{s}s": _entry(f"every-{s}s", s) for s in (1, 2, 3, 5, 7, 11, 13)}
    entries["cron-each-minute"] = _entry("cron-each-minute", crontab())
    entries["every-20s-all"] = {**_entry("every-20s-all", 20), "options": {"ostinato_catch_up": "all:3"}}
    entries["every-30s-skip"] = {**_entry("every-30s-skip", 30), "options": {"ostinato_catch_up": "skip"}}
    return entries


def bulk_set(count: int) -> dict:
    """``count`` entries firing every minute, all at the same second."""
    return {f"bulk-{i:05d}": _entry(f"bulk-{i:05d}", crontab()) for i in range(count)}


def spread_set(count: int) -> dict:
    """``count`` hourly entries spread over the minutes of the hour (entry i at minute i % 60)."""
    return {f"spread-{i:05d}": _entry(f"spread-{i:05d}", crontab(minute=i % 60)) for i in range(count)}


def beat_set(name: str) -> dict:
    kind, _, count = name.partition(":")
    if kind in ("bulk", "spread"):
        return {"bulk": bulk_set, "spread": spread_set}[kind](int(count))
    return {"compare": compare_set, "chaos": chaos_set}[name]()


app.conf.beat_schedule = beat_set(os.environ.get("BEAT_SET", "compare"))
