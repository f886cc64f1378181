"""Politeness per host (see docs/reference/origins.md, "Politeness per host").

Each origin belongs to a host: its URL's host, or the key its lister gave (``ListedOrigin.host``).
A visit type may give every host at most ``max_concurrent_per_host`` visits in flight and at
least ``min_spacing_per_host`` between two visit starts on it; a host may override either. The
grab's time stands for a visit's start; "in flight" is what the metrics call in flight (grabbed,
no final status since, its in-flight cooldown not over). None means no limit (no spacing).

This module holds the rules (a host's room at a grab) and the checks of what is stored; the
stores count and lock, the simulator applies the same rules (``room``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .errors import ValidationError

#: the URL's host as the stores' migrations derive it: after ``scheme://`` and any user, before a port,
#: path, query or fragment; lowercased. None for what has no ``scheme://`` (a path, an scp-like address).
_HOST = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/:?#\[\]]+|\[[^\]/]*\])")
#: the longest host key a lister may give
MAX_HOST_BYTES = 255
#: the largest limits stored (a million visits in flight, a year between starts)
MAX_CONCURRENT = 1_000_000
MAX_SPACING = timedelta(days=366)


def host_of(url: str) -> str | None:
    """The host politeness counts ``url`` under, or None (no politeness applies)."""
    match = _HOST.match(url) if isinstance(url, str) else None
    return match.group(1).lower() if match else None


def check_host(value: Any, field_name: str = "host") -> str:
    """A host key as stored: non-empty text, no longer than :data:`MAX_HOST_BYTES`."""
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ValidationError(field_name, "a host name such as github.com (no surrounding spaces)", value)
    if len(value.encode("utf-8")) > MAX_HOST_BYTES:
        raise ValidationError(field_name, f"at most {MAX_HOST_BYTES} bytes", value[:40] + "…")
    return value


def check_max_concurrent(value: Any, field_name: str = "max_concurrent_per_host") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENT:
        raise ValidationError(field_name, f"a whole number from 1 to {MAX_CONCURRENT}, or none for no limit", value)
    return value


def check_min_spacing(value: Any, field_name: str = "min_spacing_per_host") -> timedelta | None:
    if value is None:
        return None
    if not isinstance(value, timedelta) or not timedelta(0) <= value <= MAX_SPACING:
        raise ValidationError(field_name, "a duration from 0 to 366 days, or none for no spacing", value)
    return value


@dataclass(frozen=True, slots=True)
class HostLimits:
    """A host's own limits over its visit type's (None: the visit type's)."""

    max_concurrent: int | None = None
    min_spacing: timedelta | None = None

    def validated(self) -> HostLimits:
        return HostLimits(check_max_concurrent(self.max_concurrent, "max_concurrent"),
                          check_min_spacing(self.min_spacing, "min_spacing"))


@dataclass(frozen=True, slots=True)
class Politeness:
    """A visit type's politeness: its limits per host and the hosts that override them."""

    visit_type: str
    max_concurrent_per_host: int | None = None
    min_spacing_per_host: timedelta | None = None
    hosts: Mapping[str, HostLimits] = field(default_factory=dict)

    @property
    def off(self) -> bool:
        """No limit for any host: the grab is the plain index walk."""
        spaced = (self.min_spacing_per_host or timedelta(0)) > timedelta(0)
        overrides = any(h.max_concurrent is not None or (h.min_spacing or timedelta(0)) > timedelta(0)
                        for h in self.hosts.values())
        return self.max_concurrent_per_host is None and not spaced and not overrides

    def limits(self, host: str) -> tuple[int | None, timedelta]:
        """``host``'s limit on visits in flight (None: none) and spacing between starts."""
        own = self.hosts.get(host, HostLimits())
        limit = own.max_concurrent if own.max_concurrent is not None else self.max_concurrent_per_host
        spacing = own.min_spacing if own.min_spacing is not None else self.min_spacing_per_host
        return limit, spacing or timedelta(0)

    def longest_spacing(self) -> timedelta:
        """The longest spacing any host has: hosts started more recently may be closed."""
        spacings = [self.min_spacing_per_host or timedelta(0)]
        spacings += [h.min_spacing for h in self.hosts.values() if h.min_spacing is not None]
        return max(spacings)

    def room(self, host: str | None, in_flight: int, last_start: datetime | None, now: datetime) -> int | None:
        """How many visits ``host`` may start at ``now`` (None: no limit)."""
        if host is None:
            return None
        limit, spacing = self.limits(host)
        return room(limit, spacing, in_flight, last_start, now)


def room(limit: int | None, spacing: timedelta, in_flight: int, last_start: datetime | None,
         now: datetime) -> int | None:
    """Visits a host may start at ``now``: ``limit`` less those in flight, and with a spacing, one
    at most and none before ``last_start + spacing`` (None: no limit)."""
    free = None if limit is None else max(0, limit - in_flight)
    if spacing > timedelta(0):
        if last_start is not None and now < last_start + spacing:
            return 0
        free = 1 if free is None else min(free, 1)
    return free


def check_politeness_setting(visit_type: Any, host: Any, max_concurrent: Any, min_spacing: Any) -> None:
    """ValidationError naming the field unless these can be stored (``host`` None: the visit type's own)."""
    if not isinstance(visit_type, str) or not visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git", visit_type)
    if host is None:
        check_max_concurrent(max_concurrent)
        check_min_spacing(min_spacing)
    else:
        check_host(host)
        check_max_concurrent(max_concurrent, "max_concurrent")
        check_min_spacing(min_spacing, "min_spacing")
