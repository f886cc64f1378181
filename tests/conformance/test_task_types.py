"""Task types: stored with every knob of the task model; bad ones refused, nothing written."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from ostinato.domain.errors import ConflictError, ValidationError

from helpers import GIT, HG


def test_create_get_list(store):
    store.create_task_type(GIT)
    store.create_task_type(HG)
    assert store.get_task_type("load-git") == GIT
    assert store.get_task_type("load-hg") == HG
    assert store.get_task_type("nope") is None
    assert [t.type for t in store.list_task_types()] == ["load-git", "load-hg"]


def test_duplicate_name_conflicts(store):
    store.create_task_type(GIT)
    with pytest.raises(ConflictError):
        store.create_task_type(dataclasses.replace(GIT, description="other"))
    assert store.get_task_type("load-git").description == GIT.description


@pytest.mark.parametrize(
    "change, field",
    [
        ({"default_interval": timedelta(seconds=-5)}, "default_interval"),
        ({"min_interval": timedelta(0)}, "min_interval"),
        ({"min_interval": timedelta(days=70)}, "min_interval"),
        ({"backoff_factor": 1.0}, "backoff_factor"),
        ({"backoff_factor": 0.5}, "backoff_factor"),
        ({"max_queue_length": 0}, "max_queue_length"),
        ({"num_retries": -1}, "num_retries"),
        ({"num_retries": 3, "retry_delay": None}, "retry_delay"),
        ({"backend_name": ""}, "backend_name"),
        ({"type": " "}, "type"),
    ],
)
def test_invalid_task_type_is_refused_and_nothing_is_stored(store, change, field):
    with pytest.raises(ValidationError) as info:
        store.create_task_type(dataclasses.replace(GIT, **change))
    assert info.value.field == field
    assert store.list_task_types() == []
