"""``ostinato politeness set|show`` (docs/reference/origins.md, "Politeness per host"): limits per visit
type and per host, kept when an option is not given, cleared with none; bad input names the field and
stores nothing; ``origin grab-next`` then keeps them, a lister's own host key included."""

from __future__ import annotations

import json

import pytest
from cli_helpers import add_loaders, ok, ok_json, run


@pytest.fixture
def url(fresh_url):
    ok(fresh_url, "db", "init")
    add_loaders(fresh_url, "git")
    origins = [{"url": f"https://big.example/{i}", "visit_type": "git"} for i in range(20)]
    origins += [{"url": f"https://small{i}.example/r", "visit_type": "git"} for i in range(3)]
    origins += [{"url": f"https://cdn.example/{i}", "visit_type": "git", "host": "mirror"} for i in range(4)]
    ok(fresh_url, "origin", "record", "--lister", "gh/gh", "-", input="".join(json.dumps(o) + "\n" for o in origins))
    return fresh_url


def test_set_show_and_the_grab_keeps_them(url):
    assert ok_json(url, "politeness", "show", "git") == {"visit_type": "git", "max_concurrent_per_host": None,
                                                         "min_spacing_per_host": None, "hosts": []}
    ok(url, "politeness", "set", "git", "--max-concurrent", "2", "--min-spacing", "0s")
    shown = ok_json(url, "politeness", "set", "git", "--host", "big.example", "--max-concurrent", "5")
    assert shown == {"visit_type": "git", "max_concurrent_per_host": 2, "min_spacing_per_host": "0s",
                     "hosts": [{"host": "big.example", "max_concurrent": 5, "min_spacing": None}]}
    grabbed = ok_json(url, "origin", "grab-next", "git", "--count", "100")["visits"]
    hosts = [v["url"].split("/")[2] for v in grabbed]
    assert hosts.count("big.example") == 5 and hosts.count("cdn.example") == 2 and len(grabbed) == 5 + 3 + 2
    ok(url, "politeness", "set", "git", "--min-spacing", "1m")  # the limit is kept
    assert ok_json(url, "politeness", "show", "git")["max_concurrent_per_host"] == 2
    assert ok_json(url, "politeness", "set", "git", "--max-concurrent", "none")["max_concurrent_per_host"] is None
    assert "at least 1m apart" in ok(url, "politeness", "show", "git").output


@pytest.mark.parametrize("args, field", [
    (["--max-concurrent", "0"], "max_concurrent_per_host"),
    (["--max-concurrent", "-2"], "max_concurrent_per_host"),
    (["--max-concurrent", "many"], "max_concurrent_per_host"),
    (["--min-spacing", "-1s"], "min_spacing_per_host"),
    (["--min-spacing", "soon"], "min_spacing_per_host"),
    (["--host", "big.example", "--max-concurrent", "0"], "--max-concurrent"),
    (["--host", "", "--max-concurrent", "1"], "host"),
    ([], "--max-concurrent"),
])
def test_bad_input_names_the_field_and_stores_nothing(url, args, field):
    result = run(url, "politeness", "set", "git", *args)
    assert result.exit_code != 0 and f"{field}: expected" in result.output, result.output
    assert ok_json(url, "politeness", "show", "git")["hosts"] == []
    assert ok_json(url, "politeness", "show", "git")["max_concurrent_per_host"] is None


def test_an_unknown_visit_type_is_refused(url):
    result = run(url, "politeness", "set", "svn", "--max-concurrent", "2")
    assert result.exit_code != 0 and "VISIT_TYPE: expected" in result.output
