"""What the dashboard's drill-down pages show (:mod:`.routes_drill`), gathered from the store in
bounded reads: a few primary-key probes, index walks of one page, never a pass over every origin.

- a visit type (:func:`gather_visit_type`): its origin metrics summed as the main page shows them,
  a row per lister, its loader and the policy ratios that pick its origins;
- a lister (:func:`gather_lister`): its metrics per visit type and its listed origins, a page at a
  time (``get_listed_origins``' cursor, the last row's key);
- an origin (:func:`gather_origin`): what ``ostinato origin show`` shows of one (url, visit type),
  its learnt change rate and, in words, when its next visit comes and why
  (:func:`next_visit_outlook`, by the policies' index walks as ``domain.policy_picks`` declares them);
- a task type (:func:`gather_task_type`): its definition and its tasks, by id, a page at a time;
- a task (:func:`gather_task`): its facts and its runs newest first, each with its outcome as
  ``ostinato task show --runs`` prints it (error, traceback frames, result).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, overload

from ...domain import rate_posterior
from ...domain.change_rates import (
    RevisitModel,
    RevisitThreshold,
    default_threshold,
    estimated_rate,
    plans_from_evidence,
    prior_revisit_days,
    revisit_days,
)
from ...domain.errors import ValidationError
from ...domain.limits import MAX_WHOLE, check_stored_text
from ...domain.origins import Lister, StoredListedOrigin
from ...domain.policy_picks import ListingFacts, policy_picks
from ...domain.run_outcomes import outcome_of
from ...domain.tasks import Task, TaskRun, TaskRunStatus, TaskStatus, TaskType
from ...domain.visit_policies import GrabOptions, VisitPolicy, loader_task_type, visit_type_of_task_type
from ...domain.visits import VisitOutcome, VisitStats
from ..request_handling import ApiContext
from .gather_main import VisitTypeRow, visit_type_rows
from .render import human_duration, relative

#: a lister's listed origins per page, and the most listings one page reads to find them of one visit type
ORIGINS_PAGE = 50
ORIGINS_READ = 500
_ORIGINS_CHUNK = 100
#: a task type's tasks per page
TASKS_PAGE = 50
#: a task's runs per page; the most runs of one task read to find its newest, in reads of RUNS_READ
RUNS_SHOWN = 20
RUNS_WALKED = 10_000
RUNS_READ = 1000
#: a cell of a change rate's belief shown when it holds at least this much of it
BELIEF_SHOWN = 0.01
_FAILED_RUNS = frozenset({TaskRunStatus.FAILED, TaskRunStatus.PERMFAILED, TaskRunStatus.LOST})
#: ``Type: message``, as a failed run's ``error`` is written (a type is one dotted name, no space)
_ERROR = re.compile(r"([A-Za-z_][\w.]*): (.*)", re.DOTALL)


# -- input ---------------------------------------------------------------------------
# a required value is never None; an optional one is None when missing
@overload
def whole_number(value: str | None, field: str, *, required: Literal[True] = True) -> int: ...
@overload
def whole_number(value: str | None, field: str, *, required: bool) -> int | None: ...
def whole_number(value: str | None, field: str, *, required: bool = True) -> int | None:
    """An id from a URL (a whole number from 1), or ValidationError naming ``field``."""
    expected = f"a whole number from 1 to {MAX_WHOLE}"
    if value is None or not value.strip():
        if required:
            raise ValidationError(field, expected, value)
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 19 or not 1 <= int(text) <= MAX_WHOLE:
        raise ValidationError(field, expected, value)
    return int(text)


# a required value is never None; an optional one is None when missing
@overload
def text(value: str | None, field: str, max_bytes: int, *, required: Literal[True] = True) -> str: ...
@overload
def text(value: str | None, field: str, max_bytes: int, *, required: bool) -> str | None: ...
def text(value: str | None, field: str, max_bytes: int, *, required: bool = True) -> str | None:
    """Text from a URL a store can look up (no NUL, not too long), or ValidationError naming ``field``."""
    if value is None or not value.strip():
        if required:
            raise ValidationError(field, "a non-empty value", value)
        return None
    return check_stored_text(value, field, max_bytes)


def known_visit_types(ctx: ApiContext) -> set[str]:
    """Visit types with a loader (a task type ``load-<visit type>``) or with origin metrics."""
    loaders = {visit_type_of_task_type(t.type) for t in ctx.store.list_task_types()}
    return {v for v in loaders if v is not None} | {m.visit_type for m in ctx.store.get_origin_metrics()}


# -- a visit type --------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ListerRow:
    lister_id: int
    name: str
    instance_name: str
    row: VisitTypeRow


@dataclass(frozen=True, slots=True)
class VisitTypePage:
    now: datetime
    visit_type: str
    #: its metrics summed over listers (None: never counted)
    total: VisitTypeRow | None
    listers: list[ListerRow]
    loader: TaskType | None
    #: (policy, ratio, share of the room) by the server's settings, largest first
    ratios: list[tuple[str, float, float]]
    threshold: RevisitThreshold | None


def gather_visit_type(ctx: ApiContext, visit_type: str) -> VisitTypePage | None:
    store = ctx.store
    metrics = store.get_origin_metrics(visit_type=visit_type)
    loader = store.get_task_type(loader_task_type(visit_type))
    if not metrics and loader is None:
        return None
    names = {item.id: item for item in store.list_listers()}
    rows = []
    for m in metrics:
        found = names.get(m.lister_id)
        rows.append(ListerRow(m.lister_id, found.name if found else (m.lister_name or "?"),
                              found.instance_name if found else (m.lister_instance_name or ""),
                              visit_type_rows([m])[0]))
    rows.sort(key=lambda r: (r.name, r.instance_name, r.lister_id))
    totals = visit_type_rows(metrics)
    return VisitTypePage(ctx.clock.now(), visit_type, totals[0] if totals else None, rows, loader,
                         ratio_rows(ctx.settings.ratios(visit_type)),
                         store.get_revisit_thresholds().get(visit_type))


def ratio_rows(ratios: Mapping[str, float]) -> list[tuple[str, float, float]]:
    total = sum(w for w in ratios.values() if w > 0) or 1.0
    return sorted(((p, w, w / total) for p, w in ratios.items()), key=lambda r: (-r[1], r[0]))


# -- a lister ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ListerPage:
    now: datetime
    lister: Lister
    visit_type: str | None
    metrics: list[VisitTypeRow]
    origins: list[StoredListedOrigin]
    #: the cursor of the next page, (url, visit type), None on the last page
    next_after: tuple[str, str] | None
    #: listings of other visit types passed over on this page (a visit type asked for)
    skipped: int
    first_page: bool


def gather_lister(ctx: ApiContext, lister_id: int, visit_type: str | None,
                  after: tuple[str, str] | None) -> ListerPage | None:
    store = ctx.store
    lister = next((item for item in store.list_listers() if item.id == lister_id), None)
    if lister is None:
        return None
    metrics = visit_type_rows(store.get_origin_metrics(lister_id=lister_id))
    cursor = (after[0], after[1], lister_id) if after else None
    shown: list[StoredListedOrigin] = []
    skipped = 0
    next_after = None
    if visit_type is None:
        found = store.get_listed_origins(lister_id=lister_id, after=cursor, limit=ORIGINS_PAGE + 1)
        shown = found[:ORIGINS_PAGE]
        if len(found) > ORIGINS_PAGE:
            next_after = (shown[-1].origin.url, shown[-1].origin.visit_type)
    else:  # the store's order is by url: listings of other visit types are read and passed over, within a budget
        read = 0
        while True:
            batch = store.get_listed_origins(lister_id=lister_id, after=cursor, limit=_ORIGINS_CHUNK)
            read += len(batch)
            for item in batch:
                if item.origin.visit_type != visit_type:
                    skipped += 1
                elif len(shown) == ORIGINS_PAGE:
                    next_after = (shown[-1].origin.url, shown[-1].origin.visit_type)
                    break
                else:
                    shown.append(item)
            if next_after is not None or len(batch) < _ORIGINS_CHUNK:
                break
            cursor = (batch[-1].origin.url, batch[-1].origin.visit_type, lister_id)
            if read >= ORIGINS_READ:
                next_after = cursor[:2]
                break
    return ListerPage(ctx.clock.now(), lister, visit_type, metrics, shown, next_after, skipped, after is None)


# -- an origin -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """What one policy of the visit type's ratios makes of the origin."""

    policy: str
    ratio: float
    #: its index walk takes the origin (once its cooldown is over)
    picks: bool
    #: not before this (a tier of origins_without_last_update); None: as soon as it is free
    due: datetime | None
    #: the reason in a few words, and in full
    short: str
    text: str


@dataclass(frozen=True, slots=True)
class VisitOutlook:
    """When the origin's next visit comes and why, in words."""

    #: "disabled", "cooling down", "in flight", "eligible", "waiting" or "not picked"
    state: str
    headline: str
    #: when a grab may take it: now, the end of its cooldown or its policy's due time; None: no grab will
    eligible_at: datetime | None
    policies: list[PolicyVerdict]


def _at(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "never"
    return f"{moment.strftime('%Y-%m-%d %H:%M %Z')} ({relative(moment, now)})"


def policy_verdict(policy: str, ratio: float, stats: VisitStats, facts: ListingFacts, now: datetime, *,
                   minimum_interval: timedelta) -> PolicyVerdict:
    """What ``policy``'s index walks make of an enabled origin whose cooldown is over (times written
    relative to ``now``): the first of its picks (``domain.policy_picks``, whose declarations the stores
    render as their walks) that takes it, and when it is due there; the words say why."""

    def verdict(picks: bool, short: str, detail: str = "", due: datetime | None = None) -> PolicyVerdict:
        return PolicyVerdict(policy, ratio, picks, due, short, short + (f": {detail}" if detail else ""))

    try:
        known = VisitPolicy(policy)
    except ValueError:
        return verdict(False, f"not picked: {policy} is no policy this page knows")
    options = GrabOptions(minimum_interval=minimum_interval)
    pick = next((pick for pick in policy_picks(known) if pick.takes(stats, facts)), None)
    if pick is None:
        return verdict(False, *_passed_over(known, stats, facts, now))
    due = pick.due(stats, facts, options)
    return verdict(True, *_taken(pick.name, stats, facts, now, due, minimum_interval), due)


def _lag(stats: VisitStats, facts: ListingFacts, now: datetime) -> str:
    update, success = facts.last_update, stats.last_successful
    if update is None or success is None or update <= success:
        return ""
    return (f"last_update {_at(update, now)}, last successful visit {_at(success, now)}, a lag of "
            f"{human_duration(update - success)}; the largest lag first")


def _taken(pick: str, stats: VisitStats, facts: ListingFacts, now: datetime, due: datetime | None,
           minimum_interval: timedelta) -> tuple[str, str]:
    """Why the walk ``pick`` takes the origin: a few words, and in full."""
    if pick == "pick_already_visited_order_by_lag":
        return "changes pending since last_update", _lag(stats, facts, now)
    if pick == "pick_never_visited_oldest_update_first":
        fork = "a fork: after the non-forks" if facts.is_fork else "not a fork: before the forks"
        return "never visited: queued by last_update", f"last_update {_at(facts.last_update, now)}, the oldest first; {fork}"
    if pick == "pick_without_last_update_never_loaded":
        return "never loaded: queued by first_seen", f"first seen {_at(facts.first_seen, now)}, the earliest first"
    if pick == "pick_without_last_update_loaded_once":
        return ("loaded once: due minimum_interval after its visit",
                f"visited {_at(stats.last_visit, now)}, minimum_interval {human_duration(minimum_interval)}: "
                f"due {_at(due, now)}; the oldest visit first")
    if pick == "pick_without_last_update_loaded_more":
        return ("due at its next_visit_target",
                f"loaded {stats.successful_visits} times; next_visit_target {_at(stats.next_visit_target, now)} "
                "(the feedback loop's interval); the earliest first")
    if pick == "pick_oldest_scheduled_first":
        return "queued by last scheduled", (f"last scheduled {_at(stats.last_scheduled, now)}; "
                                            "every enabled origin, the one scheduled longest ago (or never) first")
    if pick == "pick_stop_after_success":
        return ("not yet visited successfully: queued by last scheduled",
                f"last scheduled {_at(stats.last_scheduled, now)}, the longest ago (or never) first")
    if pick == "pick_change_rate_optimal_never_visited":
        return "never visited: queued by first_seen", f"first seen {_at(facts.first_seen, now)}, the earliest first"
    if pick == "pick_change_rate_optimal_due":
        reported = (f"; a change reported since its last successful visit brought it to last_update plus "
                    f"{human_duration(timedelta(days=stats.hint_wait_days))}"
                    if _lag(stats, facts, now) and stats.hint_wait_days is not None else "")
        return ("queued by its next optimal visit",
                f"next_optimal_visit {_at(stats.next_optimal_visit, now)}, planned from its learnt change rate"
                f"{reported}; taken in that order, due or not, after the never visited")
    return f"taken by {pick}", ""


def _passed_over(policy: VisitPolicy, stats: VisitStats, facts: ListingFacts, now: datetime) -> tuple[str, str]:
    """Why none of ``policy``'s walks takes the origin: a few words, and in full."""
    update, success = facts.last_update, stats.last_successful
    if policy is VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST:
        if success is not None:
            return "not picked: visited successfully already", _at(success, now)
        return "not picked: no last_update", "origins_without_last_update takes those"
    if policy is VisitPolicy.ALREADY_VISITED_ORDER_BY_LAG:
        if success is None:
            return "not picked: never visited successfully", ""
        if update is None:
            return "not picked: its listers give no last_update", ""
        return ("not picked: no change reported since its last successful visit",
                f"last_update {_at(update, now)}, last successful visit {_at(success, now)}")
    if policy is VisitPolicy.ORIGINS_WITHOUT_LAST_UPDATE:
        if update is not None:
            return "not picked: it has a last_update", ""
        return "not picked: none of its three tiers takes it", f"{stats.successful_visits} successful visits recorded"
    if policy is VisitPolicy.STOP_AFTER_SUCCESS:
        return "not picked: visited successfully once", "one visit is all this policy asks"
    return f"not picked: no walk of {policy.value} takes it", ""


def next_visit_outlook(stats: VisitStats, facts: ListingFacts, ratios: Mapping[str, float], now: datetime, *,
                       minimum_interval: timedelta, max_failures: int) -> VisitOutlook:
    """When a grab may take the origin next, and why, by the rules of the grabs: only enabled origins
    whose cooldown is over, each policy of the visit type's ratios walking its own order
    (``domain.visit_policies``); a cooldown over by ``now`` is free (the next grab releases it)."""
    cooldown = stats.cooldown_until if stats.cooldown_until is not None and stats.cooldown_until > now else None
    free_at = cooldown or now
    verdicts = sorted((policy_verdict(p, w, stats, facts, now, minimum_interval=minimum_interval)
                       for p, w in ratios.items() if w > 0), key=lambda v: (-v.ratio, v.policy))
    if not facts.listings:
        return VisitOutlook("disabled", "Not visited: no lister lists it (its visit stats came from visit statuses "
                            "alone)", None, verdicts)
    if not facts.enabled:
        why = (f"after {stats.failure_count} failed visits in a row (max_failures {max_failures})"
               if stats.failure_count >= max_failures else "its listers list it disabled")
        return VisitOutlook("disabled", f"Not visited: disabled in every listing, {why}; enabled again when a lister "
                            "lists it again", None, verdicts)
    picking = [v for v in verdicts if v.picks]
    if not picking:
        reasons = "; ".join(dict.fromkeys(v.short.removeprefix("not picked: ") for v in verdicts)) or "no policy"
        return VisitOutlook("not picked", f"Not picked by any policy of its visit type: {reasons}", None, verdicts)
    ready = [v for v in picking if v.due is None or v.due <= free_at]
    first = ready[0] if ready else min(picking, key=lambda v: v.due or free_at)
    eligible_at = free_at if ready else first.due
    then = f"{first.short} ({first.policy})"
    if cooldown is not None:
        in_flight = stats.last_scheduled is not None and (stats.last_status_date is None
                                                           or stats.last_scheduled > stats.last_status_date)
        state = "in flight" if in_flight else "cooling down"
        when = "then" if ready else f"then, from {_at(first.due, now)}"
        return VisitOutlook(state, f"In cooldown until {_at(cooldown, now)}: {cooldown_cause(stats, now)}; {when}: "
                            f"{then}", eligible_at, verdicts)
    if ready:
        return VisitOutlook("eligible", f"Eligible now: {then}; a grab takes it when its turn comes in that order "
                            "and its loader's queue has room", eligible_at, verdicts)
    return VisitOutlook("waiting", f"Next due {_at(first.due, now)}: {then}", eligible_at, verdicts)


def cooldown_cause(stats: VisitStats, now: datetime) -> str:
    """Why an origin is cooling down, by the rules of ``domain.visit_policies.cooldown_until``."""
    if stats.last_scheduled is not None and (stats.last_status_date is None or stats.last_scheduled > stats.last_status_date):
        return f"grabbed {_at(stats.last_scheduled, now)} and its visit has not reported yet (in_flight_timeout)"
    outcome = stats.last_visit_status
    at = _at(stats.last_status_date, now)
    if outcome is VisitOutcome.FAILED:
        return f"its last visit failed, {at} (failed_cooldown)"
    if outcome is VisitOutcome.NOT_FOUND:
        return f"its last visit found nothing, {at} (not_found_cooldown)"
    return f"visited {at} (absolute_cooldown)"


@dataclass(frozen=True, slots=True)
class RateView:
    """An origin's change rate as ``change_rate_optimal`` learnt it (``domain.change_rates``)."""

    learnt: bool
    changes: float | None
    days: float | None
    #: changes a day: the Gamma belief's mean, the prior's until a rate was learnt
    rate: float
    prior_rate: float
    prior_changes: float
    prior_days: float
    objective: str
    #: the changed / unchanged history's posterior, (rate, probability) of the cells that hold some
    belief: list[tuple[float, float]] | None
    most_likely: float | None
    threshold: float
    threshold_steered: bool
    #: the interval it would be planned at now (without a burst's follow-up), and its stored next optimal visit
    planned: timedelta
    next_optimal_visit: datetime | None


def rate_view(stats: VisitStats, model: RevisitModel, threshold: RevisitThreshold | None) -> RateView:
    learnt = stats.rate_changes is not None and stats.rate_days is not None
    rate = estimated_rate(stats.rate_changes, stats.rate_days, model)
    mu = threshold.threshold if threshold is not None else default_threshold(model)
    belief, most_likely, probabilities = None, None, None
    if stats.rate_evidence is not None:
        try:
            probabilities = rate_posterior.posterior(stats.rate_evidence, model.prior_rate)
        except ValidationError:  # evidence a store would not keep: shown as none
            probabilities = None
    if probabilities is not None:
        belief = [(r, p) for r, p in zip(rate_posterior.RATE_GRID, probabilities, strict=True) if p >= BELIEF_SHOWN]
        most_likely = rate_posterior.RATE_GRID[probabilities.index(max(probabilities))]
    if probabilities is not None and plans_from_evidence(model, stats.rate_evidence):
        days = rate_posterior.revisit_days(probabilities, mu, model.ceiling / timedelta(days=1))
    else:
        days = prior_revisit_days(mu, model) if rate == model.prior_rate else revisit_days(rate, mu, model)
    return RateView(learnt, stats.rate_changes, stats.rate_days, rate, model.prior_rate, model.prior_changes,
                    model.prior_days, model.objective.value, belief, most_likely, mu, threshold is not None,
                    timedelta(days=days), stats.next_optimal_visit)


@dataclass(frozen=True, slots=True)
class ListingRow:
    lister_id: int
    lister_name: str
    instance_name: str
    listing: StoredListedOrigin


@dataclass(frozen=True, slots=True)
class OriginPage:
    now: datetime
    url: str
    visit_type: str
    #: the other visit types it is listed or visited under
    other_visit_types: list[str]
    listings: list[ListingRow]
    facts: ListingFacts
    #: None: no visit stats recorded
    stats: VisitStats | None
    outlook: VisitOutlook
    rate: RateView
    loader: TaskType | None
    #: the cooldowns of this server's settings: (setting, duration, when it applies)
    cooldowns: list[tuple[str, timedelta, str]]


def gather_origin(ctx: ApiContext, url: str, visit_type: str | None) -> OriginPage | None:
    """One (url, visit type): primary-key probes of its listings (one per lister and visit type) and
    visit stats; without ``visit_type``, the first it has."""
    store = ctx.store
    listers = {item.id: item for item in store.list_listers()}
    candidates = sorted(known_visit_types(ctx) | ({visit_type} if visit_type else set()))
    listings = store.get_listings([(lister_id, url, t) for lister_id in listers for t in candidates])
    stats = {s.visit_type: s for s in store.get_visit_stats([(url, t) for t in candidates])}
    found = sorted({item.origin.visit_type for item in listings} | set(stats))
    if visit_type is None and found:
        visit_type = found[0]
    if visit_type is None or visit_type not in found:
        return None
    mine = sorted((item for item in listings if item.origin.visit_type == visit_type),
                  key=lambda item: (listers[item.lister_id].name, listers[item.lister_id].instance_name))
    rows = [ListingRow(item.lister_id, listers[item.lister_id].name, listers[item.lister_id].instance_name, item)
            for item in mine]
    facts = ListingFacts.of(mine)
    kept = stats.get(visit_type)
    visit = kept or VisitStats(url, visit_type)
    now = ctx.clock.now()
    policy = ctx.settings.feedback_policy()
    grabs = ctx.settings.grab_options()
    outlook = next_visit_outlook(visit, facts, ctx.settings.ratios(visit_type), now,
                                 minimum_interval=grabs.minimum_interval, max_failures=policy.max_failures)
    cooldowns = [("in_flight_timeout", grabs.in_flight_timeout, "after a grab, until its visit reports"),
                 ("absolute_cooldown", policy.absolute_cooldown, "after a visit (or the grab that asked for it)"),
                 ("failed_cooldown", policy.failed_cooldown, "after a failed visit"),
                 ("not_found_cooldown", policy.not_found_cooldown, "after a visit that found nothing")]
    rate = rate_view(visit, policy.revisit, store.get_revisit_thresholds().get(visit_type))
    return OriginPage(now, url, visit_type, [t for t in found if t != visit_type], rows, facts, kept, outlook, rate,
                      store.get_task_type(loader_task_type(visit_type)), cooldowns)


# -- task types and tasks ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TaskTypePage:
    now: datetime
    task_type: TaskType
    #: the visit type it loads (a task type load-<visit type>)
    visit_type: str | None
    tasks: list[Task]
    next_after: int | None
    first_page: bool


def gather_task_type(ctx: ApiContext, name: str, after_id: int | None) -> TaskTypePage | None:
    found = ctx.store.get_task_type(name)
    if found is None:
        return None
    tasks = ctx.store.search_tasks(task_type=name, after_id=after_id or 0, limit=TASKS_PAGE + 1)
    shown = tasks[:TASKS_PAGE]
    return TaskTypePage(ctx.clock.now(), found, visit_type_of_task_type(name), shown,
                        shown[-1].id if len(tasks) > TASKS_PAGE else None, not after_id)


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run and its outcome, as ``ostinato task show --runs`` prints it (``cli.output.outcome_lines``)."""

    run: TaskRun
    failed: bool
    error_type: str | None
    error_message: str | None
    #: its traceback's lines (``domain.run_outcomes.traceback_lines``)
    traceback: list[str]
    #: what the job returned: the metadata's other keys
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def took(self) -> timedelta | None:
        run = self.run
        return run.ended - run.started if run.ended and run.started else None


def run_row(run: TaskRun) -> RunRow:
    outcome = outcome_of(run.metadata)
    error_type = message = None
    if outcome.error:
        matched = _ERROR.fullmatch(outcome.error)
        error_type, message = (matched.group(1), matched.group(2)) if matched else (None, outcome.error)
    return RunRow(run, run.status in _FAILED_RUNS, error_type, message, outcome.traceback, outcome.result)


@dataclass(frozen=True, slots=True)
class TaskPage:
    now: datetime
    task: Task
    task_type: TaskType | None
    next_run_text: str
    runs: list[RunRow]
    #: the cursor of older runs (runs before this id), None when none are older
    older_before: int | None
    first_page: bool
    #: the task has more runs than a page reads (RUNS_WALKED): those shown are the newest of the first ones
    cut: bool


def task_next_run_text(task: Task, now: datetime) -> str:
    """When the task runs next, in words (the rules of ``domain.tasks``)."""
    if task.status is TaskStatus.DISABLED:
        return "disabled: not run until respawned (ostinato task respawn)"
    if task.status is TaskStatus.COMPLETED:
        return "completed: a one-shot task that succeeded"
    if task.status is TaskStatus.NEXT_RUN_SCHEDULED:
        return "a run is in flight: its outcome sets the next run"
    if task.next_run <= now:
        return (f"ready since {_at(task.next_run, now)}: a runner takes it at its next pass"
                + (f" ({task.priority.value} priority)" if task.priority else ""))
    return f"due {_at(task.next_run, now)}"


def gather_task(ctx: ApiContext, task_id: int, before: int | None) -> TaskPage | None:
    """One task and its runs newest first: the store pages runs oldest first, so its runs are read in
    pages of :data:`RUNS_READ` (an index walk of this task's runs), keeping the newest ones before
    ``before``, at most :data:`RUNS_WALKED` of them."""
    store = ctx.store
    found = store.get_tasks([task_id])
    if not found:
        return None
    task = found[0]
    kept: deque[TaskRun] = deque(maxlen=RUNS_SHOWN)
    older, walked, after, cut = False, 0, 0, False
    while True:
        batch = store.list_task_runs(task_id=task_id, after_id=after, limit=RUNS_READ)
        walked += len(batch)
        done = len(batch) < RUNS_READ
        for run in batch:
            if before is not None and run.id >= before:
                done = True
                break
            older = older or len(kept) == RUNS_SHOWN
            kept.append(run)
        if done:
            break
        if walked >= RUNS_WALKED:
            cut = True
            break
        after = batch[-1].id
    runs = [run_row(run) for run in reversed(kept)]
    now = ctx.clock.now()
    return TaskPage(now, task, store.get_task_type(task.type), task_next_run_text(task, now), runs,
                    runs[-1].run.id if older and runs else None, before is None, cut)


def task_of_run(ctx: ApiContext, run_id: int) -> TaskRun | None:
    """The run with this id (the first run after ``run_id - 1``: one step of the runs' primary key)."""
    found = ctx.store.list_task_runs(after_id=run_id - 1, limit=1)
    return found[0] if found and found[0].id == run_id else None

