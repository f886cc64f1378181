"""The swh protocol's grabs walk an index per policy (domain/listing_grabs.py): on random listings and
stats, each grab answers what the protocol's rules say, checked against a reference written here from
those rules (a filter and a sort of every listing). Origins several listers list, with listings whose
last_update differ, are where the walk's bounds matter."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.listing_grabs import ListingGrab, ListingOrder, ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import VisitOutcome

DAY = timedelta(days=1)


def world(store, seed: int):
    """Listings of 3 listers over 40 URLs of two visit types, and random protocol stats for most origins."""
    rng = random.Random(seed)
    listers = [store.get_or_create_lister(f"lister{i}", "", T0 - 30 * DAY) for i in range(3)]
    urls = [f"https://h{rng.randrange(4)}.example/r{i}" for i in range(40)]

    def when(scale: int = 20):
        return None if rng.random() < 0.25 else T0 - timedelta(hours=rng.randrange(scale * 24))

    for day, lister in enumerate(listers):
        chosen = rng.sample(urls, 25)
        store.record_listed_origins(lister.id, [
            ListedOrigin(url, "git" if urls.index(url) % 5 else "hg", last_update=when(), enabled=rng.random() < 0.9)
            for url in chosen], T0 - (20 - day) * DAY)
    stats = []
    for i, url in enumerate(urls):
        if rng.random() < 0.2:
            continue
        status = rng.choice([None, *VisitOutcome])
        visited = when(30)
        stats.append(ProtocolVisitStats(
            url, "git" if i % 5 else "hg", last_visit=visited, last_visit_status=status,
            last_successful=visited if status is VisitOutcome.SUCCESSFUL else when(40),
            last_snapshot=bytes([i]) * 20 if rng.random() < 0.5 else None, last_scheduled=when(10),
            queue_position=rng.choice([None, rng.randrange(100)])))
    store.merge_visit_stats(stats)
    return rng, listers


def reference(store, grab: ListingGrab, now) -> list[tuple[tuple, str, int]]:
    """Every listing the grab may take by the protocol's rules, in its order: (key, url, lister)."""
    listings = []
    after = None
    while True:
        page = store.get_listed_origins(after=after, limit=1000)
        listings += page
        if len(page) < 1000:
            break
        last = page[-1]
        after = (last.origin.url, last.origin.visit_type, last.lister_id)
    stats = {(s.url, s.visit_type): s for s in store.get_protocol_visit_stats(
        [(o.origin.url, o.origin.visit_type) for o in listings])}

    def since(cooldown):
        return None if cooldown is None else now - cooldown

    absolute, scheduled, failed, not_found = (since(grab.absolute_cooldown), since(grab.scheduled_cooldown),
                                              since(grab.failed_cooldown), since(grab.not_found_cooldown))
    found = []
    for o in listings:
        s = stats.get((o.origin.url, o.origin.visit_type)) or ProtocolVisitStats(o.origin.url, o.origin.visit_type)
        if o.origin.visit_type != grab.visit_type or not o.origin.enabled:
            continue
        if grab.lister_ids is not None and o.lister_id not in grab.lister_ids:
            continue
        if absolute and s.last_scheduled and not s.last_scheduled < absolute:
            continue
        if scheduled and s.last_scheduled and not s.last_scheduled < max(scheduled, s.last_visit or scheduled):
            continue
        if failed and s.last_visit_status is VisitOutcome.FAILED and not (s.last_visit and s.last_visit < failed):
            continue
        if not_found and s.last_visit_status is VisitOutcome.NOT_FOUND and not (s.last_visit and s.last_visit < not_found):
            continue
        update, seen = o.origin.last_update, o.first_seen
        order = grab.order
        if order in (ListingOrder.OLDEST_SCHEDULED_FIRST, ListingOrder.FIRST_VISITS_AFTER_LISTING):
            if order is ListingOrder.FIRST_VISITS_AFTER_LISTING and s.last_scheduled is not None and not (
                    grab.scheduled_before is not None and s.last_scheduled < grab.scheduled_before):
                continue
            key = (0,) if s.last_scheduled is None else (1, s.last_scheduled)
        elif order is ListingOrder.STOP_AFTER_SUCCESS:
            if s.last_visit_status is VisitOutcome.SUCCESSFUL:
                continue
            key = ((1,) if update is None else (0, update), seen)
        elif order is ListingOrder.NEVER_VISITED_OLDEST_UPDATE_FIRST:
            if s.last_snapshot is not None or update is None:
                continue
            key = (update,)
        elif order is ListingOrder.ALREADY_VISITED_ORDER_BY_LAG:
            if s.last_snapshot is None or update is None or s.last_successful is None or not update > s.last_successful:
                continue
            key = (-(update - s.last_successful),)
        else:
            if update is not None:
                continue
            key = ((0,) if s.queue_position is None else (1, s.queue_position), seen)
        found.append((key, o.origin.url, o.lister_id))
    found.sort()
    return found


def same_up_to_ties(got: list[tuple[str, int]], candidates: list[tuple[tuple, str, int]], count: int) -> bool:
    """The protocol leaves the order of listings of equal keys open: the grab must answer the first
    ``count`` candidates, except that among those of the last key it takes it may take any; in key order,
    ties by URL then lister (where all of them are known)."""
    expected = candidates[:count]
    if len(got) != len(expected):
        return False
    if not expected:
        return True
    boundary = expected[-1][0]
    key_of = {(url, lister): key for key, url, lister in candidates}
    if any(item not in key_of for item in got) or [key_of[item] for item in got] != [k for k, _, _ in expected]:
        return False
    return [item for item in got if key_of[item] < boundary] == [(u, lister) for k, u, lister in expected if k < boundary]


@pytest.mark.parametrize("seed", range(12))
def test_each_policy_answers_what_its_rules_say(store, seed):
    # the walk stops at the batch asked for, and goes further only when its bounds say so
    rng, listers = world(store, seed)
    answered = 0
    for step in range(24):
        order = list(ListingOrder)[step % len(ListingOrder)]

        def cooldown(hours):
            return None if rng.random() < 0.3 else timedelta(hours=rng.randrange(1, hours))

        lister_ids = None
        if order is ListingOrder.FIRST_VISITS_AFTER_LISTING or rng.random() < 0.2:
            lister_ids = (rng.choice(listers).id,)
        grab = ListingGrab(rng.choice(["git", "git", "hg"]), rng.choice([1, 3, 10, 100]), order, lister_ids=lister_ids,
                           absolute_cooldown=cooldown(48), scheduled_cooldown=cooldown(24 * 7),
                           failed_cooldown=cooldown(24 * 14), not_found_cooldown=cooldown(24 * 31),
                           scheduled_before=T0 - rng.randrange(10) * DAY)
        now = T0 + timedelta(hours=step)
        candidates = reference(store, grab, now)
        got = [(row.origin.url, row.lister_id) for row in store.grab_listed_origins(grab, now, dry_run=step % 3 == 0)]
        assert same_up_to_ties(got, candidates, grab.count), (order, grab, got, candidates[:grab.count])
        answered += bool(got)
    assert answered >= 8  # the grabs took something, most of the time
