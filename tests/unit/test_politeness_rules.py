"""Politeness per host's rules (``domain.politeness``) and the simulator's use of them (``sim.hosts``):
a host's room at a grab, the overrides, the Zipf world and the quota baselines' polite choice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.politeness import HostLimits, Politeness, check_politeness_setting, room
from ostinato.sim.hosts import host_assignment, host_room, polite_choice

NOW = datetime(2026, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def test_room_of_a_host():
    assert room(None, timedelta(0), 50, None, NOW) is None
    assert room(3, timedelta(0), 1, None, NOW) == 2
    assert room(3, timedelta(0), 5, None, NOW) == 0
    assert room(3, MINUTE, 0, NOW - 2 * MINUTE, NOW) == 1  # spaced: one start per grab at most
    assert room(3, MINUTE, 0, NOW - MINUTE / 2, NOW) == 0
    assert room(None, MINUTE, 9, None, NOW) == 1


def test_overrides_and_off():
    p = Politeness("git", 2, None, {"big": HostLimits(10, None), "slow": HostLimits(None, MINUTE)})
    assert p.limits("big") == (10, timedelta(0)) and p.limits("slow") == (2, MINUTE) and p.limits("x") == (2, timedelta(0))
    assert p.longest_spacing() == MINUTE and not p.off
    assert Politeness("git").off and Politeness("git", None, timedelta(0)).off
    assert not Politeness("git", hosts={"a": HostLimits(1)}).off
    assert p.room(None, 99, None, NOW) is None


@pytest.mark.parametrize("args, field", [
    (("", None, 1, None), "visit_type"),
    (("git", None, True, None), "max_concurrent_per_host"),
    (("git", None, 10**7, None), "max_concurrent_per_host"),
    (("git", None, None, timedelta(days=400)), "min_spacing_per_host"),
    (("git", "h", 0, None), "max_concurrent"),
    (("git", "x" * 300, 1, None), "host"),
])
def test_settings_checked(args, field):
    with pytest.raises(ValidationError) as info:
        check_politeness_setting(*args)
    assert info.value.field == field


def test_zipf_hosts_few_hold_most():
    hosts = host_assignment(10_000, 50, 1.5, seed=3)
    shares = np.sort(np.bincount(hosts, minlength=50))[::-1] / hosts.size
    assert 0.40 < shares[0] < 0.46 and shares[:3].sum() > 0.6
    assert np.array_equal(hosts, host_assignment(10_000, 50, 1.5, seed=3))


def test_polite_choice_takes_each_hosts_room_in_order_and_the_rest_from_others():
    hosts = np.array([0, 0, 0, 0, 1, 1, 2, 3])
    ordered = np.array([0, 1, 2, 3, 4, 5, 6, 7])
    assert polite_choice(ordered, 5, hosts, np.array([2, 1, 5, 0])).tolist() == [0, 1, 4, 6]
    assert polite_choice(ordered[::-1], 3, hosts, np.array([1, 9, 9, 9])).tolist() == [7, 6, 5]
    room_ = host_room(np.array([0, 3, 1]), np.array([-np.inf, 0.0, 0.99]), 1.0, 3, timedelta(hours=1))
    assert room_.tolist() == [1, 0, 0]
    assert host_room(np.array([0, 3]), np.array([-np.inf, 0.0]), 1.0, None, None).min() > 10**9
