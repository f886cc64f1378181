"""The origins role's dialect-free steps: a listing batch made one record per origin, the grab's
requests run in turn within the limit, the grabbed rows made next visits, and change_rate_optimal's
threshold and rate samples checked and thinned (see docs/design/origins.md)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from ...domain.change_rates import RevisitThreshold
from ...domain.errors import ValidationError
from ...domain.origins import ListedOrigin, check_listed_origin
from ...domain.policy_picks import POLICY_PICKS
from ...domain.politeness import host_of
from ...domain.visit_policies import GrabRequest, NextVisit, VisitPolicy
from ...domain.visits import VisitOutcome, VisitStatus
from .rows import VisitChangesRecord, pack_times


def latest_listed(origins: Sequence[ListedOrigin]) -> list[ListedOrigin]:
    """One record per (url, visit_type), the last one of the batch winning; each checked first
    (``check_listed_origin``, located at ``origin N``), so a bad one writes nothing. Each carries its
    host for politeness: the lister's, else its URL's."""
    for index, origin in enumerate(origins):
        try:
            check_listed_origin(origin)
        except ValidationError as exc:
            raise exc.at(f"origin {index}") from None
    unique = {(o.url, o.visit_type): o for o in origins}.values()
    return [o if o.host is not None else ListedOrigin(o.url, o.visit_type, o.extra_loader_arguments, o.last_update,
                                                      o.enabled, o.is_fork, o.forked_from_url, host_of(o.url))
            for o in unique]


#: origins whose statuses are folded, then written, at a time: the server writes a part while the
#: client folds the next (``Dialect.pipeline``)
FEEDBACK_PART = 2_000


def statuses_by_key(statuses: Sequence[VisitStatus], size: int) -> list[list[VisitStatus]]:
    """The statuses in parts of at most ``size`` origins, every status of an origin in the same part."""
    by_key: dict[tuple[str, str], list[VisitStatus]] = {}
    for status in statuses:
        by_key.setdefault((status.origin, status.type), []).append(status)
    groups = list(by_key.values())
    return [[s for group in groups[start:start + size] for s in group] for start in range(0, len(groups), size)]


def changes_seen(statuses: Sequence[VisitStatus]) -> list[VisitChangesRecord]:
    """What ``origin_visit_changes`` gets of a batch: per (url, visit_type), the newest successful status
    that carries change times or a newest change (the others leave the table alone)."""
    latest: dict[tuple[str, str], VisitStatus] = {}
    for status in statuses:
        if status.newest_change_at is None and status.change_times is None:
            continue
        if status.outcome is not VisitOutcome.SUCCESSFUL:
            continue
        kept = latest.get((status.origin, status.type))
        if kept is None or status.date > kept.date:
            latest[(status.origin, status.type)] = status
    # the date in UTC, as the change times are: PostgreSQL refuses offsets beyond ±15:59, which Python allows
    return [VisitChangesRecord(s.origin, s.type, s.date.astimezone(UTC), s.newest_change_at, pack_times(s.change_times))
            for s in latest.values()]


def next_visit(visit_type: str, policy: VisitPolicy, url: str, lister_id: int | None,
               extra_loader_arguments: Mapping[str, Any] | None, last_update: datetime | None,
               listers: Mapping[int, tuple[str, str]]) -> NextVisit:
    """A picked origin with what its loader needs; ``listers`` maps lister id to (name, instance name)."""
    name, instance = listers.get(lister_id, (None, None)) if lister_id is not None else (None, None)
    return NextVisit(url, visit_type, policy, lister_id, name, instance, extra_loader_arguments or {}, last_update)


def check_limit(limit: int | None, requests: Sequence[GrabRequest]) -> int:
    """The most a grab may take in all: ``limit``, or every request's count."""
    if limit is None:
        return sum(r.count for r in requests)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("limit", "a whole number of 0 or more", limit)
    return limit


#: a picked origin as the grab reads it: its URL, lister id, loader arguments and last_update
PickedOrigin = tuple[str, int | None, Mapping[str, Any] | None, datetime | None]
_Picked = TypeVar("_Picked")


def run_picks(requests: Sequence[GrabRequest], total: int,
              pick: Callable[[str, int], Sequence[_Picked]]) -> list[tuple[VisitPolicy, _Picked]]:
    """A grab's walk through its requests: each policy's picks tried in order, none taking more
    than the request's count or the room left under ``total``. ``pick(name, limit)`` runs the
    named pick (and marks what it took) and returns its rows."""
    picked: list[tuple[VisitPolicy, _Picked]] = []
    for request in requests:
        remaining = min(request.count, total - len(picked))
        for name in POLICY_PICKS[request.policy]:
            if remaining <= 0:
                break
            rows = pick(name, remaining)
            picked.extend((request.policy, row) for row in rows)
            remaining -= len(rows)
    return picked


# -- change_rate_optimal's threshold -----------------------------------------------
#: below this many rows a sample reads the whole table
SMALL_TABLE = 50_000
#: a page sample reads this many times the rows asked for (other visit types, disabled origins)
SAMPLE_OVERREAD = 3




def thin_sample(found: list[Any], size: int, seed: int) -> list[Any]:
    """At most ``size`` of ``found``, chosen at random (reproducibly)."""
    if len(found) <= size:
        return found
    return random.Random(seed).sample(found, size)


def check_revisit_threshold(threshold: RevisitThreshold) -> None:
    """ValidationError naming the field unless the threshold can be stored."""
    if not isinstance(threshold.visit_type, str) or not threshold.visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git", threshold.visit_type)
    for name in ("threshold", "visits_per_day"):
        value = getattr(threshold, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValidationError(name, "a positive number", value)
    if isinstance(threshold.origins, bool) or not isinstance(threshold.origins, int) or threshold.origins < 0:
        raise ValidationError("origins", "a whole number of 0 or more", threshold.origins)
    if not isinstance(threshold.computed_at, datetime) or threshold.computed_at.tzinfo is None:
        raise ValidationError("computed_at", "a time with a zone", threshold.computed_at)
