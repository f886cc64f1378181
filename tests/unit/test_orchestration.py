"""The orchestrator's ratios: the default table, validation, the split, and room passed on."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostinato.domain.errors import ValidationError
from ostinato.domain.orchestration import (
    BY_LAG,
    NEVER_VISITED,
    WITHOUT_LAST_UPDATE,
    default_ratios,
    fill_room,
    split_room,
    validate_ratios,
)

KNOWN = {BY_LAG, NEVER_VISITED, WITHOUT_LAST_UPDATE, "oldest_scheduled_first"}


def test_default_ratios_are_seed_003s_table():
    assert default_ratios("git") == {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}
    assert default_ratios("hg") == default_ratios("svn") == default_ratios("git")
    assert default_ratios("pypi") == {BY_LAG: 50, NEVER_VISITED: 50}


def test_split_follows_the_ratios_and_sums_to_the_room():
    assert split_room(1000, default_ratios("git")) == {BY_LAG: 490, NEVER_VISITED: 490, WITHOUT_LAST_UPDATE: 20}
    assert split_room(10, default_ratios("git")) == {BY_LAG: 5, NEVER_VISITED: 5, WITHOUT_LAST_UPDATE: 0}
    assert split_room(0, default_ratios("git")) == {BY_LAG: 0, NEVER_VISITED: 0, WITHOUT_LAST_UPDATE: 0}


@given(st.integers(0, 100_000), st.dictionaries(st.sampled_from(sorted(KNOWN)), st.floats(0, 100), min_size=1))
def test_split_is_whole_and_complete(room, ratios):
    shares = split_room(room, ratios)
    if any(w > 0 for w in ratios.values()):
        assert sum(shares.values()) == room
    assert all(n >= 0 for n in shares.values())
    assert all(shares[p] == 0 for p, w in ratios.items() if w == 0)


def test_room_a_policy_cannot_use_goes_to_the_others():
    available = {BY_LAG: 100, NEVER_VISITED: 10_000, WITHOUT_LAST_UPDATE: 5}
    asked = []

    def grab(policy, n):
        asked.append((policy, n))
        got = min(n, available[policy])
        available[policy] -= got
        return got

    taken = fill_room(1000, default_ratios("git"), grab)
    assert taken == {BY_LAG: 100, NEVER_VISITED: 895, WITHOUT_LAST_UPDATE: 5}
    assert sum(taken.values()) == 1000  # the seed's system would have used 100 + 490 + 5


def test_fill_stops_when_no_policy_has_origins():
    assert fill_room(1000, default_ratios("git"), lambda policy, n: 0) == {BY_LAG: 0, NEVER_VISITED: 0, WITHOUT_LAST_UPDATE: 0}


def test_random_order_as_in_the_seed():
    order = []
    fill_room(10, {BY_LAG: 1, NEVER_VISITED: 1}, lambda p, n: order.append(p) or n, rng=random.Random(3))
    assert sorted(order) == [BY_LAG, NEVER_VISITED]


@pytest.mark.parametrize("ratios, field", [
    ({BY_LAG: -1, NEVER_VISITED: 1}, f"ratios.{BY_LAG}"),
    ({BY_LAG: 0, NEVER_VISITED: 0}, "ratios"),
    ({"most_popular_first": 1}, "ratios.most_popular_first"),
    ({BY_LAG: "ten"}, f"ratios.{BY_LAG}"),
    ({}, "ratios"),
])
def test_bad_ratios_name_the_field(ratios, field):
    with pytest.raises(ValidationError) as info:
        validate_ratios(ratios, KNOWN)
    assert info.value.field == field


def test_plan_grab_requests_asks_shares_then_the_rest():
    from ostinato.domain.orchestration import plan_grab_requests

    assert plan_grab_requests(100, {BY_LAG: 49, NEVER_VISITED: 49, WITHOUT_LAST_UPDATE: 2}) == [
        (BY_LAG, 49), (NEVER_VISITED, 49), (WITHOUT_LAST_UPDATE, 2),
        (BY_LAG, 100), (NEVER_VISITED, 100), (WITHOUT_LAST_UPDATE, 100),
    ]
    assert plan_grab_requests(3, {BY_LAG: 1, NEVER_VISITED: 0}) == [(BY_LAG, 3), (BY_LAG, 3)]
    assert plan_grab_requests(0, {BY_LAG: 1}) == [(BY_LAG, 0)]


def test_fill_room_reaches_a_policy_whose_share_rounded_to_nothing():
    available = {BY_LAG: 0, NEVER_VISITED: 0, WITHOUT_LAST_UPDATE: 7}

    def grab(policy, n):
        got = min(n, available[policy])
        available[policy] -= got
        return got

    taken = fill_room(10, default_ratios("git"), grab)
    assert taken == {BY_LAG: 0, NEVER_VISITED: 0, WITHOUT_LAST_UPDATE: 7}
