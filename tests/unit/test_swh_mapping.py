"""The row mapping of the swh-scheduler importer (docs/reference/swh-import.md), row by row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.visits import VisitOutcome
from ostinato.integrations.swh.db_mapping import (
    Cooldowns,
    Queues,
    cooldown_of,
    protocol_stats_of,
    queue_target,
    task_of,
    task_type_of,
    visit_stats_of,
)

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
H, D = timedelta(hours=1), timedelta(days=1)
COOLDOWNS = Cooldowns(absolute=12 * H, failed=D, not_found=7 * D, in_flight=D)
QUEUES = Queues({"git": 1000}, {"git": NOW})


def test_a_position_is_as_far_after_the_last_activity_as_it_lies_past_the_head():
    assert queue_target(1000 + 86400, "git", QUEUES) == NOW + D
    assert queue_target(400, "git", QUEUES) == NOW - timedelta(seconds=600)  # behind the head: due already
    assert queue_target(None, "git", QUEUES) is None
    assert queue_target(5, "svn", QUEUES) is None  # a visit type without activity has no time
    assert queue_target(10, "git", Queues({}, {"git": NOW})) == NOW + timedelta(seconds=10)  # the head starts at 0
    assert queue_target(2**62, "git", QUEUES).year == 2999  # within Ostinato's times
    assert queue_target(-(2**62), "git", QUEUES).year == 1970


def row(*, success=None, visit=None, status=None, scheduled=None, position=None, in_a_row=1):
    return ("https://forge.example/a", "git", success, visit, status, scheduled, b"\x01" if success else None, position, 4,
            in_a_row)


@pytest.mark.parametrize("fields, failures, successes", [
    (dict(), 0, 0),  # a row a grab made: never visited
    (dict(success=NOW - D, visit=NOW - D, status="successful", in_a_row=3), 0, 3),
    (dict(success=NOW - 9 * D, visit=NOW - D, status="failed", in_a_row=2), 2, 1),
    (dict(visit=NOW - D, status="not_found", in_a_row=4), 4, 0),
])
def test_successive_visits_give_the_failures_and_a_floor_of_the_successes(fields, failures, successes):
    stats = visit_stats_of(row(**fields), QUEUES, COOLDOWNS)
    assert (stats.failure_count, stats.successful_visits) == (failures, successes)


def test_the_peers_last_visit_is_kept_as_it_is_and_is_the_last_status():
    stats = visit_stats_of(row(success=NOW - 9 * D, visit=NOW - D, status="failed", position=1000 + 3600), QUEUES,
                           COOLDOWNS)
    # as the peer has it (the swh protocol's face answers it), and the date of the newest status applied
    assert (stats.last_visit, stats.last_successful, stats.last_status_date) == (NOW - D, NOW - 9 * D, NOW - D)
    assert stats.last_visit_status is VisitOutcome.FAILED and stats.next_visit_target == NOW + H


def test_the_protocols_own_fields_are_kept_as_they_are():
    theirs = protocol_stats_of(row(success=NOW - 9 * D, visit=NOW - D, status="failed", position=1000 + 3600))
    assert (theirs.last_visit, theirs.last_successful, theirs.queue_position, theirs.last_visit_status) == (
        NOW - D, NOW - 9 * D, 1000 + 3600, VisitOutcome.FAILED)


def test_a_visit_in_flight_is_held_and_the_cooldowns_after_a_visit_left_to_the_peers_rules():
    # in flight: grabbed after the last visit
    assert cooldown_of(NOW - 5 * D, "successful", NOW - H, COOLDOWNS) == NOW - H + D
    assert cooldown_of(None, None, NOW - H, COOLDOWNS) == NOW - H + D
    # after a visit: the swh protocol's grabs apply the peer's cooldowns from its times, at each grab
    assert cooldown_of(NOW - H, "successful", None, COOLDOWNS) is None
    assert cooldown_of(NOW - H, "failed", NOW - 2 * H, COOLDOWNS) is None
    assert cooldown_of(NOW - H, "not_found", None, COOLDOWNS) is None
    assert cooldown_of(None, None, None, COOLDOWNS) is None


def test_task_types_are_kept_as_the_peer_has_them():
    row = ("list-x", "a lister", "x.tasks.List", 100 * D, 90 * D, 90 * D, 1.0, 0, 2, None)
    task_type = task_type_of(row)
    assert (task_type.backoff_factor, task_type.retry_delay, task_type.default_interval, task_type.max_queue_length) \
        == (1.0, None, 100 * D, 0)
    assert task_type.queue_limit is None  # 0: no limit, as the peer's runner reads it
    with pytest.raises(ValidationError, match="backoff_factor"):
        task_type_of(("list-x", "a lister", "x.tasks.List", D, None, None, 0.0, None, None, None))


def test_task_arguments_must_be_args_and_kwargs():
    task = task_of((7, "load-git", {"args": ["u"], "kwargs": {"n": 1}}, NOW, D, "next_run_scheduled", "recurring", 2, None))
    assert task.id == 7 and task.arguments.args == ("u",) and task.status.value == "next_run_scheduled"
    with pytest.raises(ValidationError, match="arguments"):
        task_of((8, "load-git", {"args": [], "other": 1}, NOW, D, "disabled", "recurring", 0, None))
