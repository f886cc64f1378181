"""Resolving callables and reading their results."""

from __future__ import annotations

import pytest

from ostinato.domain.tasks import TaskRunStatus
from ostinato.execution.registry import TaskRegistry, TaskResult, UnknownCallable, outcome_of


@pytest.mark.parametrize("value, status, metadata", [
    (None, TaskRunStatus.UNEVENTFUL, {}),
    (True, TaskRunStatus.EVENTFUL, {}),
    (False, TaskRunStatus.UNEVENTFUL, {}),
    ("eventful", TaskRunStatus.EVENTFUL, {}),
    ({"status": "eventful", "snapshot": "ab"}, TaskRunStatus.EVENTFUL, {"snapshot": "ab"}),
    (TaskResult(False, {"n": 1}), TaskRunStatus.UNEVENTFUL, {"n": 1}),
    # what swh's tasks return (docs/reference/swh-compat-celery.md)
    ({"status": "uneventful"}, TaskRunStatus.UNEVENTFUL, {}),
    ({"status": "failed", "error": "HTTP 502"}, TaskRunStatus.FAILED, {"error": "HTTP 502"}),
    ({"status": "success", "eventful": True, "pages": 3}, TaskRunStatus.EVENTFUL, {"pages": 3}),
    ({"status": "success", "eventful": False}, TaskRunStatus.UNEVENTFUL, {}),
    ({"pages": 3, "origins": 120}, TaskRunStatus.EVENTFUL, {"pages": 3, "origins": 120}),  # a swh lister's stats
    ({}, TaskRunStatus.UNEVENTFUL, {}),
])
def test_outcome_of(value, status, metadata):
    assert outcome_of(value) == (status, metadata)


@pytest.mark.parametrize("value", [3, "done", {"status": "weird"}, {"status": "success"}, [1]])
def test_outcome_of_refuses_unclear_results(value):
    with pytest.raises(TypeError):
        outcome_of(value)


def test_resolve_by_registration_and_import_path():
    reg = TaskRegistry()
    fn = reg.task("mine")(lambda: 1)
    assert reg.resolve("mine") is fn
    import json
    assert reg.resolve("json:dumps") is json.dumps
    assert reg.resolve("json.dumps") is json.dumps
    assert reg.resolve("ostinato.examples:watch_directory").__name__ == "watch_directory"
    for name in ("nope", "json:nope", "no_such_module:f", "json.JSONDecodeError.nope"):
        with pytest.raises(UnknownCallable, match="backend_name"):
            reg.resolve(name)


def test_resolve_by_entry_point(tmp_path, monkeypatch):
    dist = tmp_path / "ostinato_plugin_example-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ostinato-plugin-example\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ostinato.tasks]\nload-example = json:loads\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import json

    assert TaskRegistry().resolve("load-example") is json.loads
