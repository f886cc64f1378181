"""A task's status in words (domain.status_words): each stored code has its words, and a disabled task
reads "failed" only when its last run disabled it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ostinato.domain.status_words import RUN_STATUS_WORDS, TASK_STATUS_WORDS, task_status_words, with_code
from ostinato.domain.tasks import Task, TaskArguments, TaskPolicy, TaskRunStatus, TaskStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def task(status: TaskStatus, policy: TaskPolicy = TaskPolicy.ONESHOT, retries_left: int = 0) -> Task:
    return Task(1, "t", TaskArguments(), T0, None, policy, status, retries_left, None)


def test_every_status_has_words():
    assert set(TASK_STATUS_WORDS) == set(TaskStatus) and set(RUN_STATUS_WORDS) == set(TaskRunStatus)
    assert [task_status_words(task(s)) for s in TaskStatus] == ["pending", "in flight", "completed", "disabled"]
    assert all("_" not in words for words in [*TASK_STATUS_WORDS.values(), *RUN_STATUS_WORDS.values()])
    assert RUN_STATUS_WORDS[TaskRunStatus.PERMFAILED] == "failed for good"
    assert with_code("pending", "next_run_not_scheduled") == "pending (next_run_not_scheduled)"
    assert with_code("disabled", "disabled") == "disabled"


@pytest.mark.parametrize(("policy", "retries_left", "last_run", "words"), [
    (TaskPolicy.ONESHOT, 0, TaskRunStatus.FAILED, "failed"),  # out of retries: the rules disabled it
    (TaskPolicy.ONESHOT, 0, TaskRunStatus.LOST, "failed"),
    (TaskPolicy.RECURRING, 2, TaskRunStatus.PERMFAILED, "failed"),  # failed for good, whatever its retries
    (TaskPolicy.ONESHOT, 2, TaskRunStatus.FAILED, "disabled"),  # a retry was left: a person disabled it
    (TaskPolicy.RECURRING, 0, TaskRunStatus.FAILED, "disabled"),  # a recurring task is never disabled by a failure
    (TaskPolicy.ONESHOT, 0, TaskRunStatus.EVENTFUL, "disabled"),
    (TaskPolicy.ONESHOT, 0, None, "disabled"),  # its runs unknown
])
def test_a_disabled_task_reads_failed_when_its_runs_disabled_it(policy, retries_left, last_run, words):
    assert task_status_words(task(TaskStatus.DISABLED, policy, retries_left), last_run) == words


def test_only_a_disabled_task_can_read_failed():
    assert task_status_words(task(TaskStatus.NEXT_RUN_NOT_SCHEDULED), TaskRunStatus.PERMFAILED) == "pending"
