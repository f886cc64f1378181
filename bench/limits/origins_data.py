"""The data of the origins benchmark (bench/limits/origins.py) and the checks of the stores' answers.

N listed origins and N visit statuses, generated batch by batch from a seed and
each origin's index (a 64-bit hash and a multiplicative permutation), so that a
10,000,000-origin run never holds more than one batch; the counts each policy
may grab, worked out with the domain's own rules; and the checks of every grab
and of the metrics against them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bench.common.report import console, progress
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabOptions, NextVisit, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStats, VisitStatus, apply_visit_status

VISIT_TYPE = "git"
POLICIES = tuple(VisitPolicy)
FEEDBACK = FeedbackPolicy()
GRAB_OPTIONS = GrabOptions()

# The shape of the data (fractions of N, or of the statuses)
WITH_LAST_UPDATE = 0.80
FORKS = 0.10
EXTRA_ARGUMENTS = 0.10
VISITED = 0.60  # origins with a first visit; the rest of the N statuses are second visits
FAILED = 0.03
NOT_FOUND = 0.01
LAST_UPDATE_SPAN = timedelta(days=5 * 365)  # last_update: now - span * u², u uniform (recent ones more common)
VISIT_SPAN = timedelta(days=2 * 365)  # first visit: uniform over this; second visit: between the first and now


MASK64 = (1 << 64) - 1


def mix64(x: int) -> int:
    """splitmix64: a well-spread 64-bit hash, so that each origin's data depends on its index only."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def bits(h: int, shift: int, width: int) -> float:
    """Bits ``shift .. shift + width`` of ``h`` as a number in [0, 1)."""
    return ((h >> shift) & ((1 << width) - 1)) / (1 << width)


class Permutation:
    """``p -> (a p + c) mod n``: a cheap pseudo-random order of 0..n-1, invertible, held in three numbers."""

    def __init__(self, n: int, key: int) -> None:
        self.n = n
        a = max(1, int(n * 0.6180339887)) + key % max(1, n // 100)
        while math.gcd(a, n) != 1:
            a += 1
        self.a, self.c = a % n or 1, mix64(key) % n
        self.a_inverse = pow(self.a, -1, n) if n > 1 else 0

    def __call__(self, p: int) -> int:
        return (self.a * p + self.c) % self.n

    def inverse(self, i: int) -> int:
        return ((i - self.c) * self.a_inverse) % self.n


@dataclass(frozen=True, slots=True)
class Expected:
    """What a store should hold once the N origins and N statuses are recorded, at ``now``."""

    #: policy -> origins it may grab before any grab
    candidates: dict[VisitPolicy, int]
    #: counts that describe the data (listed, statuses, cooldowns, metrics)
    counts: dict[str, int]


class Dataset:
    """N listed origins and N visit statuses, each a function of (seed, index): regenerated, never stored."""

    URL_PREFIX = "https://forge.example.org/"

    def __init__(self, n: int, seed: int, now: datetime) -> None:
        self.n, self.seed, self.now = n, seed, now
        self.key = mix64(seed)
        self.first_visits = round(n * VISITED)  # first visit of the origins at positions 0 .. first_visits - 1
        self.second_visits = n - self.first_visits  # second visit of those at positions 0 .. second_visits - 1
        self.order = Permutation(n, mix64(self.key + 1))  # position -> origin (journal order, who is visited)
        self.second_order = Permutation(max(1, self.second_visits), mix64(self.key + 2))  # journal order of second visits
        self.owners = max(1, n // 10)

    # -- listed origins
    def url(self, i: int) -> str:
        return f"{self.URL_PREFIX}user{(i * 2654435761) % self.owners}/project-{i}"

    def index_of(self, url: str) -> int:
        return int(url.rsplit("-", 1)[1])

    def listing(self, i: int) -> tuple[datetime | None, bool, dict[str, Any]]:
        """(last_update, is_fork, extra_loader_arguments) of origin ``i``."""
        h = mix64(self.key + 4 * i)
        last_update = None
        if bits(h, 32, 10) < WITH_LAST_UPDATE:
            last_update = self.now - LAST_UPDATE_SPAN * bits(h, 0, 32) ** 2
        extra: dict[str, Any] = {}
        if bits(h, 52, 8) < EXTRA_ARGUMENTS:
            extra = {"default_branch": ("main", "master", "develop", "trunk")[(h >> 60) & 3]}
        return last_update, bits(h, 42, 10) < FORKS, extra

    def listed_origin(self, i: int) -> ListedOrigin:
        last_update, is_fork, extra = self.listing(i)
        forked_from = self.url((i * 40503 + 17) % self.n) if is_fork else None
        return ListedOrigin(self.url(i), VISIT_TYPE, extra, last_update, True, is_fork, forked_from)

    def listed_batches(self, batch: int) -> Iterator[list[ListedOrigin]]:
        for start in range(0, self.n, batch):
            yield [self.listed_origin(i) for i in range(start, min(start + batch, self.n))]

    # -- visit statuses
    @staticmethod
    def _status(h: int) -> JournalStatus:
        u = bits(h, 32, 16)
        return JournalStatus.FAILED if u < FAILED else JournalStatus.NOT_FOUND if u < FAILED + NOT_FOUND else JournalStatus.FULL

    def snapshot(self, i: int, number: int) -> bytes:
        return hashlib.sha1(f"{self.seed}/{i}/{number}".encode()).digest()

    def first_visit(self, i: int) -> VisitStatus:
        h = mix64(self.key + 4 * i + 1)
        status = self._status(h)
        when = self.now - timedelta(seconds=60) - (VISIT_SPAN - timedelta(seconds=60)) * bits(h, 0, 32)
        return VisitStatus(self.url(i), 1, VISIT_TYPE, status, when, self.snapshot(i, 1) if status is JournalStatus.FULL else None)

    def second_visit(self, i: int, first: VisitStatus) -> VisitStatus:
        """Later than the first (by at least 1 % of its age); the same snapshot after a successful first visit."""
        h = mix64(self.key + 4 * i + 2)
        status = self._status(h)
        when = self.now - (self.now - first.date) * (0.99 * bits(h, 0, 32))
        snapshot = None
        if status is JournalStatus.FULL:
            snapshot = first.snapshot or self.snapshot(i, 2)
        return VisitStatus(first.origin, 2, VISIT_TYPE, status, when, snapshot)

    def visits(self, i: int) -> list[VisitStatus]:
        position = self.order.inverse(i)
        if position >= self.first_visits:
            return []
        first = self.first_visit(i)
        return [first, self.second_visit(i, first)] if position < self.second_visits else [first]

    def status_batches(self, batch: int) -> Iterator[list[VisitStatus]]:
        """The first visits in journal order, then the second visits in another order."""
        for start in range(0, self.first_visits, batch):
            yield [self.first_visit(self.order(p)) for p in range(start, min(start + batch, self.first_visits))]
        for start in range(0, self.second_visits, batch):
            chunk = []
            for q in range(start, min(start + batch, self.second_visits)):
                i = self.order(self.second_order(q))
                chunk.append(self.second_visit(i, self.first_visit(i)))
            yield chunk

    # -- what the store should then answer
    def stats(self, i: int, visits: list[VisitStatus] | None = None) -> VisitStats:
        """The visit stats of origin ``i`` after its statuses (``visits``, when known), by the domain's own rules."""
        stats = VisitStats(self.url(i), VISIT_TYPE)
        for status in self.visits(i) if visits is None else visits:
            feedback = apply_visit_status(stats, status, FEEDBACK, self.now)
            if feedback is not None:
                stats = feedback.stats
        return stats

    def policies_of(self, i: int) -> set[VisitPolicy]:
        """The policies that may grab origin ``i`` before any grab."""
        return self.policies(self.stats(i), self.listing(i)[0])

    def policies(self, stats: VisitStats, last_update: datetime | None) -> set[VisitPolicy]:
        """The policies that may grab an origin with these stats and listing (the stores' pick_* conditions)."""
        if stats.cooldown_until is not None:
            return set()
        never = stats.last_successful is None
        # change_rate_optimal: pending changes by lag, then never visited, then the rest by their optimal revisit
        policies = {VisitPolicy.OLDEST_SCHEDULED_FIRST, VisitPolicy.CHANGE_RATE_OPTIMAL}
        if never:
            policies.add(VisitPolicy.STOP_AFTER_SUCCESS)
        if last_update is not None and never:
            policies.add(VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST)
        if last_update is not None and not never and last_update > stats.last_successful:
            policies.add(VisitPolicy.ALREADY_VISITED_ORDER_BY_LAG)
        if last_update is None and (
            never
            or (stats.successful_visits == 1 and stats.last_visit <= self.now - GRAB_OPTIONS.minimum_interval)
            or (stats.successful_visits > 1 and stats.next_visit_target <= self.now)
        ):
            policies.add(VisitPolicy.ORIGINS_WITHOUT_LAST_UPDATE)
        return policies

    def expected(self) -> Expected:
        candidates = dict.fromkeys(POLICIES, 0)
        counts = dict.fromkeys((
            "listed_with_last_update", "listed_forks", "listed_with_extra_arguments",
            "statuses_eventful", "statuses_uneventful", "statuses_failed", "statuses_not_found",
            "origins_in_cooldown", "origins_never_visited", "origins_never_successful", "origins_with_pending_changes",
        ), 0)  # fmt: skip
        with progress("expected counts", self.n) as advance:
            for i in range(self.n):
                last_update, is_fork, extra = self.listing(i)
                counts["listed_with_last_update"] += last_update is not None
                counts["listed_forks"] += is_fork
                counts["listed_with_extra_arguments"] += bool(extra)
                visits = self.visits(i)
                snapshot = None
                for status in visits:
                    if status.status is JournalStatus.FAILED:
                        counts["statuses_failed"] += 1
                    elif status.status is JournalStatus.NOT_FOUND:
                        counts["statuses_not_found"] += 1
                    else:
                        counts["statuses_eventful" if status.snapshot != snapshot else "statuses_uneventful"] += 1
                        snapshot = status.snapshot
                stats = self.stats(i, visits)
                counts["origins_in_cooldown"] += stats.cooldown_until is not None
                counts["origins_never_visited"] += stats.last_status_date is None
                counts["origins_never_successful"] += stats.last_status_date is not None and stats.last_successful is None
                counts["origins_with_pending_changes"] += last_update is not None and (
                    stats.last_successful is None or last_update > stats.last_successful)
                for policy in self.policies(stats, last_update):
                    candidates[policy] += 1
                if i % 10_000 == 9_999 or i == self.n - 1:
                    advance(i % 10_000 + 1)
        return Expected(candidates, counts)


# -- the benchmark -------------------------------------------------------------


class Checker:
    """Compares the grabs' answers with what the data allows; collects what looks wrong."""

    def __init__(self, data: Dataset, expected: Expected, store_name: str) -> None:
        self.data, self.store_name = data, store_name
        self.available = dict(expected.candidates)
        self.grabbed: set[str] = set()
        self.anomalies: list[str] = []

    def warn(self, message: str) -> None:
        self.anomalies.append(message)
        console.print(f"  [yellow]warning[/yellow] ({self.store_name}): {message}")

    def check(self, policy: VisitPolicy, visits: list[NextVisit], count: int, dry_run: bool, label: str) -> int:
        """Check one grab's answer; return how many origins the data allowed it."""
        allowed = min(count, self.available[policy])
        if len(visits) != allowed:
            self.warn(f"{label} returned {len(visits):,} origins of {count:,} asked, the data allows {allowed:,}")
        elif len(visits) < count:  # not the store's fault: too few origins of this kind left
            console.print(f"  [yellow]warning[/yellow] ({self.store_name}): {label} returned {len(visits):,} origins "
                          f"of {count:,} asked: the data allows no more")
        bad_policy, regrabbed, bad_listing, seen = [], [], [], set()
        keys = []
        for visit in visits:
            i = self.data.index_of(visit.url)
            policies = self.data.policies_of(i)
            if visit.policy is not policy or policy not in policies:
                bad_policy.append(visit.url)
            if visit.url in self.grabbed or visit.url in seen:
                regrabbed.append(visit.url)
            seen.add(visit.url)
            last_update, is_fork, extra = self.data.listing(i)
            if visit.last_update != last_update or dict(visit.extra_loader_arguments) != extra or visit.lister_id is None:
                bad_listing.append(visit.url)
            if policy is VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST and last_update is not None:
                keys.append((is_fork, last_update.timestamp()))
            elif policy is VisitPolicy.ALREADY_VISITED_ORDER_BY_LAG and last_update is not None:
                last_successful = self.data.stats(i).last_successful
                if last_successful is not None:
                    keys.append((False, -(last_update - last_successful).total_seconds()))
        if bad_policy:
            self.warn(f"{label}: {len(bad_policy)} origins the policy should not pick, e.g. {bad_policy[0]}")
        if regrabbed:
            self.warn(f"{label}: {len(regrabbed)} origins grabbed before and still cooling down, e.g. {regrabbed[0]}")
        if bad_listing:
            self.warn(f"{label}: {len(bad_listing)} origins with a wrong listing (last_update, extra arguments or lister), "
                      f"e.g. {bad_listing[0]}")
        # ordered by the policy's key (1 ms of slack: SQLite orders the lag by julianday differences)
        if any(b[0] < a[0] or (b[0] == a[0] and b[1] < a[1] - 0.001) for a, b in zip(keys, keys[1:], strict=False)):
            self.warn(f"{label}: origins not in the policy's order")
        if not dry_run:
            for visit in visits:
                self.grabbed.add(visit.url)
                for p in self.data.policies_of(self.data.index_of(visit.url)):
                    self.available[p] -= 1
        return allowed
