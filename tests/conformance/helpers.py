"""Builders shared by the conformance tests."""

from __future__ import annotations

from datetime import timedelta

from conftest import T0

from ostinato.domain.tasks import NewTask, TaskArguments, TaskPolicy, TaskPriority, TaskType
from ostinato.store.read_routing import ReadRoutingStore

GIT = TaskType(
    type="load-git",
    description="Update an origin of type git",
    backend_name="tests.tasks:load_git",
    default_interval=timedelta(days=1),
    min_interval=timedelta(hours=12),
    max_interval=timedelta(days=64),
    backoff_factor=2.0,
    max_queue_length=5000,
    num_retries=2,
    retry_delay=timedelta(hours=1),
)
HG = TaskType(type="load-hg", description="Update an origin of type mercurial", backend_name="tests.tasks:load_hg",
              default_interval=timedelta(days=2))


def new(url: str = "https://example.org/a", *, type: str = "load-git", next_run=T0, policy=TaskPolicy.RECURRING,
        priority: TaskPriority | None = None, **kwargs) -> NewTask:
    return NewTask(type=type, next_run=next_run, arguments=TaskArguments((url,), kwargs), policy=policy, priority=priority)


def trail(store, **kwargs):
    """The audit trail, newest first, without the token the remote store's fixture adds on its server."""
    return [e for e in store.list_audit(**kwargs) if e.target != "token:remote-store-tests"]


def database(store):
    """The SQL store's database (its dialect), for what a test reads or writes by hand: the primary's, for the
    read routing."""
    return store.primary.db if isinstance(store, ReadRoutingStore) else store.db
