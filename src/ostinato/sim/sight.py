"""What a visit sees of the changes it archives, by level of information: ``bits`` (changed or not),
``counts`` (how many changes since the last archived snapshot) or ``times`` (also their times, the
newest :data:`~ostinato.domain.limits.MAX_CHANGE_TIMES` of them, and the newest change's time), as
a git fetch sees the commits it brings.

:class:`ChangeSight` follows, beside the archive tracker and in the same time order, each source's
newest change and the times of its changes since its last capture.
"""

from __future__ import annotations

import enum

import numpy as np

from ..domain.limits import MAX_CHANGE_TIMES


class Information(str, enum.Enum):
    BITS = "bits"
    COUNTS = "counts"
    TIMES = "times"


class ChangeSight:
    def __init__(self, newest: np.ndarray):
        #: each source's newest change so far (days), from the world's at the start
        self.newest = np.array(newest, dtype=float)
        self._pending: dict[int, list[float]] = {}

    def apply_changes(self, sources: np.ndarray, times: np.ndarray) -> None:
        """Changes (each source's in time order)."""
        if sources.size == 0:
            return
        np.maximum.at(self.newest, sources, times)
        pending = self._pending
        for source, time in zip(sources.tolist(), times.tolist(), strict=True):
            kept = pending.setdefault(source, [])
            kept.append(time)
            if len(kept) > 2 * MAX_CHANGE_TIMES:
                del kept[:-MAX_CHANGE_TIMES]

    def capture(self, sources: np.ndarray) -> list[tuple[float, tuple[float, ...]]]:
        """Successful visits of distinct ``sources``: per visit, the newest change's time (-inf: none)
        and the times of the changes since the previous capture (the newest ones, at most the bound)."""
        seen = []
        for source in sources.tolist():
            times = self._pending.pop(source, [])
            seen.append((float(self.newest[source]), tuple(times[-MAX_CHANGE_TIMES:])))
        return seen
