"""Ostinato's own scheduling policies through the protocol's face (see docs/reference/swh-compat.md,
"Ostinato's policies"): one setting away for an archive, the policy name its scheduler already passes.

- ``grab_next_visits(policy="change_rate_optimal")``, or any of Ostinato's policies as
  ``ostinato.<name>`` (``ostinato.origins_without_last_update``: Ostinato's three tiers, not the
  protocol's), is Ostinato's own grab (``Store.grab_next_visits``): an index walk, its stored
  cooldowns (the grab's own cooldown arguments are the protocol's, not used here), the visit type's
  politeness per host, answered as the protocol's listings.
- A visit type grabbed so once learns from then on: the stats the protocol's journal client upserts
  for it are also fed to Ostinato's feedback (``Store.record_visit_statuses``), which learns each
  origin's change rate (an eventful visit is a new snapshot), before they are written as told. A
  visit type never grabbed so pays nothing for it. ``ostinato journal-client`` on the same topic
  feeds the same learning from the journal itself (docs say which to choose).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...domain.errors import ValidationError
from ...domain.listing_grabs import ProtocolVisitStats
from ...domain.origins import Lister, StoredListedOrigin
from ...domain.visit_policies import GrabOptions, GrabRequest, VisitPolicy
from ...domain.visits import JournalStatus, VisitOutcome, VisitStatus
from .operations import Context, UnknownPolicy

#: the prefix that names any of Ostinato's policies (the protocol's own names keep the protocol's meaning)
PREFIX = "ostinato."
#: compat records of the visit types that learn: keyed by visit type, since when and by which policy
LEARNING = "swh.learning"
_OURS_ONLY = {VisitPolicy.CHANGE_RATE_OPTIMAL.value: VisitPolicy.CHANGE_RATE_OPTIMAL}
_JOURNAL = {VisitOutcome.SUCCESSFUL: JournalStatus.FULL, VisitOutcome.FAILED: JournalStatus.FAILED,
            VisitOutcome.NOT_FOUND: JournalStatus.NOT_FOUND}


def ostinato_policy(name: str) -> VisitPolicy | None:
    """The Ostinato policy a grab's policy name asks for; None for a name of the protocol's."""
    if name in _OURS_ONLY:
        return _OURS_ONLY[name]
    if not name.startswith(PREFIX):
        return None
    try:
        return VisitPolicy(name[len(PREFIX):])
    except ValueError:
        raise UnknownPolicy("policy", "a scheduling policy of the protocol, change_rate_optimal, or ostinato.<one of "
                            + ", ".join(p.value for p in VisitPolicy) + ">", name) from None


def grab_with(ctx: Context, policy: VisitPolicy, name: str, visit_type: str, count: int, enabled: bool,
              listers: list[Lister] | None, now: datetime, dry_run: bool) -> list[StoredListedOrigin]:
    """Ostinato's grab by ``policy``, answered as the listings the loaders get (the one each origin's
    visit is for); the visit type learns from then on (not for a dry run)."""
    if not enabled:
        raise ValidationError("enabled", f"true with {name}: Ostinato's policies take enabled origins only", enabled)
    if listers is not None and len(listers) > 1:
        raise ValidationError("lister_name", f"one lister with {name} (give its instance name too)",
                              sorted(f"{item.name}/{item.instance_name}" for item in listers))
    if listers is not None and not listers:
        return []
    options = GrabOptions(ctx.grab_options.in_flight_timeout, listers[0].id if listers else None,
                          ctx.grab_options.minimum_interval)
    visits = ctx.origins.grab_next_visits(visit_type, [GrabRequest(policy, count)], now, options=options,
                                          dry_run=dry_run)
    if not dry_run:
        learn(ctx, visit_type, name, now)
    keys = [(v.lister_id, v.url, v.visit_type) for v in visits if v.lister_id is not None]
    found = {(s.lister_id, s.origin.url, s.origin.visit_type): s for s in ctx.origins.get_listings(keys)}
    return [found[key] for key in keys if key in found]


def learn(ctx: Context, visit_type: str, policy: str, now: datetime) -> None:
    """Mark the visit type as learning (once: the record keeps its first date)."""
    if visit_type not in ctx.compat.get_compat_records(LEARNING, [visit_type]):
        ctx.compat.put_compat_records(LEARNING, {visit_type: {"since": now.isoformat(), "policy": policy}})


def learning(ctx: Context, visit_types: Sequence[str]) -> set[str]:
    """Those of ``visit_types`` that learn."""
    return set(ctx.compat.get_compat_records(LEARNING, sorted(set(visit_types))))


def statuses_of(stats: Sequence[ProtocolVisitStats]) -> list[VisitStatus]:
    """The visits the upserted stats report (a visit's date and outcome given), as journal statuses: a
    successful visit with its snapshot (the feedback tells eventful from uneventful by it)."""
    found = []
    for s in stats:
        if s.last_visit is None or s.last_visit_status is None:
            continue
        snapshot = s.last_snapshot if s.last_visit_status is VisitOutcome.SUCCESSFUL else None
        status = _JOURNAL[s.last_visit_status]
        if status is JournalStatus.FULL and snapshot is None:
            continue  # a success whose snapshot is not told: nothing to learn from
        found.append(VisitStatus(s.url, 1, s.visit_type, status, s.last_visit, snapshot))
    return found


def feed(ctx: Context, stats: Sequence[ProtocolVisitStats]) -> Any:
    """Feed the visits of the stats of learning visit types to Ostinato's feedback (before the stats are
    written as told, so that its guard of the newest status sees them as new)."""
    types = learning(ctx, [s.visit_type for s in stats])
    if not types:
        return 0
    statuses = statuses_of([s for s in stats if s.visit_type in types])
    if not statuses:
        return 0
    # no wall clock: a cooldown is stored as the feedback computes it from the visit's date (one already over
    # is released by the next grab), so that what it learns does not depend on when the stats arrive
    return ctx.origins.record_visit_statuses(statuses, ctx.feedback)
