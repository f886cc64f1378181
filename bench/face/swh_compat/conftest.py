"""Fixtures of the swh-compat harness (see docs/reference/swh-compat.md), in the peer's interpreter.

swh-scheduler's own tests take a ``swh_scheduler`` fixture; here it is the protocol's own
client, ``RemoteScheduler``, pointed at Ostinato's ``swh-rpc serve`` (``OSTINATO_SWH_URL``,
with the admin token ``OSTINATO_SWH_TOKEN`` sent as a header through the client's
``session_kwargs``), the way swh-scheduler's ``test_api_client.py`` runs them through its
client. Before each test the server empties its database (``--test-reset``) and, as
swh-scheduler's own fixture does, the five ``swh-test-*`` task types are created.
The other fixtures the tests use (listers, listed origins, task types) are swh-scheduler's.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
import requests
from swh.scheduler.api.client import RemoteScheduler
from swh.scheduler.conftest import (  # noqa: F401 - fixtures the tests take, from swh-scheduler itself
    listed_origins,
    listed_origins_by_type,
    listed_origins_with_non_enabled,
    stored_lister,
    task_types,
    visit_types,
)
from swh.scheduler.model import TaskType

TASK_NAMES = ["ping", "multiping", "add", "error", "echo"]

#: tests that inspect swh-scheduler's storage internals rather than its behaviour: each with the reason
EXEMPTED: dict[str, str] = {
}


def pytest_collection_modifyitems(items):
    for item in items:
        reason = EXEMPTED.get(item.name.split("[")[0])
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"exempted: {reason}"))


@pytest.fixture
def swh_scheduler():
    url = os.environ["OSTINATO_SWH_URL"]
    token = os.environ.get("OSTINATO_SWH_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reset = requests.post(url.rstrip("/") + "/ostinato-test/reset", headers=headers, timeout=60)
    reset.raise_for_status()
    scheduler = RemoteScheduler(url=url, session_kwargs={"headers": headers} if headers else None)
    for name in TASK_NAMES:
        scheduler.create_task_type(
            TaskType(
                type=f"swh-test-{name}",
                description=f"The {name} testing task",
                backend_name=f"swh.scheduler.tests.tasks.{name}",
                default_interval=timedelta(days=1),
                min_interval=timedelta(hours=6),
                max_interval=timedelta(days=12),
            )
        )
    return scheduler
