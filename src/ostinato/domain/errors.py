"""Errors shared by every layer: bad input, missing objects, conflicts."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


def close_names(typed: str, known: Iterable[str], *, n: int = 2, cutoff: float = 0.75) -> list[str]:
    """The names of ``known`` closest to ``typed`` (case aside), best first: what someone probably meant."""
    by_lower: dict[str, str] = {}
    for name in known:
        by_lower.setdefault(name.lower(), name)
    return [by_lower[m] for m in difflib.get_close_matches(str(typed).lower(), list(by_lower), n=n, cutoff=cutoff)]


def did_you_mean(names: list[str]) -> str:
    """`` (did you mean a or b?)``, or nothing when there is no suggestion."""
    return f" (did you mean {' or '.join(names)}?)" if names else ""


def known_names(typed: str, known: Iterable[str], *, none: str, shown: int = 20) -> str:
    """What follows a name that was not found: the closest known names; else the first ``shown`` of them;
    else ``none`` (`` (none added yet)``)."""
    names = sorted(known)
    close = close_names(typed, names)
    if close:
        return did_you_mean(close)
    if not names:
        return f" ({none})"
    return f" (known: {', '.join(names[:shown])}{', …' if len(names) > shown else ''})"


class OstinatoError(Exception):
    """Base class of every error Ostinato raises on purpose."""


class ValidationError(OstinatoError, ValueError):
    """Bad input: names the field at fault and what was expected.

    ``record`` optionally locates the input (a line number in a file, an index
    in a batch) so that a bulk rejection says which record was bad.
    """

    def __init__(self, field: str, expected: str, got: Any = None, *, record: str | None = None):
        self.field = field
        self.expected = expected
        self.got = got
        self.record = record
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"{self.record}: " if self.record else ""
        got = "" if self.got is None else f", got {self.got!r}"
        return f"{where}{self.field}: expected {self.expected}{got}"

    def at(self, record: str) -> ValidationError:
        """The same error, located at ``record`` (e.g. ``line 12``)."""
        return ValidationError(self.field, self.expected, self.got, record=record)

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "expected": self.expected, "got": self.got, "record": self.record}


class NotFoundError(OstinatoError, LookupError):
    """A named object does not exist."""

    def __init__(self, kind: str, key: Any):
        self.kind = kind
        self.key = key
        super().__init__(f"{kind} not found: {key}")


class ConflictError(OstinatoError):
    """The change conflicts with what is stored (already exists, concurrent update)."""


class SchemaError(OstinatoError):
    """The database schema is missing or not at the version this code expects."""


class MissingExtra(OstinatoError, ImportError):
    """A feature needs an optional part of the install (a pip extra) that is not installed."""

    def __init__(self, extra: str, feature: str, missing: str):
        self.extra = extra
        self.feature = feature
        self.missing = missing
        super().__init__(f"{feature} needs the '{extra}' extra ({missing} is not installed): "
                         f"pip install 'ostinato[{extra}]'")


def check_text(value: str, field: str) -> str:
    """Refuse text that cannot be stored as UTF-8 (unpaired surrogates from a JSON ``\\ud800`` escape)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, "valid Unicode text (no unpaired surrogate)", value.encode("utf-8", "backslashreplace").decode()) from None
    return value


class QueueUnavailable(OstinatoError):
    """The depth of an executor's queue cannot be known (its broker is unreachable): dispatch to it waits."""


class StoreUnavailable(OstinatoError):
    """The database cannot be opened: a missing SQLite file (when not asked to create one), a file that
    is not a SQLite database, a PostgreSQL server that cannot be reached. The message names the
    database (a URL without its password) and why."""


class NoDatabase(StoreUnavailable, SchemaError):
    """No database where one was expected (a missing SQLite file): like a missing schema, its remedy is
    ``ostinato db init``, and the CLI exits with the schema problems' status."""
