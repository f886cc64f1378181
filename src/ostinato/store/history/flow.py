"""The history role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`.

Samples are written in one statement per call (the dialect's parallel columns), read by resolution
and time (an index walk), and pruned per resolution past its span. The runs ended lately are read
from the newest runs by id, so the pass costs the same whatever the size of the run tables.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from ...domain.errors import ValidationError
from ...domain.history import RESOLUTIONS, EndedRun, HistorySample, checked_figures
from ...domain.limits import check_stored_text
from ...domain.schedules import RunStatus
from ...domain.tasks import TaskRunStatus
from ..dialect import Dialect, Row
from .interface import ENDED_RUNS_WINDOW, HistoryStore

_FAILED_TASK_RUNS = {TaskRunStatus.FAILED.value, TaskRunStatus.PERMFAILED.value, TaskRunStatus.LOST.value}


class HistoryFlow(HistoryStore):
    db: Dialect

    @property
    def _history(self):
        return self.db.queries("history")

    def record_history(self, samples: Sequence[HistorySample]) -> int:
        rows = []
        for sample in samples:
            check_stored_text(sample.series, "series")
            if isinstance(sample.resolution, bool) or not isinstance(sample.resolution, int) or sample.resolution <= 0:
                raise ValidationError("resolution", "a positive whole number of seconds", sample.resolution)
            rows.append((sample.series, sample.resolution, self.db.time(sample.at),
                         json.dumps(checked_figures(sample.figures, sample.series), sort_keys=True)))
        if rows:
            with self.db.write() as conn:
                conn.execute(self._history.upsert_samples, self.db.columns(
                    series=[r[0] for r in rows], resolution=[r[1] for r in rows], at=[r[2] for r in rows],
                    sample=[r[3] for r in rows]))
        return len(rows)

    def read_history(self, resolution: int, since: datetime, until: datetime, *,
                     series: Sequence[str] | None = None) -> list[HistorySample]:
        params = {"resolution": resolution, "since": self.db.time(since), "until": self.db.time(until)}
        if series is None:
            rows = self.db.read(self._history.samples, params)
        else:
            rows = self.db.read(self._history.series_samples, {**params, "series": self.db.array(list(series))})
        return [self._sample(r) for r in rows]

    def prune_history(self, now: datetime) -> int:
        deleted = 0
        with self.db.write() as conn:
            for resolution in RESOLUTIONS:
                cursor = conn.execute(self._history.prune_samples, {"resolution": resolution.seconds,
                                                                    "before": self.db.time(now - resolution.span)})
                deleted += max(cursor.rowcount, 0)
        return deleted

    def ended_runs(self, since: datetime, *, window: int = ENDED_RUNS_WINDOW) -> list[EndedRun]:
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValidationError("window", "a positive whole number", window)
        params = {"since": self.db.time(since), "window": window}
        read_time = self.db.read_time
        runs = [EndedRun(f"schedule:{r['name']}", not RunStatus(r["status"]).succeeded, read_time(r["started"]),
                         read_time(r["ended"]))
                for r in self.db.read(self._history.ended_schedule_runs, params)]
        runs += [EndedRun(f"task_type:{r['name']}", r["status"] in _FAILED_TASK_RUNS, read_time(r["started"]),
                          read_time(r["ended"]))
                 for r in self.db.read(self._history.ended_task_runs, params)]
        return runs

    def _sample(self, row: Row) -> HistorySample:
        figures = self.db.read_json(row["sample"])
        return HistorySample(row["series"], int(row["resolution"]), self.db.read_time(row["at"]), figures)
