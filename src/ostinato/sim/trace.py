"""Recorded change histories ("traces"): their file format, read and checked, and what a replay needs.

A trace lists changes, one a line, as JSON lines or CSV (docs/reference/simulator.md)::

    {"origin": "deb://Debian/packages/bash", "visit_type": "deb", "changed_at": "2023-01-02T13:06:21+01:00"}

or, as JSON lines, each origin's changes on one line (``changes``: a list of such times)::

    {"origin": "https://github.com/curl/curl", "visit_type": "git", "changes": ["2019-03-01T12:00:00Z", …]}

    origin,visit_type,changed_at
    deb://Debian/packages/bash,deb,2023-01-02T13:06:21+01:00

``origin`` is a non-empty URL, ``visit_type`` a non-empty name (one per trace: the
simulated store has one loader), ``changed_at`` an ISO 8601 time with a zone. Lines
may come in any order, the two JSON forms mixed; the same origin at the same instant
counts once. A CSV file starts with a header naming these three columns, in any order.

:func:`parse_changes` reads one record (a decoded JSON object, or a CSV row
decoded by :func:`csv_decoder`) into its changes and raises ValidationError naming
the field (``changes[3]``: the fourth time of a line); the command line locates it
at its line. :func:`build_trace` gathers the
changes into a :class:`Trace`: each origin's change times, sorted, as numpy
arrays of seconds since the Unix epoch. :func:`trace_lines` writes one back.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ..domain.durations import parse_iso_time
from ..domain.errors import ValidationError

FIELDS = ("origin", "visit_type", "changed_at")
#: the fields of a line that holds an origin's changes
ORIGIN_FIELDS = ("origin", "visit_type", "changes")
_RECORD_FORM = "an object with origin, visit_type and changed_at (or changes)"


@dataclass(frozen=True)
class Change:
    origin: str
    visit_type: str
    #: seconds since the Unix epoch (UTC)
    at: float


def parse_changes(record: Any) -> list[Change]:
    """The changes of one line of a trace: one change (``changed_at``), or an origin's (``changes``);
    ValidationError names the field at fault."""
    if isinstance(record, Mapping) and "changes" in record:
        return _parse_origin_line(record)
    return [parse_change(record)]


def _parse_origin_line(record: Mapping[str, Any]) -> list[Change]:
    unknown = sorted(set(record) - set(ORIGIN_FIELDS))
    if unknown:
        raise ValidationError(unknown[0], f"only the fields {', '.join(ORIGIN_FIELDS)} on a line of changes",
                              record[unknown[0]])
    origin, visit_type = _origin_and_type(record)
    times = record.get("changes")
    if not isinstance(times, list):
        raise ValidationError("changes", "a list of ISO 8601 times with a zone", times)
    return [Change(origin, visit_type, parse_iso_time(when, f"changes[{index}]").timestamp())
            for index, when in enumerate(times)]


def parse_change(record: Any) -> Change:
    """One change of a trace; ValidationError names the field at fault."""
    if not isinstance(record, Mapping):
        raise ValidationError("record", _RECORD_FORM, type(record).__name__)
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise ValidationError(unknown[0], f"only the fields {', '.join(FIELDS)}", record[unknown[0]])
    origin, visit_type = _origin_and_type(record)
    changed_at = record.get("changed_at")
    if changed_at is None:
        raise ValidationError("changed_at", "an ISO 8601 time with a zone (the field is required)", None)
    when = parse_iso_time(changed_at, "changed_at")
    return Change(origin, visit_type, when.timestamp())


def _origin_and_type(record: Mapping[str, Any]) -> tuple[str, str]:
    origin = record.get("origin")
    if not isinstance(origin, str) or not origin.strip():
        raise ValidationError("origin", "a non-empty URL", origin)
    visit_type = record.get("visit_type")
    if not isinstance(visit_type, str) or not visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git or deb", visit_type)
    return origin.strip(), visit_type.strip()


def _excerpt(raw: bytes, size: int = 80) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    return text if len(text) <= size else text[: size - 1] + "…"


def csv_decoder(header: bytes) -> Callable[[bytes, bytes], dict[str, str]]:
    """A decoder of the rows under ``header`` (the file's first line), each into a record for
    :func:`parse_change`; ValidationError on the field ``header`` for a header that does not name
    the three columns, on ``record`` for a row that is not one CSV row of as many fields."""
    try:
        names = next(csv.reader([header.decode("utf-8-sig").strip()]), [])
    except (UnicodeDecodeError, csv.Error):
        raise ValidationError("header", f"a CSV header naming {', '.join(FIELDS)}", _excerpt(header)) from None
    names = [name.strip() for name in names]
    if sorted(names) != sorted(FIELDS):
        raise ValidationError("header", f"a CSV header naming {', '.join(FIELDS)}, each once", _excerpt(header))

    def decode(text: bytes, raw: bytes) -> dict[str, str]:
        try:
            rows = list(csv.reader([text.decode("utf-8")]))
        except UnicodeDecodeError:
            raise ValidationError("record", "UTF-8 text", _excerpt(raw)) from None
        except csv.Error as exc:
            raise ValidationError("record", f"one CSV row ({exc})", _excerpt(raw)) from None
        if len(rows) != 1 or len(rows[0]) != len(names):
            raise ValidationError("record", f"one CSV row of {len(names)} fields ({', '.join(names)})", _excerpt(raw))
        return dict(zip(names, (value.strip() for value in rows[0]), strict=True))

    return decode


@dataclass(frozen=True, eq=False)
class Trace:
    """Each origin's change times (seconds since the Unix epoch), sorted; origins in name order."""

    #: where it was read from, for reports
    label: str
    visit_type: str
    origins: tuple[str, ...]
    #: index in ``origins`` of each change, and its time: grouped by origin, each origin's in time order
    source: np.ndarray
    time: np.ndarray
    #: replicas of each recorded origin (:func:`replicate`); 1: the trace as recorded
    copies: int = 1

    @property
    def changes(self) -> int:
        return int(self.time.size)

    @property
    def start(self) -> float:
        return float(self.time.min())

    @property
    def end(self) -> float:
        return float(self.time.max())

    def summary(self) -> dict[str, Any]:
        """What identifies the trace in a report: its size, span and a digest of its changes (SHA-256
        over each origin and its change times, in the trace's order), so that a run can be matched to it."""
        digest = hashlib.sha256()
        for index, origin in enumerate(self.origins):
            digest.update(origin.encode() + b"\0" + self.time[self.source == index].tobytes())
        return {"label": self.label, "visit_type": self.visit_type, "copies": self.copies, "origins": len(self.origins),
                "changes": self.changes, "first_change": iso_time(self.start), "last_change": iso_time(self.end),
                "sha256": digest.hexdigest()}

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per origin: its first and last change time and its number of changes."""
        count = np.bincount(self.source, minlength=len(self.origins))
        last_index = np.cumsum(count) - 1
        return self.time[last_index - count + 1], self.time[last_index], count


def build_trace(changes: Iterable[Change], label: str) -> Trace:
    """The changes as a :class:`Trace`; ValidationError when there are none or several visit types."""
    by_origin: dict[str, set[float]] = {}
    visit_types: set[str] = set()
    for change in changes:
        visit_types.add(change.visit_type)
        by_origin.setdefault(change.origin, set()).add(change.at)
    if not by_origin:
        raise ValidationError("trace", "at least one change", label)
    if len(visit_types) > 1:
        raise ValidationError("visit_type", "one visit type per trace (the simulated store has one loader)",
                              ", ".join(sorted(visit_types)))
    origins = tuple(sorted(by_origin))
    times = [np.sort(np.fromiter(by_origin[origin], dtype=float)) for origin in origins]
    source = np.repeat(np.arange(len(origins)), [t.size for t in times])
    return Trace(label, visit_types.pop(), origins, source, np.concatenate(times))


def iso_time(seconds: float) -> str:
    """Seconds since the Unix epoch as an ISO 8601 UTC time."""
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def trace_lines(changes: Iterable[Change]) -> Iterator[str]:
    """The changes as JSON lines of the trace format (each with its newline)."""
    for change in changes:
        yield json.dumps({"origin": change.origin, "visit_type": change.visit_type,
                          "changed_at": iso_time(change.at)}, ensure_ascii=False) + "\n"


#: replicas of a trace are shifted forward by less than this many seconds (a year)
REPLICA_SHIFT = 365 * 86_400


def replicate(trace: Trace, copies: int, seed: int) -> Trace:
    """``copies`` replicas of each origin of ``trace``, each shifted forward by its own random whole
    number of seconds below :data:`REPLICA_SHIFT` (drawn from ``seed``) and cut at the trace's common
    end (its newest change): a larger population with the same kinds of history, its origins out of
    step with each other. Replica ``c`` of ``origin`` is named ``origin#c`` (1-based); one copy is the
    trace itself."""
    if copies == 1:
        return trace
    if trace.copies != 1:
        raise ValueError("replicas of a trace that is already replicated")
    rng = np.random.default_rng([seed, 0x7E9])
    n = len(trace.origins)
    shifts = rng.integers(0, REPLICA_SHIFT, size=(copies, n)).astype(float)
    end = trace.end
    origins: list[str] = []
    sources: list[np.ndarray] = []
    times: list[np.ndarray] = []
    for c in range(copies):
        shifted = trace.time + shifts[c][trace.source]
        keep = shifted <= end
        sources.append(trace.source[keep] + c * n)
        times.append(shifted[keep])
        origins.extend(f"{origin}#{c + 1}" for origin in trace.origins)
    source, time = np.concatenate(sources), np.concatenate(times)
    # an origin whose every change moved past the end is left out; the rest renumbered, in name order
    present = np.unique(source)
    names = [origins[k] for k in present]
    order = np.argsort(names, kind="stable")
    number = np.full(copies * n, -1)
    number[present[order]] = np.arange(present.size)
    source = number[source]
    by = np.lexsort((time, source))
    return Trace(trace.label, trace.visit_type, tuple(names[k] for k in order), source[by], time[by], copies)
