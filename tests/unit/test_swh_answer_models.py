"""The face's answers built straight from Ostinato's records carry what ``models.make`` would give:
every field of the protocol's model, in its order, and the same values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.tasks import Task, TaskArguments, TaskPolicy, TaskPriority, TaskStatus
from ostinato.integrations.swh import models
from ostinato.integrations.swh.tasks import task_model

NOW = datetime(2026, 11, 28, tzinfo=UTC)


@pytest.mark.parametrize("priority, interval", [(None, timedelta(days=1)), (TaskPriority.HIGH, None)])
def test_a_task_answer_is_the_model_make_gives(priority, interval):
    task = Task(7, "load-git", TaskArguments(("a", 1), {"url": "https://forge.example/x"}), NOW, interval,
                TaskPolicy.ONESHOT, TaskStatus.NEXT_RUN_SCHEDULED, 2, priority)
    made = models.make(
        "Task", type="load-git", arguments=models.make("TaskArguments", args=["a", 1], kwargs={"url": "https://forge.example/x"}),
        next_run=NOW, status="next_run_scheduled", policy="oneshot", retries_left=2, id=7, current_interval=interval,
        priority=None if priority is None else priority.value)
    answer = task_model(task)
    assert answer == made
    assert list(answer.fields) == list(models.MODELS["Task"])
    assert list(answer.fields["arguments"].fields) == list(models.MODELS["TaskArguments"])


def test_a_listing_answer_is_the_model_make_gives():
    from ostinato.domain.origins import ListedOrigin, StoredListedOrigin
    from ostinato.integrations.swh.origins import _origin_model, lister_uuid

    stored = StoredListedOrigin(3, ListedOrigin("https://forge.example/x", "git", {"a": 1}, NOW, False, True,
                                                "https://forge.example/y"), NOW - timedelta(days=2), NOW)
    made = models.make(
        "ListedOrigin", lister_id=lister_uuid(3), url="https://forge.example/x", visit_type="git",
        extra_loader_arguments={"a": 1}, last_update=NOW, is_fork=True, forked_from_url="https://forge.example/y",
        enabled=False, first_seen=NOW - timedelta(days=2), last_seen=NOW)
    answer = _origin_model(stored)
    assert answer == made and list(answer.fields) == list(models.MODELS["ListedOrigin"])
