"""Politeness per host on every store (``domain.politeness``, docs/reference/origins.md, "Politeness
per host"): hosts from URLs or listers, limits on visits in flight and on the spacing of starts, per
visit type and per host, freed by statuses, releases and in-flight timeouts; the room a closed host
cannot use goes to other hosts; bad settings are refused, nothing stored."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from conftest import T0
from helpers import GIT

from ostinato.domain.errors import NotFoundError, ValidationError
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.politeness import HostLimits, host_of
from ostinato.domain.visit_policies import GrabOptions, GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus

MINUTE = timedelta(minutes=1)
OLDEST = VisitPolicy.OLDEST_SCHEDULED_FIRST


@pytest.fixture
def forge(store):
    """60 origins on big.example, one each on 10 small hosts, 3 with a lister's own key."""
    store.create_task_type(GIT)
    lister = store.get_or_create_lister("forge", "one", T0)
    origins = [ListedOrigin(f"https://big.example/r/{i}", "git") for i in range(60)]
    origins += [ListedOrigin(f"https://Small{i}.example:8443/r", "git") for i in range(10)]
    origins += [ListedOrigin(f"https://cdn.example/m/{i}", "git", host="mirror-a") for i in range(3)]
    store.record_listed_origins(lister.id, origins, T0)
    return lister


def grab(store, count=10, now=T0, **kw):
    return store.grab_next_visits("git", [GrabRequest(OLDEST, count)], now, **kw)


def hosts(visits):
    return Counter(host_of(v.url) if "cdn" not in v.url else "mirror-a" for v in visits)


def test_host_of_urls():
    assert host_of("https://user:pw@GitHub.com:443/a/b?x#y") == "github.com"
    assert host_of("git://[::1]:9418/repo") == "[::1]"
    assert host_of("/srv/repos/a") is None
    assert host_of("git@github.com:a/b") is None


def test_off_by_default_and_the_grab_unchanged(store, forge):
    assert store.get_politeness("git").off
    assert len(grab(store, 50)) == 50


def test_max_concurrent_per_host_and_the_room_goes_to_other_hosts(store, forge):
    store.set_visit_type_politeness("git", max_concurrent_per_host=2)
    first = grab(store, 30)
    counts = hosts(first)
    assert max(counts.values()) == 2 and counts["big.example"] == 2
    assert len(first) == 2 + 10 + 2  # every host's room, capacity left unused only for want of hosts
    assert grab(store, 30, now=T0 + MINUTE) == []  # nothing in flight has ended


def test_statuses_releases_and_timeouts_free_a_hosts_room(store, forge):
    store.set_visit_type_politeness("git", max_concurrent_per_host=1)
    options = GrabOptions(in_flight_timeout=timedelta(hours=1))
    [visit] = [v for v in grab(store, 30, options=options) if "big.example" in v.url]
    store.record_visit_statuses([VisitStatus(visit.url, 1, "git", JournalStatus.FULL, T0 + MINUTE, b"\x01" * 20)],
                                FeedbackPolicy(), now=T0 + MINUTE)
    again = [v.url for v in grab(store, 30, now=T0 + 2 * MINUTE, options=options)]
    assert [u for u in again if "big.example" in u] and len(again) == 1
    assert store.release_visits([(again[0], "git")]) == 1
    after_release = grab(store, 30, now=T0 + 3 * MINUTE, options=options)
    assert len(after_release) == 1 and "big.example" in after_release[0].url
    assert grab(store, 30, now=T0 + 4 * MINUTE, options=options) == []
    timed_out = grab(store, 30, now=T0 + 2 * timedelta(hours=1), options=options)
    assert hosts(timed_out)["big.example"] == 1


def test_min_spacing_between_starts_on_a_host(store, forge):
    store.set_visit_type_politeness("git", min_spacing_per_host=timedelta(minutes=10))
    first = grab(store, 100)
    assert max(hosts(first).values()) == 1 and len(first) == 12
    assert grab(store, 100, now=T0 + 9 * MINUTE) == []
    later = grab(store, 100, now=T0 + 10 * MINUTE)
    assert hosts(later)["big.example"] == 1 and max(hosts(later).values()) == 1


def test_a_host_overrides_its_visit_types_limits(store, forge):
    store.set_visit_type_politeness("git", max_concurrent_per_host=1)
    politeness = store.set_host_politeness("git", "big.example", max_concurrent=5)
    assert politeness.hosts == {"big.example": HostLimits(5, None)}
    assert politeness.limits("big.example") == (5, timedelta(0)) and politeness.limits("other") == (1, timedelta(0))
    counts = hosts(grab(store, 100))
    assert counts["big.example"] == 5 and counts["small0.example"] == 1
    # only one host limited: the others as many as the batch takes
    store.set_visit_type_politeness("git")
    store.set_host_politeness("git", "big.example", max_concurrent=None)
    store.set_host_politeness("git", "mirror-a", max_concurrent=2)
    counts = hosts(grab(store, 100, now=T0 + timedelta(days=2)))
    assert counts["mirror-a"] == 2 and counts["big.example"] == 60  # the first grab's timed out


def test_a_dry_run_and_other_visit_types_leave_the_hosts_alone(store, forge):
    store.set_visit_type_politeness("git", max_concurrent_per_host=1, min_spacing_per_host=MINUTE)
    assert len(grab(store, 100, dry_run=True)) == 12
    assert len(grab(store, 100)) == 12


@pytest.mark.parametrize("kwargs, field", [
    ({"max_concurrent_per_host": 0}, "max_concurrent_per_host"),
    ({"max_concurrent_per_host": -1}, "max_concurrent_per_host"),
    ({"max_concurrent_per_host": 1.5}, "max_concurrent_per_host"),
    ({"min_spacing_per_host": timedelta(seconds=-1)}, "min_spacing_per_host"),
    ({"min_spacing_per_host": 5}, "min_spacing_per_host"),
])
def test_bad_settings_name_the_field_and_store_nothing(store, forge, kwargs, field):
    with pytest.raises(ValidationError) as info:
        store.set_visit_type_politeness("git", **kwargs)
    assert info.value.field == field
    assert store.get_politeness("git").off


def test_bad_host_settings_and_unknown_visit_types(store, forge):
    with pytest.raises(ValidationError) as info:
        store.set_visit_type_politeness("svn", max_concurrent_per_host=2)
    assert info.value.field == "visit_type"
    for host, kwargs, field in [("", {}, "host"), (" a", {}, "host"), ("a", {"max_concurrent": 0}, "max_concurrent"),
                                ("a", {"min_spacing": timedelta(days=400)}, "min_spacing")]:
        with pytest.raises(ValidationError) as info:
            store.set_host_politeness("git", host, **kwargs)
        assert info.value.field == field
    assert store.get_politeness("git").hosts == {}
    with pytest.raises(NotFoundError):
        store.get_politeness("svn")


def test_a_listers_host_key_is_checked(store, forge):
    with pytest.raises(ValidationError) as info:
        store.record_listed_origins(forge.id, [ListedOrigin("https://x.example/a", "git", host="")], T0)
    assert info.value.field == "host"
