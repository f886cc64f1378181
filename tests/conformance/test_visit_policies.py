"""The scheduling policies and their cooldowns, on every store."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.errors import ValidationError
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabOptions, GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
FEEDBACK = FeedbackPolicy()
P = VisitPolicy


def url(i) -> str:
    return f"https://forge.example/{i}"


def listed(i, **kw) -> ListedOrigin:
    return ListedOrigin(url(i), kw.pop("visit_type", "git"), **kw)


def visit(store, i, at, *, kind="full", snapshot=b"\x01" * 20, visit_type="git", now=None):
    store.record_visit_statuses([VisitStatus(url(i), 1, visit_type, JournalStatus(kind), at, snapshot)], FEEDBACK,
                                now=now)


def grab(store, policy, count=10, now=T0, **kw):
    options = kw.pop("options", GrabOptions())
    return [v.url for v in store.grab_next_visits("git", [GrabRequest(policy, count)], now, options=options, **kw)]


def names(*ids) -> list[str]:
    return [url(i) for i in ids]


@pytest.fixture
def lister(store):
    return store.get_or_create_lister("github", "github.com", T0 - 400 * DAY)


def test_never_visited_oldest_update_first_puts_forks_last(store, lister):
    store.record_listed_origins(lister.id, [
        listed(1, last_update=T0 - 2 * DAY),
        listed(2, last_update=T0 - 9 * DAY, is_fork=True),
        listed(3, last_update=T0 - 5 * DAY),
        listed(4),  # no last_update: another policy's
        listed(5, last_update=T0 - 30 * DAY, enabled=False),
        listed(6, last_update=T0 - 50 * DAY),
    ], T0 - 100 * DAY)
    visit(store, 6, T0 - 3 * DAY)  # loaded once: no longer "never visited"
    assert grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST, dry_run=True) == names(3, 1, 2)
    assert grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST, 2) == names(3, 1)
    assert grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST) == names(2)
    assert grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST) == []


def test_already_visited_order_by_lag(store, lister):
    store.record_listed_origins(lister.id, [listed(i, last_update=T0 - DAY) for i in range(1, 5)], T0 - 100 * DAY)
    visit(store, 1, T0 - 10 * DAY)  # lag 9 days
    visit(store, 2, T0 - 30 * DAY)  # lag 29 days
    visit(store, 3, T0 - 2 * DAY)   # lag 1 day
    visit(store, 4, T0 - 12 * HOUR)  # visited after its last update: nothing pending
    assert grab(store, P.ALREADY_VISITED_ORDER_BY_LAG) == names(2, 1, 3)
    # a new listing with a newer last_update brings an origin back
    store.record_listed_origins(lister.id, [listed(4, last_update=T0 - HOUR)], T0)
    assert grab(store, P.ALREADY_VISITED_ORDER_BY_LAG, now=T0 + HOUR) == names(4)


def test_origins_without_last_update_follow_seed_000s_second_list(store, lister):
    store.record_listed_origins(lister.id, [listed(1), listed(2)], T0 - 100 * DAY)
    store.record_listed_origins(lister.id, [listed(3)], T0 - 90 * DAY)
    store.record_listed_origins(lister.id, [listed(4), listed(5), listed(6), listed(7, last_update=T0)], T0 - 80 * DAY)
    # 4: loaded once, long ago; 5: loaded once, within the minimum interval; 6: loaded twice, due
    visit(store, 4, T0 - 20 * DAY)
    visit(store, 5, T0 - 12 * HOUR)
    visit(store, 6, T0 - 40 * DAY)
    visit(store, 6, T0 - 30 * DAY, snapshot=b"\x02" * 20)  # eventful: next target 10 days later, due
    # never loaded by first_seen (1 and 2 tie), then loaded once by last visit, then due by target
    got = grab(store, P.ORIGINS_WITHOUT_LAST_UPDATE, dry_run=True)
    assert sorted(got[:2]) == names(1, 2) and got[2:] == names(3, 4, 6)
    # a count smaller than the first tier stops there
    assert grab(store, P.ORIGINS_WITHOUT_LAST_UPDATE, 3) == got[:3]
    assert grab(store, P.ORIGINS_WITHOUT_LAST_UPDATE) == names(4, 6)
    # 5 is clamped by the minimum interval until a day after its visit
    assert grab(store, P.ORIGINS_WITHOUT_LAST_UPDATE, now=T0 + 13 * HOUR) == names(5)


def test_oldest_scheduled_first_and_stop_after_success(store, lister):
    store.record_listed_origins(lister.id, [listed(i, last_update=T0 - DAY) for i in range(1, 4)], T0 - 100 * DAY)
    options = GrabOptions(in_flight_timeout=HOUR)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, 1, now=T0, options=options) == names(1)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, 1, now=T0 + DAY, options=options) == names(2)
    # never scheduled first, then the one scheduled longest ago
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, 2, now=T0 + 2 * DAY, options=options) == names(3, 1)
    visit(store, 2, T0 + 2 * DAY + HOUR)
    # one-shot visit types: until one visit succeeds (2 has)
    [first] = grab(store, P.STOP_AFTER_SUCCESS, 1, now=T0 + 5 * DAY, options=options)
    [second] = grab(store, P.STOP_AFTER_SUCCESS, 1, now=T0 + 6 * DAY, options=options)
    assert sorted([first, second]) == names(1, 3)
    visit(store, int(first.rsplit("/", 1)[1]), T0 + 6 * DAY + HOUR)
    assert grab(store, P.STOP_AFTER_SUCCESS, now=T0 + 9 * DAY, options=options) == [second]


def test_policies_combine_in_one_grab_without_repeating_an_origin(store, lister):
    store.record_listed_origins(lister.id, [listed(i, last_update=T0 - i * DAY) for i in range(1, 6)], T0 - 100 * DAY)
    visit(store, 1, T0 - 20 * DAY)
    visits = store.grab_next_visits("git", [
        GrabRequest(P.ALREADY_VISITED_ORDER_BY_LAG, 5),
        GrabRequest(P.NEVER_VISITED_OLDEST_UPDATE_FIRST, 2),
        GrabRequest(P.OLDEST_SCHEDULED_FIRST, 5),
    ], T0)
    assert [(v.url, v.policy) for v in visits] == [
        (url(1), P.ALREADY_VISITED_ORDER_BY_LAG),
        (url(5), P.NEVER_VISITED_OLDEST_UPDATE_FIRST), (url(4), P.NEVER_VISITED_OLDEST_UPDATE_FIRST),
        (url(2), P.OLDEST_SCHEDULED_FIRST), (url(3), P.OLDEST_SCHEDULED_FIRST),
    ]


def test_grab_hands_over_what_the_loader_needs(store, lister):
    other = store.get_or_create_lister("gitlab", "gitlab.com", T0)
    store.record_listed_origins(lister.id, [listed(1, last_update=T0 - DAY, extra_loader_arguments={"branch": "dev"})],
                                T0 - 2 * DAY)
    store.record_listed_origins(other.id, [listed(1, last_update=T0 - 3 * DAY, enabled=False)], T0 - DAY)
    [v] = store.grab_next_visits("git", [GrabRequest(P.NEVER_VISITED_OLDEST_UPDATE_FIRST, 5)], T0)
    # the enabled listing is the one the loader gets; last_update is the newest any lister gave
    assert (v.lister_id, v.lister_name, v.lister_instance_name) == (lister.id, "github", "github.com")
    assert v.extra_loader_arguments == {"branch": "dev"} and v.last_update == T0 - DAY
    assert v.loader_kwargs() == {"branch": "dev", "url": url(1), "lister_name": "github",
                                 "lister_instance_name": "github.com"}
    [stats] = store.get_visit_stats([(url(1), "git")])
    assert stats.last_scheduled == T0 and stats.cooldown_until == T0 + GrabOptions().in_flight_timeout


def test_dry_run_changes_nothing(store, lister):
    store.record_listed_origins(lister.id, [listed(i, last_update=T0 - i * DAY) for i in range(1, 4)], T0 - 100 * DAY)
    before = store.get_visit_stats([(url(i), "git") for i in range(1, 4)])
    first = grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST, 2, dry_run=True)
    assert first == grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST, 2, dry_run=True) == names(3, 2)
    assert store.get_visit_stats([(url(i), "git") for i in range(1, 4)]) == before
    assert grab(store, P.NEVER_VISITED_OLDEST_UPDATE_FIRST, 2) == first


def test_cooldowns(store, lister):
    store.record_listed_origins(lister.id, [listed(i) for i in range(1, 5)], T0 - 100 * DAY)
    options = GrabOptions(in_flight_timeout=2 * DAY)
    policy = P.OLDEST_SCHEDULED_FIRST
    assert grab(store, policy, 4, now=T0, options=options) == names(1, 2, 3, 4)
    # in flight: not grabbed again until its visit reports or the timeout passes
    assert grab(store, policy, now=T0 + DAY, options=options) == []
    visit(store, 1, T0 + DAY, now=T0 + DAY)                                  # success: 12 h absolute cooldown
    visit(store, 2, T0 + DAY, kind="failed", snapshot=None, now=T0 + DAY)   # failed: 1 day
    visit(store, 3, T0 + DAY, kind="not_found", snapshot=None, now=T0 + DAY)  # not found: 7 days
    assert grab(store, policy, now=T0 + DAY + 11 * HOUR, options=options, dry_run=True) == []
    assert grab(store, policy, now=T0 + DAY + 12 * HOUR, options=options, dry_run=True) == names(1)
    # 4 never reported: back once the in-flight timeout has passed
    assert sorted(grab(store, policy, now=T0 + 2 * DAY, options=options, dry_run=True)) == names(1, 2, 4)
    assert sorted(grab(store, policy, now=T0 + 8 * DAY, options=options)) == names(1, 2, 3, 4)


def test_a_late_result_does_not_free_a_newer_grab(store, lister):
    store.record_listed_origins(lister.id, [listed(1)], T0 - 100 * DAY)
    options = GrabOptions(in_flight_timeout=DAY)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, now=T0, options=options) == names(1)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, now=T0 + 2 * DAY, options=options) == names(1)  # timed out, again
    visit(store, 1, T0 + DAY, now=T0 + 2 * DAY + HOUR)  # the first visit's result arrives late
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, now=T0 + 2 * DAY + 20 * HOUR, options=options) == []
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, now=T0 + 3 * DAY, options=options) == names(1)


def test_released_visits_are_free_at_once(store, lister):
    store.record_listed_origins(lister.id, [listed(1), listed(2)], T0 - 100 * DAY)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST) == names(1, 2)
    visit(store, 2, T0 + HOUR, now=T0 + HOUR)
    # 2 has reported: releasing it does not cut its absolute cooldown short
    assert store.release_visits([(url(1), "git"), (url(2), "git")]) == 1
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, now=T0 + 2 * HOUR) == names(1)


def test_disabled_and_other_visit_types_and_listers_are_filtered(store, lister):
    other = store.get_or_create_lister("gitlab", "gitlab.com", T0)
    store.record_listed_origins(lister.id, [listed(1), listed(2), listed(3, visit_type="hg")], T0 - 100 * DAY)
    store.record_listed_origins(other.id, [listed(4), listed(2)], T0 - 100 * DAY)
    only_other = GrabOptions(lister_id=other.id)
    assert sorted(grab(store, P.OLDEST_SCHEDULED_FIRST, options=only_other, dry_run=True)) == names(2, 4)
    # three failures disable an origin in every lister, until a lister lists it again
    for n in range(3):
        visit(store, 2, T0 - (10 - n) * DAY, kind="failed", snapshot=None)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, dry_run=True) == names(1, 4)
    store.record_listed_origins(other.id, [listed(2)], T0)
    assert sorted(grab(store, P.OLDEST_SCHEDULED_FIRST, dry_run=True)) == names(1, 2, 4)
    assert [v.url for v in store.grab_next_visits("hg", [GrabRequest(P.OLDEST_SCHEDULED_FIRST, 9)], T0)] == names(3)


def test_a_lister_disabling_its_listing_keeps_others_enabled(store, lister):
    other = store.get_or_create_lister("gitlab", "gitlab.com", T0)
    store.record_listed_origins(lister.id, [listed(1)], T0 - 100 * DAY)
    store.record_listed_origins(other.id, [listed(1, enabled=False)], T0 - 100 * DAY)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, dry_run=True) == names(1)
    store.record_listed_origins(lister.id, [listed(1, enabled=False)], T0 - 99 * DAY)
    assert grab(store, P.OLDEST_SCHEDULED_FIRST, dry_run=True) == []


def test_bad_grab_requests_are_refused(store, lister):
    store.record_listed_origins(lister.id, [listed(1)], T0 - 100 * DAY)
    with pytest.raises(ValidationError, match="policy"):
        store.grab_next_visits("git", [GrabRequest("most_popular_first", 5)], T0)
    with pytest.raises(ValidationError, match="count"):
        store.grab_next_visits("git", [GrabRequest(P.OLDEST_SCHEDULED_FIRST, -1)], T0)
    with pytest.raises(ValidationError, match="in_flight_timeout"):
        store.grab_next_visits("git", [GrabRequest(P.OLDEST_SCHEDULED_FIRST, 5)], T0,
                               options=GrabOptions(in_flight_timeout=timedelta(0)))
    [stats] = store.get_visit_stats([(url(1), "git")])
    assert stats.last_scheduled is None and stats.cooldown_until is None


def test_metrics_per_lister_and_visit_type(store, lister):
    other = store.get_or_create_lister("gitlab", "gitlab.com", T0)
    store.record_listed_origins(lister.id, [
        listed(1, last_update=T0 - 12 * HOUR),   # never visited, pending, lag 12 h
        listed(7, last_update=T0 - HOUR / 2),    # never visited, pending, lag 30 min
        listed(2, last_update=T0 - 40 * DAY),    # visited before its update: pending, lag 40 d
        listed(3, last_update=T0 - 40 * DAY),    # visited after: up to date
        listed(4),                               # no last_update: never visited, lag unknown
        listed(5, last_update=T0 - DAY, enabled=False),
    ], T0 - 100 * DAY)
    store.record_listed_origins(other.id, [listed(6, visit_type="hg", last_update=T0 - 2 * DAY)], T0 - 100 * DAY)
    visit(store, 2, T0 - 50 * DAY)
    visit(store, 3, T0 - 30 * DAY)
    assert store.get_origin_metrics() == []
    metrics = {(m.lister_name, m.visit_type): m for m in store.update_origin_metrics(T0)}
    git = metrics[("github", "git")]
    assert (git.origins_known, git.origins_enabled, git.origins_never_visited, git.origins_with_pending_changes) == (
        6, 5, 3, 3)
    assert git.lag_histogram == {"<1h": 1, "<1d": 1, "<90d": 1} and abs(git.lag_max - 40 * DAY) < timedelta(seconds=1)
    # in bucket order, whatever the store does to JSON keys (jsonb would put "<1d" first)
    assert list(git.lag_histogram) == ["<1h", "<1d", "<90d"]
    assert git.computed_at == T0 and git.lister_instance_name == "github.com"
    hg = metrics[("gitlab", "hg")]
    assert (hg.origins_known, hg.origins_with_pending_changes, hg.lag_histogram) == (1, 1, {"<3d": 1})
    assert store.get_origin_metrics(visit_type="hg") == [hg]
    assert store.get_origin_metrics(lister_id=lister.id) == [git]


def test_a_capped_grab_gives_unused_shares_to_other_policies(store, lister):
    from ostinato.domain.orchestration import plan_grab_requests

    # 2 origins without last_update, 10 never visited with one; ratios 49 / 49 / 2 over a room of 8
    store.record_listed_origins(lister.id, [listed(i) for i in (1, 2)]
                                + [listed(i, last_update=T0 - i * HOUR) for i in range(3, 13)], T0 - 100 * DAY)
    requests = [GrabRequest(P(p), n) for p, n in plan_grab_requests(8, {
        "already_visited_order_by_lag": 49, "never_visited_oldest_update_first": 49, "origins_without_last_update": 2})]
    got = store.grab_next_visits("git", requests, T0, limit=8, dry_run=True)
    by_policy = {}
    for v in got:
        by_policy[v.policy] = by_policy.get(v.policy, 0) + 1
    # shares 4 / 4 / 0; nothing is pending by lag, so never-visited takes that share too
    assert len(got) == len({v.url for v in got}) == 8
    assert by_policy == {P.NEVER_VISITED_OLDEST_UPDATE_FIRST: 8}
    # a larger cap reaches the origins without last_update through the last request
    assert len(store.grab_next_visits("git", requests, T0, limit=12)) == 12
    assert store.grab_next_visits("git", [GrabRequest(P.OLDEST_SCHEDULED_FIRST, 99)], T0, dry_run=True) == []
    with pytest.raises(ValidationError, match="limit"):
        store.grab_next_visits("git", requests, T0, limit=-1)


def test_metrics_count_an_origin_for_every_lister_that_lists_it(store, lister):
    other = store.get_or_create_lister("gitlab", "gitlab.com", T0)
    store.record_listed_origins(lister.id, [listed(1, last_update=T0 - 5 * DAY), listed(2, last_update=T0 - DAY)],
                                T0 - 100 * DAY)
    store.record_listed_origins(other.id, [listed(1, last_update=T0 - 2 * DAY, enabled=False)], T0 - 90 * DAY)
    store.record_listed_origins(lister.id, [listed(1, last_update=T0 - 5 * DAY)], T0 - 80 * DAY)  # listed again
    visit(store, 2, T0 - 12 * HOUR)
    metrics = {m.lister_name: m for m in store.update_origin_metrics(T0)}
    github, gitlab = metrics["github"], metrics["gitlab"]
    assert (github.origins_known, github.origins_enabled, github.origins_never_visited,
            github.origins_with_pending_changes) == (2, 2, 1, 1)
    assert github.lag_histogram == {"<7d": 1}  # origin 1, by github's own last_update
    assert (gitlab.origins_known, gitlab.origins_enabled, gitlab.origins_never_visited,
            gitlab.origins_with_pending_changes) == (1, 0, 0, 0)
    assert [s.url for s in store.get_visit_stats([(url(1), "git")])] == [url(1)]


def test_metrics_tell_never_visited_from_visited_never_successfully(store, lister):
    store.record_listed_origins(lister.id, [listed(i) for i in range(1, 6)], T0 - 100 * DAY)
    visit(store, 2, T0 - 3 * DAY, kind="failed", snapshot=None)            # failed only
    visit(store, 3, T0 - 3 * DAY, kind="not_found", snapshot=None)         # not found only
    visit(store, 4, T0 - 3 * DAY, kind="failed", snapshot=None)            # failed, then successful
    store.record_visit_statuses([VisitStatus(url(4), 2, "git", JournalStatus("full"), T0 - 2 * DAY, b"\x01" * 20)],
                                FEEDBACK)
    visit(store, 5, T0 - 3 * DAY, kind="ongoing", snapshot=None)           # not final: still never visited
    [git] = store.update_origin_metrics(T0)
    assert (git.origins_known, git.origins_never_visited, git.origins_never_successful) == (5, 2, 2)
    assert store.get_origin_metrics() == [git]
