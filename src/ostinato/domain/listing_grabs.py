"""What the swh protocol's face asks of the visit stats (see docs/reference/swh-compat.md, "Grabs"):
its grab of listed origins, the visit stats it writes as told, and its per-lister counts.

These follow swh-scheduler's rules where they differ from Ostinato's own
(``domain.visit_policies``, docs/design/origins.md):

- a grab answers *listings* (one row per lister listing an origin), not origins;
- its cooldowns are computed at each grab from the grab's own arguments and the
  visit stats as they are, not stored when a visit's outcome arrives: an origin is
  left out if it was scheduled within ``absolute_cooldown``; if it was scheduled
  within ``scheduled_cooldown`` and no visit was recorded since; if its last visit
  failed within ``failed_cooldown``, or found nothing within ``not_found_cooldown``
  (a cooldown of None is not applied);
- "visited" means a snapshot was recorded (``last_snapshot``), and the orders are
  those of swh's policies (:class:`ListingOrder`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import ValidationError
from .visits import VisitOutcome


class ListingOrder(str, enum.Enum):
    """The protocol's scheduling policies, each a filter and an order over the listings."""

    #: every listing, the one scheduled longest ago (or never) first
    OLDEST_SCHEDULED_FIRST = "oldest_scheduled_first"
    #: until a visit succeeds: oldest ``last_update`` first (none last), then first seen
    STOP_AFTER_SUCCESS = "stop_after_success"
    #: no snapshot yet and a ``last_update``: oldest ``last_update`` first
    NEVER_VISITED_OLDEST_UPDATE_FIRST = "never_visited_oldest_update_first"
    #: a snapshot, and a ``last_update`` after the last successful visit: largest lag first
    ALREADY_VISITED_ORDER_BY_LAG = "already_visited_order_by_lag"
    #: no ``last_update``: by the origin's queue position (none first), then first seen; the
    #: visit type's queue position moves up to the largest one grabbed
    ORIGINS_WITHOUT_LAST_UPDATE = "origins_without_last_update"
    #: a lister's origins not scheduled since its last listing ended (``scheduled_before``)
    FIRST_VISITS_AFTER_LISTING = "first_visits_after_listing"


@dataclass(frozen=True, slots=True)
class ListingGrab:
    """One grab of the protocol: at most ``count`` listings of ``visit_type``."""

    visit_type: str
    count: int
    order: ListingOrder
    #: listings enabled (True) or disabled (False)
    enabled: bool = True
    #: the listings of these listers only (None: of any)
    lister_ids: tuple[int, ...] | None = None
    absolute_cooldown: timedelta | None = timedelta(hours=12)
    scheduled_cooldown: timedelta | None = timedelta(days=7)
    failed_cooldown: timedelta | None = timedelta(days=14)
    not_found_cooldown: timedelta | None = timedelta(days=31)
    #: FIRST_VISITS_AFTER_LISTING: also origins scheduled before this (the lister's last listing's end)
    scheduled_before: datetime | None = None
    #: a random share of the listings, in percent, looked at (the protocol's ``tablesample``)
    sample_percent: float | None = None
    #: compat records (see ``Store.put_compat_records``) of each origin's queue position, keyed
    #: "VISIT_TYPE URL" with the field ``next_visit_queue_position`` (ORIGINS_WITHOUT_LAST_UPDATE)
    position_records: str | None = None
    #: compat records of the visit types' queue positions, keyed by visit type, field ``position``
    queue_records: str | None = None

    def validated(self) -> "ListingGrab":
        if not isinstance(self.visit_type, str) or not self.visit_type:
            raise ValidationError("visit_type", "a visit type such as git", self.visit_type)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValidationError("count", "a whole number of 0 or more", self.count)
        if not isinstance(self.order, ListingOrder):
            raise ValidationError("order", "a scheduling policy of the protocol", self.order)
        if self.lister_ids is not None and (not isinstance(self.lister_ids, tuple) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in self.lister_ids)):
            raise ValidationError("lister_ids", "a tuple of lister ids, or null", self.lister_ids)
        for name in ("absolute_cooldown", "scheduled_cooldown", "failed_cooldown", "not_found_cooldown"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, timedelta):
                raise ValidationError(name, "a duration or null", value)
        if self.sample_percent is not None and (isinstance(self.sample_percent, bool)
                                                or not isinstance(self.sample_percent, (int, float))
                                                or not 0 < self.sample_percent <= 100):
            raise ValidationError("sample_percent", "a percentage above 0 and up to 100, or null", self.sample_percent)
        for name in ("position_records", "queue_records"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value or len(value) > 200):
                raise ValidationError(name, "a namespace of 1 to 200 characters, or null", value)
        return self


def cooldown_bounds(grab: ListingGrab, now: datetime) -> dict[str, datetime | None]:
    """The times each cooldown compares the stats with (None: that cooldown is not applied)."""
    def since(cooldown: timedelta | None) -> datetime | None:
        return None if not cooldown else now - cooldown

    return {"absolute_since": since(grab.absolute_cooldown), "scheduled_since": since(grab.scheduled_cooldown),
            "failed_since": since(grab.failed_cooldown), "not_found_since": since(grab.not_found_cooldown)}


@dataclass(frozen=True, slots=True)
class VisitStatsUpdate:
    """Fields of one origin's visit stats, written as told: each one not None replaces the stored one
    (the protocol's ``origin_visit_stats_upsert``)."""

    url: str
    visit_type: str
    last_visit: datetime | None = None
    last_visit_status: VisitOutcome | None = None
    last_successful: datetime | None = None
    last_snapshot: bytes | None = None
    last_scheduled: datetime | None = None


@dataclass(frozen=True, slots=True)
class ListingCounts:
    """The protocol's metrics of one (lister, visit type), counted over the listings."""

    lister_id: int
    visit_type: str
    origins_known: int
    origins_enabled: int
    #: enabled, and no snapshot recorded
    origins_never_visited: int
    #: enabled, and a ``last_update`` after the last successful visit
    origins_with_pending_changes: int
