"""The peer-side client of bench/face/face_month.py: swh-scheduler 3.6's own code, in the peer's environment.

``bench/face/face_month.py`` starts this script once per simulated run with the peer venv's
Python (``.bench-venvs/swh-scheduler-3.6.0``) and drives it in JSON lines
(``bench/common/peer_protocol.py``). It talks to one RPC server, swh-scheduler's own or
Ostinato's ``swh-rpc serve``, only through swh's client
(``swh.scheduler.api.client.RemoteScheduler``), and does what swh's own programs
would do at each simulated step, in this order:

1. a lister run: ``record_listed_origins`` of what the simulated forges list (two
   listers, made by ``get_or_create_lister`` at ``init``);
2. swh's journal client: the visit statuses that ended, as journal
   ``origin_visit_status`` messages, handed to its own worker function,
   ``swh.scheduler.journal_client.process_journal_objects``, which computes the visit
   stats and upserts them through the client;
3. the grab: ``grab_next_visits`` of one policy, or swh's recurrent visit scheduler's
   own ``grab_next_visits_policy_weights`` over a mix of policies, each at the
   simulated time (``timestamp``);

and answers the grabbed URLs. The journal client's random fudge of queue positions
is seeded at ``init``, so that a run is repeatable.

Standard library and swh packages only: nothing of Ostinato is imported here (it
runs where Ostinato is not installed). Not meant to be run by hand::

    .bench-venvs/swh-scheduler-3.6.0/bin/python bench/face/face_month_client.py   # JSON lines on stdin
"""

from __future__ import annotations

import logging
import platform
import random
import sys
import time
from datetime import datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.peer_protocol import serve

#: listed origins per record_listed_origins call
LISTING_BATCH = 1000


class Client:
    def __init__(self, url: str, token: str | None, seed: int, visit_type: str, listers: list[list[str]]) -> None:
        from swh.scheduler.api.client import RemoteScheduler

        logging.disable(logging.ERROR)  # swh's Celery configuration complains, on import, that no worker file is set
        import swh.scheduler.celery_backend.recurrent_visits  # noqa: F401 - loaded with logging off: its later imports stay quiet
        logging.disable(logging.NOTSET)
        random.seed(seed)  # swh's journal client fudges queue positions by random.uniform
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self.scheduler = RemoteScheduler(url=url, timeout=600, session_kwargs={"headers": headers} if headers else None)
        self.visit_type = visit_type
        self.listers = [self.scheduler.get_or_create_lister(name=name, instance_name=instance).id
                        for name, instance in listers]
        self.seconds = {"listing": 0.0, "journal": 0.0, "grab": 0.0}
        self.calls = {"listing": 0, "journal": 0, "grab": 0}
        self.versions = {"python": platform.python_version(),
                         **{name: metadata.version(name) for name in ("swh.scheduler", "swh.core", "swh.model")}}

    def _timed(self, part: str, started: float) -> None:
        self.seconds[part] += time.perf_counter() - started
        self.calls[part] += 1

    def step(self, listings: list[list[Any]], messages: list[list[Any]], grab: dict[str, Any] | None) -> dict[str, Any]:
        """One simulated step: the listers' output, the journal's statuses, then a grab (if any)."""
        if listings:
            self.record_listings(listings)
        if messages:
            self.journal(messages)
        urls: list[str] = []
        if grab is not None and grab["count"] > 0:
            urls = self.grab(**grab)
        return {"urls": urls}

    def record_listings(self, listings: list[list[Any]]) -> None:
        """``[[lister index, [[url, last_update ISO or null], …]], …]`` through ``record_listed_origins``."""
        from swh.scheduler.model import ListedOrigin

        started = time.perf_counter()
        for index, origins in listings:
            lister_id = self.listers[index]
            models = [ListedOrigin(lister_id=lister_id, url=url, visit_type=self.visit_type,
                                   last_update=None if last_update is None else datetime.fromisoformat(last_update))
                      for url, last_update in origins]
            for k in range(0, len(models), LISTING_BATCH):
                self.scheduler.record_listed_origins(models[k:k + LISTING_BATCH])
        self._timed("listing", started)

    def journal(self, messages: list[list[Any]]) -> None:
        """``[[origin, visit, status, date ISO, snapshot hex or null], …]`` as the journal's
        ``origin_visit_status`` messages, through swh's own journal client function."""
        from swh.scheduler.journal_client import process_journal_objects

        started = time.perf_counter()
        statuses = [{"origin": origin, "visit": visit, "type": self.visit_type, "status": status,
                     "date": datetime.fromisoformat(date), "snapshot": None if snapshot is None else bytes.fromhex(snapshot)}
                    for origin, visit, status, date, snapshot in messages]
        process_journal_objects({"origin_visit_status": statuses}, scheduler=self.scheduler)
        self._timed("journal", started)

    def grab(self, count: int, timestamp: str, policy: str | None = None, mix: str | None = None,
             cooldowns: dict[str, float] | None = None) -> list[str]:
        """``grab_next_visits`` of ``policy``, or swh's ``grab_next_visits_policy_weights`` over the
        mix of policies its recurrent visit scheduler names ``mix`` (each entry given the grab's
        ``timestamp``, which the function passes on to ``grab_next_visits``). ``cooldowns``: the grab's
        cooldown arguments in seconds (``absolute_cooldown``, …), else swh's defaults."""
        from swh.scheduler.celery_backend.recurrent_visits import grab_next_visits_policy_weights

        at = datetime.fromisoformat(timestamp)
        extra = {name: timedelta(seconds=value) for name, value in (cooldowns or {}).items()}
        started = time.perf_counter()
        if mix is not None:
            found = grab_next_visits_policy_weights(self.scheduler, self.visit_type, count,
                                                    [{**entry, "timestamp": at, **extra} for entry in self.mix(mix)["entries"]])
        else:
            assert policy is not None
            found = self.scheduler.grab_next_visits(self.visit_type, count, policy=policy, timestamp=at, **extra)
        self._timed("grab", started)
        return [origin.url for origin in found]

    @staticmethod
    def mix(name: str) -> dict[str, Any]:
        """One of swh's recurrent visit scheduler's mixes (``DEFAULT_POLICY``, ``DEFAULT_DVCS_POLICY``), as its
        module defines it."""
        from swh.scheduler.celery_backend import recurrent_visits

        if name not in ("DEFAULT_POLICY", "DEFAULT_DVCS_POLICY"):
            raise ValueError(f"not a mix this benchmark runs: {name}")
        return {"entries": [dict(entry) for entry in getattr(recurrent_visits, name)]}

    def totals(self) -> dict[str, Any]:
        """Seconds and calls spent in each part so far (client calls: encoding, HTTP, the server's work)."""
        return {"seconds": {k: round(v, 3) for k, v in self.seconds.items()}, "calls": dict(self.calls)}


if __name__ == "__main__":
    sys.exit(serve(Client))
