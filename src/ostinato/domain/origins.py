"""Listers and the origins they list (see docs/design/origins.md), read strictly from input.

A listed origin is what a lister saw on a forge: ``url``, ``visit_type``, extra
loader arguments, the forge's ``last_update`` (may be missing), fork
information and whether it is enabled. The store adds ``first_seen`` and
``last_seen`` and the lister it belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from .durations import parse_iso_time
from .errors import ValidationError
from .limits import MAX_TYPE_BYTES, MAX_URL_BYTES, check_json_value, check_stored_text
from .politeness import check_host


@dataclass(frozen=True, slots=True)
class ListedOrigin:
    url: str
    visit_type: str
    extra_loader_arguments: Mapping[str, Any] = field(default_factory=dict)
    last_update: datetime | None = None
    enabled: bool = True
    is_fork: bool | None = None
    forked_from_url: str | None = None
    #: the key politeness counts it under (see ``domain.politeness``); None: its URL's host
    host: str | None = None


_FIELDS = {"url", "visit_type", "extra_loader_arguments", "last_update", "enabled", "is_fork", "forked_from_url", "host"}


def parse_listed_origin(record: Any) -> ListedOrigin:
    """Read one listed origin (a decoded JSON object); ValidationError names the field at fault."""
    if not isinstance(record, Mapping):
        raise ValidationError("record", "a JSON object with url and visit_type", type(record).__name__)
    unknown = sorted(set(record) - _FIELDS)
    if unknown:
        raise ValidationError(unknown[0], f"only the fields {', '.join(sorted(_FIELDS))}", record[unknown[0]])
    url = record.get("url")
    if not isinstance(url, str) or not url.strip():
        raise ValidationError("url", "a non-empty URL", url)
    visit_type = record.get("visit_type")
    if not isinstance(visit_type, str) or not visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git", visit_type)
    extra = record.get("extra_loader_arguments") or {}
    if not isinstance(extra, Mapping) or not all(isinstance(k, str) for k in extra):
        raise ValidationError("extra_loader_arguments", "a JSON object", extra)
    last_update = record.get("last_update")
    if isinstance(last_update, str):
        last_update = parse_iso_time(last_update, "last_update")
    elif isinstance(last_update, datetime):
        if last_update.tzinfo is None:
            raise ValidationError("last_update", "a time with a zone", last_update.isoformat())
        try:
            last_update = last_update.astimezone(UTC)
        except OverflowError:
            raise ValidationError("last_update", "a time with a UTC form (within years 1 to 9999)",
                                  last_update.isoformat()) from None
    elif last_update is not None:
        raise ValidationError("last_update", "an ISO 8601 time with a zone, or null", last_update)
    enabled = record.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValidationError("enabled", "true or false", enabled)
    is_fork = record.get("is_fork")
    if is_fork is not None and not isinstance(is_fork, bool):
        raise ValidationError("is_fork", "true, false or null", is_fork)
    forked_from = record.get("forked_from_url")
    if forked_from is not None and (not isinstance(forked_from, str) or not forked_from.strip()):
        raise ValidationError("forked_from_url", "a URL or null", forked_from)
    return check_listed_origin(ListedOrigin(url, visit_type, dict(extra), last_update, enabled, is_fork, forked_from,
                                            record.get("host")))


def check_listed_origin(origin: ListedOrigin) -> ListedOrigin:
    """``origin`` if a store can record it (the rules of ``domain.limits``), however it was made:
    files, HTTP bodies and the stores themselves apply these."""
    for name, value, limit in (("url", origin.url, MAX_URL_BYTES), ("visit_type", origin.visit_type, MAX_TYPE_BYTES)):
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(name, "a non-empty URL" if name == "url" else "a visit type such as git", value)
        check_stored_text(value, name, limit)
    if origin.forked_from_url is not None:
        if not isinstance(origin.forked_from_url, str):
            raise ValidationError("forked_from_url", "a URL or null", origin.forked_from_url)
        check_stored_text(origin.forked_from_url, "forked_from_url")
    if not isinstance(origin.extra_loader_arguments, Mapping):
        raise ValidationError("extra_loader_arguments", "a JSON object", origin.extra_loader_arguments)
    check_json_value(origin.extra_loader_arguments, "extra_loader_arguments")
    if origin.host is not None:
        check_host(origin.host)
    try:
        orjson.dumps(origin.extra_loader_arguments)
    except TypeError:  # whole numbers beyond 64 bits
        raise ValidationError("extra_loader_arguments", "JSON numbers within 64 bits", origin.extra_loader_arguments) from None
    if origin.last_update is not None and (not isinstance(origin.last_update, datetime) or origin.last_update.tzinfo is None):
        raise ValidationError("last_update", "a time with a zone, or null", origin.last_update)
    for name in ("enabled", "is_fork"):
        value = getattr(origin, name)
        if not isinstance(value, bool) and not (name == "is_fork" and value is None):
            raise ValidationError(name, "true or false" + (", or null" if name == "is_fork" else ""), value)
    return origin


@dataclass(frozen=True, slots=True)
class Lister:
    """A lister instance: its opaque state and when it last finished a listing.

    ``updated`` is the optimistic-concurrency token: an update made from a stale
    copy is refused.
    """

    id: int
    name: str
    instance_name: str
    current_state: Mapping[str, Any]
    last_listing_finished_at: datetime | None
    updated: datetime

    def next_token(self, now: datetime) -> datetime:
        """The ``updated`` of the next version: later than this one even if the clock has not moved."""
        return max(now, self.updated + timedelta(microseconds=1))


@dataclass(frozen=True, slots=True)
class StoredListedOrigin:
    """A listed origin as stored: with its lister and when it was first and last seen."""

    lister_id: int
    origin: ListedOrigin
    first_seen: datetime
    last_seen: datetime
