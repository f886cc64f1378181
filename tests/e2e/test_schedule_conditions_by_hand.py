"""A schedule's condition read through the command line and the API alike
(docs/reference/schedules.md): both compute it with the configured timing.

The schedule is imported with its state (``ostinato schedule import`` of a JSON-lines file);
each face then reads it with the clock set to the moment of the case.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from click.testing import CliRunner

from ostinato.cli import cli
from ostinato.cli.app import AppContext
from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.store import open_store

from test_api_helpers import Api

IMPORTED_AT = "2026-01-20T00:00:00+00:00"


def periodic(name: str, period: int, **state: Any) -> dict[str, Any]:
    return {"name": name, "kind": "periodic", "task_type": "scrape", "created_at": "2026-01-01T00:00:00+00:00",
            "scheduling_period": period, **state}


OWNER = {"owner_tag": "tag-1", "owner_node": "n1", "owner_name": "default"}

SCHEDULES = [
    # running since 08:00, last ping 08:50:00; deadline 01-15 00:00; can 01:30; should 01-14 23:30
    periodic("running-pinged", 86400, cooldown_duration=3600, average_good_duration=1800, **OWNER,
             last_good_start_at="2026-01-14T00:00:00+00:00", last_good_end_at="2026-01-14T00:30:00+00:00",
             owner_started_at="2026-01-14T08:00:00+00:00", owner_last_ping_at="2026-01-14T08:50:00+00:00"),
]


def invoke(url: str, now: str, *args: str, **settings: str):
    """``ostinato ARGS`` on ``url``, with the clock at ``now`` and the given settings."""
    app = AppContext(Settings().with_values({"db": url, **settings}), ManualClock(datetime.fromisoformat(now)))
    try:
        return CliRunner().invoke(cli, list(args), obj=app)
    finally:
        app.close()


def ok(url: str, now: str, *args: str, **settings: str):
    result = invoke(url, now, *args, **settings)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result


def import_schedules(url: str, folder, schedules: list[dict[str, Any]]) -> None:
    ok(url, IMPORTED_AT, "task-type", "add", "scrape", "ostinato.examples:flaky", "Scrape a site",
       "--no-default-interval")
    path = folder / "schedules.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in schedules), encoding="utf-8")
    assert "Imported" in ok(url, IMPORTED_AT, "schedule", "import", str(path)).output


# -- a silent owner, on every face ---------------------------------------------------------------
SILENT = "running-pinged"
PING_10_MIN_OLD = "2026-01-14T09:00:00+00:00"


@pytest.mark.parametrize("timeout, condition, reason", [("30s", "WARNING", "owner_silent"), ("15m", "OK", None)])
def test_a_silent_owner_reads_the_same_on_every_face(tmp_path, timeout, condition, reason):
    """Last ping 10 minutes ago: with the setting schedule_ping_timeout at 30 s, owner_silent on the
    command line (condition, show, list; text and JSON), the API, the dashboard and /metrics; with
    15 min, OK everywhere (the setting is read, not a constant)."""
    url = f"sqlite:///{tmp_path}/t.db"
    ok(url, IMPORTED_AT, "db", "init")
    import_schedules(url, tmp_path, [s for s in SCHEDULES if s["name"] == SILENT])
    setting = {"schedule_ping_timeout": timeout}

    def cli_json(*args: str) -> Any:
        return json.loads(ok(url, PING_10_MIN_OLD, "schedule", *args, "--json", **setting).output)

    def cli_text(*args: str) -> str:
        return ok(url, PING_10_MIN_OLD, "schedule", *args, **setting).output

    seen = [cli_json("condition", SILENT)[0], cli_json("condition")[0], cli_json("show", SILENT), cli_json("list")[0]]
    assert [(r["condition"], r["reason"]) for r in seen] == [(condition, reason)] * 4
    for args in (("condition", SILENT), ("list",)):
        [line] = [line for line in cli_text(*args).splitlines() if SILENT in line]
        assert condition in line and ("owner_silent" in line) == (reason is not None), line
    shown = cli_text("show", SILENT)
    assert f"Condition: {condition}" + (f" ({reason})" if reason else "") + "\n" in shown
    assert "; last ping 10 minutes ago (2026-01-14 08:50:00+00:00)\n" in shown
    assert seen[2]["deadline"] == seen[3]["deadline"] == "2026-01-15T00:00:00+00:00"

    store = open_store(url)
    try:
        api = Api(store, ManualClock(datetime.fromisoformat(PING_10_MIN_OLD)), Settings().with_values(setting))
        answers = [api.ok("GET", f"/api/v1/schedules/{SILENT}"), api.ok("GET", f"/api/v1/schedules/{SILENT}/condition"),
                   api.ok("GET", "/api/v1/schedules")["items"][0], api.ok("GET", "/api/v1/schedule-conditions")["items"][0]]
        assert [(a["condition"], a["reason"]) for a in answers] == [(condition, reason)] * 4
        metrics = api.get("/metrics").text
        assert f'ostinato_schedules{{state="{condition}"}} 1.0' in metrics
        assert ('ostinato_schedules_by_reason{reason="owner_silent"} 1.0' in metrics) == (reason is not None)
        page = api.get("/").text
        assert ("its owner stopped pinging" in page) == (reason is not None)
    finally:
        store.close()
