"""Which origins to visit next: the scheduling policies (see docs/design/origins.md),
their cooldowns, and what a grab hands to a loader.

The stores implement each policy as one or more index walks ("picks"), tried
in order, which ``domain.policy_picks`` declares; this module names the
policies and holds the rules that decide when an origin may be grabbed again:

- after a grab, not before ``in_flight_timeout`` unless its visit reports back;
- after a visit, not within ``absolute_cooldown`` of it (nor of the grab);
- after ``failed``, not within ``failed_cooldown``; after ``not_found``, not
  within ``not_found_cooldown``.

A store keeps this as one stored time, ``cooldown_until``; the policies' index
walks only see origins whose cooldown is over, so a grab's cost follows the
batch, never the number of origins cooling down.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .errors import ValidationError


class VisitPolicy(str, enum.Enum):
    #: never successfully loaded, oldest ``last_update`` first, non-forks before forks
    NEVER_VISITED_OLDEST_UPDATE_FIRST = "never_visited_oldest_update_first"
    #: ``last_update`` newer than the last successful visit, largest lag first
    ALREADY_VISITED_ORDER_BY_LAG = "already_visited_order_by_lag"
    #: forges with no ``last_update``: the second list, in its three tiers
    ORIGINS_WITHOUT_LAST_UPDATE = "origins_without_last_update"
    #: every enabled origin, the one scheduled longest ago (or never) first
    OLDEST_SCHEDULED_FIRST = "oldest_scheduled_first"
    #: one-shot visit types: until one visit succeeds, oldest scheduled first
    STOP_AFTER_SUCCESS = "stop_after_success"
    #: ours (see docs/design/beyond.md): never visited origins, then by the revisit time that spends the capacity
    #: optimally for their learnt change rates and the changes their forges report (see ``domain.change_rates``)
    CHANGE_RATE_OPTIMAL = "change_rate_optimal"


POLICY_NAMES = frozenset(p.value for p in VisitPolicy)

def parse_policy(value: Any, field_name: str = "policy") -> VisitPolicy:
    if isinstance(value, VisitPolicy):
        return value
    try:
        return VisitPolicy(value)
    except ValueError:
        raise ValidationError(field_name, f"one of {', '.join(sorted(POLICY_NAMES))}", value) from None


@dataclass(frozen=True, slots=True)
class GrabRequest:
    """Ask one policy for at most ``count`` origins."""

    policy: VisitPolicy
    count: int

    def validated(self) -> GrabRequest:
        policy = parse_policy(self.policy)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValidationError("count", "a whole number of 0 or more", self.count)
        return GrabRequest(policy, self.count)


@dataclass(frozen=True, slots=True)
class NextVisit:
    """An origin a grab picked, with what its loader needs."""

    url: str
    visit_type: str
    policy: VisitPolicy
    lister_id: int | None
    lister_name: str | None
    lister_instance_name: str | None
    extra_loader_arguments: Mapping[str, Any] = field(default_factory=dict)
    last_update: datetime | None = None

    def loader_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the loader call, in swh-scheduler's order (docs/reference/swh-compat-celery.md):
        ``url``, ``lister_name``, ``lister_instance_name`` (None for a lister without an instance
        name), then the lister's extra arguments, which never replace the first three."""
        kwargs: dict[str, Any] = {"url": self.url, "lister_name": self.lister_name,
                                  "lister_instance_name": self.lister_instance_name or None}
        kwargs.update((k, v) for k, v in self.extra_loader_arguments.items() if k not in kwargs)
        return kwargs


def loader_task_type(visit_type: str) -> str:
    """The task type whose callable loads origins of this visit type."""
    return f"load-{visit_type}"


def visit_type_of_task_type(task_type: str) -> str | None:
    return task_type.removeprefix("load-") if task_type.startswith("load-") else None


@dataclass(frozen=True, slots=True)
class GrabOptions:
    """How a grab treats what it picks (configurable in ``[origins]``)."""

    #: a grabbed origin whose visit never reports back may be grabbed again after this
    in_flight_timeout: timedelta = timedelta(days=1)
    #: only origins listed by this lister
    lister_id: int | None = None
    #: ``minimum_interval``: origins loaded once wait this long after that visit
    minimum_interval: timedelta = timedelta(days=1)

    def validated(self) -> GrabOptions:
        for name in ("in_flight_timeout", "minimum_interval"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValidationError(name, "a positive duration", value)
        return self


def cooldown_until(
    *,
    status_date: datetime,
    outcome_failed: bool,
    outcome_not_found: bool,
    last_scheduled: datetime | None,
    current_cooldown: datetime | None,
    absolute_cooldown: timedelta,
    failed_cooldown: timedelta,
    not_found_cooldown: timedelta,
) -> datetime:
    """When an origin may be grabbed again after a visit that ended at ``status_date``.

    A grab made after this visit (``last_scheduled`` later than the status) is
    still out: its own cooldown stands.
    """
    until = status_date + absolute_cooldown
    if last_scheduled is not None:
        until = max(until, last_scheduled + absolute_cooldown)
    if outcome_failed:
        until = max(until, status_date + failed_cooldown)
    if outcome_not_found:
        until = max(until, status_date + not_found_cooldown)
    if last_scheduled is not None and last_scheduled > status_date and current_cooldown is not None:
        until = max(until, current_cooldown)
    return until


def live_cooldown(until: datetime | None, now: datetime | None) -> datetime | None:
    """A cooldown already over by ``now`` is stored as none."""
    if until is None or (now is not None and until <= now):
        return None
    return until
