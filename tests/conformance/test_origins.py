"""Listers, listed origins and the visit feedback loop, on every store."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.errors import ConflictError, ValidationError
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitOutcome, VisitStats, VisitStatus

DAY = timedelta(days=1)
POLICY = FeedbackPolicy()


def origin(i: int | str, **kw) -> ListedOrigin:
    return ListedOrigin(f"https://forge.example/{i}", kw.pop("visit_type", "git"), **kw)


def status(i, kind: str, at, snapshot: bytes | None = b"\x01" * 20, visit_type: str = "git") -> VisitStatus:
    return VisitStatus(f"https://forge.example/{i}", 1, visit_type, JournalStatus(kind), at, snapshot)


def test_listers_are_created_once_and_updated_optimistically(store):
    a = store.get_or_create_lister("github", "github.com", T0)
    assert store.get_or_create_lister("github", "github.com", T0 + DAY) == a
    assert a.current_state == {} and a.last_listing_finished_at is None
    b = store.update_lister(a, current_state={"page": 7}, last_listing_finished_at=T0 + DAY, now=T0 + DAY)
    assert b.current_state == {"page": 7} and b.last_listing_finished_at == T0 + DAY and b.updated > a.updated
    with pytest.raises(ConflictError):
        store.update_lister(a, current_state={"page": 8}, now=T0 + 2 * DAY)  # a stale copy
    # the same instant twice still changes the token
    c = store.update_lister(b, current_state={"page": 9}, now=b.updated)
    with pytest.raises(ConflictError):
        store.update_lister(b, current_state={"page": 10}, now=b.updated)
    assert [l.current_state for l in store.list_listers()] == [c.current_state] == [{"page": 9}]


def test_a_lister_made_by_mistake_is_deleted_but_one_that_lists_origins_is_kept(store):
    typo = store.get_or_create_lister("githbu", "github.com", T0)
    kept = store.get_or_create_lister("github", "github.com", T0)
    store.record_listed_origins(kept.id, [origin(1)], T0)
    store.update_origin_metrics(T0)
    with pytest.raises(ConflictError, match="lists origins"):
        store.delete_lister(kept.id)
    assert store.delete_lister(typo.id) is True
    assert store.delete_lister(typo.id) is False
    assert [lister.name for lister in store.list_listers()] == ["github"]
    assert [o.origin.url for o in store.get_listed_origins(lister_id=kept.id)] == ["https://forge.example/1"]
    assert {m.lister_id for m in store.get_origin_metrics()} == {kept.id}


def test_listed_origins_are_recorded_and_refreshed(store):
    lister = store.get_or_create_lister("gitlab", "gitlab.com", T0)
    assert store.record_listed_origins(lister.id, [
        origin(1, last_update=T0 - DAY, extra_loader_arguments={"branch": "main"}),
        origin(2, is_fork=True, forked_from_url="https://forge.example/1"),
        origin(1, last_update=T0),  # the same origin twice in a batch: the last one wins
    ], T0) == 2
    [one, two] = store.get_listed_origins(lister_id=lister.id)
    assert one.origin == origin(1, last_update=T0) and one.first_seen == one.last_seen == T0
    assert two.origin.is_fork is True and two.origin.forked_from_url == "https://forge.example/1"
    store.record_listed_origins(lister.id, [origin(1, last_update=T0 + DAY)], T0 + DAY)
    [one] = store.get_listed_origins(url="https://forge.example/1")
    assert one.first_seen == T0 and one.last_seen == T0 + DAY and one.origin.last_update == T0 + DAY
    assert [o.origin.url for o in store.get_listed_origins(after=("https://forge.example/1", "git", lister.id))] == [
        "https://forge.example/2"]


def test_paging_walks_every_listing_of_shared_origins(store):
    listers = [store.get_or_create_lister(name, name, T0) for name in ("a", "b")]
    for lister in listers:
        store.record_listed_origins(lister.id, [origin(1), origin(2)], T0)
    seen, after = [], None
    while page := store.get_listed_origins(after=after, limit=1):
        seen.append((page[0].origin.url, page[0].lister_id))
        after = (page[0].origin.url, page[0].origin.visit_type, page[0].lister_id)
    assert len(seen) == len(set(seen)) == 4


def test_getting_a_lister_again_uses_no_new_id(store):
    a = store.get_or_create_lister("a", "a", T0)
    for _ in range(3):
        store.get_or_create_lister("a", "a", T0)
    assert store.get_or_create_lister("b", "b", T0).id == a.id + 1


def test_large_listing_crosses_chunks(store):
    lister = store.get_or_create_lister("pypi", "pypi.org", T0)
    assert store.record_listed_origins(lister.id, [origin(i, visit_type="pypi") for i in range(12_345)], T0) == 12_345
    assert len(store.get_listed_origins(lister_id=lister.id, limit=20_000)) == 12_345


def test_feedback_follows_seed_000(store):
    got = store.record_visit_statuses([status(1, "full", T0, b"a"), status(1, "full", T0 + 4 * DAY, b"a")], POLICY)
    assert got == 2
    [stats] = store.get_visit_stats([("https://forge.example/1", "git")])
    assert stats.last_visit == stats.last_successful == stats.last_uneventful == T0 + 4 * DAY
    assert stats.last_eventful == T0 and stats.last_snapshot == b"a"
    assert stats.next_visit_target == T0 + 4 * DAY + 8 * DAY  # 4 days since the last success, x 2
    assert stats.last_visit_status is VisitOutcome.SUCCESSFUL and stats.failure_count == 0


def test_feedback_is_idempotent_and_ignores_late_and_non_final_messages(store):
    batch = [status(1, "ongoing", T0), status(1, "full", T0 + DAY, b"a"), status(2, "failed", T0, None)]
    assert store.record_visit_statuses(batch, POLICY) == 2
    before = store.get_visit_stats([("https://forge.example/1", "git"), ("https://forge.example/2", "git")])
    assert store.record_visit_statuses(batch, POLICY) == 0  # replayed
    assert store.record_visit_statuses([status(1, "failed", T0, None)], POLICY) == 0  # late
    assert store.get_visit_stats([("https://forge.example/1", "git"), ("https://forge.example/2", "git")]) == before
    assert store.get_visit_stats([("https://forge.example/3", "git")]) == []


def test_out_of_order_batch_is_applied_oldest_first(store):
    store.record_visit_statuses([status(1, "full", T0 + 4 * DAY, b"a"), status(1, "full", T0, b"a")], POLICY)
    [stats] = store.get_visit_stats([("https://forge.example/1", "git")])
    assert stats.last_eventful == T0 and stats.last_uneventful == T0 + 4 * DAY


def test_repeated_failures_disable_until_the_next_listing(store):
    github = store.get_or_create_lister("github", "github.com", T0)
    mirror = store.get_or_create_lister("mirror", "mirror.example", T0)
    for lister in (github, mirror):
        store.record_listed_origins(lister.id, [origin(1), origin(2)], T0)
    store.record_visit_statuses([status(1, "failed", T0 + i * DAY, None) for i in range(2)], POLICY)
    assert all(o.origin.enabled for o in store.get_listed_origins())
    store.record_visit_statuses([status(1, "not_found", T0 + 2 * DAY, None)], POLICY)
    enabled = {(o.lister_id, o.origin.url): o.origin.enabled for o in store.get_listed_origins()}
    assert enabled == {(github.id, "https://forge.example/1"): False, (mirror.id, "https://forge.example/1"): False,
                       (github.id, "https://forge.example/2"): True, (mirror.id, "https://forge.example/2"): True}
    [stats] = store.get_visit_stats([("https://forge.example/1", "git")])
    assert stats.failure_count == 3 and stats.last_visit is None and stats.last_visit_status is VisitOutcome.NOT_FOUND
    store.record_listed_origins(github.id, [origin(1)], T0 + 3 * DAY)  # the next listing re-enables it
    enabled = {(o.lister_id, o.origin.url): o.origin.enabled for o in store.get_listed_origins(url="https://forge.example/1")}
    assert enabled == {(github.id, "https://forge.example/1"): True, (mirror.id, "https://forge.example/1"): False}
    [stats] = store.get_visit_stats([("https://forge.example/1", "git")])
    assert stats.failure_count == 0  # a fresh start: one more failure does not disable it again
    store.record_visit_statuses([status(1, "failed", T0 + 4 * DAY, None)], POLICY)
    assert store.get_listed_origins(url="https://forge.example/1", lister_id=github.id)[0].origin.enabled
    # listing an origin that was never disabled leaves its failure count alone
    store.record_visit_statuses([status(2, "failed", T0 + 4 * DAY, None)], POLICY)
    store.record_listed_origins(github.id, [origin(2)], T0 + 5 * DAY)
    assert store.get_visit_stats([("https://forge.example/2", "git")])[0].failure_count == 1


def test_visit_types_are_separate(store):
    store.record_visit_statuses([status(1, "full", T0, b"a"), status(1, "failed", T0, None, visit_type="hg")], POLICY)
    stats = {s.visit_type: s for s in store.get_visit_stats([("https://forge.example/1", "git"), ("https://forge.example/1", "hg")])}
    assert stats["git"].failure_count == 0 and stats["hg"].failure_count == 1
    assert isinstance(stats["git"], VisitStats)


def test_recording_for_an_unknown_lister_is_refused_and_writes_nothing(store):
    from ostinato.domain.errors import NotFoundError

    with pytest.raises(NotFoundError, match="lister"):
        store.record_listed_origins(4242, [origin(1)], T0)
    assert store.get_listed_origins() == [] and store.get_visit_stats([("https://forge.example/1", "git")]) == []


def test_long_urls_are_kept_as_far_as_the_store_can_index_them(store):
    import random

    lister = store.get_or_create_lister("cgit", "", T0)
    long = "https://forge.example/" + "segment/" * 600  # 4,822 bytes that compress well: any store keeps them
    store.record_listed_origins(lister.id, [ListedOrigin(long, "git")], T0)
    store.record_visit_statuses([VisitStatus(long, 1, "git", JournalStatus("full"), T0, b"\x02" * 20)], POLICY, now=T0)
    [stats] = store.get_visit_stats([(long, "git")])
    assert stats.url == long and stats.last_snapshot == b"\x02" * 20
    letters = random.Random(7)
    noise = "https://forge.example/" + "".join(letters.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(3000))
    before = store.get_listed_origins(limit=10)
    try:
        store.record_listed_origins(lister.id, [ListedOrigin(noise, "git"), origin("short")], T0)
    except ValidationError as exc:  # PostgreSQL: an index entry cannot hold 3,000 bytes that do not compress
        assert store.dialect != "sqlite" and exc.field == "url"
        assert store.get_listed_origins(limit=10) == before  # the batch wrote nothing
    else:
        assert store.dialect != "postgresql"  # SQLite (served remotely by a SQLite store, in these tests)
        assert {o.origin.url for o in store.get_listed_origins(limit=10)} == {long, noise, origin("short").url}
