"""An origin whose visits failed is shown as visited (with its date and outcome), and the metrics
count it as visited, never successfully, not as never visited."""

from __future__ import annotations

import json

import pytest
from cli_helpers import add_loaders, ok, ok_json

WHEN = "2026-11-25T10:00:00+00:00"


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    add_loaders(fresh_url, "git")
    origins = "".join(json.dumps({"url": f"https://x/{name}", "visit_type": "git"}) + "\n" for name in "abc")
    ok(fresh_url, "origin", "record", "--lister", "gh/gh", "-", input=origins)
    statuses = [{"origin": "https://x/a", "visit": 1, "type": "git", "status": "failed", "date": WHEN, "snapshot": None},
                {"origin": "https://x/b", "visit": 1, "type": "git", "status": "not_found", "date": WHEN, "snapshot": None}]
    ok(fresh_url, "visit-status", "record", "-", input="".join(json.dumps(s) + "\n" for s in statuses))
    return fresh_url


def test_origin_show_names_a_failed_last_visit_with_its_date(url):
    out = ok(url, "origin", "show", "https://x/a").output
    [line] = [x for x in out.splitlines() if "Last visit:" in x]
    assert line.strip().startswith("Last visit: failed, ") and line.endswith("(2026-11-25 10:00:00+00:00)"), line
    assert "never" not in line
    assert "Last successful: never" in out
    [line] = [x for x in ok(url, "origin", "show", "https://x/b").output.splitlines() if "Last visit:" in x]
    assert line.strip().startswith("Last visit: not_found, ")


def test_metrics_separate_never_visited_from_never_successful(url):
    [row] = ok_json(url, "metrics", "update")
    assert (row["origins_known"], row["origins_never_visited"], row["origins_never_successful"]) == (3, 1, 2)
    out = ok(url, "metrics", "show").output
    assert "successful" in out  # its own column (the headers wrap at 80 columns)
