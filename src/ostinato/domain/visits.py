"""Origin visits: the journal's visit statuses and the feedback loop (see docs/design/origins.md).

A visit status message has the shape of the archive's journal
(``origin``, ``visit``, ``type``, ``status``, ``date``, ``snapshot``).
:func:`apply_visit_status` is the one place where a final status becomes the
origin's new visit stats, by these rules:

1. Update last visit date, status and eventfulness; keep the time of the last
   successful visit; a failure keeps the last visit date and increments the
   failure count; at ``max_failures`` successive failures the origin is disabled
   until the next run of its lister; a success resets the count.
2. Next run target: failed → ``now + failure_delay`` (1 day); otherwise the
   duration since the last successful visit, divided by ``adjust_factor`` after
   an eventful visit (clamped to ``minimum_interval``, 1 day) or multiplied by
   it after an uneventful one, added to now.

"now" is the status's own ``date``, so that replaying the journal gives the
same stats. A message not newer than the last one applied changes nothing:
duplicates and late arrivals are harmless.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from . import rate_posterior
from .change_rates import (
    BURST_SURPRISE,
    RevisitModel,
    burst_gap,
    burst_starts,
    count_surprise,
    default_threshold,
    estimated_rate,
    follow_up_days,
    hint_wait_days,
    observe,
    plans_from_evidence,
    prior_revisit_days,
    revisit_days,
)
from .durations import parse_iso_time
from .errors import ValidationError
from .limits import MAX_TYPE_BYTES, MAX_URL_BYTES, check_stored_text, check_time_range, check_whole
from .visit_changes import check_change_fields, parse_change_fields
from .visit_policies import cooldown_until, live_cooldown


class JournalStatus(str, enum.Enum):
    CREATED = "created"
    ONGOING = "ongoing"
    FULL = "full"
    PARTIAL = "partial"
    NOT_FOUND = "not_found"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self not in (JournalStatus.CREATED, JournalStatus.ONGOING)


class VisitOutcome(str, enum.Enum):
    """What the stats remember of a visit: ``last_visit_status``."""

    SUCCESSFUL = "successful"
    FAILED = "failed"
    NOT_FOUND = "not_found"


@dataclass(frozen=True, slots=True)
class VisitStatus:
    """One message of the journal's ``origin_visit_status`` topic."""

    origin: str
    visit: int
    type: str
    status: JournalStatus
    date: datetime
    snapshot: bytes | None = None
    #: how many changes the loader found since the last archived snapshot (a git fetch counts new
    #: commits), when it can tell; None: only "changed or not" is known
    changes: int | None = None
    #: the newest change's time the loader found, and the change times it found since its previous
    #: visit (ascending, UTC, at most ``limits.MAX_CHANGE_TIMES``): see ``domain.visit_changes``
    newest_change_at: datetime | None = None
    change_times: tuple[datetime, ...] | None = None

    @property
    def outcome(self) -> VisitOutcome | None:
        """None for a non-final status; ``full``/``partial`` without a snapshot count as failed."""
        if not self.status.is_final:
            return None
        if self.status is JournalStatus.NOT_FOUND:
            return VisitOutcome.NOT_FOUND
        if self.status is JournalStatus.FAILED or self.snapshot is None:
            return VisitOutcome.FAILED
        return VisitOutcome.SUCCESSFUL


_STATUS_FORMS = ", ".join(s.value for s in JournalStatus)


def parse_visit_status(message: Any) -> VisitStatus:
    """Read a journal message (a mapping, as decoded from JSON or msgpack).

    Raises ValidationError naming the field at fault; the caller locates it
    (``line 12``) with ``ValidationError.at``.
    """
    if not isinstance(message, Mapping):
        raise ValidationError("record", "an object with origin, visit, type, status, date, snapshot", type(message).__name__)
    for name in ("origin", "visit", "type", "status", "date"):
        if message.get(name) is None:
            raise ValidationError(name, "a value (the field is required)", None)
    origin, visit_type = message["origin"], message["type"]
    if not isinstance(origin, str) or not origin.strip():
        raise ValidationError("origin", "a non-empty URL", origin)
    if not isinstance(visit_type, str) or not visit_type.strip():
        raise ValidationError("type", "a visit type such as git", visit_type)
    visit = message["visit"]
    if isinstance(visit, bool) or not isinstance(visit, int) or visit < 0:
        raise ValidationError("visit", "a whole number of 0 or more", visit)
    try:
        status = JournalStatus(message["status"])
    except (ValueError, TypeError):
        raise ValidationError("status", f"one of {_STATUS_FORMS}", message["status"]) from None
    date = message["date"]
    if isinstance(date, datetime):
        if date.tzinfo is None:
            raise ValidationError("date", "a time with a zone", date.isoformat())
        try:
            date = date.astimezone(UTC)
        except OverflowError:
            raise ValidationError("date", "a time with a UTC form (within years 1 to 9999)", date.isoformat()) from None
    elif isinstance(date, str):
        date = parse_iso_time(date, "date")
    else:
        raise ValidationError("date", "an ISO 8601 time with a zone", date)
    changes = message.get("changes")
    if changes is not None and (isinstance(changes, bool) or not isinstance(changes, int) or changes < 0):
        raise ValidationError("changes", "a whole number of 0 or more, or null", changes)
    newest, times = parse_change_fields(message)
    return check_visit_status(VisitStatus(origin, visit, visit_type, status, date, _parse_snapshot(message.get("snapshot")),
                                          changes, newest, times))


def check_visit_statuses(statuses: Sequence[VisitStatus]) -> list[VisitStatus]:
    """Every status of a batch checked (:func:`check_visit_status`, located at ``status N``) before
    a store writes any: a bad one refuses the whole batch."""
    checked = list(statuses)
    for index, status in enumerate(checked):
        try:
            checked[index] = check_visit_status(status)
        except ValidationError as exc:
            raise exc.at(f"status {index}") from None
    return checked


def check_visit_status(status: VisitStatus) -> VisitStatus:
    """``status`` if a store can apply it (the rules of ``domain.limits``), however it was made:
    every entry point (journal, files, HTTP, Celery outcomes, the stores themselves) applies these.
    Its change times come back in their kept form (``domain.visit_changes``)."""
    for name, value, limit in (("origin", status.origin, MAX_URL_BYTES), ("type", status.type, MAX_TYPE_BYTES)):
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(name, "a non-empty URL" if name == "origin" else "a visit type such as git", value)
        check_stored_text(value, name, limit)
    check_whole(status.visit, "visit")
    if not isinstance(status.status, JournalStatus):
        raise ValidationError("status", f"one of {_STATUS_FORMS}", status.status)
    if not isinstance(status.date, datetime) or status.date.tzinfo is None:
        raise ValidationError("date", "a time with a zone", status.date)
    check_time_range(status.date, "date")
    if status.date.utcoffset():  # the same instant in UTC: PostgreSQL refuses offsets beyond ±15:59
        status = replace(status, date=status.date.astimezone(UTC))
    if status.snapshot is not None and (not isinstance(status.snapshot, bytes) or not status.snapshot):
        raise ValidationError("snapshot", "a non-empty identifier (bytes) or null", status.snapshot)
    check_whole(status.changes, "changes", nullable=True)
    if status.newest_change_at is None and status.change_times is None:
        return status
    newest, times = check_change_fields(status.date, status.changes, status.newest_change_at, status.change_times)
    if newest is status.newest_change_at and times is status.change_times:  # already in their kept form
        return status
    return replace(status, newest_change_at=newest, change_times=times)


def _parse_snapshot(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        if len(value) == 0:
            raise ValidationError("snapshot", "a non-empty identifier (bytes or hex) or null", value)
        return bytes(value)
    if isinstance(value, str):
        text = value.removeprefix("\\x")
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise ValidationError("snapshot", "hexadecimal text, bytes or null", value) from None
        if not raw:
            raise ValidationError("snapshot", "a non-empty identifier (bytes or hex) or null", value)
        return raw
    raise ValidationError("snapshot", "hexadecimal text, bytes or null", value)


@dataclass(frozen=True, slots=True)
class FeedbackPolicy:
    """The knobs of the feedback loop."""

    adjust_factor: float = 2.0
    minimum_interval: timedelta = timedelta(days=1)
    failure_delay: timedelta = timedelta(days=1)
    max_failures: int = 3
    #: not grabbed again within this of a visit (or of the grab that asked for it)
    absolute_cooldown: timedelta = timedelta(hours=12)
    #: not grabbed again within this of a failed visit
    failed_cooldown: timedelta = timedelta(days=1)
    #: not grabbed again within this of a visit that found nothing
    not_found_cooldown: timedelta = timedelta(days=7)
    #: ``change_rate_optimal``: how change rates are learnt and revisits spaced
    revisit: RevisitModel = field(default_factory=RevisitModel)

    def validated(self) -> FeedbackPolicy:
        if isinstance(self.adjust_factor, bool) or not isinstance(self.adjust_factor, (int, float)) or not self.adjust_factor > 1:
            raise ValidationError("adjust_factor", "a number greater than 1", self.adjust_factor)
        for name in ("minimum_interval", "failure_delay", "absolute_cooldown", "failed_cooldown", "not_found_cooldown"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValidationError(name, "a positive duration", value)
        if isinstance(self.max_failures, bool) or not isinstance(self.max_failures, int) or self.max_failures < 1:
            raise ValidationError("max_failures", "a whole number of at least 1", self.max_failures)
        self.revisit.validated()
        return self


@dataclass(frozen=True, slots=True)
class VisitStats:
    """What is known of the visits of one (url, visit type)."""

    url: str
    visit_type: str
    last_visit: datetime | None = None
    last_visit_status: VisitOutcome | None = None
    last_successful: datetime | None = None
    last_snapshot: bytes | None = None
    last_eventful: datetime | None = None
    last_uneventful: datetime | None = None
    failure_count: int = 0
    last_scheduled: datetime | None = None
    next_visit_target: datetime | None = None
    #: date of the newest final status applied: older or equal ones change nothing
    last_status_date: datetime | None = None
    #: successful visits so far (the policies tell "loaded once" from "more than once")
    successful_visits: int = 0
    #: not grabbed again before this (see ``domain.visit_policies``); None: free
    cooldown_until: datetime | None = None
    #: the change rate's belief (see ``domain.change_rates``): changes seen over days observed; None: the prior
    rate_changes: float | None = None
    rate_days: float | None = None
    #: the faded log-likelihood of the changed / unchanged history at each rate of
    #: ``rate_posterior.RATE_GRID``; None until a visit whose changes were not counted
    rate_evidence: tuple[float, ...] | None = None
    #: when ``change_rate_optimal`` visits it next
    next_optimal_visit: datetime | None = None
    #: days after a change its lister reports until ``change_rate_optimal`` visits (``change_rates.hint_wait_days``):
    #: a listing that reports one moves ``next_optimal_visit`` to ``last_update`` plus this, if sooner; None: never
    hint_wait_days: float | None = None
    #: the newest ``last_update`` its listings report (written by the listings, read by the feedback loop)
    last_update: datetime | None = None


@dataclass(frozen=True, slots=True)
class Feedback:
    stats: VisitStats
    #: the origin reached ``max_failures``: disable it until its lister lists it again
    disable: bool
    eventful: bool | None


def apply_visit_status(stats: VisitStats, status: VisitStatus, policy: FeedbackPolicy,
                       clock_now: datetime | None = None, threshold: float | None = None,
                       newest_seen: datetime | None = None) -> Feedback | None:
    """The feedback for one final status; None when the status changes nothing.

    ``clock_now`` (the wall clock, when known) only lets a cooldown already
    over be stored as none. A successful visit also updates the change rate's
    belief and ``next_optimal_visit`` (``domain.change_rates``), at the visit
    type's ``threshold`` (its default before one is steered); where the status
    gives change times, its bursts are counted from ``newest_seen``, the newest
    change an earlier visit saw (``change_rates.burst_starts``).
    """
    outcome = status.outcome
    if outcome is None:
        return None
    if stats.last_status_date is not None and status.date <= stats.last_status_date:
        return None
    cooldown = _cooldown_after(stats, status.date, outcome, policy, clock_now)
    if outcome is not VisitOutcome.SUCCESSFUL:
        return _after_failure(stats, status.date, outcome, policy, cooldown)
    return _after_success(stats, status, policy, cooldown, threshold, newest_seen)


def _cooldown_after(stats: VisitStats, now: datetime, outcome: VisitOutcome, policy: FeedbackPolicy,
                    clock_now: datetime | None) -> datetime | None:
    """Until when the origin is not grabbed again after a status of ``outcome`` at ``now`` (None: free)."""
    return live_cooldown(cooldown_until(
        status_date=now,
        outcome_failed=outcome is VisitOutcome.FAILED,
        outcome_not_found=outcome is VisitOutcome.NOT_FOUND,
        last_scheduled=stats.last_scheduled,
        current_cooldown=stats.cooldown_until,
        absolute_cooldown=policy.absolute_cooldown,
        failed_cooldown=policy.failed_cooldown,
        not_found_cooldown=policy.not_found_cooldown,
    ), clock_now)


def _after_failure(stats: VisitStats, now: datetime, outcome: VisitOutcome, policy: FeedbackPolicy,
                   cooldown: datetime | None) -> Feedback:
    """A failed or not-found visit: one more failure, tried again after ``failure_delay``, disabled
    at ``max_failures``; what was known of the successful visits and the change rate stays."""
    failures = stats.failure_count + 1
    new = VisitStats(
        stats.url, stats.visit_type,
        last_visit=stats.last_visit,  # "if status is failed, keep same last visit date"
        last_visit_status=outcome,
        last_successful=stats.last_successful,
        last_snapshot=stats.last_snapshot,
        last_eventful=stats.last_eventful,
        last_uneventful=stats.last_uneventful,
        failure_count=failures,
        last_scheduled=stats.last_scheduled,
        next_visit_target=now + policy.failure_delay,
        last_status_date=now,
        successful_visits=stats.successful_visits,
        cooldown_until=cooldown,
        rate_changes=stats.rate_changes,
        rate_days=stats.rate_days,
        rate_evidence=stats.rate_evidence,
        next_optimal_visit=stats.next_optimal_visit,
        hint_wait_days=stats.hint_wait_days,
        last_update=stats.last_update,
    )
    return Feedback(new, disable=failures >= policy.max_failures, eventful=None)


def _after_success(stats: VisitStats, status: VisitStatus, policy: FeedbackPolicy, cooldown: datetime | None,
                   threshold: float | None, newest_seen: datetime | None = None) -> Feedback:
    """A successful visit: eventful when the snapshot changed; the next visit's target, the change
    rate's belief and the next optimal visit follow from it."""
    now = status.date
    eventful = status.snapshot != stats.last_snapshot
    since_success = now - stats.last_successful if stats.last_successful is not None else policy.minimum_interval
    if eventful:
        interval = max(since_success / policy.adjust_factor, policy.minimum_interval)
    else:
        interval = since_success * policy.adjust_factor
    model = policy.revisit
    rate_changes, rate_days, evidence = _learn(stats, status, eventful, model, newest_seen)
    mu = threshold if threshold is not None else default_threshold(model)
    wait = hint_wait_days(estimated_rate(rate_changes, rate_days, model), mu, model)
    if wait is not None and hints_told(stats, eventful):
        # its lister's last_update told of this visit's changes, or of none: the next reported change wakes it
        next_optimal = now + model.ceiling
    else:
        next_optimal = now + _revisit_days(rate_changes, rate_days, evidence, mu, model,
                                           follow_up=eventful and status.changes is not None
                                           and stats.last_successful is not None)
    new = VisitStats(
        stats.url, stats.visit_type,
        last_visit=now,
        last_visit_status=VisitOutcome.SUCCESSFUL,
        last_successful=now,
        last_snapshot=status.snapshot,
        last_eventful=now if eventful else stats.last_eventful,
        last_uneventful=stats.last_uneventful if eventful else now,
        failure_count=0,
        last_scheduled=stats.last_scheduled,
        next_visit_target=now + interval,
        last_status_date=now,
        successful_visits=stats.successful_visits + 1,
        cooldown_until=cooldown,
        rate_changes=rate_changes,
        rate_days=rate_days,
        rate_evidence=evidence,
        next_optimal_visit=next_optimal,
        hint_wait_days=wait,
        last_update=stats.last_update,
    )
    return Feedback(new, disable=False, eventful=eventful)


def hints_told(stats: VisitStats, eventful: bool) -> bool:
    """Whether the origin's listings told the truth about the visit just made: they report a
    ``last_update`` newer than the previous successful visit exactly when the visit found a change.
    Then ``change_rate_optimal`` leaves the origin to its hints (``change_rates.hint_wait_days``), the
    ceiling as a safety net; where they missed a change or reported one that was not there (a lister
    that reports no pushes, a listing not yet run), the visits keep their planned intervals."""
    if stats.last_update is None or stats.last_successful is None:
        return False
    return eventful == (stats.last_update > stats.last_successful)


def _learn(stats: VisitStats, status: VisitStatus, eventful: bool, model: RevisitModel,
           newest_seen: datetime | None = None) -> tuple[float | None, float | None, tuple[float, ...] | None]:
    """The change rate's belief and evidence after a successful visit (``domain.change_rates``)."""
    rate_changes, rate_days, evidence = stats.rate_changes, stats.rate_days, stats.rate_evidence
    if stats.last_successful is None:  # a first visit tells nothing of the rate
        return rate_changes, rate_days, evidence
    since = status.date - stats.last_successful
    counted = status.changes
    if status.change_times is not None:
        # the visit saw when its changes came: count the bursts (how often the origin became stale)
        gap = burst_gap(estimated_rate(rate_changes, rate_days, model), model)
        counted, _ = burst_starts(status.change_times, newest_seen, counted, gap)
        rate_changes, rate_days = observe(rate_changes, rate_days, since, changed=eventful, counted=counted,
                                          model=model)
        return rate_changes, rate_days, None
    if counted is None or evidence is not None or bursts_begin(stats, counted, since, model):
        # kept once a loader has not counted, or once an origin's changes came in a burst
        evidence = rate_posterior.observe(evidence, since / timedelta(days=1), changed=eventful, counted=None,
                                          horizon_days=model.horizon / timedelta(days=1))
    rate_changes, rate_days = observe(rate_changes, rate_days, since, changed=eventful, counted=counted, model=model)
    return rate_changes, rate_days, evidence


def _revisit_days(rate_changes: float | None, rate_days: float | None, evidence: tuple[float, ...] | None,
                  threshold: float, model: RevisitModel, *, follow_up: bool) -> timedelta:
    """Until the next visit: the interval the belief asks for at the threshold, or, after a visit that
    counted changes of an origin that changes in bursts, a follow-up (``change_rates.follow_up_days``)."""
    ceiling = model.ceiling / timedelta(days=1)
    if evidence is not None and plans_from_evidence(model, evidence):
        days = rate_posterior.revisit_days(rate_posterior.posterior(evidence, model.prior_rate), threshold, ceiling)
    else:
        rate = estimated_rate(rate_changes, rate_days, model)  # the prior's, for every origin not yet observed
        days = prior_revisit_days(threshold, model) if rate == model.prior_rate else revisit_days(rate, threshold, model)
    if follow_up and evidence is not None:
        sooner = follow_up_days(rate_posterior.posterior(evidence, model.prior_rate),
                                estimated_rate(rate_changes, rate_days, model))
        days = days if sooner is None else min(days, sooner)
    return timedelta(days=days)


def bursts_begin(stats: VisitStats, counted: int, since: timedelta, model: RevisitModel) -> bool:
    """Whether a visit that counted ``counted`` changes shows the origin changing in bursts: its belief
    has seen at least as many days as its prior, and so many changes at once were less than
    :data:`~ostinato.domain.change_rates.BURST_SURPRISE` likely for it. From then on its changed /
    unchanged history is kept too (``rate_evidence``), beside the counted belief: how often the origin
    becomes stale, which is what freshness and age depend on (a burst counts once there), against how
    often it changes (see docs/design/beyond.md)."""
    if stats.rate_days is None or stats.rate_days < 2 * model.prior_days:
        return False
    return count_surprise(counted, stats.rate_changes, stats.rate_days, since, model) < BURST_SURPRISE


VisitKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class VisitFeedbackPlan:
    """What a batch of statuses changes: new stats, origins to disable, statuses that counted."""

    stats: list[VisitStats]
    disable: list[VisitKey]
    changed: int


def plan_visit_feedback(
    current: Mapping[VisitKey, VisitStats], statuses: list[VisitStatus] | tuple[VisitStatus, ...], policy: FeedbackPolicy,
    clock_now: datetime | None = None, thresholds: Mapping[str, float] | None = None,
    newest_seen: Mapping[VisitKey, datetime] | None = None,
) -> VisitFeedbackPlan:
    """Fold a batch of statuses, oldest first per (url, visit type), onto the stored stats
    (``thresholds``: ``change_rate_optimal``'s threshold per visit type, where one was steered;
    ``newest_seen``: the newest change an earlier visit saw, where one said so)."""
    by_key: dict[VisitKey, list[VisitStatus]] = {}
    for status in statuses:
        by_key.setdefault((status.origin, status.type), []).append(status)
    new_stats: list[VisitStats] = []
    disable: list[VisitKey] = []
    changed = 0
    for key, group in by_key.items():
        stats = current.get(key) or VisitStats(*key)
        newest = (newest_seen or {}).get(key)
        disabled_now = False
        touched = False
        for status in (group if len(group) == 1 else sorted(group, key=lambda s: s.date)):
            feedback = apply_visit_status(stats, status, policy, clock_now, (thresholds or {}).get(status.type),
                                          newest)
            if feedback is None:
                continue
            if status.newest_change_at is not None and feedback.eventful is not None:
                newest = status.newest_change_at if newest is None else max(newest, status.newest_change_at)
            stats, disabled_now, touched = feedback.stats, feedback.disable, True
            changed += 1
        if touched:
            new_stats.append(stats)
            if disabled_now:
                disable.append(key)
    return VisitFeedbackPlan(new_stats, disable, changed)
