"""The imports role's checks: every record of a batch checked before any is written, and a bad one
located by its place or its id (see docs/reference/swh-import.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...domain.errors import ValidationError


def checked_records(records: Sequence[Any], check: Callable[[Any], Any], where: Callable[[int, Any], str]) -> list[Any]:
    """Every record of an import batch checked before a store writes any: a bad one is a
    ValidationError located at ``where(index, record)`` (``task 17``, ``origin 3``)."""
    checked = list(records)
    for index, record in enumerate(checked):
        try:
            check(record)
        except ValidationError as exc:
            raise exc.at(where(index, record)) from None
    return checked


def at_index(kind: str) -> Callable[[int, Any], str]:
    """``kind N``, N the record's place in the batch."""
    return lambda index, _record: f"{kind} {index}"


def at_id(kind: str) -> Callable[[int, Any], str]:
    """``kind ID``, ID the record's own id when it is a whole number, else its place in the batch."""
    return lambda index, record: f"{kind} {record.id}" if type(getattr(record, "id", None)) is int else f"{kind} {index}"
