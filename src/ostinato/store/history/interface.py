"""The history role: the console's samples per series, downsampled and bounded (``domain.history``),
and the runs that ended lately, which the history pass counts.

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime

from ...domain.history import EndedRun, HistorySample

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
REMOTE_SCOPES: dict[str, str] = {
    "record_history": "worker", "read_history": "read", "prune_history": "worker", "ended_runs": "read",
}
NOT_REMOTE: dict[str, str] = {}

#: the newest runs of each kind the pass looks at (index walks by id, whatever the table's size)
ENDED_RUNS_WINDOW = 10_000


class HistoryStore(abc.ABC):
    """The console's samples per series, and the runs that ended lately."""

    @abc.abstractmethod
    def record_history(self, samples: Sequence[HistorySample]) -> int:
        """Write samples in one statement, each replacing the one of its series, resolution and start;
        ValidationError naming the figure at fault, nothing written. Returns how many."""

    @abc.abstractmethod
    def read_history(self, resolution: int, since: datetime, until: datetime, *,
                     series: Sequence[str] | None = None) -> list[HistorySample]:
        """The samples of ``resolution`` (seconds) starting in ``[since, until)``, of ``series`` (every
        series when None), by series then time."""

    @abc.abstractmethod
    def prune_history(self, now: datetime) -> int:
        """Delete each resolution's samples older than its span (``domain.history.RESOLUTIONS``)."""

    @abc.abstractmethod
    def ended_runs(self, since: datetime, *, window: int = ENDED_RUNS_WINDOW) -> list[EndedRun]:
        """Schedule runs and task runs ended at or after ``since``, among the newest ``window`` of each
        (series ``schedule:<name>`` and ``task_type:<type>``)."""
